/* A pack of objects translated into the compat algorithm, each written
 * whole: the pack a client of the other algorithm receives. */
#include <string.h>
#include <zlib.h>

#include "compat/map-priv.h"
#include "packwire/object.h"
#include "packwire/odb.h"

struct out {
	pw_compat_out_fn fn;
	void *ctx;
	struct pw_hash_ctx hash;
	struct pw_error *err;
};

static int emit(struct out *o, const void *data, size_t len)
{
	pw_hash_update(&o->hash, data, len);
	return o->fn(o->ctx, data, len, o->err);
}

static int map_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return pw_compat_from_storage(data, from, out);
}

/* Entry header, then the zlib stream of data. */
static int emit_entry(struct out *o, int type, const struct pw_buf *data, struct pw_buf *z)
{
	uint8_t hdr[16];
	size_t n = 0;
	uint64_t size = data->len;
	z_stream zs;
	int zrc, rc;

	hdr[n] = (uint8_t)(type << 4 | (size & 0x0f));
	size >>= 4;
	while (size) {
		hdr[n++] |= 0x80;
		hdr[n] = size & 0x7f;
		size >>= 7;
	}
	n++;
	if ((rc = emit(o, hdr, n)))
		return rc;
	memset(&zs, 0, sizeof(zs));
	if (deflateInit(&zs, Z_DEFAULT_COMPRESSION) != Z_OK)
		return pw_error_set(o->err, PW_ENOMEM, "out of memory");
	pw_buf_reset(z);
	if (pw_buf_grow(z, deflateBound(&zs, (uLong)data->len))) {
		deflateEnd(&zs);
		return pw_error_set(o->err, PW_ENOMEM, "out of memory");
	}
	zs.next_in = (Bytef *)data->data;
	zs.avail_in = (uInt)data->len;
	zs.next_out = (Bytef *)z->data;
	zs.avail_out = (uInt)(z->cap - 1);
	zrc = deflate(&zs, Z_FINISH);
	n = zs.total_out;
	deflateEnd(&zs);
	if (zrc != Z_STREAM_END)
		return pw_error_set(o->err, PW_ERROR, "zlib: deflate failed");
	return emit(o, z->data, n);
}

int pw_compat_write_pack(struct pw_odb *odb, struct pw_compat_map *map, const struct pw_oid *oids,
                         size_t nr, pw_compat_out_fn fn, void *ctx, uint8_t *checksum,
                         struct pw_error *err)
{
	const struct pw_hash_algo *to = pw_compat_map_compat_algo(map);
	struct pw_buf data = PW_BUF_INIT, conv = PW_BUF_INIT, z = PW_BUF_INIT;
	struct out o = {fn, ctx, {0}, err};
	uint8_t hdr[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2}, sum[PW_MAX_RAWSZ];
	char hex[PW_MAX_HEXSZ + 1];
	int rc = 0;

	if (pw_odb_algo(odb) != pw_compat_map_storage_algo(map))
		return pw_error_set(err, PW_EINVAL,
		                    "compat pack: the odb is not the map's storage");
	if (nr > 0xffffffffu)
		return pw_error_set(err, PW_ETOOBIG, "too many objects for one pack");
	hdr[8] = (uint8_t)(nr >> 24);
	hdr[9] = (uint8_t)(nr >> 16);
	hdr[10] = (uint8_t)(nr >> 8);
	hdr[11] = (uint8_t)nr;
	pw_hash_init(&o.hash, to);
	rc = emit(&o, hdr, sizeof(hdr));
	for (size_t i = 0; i < nr && !rc; i++) {
		int type;

		if ((rc = pw_odb_read(odb, &oids[i], &type, &data))) {
			pw_error_copy(err, pw_odb_error(odb));
			break;
		}
		if (type == PW_OBJ_BLOB) {
			rc = emit_entry(&o, type, &data, &z);
			continue;
		}
		pw_buf_reset(&conv);
		rc = pw_compat_convert(&conv, type, data.data, data.len, pw_odb_algo(odb), to,
		                       map_lookup, map, err);
		if (rc)
			pw_error_wrap(err, "%s %s", pw_object_type_name(type),
			              pw_oid_to_hex(&oids[i], hex));
		else
			rc = emit_entry(&o, type, &conv, &z);
	}
	if (!rc) {
		pw_hash_final_raw(&o.hash, sum);
		rc = fn(ctx, sum, to->rawsz, err);
		if (!rc && checksum)
			memcpy(checksum, sum, to->rawsz);
	}
	pw_buf_free(&data);
	pw_buf_free(&conv);
	pw_buf_free(&z);
	return rc;
}
