#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "odb/entry.h"
#include "pack/idx-write.h"
#include "util/fs.h"

/* Buffers the output so that the sink sees large writes, and hashes it. */
struct idx_out {
	pw_idx_write_fn fn;
	void *ctx;
	struct pw_hash_ctx hash;
	uint8_t buf[65536];
	size_t len;
	struct pw_error *err;
	int rc;
};

static void out_flush(struct idx_out *o)
{
	if (o->rc || !o->len)
		return;
	pw_hash_update(&o->hash, o->buf, o->len);
	o->rc = o->fn(o->ctx, o->buf, o->len, o->err);
	o->len = 0;
}

static void out_add(struct idx_out *o, const void *data, size_t len)
{
	const uint8_t *p = data;

	while (len && !o->rc) {
		size_t n = sizeof(o->buf) - o->len;

		if (n > len)
			n = len;
		memcpy(o->buf + o->len, p, n);
		o->len += n;
		p += n;
		len -= n;
		if (o->len == sizeof(o->buf))
			out_flush(o);
	}
}

static void out_be32(struct idx_out *o, uint32_t v)
{
	uint8_t b[4];

	pw_put_be32(b, v);
	out_add(o, b, 4);
}

int pw_idx_entry_cmp(const void *a, const void *b)
{
	const struct pw_idx_entry *x = *(const struct pw_idx_entry *const *)a;
	const struct pw_idx_entry *y = *(const struct pw_idx_entry *const *)b;

	return memcmp(x->oid.id, y->oid.id, PW_MAX_RAWSZ);
}

int pw_idx_write(const struct pw_hash_algo *algo, const struct pw_idx_entry *const *entries,
                 size_t nr, const uint8_t *pack_checksum, const struct pw_idx_write_opts *opts,
                 pw_idx_write_fn fn, void *ctx, uint8_t *idx_checksum, struct pw_error *err)
{
	uint64_t limit = opts && opts->off32_limit ? opts->off32_limit : PW_IDX_OFF32_LIMIT;
	int version = opts && opts->version ? opts->version : 2;
	size_t rawsz = algo->rawsz, i, nr_large = 0;
	uint32_t fanout[256] = {0};
	struct idx_out *o;
	uint8_t sum[PW_MAX_RAWSZ];
	int rc;

	if (version != 1 && version != 2)
		return pw_error_set(err, PW_EINVAL, "index version %d is not supported", version);
	if (nr > UINT32_MAX)
		return pw_error_set(err, PW_ETOOBIG, "too many objects for a pack index");
	for (i = 0; i < nr; i++) {
		const struct pw_idx_entry *e = entries[i];

		if (e->oid.algo != algo->id)
			return pw_error_set(err, PW_EINVAL, "index entry %zu is not a %s id", i,
			                    algo->name);
		if (i && memcmp(entries[i - 1]->oid.id, e->oid.id, rawsz) >= 0)
			return pw_error_set(err, PW_EINVAL,
			                    "index entries are not sorted or not unique at %zu", i);
		if (version == 1 && e->offset > UINT32_MAX)
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "pack offset %llu does not fit an index of version 1 "
			                    "(use version 2)",
			                    (unsigned long long)e->offset);
		if (e->offset > limit || e->offset >> 31)
			nr_large++;
		fanout[e->oid.id[0]]++;
	}
	if (nr_large > 0x7fffffff)
		return pw_error_set(err, PW_ETOOBIG, "too many large offsets");
	for (i = 1; i < 256; i++)
		fanout[i] += fanout[i - 1];

	o = malloc(sizeof(*o));
	if (!o)
		return pw_error_set(err, PW_ENOMEM, "out of memory writing a pack index");
	o->fn = fn;
	o->ctx = ctx;
	o->len = 0;
	o->err = err;
	o->rc = 0;
	pw_hash_init_checksum(&o->hash, algo); /* the .idx trailer */

	if (version == 2) {
		uint32_t large = 0;

		out_be32(o, PW_IDX_SIGNATURE);
		out_be32(o, 2);
		for (i = 0; i < 256; i++)
			out_be32(o, fanout[i]);
		for (i = 0; i < nr; i++)
			out_add(o, entries[i]->oid.id, rawsz);
		for (i = 0; i < nr; i++)
			out_be32(o, entries[i]->crc32);
		for (i = 0; i < nr; i++) {
			uint64_t off = entries[i]->offset;

			if (off > limit || off >> 31)
				out_be32(o, 0x80000000u | large++);
			else
				out_be32(o, (uint32_t)off);
		}
		for (i = 0; i < nr && nr_large; i++) {
			uint64_t off = entries[i]->offset;
			uint8_t b[8];

			if (off > limit || off >> 31) {
				pw_put_be64(b, off);
				out_add(o, b, 8);
			}
		}
	} else {
		for (i = 0; i < 256; i++)
			out_be32(o, fanout[i]);
		for (i = 0; i < nr; i++) {
			out_be32(o, (uint32_t)entries[i]->offset);
			out_add(o, entries[i]->oid.id, rawsz);
		}
	}
	out_add(o, pack_checksum, rawsz);
	out_flush(o);
	rc = o->rc;
	if (!rc) {
		pw_hash_final_checksum(&o->hash, sum);
		rc = fn(ctx, sum, rawsz, err);
		if (!rc && idx_checksum)
			memcpy(idx_checksum, sum, rawsz);
	}
	free(o);
	return rc;
}

static int buf_sink(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	if (pw_buf_add(ctx, data, len))
		return pw_error_set(err, PW_ENOMEM, "out of memory writing a pack index");
	return 0;
}

int pw_idx_write_buf(const struct pw_hash_algo *algo, const struct pw_idx_entry *const *entries,
                     size_t nr, const uint8_t *pack_checksum, const struct pw_idx_write_opts *opts,
                     struct pw_buf *out, uint8_t *idx_checksum, struct pw_error *err)
{
	return pw_idx_write(algo, entries, nr, pack_checksum, opts, buf_sink, out, idx_checksum,
	                    err);
}

static int fd_sink(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	if (pw_fs_write_all(*(int *)ctx, data, len))
		return pw_error_set(err, PW_EIO, "cannot write pack index: %s", strerror(errno));
	return 0;
}

int pw_idx_write_fd(const struct pw_hash_algo *algo, const struct pw_idx_entry *const *entries,
                    size_t nr, const uint8_t *pack_checksum, const struct pw_idx_write_opts *opts,
                    int fd, uint8_t *idx_checksum, struct pw_error *err)
{
	return pw_idx_write(algo, entries, nr, pack_checksum, opts, fd_sink, &fd, idx_checksum,
	                    err);
}
