/* TEMPORARY stand-in for the pack writer (packwriter branch) so the server
 * can be tested before that branch lands: whole objects, no deltas, no
 * reuse. Removed when packwriter is merged. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pack/entry.h"
#include "packwire/pack-write.h"

struct shim_obj {
	struct pw_oid oid;
	int type;
};

struct pw_pack_writer {
	struct pw_odb *odb;
	struct pw_pack_write_opts opts;
	struct pw_error err;
	struct shim_obj *v;
	size_t nr, alloc;
	struct pw_pack_write_stats st;
};

void pw_pack_write_opts_init(struct pw_pack_write_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->window = 10;
	o->depth = 50;
	o->reuse_delta = o->reuse_object = o->ofs_delta = o->verify_reuse = 1;
	o->compression = -1;
}

int pw_pack_writer_new(struct pw_pack_writer **out, struct pw_odb *odb,
                       const struct pw_pack_write_opts *opts)
{
	struct pw_pack_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return PW_ENOMEM;
	w->odb = odb;
	if (opts)
		w->opts = *opts;
	else
		pw_pack_write_opts_init(&w->opts);
	*out = w;
	return 0;
}

void pw_pack_writer_free(struct pw_pack_writer *w)
{
	if (w)
		free(w->v);
	free(w);
}

const struct pw_error *pw_pack_writer_error(const struct pw_pack_writer *w)
{
	return &w->err;
}

int pw_pack_writer_add(struct pw_pack_writer *w, const struct pw_oid *oid, int type,
                       const char *path, size_t path_len)
{
	size_t i;

	(void)path;
	(void)path_len;
	for (i = 0; i < w->nr; i++) /* quadratic: a shim */
		if (pw_oid_equal(&w->v[i].oid, oid))
			return 0;
	if (w->nr == w->alloc) {
		size_t na = w->alloc ? w->alloc * 2 : 64;
		struct shim_obj *nv = realloc(w->v, na * sizeof(*nv));

		if (!nv)
			return pw_error_set(&w->err, PW_ENOMEM, "out of memory");
		w->v = nv;
		w->alloc = na;
	}
	w->v[w->nr].oid = *oid;
	w->v[w->nr].type = type;
	w->nr++;
	return 0;
}

int pw_pack_writer_add_base(struct pw_pack_writer *w, const struct pw_oid *oid, int type,
                            const char *path, size_t path_len)
{
	(void)w, (void)oid, (void)type, (void)path, (void)path_len;
	return 0;
}

size_t pw_pack_writer_count(const struct pw_pack_writer *w)
{
	return w->nr;
}

int pw_pack_writer_write(struct pw_pack_writer *w, pw_pack_out_fn fn, void *ctx, uint8_t *checksum)
{
	const struct pw_hash_algo *algo = pw_odb_algo(w->odb);
	struct pw_hash_ctx h;
	struct pw_buf data = PW_BUF_INIT;
	uint8_t hdr[32], sum[PW_MAX_RAWSZ];
	unsigned char *z = NULL;
	size_t i, n;
	int rc = 0, type;

	pw_hash_init(&h, algo);
	pw_pack_header_encode(hdr, (uint32_t)w->nr);
	pw_hash_update(&h, hdr, 12);
	if ((rc = fn(ctx, hdr, 12, &w->err)))
		goto out;
	w->st.bytes = 12;
	for (i = 0; i < w->nr; i++) {
		uLongf zl;

		if ((rc = pw_odb_read(w->odb, &w->v[i].oid, &type, &data))) {
			pw_error_copy(&w->err, pw_odb_error(w->odb));
			goto out;
		}
		n = pw_pack_entry_hdr_encode(hdr, type, data.len);
		zl = compressBound(data.len);
		free(z);
		if (!(z = malloc(zl))) {
			rc = pw_error_set(&w->err, PW_ENOMEM, "out of memory");
			goto out;
		}
		if (compress2(z, &zl, (const Bytef *)data.data, data.len, 1) != Z_OK) {
			rc = pw_error_set(&w->err, PW_ERROR, "deflate failed");
			goto out;
		}
		pw_hash_update(&h, hdr, n);
		pw_hash_update(&h, z, zl);
		if ((rc = fn(ctx, hdr, n, &w->err)) || (rc = fn(ctx, z, zl, &w->err)))
			goto out;
		w->st.bytes += n + zl;
	}
	pw_hash_final_raw(&h, sum);
	if ((rc = fn(ctx, sum, algo->rawsz, &w->err)))
		goto out;
	w->st.bytes += algo->rawsz;
	w->st.written = (uint32_t)w->nr;
	if (checksum)
		memcpy(checksum, sum, algo->rawsz);
out:
	free(z);
	pw_buf_free(&data);
	return rc;
}

void pw_pack_writer_stats(const struct pw_pack_writer *w, struct pw_pack_write_stats *out)
{
	*out = w->st;
}
