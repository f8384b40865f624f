/* SHA-1 with collision detection (counter-cryptanalysis, Stevens 2013).
 *
 * A block can be one half of a collision made along a disturbance vector
 * (DV) only if its expanded message words meet that DV's unavoidable bit
 * conditions. Those depend on the message alone, so they are checked for
 * many blocks at once in vector lanes while a hardware SHA-1 compresses.
 * Only a block that meets some DV's conditions (about one in 30 of honest
 * data) is run again in software, keeping the working states, and
 * recompressed with the DV's message difference: if the other message's
 * chaining value leads to the same output, the block is an attack. */
#ifndef PW_HASH_SHA1DC_PRIV_H
#define PW_HASH_SHA1DC_PRIV_H

#include <stddef.h>
#include <stdint.h>

#define PW_SHA1DC_NDV 32
/* The most blocks one bit-condition pass looks at (the AVX-512 lanes). */
#define PW_SHA1DC_BATCH 16

struct pw_sha1dc_dv {
	uint8_t type, k, b, testt; /* I(K,b) or II(K,b); recompress from step testt */
	uint32_t dm[80];           /* message difference of an attack block */
};
extern const struct pw_sha1dc_dv pw_sha1dc_dvs[PW_SHA1DC_NDV];

struct pw_sha1dc {
	uint32_t ihv[5];
	uint32_t buflen;
	uint64_t total;
	uint32_t collision; /* a block so far was part of an attack */
	uint8_t buf[64];
};

void pw_sha1dc_init(struct pw_sha1dc *c);
void pw_sha1dc_update(struct pw_sha1dc *c, const void *data, size_t len);
/* The digest into out; returns 1 when some block was part of a collision
 * attack, else 0. */
int pw_sha1dc_final(struct pw_sha1dc *c, uint8_t out[20]);
/* The digest of a then b (either may be empty), as init, two updates and
 * final would give, with the blocks of both and the padding checked in one
 * pass: what a small object costs is one pass, not three. */
int pw_sha1dc_oneshot(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[20]);

/* Two messages, each the bytes of a then b, hashed at once (where the CPU
 * can run two chains beside each other; else one after the other): the
 * digests into out; bit i of the result is set when message i was part of
 * a collision attack. */
struct pw_sha1dc_msg {
	const void *a, *b;
	size_t alen, blen;
};
int pw_sha1dc_oneshot2(const struct pw_sha1dc_msg m[2], uint8_t out[2][20]);

/* A seam for the tests: real colliding Git objects need a new attack, so
 * the end-to-end tests of the refusal paths (index-pack, receive-pack,
 * fetch, ...) make the detector report a digest of their choice. Set only by
 * tests/hooks/collision.c, which is linked into a test build of the CLI
 * (packwire-test-hooks), never into the installed library or command. */
extern int (*pw_sha1dc__test_collision)(const uint8_t digest[20]);

/* The implementations, for the tests and the bench: AUTO picks the best the
 * CPU has. Select returns 0, or -1 (and changes nothing) when it lacks it.
 * Process-wide: call it before hashing starts. */
enum pw_sha1dc_impl {
	PW_SHA1DC_AUTO,
	PW_SHA1DC_GENERIC,    /* plain C bit conditions, OpenSSL compression */
	PW_SHA1DC_AVX2,       /* 8 blocks a pass */
	PW_SHA1DC_AVX512,     /* 16 blocks a pass */
	PW_SHA1DC_AVX512_SHA, /* the same with the SHA instructions in one kernel */
};
int pw_sha1dc_select(enum pw_sha1dc_impl impl);
const char *pw_sha1dc_impl_name(void);

/* Compress the block at `block` into ihv without OpenSSL; is it part of an
 * attack along one of the DVs in dvmask? 1 or 0. With the CPU's SHA
 * instructions most steps run in them; pw_sha1dc__check_software(1) makes it
 * take the software steps only (for the tests; 0 goes back). */
int pw_sha1dc__check(uint32_t ihv[5], const uint8_t *block, uint32_t dvmask);
void pw_sha1dc__check_software(int on);

/* Kernels. ubc: of the n (1..PW_SHA1DC_BATCH) 64-byte blocks at rows[0..n),
 * a bit per block that meets some DV's conditions; dvs[i] gets those DVs for
 * each such block. */
typedef uint32_t (*pw_sha1dc_ubc_fn)(const uint8_t *const *rows, size_t n, uint32_t *dvs);
uint32_t pw_sha1dc__ubc_generic(const uint8_t *const *rows, size_t n, uint32_t *dvs);
pw_sha1dc_ubc_fn pw_sha1dc__ubc_avx2(void);   /* NULL when not built or not there */
pw_sha1dc_ubc_fn pw_sha1dc__ubc_avx512(void); /* NULL when not built or not there */
size_t pw_sha1dc__ubc_batch(pw_sha1dc_ubc_fn fn);
/* For a check: the expanded words of the block, the states before steps 56
 * and 64, and the chaining value after it, with the CPU's SHA instructions. */
typedef void (*pw_sha1dc_states_fn)(const uint32_t ihv[5], const uint8_t *block, uint32_t w[80],
                                    uint32_t s56[5], uint32_t s64[5], uint32_t out[5]);
pw_sha1dc_states_fn pw_sha1dc__states_sha(void); /* NULL when not there */
/* Steps 4*g0 .. 4*g1-1 forward from state s over the words w, with the SHA
 * instructions. */
typedef void (*pw_sha1dc_forward_fn)(uint32_t s[5], const uint32_t *w, int g0, int g1);
pw_sha1dc_forward_fn pw_sha1dc__forward_sha(void); /* NULL when not there */
/* The same for two states and messages side by side. */
typedef void (*pw_sha1dc_forward2_fn)(uint32_t sa[5], const uint32_t *wa, uint32_t sb[5],
                                      const uint32_t *wb, int g0, int g1);
pw_sha1dc_forward2_fn pw_sha1dc__forward2_sha(void); /* NULL when not there */

/* The fused kernel: exactly PW_SHA1DC_BATCH blocks at rows[0..16) of one
 * message compressed into ihv with the SHA instructions while their bit
 * conditions are tested; returns the flagged blocks as ubc does, and for each
 * flagged block i what its check needs in saved[i]. */
struct pw_sha1dc_saved {
	uint32_t w[80];          /* the expanded message words */
	uint32_t s56[5], s64[5]; /* the states before steps 56 and 64 */
	uint32_t out[5];         /* the chaining value after the block */
};
typedef uint32_t (*pw_sha1dc_fused_fn)(uint32_t ihv[5], const uint8_t *const *rows, uint32_t *dvs,
                                       struct pw_sha1dc_saved *saved);
pw_sha1dc_fused_fn pw_sha1dc__fused_avx512(void); /* NULL when not built or not there */
/* The same for two messages at once: 8 blocks of one at rows[0..8) into
 * ihv, 8 of another at rows[8..16) into ihv_b; the SHA instructions wait on
 * their latency, so two chains cost little more than one. */
typedef uint32_t (*pw_sha1dc_fused2_fn)(uint32_t ihv[5], uint32_t ihv_b[5],
                                        const uint8_t *const *rows, uint32_t *dvs,
                                        struct pw_sha1dc_saved *saved);
pw_sha1dc_fused2_fn pw_sha1dc__fused2_avx512(void); /* NULL when not built or not there */
/* The check of a block whose states the fused kernel kept: 1 when it is
 * part of an attack along one of the DVs in dvmask. */
int pw_sha1dc__check_saved(const struct pw_sha1dc_saved *saved, uint32_t dvmask);

#endif
