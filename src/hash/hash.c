/* SHA-1 and SHA-256 through OpenSSL's libcrypto. The low-level digest calls
 * avoid EVP's per-context allocation, which dominates when hashing many small
 * objects; they still run the SHA-NI code paths. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <string.h>

#include "hash/sha1dc-priv.h"
#include "packwire/hash.h"

_Static_assert(sizeof(SHA_CTX) <= sizeof(((struct pw_hash_ctx *)0)->u.space), "SHA_CTX fits");
_Static_assert(sizeof(SHA256_CTX) <= sizeof(((struct pw_hash_ctx *)0)->u.space), "SHA256 fits");
_Static_assert(sizeof(struct pw_sha1dc) <= sizeof(((struct pw_hash_ctx *)0)->u.space),
               "sha1dc fits");

/* SHA-1 for object ids: with collision detection (sha1dc.c). */
static void sha1_init(struct pw_hash_ctx *c)
{
	pw_sha1dc_init((struct pw_sha1dc *)c->u.space);
}
static void sha1_update(struct pw_hash_ctx *c, const void *d, size_t n)
{
	pw_sha1dc_update((struct pw_sha1dc *)c->u.space, d, n);
}
static int sha1_final(struct pw_hash_ctx *c, uint8_t *out)
{
	return pw_sha1dc_final((struct pw_sha1dc *)c->u.space, out) ? PW_ECOLLISION : 0;
}

/* SHA-1 for checksums that are not object ids: OpenSSL's, undetected. */
static void sha1_plain_init(struct pw_hash_ctx *c)
{
	SHA1_Init((SHA_CTX *)c->u.space);
}
static void sha1_plain_update(struct pw_hash_ctx *c, const void *d, size_t n)
{
	SHA1_Update((SHA_CTX *)c->u.space, d, n);
}
static int sha1_plain_final(struct pw_hash_ctx *c, uint8_t *out)
{
	SHA1_Final(out, (SHA_CTX *)c->u.space);
	return 0;
}
static void sha256_init(struct pw_hash_ctx *c)
{
	SHA256_Init((SHA256_CTX *)c->u.space);
}
static void sha256_update(struct pw_hash_ctx *c, const void *d, size_t n)
{
	SHA256_Update((SHA256_CTX *)c->u.space, d, n);
}
static int sha256_final(struct pw_hash_ctx *c, uint8_t *out)
{
	SHA256_Final(out, (SHA256_CTX *)c->u.space);
	return 0;
}

static const struct pw_oid sha1_zero = {PW_HASH_SHA1, {0}};
static const struct pw_oid sha256_zero = {PW_HASH_SHA256, {0}};
/* ids of the empty tree and empty blob: well-known constants of each format */
static const struct pw_oid sha1_empty_tree = {
        PW_HASH_SHA1, {0x4b, 0x82, 0x5d, 0xc6, 0x42, 0xcb, 0x6e, 0xb9, 0xa0, 0x60,
                       0xe5, 0x4b, 0xf8, 0xd6, 0x92, 0x88, 0xfb, 0xee, 0x49, 0x04}};
static const struct pw_oid sha1_empty_blob = {
        PW_HASH_SHA1, {0xe6, 0x9d, 0xe2, 0x9b, 0xb2, 0xd1, 0xd6, 0x43, 0x4b, 0x8b,
                       0x29, 0xae, 0x77, 0x5a, 0xd8, 0xc2, 0xe4, 0x8c, 0x53, 0x91}};
static const struct pw_oid sha256_empty_tree = {
        PW_HASH_SHA256, {0x6e, 0xf1, 0x9b, 0x41, 0x22, 0x5c, 0x53, 0x69, 0xf1, 0xc1, 0x04,
                         0xd4, 0x5d, 0x8d, 0x85, 0xef, 0xa9, 0xb0, 0x57, 0xb5, 0x3b, 0x14,
                         0xb4, 0xb9, 0xb9, 0x39, 0xdd, 0x74, 0xde, 0xcc, 0x53, 0x21}};
static const struct pw_oid sha256_empty_blob = {
        PW_HASH_SHA256, {0x47, 0x3a, 0x0f, 0x4c, 0x3b, 0xe8, 0xa9, 0x36, 0x81, 0xa2, 0x67,
                         0xe3, 0xb1, 0xe9, 0xa7, 0xdc, 0xda, 0x11, 0x85, 0x43, 0x6f, 0xe1,
                         0x41, 0xf7, 0x74, 0x91, 0x20, 0xa3, 0x03, 0x72, 0x18, 0x13}};

const struct pw_hash_algo pw_hash_sha1 = {
        PW_HASH_SHA1, "sha1",           0x73686131,       20,        40,          64,
        &sha1_zero,   &sha1_empty_tree, &sha1_empty_blob, sha1_init, sha1_update, sha1_final,
};

/* What pw_hash_init_checksum gives for SHA-1: the same algorithm to every
 * caller (id, sizes, name), another implementation. */
static const struct pw_hash_algo sha1_checksum = {
        PW_HASH_SHA1,
        "sha1",
        0x73686131,
        20,
        40,
        64,
        &sha1_zero,
        &sha1_empty_tree,
        &sha1_empty_blob,
        sha1_plain_init,
        sha1_plain_update,
        sha1_plain_final,
};

const struct pw_hash_algo pw_hash_sha256 = {
        PW_HASH_SHA256,
        "sha256",
        0x73323536,
        32,
        64,
        64,
        &sha256_zero,
        &sha256_empty_tree,
        &sha256_empty_blob,
        sha256_init,
        sha256_update,
        sha256_final,
};

const struct pw_hash_algo *pw_hash_by_id(int id)
{
	switch (id) {
	case PW_HASH_SHA1:
		return &pw_hash_sha1;
	case PW_HASH_SHA256:
		return &pw_hash_sha256;
	default:
		return NULL;
	}
}

const struct pw_hash_algo *pw_hash_by_name(const char *name, size_t len)
{
	if (len == 4 && !memcmp(name, "sha1", 4))
		return &pw_hash_sha1;
	if (len == 6 && !memcmp(name, "sha256", 6))
		return &pw_hash_sha256;
	return NULL;
}

const struct pw_hash_algo *pw_hash_by_format_id(uint32_t format_id)
{
	if (format_id == pw_hash_sha1.format_id)
		return &pw_hash_sha1;
	if (format_id == pw_hash_sha256.format_id)
		return &pw_hash_sha256;
	return NULL;
}

const struct pw_hash_algo *pw_hash_by_rawsz(size_t rawsz)
{
	if (rawsz == 20)
		return &pw_hash_sha1;
	if (rawsz == 32)
		return &pw_hash_sha256;
	return NULL;
}

const struct pw_hash_algo *pw_hash_guess_from_hexlen(size_t hexlen)
{
	if (hexlen == 40)
		return &pw_hash_sha1;
	if (hexlen == 64)
		return &pw_hash_sha256;
	return NULL;
}

const struct pw_hash_algo *pw_oid_algo(const struct pw_oid *oid)
{
	return pw_hash_by_id(oid->algo);
}

void pw_hash_init(struct pw_hash_ctx *ctx, const struct pw_hash_algo *algo)
{
	ctx->algo = algo;
	algo->init(ctx);
}

void pw_hash_update(struct pw_hash_ctx *ctx, const void *data, size_t len)
{
	ctx->algo->update(ctx, data, len);
}

int pw_hash_final(struct pw_hash_ctx *ctx, struct pw_oid *out)
{
	memset(out, 0, sizeof(*out));
	out->algo = (uint8_t)ctx->algo->id;
	return ctx->algo->final_raw(ctx, out->id);
}

int pw_hash_final_raw(struct pw_hash_ctx *ctx, uint8_t *out)
{
	return ctx->algo->final_raw(ctx, out);
}

void pw_hash_init_checksum(struct pw_hash_ctx *ctx, const struct pw_hash_algo *algo)
{
	if (algo->id == PW_HASH_SHA1)
		algo = &sha1_checksum;
	pw_hash_init(ctx, algo);
}

void pw_hash_final_checksum(struct pw_hash_ctx *ctx, uint8_t *out)
{
	/* only the detecting SHA-1 can fail, and a checksum context has none;
	 * a context from pw_hash_init that saw an attack still gets its digest */
	(void)!ctx->algo->final_raw(ctx, out);
}

int pw_hash_collision_error(struct pw_error *err, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];

	return pw_error_set(err, PW_ECOLLISION,
	                    "SHA-1 appears to be part of a collision attack: %s",
	                    pw_oid_to_hex(oid, hex));
}

int pw_hash_buf(const struct pw_hash_algo *algo, const void *data, size_t len, struct pw_oid *out)
{
	struct pw_hash_ctx ctx;

	if (algo->id == PW_HASH_SHA1) {
		memset(out, 0, sizeof(*out));
		out->algo = PW_HASH_SHA1;
		return pw_sha1dc_oneshot(data, len, NULL, 0, out->id) ? PW_ECOLLISION : 0;
	}
	pw_hash_init(&ctx, algo);
	pw_hash_update(&ctx, data, len);
	return pw_hash_final(&ctx, out);
}

int pw_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int pw_oid_from_hex(struct pw_oid *out, const char *hex, size_t len,
                    const struct pw_hash_algo *algo)
{
	size_t i;

	if (!algo || len < algo->hexsz)
		return PW_EINVAL;
	memset(out, 0, sizeof(*out));
	for (i = 0; i < algo->rawsz; i++) {
		int hi = pw_hexval((unsigned char)hex[2 * i]);
		int lo = pw_hexval((unsigned char)hex[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return PW_EINVAL;
		out->id[i] = (uint8_t)(hi << 4 | lo);
	}
	out->algo = (uint8_t)algo->id;
	return 0;
}

void pw_oid_from_raw(struct pw_oid *out, const uint8_t *raw, const struct pw_hash_algo *algo)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->id, raw, algo->rawsz);
	out->algo = (uint8_t)algo->id;
}

char *pw_oid_to_hex(const struct pw_oid *oid, char *buf)
{
	static const char digits[] = "0123456789abcdef";
	size_t i, n = pw_oid_rawsz(oid);

	for (i = 0; i < n; i++) {
		buf[2 * i] = digits[oid->id[i] >> 4];
		buf[2 * i + 1] = digits[oid->id[i] & 15];
	}
	buf[2 * n] = '\0';
	return buf;
}

size_t pw_oid_rawsz(const struct pw_oid *oid)
{
	return oid->algo == PW_HASH_SHA256 ? 32 : 20;
}

int pw_oid_cmp(const struct pw_oid *a, const struct pw_oid *b)
{
	if (a->algo != b->algo)
		return a->algo < b->algo ? -1 : 1;
	return memcmp(a->id, b->id, pw_oid_rawsz(a));
}

int pw_oid_equal(const struct pw_oid *a, const struct pw_oid *b)
{
	return a->algo == b->algo && !memcmp(a->id, b->id, pw_oid_rawsz(a));
}

int pw_oid_is_zero(const struct pw_oid *oid)
{
	size_t i, n = pw_oid_rawsz(oid);

	for (i = 0; i < n; i++)
		if (oid->id[i])
			return 0;
	return 1;
}

void pw_oid_zero(struct pw_oid *out, const struct pw_hash_algo *algo)
{
	memset(out, 0, sizeof(*out));
	out->algo = (uint8_t)algo->id;
}
