/* The index-pack engine on packs built here: a blob and chains of OFS and
 * REF deltas, resolved with one and several threads and with a base cache so
 * small that every ancestor is dropped and rebuilt; ids must match the
 * objects' own hashes. Both algorithms. */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pack/delta.h"
#include "pack/entry.h"
#include "pack/index-pack.h"
#include "packwire/object.h"
#include "test.h"

#define CHAINS 40
#define DEPTH  5

static void add_entry(struct pw_buf *pack, int type, const void *data, size_t len,
                      uint64_t base_dist, const struct pw_oid *base_oid)
{
	uint8_t hdr[64];
	size_t hl = pw_pack_entry_hdr_encode(hdr, type, len);
	uLongf zl = compressBound((uLong)len);
	uint8_t *z = malloc(zl);

	if (type == PW_OBJ_OFS_DELTA)
		hl += pw_pack_ofs_encode(hdr + hl, base_dist);
	if (type == PW_OBJ_REF_DELTA) {
		memcpy(hdr + hl, base_oid->id, pw_oid_rawsz(base_oid));
		hl += pw_oid_rawsz(base_oid);
	}
	compress(z, &zl, data, (uLong)len);
	pw_buf_add(pack, hdr, hl);
	pw_buf_add(pack, z, zl);
	free(z);
}

/* delta: copy all of base, insert `tail` */
static size_t make_delta(uint8_t *d, size_t base_len, const char *tail, size_t tail_len)
{
	size_t n = 0;

	n += pw_delta_encode_size(d + n, base_len);
	n += pw_delta_encode_size(d + n, base_len + tail_len);
	d[n++] = 0x80 | 0x01 | 0x10 | 0x20; /* offset byte 0, size bytes 0-1 */
	d[n++] = 0;
	d[n++] = (uint8_t)(base_len & 0xff);
	d[n++] = (uint8_t)(base_len >> 8);
	d[n++] = (uint8_t)tail_len;
	memcpy(d + n, tail, tail_len);
	return n + tail_len;
}

static void test_algo(const struct pw_hash_algo *algo)
{
	struct pw_buf pack = PW_BUF_INIT, content = PW_BUF_INIT;
	struct pw_oid want[1 + CHAINS * DEPTH], base_oid;
	uint64_t offsets[1 + CHAINS * DEPTH];
	char base[600];
	size_t nr = 0, i;
	int c, d, threads, limit;
	uint8_t hdr[12];
	struct pw_hash_ctx h;
	uint8_t sum[PW_MAX_RAWSZ];

	memset(base, 'x', sizeof(base));
	pw_pack_header_encode(hdr, 1 + CHAINS * DEPTH);
	pw_buf_add(&pack, hdr, 12);
	offsets[nr] = pack.len;
	add_entry(&pack, PW_OBJ_BLOB, base, sizeof(base), 0, NULL);
	pw_object_hash(algo, PW_OBJ_BLOB, base, sizeof(base), &want[nr++]);
	base_oid = want[0];
	for (c = 0; c < CHAINS; c++) {
		size_t prev = 0;

		pw_buf_reset(&content);
		pw_buf_add(&content, base, sizeof(base));
		for (d = 0; d < DEPTH; d++) {
			char tail[32];
			uint8_t delta[64];
			size_t tl = (size_t)snprintf(tail, sizeof(tail), "c%d d%d\n", c, d);
			size_t dl = make_delta(delta, content.len, tail, tl);

			offsets[nr] = pack.len;
			/* odd chains start with a REF_DELTA on the blob */
			if (d == 0 && (c & 1))
				add_entry(&pack, PW_OBJ_REF_DELTA, delta, dl, 0, &base_oid);
			else
				add_entry(&pack, PW_OBJ_OFS_DELTA, delta, dl,
				          offsets[nr] - (d ? offsets[prev] : offsets[0]), NULL);
			pw_buf_add(&content, tail, tl);
			pw_object_hash(algo, PW_OBJ_BLOB, content.data, content.len, &want[nr]);
			prev = nr++;
		}
	}
	pw_hash_init(&h, algo);
	pw_hash_update(&h, pack.data, pack.len);
	pw_hash_final_raw(&h, sum);
	pw_buf_add(&pack, sum, algo->rawsz);

	for (threads = 1; threads <= 3; threads++)
		for (limit = 0; limit < 2; limit++) {
			struct pw_ipack_opts opts = {0};
			struct pw_ipack *ip;
			struct pw_error err;
			int ok = 1;

			opts.algo = algo;
			opts.threads = threads;
			opts.cache_limit = limit ? 1 : 0;
			CHECK_EQ_INT(pw_ipack_new(&ip, &opts, &err), 0);
			CHECK_EQ_INT(pw_ipack_parse_mem(ip, (uint8_t *)pack.data, pack.len), 0);
			CHECK_EQ_INT(pw_ipack_resolve(ip), 0);
			CHECK_EQ_INT(pw_ipack_nr_objects(ip), nr);
			CHECK_EQ_INT(pw_ipack_nr_deltas(ip), nr - 1);
			for (i = 0; i < nr; i++) {
				struct pw_ipack_info info;

				pw_ipack_info(ip, (uint32_t)i, &info);
				if (!pw_oid_equal(&info.oid, &want[i]) ||
				    info.type != PW_OBJ_BLOB || info.offset != offsets[i] ||
				    info.depth != (i ? (i - 1) % DEPTH + 1 : 0))
					ok = 0;
			}
			CHECK(ok);
			CHECK(!memcmp(pw_ipack_checksum(ip), sum, algo->rawsz));
			pw_ipack_free(ip);
		}

	/* the same pack with the other algorithm fails cleanly */
	{
		struct pw_ipack_opts opts = {0};
		struct pw_ipack *ip;
		struct pw_error err;

		opts.algo = algo->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
		CHECK_EQ_INT(pw_ipack_new(&ip, &opts, &err), 0);
		CHECK(pw_ipack_parse_mem(ip, (uint8_t *)pack.data, pack.len) < 0);
		CHECK(strstr(pw_ipack_error(ip)->msg, algo->name) != NULL);
		pw_ipack_free(ip);
	}
	pw_buf_free(&pack);
	pw_buf_free(&content);
}

int main(void)
{
	test_algo(&pw_hash_sha1);
	test_algo(&pw_hash_sha256);
	return pw_test_done();
}
