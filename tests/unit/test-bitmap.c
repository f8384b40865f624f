/* Reachability bitmaps: EWAH decoding and the .bitmap file reader, on files
 * built here by hand, well-formed and damaged, for both hash sizes; and the
 * writer, on a history built in a temporary odb, read back by the reader. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pack/bitmap.h"
#include "odb/entry.h"
#include "packwire/buf.h"
#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/pack-write.h"
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

/* ---- the writer ---------------------------------------------------------- */

#define NCOMMITS 300

static int oid_cmp_q(const void *a, const void *b)
{
	return pw_oid_cmp(a, b);
}

/* A line of NCOMMITS commits, each with its own tree and blob plus one blob
 * they all share: commit i reaches 3 (i + 1) + 1 objects, i + 1 of them
 * commits. The writer's file must say so for every entry it stores. */
static void test_write(const struct pw_hash_algo *algo)
{
	char dir[] = "/tmp/pw-test-bitmap-XXXXXX", hex[PW_MAX_HEXSZ + 1], path[256];
	struct pw_oid commits[NCOMMITS], all[3 * NCOMMITS + 1], common, tip,
	        sorted[3 * NCOMMITS + 1];
	struct pw_odb *odb = NULL;
	struct pw_pack_writer *w = NULL;
	struct pw_error err = {0};
	struct pw_buf buf = PW_BUF_INIT, file = PW_BUF_INIT;
	struct pw_bitmap *bm = NULL;
	struct pw_bitset set = {0}, tmp = {0};
	size_t nall = 0, i, checked = 0;
	uint8_t sum[PW_MAX_RAWSZ];

	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(pw_odb_open(&odb, dir, algo, &err), 0);
	CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_BLOB, "shared\n", 7, &common), 0);
	all[nall++] = common;
	for (i = 0; i < NCOMMITS; i++) {
		struct pw_oid blob, tree;
		char text[64];
		int n = snprintf(text, sizeof(text), "content %zu\n", i);

		CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_BLOB, text, (size_t)n, &blob), 0);
		pw_buf_reset(&buf);
		pw_buf_add(&buf, "100644 a\0", 9);
		pw_buf_add(&buf, blob.id, algo->rawsz);
		pw_buf_add(&buf, "100644 s\0", 9);
		pw_buf_add(&buf, common.id, algo->rawsz);
		CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_TREE, buf.data, buf.len, &tree), 0);
		pw_buf_reset(&buf);
		pw_buf_addf(&buf, "tree %s\n", pw_oid_to_hex(&tree, hex));
		if (i)
			pw_buf_addf(&buf, "parent %s\n", pw_oid_to_hex(&commits[i - 1], hex));
		pw_buf_addf(&buf, "author A <a@x> %zu +0000\ncommitter A <a@x> %zu +0000\n\nc%zu\n",
		            1700000000 + i, 1700000000 + i, i);
		CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_COMMIT, buf.data, buf.len, &commits[i]),
		             0);
		all[nall++] = blob;
		all[nall++] = tree;
		all[nall++] = commits[i];
	}
	tip = commits[NCOMMITS - 1];

	CHECK_EQ_INT(pw_pack_writer_new(&w, odb, NULL), 0);
	for (i = 0; i < nall; i++)
		CHECK_EQ_INT(pw_pack_writer_add(w, &all[i], PW_OBJ_NONE, "a", 1), 0);
	snprintf(path, sizeof(path), "%s/pack", dir);
	CHECK_EQ_INT(pw_pack_writer_write_files(w, path, 2, hex), 0);
	CHECK_EQ_INT(pw_pack_writer_write_bitmap_file(w, path, &tip, 1), 0);
	snprintf(path, sizeof(path), "%s/pack-%s.bitmap", dir, hex);
	CHECK_EQ_INT(pw_fs_read_file(path, &file, 0, &err), 0);
	for (i = 0; i < algo->rawsz; i++) {
		char h[3] = {hex[2 * i], hex[2 * i + 1], 0};

		sum[i] = (uint8_t)strtoul(h, NULL, 16);
	}
	CHECK_EQ_INT(pw_bitmap_parse(&bm, (uint8_t *)file.data, file.len, algo, (uint32_t)nall, sum,
	                             &err),
	             0);
	memcpy(sorted, all, sizeof(all));
	qsort(sorted, nall, sizeof(sorted[0]), oid_cmp_q);
	if (bm && !pw_bitset_init(&set, (uint32_t)nall) && !pw_bitset_init(&tmp, (uint32_t)nall)) {
		uint32_t e, k, ncommits_seen = 0;

		CHECK(bm->flags == (PW_BITMAP_OPT_FULL_DAG | PW_BITMAP_OPT_HASH_CACHE));
		CHECK(bm->hashes != NULL);
		/* the newest commits all, then spaced: fewer entries than commits */
		CHECK(bm->nr_entries > 100 && bm->nr_entries < NCOMMITS);
		CHECK_EQ_INT(pw_bitset_count(&bm->types[0]), NCOMMITS);
		CHECK_EQ_INT(pw_bitset_count(&bm->types[1]), NCOMMITS);
		CHECK_EQ_INT(pw_bitset_count(&bm->types[2]), NCOMMITS + 1);
		CHECK_EQ_INT(pw_bitset_count(&bm->types[3]), 0);
		for (e = 0; e < bm->nr_entries; e++) {
			const struct pw_oid *c = &sorted[bm->entries[e].idx_pos];

			for (k = 0; k < NCOMMITS && !pw_oid_equal(&commits[k], c); k++)
				;
			CHECK(k < NCOMMITS);
			memset(set.w, 0, set.nwords * sizeof(*set.w));
			CHECK_EQ_INT(pw_bitmap_get(bm, e, &set, &tmp, &err), 0);
			if (pw_bitset_count(&set) == 3 * (k + 1) + 1)
				checked++;
			/* its commits are exactly commits 0..k */
			for (i = 0; i < set.nwords; i++)
				ncommits_seen += (uint32_t)__builtin_popcountll(set.w[i] &
				                                                bm->types[0].w[i]);
			ncommits_seen -= k + 1;
		}
		CHECK_EQ_INT(checked, bm->nr_entries);
		CHECK_EQ_INT(ncommits_seen, 0);
		/* the tip has its own bitmap */
		for (k = 0; k < nall && !pw_oid_equal(&sorted[k], &tip); k++)
			;
		CHECK(pw_bitmap_find(bm, k, &e));
	}
	/* a pack missing a parent gets no bitmap */
	pw_pack_writer_free(w);
	CHECK_EQ_INT(pw_pack_writer_new(&w, odb, NULL), 0);
	CHECK_EQ_INT(pw_pack_writer_add(w, &tip, PW_OBJ_COMMIT, NULL, 0), 0);
	snprintf(path, sizeof(path), "%s/open", dir);
	CHECK_EQ_INT(pw_pack_writer_write_files(w, path, 2, hex), 0);
	CHECK_EQ_INT(pw_pack_writer_write_bitmap_file(w, path, &tip, 1), PW_ENOTFOUND);
	snprintf(path, sizeof(path), "%s/open-%s.bitmap", dir, hex);
	CHECK(access(path, F_OK) != 0);

	pw_bitset_free(&set);
	pw_bitset_free(&tmp);
	pw_bitmap_free(bm);
	pw_pack_writer_free(w);
	pw_odb_free(odb);
	pw_buf_free(&buf);
	pw_buf_free(&file);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	CHECK_EQ_INT(system(path), 0);
}

int main(void)
{
	test_ewah();
	test_file(&pw_hash_sha1);
	test_file(&pw_hash_sha256);
	test_write(&pw_hash_sha1);
	test_write(&pw_hash_sha256);
	return pw_test_done();
}
