/* Reachability bitmaps: EWAH decoding and the .bitmap file reader, on files
 * built here by hand, well-formed and damaged, for both hash sizes. */
#include <stdlib.h>
#include <string.h>

#include "pack/bitmap.h"
#include "odb/entry.h"
#include "packwire/buf.h"
#include "test.h"

static void put32(struct pw_buf *b, uint32_t v)
{
	uint8_t x[4];

	pw_put_be32(x, v);
	pw_buf_add(b, x, 4);
}

static void put64(struct pw_buf *b, uint64_t v)
{
	uint8_t x[8];

	pw_put_be64(x, v);
	pw_buf_add(b, x, 8);
}

static uint64_t rlw(int bit, uint32_t run, uint32_t lit)
{
	return (uint64_t)(bit & 1) | (uint64_t)run << 1 | (uint64_t)lit << 33;
}

/* An EWAH of `nbits` bits: one marker word per group, as given. */
static void ewah(struct pw_buf *b, uint32_t nbits, const uint64_t *words, uint32_t n)
{
	uint32_t i;

	put32(b, nbits);
	put32(b, n);
	for (i = 0; i < n; i++)
		put64(b, words[i]);
	put32(b, 0);
}

/* A bitmap with only literal words for `set` (nwords words). */
static void ewah_lit(struct pw_buf *b, uint32_t nbits, const uint64_t *set, uint32_t nwords)
{
	uint64_t w[8];
	uint32_t i;

	w[0] = rlw(0, 0, nwords);
	for (i = 0; i < nwords; i++)
		w[i + 1] = set[i];
	ewah(b, nbits, w, nwords + 1);
}

static void test_ewah(void)
{
	struct pw_bitset bs;
	struct pw_error err = {0};
	struct pw_ewah e;
	struct pw_buf b = PW_BUF_INIT;
	size_t used;
	uint64_t w[4];

	/* two words of ones, then a literal: bits 0..127 and 130 */
	w[0] = rlw(1, 2, 1);
	w[1] = (uint64_t)1 << 2;
	ewah(&b, 131, w, 2);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, b.len, &used, &err), 0);
	CHECK_EQ_INT(used, b.len);
	CHECK_EQ_INT(pw_bitset_init(&bs, 200), 0);
	CHECK_EQ_INT(pw_ewah_apply(&e, &bs, 0, &err), 0);
	CHECK(pw_bitset_get(&bs, 0) && pw_bitset_get(&bs, 127) && pw_bitset_get(&bs, 130));
	CHECK(!pw_bitset_get(&bs, 128) && !pw_bitset_get(&bs, 131));
	CHECK_EQ_INT(pw_bitset_count(&bs), 129);
	/* XOR the same again: empty */
	CHECK_EQ_INT(pw_ewah_apply(&e, &bs, 1, &err), 0);
	CHECK_EQ_INT(pw_bitset_count(&bs), 0);
	/* a zero run skips words */
	pw_buf_reset(&b);
	w[0] = rlw(0, 3, 1);
	w[1] = 1;
	ewah(&b, 193, w, 2);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, b.len, &used, &err), 0);
	CHECK_EQ_INT(pw_ewah_apply(&e, &bs, 0, &err), 0);
	CHECK(pw_bitset_get(&bs, 192));
	CHECK_EQ_INT(pw_bitset_count(&bs), 1);
	pw_bitset_free(&bs);

	/* bits past the end of the destination */
	CHECK_EQ_INT(pw_bitset_init(&bs, 100), 0);
	pw_buf_reset(&b);
	w[0] = rlw(1, 2, 0);
	ewah(&b, 128, w, 1);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, b.len, &used, &err), 0);
	CHECK_EQ_INT(pw_ewah_apply(&e, &bs, 0, &err), PW_ECORRUPT);
	memset(bs.w, 0, bs.nwords * 8);
	pw_buf_reset(&b);
	w[0] = rlw(0, 1, 1);
	w[1] = (uint64_t)1 << 40; /* bit 104 */
	ewah(&b, 105, w, 2);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, b.len, &used, &err), 0);
	CHECK_EQ_INT(pw_ewah_apply(&e, &bs, 0, &err), PW_ECORRUPT);
	memset(bs.w, 0, bs.nwords * 8);
	pw_buf_reset(&b);
	w[0] = rlw(0, 0x7fffffff, 0);
	ewah(&b, 64, w, 1);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, b.len, &used, &err), 0);
	CHECK_EQ_INT(pw_ewah_apply(&e, &bs, 0, &err), PW_ECORRUPT);
	/* literal count beyond the stored words */
	pw_buf_reset(&b);
	w[0] = rlw(0, 0, 5);
	w[1] = 1;
	ewah(&b, 64, w, 2);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, b.len, &used, &err), 0);
	CHECK_EQ_INT(pw_ewah_apply(&e, &bs, 0, &err), PW_ECORRUPT);
	/* word count beyond the buffer, truncated header */
	pw_buf_reset(&b);
	put32(&b, 64);
	put32(&b, 0x40000000);
	put64(&b, 0);
	put32(&b, 0);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, b.len, &used, &err), PW_ECORRUPT);
	CHECK_EQ_INT(pw_ewah_parse(&e, (uint8_t *)b.data, 7, &used, &err), PW_ECORRUPT);
	pw_bitset_free(&bs);
	pw_buf_free(&b);
}

/* A file for 70 objects: 0..9 commits, 10..29 trees, 30..68 blobs, 69 a
 * tag; entries for the commits at idx positions 3 (plain) and 5 (XOR 1). */
static void build(struct pw_buf *b, const struct pw_hash_algo *algo, uint16_t flags,
                  const uint8_t *cksum)
{
	uint64_t commits[2] = {0x3ff, 0}, trees[2] = {0xfffffull << 10, 0};
	uint64_t blobs[2] = {~0ull << 30, 0x1f}, tags[2] = {0, 0x20};
	uint64_t e1[2] = {0x7, 0x1}, e2[2] = {0x8, 0x1};
	uint8_t hdr[2];
	uint32_t i;

	pw_buf_reset(b);
	pw_buf_add(b, "BITM", 4);
	hdr[0] = 0;
	hdr[1] = 1;
	pw_buf_add(b, hdr, 2);
	hdr[0] = (uint8_t)(flags >> 8);
	hdr[1] = (uint8_t)flags;
	pw_buf_add(b, hdr, 2);
	put32(b, 2);
	pw_buf_add(b, cksum, algo->rawsz);
	ewah_lit(b, 70, commits, 2);
	ewah_lit(b, 70, trees, 2);
	ewah_lit(b, 70, blobs, 2);
	ewah_lit(b, 70, tags, 2);
	put32(b, 3);
	pw_buf_add(b, "\0\0", 2);
	ewah_lit(b, 70, e1, 2);
	put32(b, 5);
	pw_buf_add(b, "\1\0", 2);
	ewah_lit(b, 70, e2, 2);
	if (flags & PW_BITMAP_OPT_HASH_CACHE)
		for (i = 0; i < 70; i++)
			put32(b, i * 7);
	if (flags & PW_BITMAP_OPT_LOOKUP_TABLE)
		for (i = 0; i < 2 * 16; i++)
			pw_buf_add(b, "\0", 1);
	for (i = 0; i < algo->rawsz; i++)
		pw_buf_add(b, "\x55", 1);
}

static void test_file(const struct pw_hash_algo *algo)
{
	struct pw_buf b = PW_BUF_INIT, c = PW_BUF_INIT;
	struct pw_bitmap *bm;
	struct pw_bitset dst, tmp;
	struct pw_error err = {0};
	uint8_t cksum[PW_MAX_RAWSZ], other[PW_MAX_RAWSZ];
	uint32_t entry;
	size_t cut;

	memset(cksum, 0xab, sizeof(cksum));
	memset(other, 0xcd, sizeof(other));
	build(&b, algo, PW_BITMAP_OPT_FULL_DAG, cksum);
	CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, cksum, &err), 0);
	if (!bm)
		return;
	CHECK_EQ_INT(bm->nr_entries, 2);
	CHECK_EQ_INT(pw_bitmap_type(bm, 0), 1);
	CHECK_EQ_INT(pw_bitmap_type(bm, 10), 2);
	CHECK_EQ_INT(pw_bitmap_type(bm, 68), 3);
	CHECK_EQ_INT(pw_bitmap_type(bm, 69), 4);
	CHECK(pw_bitmap_find(bm, 5, &entry) && entry == 1);
	CHECK(!pw_bitmap_find(bm, 4, &entry));
	pw_bitset_init(&dst, 70);
	pw_bitset_init(&tmp, 70);
	/* entry 1 is e2 ^ e1 = {0, 1, 2, 3}, bit 64 cancelled */
	CHECK_EQ_INT(pw_bitmap_get(bm, 1, &dst, &tmp, &err), 0);
	CHECK_EQ_INT(dst.w[0], 0xf);
	CHECK_EQ_INT(dst.w[1], 0);
	CHECK_EQ_INT(pw_bitmap_get(bm, 0, &dst, &tmp, &err), 0);
	CHECK_EQ_INT(dst.w[1], 1);
	pw_bitset_free(&dst);
	pw_bitset_free(&tmp);
	pw_bitmap_free(bm);

	/* extensions are found from the end */
	build(&b, algo,
	      PW_BITMAP_OPT_FULL_DAG | PW_BITMAP_OPT_HASH_CACHE | PW_BITMAP_OPT_LOOKUP_TABLE,
	      cksum);
	CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, NULL, &err), 0);
	CHECK(bm && bm->hashes && pw_get_be32(bm->hashes + 4 * 69) == 69 * 7);
	pw_bitmap_free(bm);

	/* another pack's bitmap, unknown version or flags */
	build(&b, algo, PW_BITMAP_OPT_FULL_DAG, cksum);
	CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, other, &err),
	             PW_EMISMATCH);
	CHECK(!bm);
	b.data[5] = 2;
	CHECK(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, NULL, &err) < 0);
	build(&b, algo, 0, cksum);
	CHECK(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, NULL, &err) < 0);
	build(&b, algo, PW_BITMAP_OPT_FULL_DAG | 0x100, cksum);
	CHECK(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, NULL, &err) < 0);
	/* more objects than the type bitmaps cover, fewer than they set */
	build(&b, algo, PW_BITMAP_OPT_FULL_DAG, cksum);
	CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 71, NULL, &err),
	             PW_ECORRUPT);
	CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 69, NULL, &err),
	             PW_ECORRUPT);
	/* hash cache flag without the room for it */
	b.data[7] |= PW_BITMAP_OPT_HASH_CACHE;
	CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, NULL, &err),
	             PW_ECORRUPT);
	/* every truncation fails cleanly */
	build(&b, algo, PW_BITMAP_OPT_FULL_DAG, cksum);
	for (cut = 0; cut + algo->rawsz < b.len; cut++) {
		pw_buf_reset(&c);
		pw_buf_add(&c, b.data, cut);
		CHECK(pw_bitmap_parse(&bm, (uint8_t *)c.data, c.len, algo, 70, NULL, &err) < 0);
	}
	/* an XOR offset reaching before the first entry, an object out of range */
	{
		size_t e2 = 12 + algo->rawsz + 4 * (8 + 3 * 8 + 4) + 6 + 8 + 3 * 8 + 4;

		CHECK_EQ_INT(pw_get_be32((uint8_t *)b.data + e2), 5);
		b.data[e2 + 4] = 2;
		CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, NULL, &err),
		             PW_ECORRUPT);
		b.data[e2 + 4] = 1;
		b.data[e2 + 3] = 70;
		CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)b.data, b.len, algo, 70, NULL, &err),
		             PW_ECORRUPT);
	}
	pw_buf_free(&b);
	pw_buf_free(&c);
}

int main(void)
{
	test_ewah();
	test_file(&pw_hash_sha1);
	test_file(&pw_hash_sha256);
	return pw_test_done();
}
