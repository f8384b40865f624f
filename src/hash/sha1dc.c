/* SHA-1 with collision detection: the stream, the software steps that keep
 * the working states, and the recompression along each DV (sha1dc-priv.h). */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <string.h>

#include "hash/sha1dc-priv.h"

#define ROL(x, n) (((x) << (n)) | ((x) >> (32 - (n))))

static const uint32_t sha1_iv[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
static const uint32_t sha1_k[4] = {0x5a827999, 0x6ed9eba1, 0x8f1bbcdc, 0xca62c1d6};

static uint32_t load_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* GCC vectorizes this loop two words at a time, and each step then waits
 * on a store it just made (the words depend on the one three back). */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-vectorize")))
#endif
static void
expand(uint32_t w[80], const uint8_t *block)
{
	int t;

	for (t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (t = 16; t < 80; t++)
		w[t] = ROL(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
}

/* ------------------------------------------------------------------ */
/* The bit conditions, one block at a time in plain C. */

uint32_t pw_sha1dc__ubc_generic(const uint8_t *p, size_t n, uint32_t *dvs)
{
	uint32_t flagged = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t w[80], mask = 0;

		expand(w, p + 64 * i);
#define V              uint32_t
#define W(t)           w[t]
#define V_ROL(x, n)    ROL((x), (n))
#define V_XOR(a, b)    ((a) ^ (b))
#define V_OR(a, b)     ((a) | (b))
#define V_AND(a, b)    ((a) & (b))
#define V_ANDNOT(a, b) (~(a) & (b))
#define V_ZERO         0u
#define V_ONES         0xffffffffu
#define PASS(dv, x)    (mask |= ((x)&1u) << (dv))
#include "hash/sha1dc-ubc.inc"
#undef V
#undef W
#undef V_ROL
#undef V_XOR
#undef V_OR
#undef V_AND
#undef V_ANDNOT
#undef V_ZERO
#undef V_ONES
#undef PASS
		if (mask) {
			flagged |= 1u << i;
			dvs[i] = mask;
		}
	}
	return flagged;
}

/* ------------------------------------------------------------------ */
/* Software steps with the working state (a, b, c, d, e) in s[0..4]. */

#define F_IF(b, c, d)  ((d) ^ ((b) & ((c) ^ (d))))
#define F_XOR(b, c, d) ((b) ^ (c) ^ (d))
#define F_MAJ(b, c, d) (((b) & (c)) | ((d) & ((b) | (c))))

/* Steps from..to-1 forward. */
static void steps_forward(uint32_t s[5], const uint32_t w[80], int from, int to)
{
	uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], x;
	int t = from;

#define FORWARD(F, k)                                                                              \
	do {                                                                                       \
		x = ROL(a, 5) + F(b, c, d) + e + (k) + w[t];                                       \
		e = d;                                                                             \
		d = c;                                                                             \
		c = ROL(b, 30);                                                                    \
		b = a;                                                                             \
		a = x;                                                                             \
	} while (0)
	for (; t < to && t < 20; t++)
		FORWARD(F_IF, sha1_k[0]);
	for (; t < to && t < 40; t++)
		FORWARD(F_XOR, sha1_k[1]);
	for (; t < to && t < 60; t++)
		FORWARD(F_MAJ, sha1_k[2]);
	for (; t < to; t++)
		FORWARD(F_XOR, sha1_k[3]);
#undef FORWARD
	s[0] = a;
	s[1] = b;
	s[2] = c;
	s[3] = d;
	s[4] = e;
}

/* Undo steps from-1 down to 0: the state before step `from` becomes the
 * state before step 0, the chaining value this block was compressed from. */
static void steps_backward(uint32_t s[5], const uint32_t w[80], int from)
{
	uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], x;
	int t = from - 1;

#define BACKWARD(F, k)                                                                             \
	do {                                                                                       \
		x = a;                                                                             \
		a = b;                                                                             \
		b = ROL(c, 2);                                                                     \
		c = d;                                                                             \
		d = e;                                                                             \
		e = x - ROL(a, 5) - F(b, c, d) - (k)-w[t];                                         \
	} while (0)
	for (; t >= 60; t--)
		BACKWARD(F_XOR, sha1_k[3]);
	for (; t >= 40; t--)
		BACKWARD(F_MAJ, sha1_k[2]);
	for (; t >= 20; t--)
		BACKWARD(F_XOR, sha1_k[1]);
	for (; t >= 0; t--)
		BACKWARD(F_IF, sha1_k[0]);
#undef BACKWARD
	s[0] = a;
	s[1] = b;
	s[2] = c;
	s[3] = d;
	s[4] = e;
}

/* One block that met some DVs' conditions: compress it in software, keeping
 * the states before steps 58 and 65, then for each DV take the message with
 * the DV's difference from there back to a chaining value and forward to an
 * output. The same output from another chaining value is a collision. */
static int check_block(uint32_t ihv[5], const uint8_t *block, uint32_t dvmask)
{
	uint32_t w[80], s[5], s58[5], s65[5], out[5];
	int i, hit = 0;

	expand(w, block);
	memcpy(s, ihv, sizeof(s));
	steps_forward(s, w, 0, 58);
	memcpy(s58, s, sizeof(s));
	steps_forward(s, w, 58, 65);
	memcpy(s65, s, sizeof(s));
	steps_forward(s, w, 65, 80);
	for (i = 0; i < 5; i++)
		out[i] = ihv[i] + s[i];

	while (dvmask) {
		const struct pw_sha1dc_dv *dv = &pw_sha1dc_dvs[__builtin_ctz(dvmask)];
		uint32_t w2[80], back[5], fwd[5];
		int t;

		dvmask &= dvmask - 1;
		for (t = 0; t < 80; t++)
			w2[t] = w[t] ^ dv->dm[t];
		memcpy(back, dv->testt == 58 ? s58 : s65, sizeof(back));
		memcpy(fwd, back, sizeof(fwd));
		steps_backward(back, w2, dv->testt);
		steps_forward(fwd, w2, dv->testt, 80);
		if (back[0] + fwd[0] == out[0] && back[1] + fwd[1] == out[1] &&
		    back[2] + fwd[2] == out[2] && back[3] + fwd[3] == out[3] &&
		    back[4] + fwd[4] == out[4])
			hit = 1;
	}
	memcpy(ihv, out, sizeof(out));
	return hit;
}

/* ------------------------------------------------------------------ */
/* Compression of the blocks that need no check: OpenSSL's, which uses the
 * CPU's SHA instructions. With nothing buffered, SHA1_Update hands whole
 * blocks to its block function directly. */

static void compress_blocks(uint32_t ihv[5], const uint8_t *p, size_t n)
{
	SHA_CTX c;

	if (!n)
		return;
	memset(&c, 0, sizeof(c));
	c.h0 = ihv[0];
	c.h1 = ihv[1];
	c.h2 = ihv[2];
	c.h3 = ihv[3];
	c.h4 = ihv[4];
	SHA1_Update(&c, p, 64 * n);
	ihv[0] = c.h0;
	ihv[1] = c.h1;
	ihv[2] = c.h2;
	ihv[3] = c.h3;
	ihv[4] = c.h4;
}

/* ------------------------------------------------------------------ */
/* Which bit-condition kernel runs. */

static pw_sha1dc_ubc_fn ubc_fn;

static void pick(pw_sha1dc_ubc_fn fn)
{
	__atomic_store_n(&ubc_fn, fn, __ATOMIC_RELEASE);
}

int pw_sha1dc_select(enum pw_sha1dc_impl impl)
{
	pw_sha1dc_ubc_fn fn;

	switch (impl) {
	case PW_SHA1DC_GENERIC:
		pick(pw_sha1dc__ubc_generic);
		return 0;
	case PW_SHA1DC_AVX2:
		if (!(fn = pw_sha1dc__ubc_avx2()))
			return -1;
		pick(fn);
		return 0;
	case PW_SHA1DC_AVX512:
		if (!(fn = pw_sha1dc__ubc_avx512()))
			return -1;
		pick(fn);
		return 0;
	case PW_SHA1DC_AUTO:
	default:
		if ((fn = pw_sha1dc__ubc_avx512()))
			pick(fn);
		else if ((fn = pw_sha1dc__ubc_avx2()))
			pick(fn);
		else
			pick(pw_sha1dc__ubc_generic);
		return 0;
	}
}

static pw_sha1dc_ubc_fn current(size_t *batch)
{
	pw_sha1dc_ubc_fn fn = __atomic_load_n(&ubc_fn, __ATOMIC_ACQUIRE);

	if (!fn) {
		/* First use: every thread that gets here picks the same one. */
		pw_sha1dc_select(PW_SHA1DC_AUTO);
		fn = __atomic_load_n(&ubc_fn, __ATOMIC_ACQUIRE);
	}
	*batch = pw_sha1dc__ubc_batch(fn);
	return fn;
}

const char *pw_sha1dc_impl_name(void)
{
	size_t batch;
	pw_sha1dc_ubc_fn fn = current(&batch);

	if (fn == pw_sha1dc__ubc_generic)
		return "generic";
	return batch == 16 ? "avx512" : "avx2";
}

/* ------------------------------------------------------------------ */
/* The stream. */

static void process(struct pw_sha1dc *c, const uint8_t *p, size_t n)
{
	size_t batch;
	pw_sha1dc_ubc_fn ubc = current(&batch);

	while (n) {
		size_t k = n < batch ? n : batch, done = 0;
		uint32_t dvs[PW_SHA1DC_BATCH];
		uint32_t flagged = ubc(p, k, dvs);

		while (flagged) {
			size_t i = (size_t)__builtin_ctz(flagged);

			flagged &= flagged - 1;
			compress_blocks(c->ihv, p + 64 * done, i - done);
			if (check_block(c->ihv, p + 64 * i, dvs[i]))
				c->collision = 1;
			done = i + 1;
		}
		compress_blocks(c->ihv, p + 64 * done, k - done);
		p += 64 * k;
		n -= k;
	}
}

void pw_sha1dc_init(struct pw_sha1dc *c)
{
	memcpy(c->ihv, sha1_iv, sizeof(c->ihv));
	c->buflen = 0;
	c->total = 0;
	c->collision = 0;
}

void pw_sha1dc_update(struct pw_sha1dc *c, const void *data, size_t len)
{
	const uint8_t *p = data;

	c->total += len;
	if (c->buflen) {
		size_t take = 64 - c->buflen;

		if (take > len)
			take = len;
		memcpy(c->buf + c->buflen, p, take);
		c->buflen += (uint32_t)take;
		p += take;
		len -= take;
		if (c->buflen < 64)
			return;
		process(c, c->buf, 1);
		c->buflen = 0;
	}
	if (len >= 64) {
		process(c, p, len / 64);
		p += len & ~(size_t)63;
		len &= 63;
	}
	if (len) {
		memcpy(c->buf, p, len);
		c->buflen = (uint32_t)len;
	}
}

int pw_sha1dc_final(struct pw_sha1dc *c, uint8_t out[20])
{
	uint8_t pad[128];
	uint64_t bits = c->total * 8;
	size_t n = c->buflen, padlen = n < 56 ? 64 : 128;
	int i;

	memcpy(pad, c->buf, n);
	pad[n] = 0x80;
	memset(pad + n + 1, 0, padlen - n - 1);
	for (i = 0; i < 8; i++)
		pad[padlen - 1 - i] = (uint8_t)(bits >> (8 * i));
	process(c, pad, padlen / 64);
	for (i = 0; i < 5; i++) {
		out[4 * i] = (uint8_t)(c->ihv[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->ihv[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->ihv[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->ihv[i];
	}
	return c->collision ? 1 : 0;
}
