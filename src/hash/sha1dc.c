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

uint32_t pw_sha1dc__ubc_generic(const uint8_t *const *rows, size_t n, uint32_t *dvs)
{
	uint32_t flagged = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		uint32_t w[80], mask = 0;

		expand(w, rows[i]);
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

/* The round functions, written so that the value a step makes is needed
 * last: forward, the newest word is a (rol 5, one add) and the next newest
 * b; backward, the newest is d, and each function is split into a part
 * without d and a part with it (the two parts have no bit in common, so
 * their sum is their or), one and plus one subtraction after d is known. */
#define F_IF(b, c, d)  ((d) ^ ((b) & ((c) ^ (d))))
#define F_XOR(b, c, d) ((b) ^ (c) ^ (d))
#define F_MAJ(b, c, d) (((b) & (c)) | ((d) & ((b) | (c))))
#define STEP_F(t, b, c, d)                                                                         \
	((t) < 20   ? F_IF(b, c, d)                                                                \
	 : (t) < 40 ? F_XOR(b, c, d)                                                               \
	 : (t) < 60 ? F_MAJ(b, c, d)                                                               \
	            : F_XOR(b, c, d))
#define STEP_K(t) sha1_k[(t) / 20]

/* The software steps are called with constant bounds and unrolled whole,
 * so that the state stays in registers and each step's round function and
 * constant are fixed. */
#define UNROLLED static inline __attribute__((always_inline))

/* Steps from..to-1 forward over w ^ dm (dm may be NULL). */
UNROLLED void steps_forward(uint32_t s[5], const uint32_t *w, const uint32_t *dm, int from, int to)
{
	uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4];
	int t;

#pragma GCC unroll 80
	for (t = from; t < to; t++) {
		uint32_t x = e + STEP_K(t) + (w[t] ^ (dm ? dm[t] : 0));

		x += STEP_F(t, b, c, d);
		x += ROL(a, 5);
		e = d;
		d = c;
		c = ROL(b, 30);
		b = a;
		a = x;
	}
	s[0] = a;
	s[1] = b;
	s[2] = c;
	s[3] = d;
	s[4] = e;
}

/* Undo steps from-1 down to 0 over w ^ dm: the state before step `from`
 * becomes the state before step 0, the chaining value this block was
 * compressed from. */
UNROLLED void steps_backward(uint32_t s[5], const uint32_t *w, const uint32_t *dm, int from)
{
	uint32_t a = s[0], b = s[1], c = s[2], d = s[3], e = s[4];
	int t;

#pragma GCC unroll 80
	for (t = from - 1; t >= 0; t--) {
		uint32_t x = a - (w[t] ^ dm[t]) - STEP_K(t);

		a = b;
		b = ROL(c, 2);
		c = d;
		d = e;
		x -= ROL(a, 5);
		if (t < 20)
			e = (x - (b & c)) - (~b & d);
		else if (t >= 40 && t < 60)
			e = (x - (b & c)) - (d & (b ^ c));
		else
			e = x - ((b ^ c) ^ d);
	}
	s[0] = a;
	s[1] = b;
	s[2] = c;
	s[3] = d;
	s[4] = e;
}

/* From the state before step testt, back to a chaining value and forward
 * to an output, with the DV's message: an attack when it is ours. */
UNROLLED int recompress(const uint32_t st[5], const uint32_t *w, const uint32_t *dm, int testt,
                        const uint32_t out[5])
{
	uint32_t back[5], fwd[5];

	memcpy(back, st, sizeof(back));
	memcpy(fwd, st, sizeof(fwd));
	steps_backward(back, w, dm, testt);
	steps_forward(fwd, w, dm, testt, 80);
	return back[0] + fwd[0] == out[0] && back[1] + fwd[1] == out[1] &&
	       back[2] + fwd[2] == out[2] && back[3] + fwd[3] == out[3] &&
	       back[4] + fwd[4] == out[4];
}

/* The same test in one direction, where the SHA instructions can do most
 * of the steps: forward from step testt to the end gives the other
 * message's last state, so the chaining value it needs is out minus that;
 * forward from that chaining value over testt steps must then reach the
 * state at testt (the steps are a bijection for a given message). */
static int recompress_w2(pw_sha1dc_forward_fn fwd_sha, const uint32_t st[5], const uint32_t *w2,
                         int testt, const uint32_t out[5])
{
	uint32_t fwd[5], x[5];
	int t;

	memcpy(fwd, st, sizeof(fwd));
	if (testt == 58) {
		steps_forward(fwd, w2, NULL, 58, 60);
		fwd_sha(fwd, w2, 15, 20);
	} else {
		steps_forward(fwd, w2, NULL, 65, 68);
		fwd_sha(fwd, w2, 17, 20);
	}
	for (t = 0; t < 5; t++)
		x[t] = out[t] - fwd[t];
	if (testt == 58) {
		fwd_sha(x, w2, 0, 14);
		steps_forward(x, w2, NULL, 56, 58);
	} else {
		fwd_sha(x, w2, 0, 16);
		steps_forward(x, w2, NULL, 64, 65);
	}
	return !memcmp(x, st, sizeof(x));
}

static int recompress_sha(pw_sha1dc_forward_fn fwd_sha, const uint32_t st[5], const uint32_t *w,
                          const uint32_t *dm, int testt, const uint32_t out[5])
{
	uint32_t w2[80];
	int t;

	for (t = 0; t < 80; t++)
		w2[t] = w[t] ^ dm[t];
	return recompress_w2(fwd_sha, st, w2, testt, out);
}

/* A check of one DV waiting for another of the same testt, to run both
 * side by side: one check's SHA rounds wait on their latency. */
struct check_task {
	uint32_t w2[80], st[5], out[5];
	uint32_t *flag; /* set to 1 on a hit */
};
struct check_queue {
	struct check_task wait[2]; /* testt 58, 65 */
	int n[2];
};

/* The same test as recompress_sha for two DVs' messages of one testt. */
static void recompress_sha2(pw_sha1dc_forward2_fn fwd2, struct check_task *t, int testt)
{
	uint32_t fwd[2][5], x[2][5];
	int i, k;

	for (i = 0; i < 2; i++) {
		memcpy(fwd[i], t[i].st, sizeof(fwd[i]));
		if (testt == 58)
			steps_forward(fwd[i], t[i].w2, NULL, 58, 60);
		else
			steps_forward(fwd[i], t[i].w2, NULL, 65, 68);
	}
	fwd2(fwd[0], t[0].w2, fwd[1], t[1].w2, testt == 58 ? 15 : 17, 20);
	for (i = 0; i < 2; i++)
		for (k = 0; k < 5; k++)
			x[i][k] = t[i].out[k] - fwd[i][k];
	fwd2(x[0], t[0].w2, x[1], t[1].w2, 0, testt == 58 ? 14 : 16);
	for (i = 0; i < 2; i++) {
		if (testt == 58)
			steps_forward(x[i], t[i].w2, NULL, 56, 58);
		else
			steps_forward(x[i], t[i].w2, NULL, 64, 65);
		if (!memcmp(x[i], t[i].st, sizeof(x[i])))
			*t[i].flag = 1;
	}
}

/* What the check uses, chosen once: the SHA instructions, or software. */
struct check_impl {
	pw_sha1dc_states_fn states;
	pw_sha1dc_forward_fn forward;
	pw_sha1dc_forward2_fn forward2;
};
static struct check_impl check_sha, check_soft;
static const struct check_impl *check_impl;

static const struct check_impl *check_current(void)
{
	const struct check_impl *c = __atomic_load_n(&check_impl, __ATOMIC_ACQUIRE);

	if (!c) {
		check_sha.states = pw_sha1dc__states_sha();
		check_sha.forward = pw_sha1dc__forward_sha();
		check_sha.forward2 = pw_sha1dc__forward2_sha();
		c = check_sha.states && check_sha.forward ? &check_sha : &check_soft;
		__atomic_store_n(&check_impl, c, __ATOMIC_RELEASE);
	}
	return c;
}

/* For each DV of dvmask: from the block's state before its testt, with the
 * DV's message difference, back to a chaining value and forward to an
 * output; 1 when some DV gives the block's own output (an attack). */
static int check_dvs(const struct check_impl *c, const uint32_t w[80], const uint32_t s58[5],
                     const uint32_t s65[5], const uint32_t out[5], uint32_t dvmask)
{
	int hit = 0;

	while (dvmask) {
		const struct pw_sha1dc_dv *dv = &pw_sha1dc_dvs[__builtin_ctz(dvmask)];

		dvmask &= dvmask - 1;
		if (c->forward)
			hit |= recompress_sha(c->forward, dv->testt == 58 ? s58 : s65, w, dv->dm,
			                      dv->testt, out);
		else if (dv->testt == 58)
			hit |= recompress(s58, w, dv->dm, 58, out);
		else
			hit |= recompress(s65, w, dv->dm, 65, out);
	}
	return hit;
}

/* One block that met some DVs' conditions, compressed from chaining value
 * ihv: run it (ihv gets the result), keeping the states before steps 58 and
 * 65, then for each DV take the message with the DV's difference from there
 * back to a chaining value and forward to an output. The same output from
 * another chaining value is a collision. */
int pw_sha1dc__check(uint32_t ihv[5], const uint8_t *block, uint32_t dvmask)
{
	const struct check_impl *c = check_current();
	uint32_t w[80], s[5], s58[5], s65[5], out[5];
	int i, t;

	if (c->states) {
		uint32_t s56[5];

		c->states(ihv, block, w, s56, s, out);
		memcpy(s58, s56, sizeof(s58));
		steps_forward(s58, w, NULL, 56, 58);
		memcpy(s65, s, sizeof(s65));
		steps_forward(s65, w, NULL, 64, 65);
	} else {
		for (t = 0; t < 16; t++)
			w[t] = load_be32(block + 4 * t);
#pragma GCC unroll 64
		for (t = 16; t < 80; t++)
			w[t] = ROL(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
		memcpy(s, ihv, sizeof(s));
		steps_forward(s, w, NULL, 0, 58);
		memcpy(s58, s, sizeof(s));
		steps_forward(s, w, NULL, 58, 65);
		memcpy(s65, s, sizeof(s));
		steps_forward(s, w, NULL, 65, 80);
		for (i = 0; i < 5; i++)
			out[i] = ihv[i] + s[i];
	}

	memcpy(ihv, out, sizeof(out));
	return check_dvs(c, w, s58, s65, out, dvmask);
}

int pw_sha1dc__check_saved(const struct pw_sha1dc_saved *saved, uint32_t dvmask)
{
	uint32_t s58[5], s65[5];

	memcpy(s58, saved->s56, sizeof(s58));
	steps_forward(s58, saved->w, NULL, 56, 58);
	memcpy(s65, saved->s64, sizeof(s65));
	steps_forward(s65, saved->w, NULL, 64, 65);
	return check_dvs(check_current(), saved->w, s58, s65, saved->out, dvmask);
}

/* The checks of a flagged block whose states a fused kernel kept: each DV's
 * is paired with the one waiting in q (the flag is set later, at the latest
 * by queue_flush); in software, at once. */
static void queue_check(struct check_queue *q, const struct pw_sha1dc_saved *saved, uint32_t dvmask,
                        uint32_t *flag)
{
	const struct check_impl *c = check_current();
	uint32_t s58[5], s65[5];

	if (!c->forward2) {
		if (pw_sha1dc__check_saved(saved, dvmask))
			*flag = 1;
		return;
	}
	memcpy(s58, saved->s56, sizeof(s58));
	steps_forward(s58, saved->w, NULL, 56, 58);
	memcpy(s65, saved->s64, sizeof(s65));
	steps_forward(s65, saved->w, NULL, 64, 65);
	while (dvmask) {
		const struct pw_sha1dc_dv *dv = &pw_sha1dc_dvs[__builtin_ctz(dvmask)];
		int cls = dv->testt != 58, t;
		struct check_task two[2], *nt = q->n[cls] ? &two[1] : &q->wait[cls];

		dvmask &= dvmask - 1;
		for (t = 0; t < 80; t++)
			nt->w2[t] = saved->w[t] ^ dv->dm[t];
		memcpy(nt->st, cls ? s65 : s58, sizeof(nt->st));
		memcpy(nt->out, saved->out, sizeof(nt->out));
		nt->flag = flag;
		if (!q->n[cls]) {
			q->n[cls] = 1;
			continue;
		}
		two[0] = q->wait[cls];
		q->n[cls] = 0;
		recompress_sha2(c->forward2, two, dv->testt);
	}
}

/* The checks still waiting, alone. */
static void queue_flush(struct check_queue *q)
{
	const struct check_impl *c = check_current();
	int cls;

	for (cls = 0; cls < 2; cls++)
		if (q->n[cls]) {
			struct check_task *t = &q->wait[cls];

			if (recompress_w2(c->forward, t->st, t->w2, cls ? 65 : 58, t->out))
				*t->flag = 1;
			q->n[cls] = 0;
		}
}

/* For the tests: the check in software only (1) or as the CPU allows (0). */
void pw_sha1dc__check_software(int on)
{
	check_current();
	__atomic_store_n(&check_impl,
	                 on ? &check_soft : (check_sha.states ? &check_sha : &check_soft),
	                 __ATOMIC_RELEASE);
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
	/* nothing buffered (num 0): SHA1_Update reads data[] only after it fills it */
	c.Nl = c.Nh = 0;
	c.num = 0;
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

struct impl {
	pw_sha1dc_ubc_fn ubc;
	pw_sha1dc_fused_fn fused;   /* NULL: the bit conditions, then OpenSSL */
	pw_sha1dc_fused2_fn fused2; /* two messages at once; NULL: one after the other */
	const char *name;
};
static struct impl impls[5];
static int chosen; /* index into impls + 1; 0 until the first use */

static int try_impl(enum pw_sha1dc_impl which)
{
	struct impl m = {NULL, NULL, NULL, NULL};

	switch (which) {
	case PW_SHA1DC_GENERIC:
		m.ubc = pw_sha1dc__ubc_generic;
		m.name = "generic";
		break;
	case PW_SHA1DC_AVX2:
		m.ubc = pw_sha1dc__ubc_avx2();
		m.name = "avx2";
		break;
	case PW_SHA1DC_AVX512:
		m.ubc = pw_sha1dc__ubc_avx512();
		m.name = "avx512";
		break;
	case PW_SHA1DC_AVX512_SHA:
		m.ubc = pw_sha1dc__ubc_avx512();
		m.fused = pw_sha1dc__fused_avx512();
		m.fused2 = pw_sha1dc__fused2_avx512();
		m.name = "avx512+sha";
		if (!m.fused)
			return -1;
		break;
	default:
		return -1;
	}
	if (!m.ubc)
		return -1;
	impls[which] = m;
	__atomic_store_n(&chosen, (int)which + 1, __ATOMIC_RELEASE);
	return 0;
}

int pw_sha1dc_select(enum pw_sha1dc_impl impl)
{
	if (impl != PW_SHA1DC_AUTO)
		return try_impl(impl);
	/* the best this CPU has; every thread that gets here picks the same */
	if (try_impl(PW_SHA1DC_AVX512_SHA) && try_impl(PW_SHA1DC_AVX512) &&
	    try_impl(PW_SHA1DC_AVX2))
		try_impl(PW_SHA1DC_GENERIC);
	return 0;
}

static const struct impl *current(void)
{
	int c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);

	if (!c) {
		pw_sha1dc_select(PW_SHA1DC_AUTO);
		c = __atomic_load_n(&chosen, __ATOMIC_ACQUIRE);
	}
	return &impls[c - 1];
}

const char *pw_sha1dc_impl_name(void)
{
	return current()->name;
}

/* ------------------------------------------------------------------ */
/* The stream. */

/* Blocks come in segments: runs of whole blocks in memory. */
struct seg {
	const uint8_t *p;
	size_t n;
};

/* The first n & ~15 of the n blocks at rows through the fused kernel, 16 at
 * a time, each flagged block checked from the states it kept; returns how
 * many blocks it took. */
static size_t fused_blocks(struct pw_sha1dc *c, pw_sha1dc_fused_fn fused, const uint8_t **rows,
                           size_t n, struct check_queue *q)
{
	struct pw_sha1dc_saved saved[PW_SHA1DC_BATCH];
	uint32_t dvs[PW_SHA1DC_BATCH], f;
	size_t at;

	for (at = 0; at + PW_SHA1DC_BATCH <= n; at += PW_SHA1DC_BATCH)
		for (f = fused(c->ihv, rows + at, dvs, saved); f; f &= f - 1) {
			int i = __builtin_ctz(f);

			queue_check(q, &saved[i], dvs[i], &c->collision);
		}
	return at;
}

/* Up to 64 blocks at a time: the bit conditions of all of them first, then
 * OpenSSL's compression over each run of unflagged blocks (few calls) and
 * the software steps for each flagged one. */
#define CHUNK 64

static void process(struct pw_sha1dc *c, const struct seg *segs, size_t nseg)
{
	const struct impl *m = current();
	size_t batch = pw_sha1dc__ubc_batch(m->ubc), si = 0, so = 0;
	struct check_queue q;

	q.n[0] = q.n[1] = 0;
	while (si < nseg) {
		const uint8_t *rows[CHUNK];
		uint32_t dvs[CHUNK];
		uint64_t flagged = 0;
		size_t k = 0, at, i;

		for (; k < CHUNK && si < nseg; k++) {
			rows[k] = segs[si].p + 64 * so;
			if (++so == segs[si].n) {
				si++;
				so = 0;
			}
		}
		i = m->fused ? fused_blocks(c, m->fused, rows, k, &q) : 0;
		for (at = i; at < k; at += batch)
			flagged |= (uint64_t)m->ubc(rows + at, k - at < batch ? k - at : batch,
			                            dvs + at)
			           << at;
		while (i < k) {
			size_t j = i + 1;

			if (flagged >> i & 1) {
				if (pw_sha1dc__check(c->ihv, rows[i], dvs[i]))
					c->collision = 1;
				i++;
				continue;
			}
			while (j < k && !(flagged >> j & 1) && rows[j] == rows[j - 1] + 64)
				j++;
			compress_blocks(c->ihv, rows[i], j - i);
			i = j;
		}
	}
	queue_flush(&q);
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
	struct seg segs[2];
	size_t ns = 0;

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
		segs[ns].p = c->buf;
		segs[ns++].n = 1;
	}
	if (len >= 64) {
		segs[ns].p = p;
		segs[ns++].n = len / 64;
		p += len & ~(size_t)63;
		len &= 63;
	}
	if (ns)
		process(c, segs, ns);
	c->buflen = 0;
	if (len) {
		memcpy(c->buf, p, len);
		c->buflen = (uint32_t)len;
	}
}

/* The last bytes (fewer than 64) and the padding: one or two blocks. */
static size_t pad(uint8_t out[128], const uint8_t *last, size_t n, uint64_t total)
{
	uint64_t bits = total * 8;
	size_t len = n < 56 ? 64 : 128;
	int i;

	if (n)
		memcpy(out, last, n);
	out[n] = 0x80;
	memset(out + n + 1, 0, len - n - 1);
	for (i = 0; i < 8; i++)
		out[len - 1 - i] = (uint8_t)(bits >> (8 * i));
	return len / 64;
}

int (*pw_sha1dc__test_collision)(const uint8_t digest[20]);

static int digest(struct pw_sha1dc *c, uint8_t out[20])
{
	int i;

	for (i = 0; i < 5; i++) {
		out[4 * i] = (uint8_t)(c->ihv[i] >> 24);
		out[4 * i + 1] = (uint8_t)(c->ihv[i] >> 16);
		out[4 * i + 2] = (uint8_t)(c->ihv[i] >> 8);
		out[4 * i + 3] = (uint8_t)c->ihv[i];
	}
	if (pw_sha1dc__test_collision && pw_sha1dc__test_collision(out))
		return 1;
	return c->collision ? 1 : 0;
}

int pw_sha1dc_final(struct pw_sha1dc *c, uint8_t out[20])
{
	uint8_t tail[128];
	struct seg seg;

	seg.p = tail;
	seg.n = pad(tail, c->buf, c->buflen, c->total);
	process(c, &seg, 1);
	return digest(c, out);
}

/* The blocks of a then b and the padding as segments (at most 4), with
 * join and tail holding the blocks made of copied bytes. */
static size_t oneshot_segs(const void *a, size_t alen, const void *b, size_t blen, uint8_t join[64],
                           uint8_t tail[128], struct seg segs[4])
{
	/* an empty part may be NULL: never offset or copy from NULL */
	const uint8_t *pa = alen ? a : (const void *)"", *pb = blen ? b : (const void *)"";
	size_t ns = 0, rest;
	uint64_t total = (uint64_t)alen + blen;

	if (alen >= 64) {
		segs[ns].p = pa;
		segs[ns++].n = alen / 64;
		pa += alen & ~(size_t)63;
		alen &= 63;
	}
	if (alen) {
		/* a's last bytes and b's first in one block; or all that is left */
		size_t take = 64 - alen < blen ? 64 - alen : blen;

		memcpy(join, pa, alen);
		memcpy(join + alen, pb, take);
		pb += take;
		blen -= take;
		if (alen + take < 64) {
			segs[ns].p = tail;
			segs[ns++].n = pad(tail, join, alen + take, total);
			return ns;
		}
		segs[ns].p = join;
		segs[ns++].n = 1;
	}
	if (blen >= 64) {
		segs[ns].p = pb;
		segs[ns++].n = blen / 64;
	}
	rest = blen & 63;
	segs[ns].p = tail;
	segs[ns++].n = pad(tail, pb + (blen & ~(size_t)63), rest, total);
	return ns;
}

int pw_sha1dc_oneshot(const void *a, size_t alen, const void *b, size_t blen, uint8_t out[20])
{
	uint8_t join[64], tail[128];
	struct pw_sha1dc c;
	struct seg segs[4];
	size_t ns = oneshot_segs(a, alen, b, blen, join, tail, segs);

	pw_sha1dc_init(&c);
	process(&c, segs, ns);
	return digest(&c, out);
}

/* A message's segments and how far into them the fused pairs got. */
struct cursor {
	struct seg segs[4];
	size_t ns, si, left; /* left: blocks not taken yet */
};

static void cursor_start(struct cursor *cu)
{
	size_t i;

	cu->si = 0;
	cu->left = 0;
	for (i = 0; i < cu->ns; i++)
		cu->left += cu->segs[i].n;
}

/* The next n blocks' addresses into rows. */
static void cursor_take(struct cursor *cu, const uint8_t **rows, size_t n)
{
	size_t k = 0;

	while (k < n) {
		struct seg *s = &cu->segs[cu->si];
		size_t take = s->n < n - k ? s->n : n - k, j;

		for (j = 0; j < take; j++)
			rows[k + j] = s->p + 64 * j;
		s->p += 64 * take;
		s->n -= take;
		k += take;
		if (!s->n)
			cu->si++;
	}
	cu->left -= n;
}

int pw_sha1dc_oneshot2(const struct pw_sha1dc_msg m[2], uint8_t out[2][20])
{
	const struct impl *im = current();
	uint8_t join[2][64], tail[2][128];
	struct cursor cu[2];
	struct pw_sha1dc c[2];
	struct check_queue q;
	int i;

	for (i = 0; i < 2; i++) {
		cu[i].ns = oneshot_segs(m[i].a, m[i].alen, m[i].b, m[i].blen, join[i], tail[i],
		                        cu[i].segs);
		cursor_start(&cu[i]);
		pw_sha1dc_init(&c[i]);
	}
	q.n[0] = q.n[1] = 0;
	/* both chains in the fused kernel, 8 blocks of each at a time */
	while (im->fused2 && cu[0].left >= 8 && cu[1].left >= 8) {
		struct pw_sha1dc_saved saved[PW_SHA1DC_BATCH];
		uint32_t dvs[PW_SHA1DC_BATCH], f;
		const uint8_t *rows[PW_SHA1DC_BATCH];

		cursor_take(&cu[0], rows, 8);
		cursor_take(&cu[1], rows + 8, 8);
		for (f = im->fused2(c[0].ihv, c[1].ihv, rows, dvs, saved); f; f &= f - 1) {
			int l = __builtin_ctz(f);

			queue_check(&q, &saved[l], dvs[l], &c[l / 8].collision);
		}
	}
	queue_flush(&q);
	for (i = 0; i < 2; i++)
		process(&c[i], cu[i].segs + cu[i].si, cu[i].ns - cu[i].si);
	return digest(&c[0], out[0]) | digest(&c[1], out[1]) << 1;
}
