/* The index-pack engine: see index-pack.h for the two phases. */
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
#include "pack/index-pack.h"
#include "pack/ip-check.h"
#include "packwire/object.h"
#include "util/fs.h"

/* Entries up to this size are inflated with libdeflate in one call; larger
 * ones are streamed through zlib so that phase 1 holds no whole object. */
#define LD_MAX ((size_t)1 << 20)
/* The read window of the stream reader. */
#define WINDOW (LD_MAX + LD_MAX / 4 + 65536)
/* Bytes of resolved bases one resolver keeps before dropping ancestors. */
#define CACHE_LIMIT ((size_t)32 << 20)
/* Deflate cannot expand more than ~1032:1; anything claiming more is bogus. */
#define MAX_RATIO 1040

#define NO_OBJ UINT32_MAX

struct ip_obj {
	struct pw_idx_entry e; /* oid, offset, crc32 */
	uint64_t size;         /* inflated size of the entry (delta size for deltas) */
	uint32_t hdr_len;
	uint32_t depth;
	uint32_t base; /* base object (deltas), NO_OBJ otherwise */
	uint8_t type;  /* pack entry type */
	uint8_t real_type;
	uint8_t claimed; /* taken by a resolver (atomic) */
	uint8_t appended;
};

struct ofs_child {
	uint32_t base, obj;
};

struct ref_child {
	struct pw_oid base;
	uint32_t obj;
};

struct ip_in {
	const uint8_t *data; /* window */
	size_t len, pos;     /* valid bytes, consumed bytes */
	size_t hashed;       /* bytes of the window hashed (and copied) so far */
	uint64_t base;       /* pack offset of data[0] */
	int eof;
	int fd, out_fd; /* -1 for memory */
	/* A live connection (pipe, socket): the peer sends the pack and then
	 * waits for an answer, so never block for bytes past what is needed. */
	int stream;
	uint64_t max_input; /* 0 = no limit */
	uint8_t *own;
	struct pw_hash_ctx hash;
	uint32_t crc;
};

struct pw_ipack {
	struct pw_ipack_opts opts;
	const struct pw_hash_algo *algo;
	struct pw_error err;
	pthread_mutex_t err_lock;

	uint32_t nr_header; /* object count in the pack header */
	struct ip_obj *objs;
	uint32_t nr, alloc;
	struct ofs_child *ofs;
	uint32_t nr_ofs, alloc_ofs;
	struct ref_child *refs;
	uint32_t nr_refs, alloc_refs;
	uint32_t nr_deltas, nr_appended;
	uint64_t pack_end; /* offset of the trailing checksum */
	uint64_t data_end; /* end of the last entry (after --fix-thin appends) */
	uint8_t checksum[PW_MAX_RAWSZ];
	int parsed, resolved, has_ref_delta;

	/* phase 2 view of the pack */
	const uint8_t *map;
	size_t map_len;
	int pack_fd; /* phase 2 reads with pread when there is no map */
	int own_fd;
	int out_fd;

	/* phase 1 */
	struct libdeflate_decompressor *ld;
	struct pw_buf scratch;

	/* phase 2 */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	struct work_item *q;
	size_t q_nr, q_alloc;
	int idle; /* resolvers waiting for work (atomic reads outside q_lock) */
	int nthreads;
	uint32_t next_root;   /* atomic */
	uint32_t resolved_nr; /* atomic */
	int failed;           /* atomic: a resolver hit an error */
	struct pw_idx_entry **sorted;

	/* link checks: phase 1 feeds links, resolvers their own buffers */
	struct ip_linkset linkset;
	struct ip_links links;
	int links_broken;   /* report_links: an object could not be read (atomic) */
	int self_contained; /* after resolve */
};

/* ---- errors ------------------------------------------------------------- */

const struct pw_error *pw_ipack_error(const struct pw_ipack *ip)
{
	return &ip->err;
}

/* The first error of any thread wins. */
static int fail_from(struct pw_ipack *ip, const struct pw_error *e)
{
	pthread_mutex_lock(&ip->err_lock);
	if (!ip->err.code)
		pw_error_copy(&ip->err, e);
	pthread_mutex_unlock(&ip->err_lock);
	__atomic_store_n(&ip->failed, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&ip->q_lock);
	pthread_cond_broadcast(&ip->q_cond);
	pthread_mutex_unlock(&ip->q_lock);
	return e->code ? e->code : PW_ERROR;
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
			return pw_error_set(err, PW_ETOOBIG, "pack exceeds maximum allowed size");
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

static int grow_objs(struct pw_ipack *ip, uint32_t need)
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

static int wants_links(const struct pw_ipack *ip)
{
	return ip->opts.check_links || ip->opts.report_links;
}

/* Check a commit, tree or tag and collect its links. When only reporting
 * links, an object that does not parse is no error: it just means the pack
 * cannot be vouched for (the caller then walks the history itself). */
static int check_obj(struct pw_ipack *ip, struct ip_links *links, int type, const char *data,
                     size_t len, const struct pw_oid *oid, struct pw_error *err)
{
	int rc = pw_ip_check_object(links, ip->algo, type, data, len, oid, wants_links(ip), err);

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
	int check = whole && o->type != PW_OBJ_BLOB && (ip->opts.check_objects || wants_links(ip));
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
						return pw_hash_collision_error(&ip->err,
						                               &o->e.oid);
					o->real_type = o->type;
					if (check)
						return check_obj(ip, &ip->links, o->type,
						                 ip->scratch.data, ip->scratch.len,
						                 &o->e.oid, &ip->err);
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
		return check_obj(ip, &ip->links, o->type, ip->scratch.data, ip->scratch.len,
		                 &o->e.oid, &ip->err);
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

static void report(struct pw_ipack *ip, int phase, uint64_t done, uint64_t total)
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
	/* Each entry takes at least two bytes: reject absurd counts before
	 * reserving memory for them when the whole pack is at hand. */
	if (in->eof && (uint64_t)ip->nr_header * 2 > in->len)
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack header claims %u objects, more than its %zu bytes can "
		                    "hold (wrong object count or truncated pack)",
		                    ip->nr_header, in->len);
	reserve = in->eof ? (1u << 20) : (1u << 16);
	/* A streamed header is 12 bytes that may lie: reserve for what a
	 * first window of entries could be, and grow as entries arrive. */
	return grow_objs(ip, ip->nr_header < reserve ? ip->nr_header : reserve);
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

	if ((rc = grow_objs(ip, i + 1)))
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
		report(ip, PW_IPACK_RECEIVING, i + 1, ip->nr_header);
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

/* ---- phase 2 ------------------------------------------------------------ */

static int cmp_ofs(const void *a, const void *b)
{
	const struct ofs_child *x = a, *y = b;

	if (x->base != y->base)
		return x->base < y->base ? -1 : 1;
	return x->obj < y->obj ? -1 : x->obj > y->obj;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct ref_child *x = a, *y = b;
	int c = memcmp(x->base.id, y->base.id, PW_MAX_RAWSZ);

	if (c)
		return c;
	return x->obj < y->obj ? -1 : x->obj > y->obj;
}

static void ofs_range(const struct pw_ipack *ip, uint32_t base, uint32_t *lo, uint32_t *hi)
{
	uint32_t a = 0, b = ip->nr_ofs;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;

		if (ip->ofs[m].base < base)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	while (a < ip->nr_ofs && ip->ofs[a].base == base)
		a++;
	*hi = a;
}

static void ref_range(const struct pw_ipack *ip, const struct pw_oid *oid, uint32_t *lo,
                      uint32_t *hi)
{
	uint32_t a = 0, b = ip->nr_refs;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;

		if (memcmp(ip->refs[m].base.id, oid->id, PW_MAX_RAWSZ) < 0)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	while (a < ip->nr_refs && pw_oid_equal(&ip->refs[a].base, oid))
		a++;
	*hi = a;
}

/* A base whose children were split between resolvers: read-only, freed by
 * the last one done with it. */
struct shared {
	uint8_t *data;
	int refs; /* atomic */
};

struct frame {
	uint32_t obj;
	int type;
	uint32_t depth;
	uint8_t *data; /* NULL when dropped to save memory */
	size_t len;
	uint32_t ofs_i, ofs_end, ref_i, ref_end;
	struct shared *sh; /* data belongs to sh when set */
};

/* Children of a base handed to an idle resolver. */
struct work_item {
	struct shared *sh;
	size_t len;
	uint32_t obj, depth;
	int type;
	uint32_t ofs_i, ofs_end, ref_i, ref_end;
};

struct worker {
	struct pw_ipack *ip;
	int id;
	struct libdeflate_decompressor *ld;
	struct frame *st;
	size_t nr, alloc;
	size_t held;
	struct pw_buf delta, result, comp;
	struct pw_error err;
	struct ip_links links;
};

static uint64_t entry_end(const struct pw_ipack *ip, uint32_t i)
{
	return i + 1 < ip->nr ? ip->objs[i + 1].e.offset : ip->data_end;
}

/* Inflate entry i from the mapped pack into out (replaced). */
static int reinflate(struct worker *w, uint32_t i, struct pw_buf *out)
{
	const struct pw_ipack *ip = w->ip;
	const struct ip_obj *o = &ip->objs[i];
	uint64_t start = o->e.offset + o->hdr_len, end = entry_end(ip, i);
	const uint8_t *src;
	size_t used = 0;
	int rc;

	if (o->appended || end > ip->map_len || start > end)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "object at offset %llu is not in the pack",
		                    (unsigned long long)o->e.offset);
	if (o->size > (end - start) * MAX_RATIO + 64)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "object at offset %llu: size %llu is impossible",
		                    (unsigned long long)o->e.offset, (unsigned long long)o->size);
	if (ip->map) {
		src = ip->map + start;
	} else {
		size_t n = (size_t)(end - start), got = 0;

		pw_buf_reset(&w->comp);
		if ((rc = pw_buf_grow(&w->comp, n)))
			return pw_error_set(&w->err, rc, "out of memory reading %zu bytes", n);
		while (got < n) {
			ssize_t r = pread(ip->pack_fd, w->comp.data + got, n - got,
			                  (off_t)(start + got));

			if (r <= 0) {
				if (r < 0 && errno == EINTR)
					continue;
				return pw_error_set(&w->err, PW_EIO,
				                    "cannot read back the pack: %s",
				                    r < 0 ? strerror(errno) : "file shrank");
			}
			got += (size_t)r;
		}
		src = (const uint8_t *)w->comp.data;
	}
	pw_buf_reset(out);
	if ((rc = pw_buf_grow(out, (size_t)o->size)))
		return pw_error_set(&w->err, rc, "out of memory inflating %llu bytes",
		                    (unsigned long long)o->size);
	if (libdeflate_zlib_decompress_ex(w->ld, src, (size_t)(end - start), out->data,
	                                  (size_t)o->size, &used, NULL) != LIBDEFLATE_SUCCESS)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "object at offset %llu: corrupt zlib stream on second read",
		                    (unsigned long long)o->e.offset);
	out->len = (size_t)o->size;
	out->data[out->len] = '\0';
	return 0;
}

/* Before allocating a large declared result, check the delta can produce it. */
static int delta_size_plausible(const uint8_t *d, size_t len, uint64_t rsize)
{
	uint64_t bsize, rs, total = 0;
	size_t hdr;
	const uint8_t *p, *end = d + len;

	if (rsize <= ((uint64_t)1 << 20))
		return 1;
	if (pw_delta_sizes(d, len, &bsize, &rs, &hdr))
		return 0;
	for (p = d + hdr; p < end;) {
		uint8_t op = *p++;

		if (op & 0x80) {
			uint64_t size = 0;
			int k;

			for (k = 0; k < 4; k++)
				if (op & (1u << k))
					p++;
			for (k = 0; k < 3; k++)
				if (op & (0x10u << k)) {
					if (p >= end)
						return 0;
					size |= (uint64_t)*p++ << (8 * k);
				}
			total += size ? size : 0x10000;
		} else {
			total += op;
			p += op;
		}
		if (total > rsize)
			return 0;
	}
	return total == rsize;
}

/* Apply the delta of object c to base data into w->result. */
static int apply(struct worker *w, uint32_t c, const uint8_t *base, size_t base_len)
{
	struct pw_ipack *ip = w->ip;
	const struct ip_obj *o = &ip->objs[c];
	uint64_t bs, rs;
	size_t hl;
	int rc;

	if ((rc = reinflate(w, c, &w->delta)))
		return rc;
	if (pw_delta_sizes((uint8_t *)w->delta.data, w->delta.len, &bs, &rs, &hl) ||
	    !delta_size_plausible((uint8_t *)w->delta.data, w->delta.len, rs))
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "delta at offset %llu: its instructions do not produce the "
		                    "result size its header declares",
		                    (unsigned long long)o->e.offset);
	rc = pw_delta_apply(base, base_len, (uint8_t *)w->delta.data, w->delta.len, &w->result,
	                    &w->err);
	if (rc)
		return pw_error_wrap(&w->err, "delta at offset %llu",
		                     (unsigned long long)o->e.offset);
	return 0;
}

static void release_shared(struct shared *sh)
{
	if (__atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(sh->data);
		free(sh);
	}
}

static void frame_release(struct frame *f)
{
	if (f->sh)
		release_shared(f->sh);
	else
		free(f->data);
	f->data = NULL;
	f->sh = NULL;
}

/* Drop the data of ancestors (not the root, not the top) while over budget. */
static void trim(struct worker *w)
{
	size_t limit = w->ip->opts.cache_limit ? w->ip->opts.cache_limit : CACHE_LIMIT, k;

	for (k = 1; k + 1 < w->nr && w->held > limit; k++) {
		if (!w->st[k].data || w->st[k].sh)
			continue;
		w->held -= w->st[k].len;
		free(w->st[k].data);
		w->st[k].data = NULL;
	}
}

/* Rebuild dropped data of frame k from the nearest ancestor that has it. */
static int regenerate(struct worker *w, size_t k)
{
	int rc;

	if (w->st[k].data)
		return 0;
	if (k == 0)
		return pw_error_set(&w->err, PW_ERROR, "internal error: root data dropped");
	if ((rc = regenerate(w, k - 1)))
		return rc;
	if ((rc = apply(w, w->st[k].obj, w->st[k - 1].data, w->st[k - 1].len)))
		return rc;
	w->st[k].len = w->result.len;
	w->st[k].data = (uint8_t *)pw_buf_detach(&w->result, NULL);
	w->held += w->st[k].len;
	return 0;
}

static int push(struct worker *w, uint32_t obj, int type, uint32_t depth, uint8_t *data, size_t len)
{
	struct pw_ipack *ip = w->ip;
	struct frame *f;

	if (!data)
		return pw_error_set(&w->err, PW_ENOMEM, "out of memory");
	if (w->nr == w->alloc) {
		size_t n = w->alloc ? w->alloc * 2 : 16;
		struct frame *p = realloc(w->st, n * sizeof(*p));

		if (!p) {
			free(data);
			return pw_error_set(&w->err, PW_ENOMEM, "out of memory");
		}
		w->st = p;
		w->alloc = n;
	}
	f = &w->st[w->nr++];
	f->obj = obj;
	f->type = type;
	f->depth = depth;
	f->data = data;
	f->len = len;
	f->sh = NULL;
	if (obj != NO_OBJ && !ip->objs[obj].appended)
		ofs_range(ip, obj, &f->ofs_i, &f->ofs_end);
	else
		f->ofs_i = f->ofs_end = 0;
	ref_range(ip, &ip->objs[obj].e.oid, &f->ref_i, &f->ref_end);
	w->held += len;
	trim(w);
	return 0;
}

static int has_children(const struct pw_ipack *ip, uint32_t obj)
{
	uint32_t lo, hi;

	if (!ip->objs[obj].appended) {
		ofs_range(ip, obj, &lo, &hi);
		if (lo < hi)
			return 1;
	}
	ref_range(ip, &ip->objs[obj].e.oid, &lo, &hi);
	return lo < hi;
}

/* Another resolver is idle: hand it half of this base's remaining children. */
static void split(struct worker *w, struct frame *f)
{
	struct pw_ipack *ip = w->ip;
	uint32_t rem_ofs = f->ofs_end - f->ofs_i, rem_ref = f->ref_end - f->ref_i;
	struct work_item it;

	if (rem_ofs + rem_ref < 2 || __atomic_load_n(&ip->q_nr, __ATOMIC_RELAXED))
		return;
	memset(&it, 0, sizeof(it));
	if (!f->sh) {
		struct shared *sh = malloc(sizeof(*sh));

		if (!sh)
			return; /* resolve them ourselves */
		sh->data = f->data;
		sh->refs = 1;
		f->sh = sh;
	}
	pthread_mutex_lock(&ip->q_lock);
	if (ip->q_nr == ip->q_alloc) {
		size_t n = ip->q_alloc ? ip->q_alloc * 2 : 16;
		struct work_item *q = realloc(ip->q, n * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&ip->q_lock);
			return;
		}
		ip->q = q;
		ip->q_alloc = n;
	}
	if (rem_ofs >= 2) {
		it.ofs_end = f->ofs_end;
		it.ofs_i = f->ofs_end - rem_ofs / 2;
		f->ofs_end = it.ofs_i;
	} else if (rem_ofs == 1) {
		it.ref_i = f->ref_i;
		it.ref_end = f->ref_end;
		f->ref_end = f->ref_i;
	} else {
		it.ref_end = f->ref_end;
		it.ref_i = f->ref_end - rem_ref / 2;
		f->ref_end = it.ref_i;
	}
	__atomic_add_fetch(&f->sh->refs, 1, __ATOMIC_ACQ_REL);
	it.sh = f->sh;
	it.len = f->len;
	it.obj = f->obj;
	it.depth = f->depth;
	it.type = f->type;
	ip->q[ip->q_nr] = it;
	__atomic_store_n(&ip->q_nr, ip->q_nr + 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&ip->q_cond);
	pthread_mutex_unlock(&ip->q_lock);
}

/* Resolve every delta below the object at the bottom of the stack. */
static int run_stack(struct worker *w)
{
	struct pw_ipack *ip = w->ip;
	int rc;

	while (w->nr) {
		struct frame *f = &w->st[w->nr - 1];
		uint32_t c;
		struct ip_obj *o;
		uint32_t done;

		if (__atomic_load_n(&ip->idle, __ATOMIC_RELAXED) && f->data)
			split(w, f);
		if (f->ofs_i < f->ofs_end)
			c = ip->ofs[f->ofs_i++].obj;
		else if (f->ref_i < f->ref_end)
			c = ip->refs[f->ref_i++].obj;
		else {
			w->held -= f->data ? f->len : 0;
			frame_release(f);
			w->nr--;
			continue;
		}
		o = &ip->objs[c];
		if (__atomic_exchange_n(&o->claimed, 1, __ATOMIC_ACQ_REL))
			continue;
		if (__atomic_load_n(&ip->failed, __ATOMIC_RELAXED))
			return PW_ERROR;
		if ((rc = regenerate(w, w->nr - 1)))
			return rc;
		f = &w->st[w->nr - 1];
		if ((rc = apply(w, c, f->data, f->len)))
			return rc;
		/* the last child taken: this base is not needed any more (the
		 * bottom frame stays, it may be shared or an appended object) */
		if (w->nr > 1 && f->ofs_i == f->ofs_end && f->ref_i == f->ref_end) {
			w->held -= f->len;
			frame_release(f);
		}
		if (pw_object_hash(ip->algo, f->type, w->result.data, w->result.len, &o->e.oid))
			return pw_hash_collision_error(&w->err, &o->e.oid);
		o->depth = f->depth + 1;
		o->base = f->obj;
		if ((ip->opts.check_objects || wants_links(ip)) && f->type != PW_OBJ_BLOB &&
		    (rc = check_obj(ip, &w->links, f->type, w->result.data, w->result.len,
		                    &o->e.oid, &w->err)))
			return rc;
		__atomic_store_n(&o->real_type, (uint8_t)f->type, __ATOMIC_RELEASE);
		done = __atomic_add_fetch(&ip->resolved_nr, 1, __ATOMIC_RELAXED);
		if (w->id == 0)
			report(ip, PW_IPACK_RESOLVING, done, ip->nr_deltas);
		if (has_children(ip, c)) {
			size_t len = w->result.len;
			uint8_t *data = (uint8_t *)pw_buf_detach(&w->result, NULL);

			if ((rc = push(w, c, f->type, f->depth + 1, data, len)))
				return rc;
		}
	}
	return 0;
}

static void clear_stack(struct worker *w)
{
	while (w->nr) {
		frame_release(&w->st[w->nr - 1]);
		w->nr--;
	}
	w->held = 0;
}

/* Resolve the subtree of a whole object in the pack. */
static int resolve_root(struct worker *w, uint32_t i)
{
	struct pw_ipack *ip = w->ip;
	size_t len;
	uint8_t *data;
	int rc;

	if ((rc = reinflate(w, i, &w->result)))
		return rc;
	len = w->result.len;
	data = (uint8_t *)pw_buf_detach(&w->result, NULL);
	if ((rc = push(w, i, ip->objs[i].real_type, 0, data, len)))
		return rc;
	rc = run_stack(w);
	clear_stack(w);
	return rc;
}

static int run_item(struct worker *w, struct work_item *it)
{
	struct frame *f;
	int rc;

	if ((rc = push(w, it->obj, it->type, it->depth, it->sh->data, it->len))) {
		release_shared(it->sh);
		return rc;
	}
	f = &w->st[w->nr - 1];
	f->sh = it->sh;
	f->ofs_i = it->ofs_i;
	f->ofs_end = it->ofs_end;
	f->ref_i = it->ref_i;
	f->ref_end = it->ref_end;
	rc = run_stack(w);
	clear_stack(w);
	return rc;
}

/* Roots done: take split-off work until every resolver is idle. */
static void steal_loop(struct worker *w)
{
	struct pw_ipack *ip = w->ip;

	pthread_mutex_lock(&ip->q_lock);
	__atomic_add_fetch(&ip->idle, 1, __ATOMIC_RELAXED);
	for (;;) {
		if (ip->q_nr && !__atomic_load_n(&ip->failed, __ATOMIC_RELAXED)) {
			struct work_item it = ip->q[ip->q_nr - 1];
			int rc;

			__atomic_store_n(&ip->q_nr, ip->q_nr - 1, __ATOMIC_RELAXED);
			__atomic_sub_fetch(&ip->idle, 1, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&ip->q_lock);
			rc = run_item(w, &it);
			if (rc)
				fail_from(ip, &w->err);
			pthread_mutex_lock(&ip->q_lock);
			__atomic_add_fetch(&ip->idle, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (ip->idle == ip->nthreads || __atomic_load_n(&ip->failed, __ATOMIC_RELAXED)) {
			pthread_cond_broadcast(&ip->q_cond);
			break;
		}
		pthread_cond_wait(&ip->q_cond, &ip->q_lock);
	}
	pthread_mutex_unlock(&ip->q_lock);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pw_ipack *ip = w->ip;

	for (;;) {
		uint32_t i = __atomic_fetch_add(&ip->next_root, 1, __ATOMIC_RELAXED);

		if (i >= ip->nr || __atomic_load_n(&ip->failed, __ATOMIC_RELAXED))
			break;
		if (ip->objs[i].type == PW_OBJ_OFS_DELTA || ip->objs[i].type == PW_OBJ_REF_DELTA)
			continue;
		if (!has_children(ip, i))
			continue;
		if (resolve_root(w, i)) {
			fail_from(ip, &w->err);
			break;
		}
	}
	if (ip->nthreads > 1)
		steal_loop(w);
	return NULL;
}

static int worker_init(struct worker *w, struct pw_ipack *ip, int id)
{
	memset(w, 0, sizeof(*w));
	w->ip = ip;
	w->id = id;
	pw_buf_init(&w->delta, 0);
	pw_buf_init(&w->result, 0);
	pw_buf_init(&w->comp, 0);
	pw_ip_links_init(&w->links, &ip->linkset);
	w->ld = libdeflate_alloc_decompressor();
	return w->ld ? 0 : PW_ENOMEM;
}

static void worker_free(struct worker *w)
{
	clear_stack(w);
	free(w->st);
	if (w->ld)
		libdeflate_free_decompressor(w->ld);
	pw_buf_free(&w->delta);
	pw_buf_free(&w->result);
	pw_buf_free(&w->comp);
	pw_ip_links_free(&w->links);
}

static int nr_threads(const struct pw_ipack *ip)
{
	long n = ip->opts.threads;

	if (n <= 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		if (n > 3)
			n = 3;
	}
	if (n < 1)
		n = 1;
	if (n > 64)
		n = 64;
	if (ip->nr_deltas < 64)
		n = 1;
	return (int)n;
}

/* ---- thin packs --------------------------------------------------------- */

static int pwrite_all(int fd, const void *data, size_t len, uint64_t off, struct pw_error *err)
{
	if (pw_fs_pwrite_all(fd, data, len, off))
		return pw_error_set(err, PW_EIO, "cannot write the pack: %s", strerror(errno));
	return 0;
}

/* Append a whole object at *end; deflated in one go at level 1 (Git's
 * core.compression default for these) so that
 * the bytes (and so the pack name) match Git's for the same zlib. */
static int append_object(struct pw_ipack *ip, const struct pw_oid *oid, int type,
                         const struct pw_buf *data, uint64_t *end)
{
	uint8_t hdr[16];
	size_t hl = pw_pack_entry_hdr_encode(hdr, type, data->len);
	uLong bound = compressBound((uLong)data->len);
	uint8_t *z = malloc(bound + hl);
	z_stream zs;
	struct ip_obj *o;
	size_t zlen;
	int rc;

	if (!z)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	memcpy(z, hdr, hl);
	memset(&zs, 0, sizeof(zs));
	if (deflateInit(&zs, Z_BEST_SPEED) != Z_OK) {
		free(z);
		return pw_error_set(&ip->err, PW_ENOMEM, "cannot initialise zlib");
	}
	zs.next_in = (Bytef *)data->data;
	zs.avail_in = (uInt)data->len;
	zs.next_out = z + hl;
	zs.avail_out = (uInt)bound;
	rc = deflate(&zs, Z_FINISH);
	zlen = zs.total_out;
	deflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		free(z);
		return pw_error_set(&ip->err, PW_ERROR, "cannot compress a thin-pack base");
	}
	if ((rc = pwrite_all(ip->out_fd, z, hl + zlen, *end, &ip->err))) {
		free(z);
		return rc;
	}
	if ((rc = grow_objs(ip, ip->nr + 1))) {
		free(z);
		return rc;
	}
	o = &ip->objs[ip->nr++];
	memset(o, 0, sizeof(*o));
	o->e.oid = *oid;
	o->e.offset = *end;
	o->e.crc32 = (uint32_t)libdeflate_crc32(0, z, hl + zlen);
	o->size = data->len;
	o->hdr_len = (uint32_t)hl;
	o->type = o->real_type = (uint8_t)type;
	o->base = NO_OBJ;
	o->claimed = 1;
	o->appended = 1;
	*end += hl + zlen;
	ip->nr_appended++;
	free(z);
	return 0;
}

/* Git appends thin-pack bases in the order of the deltas that need them. */
static int cmp_ref_by_obj(const void *a, const void *b, void *ctx)
{
	const struct pw_ipack *ip = ctx;
	uint32_t x = ip->refs[*(const uint32_t *)a].obj, y = ip->refs[*(const uint32_t *)b].obj;

	return x < y ? -1 : x > y;
}

/* Rewrite the object count and the trailing checksum after appending. */
static int rewrite_trailer(struct pw_ipack *ip, uint64_t end)
{
	uint8_t hdr[PW_PACK_HEADER_SIZE], *buf;
	struct pw_hash_ctx h;
	uint64_t off = 0;
	int rc;

	pw_pack_header_encode(hdr, ip->nr);
	if ((rc = pwrite_all(ip->out_fd, hdr + 8, 4, 8, &ip->err)))
		return rc;
	buf = malloc(1 << 20);
	if (!buf)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	pw_hash_init_checksum(&h, ip->algo); /* the new trailer of a fixed thin pack */
	while (off < end) {
		size_t want = end - off > (1 << 20) ? (1 << 20) : (size_t)(end - off);
		ssize_t n = pread(ip->out_fd, buf, want, (off_t)off);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			free(buf);
			return pw_error_set(&ip->err, PW_EIO, "cannot read back the pack: %s",
			                    n < 0 ? strerror(errno) : "short file");
		}
		pw_hash_update(&h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	pw_hash_final_checksum(&h, ip->checksum);
	if ((rc = pwrite_all(ip->out_fd, ip->checksum, ip->algo->rawsz, end, &ip->err)))
		return rc;
	if (ftruncate(ip->out_fd, (off_t)(end + ip->algo->rawsz)))
		return pw_error_set(&ip->err, PW_EIO, "cannot truncate the pack: %s",
		                    strerror(errno));
	return 0;
}

static int fix_thin(struct pw_ipack *ip, struct worker *w)
{
	uint32_t *pending, n = 0, k, nr_pack = ip->nr;
	uint64_t end = ip->pack_end;
	struct pw_buf data = PW_BUF_INIT;
	int rc = 0;

	pending = malloc(((size_t)ip->nr_refs + 1) * sizeof(*pending));
	if (!pending)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	for (k = 0; k < ip->nr_refs; k++)
		if (!ip->objs[ip->refs[k].obj].real_type)
			pending[n++] = k;
	if (n)
		qsort_r(pending, n, sizeof(*pending), cmp_ref_by_obj, ip);
	for (k = 0; k < n && !rc; k++) {
		struct ip_obj *o = &ip->objs[ip->refs[pending[k]].obj];
		struct pw_oid base = ip->refs[pending[k]].base, check;
		int type = 0;
		uint32_t idx;

		if (o->real_type)
			continue;
		if (ip->opts.read_object(ip->opts.odb_ctx, &base, &type, &data))
			continue;
		if (pw_object_hash(ip->algo, type, data.data, data.len, &check)) {
			rc = pw_hash_collision_error(&ip->err, &check);
			break;
		}
		if (!pw_oid_equal(&check, &base)) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(&ip->err, PW_ECORRUPT,
			                  "repository object %s is corrupt (its content hashes "
			                  "differently)",
			                  pw_oid_to_hex(&base, hex));
			break;
		}
		if ((rc = append_object(ip, &base, type, &data, &end)))
			break;
		idx = ip->nr - 1;
		rc = push(w, idx, type, 0, (uint8_t *)pw_buf_detach(&data, NULL),
		          ip->objs[idx].size);
		if (!rc)
			rc = run_stack(w);
		clear_stack(w);
		if (rc)
			rc = pw_error_copy(&ip->err, &w->err);
	}
	pw_buf_free(&data);
	free(pending);
	ip->data_end = end;
	if (!rc && ip->nr != nr_pack)
		rc = rewrite_trailer(ip, end);
	return rc;
}

/* ---- the whole of phase 2 ----------------------------------------------- */

static int unresolved_error(struct pw_ipack *ip)
{
	uint32_t i, nr = 0, first = NO_OBJ;
	char hex[PW_MAX_HEXSZ + 1];

	for (i = 0; i < ip->nr; i++)
		if (!ip->objs[i].real_type) {
			if (first == NO_OBJ)
				first = i;
			nr++;
		}
	if (!nr)
		return 0;
	if (ip->objs[first].type == PW_OBJ_REF_DELTA) {
		const struct ip_obj *o = &ip->objs[first];
		struct pw_oid base = {0};
		uint32_t k;

		for (k = 0; k < ip->nr_refs; k++)
			if (ip->refs[k].obj == first)
				base = ip->refs[k].base;
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack has %u unresolved delta%s: the base %s of the delta at "
		                    "offset %llu is not in the pack%s",
		                    nr, nr == 1 ? "" : "s", pw_oid_to_hex(&base, hex),
		                    (unsigned long long)o->e.offset,
		                    ip->opts.fix_thin ? " nor in the repository"
		                                      : " (a thin pack needs --fix-thin)");
	}
	return pw_error_set(&ip->err, PW_ECORRUPT,
	                    "pack has %u unresolved delta%s (first at offset %llu: its base "
	                    "never resolves)",
	                    nr, nr == 1 ? "" : "s", (unsigned long long)ip->objs[first].e.offset);
}

static int check_duplicates(struct pw_ipack *ip)
{
	size_t rawsz = ip->algo->rawsz;
	uint32_t i;

	for (i = 1; i < ip->nr; i++) {
		const struct pw_idx_entry *a = ip->sorted[i - 1], *b = ip->sorted[i];

		if (!memcmp(a->oid.id, b->oid.id, rawsz)) {
			char hex[PW_MAX_HEXSZ + 1];

			return pw_error_set(&ip->err, PW_ECORRUPT,
			                    "object %s appears twice in the pack (offsets %llu "
			                    "and %llu)",
			                    pw_oid_to_hex(&a->oid, hex),
			                    (unsigned long long)a->offset,
			                    (unsigned long long)b->offset);
		}
	}
	return 0;
}

static int in_pack(void *ctx, const struct pw_oid *oid)
{
	const struct pw_ipack *ip = ctx;
	size_t lo = 0, hi = ip->nr;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		int c = memcmp(ip->sorted[m]->oid.id, oid->id, PW_MAX_RAWSZ);

		if (!c)
			return 1;
		if (c < 0)
			lo = m + 1;
		else
			hi = m;
	}
	return 0;
}

int pw_ipack_resolve(struct pw_ipack *ip)
{
	struct worker *ws = NULL;
	pthread_t *tids = NULL;
	int n, k, rc = 0;
	uint32_t i;

	if (!ip->parsed || ip->resolved || ip->err.code)
		return pw_error_set(&ip->err, ip->err.code ? ip->err.code : PW_EINVAL, "%s",
		                    ip->err.code ? ip->err.msg : "pack not parsed");
	ip->resolved = 1;
	if (ip->nr_ofs)
		qsort(ip->ofs, ip->nr_ofs, sizeof(*ip->ofs), cmp_ofs);
	if (ip->nr_refs)
		qsort(ip->refs, ip->nr_refs, sizeof(*ip->refs), cmp_ref);

	n = nr_threads(ip);
	ws = calloc((size_t)n, sizeof(*ws));
	tids = calloc((size_t)n, sizeof(*tids));
	if (!ws || !tids) {
		free(ws);
		free(tids);
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	}
	for (k = 0; k < n; k++)
		if (worker_init(&ws[k], ip, k))
			rc = pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	if (!rc && ip->nr_deltas) {
		report(ip, PW_IPACK_RESOLVING, 0, ip->nr_deltas);
		ip->nthreads = n;
		for (k = 1; k < n; k++)
			if (pthread_create(&tids[k], NULL, worker_main, &ws[k]))
				break;
		if (k < n) { /* fewer threads than planned: let the steal loop know */
			pthread_mutex_lock(&ip->q_lock);
			ip->nthreads = k;
			pthread_mutex_unlock(&ip->q_lock);
		}
		worker_main(&ws[0]);
		while (--k > 0)
			pthread_join(tids[k], NULL);
		ip->nthreads = 1;
		ip->idle = 0;
		while (ip->q_nr)
			release_shared(ip->q[--ip->q_nr].sh);
		if (ip->failed)
			rc = ip->err.code ? ip->err.code : PW_ERROR;
	}
	if (!rc && ip->opts.fix_thin && ip->opts.read_object && ip->out_fd >= 0 &&
	    ip->resolved_nr < ip->nr_deltas)
		rc = fix_thin(ip, &ws[0]);
	if (!rc && ip->nr_deltas)
		report(ip, PW_IPACK_RESOLVING, ip->resolved_nr, ip->nr_deltas);
	if (!rc)
		rc = unresolved_error(ip);
	for (k = 0; k < n; k++) {
		if (!rc && (rc = pw_ip_links_flush(&ws[k].links)))
			pw_error_set(&ip->err, rc, "out of memory");
		worker_free(&ws[k]);
	}
	free(ws);
	free(tids);
	if (rc)
		return rc;

	ip->sorted = malloc(((size_t)ip->nr + 1) * sizeof(*ip->sorted));
	if (!ip->sorted)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	for (i = 0; i < ip->nr; i++)
		ip->sorted[i] = &ip->objs[i].e;
	qsort(ip->sorted, ip->nr, sizeof(*ip->sorted), pw_idx_entry_cmp);
	if ((rc = check_duplicates(ip)))
		return rc;
	if (wants_links(ip)) {
		int sc = 0;

		if ((rc = pw_ip_links_flush(&ip->links)))
			return pw_error_set(&ip->err, rc, "out of memory");
		rc = pw_ip_linkset_verify(&ip->linkset, in_pack, ip, ip->opts.has_object,
		                          ip->opts.odb_ctx, ip->opts.check_links, &sc, &ip->err);
		/* an object taken from the repository (--fix-thin) was not read
		 * for links: its history is the repository's */
		ip->self_contained = !rc && sc && !ip->nr_appended &&
		                     !__atomic_load_n(&ip->links_broken, __ATOMIC_RELAXED);
		/* not needed any more: give the memory back before the idx */
		pw_ip_links_free(&ip->links);
		free(ip->linkset.slots);
		ip->linkset.slots = NULL;
		ip->linkset.cap = ip->linkset.nr = 0;
		return rc;
	}
	return 0;
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
	out->size_in_pack = entry_end(ip, i) - o->e.offset;
	out->depth = o->depth;
	if (o->base != NO_OBJ)
		out->base = ip->objs[o->base].e.oid;
	return 0;
}
