/* Hash layer: FIPS 180 vectors, registry, oid parse/format, both algorithms. */
#include <stdlib.h>

#include "packwire/packwire.h"
#include "test.h"

struct vector {
	const char *msg;
	size_t repeat;
	const char *sha1, *sha256;
};

static const struct vector vectors[] = {
        {"abc", 1, "a9993e364706816aba3e25717850c26c9cd0d89d",
         "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"", 1, "da39a3ee5e6b4b0d3255bfef95601890afd80709",
         "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 1,
         "84983e441c3bd26ebaae4aa1f95129e5e54670f1",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"a", 1000000, "34aa973cd4c4daa4f61eeb2bdbad27316534016f",
         "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
};

static void test_vectors(const struct pw_hash_algo *algo)
{
	size_t i, r;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		struct pw_hash_ctx ctx;
		struct pw_oid oid;
		char hex[PW_MAX_HEXSZ + 1];
		const char *want = algo->id == PW_HASH_SHA1 ? vectors[i].sha1 : vectors[i].sha256;

		pw_hash_init(&ctx, algo);
		for (r = 0; r < vectors[i].repeat; r++)
			pw_hash_update(&ctx, vectors[i].msg, strlen(vectors[i].msg));
		CHECK_EQ_INT(pw_hash_final(&ctx, &oid), 0);
		CHECK_STR(pw_oid_to_hex(&oid, hex), want);
		CHECK_EQ_INT(oid.algo, algo->id);
		if (vectors[i].repeat == 1) {
			CHECK_EQ_INT(
			        pw_hash_buf(algo, vectors[i].msg, strlen(vectors[i].msg), &oid), 0);
			CHECK_STR(pw_oid_to_hex(&oid, hex), want);
		}
	}
}

static void test_registry(void)
{
	CHECK(pw_hash_by_name("sha1", 4) == &pw_hash_sha1);
	CHECK(pw_hash_by_name("sha256", 6) == &pw_hash_sha256);
	CHECK(pw_hash_by_name("sha2", 4) == NULL);
	CHECK(pw_hash_by_name("sha256x", 7) == NULL);
	CHECK(pw_hash_by_name("md5", 3) == NULL);
	CHECK(pw_hash_by_id(PW_HASH_SHA1) == &pw_hash_sha1);
	CHECK(pw_hash_by_id(PW_HASH_SHA256) == &pw_hash_sha256);
	CHECK(pw_hash_by_id(0) == NULL);
	CHECK(pw_hash_by_id(3) == NULL);
	CHECK(pw_hash_by_format_id(0x73686131) == &pw_hash_sha1);
	CHECK(pw_hash_by_format_id(0x73323536) == &pw_hash_sha256);
	CHECK(pw_hash_by_format_id(0) == NULL);
	CHECK(pw_hash_by_rawsz(20) == &pw_hash_sha1);
	CHECK(pw_hash_by_rawsz(32) == &pw_hash_sha256);
	CHECK(pw_hash_by_rawsz(16) == NULL);
	CHECK(pw_hash_guess_from_hexlen(40) == &pw_hash_sha1);
	CHECK(pw_hash_guess_from_hexlen(64) == &pw_hash_sha256);
	CHECK(pw_hash_guess_from_hexlen(41) == NULL);
	CHECK_EQ_INT(pw_hash_sha1.rawsz, 20);
	CHECK_EQ_INT(pw_hash_sha1.hexsz, 40);
	CHECK_EQ_INT(pw_hash_sha256.rawsz, 32);
	CHECK_EQ_INT(pw_hash_sha256.hexsz, 64);
}

static void test_oid(const struct pw_hash_algo *algo)
{
	char hex[PW_MAX_HEXSZ + 1], bad[PW_MAX_HEXSZ + 1];
	struct pw_oid a, b, z;
	size_t i;

	/* the well-known ids must match what hashing produces */
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_TREE, "", 0, &a), 0);
	CHECK(pw_oid_equal(&a, algo->empty_tree));
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, "", 0, &a), 0);
	CHECK(pw_oid_equal(&a, algo->empty_blob));

	pw_oid_to_hex(&a, hex);
	CHECK_EQ_INT(strlen(hex), algo->hexsz);
	CHECK_EQ_INT(pw_oid_from_hex(&b, hex, strlen(hex), algo), 0);
	CHECK(pw_oid_equal(&a, &b));
	CHECK_EQ_INT(pw_oid_cmp(&a, &b), 0);
	/* upper case is accepted */
	for (i = 0; hex[i]; i++)
		bad[i] = (char)(hex[i] >= 'a' ? hex[i] - 32 : hex[i]);
	bad[i] = 0;
	CHECK_EQ_INT(pw_oid_from_hex(&b, bad, strlen(bad), algo), 0);
	CHECK(pw_oid_equal(&a, &b));
	/* too short, non-hex */
	CHECK_EQ_INT(pw_oid_from_hex(&b, hex, algo->hexsz - 1, algo), PW_EINVAL);
	memcpy(bad, hex, sizeof(hex));
	bad[algo->hexsz - 1] = 'g';
	CHECK_EQ_INT(pw_oid_from_hex(&b, bad, strlen(bad), algo), PW_EINVAL);
	CHECK_EQ_INT(pw_oid_from_hex(&b, hex, strlen(hex), NULL), PW_EINVAL);

	pw_oid_zero(&z, algo);
	CHECK(pw_oid_is_zero(&z));
	CHECK(pw_oid_equal(&z, algo->zero_oid));
	CHECK(!pw_oid_is_zero(&a));
	CHECK(pw_oid_cmp(&z, &a) < 0);
	CHECK(pw_oid_algo(&a) == algo);
	CHECK_STR(pw_oid_to_hex(algo->zero_oid, hex),
	          algo->id == PW_HASH_SHA1 ? "0000000000000000000000000000000000000000"
	                                   : "00000000000000000000000000000000"
	                                     "00000000000000000000000000000000");
}

static void test_cross_algo(void)
{
	struct pw_oid a, b;

	/* same bytes, different algorithm: never equal */
	pw_oid_zero(&a, &pw_hash_sha1);
	pw_oid_zero(&b, &pw_hash_sha256);
	CHECK(!pw_oid_equal(&a, &b));
	CHECK(pw_oid_cmp(&a, &b) != 0);
}

static void test_object_header(void)
{
	char hdr[32];

	CHECK_EQ_INT(pw_object_header(hdr, PW_OBJ_BLOB, 12), 8);
	CHECK(!memcmp(hdr, "blob 12", 8));
	CHECK_EQ_INT(pw_object_type_from_name("commit", 6), PW_OBJ_COMMIT);
	CHECK_EQ_INT(pw_object_type_from_name("tag", 3), PW_OBJ_TAG);
	CHECK_EQ_INT(pw_object_type_from_name("tags", 4), PW_OBJ_NONE);
	CHECK(pw_object_type_name(PW_OBJ_OFS_DELTA) == NULL);
}

int main(void)
{
	test_registry();
	test_vectors(&pw_hash_sha1);
	test_vectors(&pw_hash_sha256);
	test_oid(&pw_hash_sha1);
	test_oid(&pw_hash_sha256);
	test_cross_algo();
	test_object_header();
	return pw_test_done();
}
