/* The .idx writer: layout of v1 and v2, 64-bit offsets, checksums, and the
 * cases it must refuse; for both algorithms. */
#include <stdlib.h>
#include <string.h>

#include "odb/entry.h"
#include "pack/idx-write.h"
#include "test.h"

static void make(struct pw_idx_entry *e, const struct pw_hash_algo *algo, size_t n,
                 const uint64_t *offsets)
{
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&e[i], 0, sizeof(e[i]));
		e[i].oid.algo = (uint8_t)algo->id;
		/* increasing ids spread over the fan-out */
		e[i].oid.id[0] = (uint8_t)(i * 37);
		e[i].oid.id[1] = (uint8_t)i;
		e[i].oid.id[algo->rawsz - 1] = 0xaa;
		e[i].offset = offsets[i];
		e[i].crc32 = 0x1000u + (uint32_t)i;
	}
}

static int checksum_ok(const struct pw_hash_algo *algo, const struct pw_buf *b)
{
	struct pw_oid sum;

	CHECK_EQ_INT(pw_hash_buf(algo, b->data, b->len - algo->rawsz, &sum), 0);
	return !memcmp(sum.id, b->data + b->len - algo->rawsz, algo->rawsz);
}

static void test_algo(const struct pw_hash_algo *algo)
{
	uint64_t offs[5] = {12, 100, 0x7fffffff, 0x80000000ull, 0x123456789ull};
	struct pw_idx_entry e[5];
	const struct pw_idx_entry *p[5];
	uint8_t pack_sum[PW_MAX_RAWSZ], idx_sum[PW_MAX_RAWSZ];
	struct pw_idx_write_opts v1 = {1, 0}, v2 = {2, 0}, forced = {2, 50};
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err;
	size_t rawsz = algo->rawsz, i;
	const uint8_t *d;

	memset(pack_sum, 0x5c, sizeof(pack_sum));
	make(e, algo, 5, offs);
	for (i = 0; i < 5; i++)
		p[i] = &e[i];

	/* v2 with two 64-bit offsets */
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 5, pack_sum, &v2, &b, idx_sum, &err), 0);
	d = (const uint8_t *)b.data;
	CHECK_EQ_INT(b.len, 8 + 1024 + 5 * (rawsz + 8) + 2 * 8 + 2 * rawsz);
	CHECK_EQ_INT(pw_get_be32(d), PW_IDX_SIGNATURE);
	CHECK_EQ_INT(pw_get_be32(d + 4), 2);
	CHECK_EQ_INT(pw_get_be32(d + 8 + 255 * 4), 5);
	CHECK_EQ_INT(pw_get_be32(d + 8), 1);          /* one id starts with 0x00 */
	CHECK_EQ_INT(pw_get_be32(d + 8 + 37 * 4), 2); /* the second with 37 */
	CHECK(!memcmp(d + 8 + 1024 + rawsz, e[1].oid.id, rawsz));
	CHECK_EQ_INT(pw_get_be32(d + 8 + 1024 + 5 * rawsz + 4 * 4), 0x1004);
	{
		const uint8_t *o = d + 8 + 1024 + 5 * (rawsz + 4);

		CHECK_EQ_INT(pw_get_be32(o), 12);
		CHECK_EQ_INT(pw_get_be32(o + 8), 0x7fffffff);
		CHECK_EQ_INT(pw_get_be32(o + 12), 0x80000000u);
		CHECK_EQ_INT(pw_get_be32(o + 16), 0x80000001u);
		CHECK_EQ_INT(pw_get_be64(o + 20), 0x80000000ull);
		CHECK_EQ_INT(pw_get_be64(o + 28), 0x123456789ull);
	}
	CHECK(!memcmp(d + b.len - 2 * rawsz, pack_sum, rawsz));
	CHECK(checksum_ok(algo, &b));
	CHECK(!memcmp(idx_sum, d + b.len - rawsz, rawsz));

	/* a lower threshold moves more offsets into the 64-bit table */
	pw_buf_reset(&b);
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 5, pack_sum, &forced, &b, NULL, &err), 0);
	CHECK_EQ_INT(b.len, 8 + 1024 + 5 * (rawsz + 8) + 4 * 8 + 2 * rawsz);
	CHECK(checksum_ok(algo, &b));

	/* v1 refuses offsets of 4 GiB and more */
	pw_buf_reset(&b);
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 5, pack_sum, &v1, &b, NULL, &err), PW_EUNSUPPORTED);
	/* and lays out (offset, id) pairs otherwise */
	pw_buf_reset(&b);
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 4, pack_sum, &v1, &b, NULL, &err), 0);
	d = (const uint8_t *)b.data;
	CHECK_EQ_INT(b.len, 1024 + 4 * (rawsz + 4) + 2 * rawsz);
	CHECK_EQ_INT(pw_get_be32(d + 255 * 4), 4);
	CHECK_EQ_INT(pw_get_be32(d + 1024 + 3 * (rawsz + 4)), 0x80000000u);
	CHECK(!memcmp(d + 1024 + 3 * (rawsz + 4) + 4, e[3].oid.id, rawsz));
	CHECK(checksum_ok(algo, &b));

	/* an empty index */
	pw_buf_reset(&b);
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 0, pack_sum, &v2, &b, NULL, &err), 0);
	CHECK_EQ_INT(b.len, 8 + 1024 + 2 * rawsz);

	/* unsorted, duplicate, wrong-algorithm entries are refused */
	p[0] = &e[1];
	p[1] = &e[0];
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 2, pack_sum, &v2, &b, NULL, &err), PW_EINVAL);
	p[1] = &e[1];
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 2, pack_sum, &v2, &b, NULL, &err), PW_EINVAL);
	e[0].oid.algo = algo->id == PW_HASH_SHA1 ? PW_HASH_SHA256 : PW_HASH_SHA1;
	p[0] = &e[0];
	CHECK_EQ_INT(pw_idx_write_buf(algo, p, 1, pack_sum, &v2, &b, NULL, &err), PW_EINVAL);
	pw_buf_free(&b);
}

int main(void)
{
	test_algo(&pw_hash_sha1);
	test_algo(&pw_hash_sha256);
	return pw_test_done();
}
