/* Hash algorithms and object ids. No global "current algorithm": every id
 * carries its algorithm and every handle stores the one it was opened with. */
#ifndef PACKWIRE_HASH_H
#define PACKWIRE_HASH_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>
#include "packwire/error.h"

/*
 * Threads: the algorithm descriptors (pw_hash_sha1, pw_hash_sha256 and what
 * the look-ups return) are immutable static data, shared freely between
 * threads and never freed. A struct pw_oid is a plain value (copy it with
 * =). A struct pw_hash_ctx belongs to one computation: one thread at a time.
 * None of these functions allocates; none can fail unless it returns int.
 */

typedef enum { PW_HASH_UNKNOWN = 0, PW_HASH_SHA1 = 1, PW_HASH_SHA256 = 2 } pw_hash_id;

#define PW_MAX_RAWSZ    32
#define PW_MAX_HEXSZ    64
#define PW_SHA1_RAWSZ   20
#define PW_SHA256_RAWSZ 32

struct pw_oid {
	uint8_t algo;             /* pw_hash_id; 0 = unset */
	uint8_t id[PW_MAX_RAWSZ]; /* unused tail is zero */
};

/*
 * SHA-1 collision detection. Every SHA-1 that computes an object id from
 * bytes detects the blocks of the known collision attacks (SHAttered,
 * SHA-mbles: counter-cryptanalysis along the 32 disturbance vectors, as
 * Git's sha1dc does): pw_hash_final, pw_hash_final_raw, pw_hash_buf and
 * pw_object_hash then return PW_ECOLLISION. The digest is still written
 * (it is the plain SHA-1 of the input), so a caller can name the object in
 * its message, but the data must be refused: nothing computed from it may be
 * stored or trusted. pw_hash_collision_error() writes Git's message. SHA-256
 * has no known collision and never returns it.
 *
 * Checksums that are not object ids (the trailers of packs, idx, bitmap and
 * rev files, the compat map) may use pw_hash_init_checksum and
 * pw_hash_final_checksum: plain hardware SHA-1 without detection, as Git
 * 2.47 and later do ("unsafe" SHA-1). A forged trailer gains an attacker
 * nothing: the objects inside are still hashed with detection.
 */

/* Opaque incremental hashing state, big enough for either algorithm. */
struct pw_hash_ctx {
	const struct pw_hash_algo *algo;
	union {
		uint64_t align;
		unsigned char space[128];
	} u;
};

struct pw_hash_algo {
	pw_hash_id id;
	const char *name;   /* "sha1" / "sha256": the object-format value */
	uint32_t format_id; /* Git's 4-byte id in binary formats: "sha1" / "s256" */
	size_t rawsz, hexsz, blksz;
	const struct pw_oid *zero_oid;
	const struct pw_oid *empty_tree;
	const struct pw_oid *empty_blob;
	void (*init)(struct pw_hash_ctx *ctx);
	void (*update)(struct pw_hash_ctx *ctx, const void *data, size_t len);
	/* 0, or PW_ECOLLISION when the data was part of a collision attack */
	int (*final_raw)(struct pw_hash_ctx *ctx, uint8_t *out);
};

#if defined(__GNUC__) || defined(__clang__)
#define PW_CHECK_RESULT __attribute__((warn_unused_result))
#else
#define PW_CHECK_RESULT
#endif

/* The two algorithms (static, never freed). */
PW_API extern const struct pw_hash_algo pw_hash_sha1;
PW_API extern const struct pw_hash_algo pw_hash_sha256;

/* Registry look-ups; NULL when there is no such algorithm. */
PW_API const struct pw_hash_algo *pw_hash_by_id(int id);
PW_API const struct pw_hash_algo *pw_hash_by_name(const char *name, size_t len);
PW_API const struct pw_hash_algo *pw_hash_by_format_id(uint32_t format_id);
PW_API const struct pw_hash_algo *pw_hash_by_rawsz(size_t rawsz);
/* Only for places where the spec says to guess (dumb HTTP, bundle v2, v0
 * advertisements without object-format): 40 -> sha1, 64 -> sha256. */
PW_API const struct pw_hash_algo *pw_hash_guess_from_hexlen(size_t hexlen);
/* The algorithm of an id (NULL when unset). */
PW_API const struct pw_hash_algo *pw_oid_algo(const struct pw_oid *oid);

/* Incremental hashing: init, any number of updates, then one final (the
 * context may be reused after another init). Init and update never fail;
 * final returns 0 or PW_ECOLLISION (SHA-1 only, see above) and writes the
 * digest either way. */
PW_API void pw_hash_init(struct pw_hash_ctx *ctx, const struct pw_hash_algo *algo);
PW_API void pw_hash_update(struct pw_hash_ctx *ctx, const void *data, size_t len);
PW_API PW_CHECK_RESULT int pw_hash_final(struct pw_hash_ctx *ctx, struct pw_oid *out);
PW_API PW_CHECK_RESULT int pw_hash_final_raw(struct pw_hash_ctx *ctx, uint8_t *out);
PW_API PW_CHECK_RESULT int pw_hash_buf(const struct pw_hash_algo *algo, const void *data,
                                       size_t len, struct pw_oid *out);

/* A checksum that is not an object id (file trailers): the same digest,
 * without collision detection, so it cannot fail. Update with
 * pw_hash_update. */
PW_API void pw_hash_init_checksum(struct pw_hash_ctx *ctx, const struct pw_hash_algo *algo);
PW_API void pw_hash_final_checksum(struct pw_hash_ctx *ctx, uint8_t *out);

/* Git's message for a detected collision, "SHA-1 appears to be part of a
 * collision attack: <hex>", into err; returns PW_ECOLLISION. */
PW_API int pw_hash_collision_error(struct pw_error *err, const struct pw_oid *oid);

/* Parse exactly algo->hexsz hex digits (case-insensitive) from `hex`;
 * `len` is how many bytes are available. PW_EINVAL on anything else. */
PW_API int pw_oid_from_hex(struct pw_oid *out, const char *hex, size_t len,
                           const struct pw_hash_algo *algo);
PW_API void pw_oid_from_raw(struct pw_oid *out, const uint8_t *raw,
                            const struct pw_hash_algo *algo);
/* Writes algo->hexsz digits and a NUL into buf (PW_MAX_HEXSZ + 1 bytes suffice);
 * returns buf. */
PW_API char *pw_oid_to_hex(const struct pw_oid *oid, char *buf);
/* Order: by algorithm, then bytes (memcmp); equal only for the same algorithm. */
PW_API int pw_oid_cmp(const struct pw_oid *a, const struct pw_oid *b);
PW_API int pw_oid_equal(const struct pw_oid *a, const struct pw_oid *b);
PW_API int pw_oid_is_zero(const struct pw_oid *oid);
PW_API void pw_oid_zero(struct pw_oid *out, const struct pw_hash_algo *algo);
/* sha256 ids: 32; anything else (sha1, unset): 20. */
PW_API size_t pw_oid_rawsz(const struct pw_oid *oid);

/* Is c a hex digit; its value or -1. */
PW_API int pw_hexval(int c);

#endif
