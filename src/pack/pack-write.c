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
 * 3. Writing, in Git's order (see compute_write_order): recency order for
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
#include "hash/oidmap.h"
#include "util/fs.h"

/* Objects smaller than this are not worth a delta. */
#define MIN_DELTA_SIZE 50
/* Objects larger than this are neither searched nor used as bases (Git's
 * core.bigFileThreshold default). */
#define BIG_FILE ((uint64_t)512 << 20)
/* Compressed whole objects computed during the search are kept up to this
 * many bytes (beyond, they are compressed again while writing). */
#define ZCACHE_LIMIT ((size_t)256 << 20)
#define OUTBUF_SIZE  (128 * 1024)

enum {
	W_BASE_ONLY = 1, /* thin-pack base: the receiver has it */
	W_REUSE = 2,     /* copy the packed entry verbatim */
	W_WRITTEN = 4,
	W_MISSING = 8, /* base-only object we do not have */
	W_VISIT = 16,
	W_DEPTH = 32, /* depth of a reused delta is final */
	W_SEARCHED = 64,
	W_TSIZE = 128, /* size is the translated content's */
	/* translated, stored as a delta whose base is sent too: its delta is
	 * computed against that base's translation (the stored pack's choice,
	 * found by a wider search than ours), not searched */
	W_MIRROR = 256,
	W_TAGGED = 512, /* a tag, or what one peels to: written early */
};

struct wobj {
	struct pw_oid oid;
	uint8_t type;     /* real type */
	uint8_t raw_type; /* type of the packed entry, 0 when not packed */
	uint8_t raw_hdr;  /* header length of the packed entry */
	uint8_t zdelta;   /* zdata holds a delta */
	uint32_t hash;
	uint16_t depth;
	uint16_t child_depth; /* longest reused delta chain hanging below */
	uint32_t flags;
	int32_t base; /* delta base (index), -1 for none */
	uint32_t idx_pos;
	uint32_t crc;
	uint64_t size;
	struct pw_pack *pack;
	const uint8_t *raw; /* the packed entry */
	size_t raw_len;
	uint64_t raw_size;
	uint8_t *zdata; /* new entry data (compressed delta or whole object) */
	size_t zlen;
	uint64_t zsize; /* its size before compression */
	uint64_t offset;
};

struct pw_pack_writer {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;     /* of the odb */
	const struct pw_hash_algo *out_algo; /* of the pack: translate.algo or algo */
	struct pw_pack_write_opts opts;
	int translating;
	struct pw_pack_translate translate;
	struct pw_buf tr_buf; /* translated content on the writing thread */
	struct pw_error err;
	struct wobj *objs;
	size_t nr, alloc, nr_send;
	struct pw_oidmap map;  /* oid -> index + 1 */
	struct pw_oid *tagged; /* pw_pack_writer_add_tagged */
	size_t nr_tagged, alloc_tagged;
	int tagged_given;
	int written;
	uint8_t checksum[PW_MAX_RAWSZ];
	struct pw_pack_write_stats stats;
	atomic_size_t zcache;
	atomic_uint_fast64_t search_done;
	uint64_t search_total;
	pthread_mutex_t progress_lock;
	/* output */
	pw_pack_out_fn out_fn;
	void *out_ctx;
	uint8_t *outbuf;
	size_t outlen;
	uint64_t pos;
	struct pw_hash_ctx hash;
};

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
	free(w->objs);
	free(w->tagged);
	free(w->outbuf);
	pw_buf_free(&w->tr_buf);
	pw_oidmap_free(&w->map);
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
	const struct pw_oidmap_entry *e = pw_oidmap_get(&w->map, oid);

	return e && !(w->objs[(uintptr_t)e->value - 1].flags & W_BASE_ONLY);
}

void pw_pack_writer_stats(const struct pw_pack_writer *w, struct pw_pack_write_stats *out)
{
	*out = w->stats;
}

static int nomem(struct pw_pack_writer *w)
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
static int translate_content(struct pw_pack_writer *w, void *data, int type, struct pw_buf *buf,
                             struct pw_buf *tmp, const struct pw_oid *oid, struct pw_error *err)
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

static void progress(struct pw_pack_writer *w, const char *title, uint64_t n, uint64_t total,
                     int done)
{
	if (w->opts.progress)
		w->opts.progress(w->opts.progress_data, title, n, total, done);
}

static int add(struct pw_pack_writer *w, const struct pw_oid *oid, int type, const char *path,
               size_t path_len, int base_only)
{
	struct pw_oidmap_entry *e;
	struct wobj *o;
	int created;

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
		struct wobj *p = realloc(w->objs, n * sizeof(*p));

		if (!p)
			return nomem(w);
		w->objs = p;
		w->alloc = n;
	}
	e = pw_oidmap_put(&w->map, oid, &created);
	if (!e)
		return nomem(w);
	if (!created) {
		o = &w->objs[(uintptr_t)e->value - 1];
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
	e->value = (void *)(uintptr_t)(w->nr + 1);
	w->nr++;
	if (!base_only)
		w->nr_send++;
	return 0;
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

static int is_delta_type(int t)
{
	return t == PW_OBJ_OFS_DELTA || t == PW_OBJ_REF_DELTA;
}

static int w_translates(const struct pw_pack_writer *w, int type)
{
	return w->translating && type != PW_OBJ_BLOB;
}

/* A reused delta: copied verbatim, base known. */
static int reused_delta(const struct wobj *o)
{
	return (o->flags & W_REUSE) && is_delta_type(o->raw_type);
}

/* Its base is decided before the search: a reused or a mirrored delta. */
static int chained(const struct wobj *o)
{
	return reused_delta(o) || (o->flags & W_MIRROR);
}

static int32_t lookup(struct pw_pack_writer *w, const struct pw_oid *oid)
{
	struct pw_oidmap_entry *e = pw_oidmap_get(&w->map, oid);

	return e ? (int32_t)((uintptr_t)e->value - 1) : -1;
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
		if (!is_delta_type(raw.type)) {
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
			b = lookup(w, &base_oid);
			if (b >= 0 && !(w->objs[b].flags & W_MISSING) && b != (int32_t)i) {
				o->base = b;
				o->flags |= w_translates(w, o->type) ? W_MIRROR : W_REUSE;
			}
		}
	}
	/* Type and size are needed for searching and for whole objects; a
	 * reused delta of known type needs neither. */
	if (!size_known && (!o->type || !reused_delta(o))) {
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
		return nomem(w);
	for (i = 0; i < w->nr; i++) {
		int32_t j = (int32_t)i;
		struct wobj *o;

		n = 0;
		while (chained(&w->objs[j]) && !(w->objs[j].flags & (W_DEPTH | W_VISIT))) {
			if (n == cap) {
				int32_t *p = realloc(stack, 2 * cap * sizeof(*stack));

				if (!p) {
					free(stack);
					return nomem(w);
				}
				stack = p;
				cap *= 2;
			}
			w->objs[j].flags |= W_VISIT;
			stack[n++] = j;
			j = w->objs[j].base;
		}
		if (chained(&w->objs[j]) && (w->objs[j].flags & W_VISIT))
			drop_reuse(&w->objs[j]); /* closes a cycle */
		while (n) {
			o = &w->objs[stack[--n]];
			o->flags &= ~(uint32_t)W_VISIT;
			o->flags |= W_DEPTH;
			if (!chained(o)) {
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

		if (!chained(o))
			continue;
		while (chained(&w->objs[root]))
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

		if (o->size || reused_delta(o) || (o->flags & W_MISSING))
			continue;
		if (o->raw_type && !is_delta_type(o->raw_type))
			continue; /* whole packed object: known */
		rc = pw_odb_read_header(w->odb, &o->oid, &type, &size);
		if (rc)
			return pw_error_copy(&w->err, pw_odb_error(w->odb));
		o->type = (uint8_t)type;
		o->size = size;
	}
	return 0;
}

/* ---- 2. delta search ------------------------------------------------------- */

struct cand {
	uint32_t idx;
	uint8_t type;
	uint8_t base_only;
	uint32_t hash;
	uint64_t size;
};

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->base_only != b->base_only) /* bases first: they can only be bases */
		return a->base_only ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->idx < b->idx ? 1 : (a->idx > b->idx ? -1 : 0); /* newest last */
}

struct slot {
	int32_t obj;
	int loaded; /* 1: data holds the object, -1: it could not be read */
	struct pw_buf data;
	struct pw_delta_index *index;
};

/* The sorted list is cut into segments that the threads take in turn; a
 * window never crosses a segment boundary. */
struct segment {
	size_t start, end;
};

struct worker {
	struct pw_pack_writer *w;
	struct pw_odb *odb;
	const struct cand *list;
	const struct segment *segs;
	size_t nsegs;
	atomic_size_t *next_seg;
	struct libdeflate_compressor *comp;
	void *tr_data;          /* the translation's data for this thread */
	struct pw_buf tr_buf;   /* its scratch */
	struct pw_buf base_buf; /* a mirrored delta's base */
	/* translations along the current chain of mirrored deltas */
	struct tr_entry {
		int32_t obj;
		struct pw_buf data;
		struct pw_delta_index *index; /* of data, once a child needed it */
	} * chain;
	size_t chain_len, chain_cap;
	struct pw_error err;
	int rc;
};

static int compress_into(struct libdeflate_compressor *c, const void *in, size_t len, uint8_t **out,
                         size_t *outlen)
{
	size_t cap = libdeflate_zlib_compress_bound(c, len);
	uint8_t *p = malloc(cap ? cap : 1);
	size_t n;

	if (!p)
		return PW_ENOMEM;
	n = libdeflate_zlib_compress(c, in, len, p, cap);
	if (!n) {
		free(p);
		return PW_ERROR;
	}
	*out = p;
	*outlen = n;
	return 0;
}

static void search_progress(struct pw_pack_writer *w)
{
	uint64_t n = atomic_fetch_add(&w->search_done, 1) + 1;

	if (!w->opts.progress || (n % 256 && n != w->search_total))
		return;
	pthread_mutex_lock(&w->progress_lock);
	progress(w, "Compressing objects", n, w->search_total, 0);
	pthread_mutex_unlock(&w->progress_lock);
}

/* Read a slot's object on first use. 0, 1 when unusable (a base we cannot
 * read), or an error. */
static int load_slot(struct worker *wk, struct slot *s)
{
	struct wobj *o = &wk->w->objs[s->obj];
	char hex[PW_MAX_HEXSZ + 1];
	int type, rc;

	if (s->loaded)
		return s->loaded < 0;
	rc = pw_odb_read(wk->odb, &o->oid, &type, &s->data);
	if (rc) {
		if (o->flags & W_BASE_ONLY) {
			s->loaded = -1;
			return 1;
		}
		return pw_error_copy(&wk->err, pw_odb_error(wk->odb));
	}
	if (type != o->type || (!(o->flags & W_TSIZE) && s->data.len != o->size))
		return pw_error_set(&wk->err, PW_ECORRUPT,
		                    "object %s: type or size differ from its header",
		                    pw_oid_to_hex(&o->oid, hex));
	if (w_translates(wk->w, type)) {
		if ((rc = translate_content(wk->w, wk->tr_data, type, &s->data, &wk->tr_buf,
		                            &o->oid, &wk->err)))
			return rc;
		/* only this thread touches the objects of its segment */
		o->size = s->data.len;
		o->flags |= W_TSIZE;
	}
	s->loaded = 1;
	return 0;
}

/* The mirrored deltas appended to list in depth-first order from their
 * chains' roots (so that an object's base is on the worker's stack of
 * translations when its turn comes), cut into segments of 256. */
static int mirror_order(struct pw_pack_writer *w, struct cand *list, size_t *n,
                        struct segment *segs, size_t *nsegs)
{
	int32_t *first = malloc((w->nr ? w->nr : 1) * sizeof(*first));
	int32_t *next = malloc((w->nr ? w->nr : 1) * sizeof(*next));
	int32_t *stack = malloc((w->nr ? w->nr : 1) * sizeof(*stack));
	size_t i, start = *n, sp;

	if (!first || !next || !stack) {
		free(first);
		free(next);
		free(stack);
		return nomem(w);
	}
	for (i = 0; i < w->nr; i++)
		first[i] = next[i] = -1;
	for (i = w->nr; i-- > 0;) {
		if (!(w->objs[i].flags & W_MIRROR))
			continue;
		next[i] = first[w->objs[i].base];
		first[w->objs[i].base] = (int32_t)i;
	}
	for (i = 0; i < w->nr; i++) {
		if ((w->objs[i].flags & W_MIRROR) || first[i] < 0)
			continue;
		/* preorder: a node, then each child's subtree */
		sp = 0;
		for (int32_t c = first[i]; c >= 0; c = next[c])
			stack[sp++] = c;
		while (sp) {
			int32_t o = stack[--sp];

			memset(&list[*n], 0, sizeof(list[*n]));
			list[(*n)++].idx = (uint32_t)o;
			w->search_total++;
			for (int32_t c = first[o]; c >= 0; c = next[c])
				stack[sp++] = c;
		}
	}
	for (i = start; i < *n; i += 256) {
		segs[*nsegs].start = i;
		segs[*nsegs].end = i + 256 < *n ? i + 256 : *n;
		(*nsegs)++;
	}
	free(first);
	free(next);
	free(stack);
	return 0;
}

/* A mirrored delta (W_MIRROR): t (in slot s) against its base's
 * translation. Without a delta worth it, t is written whole (what is based
 * on it stays so). */
static int mirror_delta(struct worker *wk, struct slot *s, struct wobj *t, struct pw_buf *delta)
{
	struct pw_pack_writer *w = wk->w;
	struct wobj *b = &w->objs[t->base];
	const struct pw_buf *base;
	struct tr_entry *top;
	int rc, type;

	if ((rc = load_slot(wk, s)))
		return rc < 0 ? rc : 0;
	/* the base is on the chain unless this segment starts below it */
	while (wk->chain_len && wk->chain[wk->chain_len - 1].obj != t->base) {
		wk->chain_len--;
		pw_delta_index_free(wk->chain[wk->chain_len].index);
		wk->chain[wk->chain_len].index = NULL;
	}
	if (wk->chain_len) {
		top = &wk->chain[wk->chain_len - 1];
		base = &top->data;
		/* indexed once for all its children */
		if (!top->index && (rc = pw_delta_index_new(&top->index, base->data, base->len)) &&
		    rc != PW_ETOOBIG)
			return pw_error_set(&wk->err, rc, "delta search: out of memory");
	} else {
		rc = pw_odb_read(wk->odb, &b->oid, &type, &wk->base_buf);
		if (rc)
			return pw_error_copy(&wk->err, pw_odb_error(wk->odb));
		if ((rc = translate_content(w, wk->tr_data, type, &wk->base_buf, &wk->tr_buf,
		                            &b->oid, &wk->err)))
			return rc;
		base = &wk->base_buf;
	}
	if (wk->chain_len && wk->chain[wk->chain_len - 1].index)
		rc = pw_delta_create_from_index(wk->chain[wk->chain_len - 1].index, s->data.data,
		                                s->data.len, s->data.len, delta);
	else
		rc = pw_delta_create(base->data, base->len, s->data.data, s->data.len, s->data.len,
		                     delta);
	if (rc && rc != PW_ETOOBIG)
		return pw_error_set(&wk->err, rc, "delta search: out of memory");
	free(t->zdata);
	t->zdata = NULL;
	t->zdelta = !rc;
	if (rc) {
		t->flags &= ~(uint32_t)W_MIRROR;
		t->base = -1;
		delta = &s->data;
	}
	if ((rc = compress_into(wk->comp, delta->data, delta->len, &t->zdata, &t->zlen)))
		return pw_error_set(&wk->err, rc, "delta search: compression failed");
	t->zsize = delta->len;
	/* t's translation goes on the chain for its children (the slot's
	 * buffer is swapped, not copied; the slot is loaded afresh next time) */
	if (!wk->chain_len && wk->chain_cap) {
		top = &wk->chain[0];
		top->obj = (int32_t)(b - w->objs);
		{
			struct pw_buf tmp = top->data;

			top->data = wk->base_buf;
			wk->base_buf = tmp;
		}
		wk->chain_len = 1;
	}
	if (wk->chain_len == wk->chain_cap) {
		size_t ncap = wk->chain_cap ? 2 * wk->chain_cap : 16;
		struct tr_entry *nc = realloc(wk->chain, ncap * sizeof(*nc));

		if (!nc)
			return pw_error_set(&wk->err, PW_ENOMEM, "delta search: out of memory");
		for (size_t k = wk->chain_cap; k < ncap; k++) {
			pw_buf_init(&nc[k].data, 0);
			nc[k].index = NULL;
		}
		wk->chain = nc;
		wk->chain_cap = ncap;
	}
	top = &wk->chain[wk->chain_len++];
	top->obj = (int32_t)(t - w->objs);
	{
		struct pw_buf tmp = top->data;

		top->data = s->data;
		s->data = tmp;
	}
	s->loaded = 0;
	return 0;
}

/* The search of t (in slot s) is over: its best delta (against
 * best_base, in best) compressed, or, written whole, its data compressed
 * here in parallel while the cache has room. */
static int settle(struct worker *wk, struct slot *s, struct wobj *t, const struct pw_buf *best,
                  int32_t best_base)
{
	struct pw_pack_writer *w = wk->w;
	int rc;

	if (best_base >= 0) {
		free(t->zdata);
		t->zdata = NULL;
		if ((rc = compress_into(wk->comp, best->data, best->len, &t->zdata, &t->zlen)))
			return pw_error_set(&wk->err, rc, "delta search: compression failed");
		t->zsize = best->len;
		t->zdelta = 1;
		t->base = best_base;
		t->depth = (uint16_t)(w->objs[best_base].depth + 1);
		t->flags &= ~(uint32_t)W_REUSE;
	} else if (!(t->flags & W_REUSE) && !t->zdata &&
	           atomic_load(&w->zcache) + t->size < ZCACHE_LIMIT) {
		if ((rc = load_slot(wk, s)) < 0)
			return rc;
		if ((rc = compress_into(wk->comp, s->data.data, s->data.len, &t->zdata, &t->zlen)))
			return pw_error_set(&wk->err, rc, "delta search: compression failed");
		atomic_fetch_add(&w->zcache, t->zlen);
		t->zsize = s->data.len;
		t->zdelta = 0;
	}
	return 0;
}

static int search_segment(struct worker *wk, struct slot *slots, size_t nslots, size_t start,
                          size_t end, struct pw_buf *delta, struct pw_buf *best)
{
	struct pw_pack_writer *w = wk->w;
	size_t window = nslots - 1, i, k;
	int rc = 0, max_depth = w->opts.depth;

	for (i = 0; i < nslots; i++) {
		pw_delta_index_free(slots[i].index);
		slots[i].index = NULL;
		slots[i].obj = -1;
		slots[i].loaded = 0;
	}
	for (i = start; i < end; i++) {
		size_t pos = i - start;
		struct slot *s = &slots[pos % nslots];
		struct wobj *t = &w->objs[wk->list[i].idx];
		int32_t best_base = -1;
		uint64_t max_size;

		pw_delta_index_free(s->index);
		s->index = NULL;
		s->loaded = 0;
		s->obj = (int32_t)wk->list[i].idx;
		if (t->flags & W_BASE_ONLY)
			continue;
		if (t->flags & W_MIRROR) {
			search_progress(w);
			if ((rc = mirror_delta(wk, s, t, delta)))
				return rc;
			continue;
		}
		search_progress(w);
		/* a translated object's size is known once it is read */
		if (w_translates(w, t->type) && (rc = load_slot(wk, s)) < 0)
			return rc;
		rc = 0;
		max_size = t->size / 2 - w->out_algo->rawsz;
		if (t->child_depth >= max_depth)
			max_size = 0;
		for (k = 1; k <= window && k <= pos && max_size; k++) {
			struct slot *bs = &slots[(pos - k) % nslots];
			struct wobj *b;
			uint64_t limit;

			if (bs->obj < 0 || bs->loaded < 0)
				continue;
			b = &w->objs[bs->obj];
			if (b->type != t->type)
				break;
			/* Two objects of one pack, the target stored whole: whoever
			 * packed them found no delta worth it; do not try again. */
			if (w->opts.reuse_delta && t->pack && t->pack == b->pack &&
			    !is_delta_type(t->raw_type) && !(b->flags & W_BASE_ONLY))
				continue;
			if (b->depth + 1 + t->child_depth > max_depth)
				continue;
			/* deeper bases must earn their place with smaller deltas */
			limit = max_size * (uint64_t)(max_depth - b->depth) /
			        (uint64_t)(max_depth + 1);
			if (best_base >= 0 && limit > best->len - 1)
				limit = best->len - 1;
			if (!limit || b->size < t->size / 32 ||
			    (t->size > b->size && t->size - b->size >= limit))
				continue;
			if ((rc = load_slot(wk, s)) < 0)
				return rc;
			if ((rc = load_slot(wk, bs)) < 0)
				return rc;
			if (rc)
				continue;
			if (!bs->index) {
				rc = pw_delta_index_new(&bs->index, bs->data.data, bs->data.len);
				if (rc == PW_ETOOBIG)
					continue;
				if (rc)
					return pw_error_set(&wk->err, rc,
					                    "delta search: out of memory");
			}
			rc = pw_delta_create_from_index(bs->index, s->data.data, s->data.len,
			                                (size_t)limit, delta);
			if (rc == PW_ETOOBIG)
				continue;
			if (rc)
				return pw_error_set(&wk->err, rc, "delta search: out of memory");
			best_base = bs->obj;
			{
				struct pw_buf tmp = *best;

				*best = *delta;
				*delta = tmp;
			}
		}
		if ((rc = settle(wk, s, t, best, best_base)))
			return rc;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct pw_pack_writer *w = wk->w;
	/* a window wider than the objects would be memory no search uses */
	size_t nslots = ((size_t)w->opts.window < w->nr ? (size_t)w->opts.window : w->nr) + 1, i,
	       seg;
	struct slot *slots = calloc(nslots, sizeof(*slots));
	struct pw_buf delta = PW_BUF_INIT, best = PW_BUF_INIT;

	if (!slots) {
		wk->rc = pw_error_set(&wk->err, PW_ENOMEM, "delta search: out of memory");
		return NULL;
	}
	for (i = 0; i < nslots; i++)
		pw_buf_init(&slots[i].data, 0);
	pw_buf_init(&wk->tr_buf, 0);
	pw_buf_init(&wk->base_buf, 0);
	while (!wk->rc && (seg = atomic_fetch_add(wk->next_seg, 1)) < wk->nsegs)
		wk->rc = search_segment(wk, slots, nslots, wk->segs[seg].start, wk->segs[seg].end,
		                        &delta, &best);
	for (i = 0; i < nslots; i++) {
		pw_delta_index_free(slots[i].index);
		pw_buf_free(&slots[i].data);
	}
	free(slots);
	pw_buf_free(&wk->tr_buf);
	pw_buf_free(&wk->base_buf);
	for (i = 0; i < wk->chain_cap; i++) {
		pw_buf_free(&wk->chain[i].data);
		pw_delta_index_free(wk->chain[i].index);
	}
	free(wk->chain);
	pw_buf_free(&delta);
	pw_buf_free(&best);
	return NULL;
}

static int search_deltas(struct pw_pack_writer *w)
{
	struct cand *list;
	struct segment *segs;
	size_t n = 0, i, nsegs = 0, nthreads, seg_len, start;
	struct worker wk[2];
	pthread_t tid;
	int rc = 0, started = 0;
	struct pw_odb *odb2 = NULL;
	atomic_size_t next_seg;

	if (!w->opts.window)
		return 0;
	/* one entry and at most one segment per object */
	list = malloc((w->nr ? w->nr : 1) * sizeof(*list));
	segs = malloc((w->nr ? w->nr : 1) * sizeof(*segs));
	if (!list || !segs) {
		free(list);
		free(segs);
		return nomem(w);
	}
	for (i = 0; i < w->nr; i++) {
		struct wobj *o = &w->objs[i];

		if (chained(o) || (o->flags & W_MISSING) || o->size > BIG_FILE ||
		    o->size < MIN_DELTA_SIZE || !o->type)
			continue;
		list[n].idx = (uint32_t)i;
		list[n].type = o->type;
		list[n].base_only = !!(o->flags & W_BASE_ONLY);
		list[n].hash = o->hash;
		list[n].size = o->size;
		if (!(o->flags & W_BASE_ONLY))
			w->search_total++;
		n++;
	}
	qsort(list, n, sizeof(*list), cand_cmp);

	nthreads = w->opts.threads ? (size_t)w->opts.threads : 2;
	if (nthreads > 2)
		nthreads = 2;
	/* a second thread pays off only on longer lists, unless asked for */
	if (!w->opts.objects_dir || (!w->opts.threads && n < 4 * (size_t)w->opts.window + 256) ||
	    (w->translating && !w->translate.data2))
		nthreads = 1;
	/* Segments of about n/32 objects (at least a few windows), cut where the
	 * name hash changes so that files of one name share a window. */
	seg_len = n / 32;
	if (seg_len < 16 * (size_t)w->opts.window + 64)
		seg_len = 16 * (size_t)w->opts.window + 64;
	for (start = 0; start < n;) {
		size_t end = start + seg_len;

		if (nthreads == 1 || end >= n) {
			end = n;
		} else {
			while (end < n && list[end].hash == list[end - 1].hash &&
			       list[end].type == list[end - 1].type && end - start < 4 * seg_len)
				end++;
		}
		segs[nsegs].start = start;
		segs[nsegs].end = end;
		nsegs++;
		start = end;
	}
	/* then the mirrored deltas, in segments of their own */
	if ((rc = mirror_order(w, list, &n, segs, &nsegs))) {
		free(list);
		free(segs);
		return rc;
	}
	memset(wk, 0, sizeof(wk));
	atomic_init(&next_seg, 0);
	for (i = 0; i < 2; i++) {
		wk[i].w = w;
		wk[i].list = list;
		wk[i].segs = segs;
		wk[i].nsegs = nsegs;
		wk[i].next_seg = &next_seg;
		wk[i].tr_data = i ? w->translate.data2 : w->translate.data;
		wk[i].comp = libdeflate_alloc_compressor(w->opts.compression);
		if (!wk[i].comp)
			rc = nomem(w);
	}
	if (!rc && nthreads == 2 && pw_odb_open(&odb2, w->opts.objects_dir, w->algo, &w->err)) {
		nthreads = 1;
		pw_error_clear(&w->err);
	}
	if (!rc) {
		wk[0].odb = w->odb;
		wk[1].odb = odb2;
		progress(w, "Compressing objects", 0, w->search_total, 0);
		if (nthreads == 2 && !pthread_create(&tid, NULL, worker_main, &wk[1]))
			started = 1;
		worker_main(&wk[0]);
		if (started)
			pthread_join(tid, NULL);
		if (wk[0].rc)
			rc = pw_error_copy(&w->err, &wk[0].err);
		else if (started && wk[1].rc)
			rc = pw_error_copy(&w->err, &wk[1].err);
		if (!rc)
			progress(w, "Compressing objects", w->search_total, w->search_total, 1);
	}
	for (i = 0; i < 2; i++)
		libdeflate_free_compressor(wk[i].comp);
	pw_odb_free(odb2);
	free(list);
	free(segs);
	return rc;
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
		delta = reused_delta(o);
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
		if ((rc = translate_content(w, w->translate.data, type, scratch, &w->tr_buf,
		                            &o->oid, &w->err)))
			return rc;
		size = scratch->len;
		if ((rc = compress_into(c, scratch->data, scratch->len, &owned, &len)))
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
	w->stats.written++;
	return rc;
}

/* ---- 3a. the write order ------------------------------------------------- */

/* Objects are written in the order Git's pack-objects writes them, so that a
 * repack gives the same pack as git repack given the same deltas, and a
 * reader finds the history it reads together in one region of the file:
 *  - in the order added (the walk's recency order: commits newest first,
 *    then tags, trees and blobs as the walk met them) up to the first object
 *    a tag names;
 *  - then every tagged object (tags and what they peel to);
 *  - then the remaining commits and tags, then the remaining trees (but
 *    reused deltas, which Git files under their delta type);
 *  - then the rest (blobs) one delta family at a time: the root of the
 *    family, then its deltas level by level in recency order.
 * Each entry's base is still written before it (write_all climbs). */

/* The index of the object a delta entry of the new pack is based on, or -1. */
static int32_t write_base(const struct wobj *o)
{
	if (o->base >= 0 && (reused_delta(o) || (o->zdata && o->zdelta)))
		return o->base;
	return -1;
}

int pw_pack_writer_add_tagged(struct pw_pack_writer *w, const struct pw_oid *oid)
{
	w->tagged_given = 1;
	if (w->nr_tagged == w->alloc_tagged) {
		size_t n = w->alloc_tagged ? w->alloc_tagged * 2 : 64;
		struct pw_oid *p = realloc(w->tagged, n * sizeof(*p));

		if (!p)
			return nomem(w);
		w->tagged = p;
		w->alloc_tagged = n;
	}
	w->tagged[w->nr_tagged++] = *oid;
	return 0;
}

struct tag_refs {
	struct pw_pack_writer *w;
	int rc;
};

static int tag_ref(const struct pw_ref *ref, void *data)
{
	struct tag_refs *t = data;
	struct pw_oid peeled;
	struct pw_error err = {0};

	if ((t->rc = pw_pack_writer_add_tagged(t->w, &ref->oid)))
		return 1;
	if (ref->has_peeled)
		t->rc = pw_pack_writer_add_tagged(t->w, &ref->peeled);
	/* a broken tag is reported by whoever reads it for the pack */
	else if (!ref->peel_known && pw_odb_peel(t->w->odb, &ref->oid, &peeled, NULL, &err) > 0)
		t->rc = pw_pack_writer_add_tagged(t->w, &peeled);
	return t->rc ? 1 : 0;
}

int pw_pack_writer_add_tag_refs(struct pw_pack_writer *w, struct pw_repo *repo)
{
	struct tag_refs t = {w, 0};

	w->tagged_given = 1; /* no tags: nothing is written early */
	pw_refs_foreach(repo, "refs/tags/", 0, tag_ref, &t);
	return t.rc;
}

/* Mark the objects named by pw_pack_writer_add_tagged; without any, every
 * tag of the pack and the objects it peels to. */
static int mark_tagged(struct pw_pack_writer *w)
{
	struct pw_buf buf = PW_BUF_INIT;
	size_t i;
	int rc = 0;

	if (w->tagged_given) {
		for (i = 0; i < w->nr_tagged; i++) {
			int32_t j = lookup(w, &w->tagged[i]);

			if (j >= 0)
				w->objs[j].flags |= W_TAGGED;
		}
		return 0;
	}
	for (i = 0; i < w->nr && !rc; i++) {
		struct pw_oid oid;
		int hops, type;

		if (w->objs[i].type != PW_OBJ_TAG || (w->objs[i].flags & W_BASE_ONLY))
			continue;
		w->objs[i].flags |= W_TAGGED;
		oid = w->objs[i].oid;
		for (hops = 0; hops < 64; hops++) {
			struct pw_tag_info tag;
			int32_t j;

			if ((rc = pw_odb_read(w->odb, &oid, &type, &buf))) {
				rc = pw_error_copy(&w->err, pw_odb_error(w->odb));
				break;
			}
			if (type != PW_OBJ_TAG ||
			    pw_tag_parse(&tag, buf.data, buf.len, w->algo, &w->err)) {
				/* the writer reports a broken tag when it copies it */
				pw_error_clear(&w->err);
				break;
			}
			if ((j = lookup(w, &tag.object)) < 0)
				break;
			w->objs[j].flags |= W_TAGGED;
			if (w->objs[j].type != PW_OBJ_TAG)
				break;
			oid = tag.object;
		}
	}
	pw_buf_free(&buf);
	return rc;
}

struct order {
	int32_t *list; /* indexes in write order */
	size_t n;
	uint8_t *taken;
	int32_t *child, *sibling; /* first delta child, next delta sibling, -1 */
};

static void order_take(struct order *ord, size_t i)
{
	if (ord->taken[i])
		return;
	ord->taken[i] = 1;
	ord->list[ord->n++] = (int32_t)i;
}

/* The family of object i: up to its root, then every level of deltas below
 * it, each object's deltas together (recency order) before any of theirs. */
static void order_family(struct pw_pack_writer *w, struct order *ord, size_t i, int32_t *stack)
{
	int32_t root = (int32_t)i, c;
	size_t sp = 0, guard = 0;

	while (write_base(&w->objs[root]) >= 0 && guard++ < w->nr)
		root = write_base(&w->objs[root]);
	order_take(ord, (size_t)root);
	stack[sp++] = root;
	while (sp) {
		int32_t x = stack[--sp];
		size_t first = sp;

		for (c = ord->child[x]; c >= 0; c = ord->sibling[c])
			order_take(ord, (size_t)c);
		/* visit the children in recency order: push them reversed */
		for (c = ord->child[x]; c >= 0; c = ord->sibling[c])
			stack[sp++] = c;
		for (size_t a = first, b = sp; b > a + 1; a++, b--) {
			int32_t t = stack[a];

			stack[a] = stack[b - 1];
			stack[b - 1] = t;
		}
	}
}

/* Fills *out (malloc'd, w->nr entries) with the write order. */
static int compute_write_order(struct pw_pack_writer *w, int32_t **out)
{
	struct order ord;
	int32_t *stack;
	size_t i, first_tagged;
	int rc;

	*out = NULL;
	if ((rc = mark_tagged(w)))
		return rc;
	memset(&ord, 0, sizeof(ord));
	ord.list = malloc((w->nr + 1) * sizeof(*ord.list));
	ord.taken = calloc(w->nr + 1, 1);
	ord.child = malloc((w->nr + 1) * sizeof(*ord.child));
	ord.sibling = malloc((w->nr + 1) * sizeof(*ord.sibling));
	stack = malloc((w->nr + 1) * sizeof(*stack));
	if (!ord.list || !ord.taken || !ord.child || !ord.sibling || !stack) {
		free(ord.list);
		free(ord.taken);
		free(ord.child);
		free(ord.sibling);
		free(stack);
		return nomem(w);
	}
	for (i = 0; i < w->nr; i++)
		ord.child[i] = ord.sibling[i] = -1;
	/* backwards, so that each list of deltas ends up in recency order */
	for (i = w->nr; i-- > 0;) {
		int32_t b = write_base(&w->objs[i]);

		if (b >= 0) {
			ord.sibling[i] = ord.child[b];
			ord.child[b] = (int32_t)i;
		}
	}
	for (i = 0; i < w->nr && !(w->objs[i].flags & W_TAGGED); i++)
		order_take(&ord, i);
	first_tagged = i;
	for (; i < w->nr; i++)
		if (w->objs[i].flags & W_TAGGED)
			order_take(&ord, i);
	/* a reused delta counts as a delta, not as its object's type: it goes
	 * with its family, as in Git */
	for (i = first_tagged; i < w->nr; i++)
		if ((w->objs[i].type == PW_OBJ_COMMIT || w->objs[i].type == PW_OBJ_TAG) &&
		    !reused_delta(&w->objs[i]))
			order_take(&ord, i);
	for (i = first_tagged; i < w->nr; i++)
		if (w->objs[i].type == PW_OBJ_TREE && !reused_delta(&w->objs[i]))
			order_take(&ord, i);
	for (i = first_tagged; i < w->nr; i++)
		if (!ord.taken[i])
			order_family(w, &ord, i, stack);
	free(ord.taken);
	free(ord.child);
	free(ord.sibling);
	free(stack);
	*out = ord.list;
	return 0;
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
	if (!c || !stack) {
		libdeflate_free_compressor(c);
		free(stack);
		return nomem(w);
	}
	if ((rc = compute_write_order(w, &order))) {
		libdeflate_free_compressor(c);
		free(stack);
		return rc;
	}
	/* The trailer is a checksum of what is written, not an object id: the
	 * plain SHA-1, as Git 2.47 and later use for it. */
	pw_hash_init_checksum(&w->hash, w->out_algo);
	pw_pack_header_encode(head, (uint32_t)w->nr_send);
	rc = out_write(w, head, sizeof(head));
	progress(w, "Writing objects", 0, w->nr_send, 0);
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

			if (b < 0 || !(reused_delta(x) || (x->zdata && x->zdelta)))
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
				progress(w, "Writing objects", done, w->nr_send, 0);
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
		progress(w, "Writing objects", done, w->nr_send, 1);
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
		return nomem(w);
	w->out_fn = fn;
	w->out_ctx = ctx;
	progress(w, "Counting objects", 0, w->nr, 0);
	for (i = 0; i < w->nr; i++) {
		if ((rc = count_one(w, i)))
			return rc;
		if (i % 1024 == 1023)
			progress(w, "Counting objects", i + 1, w->nr, 0);
	}
	progress(w, "Counting objects", w->nr, w->nr, 1);
	if ((rc = check_reused_chains(w)) || (rc = fill_missing_headers(w)))
		return rc;
	if ((rc = search_deltas(w)))
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
		return nomem(w);
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
		return nomem(w);
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
		rc = nomem(w);
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

static int bitmap_obj_cmp(const void *a, const void *b)
{
	uint64_t x = ((const struct wobj *const *)a)[0]->offset;
	uint64_t y = ((const struct wobj *const *)b)[0]->offset;

	return x < y ? -1 : x > y;
}

int pw_pack_writer_write_bitmap_file(struct pw_pack_writer *w, const char *base_name,
                                     const struct pw_oid *tips, size_t ntips)
{
	struct pw_bitmap_write_index_opts bo;
	struct pw_bitmap_obj *objs;
	struct wobj **order;
	char hex[PW_MAX_HEXSZ + 1], *tmp = NULL, *final = NULL;
	struct pw_oid sum;
	size_t i, n = 0, blen = strlen(base_name);
	int fd, rc;

	if (!w->written || !w->stats.bytes)
		return pw_error_set(&w->err, PW_EINVAL, "no pack written yet");
	if (w->translating)
		return pw_error_set(&w->err, PW_EINVAL, "no bitmap for a translated pack");
	objs = malloc((w->nr_send ? w->nr_send : 1) * sizeof(*objs));
	order = malloc((w->nr_send ? w->nr_send : 1) * sizeof(*order));
	if (!objs || !order) {
		free(objs);
		free(order);
		return nomem(w);
	}
	for (i = 0; i < w->nr; i++)
		if (w->objs[i].flags & W_WRITTEN)
			order[n++] = &w->objs[i];
	qsort(order, n, sizeof(*order), bitmap_obj_cmp);
	for (i = 0; i < n; i++) {
		objs[i].oid = order[i]->oid;
		objs[i].hash = order[i]->hash;
		objs[i].type = order[i]->type;
	}
	free(order);
	fd = tmp_file(w, base_name, "bitmap", &tmp);
	if (fd < 0) {
		free(objs);
		return fd;
	}
	memset(&bo, 0, sizeof(bo));
	bo.progress = w->opts.progress;
	bo.progress_data = w->opts.progress_data;
	rc = pw_bitmap_write(w->odb, objs, (uint32_t)n, w->checksum, tips, ntips, &bo, fd_out, &fd,
	                     &w->err);
	free(objs);
	if (close(fd) && !rc)
		rc = pw_error_set(&w->err, PW_EIO, "closing %s: %s", tmp, strerror(errno));
	if (!rc && !(final = malloc(blen + PW_MAX_HEXSZ + 10)))
		rc = nomem(w);
	if (!rc) {
		pw_oid_from_raw(&sum, w->checksum, w->algo);
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
