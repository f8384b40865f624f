/* The bit conditions of SHA-1 collision detection for many blocks at once:
 * one block per 32-bit lane, 8 lanes with AVX2 and 16 with AVX-512. The
 * message words are transposed so that a vector holds word t of every block,
 * expanded to W[64] (the conditions use W[35..64]) and tested with the
 * generated code of sha1dc-ubc.inc. Built for any x86-64 and used only when
 * the CPU has the instructions (checked once at run time). */
#include <string.h>

#include "hash/sha1dc-priv.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

#define AVX2_TARGET   __attribute__((target("avx2")))
#define AVX512_TARGET __attribute__((target("avx512f,avx512bw")))

/* For each flagged lane, which DVs passed: bit i of pass[dv]. */
static void lanes_to_dvs(const uint16_t *pass, uint32_t flagged, uint32_t *dvs)
{
	while (flagged) {
		int i = __builtin_ctz(flagged), dv;
		uint32_t m = 0;

		flagged &= flagged - 1;
		for (dv = 0; dv < PW_SHA1DC_NDV; dv++)
			m |= (uint32_t)(pass[dv] >> i & 1) << dv;
		dvs[i] = m;
	}
}

/* ------------------------------------------------------------------ */
/* AVX2: 8 blocks. */

AVX2_TARGET static inline __m256i rol256(__m256i x, int n)
{
	return _mm256_or_si256(_mm256_slli_epi32(x, n), _mm256_srli_epi32(x, 32 - n));
}

/* Rows r[0..7] (8 words each) become columns: r[t] = word t of every row. */
AVX2_TARGET static inline void transpose8(__m256i r[8])
{
	__m256i a[8], b[8];
	int i;

	for (i = 0; i < 8; i += 2) {
		a[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
		a[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
	}
	for (i = 0; i < 8; i += 4) {
		b[i] = _mm256_unpacklo_epi64(a[i], a[i + 2]);
		b[i + 1] = _mm256_unpackhi_epi64(a[i], a[i + 2]);
		b[i + 2] = _mm256_unpacklo_epi64(a[i + 1], a[i + 3]);
		b[i + 3] = _mm256_unpackhi_epi64(a[i + 1], a[i + 3]);
	}
	/* b[j] (rows 0-3) and b[4 + j] (rows 4-7): 128-bit lane k holds word
	 * 4k + j of its four rows. */
	for (i = 0; i < 4; i++) {
		r[i] = _mm256_permute2x128_si256(b[i], b[4 + i], 0x20);
		r[4 + i] = _mm256_permute2x128_si256(b[i], b[4 + i], 0x31);
	}
}

AVX2_TARGET static uint32_t ubc_avx2(const uint8_t *const *rows, size_t n, uint32_t *dvs)
{
	const __m256i bswap =
	        _mm256_setr_epi8(3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12, 3, 2, 1, 0,
	                         7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12);
	__m256i w[65], lo[8], hi[8];
	uint16_t pass[PW_SHA1DC_NDV];
	uint32_t flagged = 0;
	size_t i;
	int t;

	for (i = 0; i < 8; i++) {
		if (i < n) {
			lo[i] = _mm256_loadu_si256((const __m256i *)rows[i]);
			hi[i] = _mm256_loadu_si256((const __m256i *)(rows[i] + 32));
		} else {
			lo[i] = hi[i] = _mm256_setzero_si256();
		}
	}
	transpose8(lo);
	transpose8(hi);
	for (t = 0; t < 8; t++) {
		w[t] = _mm256_shuffle_epi8(lo[t], bswap);
		w[8 + t] = _mm256_shuffle_epi8(hi[t], bswap);
	}
	for (t = 16; t <= 64; t++)
		w[t] = rol256(_mm256_xor_si256(_mm256_xor_si256(w[t - 3], w[t - 8]),
		                               _mm256_xor_si256(w[t - 14], w[t - 16])),
		              1);

#define V              __m256i
#define W(t)           w[t]
#define V_ROL(x, n)    rol256((x), (n))
#define V_XOR(a, b)    _mm256_xor_si256((a), (b))
#define V_OR(a, b)     _mm256_or_si256((a), (b))
#define V_AND(a, b)    _mm256_and_si256((a), (b))
#define V_ANDNOT(a, b) _mm256_andnot_si256((a), (b))
#define V_ZERO         _mm256_setzero_si256()
#define V_ONES         _mm256_set1_epi32(-1)
#define PASS(dv, x)                                                                                \
	do {                                                                                       \
		__m256i bit0_ = _mm256_slli_epi32((x), 31);                                        \
		pass[dv] = (uint16_t)_mm256_movemask_ps(_mm256_castsi256_ps(bit0_));               \
		flagged |= pass[dv];                                                               \
	} while (0)
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

	flagged &= n >= 8 ? 0xffu : (1u << n) - 1;
	if (flagged)
		lanes_to_dvs(pass, flagged, dvs);
	return flagged;
}

/* ------------------------------------------------------------------ */
/* AVX-512: 16 blocks. */

/* Rows r[0..15] (16 words each) become columns: r[t] = word t of every row. */
AVX512_TARGET __attribute__((always_inline)) static inline void transpose16(__m512i r[16])
{
	__m512i a[16], b[16];
	int i, j;

	for (i = 0; i < 16; i += 2) {
		a[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
		a[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
	}
	/* b[4g + j]: rows 4g..4g+3, 128-bit lane k holds word 4k + j */
	for (i = 0; i < 16; i += 4) {
		b[i] = _mm512_unpacklo_epi64(a[i], a[i + 2]);
		b[i + 1] = _mm512_unpackhi_epi64(a[i], a[i + 2]);
		b[i + 2] = _mm512_unpacklo_epi64(a[i + 1], a[i + 3]);
		b[i + 3] = _mm512_unpackhi_epi64(a[i + 1], a[i + 3]);
	}
	for (j = 0; j < 4; j++) {
		__m512i x0 = _mm512_shuffle_i32x4(b[j], b[4 + j], 0x44);
		__m512i x1 = _mm512_shuffle_i32x4(b[j], b[4 + j], 0xee);
		__m512i y0 = _mm512_shuffle_i32x4(b[8 + j], b[12 + j], 0x44);
		__m512i y1 = _mm512_shuffle_i32x4(b[8 + j], b[12 + j], 0xee);

		r[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
		r[4 + j] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
		r[8 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
		r[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
	}
}

AVX512_TARGET static uint32_t ubc_avx512(const uint8_t *const *rows, size_t n, uint32_t *dvs)
{
	const __m512i bswap = _mm512_set4_epi32(0x0c0d0e0f, 0x08090a0b, 0x04050607, 0x00010203);
	__m512i w[65];
	uint16_t pass[PW_SHA1DC_NDV];
	uint32_t flagged = 0;
	size_t i;
	int t;

	for (i = 0; i < 16; i++)
		w[i] = i < n ? _mm512_loadu_si512((const void *)rows[i]) : _mm512_setzero_si512();
	transpose16(w);
	for (t = 0; t < 16; t++)
		w[t] = _mm512_shuffle_epi8(w[t], bswap);
	for (t = 16; t <= 64; t++)
		w[t] = _mm512_rol_epi32(
		        _mm512_ternarylogic_epi32(w[t - 3], w[t - 8], w[t - 14], 0x96) ^ w[t - 16],
		        1);

#define V              __m512i
#define W(t)           w[t]
#define V_ROL(x, n)    _mm512_rol_epi32((x), (n))
#define V_XOR(a, b)    _mm512_xor_si512((a), (b))
#define V_OR(a, b)     _mm512_or_si512((a), (b))
#define V_AND(a, b)    _mm512_and_si512((a), (b))
#define V_ANDNOT(a, b) _mm512_andnot_si512((a), (b))
#define V_ZERO         _mm512_setzero_si512()
#define V_ONES         _mm512_set1_epi32(-1)
#define PASS(dv, x)                                                                                \
	do {                                                                                       \
		pass[dv] = _mm512_test_epi32_mask((x), _mm512_set1_epi32(1));                      \
		flagged |= pass[dv];                                                               \
	} while (0)
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

	flagged &= n >= 16 ? 0xffffu : (1u << n) - 1;
	if (flagged)
		lanes_to_dvs(pass, flagged, dvs);
	return flagged;
}

/* ------------------------------------------------------------------ */
/* The states a flagged block's check starts from, with the SHA
 * instructions: the expanded words come out of their message schedule, and
 * the working states before steps 56 and 64 from their rounds (four steps a
 * round), so only a few steps are left to do in software. */

#define SHA_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* The five words of the state in a round's ABCD register (A in the top lane)
 * and the A four steps before (E is that A rotated by 30). */
SHA_TARGET static void ni_state(__m128i abcd, __m128i prev, uint32_t s[5])
{
	uint32_t a4 = (uint32_t)_mm_extract_epi32(prev, 3);

	s[0] = (uint32_t)_mm_extract_epi32(abcd, 3);
	s[1] = (uint32_t)_mm_extract_epi32(abcd, 2);
	s[2] = (uint32_t)_mm_extract_epi32(abcd, 1);
	s[3] = (uint32_t)_mm_extract_epi32(abcd, 0);
	s[4] = a4 << 30 | a4 >> 2;
}

/* g[k] holds W[4k..4k+3], the first in the top lane; each group is made from
 * the four before it. Round group k (steps 4k..4k+3) adds E, which comes
 * from the state four steps back (nexte), to its first word. */
SHA_TARGET static void states_sha(const uint32_t ihv[5], const uint8_t *block, uint32_t w[80],
                                  uint32_t s56[5], uint32_t s64[5], uint32_t out[5])
{
	const __m128i bswap = _mm_set_epi64x(0x0001020304050607ll, 0x08090a0b0c0d0e0fll);
	__m128i abcd0 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)ihv), 0x1b);
	__m128i e0 = _mm_set_epi32((int)ihv[4], 0, 0, 0);
	__m128i g[20], abcd = abcd0, prev = abcd0, e;
	int k;

	for (k = 0; k < 4; k++)
		g[k] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(block + 16 * k)), bswap);
	for (k = 4; k < 20; k++)
		g[k] = _mm_sha1msg2_epu32(
		        _mm_xor_si128(_mm_sha1msg1_epu32(g[k - 4], g[k - 3]), g[k - 2]), g[k - 1]);
	for (k = 0; k < 20; k++)
		_mm_storeu_si128((__m128i *)(w + 4 * k), _mm_shuffle_epi32(g[k], 0x1b));
#define NI_ROUNDS(k, f)                                                                            \
	do {                                                                                       \
		e = (k) ? _mm_sha1nexte_epu32(prev, g[k]) : _mm_add_epi32(e0, g[0]);               \
		prev = abcd;                                                                       \
		abcd = _mm_sha1rnds4_epu32(abcd, e, f);                                            \
	} while (0)
	NI_ROUNDS(0, 0);
	NI_ROUNDS(1, 0);
	NI_ROUNDS(2, 0);
	NI_ROUNDS(3, 0);
	NI_ROUNDS(4, 0);
	NI_ROUNDS(5, 1);
	NI_ROUNDS(6, 1);
	NI_ROUNDS(7, 1);
	NI_ROUNDS(8, 1);
	NI_ROUNDS(9, 1);
	NI_ROUNDS(10, 2);
	NI_ROUNDS(11, 2);
	NI_ROUNDS(12, 2);
	NI_ROUNDS(13, 2);
	ni_state(abcd, prev, s56);
	NI_ROUNDS(14, 2);
	NI_ROUNDS(15, 3);
	ni_state(abcd, prev, s64);
	NI_ROUNDS(16, 3);
	NI_ROUNDS(17, 3);
	NI_ROUNDS(18, 3);
	NI_ROUNDS(19, 3);
#undef NI_ROUNDS
	/* E after 80 steps is A of step 76 rotated: nexte adds it to E's start */
	e0 = _mm_sha1nexte_epu32(prev, e0);
	abcd = _mm_add_epi32(abcd, abcd0);
	_mm_storeu_si128((__m128i *)out, _mm_shuffle_epi32(abcd, 0x1b));
	out[4] = (uint32_t)_mm_extract_epi32(e0, 3);
}

/* Round groups g0..g1-1 (steps 4*g0 .. 4*g1-1) from state s over the
 * expanded words w (any message: a DV's too). */
SHA_TARGET static void forward_sha(uint32_t s[5], const uint32_t *w, int g0, int g1)
{
	__m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)s), 0x1b);
	__m128i prev = abcd, e = _mm_set_epi32((int)s[4], 0, 0, 0), x;
	int k = g0;

	/* one loop for each round function: its number is an immediate, and
	 * a switch in one loop mispredicts where the calls' ranges differ */
#define FWD_LOOP(f)                                                                                \
	for (; k < g1 && k < 5 * ((f) + 1); k++) {                                                 \
		__m128i g =                                                                        \
		        _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(w + 4 * k)), 0x1b);    \
                                                                                                   \
		x = k == g0 ? _mm_add_epi32(e, g) : _mm_sha1nexte_epu32(prev, g);                  \
		prev = abcd;                                                                       \
		abcd = _mm_sha1rnds4_epu32(abcd, x, f);                                            \
	}
	FWD_LOOP(0)
	FWD_LOOP(1)
	FWD_LOOP(2)
	FWD_LOOP(3)
#undef FWD_LOOP
	ni_state(abcd, prev, s);
}

/* ------------------------------------------------------------------ */
/* The fused kernels: blocks compressed with the SHA instructions while their
 * bit conditions are tested in AVX-512 lanes. A block's rounds depend on
 * the block before, so one message's SHA-1 waits on the latency of its
 * rounds and leaves the vector units mostly idle; the conditions, which
 * need the message words only, fill them, and so does a second message's
 * chain where there is one. sha1dc-fused.inc is the kernel's body, made
 * twice: 16 blocks of one message, and 8 blocks each of two messages. */

#define FUSED_TARGET __attribute__((target("avx512f,avx512bw,sha,sse4.1,ssse3")))

/* One chain of SHA-1 blocks: the chaining value (ABCD with A in the top
 * lane, E in the top lane of e0), the working state and the schedule. */
struct chain {
	__m128i abcd0, e0, abcd, prev, mw[20];
};

/* A chaining value from its registers. */
FUSED_TARGET static void ni_ihv(__m128i abcd, __m128i e, uint32_t s[5])
{
	s[0] = (uint32_t)_mm_extract_epi32(abcd, 3);
	s[1] = (uint32_t)_mm_extract_epi32(abcd, 2);
	s[2] = (uint32_t)_mm_extract_epi32(abcd, 1);
	s[3] = (uint32_t)_mm_extract_epi32(abcd, 0);
	s[4] = (uint32_t)_mm_extract_epi32(e, 3);
}

FUSED_TARGET static void chain_init(struct chain *c, const uint32_t ihv[5])
{
	c->abcd0 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)ihv), 0x1b);
	c->e0 = _mm_set_epi32((int)ihv[4], 0, 0, 0);
}

/* The 80 expanded words of a block from the SHA message schedule. */
FUSED_TARGET static void expand_sha(const uint8_t *block, uint32_t w[80])
{
	const __m128i bswap = _mm_set_epi64x(0x0001020304050607ll, 0x08090a0b0c0d0e0fll);
	__m128i g[20];
	int k;

	for (k = 0; k < 4; k++)
		g[k] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(block + 16 * k)), bswap);
	for (k = 4; k < 20; k++)
		g[k] = _mm_sha1msg2_epu32(
		        _mm_xor_si128(_mm_sha1msg1_epu32(g[k - 4], g[k - 3]), g[k - 2]), g[k - 1]);
	for (k = 0; k < 20; k++)
		_mm_storeu_si128((__m128i *)(w + 4 * k), _mm_shuffle_epi32(g[k], 0x1b));
}

#define FUSED_LOAD(p) _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p)), bswap)
/* Round group k (0..19) of chain c over the block at row, which is lane
 * `lane` of the conditions: the states before steps 56 and 64 and the
 * chaining value after the block are kept for the lane. */
#define CHAIN_RG(c, row, lane, k)                                                                  \
	do {                                                                                       \
		if ((k) == 0) {                                                                    \
			(c).mw[0] = FUSED_LOAD(row);                                               \
			(c).mw[1] = FUSED_LOAD((row) + 16);                                        \
			(c).mw[2] = FUSED_LOAD((row) + 32);                                        \
			(c).mw[3] = FUSED_LOAD((row) + 48);                                        \
			(c).abcd = (c).prev = (c).abcd0;                                           \
		}                                                                                  \
		if ((k) >= 4)                                                                      \
			(c).mw[k] = _mm_sha1msg2_epu32(                                            \
			        _mm_xor_si128(_mm_sha1msg1_epu32((c).mw[(k)-4], (c).mw[(k)-3]),    \
			                      (c).mw[(k)-2]),                                      \
			        (c).mw[(k)-1]);                                                    \
		x_ = (k) ? _mm_sha1nexte_epu32((c).prev, (c).mw[k])                                \
		         : _mm_add_epi32((c).e0, (c).mw[0]);                                       \
		(c).prev = (c).abcd;                                                               \
		(c).abcd = _mm_sha1rnds4_epu32((c).abcd, x_, (k) / 5);                             \
		if ((k) == 13) {                                                                   \
			s56_abcd[lane] = (c).abcd;                                                 \
			s56_prev[lane] = (c).prev;                                                 \
		} else if ((k) == 15) {                                                            \
			s64_abcd[lane] = (c).abcd;                                                 \
			s64_prev[lane] = (c).prev;                                                 \
		} else if ((k) == 19) {                                                            \
			(c).e0 = _mm_sha1nexte_epu32((c).prev, (c).e0);                            \
			(c).abcd0 = _mm_add_epi32((c).abcd, (c).abcd0);                            \
			out_abcd[lane] = (c).abcd0;                                                \
			out_e[lane] = (c).e0;                                                      \
		}                                                                                  \
	} while (0)

#define FUSED_NAME    fused_avx512
#define FUSED_STREAMS 1
#include "hash/sha1dc-fused.inc"
#undef FUSED_NAME
#undef FUSED_STREAMS
#define FUSED_NAME    fused2_avx512
#define FUSED_STREAMS 2
#include "hash/sha1dc-fused.inc"
#undef FUSED_NAME
#undef FUSED_STREAMS
#undef CHAIN_RG
#undef FUSED_LOAD

/* forward_sha for two states and messages at once: one chain of rounds
 * waits on their latency, two run in the same time. */
SHA_TARGET static void forward2_sha(uint32_t sa[5], const uint32_t *wa, uint32_t sb[5],
                                    const uint32_t *wb, int g0, int g1)
{
	__m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)sa), 0x1b);
	__m128i abcd_b = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)sb), 0x1b);
	__m128i prev = abcd, prev_b = abcd_b, x, x_b;
	__m128i e = _mm_set_epi32((int)sa[4], 0, 0, 0), e_b = _mm_set_epi32((int)sb[4], 0, 0, 0);
	int k = g0;

#define FWD2_LOOP(f)                                                                               \
	for (; k < g1 && k < 5 * ((f) + 1); k++) {                                                 \
		__m128i g =                                                                        \
		        _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(wa + 4 * k)), 0x1b);   \
		__m128i g_b =                                                                      \
		        _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(wb + 4 * k)), 0x1b);   \
                                                                                                   \
		x = k == g0 ? _mm_add_epi32(e, g) : _mm_sha1nexte_epu32(prev, g);                  \
		x_b = k == g0 ? _mm_add_epi32(e_b, g_b) : _mm_sha1nexte_epu32(prev_b, g_b);        \
		prev = abcd;                                                                       \
		prev_b = abcd_b;                                                                   \
		abcd = _mm_sha1rnds4_epu32(abcd, x, f);                                            \
		abcd_b = _mm_sha1rnds4_epu32(abcd_b, x_b, f);                                      \
	}
	FWD2_LOOP(0)
	FWD2_LOOP(1)
	FWD2_LOOP(2)
	FWD2_LOOP(3)
#undef FWD2_LOOP
	ni_state(abcd, prev, sa);
	ni_state(abcd_b, prev_b, sb);
}

/* CPUID leaf 7: EBX bit 29 (not every compiler's __builtin_cpu_supports
 * knows "sha"). The SHA instructions use xmm registers only: no OS support
 * to check beyond SSE. */
static int have_sha(void)
{
	unsigned a, b, c, d;

	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1);
}

pw_sha1dc_states_fn pw_sha1dc__states_sha(void)
{
	return have_sha() ? states_sha : NULL;
}

pw_sha1dc_forward_fn pw_sha1dc__forward_sha(void)
{
	return have_sha() ? forward_sha : NULL;
}

pw_sha1dc_forward2_fn pw_sha1dc__forward2_sha(void)
{
	return have_sha() ? forward2_sha : NULL;
}

pw_sha1dc_fused_fn pw_sha1dc__fused_avx512(void)
{
	return pw_sha1dc__ubc_avx512() && have_sha() ? fused_avx512 : NULL;
}

pw_sha1dc_fused2_fn pw_sha1dc__fused2_avx512(void)
{
	return pw_sha1dc__ubc_avx512() && have_sha() ? fused2_avx512 : NULL;
}

pw_sha1dc_ubc_fn pw_sha1dc__ubc_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") ? ubc_avx2 : NULL;
}

pw_sha1dc_ubc_fn pw_sha1dc__ubc_avx512(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") ? ubc_avx512
	                                                                               : NULL;
}

size_t pw_sha1dc__ubc_batch(pw_sha1dc_ubc_fn fn)
{
	if (fn == ubc_avx512)
		return 16;
	if (fn == ubc_avx2)
		return 8;
	return PW_SHA1DC_BATCH;
}

#else

pw_sha1dc_fused_fn pw_sha1dc__fused_avx512(void)
{
	return NULL;
}

pw_sha1dc_fused2_fn pw_sha1dc__fused2_avx512(void)
{
	return NULL;
}

pw_sha1dc_ubc_fn pw_sha1dc__ubc_avx2(void)
{
	return NULL;
}

pw_sha1dc_ubc_fn pw_sha1dc__ubc_avx512(void)
{
	return NULL;
}

size_t pw_sha1dc__ubc_batch(pw_sha1dc_ubc_fn fn)
{
	(void)fn;
	return PW_SHA1DC_BATCH;
}

pw_sha1dc_states_fn pw_sha1dc__states_sha(void)
{
	return NULL;
}

pw_sha1dc_forward_fn pw_sha1dc__forward_sha(void)
{
	return NULL;
}

pw_sha1dc_forward2_fn pw_sha1dc__forward2_sha(void)
{
	return NULL;
}

#endif
