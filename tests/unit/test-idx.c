/* Pack index v1/v2 for both hash sizes: layout arithmetic, in-memory idx files
 * (with a 64-bit offset past 2 GiB), lookups and malformed input. */
#include <stdlib.h>
#include <string.h>

#include "odb/entry.h"
#include "odb/idx.h"
#include "packwire/packwire.h"
#include "test.h"

#define NR 6

static const uint64_t offsets[NR] = {
        12, 0x7fffffffu, 0x80000000u, 0x123456789ull, 4096, 0xfffffffffull,
};

static int large(uint64_t o)
{
	return o >= 0x80000000u;
}

/* Names: distinct first bytes spread over the fan-out, sorted. */
static void make_names(const struct pw_hash_algo *algo, uint8_t names[NR][PW_MAX_RAWSZ])
{
	static const uint8_t first[NR] = {0x00, 0x01, 0x01, 0x7f, 0xa0, 0xff};
	int i;
	size_t j;

	for (i = 0; i < NR; i++) {
		for (j = 0; j < algo->rawsz; j++)
			names[i][j] = (uint8_t)(i * 31 + j);
		names[i][0] = first[i];
		names[i][1] = (uint8_t)i; /* the two 0x01 names stay ordered */
	}
}

/* Build an idx; with v1 only offsets below 4 GiB are used (nr_v1 first ones). */
static void build(struct pw_buf *b, int version, const struct pw_hash_algo *algo, uint32_t nr,
                  uint8_t names[NR][PW_MAX_RAWSZ])
{
	uint8_t tmp[8];
	uint32_t fan[256] = {0}, i, nlarge = 0;
	int k;

	pw_buf_reset(b);
	for (i = 0; i < nr; i++)
		for (k = names[i][0]; k < 256; k++)
			fan[k]++;
	if (version == 2) {
		pw_put_be32(tmp, PW_IDX_V2_MAGIC);
		pw_put_be32(tmp + 4, 2);
		pw_buf_add(b, tmp, 8);
	}
	for (k = 0; k < 256; k++) {
		pw_put_be32(tmp, fan[k]);
		pw_buf_add(b, tmp, 4);
	}
	if (version == 1) {
		for (i = 0; i < nr; i++) {
			pw_put_be32(tmp, (uint32_t)offsets[i]);
			pw_buf_add(b, tmp, 4);
			pw_buf_add(b, names[i], algo->rawsz);
		}
	} else {
		for (i = 0; i < nr; i++)
			pw_buf_add(b, names[i], algo->rawsz);
		for (i = 0; i < nr; i++) {
			pw_put_be32(tmp, 0xc0de0000u + i);
			pw_buf_add(b, tmp, 4);
		}
		for (i = 0; i < nr; i++) {
			pw_put_be32(tmp, large(offsets[i]) ? 0x80000000u | nlarge++
			                                   : (uint32_t)offsets[i]);
			pw_buf_add(b, tmp, 4);
		}
		for (i = 0; i < nr; i++)
			if (large(offsets[i])) {
				pw_put_be64(tmp, offsets[i]);
				pw_buf_add(b, tmp, 8);
			}
	}
	for (i = 0; i < 2 * algo->rawsz; i++)
		pw_buf_addch(b, (char)(0x50 + i));
}

static void test_layout(const struct pw_hash_algo *algo)
{
	uint64_t r = algo->rawsz;

	CHECK_EQ_INT(pw_idx_expected_size(1, r, 0, 0), 1024 + 2 * r);
	CHECK_EQ_INT(pw_idx_expected_size(2, r, 0, 0), 8 + 1024 + 2 * r);
	CHECK_EQ_INT(pw_idx_expected_size(1, r, 3, 0), 1024 + 3 * (4 + r) + 2 * r);
	CHECK_EQ_INT(pw_idx_expected_size(2, r, 3, 1), 8 + 1024 + 3 * (r + 8) + 8 + 2 * r);
	CHECK_EQ_INT(pw_idx_expected_size(2, r, 419000, 0), 8 + 1024 + 419000 * (r + 8) + 2 * r);
	CHECK_EQ_INT(pw_idx_expected_size(2, r, UINT32_MAX, 2),
	             8 + 1024 + (uint64_t)UINT32_MAX * (r + 8) + 16 + 2 * r);
	CHECK_EQ_INT(pw_idx_expected_size(1, r, 3, 1), 0); /* v1 has no 64-bit table */
	CHECK_EQ_INT(pw_idx_expected_size(2, r, 3, 4), 0); /* more large than objects */
	CHECK_EQ_INT(pw_idx_expected_size(3, r, 3, 0), 0);
	CHECK_EQ_INT(pw_idx_expected_size(2, 0, 3, 0), 0);
	CHECK_EQ_INT(pw_idx_expected_size(2, r, (uint64_t)UINT32_MAX + 1, 0), 0);
}

static void test_parse(const struct pw_hash_algo *algo, int version)
{
	uint8_t names[NR][PW_MAX_RAWSZ];
	uint32_t nr = version == 1 ? 3 : NR, i, pos;
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_idx *idx = NULL;
	uint8_t absent[PW_MAX_RAWSZ] = {0x01, 0x07};

	make_names(algo, names);
	build(&b, version, algo, nr, names);
	CHECK_EQ_INT(b.len, pw_idx_expected_size(version, algo->rawsz, nr, version == 1 ? 0 : 3));
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "t.idx", algo, &err), 0);
	if (!idx)
		return;
	CHECK_EQ_INT(idx->version, version);
	CHECK_EQ_INT(idx->nr, nr);
	CHECK_EQ_INT(idx->nr_large, version == 1 ? 0 : 3);
	for (i = 0; i < nr; i++) {
		uint64_t off = 0;
		int has_crc;
		uint32_t crc = pw_idx_nth_crc(idx, i, &has_crc);
		struct pw_oid oid;

		CHECK_EQ_INT(pw_idx_find(idx, names[i], &pos), 1);
		CHECK_EQ_INT(pos, i);
		CHECK_EQ_INT(pw_idx_nth_offset(idx, i, &off, &err), 0);
		CHECK_EQ_INT(off, version == 1 ? (uint32_t)offsets[i] : offsets[i]);
		CHECK_EQ_INT(has_crc, version == 2);
		CHECK_EQ_INT(crc, version == 2 ? 0xc0de0000u + i : 0);
		pw_idx_nth_oid(idx, i, &oid);
		CHECK(!memcmp(oid.id, names[i], algo->rawsz));
		CHECK_EQ_INT(oid.algo, algo->id);
	}
	CHECK_EQ_INT(pw_idx_find(idx, absent, &pos), 0);
	CHECK(!memcmp(idx->pack_checksum, b.data + b.len - 2 * algo->rawsz, algo->rawsz));
	pw_idx_free(idx);

	/* every truncation is rejected, naming the file */
	for (i = 0; i < b.len; i += (i < 1100 ? 1 : 7)) {
		int rc = pw_idx_open_memory(&idx, b.data, i, "cut.idx", algo, &err);

		CHECK(rc == PW_ECORRUPT);
		CHECK(strstr(err.msg, "cut.idx") != NULL);
		if (!rc)
			pw_idx_free(idx);
	}
	/* one trailing byte too many */
	pw_buf_addch(&b, 0);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "long.idx", algo, &err), PW_ECORRUPT);
	pw_buf_free(&b);
}

static void test_malformed(const struct pw_hash_algo *algo)
{
	uint8_t names[NR][PW_MAX_RAWSZ];
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_idx *idx = NULL;
	uint64_t off;
	size_t r = algo->rawsz;

	make_names(algo, names);
	/* non-monotonic fan-out */
	build(&b, 2, algo, NR, names);
	pw_put_be32((uint8_t *)b.data + 8 + 4 * 0x80, 1);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "fan.idx", algo, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "fan-out") != NULL);
	/* unknown version */
	build(&b, 2, algo, NR, names);
	pw_put_be32((uint8_t *)b.data + 4, 3);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "v3.idx", algo, &err),
	             PW_EUNSUPPORTED);
	/* a 64-bit escape past the table */
	build(&b, 2, algo, NR, names);
	pw_put_be32((uint8_t *)b.data + 8 + 1024 + NR * r + NR * 4 + 5 * 4, 0x80000009u);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "esc.idx", algo, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "esc.idx") != NULL);
	/* the table cut by one entry (and the checksums moved up) */
	build(&b, 2, algo, NR, names);
	memmove(b.data + b.len - 2 * r - 8, b.data + b.len - 2 * r, 2 * r);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len - 8, "cut8.idx", algo, &err),
	             PW_ECORRUPT);
	(void)off;
	/* a 64-bit table whose size is not a multiple of 8 */
	build(&b, 2, algo, NR, names);
	pw_buf_add(&b, "abcd", 4);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "odd.idx", algo, &err), PW_ECORRUPT);
	/* an idx of the other algorithm's size does not fit */
	build(&b, 2, algo, NR, names);
	CHECK(pw_idx_open_memory(&idx, b.data, b.len, "other.idx",
	                         algo->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1,
	                         &err) != 0);
	/* empty idx files */
	build(&b, 2, algo, 0, names);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "empty.idx", algo, &err), 0);
	if (idx) {
		CHECK_EQ_INT(idx->nr, 0);
		CHECK_EQ_INT(pw_idx_find(idx, names[0], &(uint32_t){0}), 0);
		pw_idx_free(idx);
	}
	pw_buf_free(&b);
}

/* ---- lookups in large buckets ------------------------------------------- */

#define MANY 40000

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static size_t many_rawsz;

static int cmp_name(const void *a, const void *b)
{
	return memcmp(a, b, many_rawsz);
}

/* Every id of a v2 idx with buckets of hundreds is found where it is, and
 * ids that are not there are not: uniform ids, a dense cluster that puts
 * the guess of where an id sits far off, and runs that share their first
 * eight bytes. */
static void test_find_many(const struct pw_hash_algo *algo)
{
	size_t r = algo->rawsz, n = 0, i, j;
	uint8_t *names = malloc(MANY * PW_MAX_RAWSZ), tmp[8], probe[PW_MAX_RAWSZ];
	uint32_t fan[256] = {0}, pos;
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_idx *idx = NULL;
	int k;

	if (!names) {
		CHECK(0);
		return;
	}
	for (i = 0; i < MANY; i++) {
		uint8_t *p = names + i * r;

		for (j = 0; j < r; j++)
			p[j] = (uint8_t)rnd();
		if (i % 4 == 1) { /* a cluster: bytes 1-3 nearly equal */
			p[0] = 0x42;
			p[1] = 0x10;
			p[2] = (uint8_t)(i & 1);
		}
		if (i % 16 == 2 && i > 16) /* the first eight bytes of the one before */
			memcpy(p, p - r, 8);
	}
	many_rawsz = r;
	qsort(names, MANY, r, cmp_name);
	for (i = 0; i < MANY; i++)
		if (!n || memcmp(names + (n - 1) * r, names + i * r, r))
			memmove(names + n++ * r, names + i * r, r);
	for (i = 0; i < n; i++)
		for (k = names[i * r]; k < 256; k++)
			fan[k]++;
	pw_put_be32(tmp, PW_IDX_V2_MAGIC);
	pw_put_be32(tmp + 4, 2);
	pw_buf_add(&b, tmp, 8);
	for (k = 0; k < 256; k++) {
		pw_put_be32(tmp, fan[k]);
		pw_buf_add(&b, tmp, 4);
	}
	pw_buf_add(&b, names, n * r);
	for (i = 0; i < 2 * n; i++) { /* CRCs, then offsets */
		pw_put_be32(tmp, (uint32_t)i);
		pw_buf_add(&b, tmp, 4);
	}
	for (i = 0; i < 2 * r; i++)
		pw_buf_addch(&b, 0);
	CHECK_EQ_INT(pw_idx_open_memory(&idx, b.data, b.len, "many.idx", algo, &err), 0);
	if (idx) {
		size_t bad = 0, wrong = 0;

		for (i = 0; i < n; i++) {
			if (!pw_idx_find(idx, names + i * r, &pos) || pos != i)
				bad++;
			/* a neighbour that is not in the table */
			memcpy(probe, names + i * r, r);
			probe[r - 1] ^= 0x01;
			if (pw_idx_find(idx, probe, &pos) !=
			    (bsearch(probe, names, n, r, cmp_name) != NULL))
				wrong++;
			probe[r - 1] ^= 0x01;
			probe[3] ^= 0x80;
			if (pw_idx_find(idx, probe, &pos) !=
			    (bsearch(probe, names, n, r, cmp_name) != NULL))
				wrong++;
		}
		CHECK_EQ_INT(bad, 0);
		CHECK_EQ_INT(wrong, 0);
		CHECK(fan[0x42] - fan[0x41] > 5000); /* the cluster made a big bucket */
		pw_idx_free(idx);
	}
	pw_buf_free(&b);
	free(names);
}

int main(void)
{
	const struct pw_hash_algo *algos[] = {&pw_hash_sha1, &pw_hash_sha256};
	size_t a;

	for (a = 0; a < 2; a++) {
		test_layout(algos[a]);
		test_parse(algos[a], 1);
		test_parse(algos[a], 2);
		test_malformed(algos[a]);
		test_find_many(algos[a]);
	}
	return pw_test_done();
}
