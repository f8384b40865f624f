/* Delta creation: every delta must apply back to its target, be compact on
 * similar data, and respect the size bound. */
#include <stdlib.h>

#include "pack/delta-create.h"
#include "odb/delta.h"
#include "packwire/packwire.h"
#include "test.h"

static uint64_t rng_state = 0x1234567;

static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rnd();
}

/* Create, apply, compare; returns the delta length (or (size_t)-1). */
static size_t round_trip(const uint8_t *base, size_t blen, const uint8_t *target, size_t tlen)
{
	struct pw_buf delta = PW_BUF_INIT, res = PW_BUF_INIT;
	struct pw_error err = {0};
	size_t n = (size_t)-1;
	int rc;

	rc = pw_delta_create(base, blen, target, tlen, 0, &delta);
	CHECK_EQ_INT(rc, 0);
	if (!rc) {
		rc = pw_delta_apply(base, blen, (const uint8_t *)delta.data, delta.len, &res, &err);
		CHECK_EQ_INT(rc, 0);
		if (rc)
			fprintf(stderr, "apply: %s\n", err.msg);
		CHECK_EQ_INT(res.len, tlen);
		CHECK(res.len == tlen && (!tlen || !memcmp(res.data, target, tlen)));
		n = delta.len;
	}
	pw_buf_free(&delta);
	pw_buf_free(&res);
	return n;
}

static void test_edges(void)
{
	uint8_t a[4096], b[4096];
	size_t n;

	fill_random(a, sizeof(a));
	fill_random(b, sizeof(b));
	/* empty base, empty target, both empty */
	CHECK(round_trip(a, 0, b, 100) < 120);
	CHECK(round_trip(a, 100, b, 0) <= 4);
	CHECK(round_trip(a, 0, b, 0) <= 4);
	/* shorter than one block */
	round_trip(a, 10, a, 10);
	round_trip(a, 15, b, 17);
	/* identical: a handful of bytes */
	n = round_trip(a, sizeof(a), a, sizeof(a));
	CHECK(n < 16);
	/* totally different: about the target plus insert opcodes */
	n = round_trip(a, sizeof(a), b, sizeof(b));
	CHECK(n <= sizeof(b) + sizeof(b) / 127 + 8);
	/* target = base with a prefix and a suffix */
	memcpy(b + 100, a, 2000);
	n = round_trip(a, sizeof(a), b, 2300);
	CHECK(n < 100 + 200 + 40);
}

static void test_structured(void)
{
	/* Lines of text, edited in places, as source files are. */
	struct pw_buf base = PW_BUF_INIT, target = PW_BUF_INIT;
	size_t n;
	int i;

	for (i = 0; i < 3000; i++)
		pw_buf_addf(&base, "line %d: some text that repeats with number %d\n", i, i * 7);
	for (i = 0; i < 3000; i++) {
		if (i % 500 == 17)
			pw_buf_addf(&target, "a brand new line here %d\n", i);
		if (i % 700 == 3)
			continue;
		pw_buf_addf(&target, "line %d: some text that repeats with number %d\n", i,
		            i % 999 == 5 ? 0 : i * 7);
	}
	n = round_trip((uint8_t *)base.data, base.len, (uint8_t *)target.data, target.len);
	fprintf(stderr, "structured delta: %zu of %zu\n", n, target.len);
	CHECK(n < 600);
	/* and reversed roles */
	round_trip((uint8_t *)target.data, target.len, (uint8_t *)base.data, base.len);
	/* repetitive data: runs of one byte, short periods */
	pw_buf_reset(&base);
	pw_buf_reset(&target);
	for (i = 0; i < 100000; i++)
		pw_buf_addch(&base, (char)(i < 50000 ? 'x' : "abc"[i % 3]));
	for (i = 0; i < 120000; i++)
		pw_buf_addch(&target, (char)(i % 1000 < 900 ? 'x' : "abcd"[i % 4]));
	round_trip((uint8_t *)base.data, base.len, (uint8_t *)target.data, target.len);
	pw_buf_free(&base);
	pw_buf_free(&target);
}

static void test_random_mutations(void)
{
	int iter;

	for (iter = 0; iter < 200; iter++) {
		size_t blen = rnd() % 20000, tlen, i;
		uint8_t *base = malloc(blen + 1), *target;
		int edits = (int)(rnd() % 20);

		fill_random(base, blen);
		if (rnd() % 3 == 0) /* low-entropy alphabet: many collisions */
			for (i = 0; i < blen; i++)
				base[i] = "ab"[base[i] & 1];
		target = malloc(blen * 2 + 20000);
		memcpy(target, base, blen);
		tlen = blen;
		while (edits-- > 0) {
			size_t at = tlen ? rnd() % tlen : 0, len = rnd() % 300;

			switch (rnd() % 3) {
			case 0: /* overwrite */
				if (at + len > tlen)
					len = tlen - at;
				fill_random(target + at, len);
				break;
			case 1: /* insert */
				memmove(target + at + len, target + at, tlen - at);
				fill_random(target + at, len);
				tlen += len;
				break;
			default: /* delete */
				if (at + len > tlen)
					len = tlen - at;
				memmove(target + at, target + at + len, tlen - at - len);
				tlen -= len;
			}
		}
		round_trip(base, blen, target, tlen);
		free(base);
		free(target);
	}
}

static void test_big_copies(void)
{
	/* > 64 KiB copies and offsets past 2^24: 17 MiB base, target takes
	 * pieces from its end and its start. */
	size_t blen = (17u << 20) + 12345, tlen = 300000, n;
	uint8_t *base = malloc(blen), *target = malloc(tlen);

	fill_random(base, blen);
	memcpy(target, base + blen - 200000, 200000);
	memcpy(target + 200000, base + 5, 100000);
	n = round_trip(base, blen, target, tlen);
	CHECK(n < 64);
	/* an identical 17 MiB object */
	n = round_trip(base, blen, base, blen);
	CHECK(n < 8 * (blen / 0x10000 + 2));
	free(base);
	free(target);
}

static void test_max_size(void)
{
	uint8_t a[8192], b[8192];
	struct pw_buf delta = PW_BUF_INIT;

	fill_random(a, sizeof(a));
	fill_random(b, sizeof(b));
	CHECK_EQ_INT(pw_delta_create(a, sizeof(a), b, sizeof(b), 1000, &delta), PW_ETOOBIG);
	CHECK_EQ_INT(pw_delta_create(a, sizeof(a), a, sizeof(a), 1000, &delta), 0);
	CHECK(delta.len <= 1000);
	/* bound exactly at the delta's size passes, one below fails */
	{
		size_t exact = delta.len;

		CHECK_EQ_INT(pw_delta_create(a, sizeof(a), a, sizeof(a), exact, &delta), 0);
		CHECK_EQ_INT(pw_delta_create(a, sizeof(a), a, sizeof(a), exact - 1, &delta),
		             PW_ETOOBIG);
	}
	pw_buf_free(&delta);
}

static void test_index_reuse(void)
{
	/* One index, many targets. */
	uint8_t base[10000], t[10000];
	struct pw_delta_index *idx;
	struct pw_buf delta = PW_BUF_INIT, res = PW_BUF_INIT;
	struct pw_error err = {0};
	int i;

	fill_random(base, sizeof(base));
	CHECK_EQ_INT(pw_delta_index_new(&idx, base, sizeof(base)), 0);
	CHECK(pw_delta_index_memsize(idx) > 0);
	CHECK_EQ_INT(pw_delta_index_base_len(idx), sizeof(base));
	for (i = 0; i < 10; i++) {
		memcpy(t, base, sizeof(t));
		fill_random(t + i * 900, 50);
		CHECK_EQ_INT(pw_delta_create_from_index(idx, t, sizeof(t) - i, 0, &delta), 0);
		CHECK_EQ_INT(pw_delta_apply(base, sizeof(base), (uint8_t *)delta.data, delta.len,
		                            &res, &err),
		             0);
		CHECK(res.len == sizeof(t) - i && !memcmp(res.data, t, res.len));
		CHECK(delta.len < 120);
	}
	pw_delta_index_free(idx);
	pw_buf_free(&delta);
	pw_buf_free(&res);
}

int main(void)
{
	test_edges();
	test_structured();
	test_random_mutations();
	test_big_copies();
	test_max_size();
	test_index_reuse();
	return pw_test_done();
}
