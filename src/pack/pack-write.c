/* The pack writer.
 *
 * 1. Counting: every object is located. A packed whole object can be copied
 *    verbatim (compressed bytes); a packed delta can be copied verbatim when
 *    its base is sent too (or is a thin-pack base). Chains of reused deltas
 *    are checked for cycles (an object found in two packs) and for depth.
 * 2. Delta search for the rest: candidates sorted by type, path name hash and
 *    size (largest first), each tried against the previous `window` ones, the
 *    smallest delta within the depth limit kept and compressed right away; the
 *    sorted list is cut in two and searched by two threads with their own odb
 *    handles.
 * 3. Writing, in Git's order (see pack-write-order.c): recency order for
 *    commits, tags and trees, tagged objects early, blobs by delta family;
 *    each delta base written before its deltas so OFS_DELTA works and a
 *    receiver resolves everything in one pass. Reused entries are verified first: CRC32 against
 *    a v2 idx, or inflated when the idx (v1) has no CRC.
 */
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "pack/bitmap.h"
#include "pack/delta-create.h"
#include "odb/entry.h"
#include "odb/odb-priv.h"
#include "pack/idx-write.h"
#include "odb/pack.h"
#include "packwire/object.h"
#include "packwire/pack-write.h"
#include "packwire/refs.h"
#include "util/bigmem.h"
#include "pack/pack-write-priv.h"
#include "util/fs.h"

void pw_pack_write_opts_init(struct pw_pack_write_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->window = 10;
	o->depth = 50;
	o->reuse_delta = 1;
	o->reuse_object = 1;
	o->ofs_delta = 1;
	o->compression = -1;
	o->verify_reuse = 1;
}

uint32_t pw_pack_name_hash(const char *path, size_t len)
{
	uint32_t h = 0;
	size_t i;

	/* Each character pushes the earlier ones two bits down, so the last
	 * sixteen or so decide the value: files of the same name (and suffix)
	 * land next to each other after sorting. */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f')
			continue;
		h = (h >> 2) + ((uint32_t)c << 24);
	}
	return h;
}

int pw_pack_writer_new(struct pw_pack_writer **out, struct pw_odb *odb,
                       const struct pw_pack_write_opts *opts)
{
	struct pw_pack_writer *w = calloc(1, sizeof(*w));

	*out = NULL;
	if (!w)
		return PW_ENOMEM;
	w->odb = odb;
	w->algo = pw_odb_algo(odb);
	w->out_algo = w->algo;
	pw_buf_init(&w->tr_buf, 0);
	if (opts)
		w->opts = *opts;
	else
		pw_pack_write_opts_init(&w->opts);
	if (w->opts.window < 0)
		w->opts.window = 0;
	if (w->opts.depth <= 0)
		w->opts.window = 0;
	if (w->opts.depth > 4095)
		w->opts.depth = 4095;
	if (w->opts.compression < 0 || w->opts.compression > 9)
		w->opts.compression = 6;
	atomic_init(&w->zcache, 0);
	atomic_init(&w->search_done, 0);
	pthread_mutex_init(&w->progress_lock, NULL);
	*out = w;
	return 0;
}

void pw_pack_writer_free(struct pw_pack_writer *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->nr; i++)
		free(w->objs[i].zdata);
	pw_bigmem_free(w->objs, w->alloc * sizeof(*w->objs));
	free(w->wseq);
	free(w->tagged);
	free(w->outbuf);
	pw_buf_free(&w->tr_buf);
	pw_oididx_free(&w->map);
	pthread_mutex_destroy(&w->progress_lock);
	free(w);
}

const struct pw_error *pw_pack_writer_error(const struct pw_pack_writer *w)
{
	return &w->err;
}

size_t pw_pack_writer_count(const struct pw_pack_writer *w)
{
	return w->nr_send;
}

int pw_pack_writer_contains(const struct pw_pack_writer *w, const struct pw_oid *oid)
{
	uint32_t i = pw_oididx_find(&w->map, oid, w->objs, sizeof(*w->objs));

	return i != PW_OIDIDX_NONE && !(w->objs[i].flags & W_BASE_ONLY);
}

void pw_pack_writer_stats(const struct pw_pack_writer *w, struct pw_pack_write_stats *out)
{
	*out = w->stats;
}

int pw_pack_writer__nomem(struct pw_pack_writer *w)
{
	return pw_error_set(&w->err, PW_ENOMEM, "pack-objects: out of memory");
}

int pw_pack_writer_set_translate(struct pw_pack_writer *w, const struct pw_pack_translate *t)
{
	if (w->nr || w->written)
		return pw_error_set(&w->err, PW_EINVAL, "translation set after objects were added");
	if (!t || !t->algo || !t->oid || !t->content)
		return pw_error_set(&w->err, PW_EINVAL,
		                    "translation without algorithm or callbacks");
	w->translate = *t;
	w->translating = t->algo != w->algo;
	w->out_algo = t->algo;
	return 0;
}

/* The content of a non-blob in the pack's algorithm, in place of buf's. */
int pw_pack_writer__translate_content(struct pw_pack_writer *w, void *data, int type,
                                      struct pw_buf *buf, struct pw_buf *tmp,
                                      const struct pw_oid *oid, struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_buf t;
	int rc;

	if (!w->translating || type == PW_OBJ_BLOB)
		return 0;
	pw_buf_reset(tmp);
	if ((rc = w->translate.content(data, type, buf->data, buf->len, tmp, err)))
		return pw_error_wrap(err, "%s %s", pw_object_type_name(type),
		                     pw_oid_to_hex(oid, hex));
	t = *buf;
	*buf = *tmp;
	*tmp = t;
	return 0;
}

void pw_pack_writer__progress(struct pw_pack_writer *w, const char *title, uint64_t n,
                              uint64_t total, int done)
{
	if (w->opts.progress)
		w->opts.progress(w->opts.progress_data, title, n, total, done);
}

static int add(struct pw_pack_writer *w, const struct pw_oid *oid, int type, const char *path,
               size_t path_len, int base_only)
{
	struct wobj *o;
	uint32_t i;

	if (oid->algo != w->algo->id)
		return pw_error_set(&w->err, PW_EINVAL,
		                    "object id of the wrong algorithm for a %s "
		                    "pack",
		                    w->algo->name);
	if (w->written)
		return pw_error_set(&w->err, PW_EINVAL, "pack already written");
	if (w->nr >= INT32_MAX)
		return pw_error_set(&w->err, PW_ETOOBIG, "too many objects for one pack");
	/* room first: the map has no removal to undo an insertion */
	if (w->nr == w->alloc) {
		size_t n = w->alloc ? w->alloc * 2 : 1024;
		struct wobj *p = pw_bigmem_realloc(w->objs, w->alloc * sizeof(*p), n * sizeof(*p));

		if (!p)
			return pw_pack_writer__nomem(w);
		w->objs = p;
		w->alloc = n;
	}
	i = pw_oididx_put(&w->map, oid, (uint32_t)w->nr, w->objs, sizeof(*w->objs));
	if (i == PW_OIDIDX_NONE)
		return pw_pack_writer__nomem(w);
	if (i != w->nr) {
		o = &w->objs[i];
		/* something to send wins over a mere base */
		if ((o->flags & W_BASE_ONLY) && !base_only) {
			o->flags &= ~(uint32_t)W_BASE_ONLY;
			w->nr_send++;
		}
		return 0;
	}
	o = &w->objs[w->nr];
	memset(o, 0, sizeof(*o));
	o->oid = *oid;
	o->type = (uint8_t)(type >= PW_OBJ_COMMIT && type <= PW_OBJ_TAG ? type : 0);
	o->hash = path ? pw_pack_name_hash(path, path_len) : 0;
	o->base = -1;
	o->flags = base_only ? W_BASE_ONLY : 0;
	w->nr++;
	if (!base_only)
		w->nr_send++;
	return 0;
}

int pw_pack_writer_reserve(struct pw_pack_writer *w, size_t n)
{
	struct wobj *p;

	if (n <= w->alloc)
		return pw_oididx_reserve(&w->map, n);
	if (n > SIZE_MAX / sizeof(*p) ||
	    !(p = pw_bigmem_realloc(w->objs, w->alloc * sizeof(*p), n * sizeof(*p))))
		return PW_ENOMEM;
	w->objs = p;
	w->alloc = n;
	return pw_oididx_reserve(&w->map, n);
}

int pw_pack_writer_add(struct pw_pack_writer *w, const struct pw_oid *oid, int type,
                       const char *path, size_t path_len)
{
	return add(w, oid, type, path, path_len, 0);
}

int pw_pack_writer_add_base(struct pw_pack_writer *w, const struct pw_oid *oid, int type,
                            const char *path, size_t path_len)
{
	if (!w->opts.thin)
		return 0;
	return add(w, oid, type, path, path_len, 1);
}

int32_t pw_pack_writer__lookup(struct pw_pack_writer *w, const struct pw_oid *oid)
{
	uint32_t i = pw_oididx_find(&w->map, oid, w->objs, sizeof(*w->objs));

	return i == PW_OIDIDX_NONE ? -1 : (int32_t)i;
}

/* ---- 1. counting ----------------------------------------------------------- */

static int count_one(struct pw_pack_writer *w, size_t i)
{
	struct wobj *o = &w->objs[i];
	struct pw_odb_loc loc;
	struct pw_pack_raw_entry raw;
	char hex[PW_MAX_HEXSZ + 1];
	int rc, size_known = 0, type;

	rc = pw_odb_locate(w->odb, &o->oid, &loc);
	if (rc == PW_ENOTFOUND) {
		if (o->flags & W_BASE_ONLY) {
			o->flags |= W_MISSING;
			return 0;
		}
		return pw_error_set(&w->err, rc, "object %s not found",
		                    pw_oid_to_hex(&o->oid, hex));
	}
	if (rc)
		return pw_error_copy(&w->err, pw_odb_error(w->odb));
	if (w->translating && !o->type) {
		/* only blobs are reused as they are: the type decides */
		uint64_t size;

		if ((rc = pw_odb_read_header(w->odb, &o->oid, &type, &size)))
			return pw_error_copy(&w->err, pw_odb_error(w->odb));
		o->type = (uint8_t)type;
	}
	if (loc.kind == PW_ODB_LOC_PACK && !(o->flags & W_BASE_ONLY) &&
	    (w->opts.reuse_object || w->opts.reuse_delta)) {
		rc = pw_pack_entry_raw(loc.pack, loc.offset, &raw, &w->err);
		if (rc)
			return rc;
		o->pack = loc.pack;
		o->raw = raw.data;
		o->raw_len = raw.len;
		o->raw_hdr = (uint8_t)raw.hdr_len; /* <= 10 + 10 + rawsz */
		o->raw_size = raw.size;
		o->raw_type = (uint8_t)raw.type;
		o->idx_pos = raw.idx_pos;
		if (!pw_pack_writer__is_delta_type(raw.type)) {
			if (o->type && o->type != raw.type)
				return pw_error_set(
				        &w->err, PW_ECORRUPT, "object %s is a %s, expected a %s",
				        pw_oid_to_hex(&o->oid, hex), pw_object_type_name(raw.type),
				        pw_object_type_name(o->type));
			o->type = (uint8_t)raw.type;
			o->size = raw.size;
			size_known = 1;
			if (w->opts.reuse_object && (!w->translating || o->type == PW_OBJ_BLOB))
				o->flags |= W_REUSE;
		} else if (w->opts.reuse_delta) {
			struct pw_oid base_oid = raw.base_oid;
			int32_t b;

			if (raw.type == PW_OBJ_OFS_DELTA) {
				struct pw_pack_raw_entry braw;

				rc = pw_pack_entry_raw(loc.pack, raw.base_offset, &braw, &w->err);
				if (rc)
					return rc;
				pw_idx_nth_oid(loc.pack->idx, braw.idx_pos, &base_oid);
			}
			b = pw_pack_writer__lookup(w, &base_oid);
			if (b >= 0 && !(w->objs[b].flags & W_MISSING) && b != (int32_t)i) {
				o->base = b;
				o->flags |= pw_pack_writer__w_translates(w, o->type) ? W_MIRROR
				                                                     : W_REUSE;
			}
		}
	}
	/* Type and size are needed for searching and for whole objects; a
	 * reused delta of known type needs neither. */
	if (!size_known && (!o->type || !pw_pack_writer__reused_delta(o))) {
		uint64_t size;

		rc = pw_odb_read_header(w->odb, &o->oid, &type, &size);
		if (rc == PW_ENOTFOUND && (o->flags & W_BASE_ONLY)) {
			o->flags |= W_MISSING;
			return 0;
		}
		if (rc)
			return pw_error_copy(&w->err, pw_odb_error(w->odb));
		if (o->type && o->type != type)
			return pw_error_set(&w->err, PW_ECORRUPT,
			                    "object %s is a %s, expected a %s",
			                    pw_oid_to_hex(&o->oid, hex), pw_object_type_name(type),
			                    pw_object_type_name(o->type));
		o->type = (uint8_t)type;
		o->size = size;
	}
	return 0;
}

static void drop_reuse(struct wobj *o)
{
	o->flags &= ~(uint32_t)(W_REUSE | W_MIRROR);
	o->base = -1;
}

/* Reused deltas must not form cycles (the same object found as a delta in two
 * packs) nor chains longer than opts.depth: cut them, the cut objects go to
 * the search. Then record at each chain's root how deep its reused children
 * go, so the search does not make their chains too long. */
static int check_reused_chains(struct pw_pack_writer *w)
{
	size_t i, n, cap = 64;
	int32_t *stack = malloc(cap * sizeof(*stack));

	if (!stack)
		return pw_pack_writer__nomem(w);
	for (i = 0; i < w->nr; i++) {
		int32_t j = (int32_t)i;
		struct wobj *o;

		n = 0;
		while (pw_pack_writer__chained(&w->objs[j]) &&
		       !(w->objs[j].flags & (W_DEPTH | W_VISIT))) {
			if (n == cap) {
				int32_t *p = realloc(stack, 2 * cap * sizeof(*stack));

				if (!p) {
					free(stack);
					return pw_pack_writer__nomem(w);
				}
				stack = p;
				cap *= 2;
			}
			w->objs[j].flags |= W_VISIT;
			stack[n++] = j;
			j = w->objs[j].base;
		}
		if (pw_pack_writer__chained(&w->objs[j]) && (w->objs[j].flags & W_VISIT))
			drop_reuse(&w->objs[j]); /* closes a cycle */
		while (n) {
			o = &w->objs[stack[--n]];
			o->flags &= ~(uint32_t)W_VISIT;
			o->flags |= W_DEPTH;
			if (!pw_pack_writer__chained(o)) {
				o->depth = 0;
				continue;
			}
			if (w->objs[o->base].flags & W_BASE_ONLY)
				o->depth = 1;
			else
				o->depth = (uint16_t)(w->objs[o->base].depth + 1);
			if (o->depth > w->opts.depth) {
				drop_reuse(o);
				o->depth = 0;
			}
		}
	}
	free(stack);
	for (i = 0; i < w->nr; i++) {
		struct wobj *o = &w->objs[i];
		int32_t root = (int32_t)i;

		if (!pw_pack_writer__chained(o))
			continue;
		while (pw_pack_writer__chained(&w->objs[root]))
			root = w->objs[root].base;
		if (w->objs[root].child_depth < o->depth)
			w->objs[root].child_depth = o->depth;
	}
	return 0;
}

/* Objects stored as deltas we do not reuse still need their type and size. */
static int fill_missing_headers(struct pw_pack_writer *w)
{
	size_t i;

	for (i = 0; i < w->nr; i++) {
		struct wobj *o = &w->objs[i];
		uint64_t size;
		int type, rc;

		if (o->size || pw_pack_writer__reused_delta(o) || (o->flags & W_MISSING))
			continue;
		if (o->raw_type && !pw_pack_writer__is_delta_type(o->raw_type))
			continue; /* whole packed object: known */
		rc = pw_odb_read_header(w->odb, &o->oid, &type, &size);
		if (rc)
			return pw_error_copy(&w->err, pw_odb_error(w->odb));
		o->type = (uint8_t)type;
		o->size = size;
	}
	return 0;
}

/* ---- 3. writing ------------------------------------------------------------ */

static int out_flush(struct pw_pack_writer *w)
{
	int rc;

	if (!w->outlen)
		return 0;
	pw_hash_update(&w->hash, w->outbuf, w->outlen);
	rc = w->out_fn(w->out_ctx, w->outbuf, w->outlen, &w->err);
	w->outlen = 0;
	return rc;
}

static int out_write(struct pw_pack_writer *w, const void *data, size_t len)
{
	int rc;

	w->pos += len;
	if (w->outlen + len <= OUTBUF_SIZE) {
		memcpy(w->outbuf + w->outlen, data, len);
		w->outlen += len;
		return 0;
	}
	if ((rc = out_flush(w)))
		return rc;
	if (len < OUTBUF_SIZE) {
		memcpy(w->outbuf, data, len);
		w->outlen = len;
		return 0;
	}
	pw_hash_update(&w->hash, data, len);
	return w->out_fn(w->out_ctx, data, len, &w->err);
}

/* v1 idx entries carry no CRC: make sure the zlib stream is whole instead. */
static int inflate_check(const uint8_t *z, size_t zlen, uint64_t size)
{
	z_stream s;
	uint8_t scratch[16384];
	int ret;
	uint64_t total = 0;

	memset(&s, 0, sizeof(s));
	if (inflateInit(&s) != Z_OK)
		return PW_ENOMEM;
	s.next_in = (Bytef *)z;
	s.avail_in = (uInt)zlen;
	do {
		s.next_out = scratch;
		s.avail_out = sizeof(scratch);
		ret = inflate(&s, Z_NO_FLUSH);
		total += sizeof(scratch) - s.avail_out;
	} while (ret == Z_OK && total <= size);
	inflateEnd(&s);
	if (ret != Z_STREAM_END || total != size || s.avail_in != 0)
		return PW_ECORRUPT;
	return 0;
}

static int verify_reused(struct pw_pack_writer *w, struct wobj *o)
{
	char hex[PW_MAX_HEXSZ + 1];
	int has_crc = 0;
	uint32_t want = pw_idx_nth_crc(o->pack->idx, o->idx_pos, &has_crc);

	if (has_crc) {
		if ((uint32_t)libdeflate_crc32(0, o->raw, o->raw_len) == want)
			return 0;
	} else if (!inflate_check(o->raw + o->raw_hdr, o->raw_len - o->raw_hdr, o->raw_size)) {
		return 0;
	}
	return pw_error_set(&w->err, PW_ECORRUPT,
	                    "%s: packed object %s at offset %llu is corrupt (%s); not reusing it",
	                    pw_pack_path(o->pack), pw_oid_to_hex(&o->oid, hex),
	                    (unsigned long long)(o->raw - o->pack->data),
	                    has_crc ? "CRC mismatch" : "bad zlib stream");
}

static int write_entry(struct pw_pack_writer *w, struct wobj *o, struct libdeflate_compressor *c,
                       struct pw_buf *scratch)
{
	uint8_t hdr[10 + 10 + PW_MAX_RAWSZ];
	size_t hlen;
	const uint8_t *data;
	size_t len;
	uint8_t *owned = NULL;
	int rc, delta, type;
	uint64_t size;

	o->offset = w->pos;
	if (o->flags & W_REUSE) {
		if (w->opts.verify_reuse && verify_reused(w, o)) {
			/* Fall back to the object itself (read through the odb, which
			 * may have it elsewhere or report the damage). Objects based
			 * on it are written after it either way. */
			pw_error_clear(&w->err);
			w->stats.reuse_failures++;
			drop_reuse(o);
			return write_entry(w, o, c, scratch);
		}
		delta = pw_pack_writer__reused_delta(o);
		size = o->raw_size;
		data = o->raw + o->raw_hdr;
		len = o->raw_len - o->raw_hdr;
		w->stats.reused++;
		if (delta)
			w->stats.reused_deltas++;
	} else if (o->zdata) {
		delta = o->zdelta;
		size = o->zsize;
		data = o->zdata;
		len = o->zlen;
	} else {
		char hex[PW_MAX_HEXSZ + 1];

		delta = 0;
		rc = pw_odb_read(w->odb, &o->oid, &type, scratch);
		if (rc)
			return pw_error_copy(&w->err, pw_odb_error(w->odb));
		if (type != o->type)
			return pw_error_set(&w->err, PW_ECORRUPT, "object %s changed type",
			                    pw_oid_to_hex(&o->oid, hex));
		if ((rc = pw_pack_writer__translate_content(w, w->translate.data, type, scratch,
		                                            &w->tr_buf, &o->oid, &w->err)))
			return rc;
		size = scratch->len;
		if ((rc = pw_pack_writer__compress_into(c, scratch->data, scratch->len, &owned,
		                                        &len)))
			return pw_error_set(&w->err, rc, "compressing %s failed",
			                    pw_oid_to_hex(&o->oid, hex));
		data = owned;
	}
	if (delta) {
		struct wobj *b = &w->objs[o->base];

		w->stats.deltas++;
		if ((b->flags & W_WRITTEN) && w->opts.ofs_delta) {
			hlen = pw_pack_entry_hdr_encode(hdr, PW_OBJ_OFS_DELTA, size);
			hlen += pw_pack_ofs_encode(hdr + hlen, o->offset - b->offset);
		} else {
			struct pw_oid base = b->oid;

			if (w->translating &&
			    (rc = w->translate.oid(w->translate.data, &b->oid, &base, &w->err))) {
				free(owned);
				return rc;
			}
			hlen = pw_pack_entry_hdr_encode(hdr, PW_OBJ_REF_DELTA, size);
			memcpy(hdr + hlen, base.id, w->out_algo->rawsz);
			hlen += w->out_algo->rawsz;
			if (b->flags & W_BASE_ONLY)
				w->stats.thin_deltas++;
		}
	} else {
		hlen = pw_pack_entry_hdr_encode(hdr, o->type, size);
	}
	o->crc = (uint32_t)libdeflate_crc32(0, hdr, hlen);
	o->crc = (uint32_t)libdeflate_crc32(o->crc, data, len);
	rc = out_write(w, hdr, hlen);
	if (!rc)
		rc = out_write(w, data, len);
	free(owned);
	if (o->zdata && !(o->flags & W_REUSE)) {
		/* not needed any more */
		free(o->zdata);
		o->zdata = NULL;
	}
	o->flags |= W_WRITTEN;
	w->wseq[w->stats.written++] = (uint32_t)(o - w->objs);
	return rc;
}

static int write_all(struct pw_pack_writer *w)
{
	uint8_t head[PW_PACK_HEADER_SIZE];
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(w->opts.compression);
	struct pw_buf scratch = PW_BUF_INIT;
	int32_t *stack = NULL, *order = NULL;
	size_t k, sp, done = 0;
	int rc = 0;

	stack = malloc(((size_t)w->opts.depth + 2) * sizeof(*stack));
	w->wseq = malloc((w->nr_send + 1) * sizeof(*w->wseq));
	if (!c || !stack || !w->wseq) {
		libdeflate_free_compressor(c);
		free(stack);
		return pw_pack_writer__nomem(w);
	}
	if ((rc = pw_pack_writer__compute_write_order(w, &order))) {
		libdeflate_free_compressor(c);
		free(stack);
		return rc;
	}
	/* The trailer is a checksum of what is written, not an object id: the
	 * plain SHA-1, as Git 2.47 and later use for it. */
	pw_hash_init_checksum(&w->hash, w->out_algo);
	pw_pack_header_encode(head, (uint32_t)w->nr_send);
	rc = out_write(w, head, sizeof(head));
	pw_pack_writer__progress(w, "Writing objects", 0, w->nr_send, 0);
	for (k = 0; k < w->nr && !rc; k++) {
		struct wobj *o = &w->objs[order[k]];

		if (o->flags & (W_WRITTEN | W_BASE_ONLY))
			continue;
		/* bases first: climb to the first written (or outside) one */
		sp = 0;
		stack[sp++] = order[k];
		for (;;) {
			struct wobj *x = &w->objs[stack[sp - 1]];
			int32_t b = x->base;

			if (b < 0 || !(pw_pack_writer__reused_delta(x) || (x->zdata && x->zdelta)))
				break;
			if (w->objs[b].flags & (W_WRITTEN | W_BASE_ONLY))
				break;
			if (sp > (size_t)w->opts.depth) {
				rc = pw_error_set(&w->err, PW_ERROR,
				                  "internal error: delta chain too long");
				break;
			}
			stack[sp++] = b;
		}
		while (sp && !rc) {
			rc = write_entry(w, &w->objs[stack[--sp]], c, &scratch);
			if (++done % 1024 == 0)
				pw_pack_writer__progress(w, "Writing objects", done, w->nr_send, 0);
		}
	}
	if (!rc)
		rc = out_flush(w);
	if (!rc) {
		pw_hash_final_checksum(&w->hash, w->checksum);
		rc = w->out_fn(w->out_ctx, w->checksum, w->out_algo->rawsz, &w->err);
		w->pos += w->out_algo->rawsz;
		w->stats.bytes = w->pos;
	}
	if (!rc)
		pw_pack_writer__progress(w, "Writing objects", done, w->nr_send, 1);
	libdeflate_free_compressor(c);
	pw_buf_free(&scratch);
	free(stack);
	free(order);
	return rc;
}

int pw_pack_writer_write(struct pw_pack_writer *w, pw_pack_out_fn fn, void *ctx, uint8_t *checksum)
{
	size_t i;
	int rc;

	if (w->written)
		return pw_error_set(&w->err, PW_EINVAL, "pack already written");
	w->written = 1;
	if (w->nr_send > UINT32_MAX)
		return pw_error_set(&w->err, PW_ETOOBIG, "too many objects for one pack");
	w->outbuf = malloc(OUTBUF_SIZE);
	if (!w->outbuf)
		return pw_pack_writer__nomem(w);
	w->out_fn = fn;
	w->out_ctx = ctx;
	pw_pack_writer__progress(w, "Counting objects", 0, w->nr, 0);
	for (i = 0; i < w->nr; i++) {
		if ((rc = count_one(w, i)))
			return rc;
		if (i % 1024 == 1023)
			pw_pack_writer__progress(w, "Counting objects", i + 1, w->nr, 0);
	}
	pw_pack_writer__progress(w, "Counting objects", w->nr, w->nr, 1);
	if ((rc = check_reused_chains(w)) || (rc = fill_missing_headers(w)))
		return rc;
	if ((rc = pw_pack_writer__search_deltas(w)))
		return rc;
	if ((rc = write_all(w)))
		return rc;
	if (checksum)
		memcpy(checksum, w->checksum, w->out_algo->rawsz);
	return 0;
}

static int fd_out(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	if (pw_fs_write_all(*(int *)ctx, data, len))
		return pw_error_set(err, PW_EIO, "writing the pack: %s", strerror(errno));
	return 0;
}

int pw_pack_writer_write_fd(struct pw_pack_writer *w, int fd, uint8_t *checksum)
{
	return pw_pack_writer_write(w, fd_out, &fd, checksum);
}

int pw_pack_writer_write_idx_fd(struct pw_pack_writer *w, int fd, int version)
{
	struct pw_idx_entry *entries, **ptrs;
	struct pw_idx_write_opts opts;
	size_t i, n = 0;
	int rc;

	if (!w->written || !w->stats.bytes)
		return pw_error_set(&w->err, PW_EINVAL, "no pack written yet");
	entries = malloc((w->nr_send ? w->nr_send : 1) * sizeof(*entries));
	ptrs = malloc((w->nr_send ? w->nr_send : 1) * sizeof(*ptrs));
	if (!entries || !ptrs) {
		free(entries);
		free(ptrs);
		return pw_pack_writer__nomem(w);
	}
	for (i = 0; i < w->nr; i++) {
		struct wobj *o = &w->objs[i];

		if (!(o->flags & W_WRITTEN))
			continue;
		entries[n].oid = o->oid;
		if (w->translating &&
		    (rc = w->translate.oid(w->translate.data, &o->oid, &entries[n].oid, &w->err))) {
			free(entries);
			free(ptrs);
			return rc;
		}
		entries[n].offset = o->offset;
		entries[n].crc32 = o->crc;
		ptrs[n] = &entries[n];
		n++;
	}
	qsort(ptrs, n, sizeof(*ptrs), pw_idx_entry_cmp);
	memset(&opts, 0, sizeof(opts));
	opts.version = version ? version : 2;
	rc = pw_idx_write_fd(w->out_algo, (const struct pw_idx_entry *const *)ptrs, n, w->checksum,
	                     &opts, fd, NULL, &w->err);
	free(entries);
	free(ptrs);
	return rc;
}

/* A temporary file beside `base_name` (same directory, so rename works). */
static int tmp_file(struct pw_pack_writer *w, const char *base_name, const char *what, char **path)
{
	const char *slash = strrchr(base_name, '/');
	size_t dirlen = slash ? (size_t)(slash - base_name) + 1 : 0;
	char *p = malloc(dirlen + 32);
	int fd;

	if (!p)
		return pw_pack_writer__nomem(w);
	memcpy(p, base_name, dirlen);
	snprintf(p + dirlen, 32, "tmp_%s_XXXXXX", what);
	fd = pw_fs_mkstemp_mode(p, 0444); /* read-only as Git's, under the umask */
	if (fd < 0) {
		pw_error_set(&w->err, PW_EIO, "cannot create a temporary file in '%.*s': %s",
		             (int)(dirlen ? dirlen : 1), dirlen ? base_name : ".", strerror(errno));
		free(p);
		return PW_EIO;
	}
	*path = p;
	return fd;
}

int pw_pack_writer_write_files(struct pw_pack_writer *w, const char *base_name, int idx_version,
                               char *hex_out)
{
	char *tmp_pack = NULL, *tmp_idx = NULL, *final = NULL;
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid sum;
	size_t blen = strlen(base_name);
	int fd, rc;

	fd = tmp_file(w, base_name, "pack", &tmp_pack);
	if (fd < 0)
		return fd;
	rc = pw_pack_writer_write_fd(w, fd, NULL);
	if (close(fd) && !rc)
		rc = pw_error_set(&w->err, PW_EIO, "closing %s: %s", tmp_pack, strerror(errno));
	if (rc)
		goto fail;
	fd = tmp_file(w, base_name, "idx", &tmp_idx);
	if (fd < 0) {
		rc = fd;
		goto fail;
	}
	rc = pw_pack_writer_write_idx_fd(w, fd, idx_version);
	if (close(fd) && !rc)
		rc = pw_error_set(&w->err, PW_EIO, "closing %s: %s", tmp_idx, strerror(errno));
	if (rc)
		goto fail;
	pw_oid_from_raw(&sum, w->checksum, w->out_algo);
	pw_oid_to_hex(&sum, hex);
	final = malloc(blen + 1 + PW_MAX_HEXSZ + 8);
	if (!final) {
		rc = pw_pack_writer__nomem(w);
		goto fail;
	}
	snprintf(final, blen + PW_MAX_HEXSZ + 9, "%s-%s.pack", base_name, hex);
	if (rename(tmp_pack, final)) {
		rc = pw_error_set(&w->err, PW_EIO, "cannot rename %s to %s: %s", tmp_pack, final,
		                  strerror(errno));
		goto fail;
	}
	free(tmp_pack);
	tmp_pack = NULL;
	snprintf(final, blen + PW_MAX_HEXSZ + 9, "%s-%s.idx", base_name, hex);
	if (rename(tmp_idx, final)) {
		rc = pw_error_set(&w->err, PW_EIO, "cannot rename %s to %s: %s", tmp_idx, final,
		                  strerror(errno));
		goto fail;
	}
	free(tmp_idx);
	free(final);
	if (hex_out)
		memcpy(hex_out, hex, w->out_algo->hexsz + 1);
	return 0;
fail:
	if (tmp_pack)
		unlink(tmp_pack);
	if (tmp_idx)
		unlink(tmp_idx);
	free(tmp_pack);
	free(tmp_idx);
	free(final);
	return rc;
}

/* ---- the reachability bitmap of the written pack ---------------------------- */

void pw_pack_writer_set_commit_info(struct pw_pack_writer *w, pw_pack_commit_fn fn, void *data)
{
	w->commit_fn = fn;
	w->commit_data = data;
}

/* The bitmap writer's lookup: the writer's table, then the entry's
 * position in pack order. */
struct bitmap_pos {
	struct pw_pack_writer *w;
	uint32_t *pos; /* per entry number: its pack position, UINT32_MAX if not sent */
};

static int64_t bitmap_pos(void *data, const struct pw_oid *oid)
{
	struct bitmap_pos *bp = data;
	int32_t i = pw_pack_writer__lookup(bp->w, oid);

	return i < 0 || bp->pos[i] == UINT32_MAX ? -1 : (int64_t)bp->pos[i];
}

int pw_pack_writer_write_bitmap_file(struct pw_pack_writer *w, const char *base_name,
                                     const struct pw_oid *tips, size_t ntips)
{
	return pw_pack_writer_write_bitmap_file_odb(w, base_name, tips, ntips, NULL);
}

/* The written objects in pack order (the order written) with their ids in
 * the pack's algorithm; with pos, each written object's position too (by
 * its index in w->objs, UINT32_MAX when not written). */
static int bitmap_objs(struct pw_pack_writer *w, struct pw_bitmap_obj **out, size_t *nr,
                       uint32_t **pos)
{
	struct pw_bitmap_obj *objs;
	size_t i, n = w->stats.written;
	int rc = 0;

	objs = malloc((w->nr_send ? w->nr_send : 1) * sizeof(*objs));
	if (pos)
		*pos = malloc((w->nr ? w->nr : 1) * sizeof(**pos));
	if (!objs || (pos && !*pos)) {
		free(objs);
		if (pos) {
			free(*pos);
			*pos = NULL;
		}
		return pw_pack_writer__nomem(w);
	}
	if (pos)
		memset(*pos, 0xff, (w->nr ? w->nr : 1) * sizeof(**pos));
	for (i = 0; i < n && !rc; i++) {
		const struct wobj *o = &w->objs[w->wseq[i]];

		objs[i].oid = o->oid;
		objs[i].hash = o->hash;
		objs[i].type = o->type;
		if (pos)
			(*pos)[w->wseq[i]] = (uint32_t)i;
		if (w->translating)
			rc = w->translate.oid(w->translate.data, &o->oid, &objs[i].oid, &w->err);
	}
	if (rc) {
		free(objs);
		if (pos) {
			free(*pos);
			*pos = NULL;
		}
		return rc;
	}
	*out = objs;
	*nr = n;
	return 0;
}

int pw_pack_writer_write_bitmap_file_odb(struct pw_pack_writer *w, const char *base_name,
                                         const struct pw_oid *tips, size_t ntips,
                                         struct pw_odb *odb)
{
	struct pw_bitmap_write_index_opts bo;
	struct pw_bitmap_obj *objs = NULL;
	struct bitmap_pos bp = {w, NULL};
	char hex[PW_MAX_HEXSZ + 1], *tmp = NULL, *final = NULL;
	struct pw_oid sum;
	size_t n = 0, blen = strlen(base_name);
	int fd, rc;

	if (!w->written || !w->stats.bytes)
		return pw_error_set(&w->err, PW_EINVAL, "no pack written yet");
	if (!odb)
		odb = w->odb;
	if (pw_odb_algo(odb) != w->out_algo)
		return pw_error_set(&w->err, PW_EINVAL,
		                    "a bitmap of a translated pack reads the written pack");
	/* a translated pack's ids are not the writer's: the bitmap writer
	 * finds positions and reads commits itself */
	if ((rc = bitmap_objs(w, &objs, &n, w->translating ? NULL : &bp.pos)))
		return rc;
	fd = tmp_file(w, base_name, "bitmap", &tmp);
	if (fd < 0) {
		free(objs);
		free(bp.pos);
		return fd;
	}
	memset(&bo, 0, sizeof(bo));
	bo.progress = w->opts.progress;
	bo.progress_data = w->opts.progress_data;
	if (!w->translating) {
		bo.pos = bitmap_pos;
		bo.pos_data = &bp;
		bo.commit = w->commit_fn;
		bo.commit_data = w->commit_data;
	}
	rc = pw_bitmap_write(odb, objs, (uint32_t)n, w->checksum, tips, ntips, &bo, fd_out, &fd,
	                     &w->err);
	free(objs);
	free(bp.pos);
	if (close(fd) && !rc)
		rc = pw_error_set(&w->err, PW_EIO, "closing %s: %s", tmp, strerror(errno));
	if (!rc && !(final = malloc(blen + PW_MAX_HEXSZ + 10)))
		rc = pw_pack_writer__nomem(w);
	if (!rc) {
		pw_oid_from_raw(&sum, w->checksum, w->out_algo);
		pw_oid_to_hex(&sum, hex);
		snprintf(final, blen + PW_MAX_HEXSZ + 10, "%s-%s.bitmap", base_name, hex);
		if (rename(tmp, final))
			rc = pw_error_set(&w->err, PW_EIO, "cannot rename %s to %s: %s", tmp, final,
			                  strerror(errno));
	}
	if (rc)
		unlink(tmp);
	free(tmp);
	free(final);
	return rc;
}
