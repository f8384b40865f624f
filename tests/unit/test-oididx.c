/* The index of ids kept in the caller's array (hash/oididx.h): every id put
 * is found at its element, a second put finds the first, absent ids are not
 * found, across growth, for both hash sizes, with ids that share the bits the
 * slots keep (told apart by the array). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash/oididx.h"
#include "test.h"

#define N 70000

struct elem {
	struct pw_oid oid;
	uint32_t payload;
};

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint8_t next_byte(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint8_t)(rng >> 24);
}

static void random_oid(struct pw_oid *o, const struct pw_hash_algo *algo)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	o->algo = (uint8_t)algo->id;
	for (i = 0; i < algo->rawsz; i++)
		o->id[i] = next_byte();
}

static void test_algo(const struct pw_hash_algo *algo, int reserve)
{
	struct pw_oididx x = PW_OIDIDX_INIT;
	struct elem *v = calloc(N, sizeof(*v));
	struct pw_oid absent;
	size_t i, nr = 0, bad_put = 0, bad_find = 0, bad_dup = 0;

	CHECK(v != NULL);
	if (!v)
		return;
	CHECK_EQ_INT(pw_oididx_find(&x, &v[0].oid, v, sizeof(*v)), PW_OIDIDX_NONE);
	if (reserve)
		CHECK_EQ_INT(pw_oididx_reserve(&x, N), 0);
	for (i = 0; i < N; i++) {
		struct pw_oid o;
		uint32_t got;

		random_oid(&o, algo);
		if (i % 5 == 4) /* the first 32 bits of the one before, the rest not */
			memcpy(o.id, v[nr - 1].oid.id, 4);
		got = pw_oididx_put(&x, &o, (uint32_t)nr, v, sizeof(*v));
		if (got != nr) {
			bad_put++;
			continue;
		}
		v[nr].oid = o;
		v[nr].payload = (uint32_t)i;
		nr++;
	}
	CHECK_EQ_INT(bad_put, 0);
	CHECK_EQ_INT(x.count, nr);
	for (i = 0; i < nr; i++) {
		if (pw_oididx_find(&x, &v[i].oid, v, sizeof(*v)) != i)
			bad_find++;
		/* again: found, nothing inserted (next would be nr) */
		if (pw_oididx_put(&x, &v[i].oid, (uint32_t)nr, v, sizeof(*v)) != i)
			bad_dup++;
	}
	CHECK_EQ_INT(bad_find, 0);
	CHECK_EQ_INT(bad_dup, 0);
	CHECK_EQ_INT(x.count, nr);
	/* an id that differs in its last byte only, and one of the other size */
	absent = v[7].oid;
	absent.id[algo->rawsz - 1] ^= 1;
	CHECK_EQ_INT(pw_oididx_find(&x, &absent, v, sizeof(*v)), PW_OIDIDX_NONE);
	absent = v[7].oid;
	absent.algo = (uint8_t)(algo == &pw_hash_sha1 ? pw_hash_sha256.id : pw_hash_sha1.id);
	CHECK_EQ_INT(pw_oididx_find(&x, &absent, v, sizeof(*v)), PW_OIDIDX_NONE);
	/* no element number that would read as empty or as not found */
	random_oid(&absent, algo);
	CHECK_EQ_INT(pw_oididx_put(&x, &absent, PW_OIDIDX_NONE - 1, v, sizeof(*v)), PW_OIDIDX_NONE);
	CHECK_EQ_INT(x.count, nr);
	pw_oididx_free(&x);
	CHECK(x.slots == NULL && x.cap == 0 && x.count == 0);
	CHECK_EQ_INT(pw_oididx_find(&x, &v[0].oid, v, sizeof(*v)), PW_OIDIDX_NONE);
	free(v);
}

int main(void)
{
	test_algo(&pw_hash_sha1, 0);
	test_algo(&pw_hash_sha256, 0);
	test_algo(&pw_hash_sha1, 1);
	return pw_test_done();
}
