/* The index-pack engine: creation, phase 1 and the results; phase 2 is in
 * index-pack-resolve.c. See index-pack.h for the two phases. */
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "odb/delta.h"
#include "odb/entry.h"
#include "pack/index-pack-priv.h"
#include "pack/index-pack.h"
#include "pack/ip-check.h"
#include "packwire/object.h"
#include "util/fs.h"

/* ---- errors ------------------------------------------------------------- */

const struct pw_error *pw_ipack_error(const struct pw_ipack *ip)
{
	return &ip->err;
}

static const struct pw_hash_algo *other_algo(const struct pw_hash_algo *a)
{
	return a->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
}

/* ---- creation ----------------------------------------------------------- */

int pw_ipack_new(struct pw_ipack **out, const struct pw_ipack_opts *opts, struct pw_error *err)
{
	struct pw_ipack *ip = calloc(1, sizeof(*ip));

	*out = NULL;
	if (!ip)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	ip->opts = *opts;
	ip->algo = opts->algo ? opts->algo : &pw_hash_sha1;
	ip->out_fd = -1;
	ip->pack_fd = -1;
	if (pw_ip_linkset_init(&ip->linkset, ip->algo->rawsz)) {
		free(ip);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	pw_ip_links_init(&ip->links, &ip->linkset);
	pthread_mutex_init(&ip->err_lock, NULL);
	pthread_mutex_init(&ip->q_lock, NULL);
	pthread_cond_init(&ip->q_cond, NULL);
	pw_buf_init(&ip->scratch, 0);
	ip->ld = libdeflate_alloc_decompressor();
	if (!ip->ld) {
		pw_ipack_free(ip);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	*out = ip;
	return 0;
}

void pw_ipack_free(struct pw_ipack *ip)
{
	if (!ip)
		return;
	if (ip->own_fd && ip->pack_fd >= 0)
		close(ip->pack_fd);
	if (ip->ld)
		libdeflate_free_decompressor(ip->ld);
	pw_buf_free(&ip->scratch);
	free(ip->objs);
	free(ip->ofs);
	free(ip->refs);
	free(ip->sorted);
	pw_ip_links_free(&ip->links);
	pw_ip_linkset_free(&ip->linkset);
	pthread_mutex_destroy(&ip->err_lock);
	pthread_mutex_destroy(&ip->q_lock);
	pthread_cond_destroy(&ip->q_cond);
	free(ip->q);
	free(ip);
}

/* ---- the stream reader -------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t len, struct pw_error *err)
{
	if (pw_fs_write_all(fd, p, len))
		return pw_error_set(err, PW_EIO, "cannot write the pack: %s", strerror(errno));
	return 0;
}

/* Hash (and copy out) what was consumed but not yet hashed. */
static int in_flush(struct ip_in *in, struct pw_error *err)
{
	size_t n = in->pos - in->hashed;

	if (!n)
		return 0;
	pw_hash_update(&in->hash, in->data + in->hashed, n);
	if (in->out_fd >= 0) {
		int rc = write_all(in->out_fd, in->data + in->hashed, n, err);

		if (rc)
			return rc;
	}
	in->hashed = in->pos;
	return 0;
}

static int in_ready(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) > 0;
}

/* Make at least `need` unconsumed bytes available (fewer at end of input),
 * and up to `want` where that does not mean waiting on a live stream.
 * Returns the number available, or a negative error. */
static ssize_t in_fill2(struct ip_in *in, size_t need, size_t want, struct pw_error *err)
{
	if (want > WINDOW)
		want = WINDOW;
	if (need > want)
		need = want;
	if (in->len - in->pos >= want || in->eof)
		return (ssize_t)(in->len - in->pos);
	if (WINDOW - in->pos < want) {
		int rc = in_flush(in, err);

		if (rc)
			return rc;
		memmove(in->own, in->own + in->pos, in->len - in->pos);
		in->base += in->pos;
		in->len -= in->pos;
		in->pos = in->hashed = 0;
	}
	while (in->len - in->pos < want) {
		ssize_t n;

		if (in->stream && in->len - in->pos >= need && !in_ready(in->fd))
			break;
		n = read(in->fd, in->own + in->len, WINDOW - in->len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return pw_error_set(err, PW_EIO, "cannot read the pack: %s",
			                    strerror(errno));
		}
		if (n == 0) {
			in->eof = 1;
			break;
		}
		in->len += (size_t)n;
		if (in->max_input && in->base + in->len > in->max_input)
			return pw_error_set(err, PW_ETOOBIG,
			                    "pack exceeds maximum allowed size (%llu bytes)",
			                    (unsigned long long)in->max_input);
	}
	return (ssize_t)(in->len - in->pos);
}

static ssize_t in_fill(struct ip_in *in, size_t want, struct pw_error *err)
{
	return in_fill2(in, want, want, err);
}

static void in_consume(struct ip_in *in, size_t n)
{
	in->crc = (uint32_t)libdeflate_crc32(in->crc, in->data + in->pos, n);
	in->pos += n;
}

static uint64_t in_offset(const struct ip_in *in)
{
	return in->base + in->pos;
}

/* ---- phase 1 ------------------------------------------------------------ */

int pw_ipack__grow_objs(struct pw_ipack *ip, uint32_t need)
{
	if (need > ip->alloc) {
		/* the first call reserves what parse() allows of the header's count */
		uint32_t n = ip->alloc ? ip->alloc : need;
		struct ip_obj *p;

		while (n < need)
			n = n > UINT32_MAX / 2 ? need : n * 2;
		/* growth never passes that count: no slack beyond the header */
		if (need <= ip->nr_header && n > ip->nr_header)
			n = ip->nr_header;
		p = realloc(ip->objs, (size_t)n * sizeof(*p));
		if (!p)
			return pw_error_set(&ip->err, PW_ENOMEM, "out of memory for %u objects",
			                    need);
		ip->objs = p;
		ip->alloc = n;
	}
	return 0;
}

static int add_ofs(struct pw_ipack *ip, uint32_t base, uint32_t obj)
{
	if (ip->nr_ofs == ip->alloc_ofs) {
		uint32_t n = ip->alloc_ofs ? ip->alloc_ofs * 2 : 64;
		struct ofs_child *p = realloc(ip->ofs, (size_t)n * sizeof(*p));

		if (!p)
			return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
		ip->ofs = p;
		ip->alloc_ofs = n;
	}
	ip->ofs[ip->nr_ofs].base = base;
	ip->ofs[ip->nr_ofs++].obj = obj;
	return 0;
}

static int add_ref(struct pw_ipack *ip, const uint8_t *raw, uint32_t obj)
{
	if (ip->nr_refs == ip->alloc_refs) {
		uint32_t n = ip->alloc_refs ? ip->alloc_refs * 2 : 64;
		struct ref_child *p = realloc(ip->refs, (size_t)n * sizeof(*p));

		if (!p)
			return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
		ip->refs = p;
		ip->alloc_refs = n;
	}
	pw_oid_from_raw(&ip->refs[ip->nr_refs].base, raw, ip->algo);
	ip->refs[ip->nr_refs++].obj = obj;
	return 0;
}

/* Find the object starting at `offset` (objects are in offset order). */
static uint32_t find_offset(const struct pw_ipack *ip, uint64_t offset)
{
	uint32_t lo = 0, hi = ip->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ip->objs[mid].e.offset < offset)
			lo = mid + 1;
		else if (ip->objs[mid].e.offset > offset)
			hi = mid;
		else
			return mid;
	}
	return NO_OBJ;
}

static const char *ref_hint(const struct pw_ipack *ip, const struct ip_obj *o)
{
	if (o->type != PW_OBJ_REF_DELTA)
		return "";
	return ip->algo->id == PW_HASH_SHA1
	               ? " (a REF_DELTA entry: is this a sha256 pack read as sha1? try "
	                 "--object-format=sha256)"
	               : " (a REF_DELTA entry: is this a sha1 pack read as sha256? try "
	                 "--object-format=sha1)";
}

/* Inflate one entry through zlib, streaming: hashes whole objects, keeps the
 * content in `keep` when not NULL, and never produces more than declared. */
static int inflate_stream(struct pw_ipack *ip, struct ip_in *in, struct ip_obj *o,
                          struct pw_hash_ctx *h, struct pw_buf *keep)
{
	z_stream zs;
	uint8_t *chunk = malloc(65536);
	uint64_t total = 0;
	int zr, rc = 0;

	if (!chunk)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	memset(&zs, 0, sizeof(zs));
	if (inflateInit(&zs) != Z_OK) {
		free(chunk);
		return pw_error_set(&ip->err, PW_ENOMEM, "cannot initialise zlib");
	}
	for (;;) {
		ssize_t avail = in_fill(in, 1, &ip->err);
		size_t used, made;

		if (avail < 0) {
			rc = (int)avail;
			break;
		}
		if (avail == 0) {
			rc = pw_error_set(&ip->err, PW_ECORRUPT,
			                  "pack is truncated: it ends inside the object at offset "
			                  "%llu",
			                  (unsigned long long)o->e.offset);
			break;
		}
		zs.next_in = (Bytef *)(in->data + in->pos);
		zs.avail_in = avail > (ssize_t)UINT32_MAX ? UINT32_MAX : (uInt)avail;
		zs.next_out = chunk;
		zs.avail_out = 65536;
		zr = inflate(&zs, Z_NO_FLUSH);
		used = (size_t)(zs.next_in - (in->data + in->pos));
		made = 65536 - zs.avail_out;
		in_consume(in, used);
		if (made > o->size - total) {
			rc = pw_error_set(&ip->err, PW_ECORRUPT,
			                  "object at offset %llu inflates to more than the %llu "
			                  "bytes its header declares%s",
			                  (unsigned long long)o->e.offset,
			                  (unsigned long long)o->size, ref_hint(ip, o));
			break;
		}
		total += made;
		if (h && made)
			pw_hash_update(h, chunk, made);
		if (keep && made && pw_buf_add(keep, chunk, made)) {
			rc = pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
			break;
		}
		if (zr == Z_STREAM_END) {
			if (total != o->size)
				rc = pw_error_set(
				        &ip->err, PW_ECORRUPT,
				        "object at offset %llu inflates to %llu bytes but "
				        "its header declares %llu%s",
				        (unsigned long long)o->e.offset, (unsigned long long)total,
				        (unsigned long long)o->size, ref_hint(ip, o));
			break;
		}
		if (zr != Z_OK && !(zr == Z_BUF_ERROR && !used && !made)) {
			rc = pw_error_set(&ip->err, PW_ECORRUPT,
			                  "object at offset %llu: corrupt zlib stream (%s)%s",
			                  (unsigned long long)o->e.offset,
			                  zs.msg ? zs.msg : "inflate error", ref_hint(ip, o));
			break;
		}
		if (zr == Z_BUF_ERROR && in->eof && in->pos == in->len) {
			rc = pw_error_set(&ip->err, PW_ECORRUPT,
			                  "pack is truncated: it ends inside the object at offset "
			                  "%llu",
			                  (unsigned long long)o->e.offset);
			break;
		}
	}
	inflateEnd(&zs);
	free(chunk);
	return rc;
}

/* Check a commit, tree or tag and collect its links. When only reporting
 * links, an object that does not parse is no error: it just means the pack
 * cannot be vouched for (the caller then walks the history itself). */
int pw_ipack__check_obj(struct pw_ipack *ip, struct ip_links *links, int type, const char *data,
                        size_t len, const struct pw_oid *oid, struct pw_error *err)
{
	int rc = pw_ip_check_object(links, ip->algo, type, data, len, oid,
	                            pw_ipack__wants_links(ip), err);

	if (rc && rc != PW_ENOMEM && !ip->opts.check_objects && !ip->opts.check_links) {
		__atomic_store_n(&ip->links_broken, 1, __ATOMIC_RELAXED);
		pw_error_clear(err);
		return 0;
	}
	return rc;
}

/* Inflate an entry; whole objects get their id. */
static int inflate_entry(struct pw_ipack *ip, struct ip_in *in, struct ip_obj *o)
{
	int whole = o->type != PW_OBJ_OFS_DELTA && o->type != PW_OBJ_REF_DELTA;
	int check = whole && o->type != PW_OBJ_BLOB &&
	            (ip->opts.check_objects || pw_ipack__wants_links(ip));
	char hdr[32];
	size_t hl = whole ? pw_object_header(hdr, o->type, o->size) : 0;
	struct pw_hash_ctx h;
	int rc;

	if (o->size <= LD_MAX) {
		size_t want = (size_t)o->size + (size_t)o->size / 8192 + 128;
		ssize_t avail = in_fill2(in, 1, want, &ip->err);
		size_t used = 0;

		if (avail < 0)
			return (int)avail;
		/* On a live stream only part of the entry may be here: zlib below
		 * streams, libdeflate would fail on the short input. */
		if (avail > 0 && ((size_t)avail >= want || in->eof) &&
		    (!in->eof || o->size <= (uint64_t)avail * MAX_RATIO + 64)) {
			enum libdeflate_result r;

			if ((rc = pw_buf_grow(&ip->scratch, (size_t)o->size)))
				return pw_error_set(&ip->err, rc, "out of memory");
			r = libdeflate_zlib_decompress_ex(ip->ld, in->data + in->pos, (size_t)avail,
			                                  ip->scratch.data, (size_t)o->size, &used,
			                                  NULL);
			if (r == LIBDEFLATE_SUCCESS) {
				in_consume(in, used);
				ip->scratch.len = (size_t)o->size;
				if (whole) {
					/* one call: header, content and padding in
					 * one pass of the collision detector */
					if (pw_object_hash(ip->algo, o->type, ip->scratch.data,
					                   (size_t)o->size, &o->e.oid))
						return pw_hash_collision_error(&ip->err, &o->e.oid);
					o->real_type = o->type;
					if (check)
						return pw_ipack__check_obj(
						        ip, &ip->links, o->type, ip->scratch.data,
						        ip->scratch.len, &o->e.oid, &ip->err);
				}
				return 0;
			}
		}
	}
	/* Too large, or libdeflate refused: zlib says precisely what is wrong. */
	if (whole) {
		pw_hash_init(&h, ip->algo);
		pw_hash_update(&h, hdr, hl);
	}
	pw_buf_reset(&ip->scratch);
	rc = inflate_stream(ip, in, o, whole ? &h : NULL, check ? &ip->scratch : NULL);
	if (rc || !whole)
		return rc;
	if (pw_hash_final(&h, &o->e.oid))
		return pw_hash_collision_error(&ip->err, &o->e.oid);
	o->real_type = o->type;
	if (check)
		return pw_ipack__check_obj(ip, &ip->links, o->type, ip->scratch.data,
		                           ip->scratch.len, &o->e.oid, &ip->err);
	return 0;
}

/* At an entry boundary with exactly rawsz bytes left: are they the checksum
 * of everything before? Then the header's object count is wrong. */
static int looks_like_trailer(struct pw_ipack *ip, struct ip_in *in, size_t avail)
{
	struct pw_hash_ctx h;
	uint8_t sum[PW_MAX_RAWSZ];

	if (!in->eof || avail != ip->algo->rawsz || in_flush(in, &ip->err))
		return 0;
	h = in->hash;
	pw_hash_final_checksum(&h, sum);
	return !memcmp(sum, in->data + in->pos, ip->algo->rawsz);
}

void pw_ipack__report(struct pw_ipack *ip, int phase, uint64_t done, uint64_t total)
{
	if (ip->opts.progress)
		ip->opts.progress(ip->opts.progress_ctx, phase, done, total);
}

/* The 12-byte pack header: the object count, checked against the size of
 * the pack when it is all at hand. */
static int parse_header(struct pw_ipack *ip, struct ip_in *in)
{
	ssize_t avail = in_fill(in, PW_PACK_HEADER_SIZE, &ip->err);
	uint32_t reserve;
	int rc;

	if (avail < 0)
		return (int)avail;
	rc = pw_pack_header_decode(in->data + in->pos, (size_t)avail, &ip->nr_header, &ip->err);
	if (rc == PW_EMORE)
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack is truncated: %zd bytes, shorter than a pack header",
		                    avail);
	if (rc)
		return rc;
	in_consume(in, PW_PACK_HEADER_SIZE);
	/* Each entry takes at least MIN_ENTRY bytes: reject absurd counts
	 * before reserving memory for them when the whole pack is at hand. */
	if (in->eof && (uint64_t)ip->nr_header * MIN_ENTRY > in->len)
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack is truncated or its object count is wrong: the header "
		                    "claims %u objects, more than its %zu bytes can hold",
		                    ip->nr_header, in->len);
	/* A stream: what it may carry (the size limit, the file's length),
	 * else the explicit cap, before a byte of its objects is read. */
	if (!in->eof) {
		uint64_t bytes = in->max_input, most;

		if (in->file_left && (!bytes || in->file_left < bytes))
			bytes = in->file_left;
		if (bytes) {
			uint64_t frame = PW_PACK_HEADER_SIZE + ip->algo->rawsz;

			most = bytes > frame ? (bytes - frame) / MIN_ENTRY : 0;
			if (ip->nr_header > most && bytes == in->max_input)
				return pw_error_set(
				        &ip->err, PW_ETOOBIG,
				        "pack exceeds maximum allowed size (%llu bytes): "
				        "its header claims %u objects, more than %llu "
				        "bytes can hold",
				        (unsigned long long)bytes, ip->nr_header,
				        (unsigned long long)bytes);
			if (ip->nr_header > most)
				return pw_error_set(&ip->err, PW_ECORRUPT,
				                    "pack is truncated or its object count is "
				                    "wrong: the header claims %u objects, more "
				                    "than its %llu bytes can hold",
				                    ip->nr_header, (unsigned long long)bytes);
		} else if (ip->nr_header > PW_PACK_MAX_STREAM_OBJECTS) {
			return pw_error_set(&ip->err, PW_ETOOBIG,
			                    "pack header claims %u objects, more than the %u a "
			                    "received pack may hold (a size limit raises it: "
			                    "fetch.maxPackSize, receive.maxInputSize, "
			                    "--max-input-size)",
			                    ip->nr_header, (unsigned)PW_PACK_MAX_STREAM_OBJECTS);
		}
	}
	reserve = in->eof ? (1u << 20) : (1u << 16);
	/* A streamed header is 12 bytes that may lie: reserve for what a
	 * first window of entries could be, and grow as entries arrive. */
	return pw_ipack__grow_objs(ip, ip->nr_header < reserve ? ip->nr_header : reserve);
}

/* Decode the header of entry i (at most 2 + 10 + 10 + PW_MAX_RAWSZ bytes),
 * reading more input as the decoder asks for it. */
static int read_entry_header(struct pw_ipack *ip, struct ip_in *in, const struct ip_obj *o,
                             uint32_t i, struct pw_pack_entry_hdr *eh)
{
	const size_t max = 2 + 10 + 10 + PW_MAX_RAWSZ, rawsz = ip->algo->rawsz;
	ssize_t avail = in_fill2(in, 1, max, &ip->err);
	int rc;

	if (avail < 0)
		return (int)avail;
	if ((size_t)avail == rawsz && looks_like_trailer(ip, in, (size_t)avail))
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack header claims %u objects but the pack holds "
		                    "only %u (wrong object count in the header)",
		                    ip->nr_header, i);
	if (avail == 0)
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack is truncated: it ends after %u of its %u objects", i,
		                    ip->nr_header);
	rc = pw_pack_entry_hdr_decode(in->data + in->pos, (size_t)avail, rawsz, o->e.offset, eh,
	                              &ip->err);
	while (rc == PW_EMORE && !in->eof && (size_t)avail < max) {
		avail = in_fill2(in, (size_t)avail + 1, max, &ip->err);
		if (avail < 0)
			return (int)avail;
		rc = pw_pack_entry_hdr_decode(in->data + in->pos, (size_t)avail, rawsz, o->e.offset,
		                              eh, &ip->err);
	}
	if (rc == PW_EMORE)
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack is truncated: it ends inside the header of "
		                    "object %u at offset %llu",
		                    i, (unsigned long long)o->e.offset);
	return rc;
}

/* Record the base of delta i: an earlier entry (OFS_DELTA) or an object id
 * (REF_DELTA), resolved later. */
static int link_delta(struct pw_ipack *ip, struct ip_obj *o, uint32_t i,
                      const struct pw_pack_entry_hdr *eh)
{
	int rc;

	if (eh->type == PW_OBJ_OFS_DELTA) {
		uint32_t b = find_offset(ip, o->e.offset - eh->base_ofs);

		if (b == NO_OBJ)
			return pw_error_set(&ip->err, PW_ECORRUPT,
			                    "delta at offset %llu: base offset %llu is not "
			                    "the start of an object",
			                    (unsigned long long)o->e.offset,
			                    (unsigned long long)(o->e.offset - eh->base_ofs));
		o->base = b;
		if ((rc = add_ofs(ip, b, i)))
			return rc;
		ip->nr_deltas++;
	} else if (eh->type == PW_OBJ_REF_DELTA) {
		if ((rc = add_ref(ip, eh->base_raw, i)))
			return rc;
		ip->nr_deltas++;
		ip->has_ref_delta = 1;
	}
	return 0;
}

/* Entry i: its header, its delta base, its inflated data and CRC. */
static int parse_entry(struct pw_ipack *ip, struct ip_in *in, uint32_t i)
{
	struct pw_pack_entry_hdr eh;
	struct ip_obj *o;
	int rc;

	if ((rc = pw_ipack__grow_objs(ip, i + 1)))
		return rc;
	o = &ip->objs[i];
	memset(o, 0, sizeof(*o));
	o->base = NO_OBJ;
	o->e.offset = in_offset(in);
	o->e.oid.algo = (uint8_t)ip->algo->id;
	if ((rc = read_entry_header(ip, in, o, i, &eh)))
		return rc;
	o->type = (uint8_t)eh.type;
	o->size = eh.size;
	o->hdr_len = (uint32_t)eh.hdr_len;
	ip->nr = i + 1;
	if ((rc = link_delta(ip, o, i, &eh)))
		return rc;
	in->crc = 0;
	in_consume(in, eh.hdr_len);
	if ((rc = inflate_entry(ip, in, o)))
		return rc;
	o->e.crc32 = in->crc;
	return 0;
}

/* The trailing checksum: compared with the hash of everything before it,
 * with a hint when it has the other algorithm's size. */
static int parse_trailer(struct pw_ipack *ip, struct ip_in *in)
{
	const struct pw_hash_algo *algo = ip->algo;
	size_t rawsz = algo->rawsz;
	uint8_t sum[PW_MAX_RAWSZ];
	ssize_t avail;
	int rc;

	ip->pack_end = ip->data_end = in_offset(in);
	if ((rc = in_flush(in, &ip->err)))
		return rc;
	pw_hash_final_checksum(&in->hash, sum);
	avail = in_fill2(in, rawsz, rawsz + 1, &ip->err);
	if (avail < 0)
		return (int)avail;
	if ((size_t)avail < rawsz) {
		if (avail == (ssize_t)other_algo(algo)->rawsz)
			return pw_error_set(&ip->err, PW_ECORRUPT,
			                    "pack is truncated: %zd bytes follow the last object "
			                    "where a %zu-byte %s checksum belongs (is this a %s "
			                    "pack? try --object-format=%s)",
			                    avail, rawsz, algo->name, other_algo(algo)->name,
			                    other_algo(algo)->name);
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack is truncated: its trailing checksum is missing");
	}
	if (memcmp(sum, in->data + in->pos, rawsz)) {
		if (in->eof && (size_t)avail == other_algo(algo)->rawsz)
			return pw_error_set(&ip->err, PW_EMISMATCH,
			                    "pack trailing checksum mismatch: the pack ends with "
			                    "%zd bytes, the size of a %s checksum (is this a %s "
			                    "pack? try --object-format=%s)",
			                    avail, other_algo(algo)->name, other_algo(algo)->name,
			                    other_algo(algo)->name);
		if ((size_t)avail > rawsz)
			return pw_error_set(&ip->err, PW_EMISMATCH,
			                    "pack trailing checksum mismatch, and more data "
			                    "follows the %u objects its header declares (wrong "
			                    "object count in the header?)",
			                    ip->nr_header);
		return pw_error_set(&ip->err, PW_EMISMATCH,
		                    "pack trailing checksum mismatch (pack corrupted or "
		                    "truncated)");
	}
	memcpy(ip->checksum, sum, rawsz);
	if (in->out_fd >= 0 && (rc = write_all(in->out_fd, in->data + in->pos, rawsz, &ip->err)))
		return rc;
	in->pos += rawsz;
	in->hashed = in->pos;
	if ((size_t)avail > rawsz && !ip->opts.allow_junk)
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack has junk at the end (%s bytes after the trailing "
		                    "checksum)",
		                    in->eof ? "some" : "more");
	return 0;
}

static int parse(struct pw_ipack *ip, struct ip_in *in)
{
	uint32_t i;
	int rc;

	if (ip->parsed)
		return pw_error_set(&ip->err, PW_EINVAL, "pack already parsed");
	ip->parsed = 1;
	/* The pack's trailer is a checksum, not an object id: no collision
	 * detection there (the objects are hashed with it below). */
	pw_hash_init_checksum(&in->hash, ip->algo);
	if ((rc = parse_header(ip, in)))
		return rc;
	for (i = 0; i < ip->nr_header; i++) {
		if ((rc = parse_entry(ip, in, i)))
			return rc;
		pw_ipack__report(ip, PW_IPACK_RECEIVING, i + 1, ip->nr_header);
	}
	return parse_trailer(ip, in);
}

int pw_ipack_parse_mem(struct pw_ipack *ip, const uint8_t *data, size_t len)
{
	struct ip_in in;
	int rc;

	memset(&in, 0, sizeof(in));
	in.data = data;
	in.len = len;
	in.eof = 1;
	in.fd = in.out_fd = -1;
	rc = parse(ip, &in);
	if (rc)
		return rc;
	ip->map = data;
	ip->map_len = len;
	return 0;
}

/* Phase 1 through the window, reading in_fd (and copying to out_fd when not
 * -1); phase 2 then reads entries back with pread from pack_fd. */
static int parse_stream(struct pw_ipack *ip, int in_fd, int out_fd)
{
	struct ip_in in;
	int rc;

	memset(&in, 0, sizeof(in));
	in.own = malloc(WINDOW);
	if (!in.own)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	in.data = in.own;
	in.fd = in_fd;
	in.out_fd = out_fd;
	in.max_input = ip->opts.max_input;
	{
		struct stat st;

		in.stream = fstat(in_fd, &st) || !S_ISREG(st.st_mode);
		if (!in.stream) {
			off_t at = lseek(in_fd, 0, SEEK_CUR);

			if (at >= 0 && st.st_size > at)
				in.file_left = (uint64_t)(st.st_size - at);
		}
	}
	rc = parse(ip, &in);
	free(in.own);
	ip->map_len = (size_t)ip->pack_end + ip->algo->rawsz;
	return rc;
}

int pw_ipack_parse_file(struct pw_ipack *ip, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return pw_error_set(&ip->err, errno == ENOENT ? PW_ENOTFOUND : PW_EIO,
		                    "cannot open packfile '%s': %s", path, strerror(errno));
	posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	ip->pack_fd = fd;
	ip->own_fd = 1;
	return parse_stream(ip, fd, -1);
}

int pw_ipack_parse_fd(struct pw_ipack *ip, int in_fd, int out_fd)
{
	ip->out_fd = out_fd;
	ip->pack_fd = out_fd;
	return parse_stream(ip, in_fd, out_fd);
}

/* ---- results ------------------------------------------------------------ */

uint32_t pw_ipack_nr_objects(const struct pw_ipack *ip)
{
	return ip->nr;
}

uint32_t pw_ipack_nr_appended(const struct pw_ipack *ip)
{
	return ip->nr_appended;
}

int pw_ipack_self_contained(const struct pw_ipack *ip)
{
	return ip->self_contained;
}

uint32_t pw_ipack_nr_deltas(const struct pw_ipack *ip)
{
	return ip->nr_deltas;
}

const uint8_t *pw_ipack_checksum(const struct pw_ipack *ip)
{
	return ip->checksum;
}

const struct pw_idx_entry *const *pw_ipack_sorted(const struct pw_ipack *ip)
{
	return (const struct pw_idx_entry *const *)ip->sorted;
}

int pw_ipack_info(const struct pw_ipack *ip, uint32_t i, struct pw_ipack_info *out)
{
	const struct ip_obj *o;

	if (i >= ip->nr)
		return PW_EINVAL;
	o = &ip->objs[i];
	memset(out, 0, sizeof(*out));
	out->oid = o->e.oid;
	out->type = o->real_type;
	out->size = o->size;
	out->offset = o->e.offset;
	out->size_in_pack = pw_ipack__entry_end(ip, i) - o->e.offset;
	out->depth = o->depth;
	if (o->base != NO_OBJ)
		out->base = ip->objs[o->base].e.oid;
	return 0;
}
