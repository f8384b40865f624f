/* SHA-1 collision detection: the attack vectors are detected, everything
 * else hashes as plain SHA-1 (OpenSSL), in every implementation this CPU
 * has, with the input split every way across update calls. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <stdlib.h>
#include <unistd.h>

#include "hash/sha1dc-priv.h"
#include "packwire/fs.h"
#include "packwire/packwire.h"
#include "test.h"

struct vec {
	const char *file;
	int detected;
	const char *sha1; /* plain SHA-1 */
};

/* tests/data/sha1dc: the two SHA-mbles files, the reduced-round collision,
 * and the first 320 bytes of each SHAttered PDF (its two attack blocks end
 * there, so the prefixes already collide). */
static const struct vec small[] = {
        {"shattered-1-320.bin", 1, "f92d74e3874587aaf443d1db961d4e26dde13e9c"},
        {"shattered-2-320.bin", 1, "f92d74e3874587aaf443d1db961d4e26dde13e9c"},
        {"sha-mbles-1.bin", 1, "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0"},
        {"sha-mbles-2.bin", 1, "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0"},
        {"sha1_reducedsha_coll.bin", 0, "a56374e1cf4c3746499bc7c0acb39498ad2ee185"},
};

/* ../shared/sha1dc/vectors, when it is there: the whole files. */
static const struct vec full[] = {
        {"shattered-1.pdf", 1, "38762cf7f55934b34d179ae6a4c80cadccbb7f0a"},
        {"shattered-2.pdf", 1, "38762cf7f55934b34d179ae6a4c80cadccbb7f0a"},
        {"sha-mbles-1.bin", 1, "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0"},
        {"sha-mbles-2.bin", 1, "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0"},
        {"sha1_reducedsha_coll.bin", 0, "a56374e1cf4c3746499bc7c0acb39498ad2ee185"},
};

static uint8_t *read_file(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	uint8_t *data = NULL;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "rb")))
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (data = malloc((size_t)n + 1)) && fread(data, 1, (size_t)n, f) == (size_t)n) {
		*len = (size_t)n;
	} else {
		free(data);
		data = NULL;
	}
	fclose(f);
	return data;
}

static void hex20(const uint8_t *d, char *out)
{
	int i;

	for (i = 0; i < 20; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

/* Hash data in pieces cut at the offsets in cuts (ascending, < len). */
static int dc_hash(const uint8_t *data, size_t len, const size_t *cuts, size_t ncuts,
                   uint8_t out[20])
{
	struct pw_sha1dc c;
	size_t at = 0, i;

	pw_sha1dc_init(&c);
	for (i = 0; i < ncuts; i++) {
		pw_sha1dc_update(&c, data + at, cuts[i] - at);
		at = cuts[i];
	}
	pw_sha1dc_update(&c, data + at, len - at);
	return pw_sha1dc_final(&c, out);
}

/* The one-shot form over a and b equals the stream, at every cut. */
static void check_oneshot(const uint8_t *data, size_t len, int detected, const char *sha1)
{
	uint8_t md[20];
	char hex[41];
	size_t cut, bad = 0;

	for (cut = 0; cut <= len; cut += cut < 130 || len - cut < 130 ? 1 : 61) {
		int got = pw_sha1dc_oneshot(data, cut, data + cut, len - cut, md);

		hex20(md, hex);
		if (got != detected || strcmp(hex, sha1))
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
}

static void check_vector(const uint8_t *data, size_t len, const struct vec *v, int splits)
{
	uint8_t md[20];
	char hex[41];
	size_t s, cuts[2];

	CHECK_EQ_INT(dc_hash(data, len, NULL, 0, md), v->detected);
	hex20(md, hex);
	CHECK_STR(hex, v->sha1);
	if (!splits)
		return;
	/* one cut at every offset, two cuts around every block edge */
	for (s = 0; s <= len; s++) {
		int got;

		cuts[0] = s;
		got = dc_hash(data, len, cuts, 1, md);
		hex20(md, hex);
		if (got != v->detected || strcmp(hex, v->sha1)) {
			CHECK_EQ_INT(got, v->detected);
			CHECK_STR(hex, v->sha1);
			fprintf(stderr, "  %s split at %zu\n", v->file, s);
			return;
		}
	}
	for (s = 1; s + 3 < len; s += 61) {
		cuts[0] = s;
		cuts[1] = s + 3;
		CHECK_EQ_INT(dc_hash(data, len, cuts, 2, md), v->detected);
	}
	pw_test_passed++;
}

static void test_vectors(const char *dir, const struct vec *vs, size_t n, int splits)
{
	size_t i;

	for (i = 0; i < n; i++) {
		size_t len;
		uint8_t *data = read_file(dir, vs[i].file, &len);

		if (!data) {
			CHECK(!"vector missing");
			fprintf(stderr, "  %s/%s\n", dir, vs[i].file);
			continue;
		}
		check_vector(data, len, &vs[i], splits);
		if (splits)
			check_oneshot(data, len, vs[i].detected, vs[i].sha1);
		free(data);
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint8_t rnd8(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)(rng >> 24);
}

/* Random inputs of 0..200 bytes and a larger one: plain SHA-1, undetected. */
static void test_plain(void)
{
	static uint8_t buf[1 << 20];
	uint8_t md[20], want[20];
	size_t len, i, bad = 0;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rnd8();
	for (len = 0; len <= 200; len++) {
		size_t cut = len / 3;

		SHA1(buf + len, len, want);
		if (dc_hash(buf + len, len, NULL, 0, md) || memcmp(md, want, 20))
			bad++;
		if (dc_hash(buf + len, len, &cut, 1, md) || memcmp(md, want, 20))
			bad++;
		if (pw_sha1dc_oneshot(buf + len, cut, buf + len + cut, len - cut, md) ||
		    memcmp(md, want, 20))
			bad++;
	}
	CHECK_EQ_INT(bad, 0);
	SHA1(buf, sizeof(buf), want);
	CHECK_EQ_INT(dc_hash(buf, sizeof(buf), NULL, 0, md), 0);
	CHECK(!memcmp(md, want, 20));
}

/* The vector kernels flag exactly the blocks and DVs the plain C one does,
 * on random blocks (a few in a hundred meet some DV's conditions) and on
 * the attack blocks, at every batch length. */
static void test_kernels_agree(void)
{
	static uint8_t buf[64 * 4096];
	pw_sha1dc_ubc_fn fns[2] = {pw_sha1dc__ubc_avx2(), pw_sha1dc__ubc_avx512()};
	size_t i, k, flagged_blocks = 0;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rnd8();
	for (k = 0; k < 2; k++) {
		size_t batch, at, mism = 0;

		if (!fns[k]) {
			printf("# %s kernel: not on this CPU, skipped\n", k ? "avx512" : "avx2");
			continue;
		}
		batch = pw_sha1dc__ubc_batch(fns[k]);
		for (at = 0; at + batch <= 4096; at += batch) {
			size_t n = 1 + (at / batch) % batch; /* every length 1..batch */
			uint32_t dv1[PW_SHA1DC_BATCH], dv2[PW_SHA1DC_BATCH];
			const uint8_t *rows[PW_SHA1DC_BATCH];
			uint32_t f1, f2;
			size_t r;

			/* rows in order, and every third batch scattered */
			for (r = 0; r < n; r++)
				rows[r] = buf + 64 * (at % 3 ? at + r : (at + 37 * r) % 4096);
			f1 = pw_sha1dc__ubc_generic(rows, n, dv1);
			f2 = fns[k](rows, n, dv2);
			uint32_t m;

			if (f1 != f2)
				mism++;
			for (m = f1 & f2; m; m &= m - 1)
				if (dv1[__builtin_ctz(m)] != dv2[__builtin_ctz(m)])
					mism++;
			if (!k)
				flagged_blocks += (size_t)__builtin_popcount(f1);
		}
		CHECK_EQ_INT(mism, 0);
	}
	/* the random data did exercise the flagged path */
	printf("# %zu of 4096 random blocks met some DV's conditions\n", flagged_blocks);
}

/* A fused kernel against the generic conditions and a block-by-block
 * compression: the same flagged blocks and DVs, the same chaining values,
 * and for each flagged block the output it keeps and the same check.
 * streams 1: rows 0..15 are one message; 2: rows 0..7 and 8..15 two. */
static void test_fused_agrees(int streams)
{
	static uint8_t buf[64 * 4096];
	pw_sha1dc_fused_fn fused = pw_sha1dc__fused_avx512();
	pw_sha1dc_fused2_fn fused2 = pw_sha1dc__fused2_avx512();
	uint32_t ihv[2][5], ref[2][5];
	size_t i, at, mism = 0, checked = 0;

	if (!fused || !fused2) {
		printf("# fused avx512+sha kernels: not on this CPU, skipped\n");
		return;
	}
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = rnd8();
	for (i = 0; i < 2; i++) {
		static const uint32_t iv[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
		                               0xc3d2e1f0};

		memcpy(ihv[i], iv, sizeof(iv));
		ihv[i][0] += (uint32_t)i; /* two different chains */
		memcpy(ref[i], ihv[i], sizeof(iv));
	}
	for (at = 0; at + PW_SHA1DC_BATCH <= 4096; at += PW_SHA1DC_BATCH) {
		uint32_t dv1[PW_SHA1DC_BATCH], dv2[PW_SHA1DC_BATCH], f1, f2, m;
		struct pw_sha1dc_saved saved[PW_SHA1DC_BATCH];
		uint32_t before[PW_SHA1DC_BATCH][5], after[PW_SHA1DC_BATCH][5];
		const uint8_t *rows[PW_SHA1DC_BATCH];
		size_t r;

		/* rows in order, and every third batch scattered */
		for (r = 0; r < PW_SHA1DC_BATCH; r++)
			rows[r] = buf + 64 * (at % 3 ? at + r : (at + 37 * r) % 4096);
		f1 = pw_sha1dc__ubc_generic(rows, PW_SHA1DC_BATCH, dv1);
		for (r = 0; r < PW_SHA1DC_BATCH; r++) {
			uint32_t *h = ref[streams == 2 && r >= 8];

			memcpy(before[r], h, sizeof(before[r]));
			pw_sha1dc__check(h, rows[r], 0);
			memcpy(after[r], h, sizeof(after[r]));
		}
		if (streams == 2)
			f2 = fused2(ihv[0], ihv[1], rows, dv2, saved);
		else
			f2 = fused(ihv[0], rows, dv2, saved);
		mism += f1 != f2 || memcmp(ihv, ref, sizeof(ref));
		for (m = f1 & f2; m; m &= m - 1) {
			int l = __builtin_ctz(m);
			uint32_t t[5];

			memcpy(t, before[l], sizeof(t));
			mism += dv1[l] != dv2[l] || memcmp(saved[l].out, after[l], sizeof(t));
			mism += pw_sha1dc__check_saved(&saved[l], dv2[l]) !=
			        pw_sha1dc__check(t, rows[l], dv1[l]);
			checked++;
		}
	}
	CHECK_EQ_INT(mism, 0);
	CHECK(checked > 0);
}

/* Two messages at once give what each gives alone: every pairing of the
 * vectors with random messages of many lengths, each on either side, split
 * into a and b at several places. */
static void test_oneshot2(const char *dir, const struct vec *vs, size_t n)
{
	static uint8_t other[70000];
	static const size_t lens[] = {0,   1,   55,  56,  63,   64,   119,
	                              500, 511, 512, 513, 1000, 4096, 69999};
	size_t i, k, side, mism = 0;

	for (i = 0; i < sizeof(other); i++)
		other[i] = rnd8();
	for (i = 0; i <= n; i++) {
		size_t len = 0;
		uint8_t *data = i < n ? read_file(dir, vs[i].file, &len) : NULL, want[20],
		        got[2][20];
		int det = i < n && vs[i].detected;

		if (i < n && !data)
			continue;
		if (!data) /* and one random message against the others */
			data = other + 7, len = 40000;
		for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
			for (side = 0; side < 2; side++) {
				struct pw_sha1dc_msg m[2];
				uint8_t owant[20];
				size_t cut = (k * 37) % (len + 1);
				int r, ow = pw_sha1dc_oneshot(other, lens[k], NULL, 0, owant);
				int w = pw_sha1dc_oneshot(data, len, NULL, 0, want);

				m[side].a = data;
				m[side].alen = cut;
				m[side].b = data + cut;
				m[side].blen = len - cut;
				m[!side].a = "";
				m[!side].alen = 0;
				m[!side].b = other;
				m[!side].blen = lens[k];
				r = pw_sha1dc_oneshot2(m, got);
				mism += memcmp(got[side], want, 20) ||
				        memcmp(got[!side], owant, 20);
				mism += (r >> side & 1) != w || w != det ||
				        (r >> !side & 1) != ow || ow;
			}
		if (i < n)
			free(data);
	}
	CHECK_EQ_INT(mism, 0);
}

static void test_public_api(const char *dir)
{
	size_t len;
	uint8_t *data = read_file(dir, "sha-mbles-1.bin", &len);
	struct pw_hash_ctx ctx;
	struct pw_oid oid;
	struct pw_error err;
	uint8_t raw[20];
	char hex[PW_MAX_HEXSZ + 1];

	if (!data) {
		CHECK(!"sha-mbles-1.bin missing");
		return;
	}
	CHECK_EQ_INT(pw_hash_buf(&pw_hash_sha1, data, len, &oid), PW_ECOLLISION);
	CHECK_STR(pw_oid_to_hex(&oid, hex), "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0");
	CHECK_EQ_INT(pw_hash_collision_error(&err, &oid), PW_ECOLLISION);
	CHECK_STR(err.msg, "SHA-1 appears to be part of a collision attack: "
	                   "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0");
	CHECK_EQ_INT(err.code, PW_ECOLLISION);
	/* behind an object header the attack blocks are out of place: no attack */
	CHECK_EQ_INT(pw_object_hash(&pw_hash_sha1, PW_OBJ_BLOB, data, len, &oid), 0);
	/* SHA-256 and checksums do not detect */
	CHECK_EQ_INT(pw_hash_buf(&pw_hash_sha256, data, len, &oid), 0);
	pw_hash_init_checksum(&ctx, &pw_hash_sha1);
	pw_hash_update(&ctx, data, len);
	pw_hash_final_checksum(&ctx, raw);
	hex20(raw, hex);
	CHECK_STR(hex, "8ac60ba76f1999a1ab70223f225aefdc78d4ddc0");
	/* a detecting context reused after init is clean again */
	pw_hash_init(&ctx, &pw_hash_sha1);
	pw_hash_update(&ctx, data, len);
	CHECK_EQ_INT(pw_hash_final(&ctx, &oid), PW_ECOLLISION);
	pw_hash_init(&ctx, &pw_hash_sha1);
	pw_hash_update(&ctx, "abc", 3);
	CHECK_EQ_INT(pw_hash_final(&ctx, &oid), 0);
	CHECK_STR(pw_oid_to_hex(&oid, hex), "a9993e364706816aba3e25717850c26c9cd0d89d");
	free(data);
}

/* The object database through the test seam: a write of a flagged object
 * is refused and leaves no file, and a verified read of one that is already
 * there is refused too. */
static const uint8_t *flag_target;

static int flag(const uint8_t digest[20])
{
	return flag_target && !memcmp(digest, flag_target, 20);
}

static void test_odb_refusals(void)
{
	char dir[] = "/tmp/pw-test-sha1dc-XXXXXX", objs[64], path[160];
	struct pw_error err = {0};
	struct pw_odb *odb = NULL;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_oid oid, seen;
	char hex[PW_MAX_HEXSZ + 1];
	int type;

	if (!mkdtemp(dir)) {
		CHECK(!"mkdtemp");
		return;
	}
	snprintf(objs, sizeof(objs), "%s/objects", dir);
	CHECK_EQ_INT(pw_fs_mkdir_p(objs, &err), 0);
	CHECK_EQ_INT(pw_odb_open(&odb, objs, &pw_hash_sha1, &err), 0);
	if (!odb)
		return;
	CHECK_EQ_INT(pw_object_hash(&pw_hash_sha1, PW_OBJ_BLOB, "flagged\n", 8, &oid), 0);
	pw_oid_to_hex(&oid, hex);
	snprintf(path, sizeof(path), "%s/%.2s/%s", objs, hex, hex + 2);
	pw_sha1dc__test_collision = flag;
	flag_target = oid.id;
	CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_BLOB, "flagged\n", 8, &seen), PW_ECOLLISION);
	CHECK(strstr(pw_odb_error(odb)->msg, "SHA-1 appears to be part of a collision attack: ") !=
	      NULL);
	CHECK(access(path, F_OK) != 0);
	/* written while nothing was flagged, then read back with verification */
	flag_target = NULL;
	CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_BLOB, "flagged\n", 8, &seen), 0);
	CHECK(access(path, F_OK) == 0);
	flag_target = oid.id;
	pw_odb_set_verify(odb, 1);
	CHECK_EQ_INT(pw_odb_read(odb, &oid, &type, &out), PW_ECOLLISION);
	pw_odb_set_verify(odb, 0);
	CHECK_EQ_INT(pw_odb_read(odb, &oid, &type, &out), 0);
	pw_sha1dc__test_collision = NULL;
	flag_target = NULL;
	pw_odb_free(odb);
	pw_buf_free(&out);
	unlink(path);
	path[strlen(objs) + 3] = 0;
	rmdir(path);
	rmdir(objs);
	rmdir(dir);
}

/* With the argument "shared": only the whole attack files of
 * ../shared/sha1dc/vectors, in every implementation; Skipped (77) when the
 * folder is missing. Without it: everything else, which needs nothing
 * outside the repository. */
static int shared_part(void)
{
	static const enum pw_sha1dc_impl impls[] = {PW_SHA1DC_GENERIC, PW_SHA1DC_AVX2,
	                                            PW_SHA1DC_AVX512, PW_SHA1DC_AVX512_SHA};
	char shared[4096], path[4200];
	FILE *probe;
	size_t i;

	snprintf(shared, sizeof(shared), "%s/sha1dc/vectors", PW_SHARED_DIR);
	snprintf(path, sizeof(path), "%s/shattered-1.pdf", shared);
	if (!(probe = fopen(path, "rb"))) {
		printf("skipped: %s is missing\n", shared);
		return 77;
	}
	fclose(probe);
	for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++) {
		if (pw_sha1dc_select(impls[i]))
			continue;
		printf("# implementation %s\n", pw_sha1dc_impl_name());
		test_vectors(shared, full, sizeof(full) / sizeof(full[0]), 0);
		test_oneshot2(shared, full, sizeof(full) / sizeof(full[0]));
	}
	pw_sha1dc__check_software(1);
	test_vectors(shared, full, sizeof(full) / sizeof(full[0]), 0);
	pw_sha1dc__check_software(0);
	return pw_test_done();
}

int main(int argc, char **argv)
{
	static const enum pw_sha1dc_impl impls[] = {PW_SHA1DC_GENERIC, PW_SHA1DC_AVX2,
	                                            PW_SHA1DC_AVX512, PW_SHA1DC_AVX512_SHA};
	const char *dir = PW_SOURCE_DIR "/tests/data/sha1dc";
	size_t i;

	if (argc > 1 && !strcmp(argv[1], "shared"))
		return shared_part();
	for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++) {
		if (pw_sha1dc_select(impls[i])) {
			printf("# implementation %d: not on this CPU, skipped\n", (int)impls[i]);
			continue;
		}
		printf("# implementation %s\n", pw_sha1dc_impl_name());
		test_vectors(dir, small, sizeof(small) / sizeof(small[0]), 1);
		test_oneshot2(dir, small, sizeof(small) / sizeof(small[0]));
		test_plain();
	}
	/* the checks of flagged blocks in software only, as on a CPU without
	 * SHA instructions (above they used them where this CPU has them) */
	pw_sha1dc__check_software(1);
	printf("# flagged blocks checked in software\n");
	test_vectors(dir, small, sizeof(small) / sizeof(small[0]), 1);
	test_plain();
	pw_sha1dc__check_software(0);
	pw_sha1dc_select(PW_SHA1DC_AUTO);
	test_kernels_agree();
	test_fused_agrees(1);
	test_fused_agrees(2);
	test_public_api(dir);
	test_odb_refusals();
	return pw_test_done();
}
