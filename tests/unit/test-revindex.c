/* A pack's reverse index, both ways of building it (keys that carry the idx
 * position, and bare offsets searched back: what packs of 4 GiB or more
 * take), on packs written here with enough objects that the sort takes more
 * than one pass, for both hash sizes: offsets ascending, every idx entry
 * once, the trailer as sentinel, the two ways equal. And the huge-page
 * allocator on its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "odb/idx.h"
#include "odb/pack.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"
#include "util/bigmem.h"
#include "test.h"

#define NOBJ 12000

static void check_rev(const struct pw_pack *p, const char *how)
{
	uint8_t *seen = calloc(p->nr ? p->nr : 1, 1);
	uint32_t i, bad_order = 0, bad_pos = 0, bad_off = 0;

	if (!seen)
		return;
	for (i = 0; i < p->nr; i++) {
		uint64_t o = 0;
		struct pw_error e = {0};

		if (i && pw_pack_pos_offset(p, i) <= pw_pack_pos_offset(p, i - 1))
			bad_order++;
		if (p->rev_pos[i] >= p->nr || seen[p->rev_pos[i]]++) {
			bad_pos++;
			continue;
		}
		if (pw_idx_nth_offset(p->idx, p->rev_pos[i], &o, &e) ||
		    o != pw_pack_pos_offset(p, i))
			bad_off++;
		if (p->pack_pos[p->rev_pos[i]] != i)
			bad_pos++;
	}
	if (bad_order || bad_pos || bad_off)
		fprintf(stderr, "%s: %u out of order, %u bad positions, %u bad offsets\n", how,
		        bad_order, bad_pos, bad_off);
	CHECK_EQ_INT(bad_order + bad_pos + bad_off, 0);
	CHECK(pw_pack_pos_offset(p, 0) == 12);
	CHECK(pw_pack_pos_offset(p, p->nr) == p->size - p->idx->algo->rawsz);
	CHECK(p->rev_pos[p->nr] == UINT32_MAX);
	CHECK(p->pack_pos[p->nr] == UINT32_MAX);
	free(seen);
}

static void test_pack(const struct pw_hash_algo *algo)
{
	char dir[] = "/tmp/pw-test-revindex-XXXXXX", path[256], hex[PW_MAX_HEXSZ + 1], cmd[300];
	struct pw_odb *odb = NULL;
	struct pw_pack_writer *w = NULL;
	struct pw_pack *p = NULL;
	struct pw_error err = {0};
	uint64_t *offs = NULL;
	uint32_t *pos = NULL;
	size_t i;

	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(pw_odb_open(&odb, dir, algo, &err), 0);
	CHECK_EQ_INT(pw_pack_writer_new(&w, odb, NULL), 0);
	for (i = 0; odb && w && i < NOBJ; i++) {
		char text[64];
		struct pw_oid oid;
		int n = snprintf(text, sizeof(text), "blob %zu %.*s\n", i, (int)(i % 40),
		                 "........................................");

		if (pw_odb_write_loose(odb, PW_OBJ_BLOB, text, (size_t)n, &oid) ||
		    pw_pack_writer_add(w, &oid, PW_OBJ_BLOB, NULL, 0)) {
			CHECK(0);
			break;
		}
	}
	snprintf(path, sizeof(path), "%s/pack", dir);
	CHECK_EQ_INT(pw_pack_writer_write_files(w, path, 2, hex), 0);
	snprintf(path, sizeof(path), "%s/pack-%s.idx", dir, hex);
	CHECK_EQ_INT(pw_pack_open(&p, path, algo, &err), 0);
	if (p) {
		CHECK_EQ_INT(p->nr, NOBJ);
		CHECK_EQ_INT(pw_pack_revindex(p, &err), 0);
		check_rev(p, "keys");
		offs = malloc((p->nr + 1) * sizeof(*offs));
		pos = malloc((p->nr + 1) * sizeof(*pos));
		CHECK(p->rev_off32 != NULL && p->rev_offsets == NULL); /* 32 bits below 4 GiB */
		if (offs && pos) {
			for (i = 0; i <= p->nr; i++)
				offs[i] = pw_pack_pos_offset(p, (uint32_t)i);
			memcpy(pos, p->rev_pos, (p->nr + 1) * sizeof(*pos));
		}
		pw_pack__revindex_drop(p);
		CHECK_EQ_INT(pw_pack__revindex_build(p, 1, &err), 0);
		check_rev(p, "wide");
		CHECK(p->rev_offsets != NULL && p->rev_off32 == NULL);
		CHECK(offs && !memcmp(offs, p->rev_offsets, (p->nr + 1) * sizeof(*offs)));
		CHECK(pos && !memcmp(pos, p->rev_pos, (p->nr + 1) * sizeof(*pos)));
		/* built once: a second call keeps the arrays */
		{
			uint32_t *before = p->rev_pos;

			CHECK_EQ_INT(pw_pack_revindex(p, &err), 0);
			CHECK(p->rev_pos == before);
		}
	}
	free(offs);
	free(pos);
	pw_pack_free(p);
	pw_pack_writer_free(w);
	pw_odb_free(odb);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ_INT(system(cmd), 0);
}

static void test_bigmem(void)
{
	size_t sizes[] = {0, 1, 4096, PW_BIGMEM_MIN - 1, PW_BIGMEM_MIN, PW_BIGMEM_MIN + (3 << 20)};
	size_t i, k;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint8_t *m = pw_bigmem_alloc(sizes[i]);

		CHECK(m != NULL);
		if (!m)
			continue;
		for (k = 0; k < sizes[i]; k += 4096)
			m[k] = (uint8_t)k;
		if (sizes[i])
			m[sizes[i] - 1] = 1;
		pw_bigmem_free(m, sizes[i]);
	}
	pw_bigmem_free(NULL, PW_BIGMEM_MIN);
	/* growing across the threshold, from mapping to larger mapping (moved
	 * or in place), and back keeps the first bytes */
	{
		size_t steps[] = {1000,
		                  PW_BIGMEM_MIN + 5,
		                  (size_t)5 << 20,
		                  (size_t)13 << 20,
		                  (size_t)24 << 20,
		                  (size_t)9 << 20,
		                  3000,
		                  10},
		       old = 0;
		uint8_t *m = NULL;
		int ok = 1;

		for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
			uint8_t *n = pw_bigmem_realloc(m, old, steps[i]);
			size_t keep = old < steps[i] ? old : steps[i];

			CHECK(n != NULL);
			if (!n)
				break;
			for (k = 0; k < keep; k++)
				ok &= n[k] == (uint8_t)(k * 7);
			for (k = 0; k < steps[i]; k++)
				n[k] = (uint8_t)(k * 7);
			m = n;
			old = steps[i];
		}
		CHECK(ok);
		pw_bigmem_free(m, old);
	}
}

int main(void)
{
	test_bigmem();
	test_pack(&pw_hash_sha1);
	test_pack(&pw_hash_sha256);
	return pw_test_done();
}
