/* Delta creation. The base is cut into fixed 16-byte blocks whose polynomial
 * hashes go into a bucketed table; the target is scanned with the same hash
 * rolled one byte at a time. A hit is verified, extended forward (and backward
 * into not yet emitted literal bytes) and the longest candidate becomes a copy;
 * everything else is inserted literally. */
#include <stdlib.h>
#include <string.h>

#include "pack/delta-create.h"
#include "odb/delta.h"

#define HASH_MUL 0x100000001b3ull /* odd multiplier of the rolling hash */
/* At most this many candidates are tried per lookup; crowded buckets (runs of
 * repeated data) are sampled evenly instead of scanned. */
#define BUCKET_SCAN 64
/* Longest literal run in one insert instruction. */
#define MAX_INSERT 127
/* Longest copy in one instruction (encoded as size 0). */
#define MAX_COPY 0x10000

struct ent {
	uint32_t off;
	uint32_t check; /* low bits of the block hash, to skip most memcmp calls */
};

struct pw_delta_index {
	const uint8_t *base;
	size_t len;
	unsigned shift;  /* bucket = hash >> shift */
	uint32_t *heads; /* nbuckets + 1 prefix offsets into ents */
	struct ent *ents;
	size_t nbuckets, nents;
	uint64_t mul16; /* HASH_MUL^16, to roll the oldest byte out */
};

static uint64_t block_hash(const uint8_t *p)
{
	uint64_t h = 0;
	int i;

	for (i = 0; i < PW_DELTA_BLOCK; i++)
		h = h * HASH_MUL + p[i];
	return h;
}

/* Spread the polynomial (whose low bits see only low input bits) before
 * taking the top bits as bucket number. */
static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

int pw_delta_index_new(struct pw_delta_index **out, const void *base, size_t len)
{
	struct pw_delta_index *idx;
	const uint8_t *b = base;
	size_t nblocks = len / PW_DELTA_BLOCK, i;
	unsigned bits = 4;
	uint64_t *hashes = NULL;
	uint8_t *skip = NULL;
	uint32_t *cursor = NULL;

	*out = NULL;
	if ((uint64_t)len > PW_DELTA_MAX_BASE)
		return PW_ETOOBIG;
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		return PW_ENOMEM;
	idx->base = b;
	idx->len = len;
	idx->mul16 = 1;
	for (i = 0; i < PW_DELTA_BLOCK; i++)
		idx->mul16 *= HASH_MUL;
	while (bits < 31 && ((size_t)1 << bits) < nblocks)
		bits++;
	idx->nbuckets = (size_t)1 << bits;
	idx->shift = 64 - bits;
	idx->heads = calloc(idx->nbuckets + 1, sizeof(*idx->heads));
	cursor = malloc(idx->nbuckets * sizeof(*cursor));
	if (nblocks) {
		idx->ents = malloc(nblocks * sizeof(*idx->ents));
		hashes = malloc(nblocks * sizeof(*hashes));
		skip = malloc(nblocks);
	}
	if (!idx->heads || !cursor || (nblocks && (!idx->ents || !hashes || !skip))) {
		free(hashes);
		free(skip);
		free(cursor);
		pw_delta_index_free(idx);
		return PW_ENOMEM;
	}
	/* Count per bucket, skipping a block equal to the one before it (long runs
	 * would otherwise fill one bucket with useless equal candidates). */
	for (i = 0; i < nblocks; i++) {
		const uint8_t *p = b + i * PW_DELTA_BLOCK;

		hashes[i] = block_hash(p);
		skip[i] = i && hashes[i] == hashes[i - 1] &&
		          !memcmp(p, p - PW_DELTA_BLOCK, PW_DELTA_BLOCK);
		if (!skip[i])
			idx->heads[(mix(hashes[i]) >> idx->shift) + 1]++;
	}
	for (i = 0; i < idx->nbuckets; i++)
		idx->heads[i + 1] += idx->heads[i];
	memcpy(cursor, idx->heads, idx->nbuckets * sizeof(*cursor));
	for (i = 0; i < nblocks; i++) {
		size_t bucket;

		if (skip[i])
			continue;
		bucket = mix(hashes[i]) >> idx->shift;
		idx->ents[cursor[bucket]].off = (uint32_t)(i * PW_DELTA_BLOCK);
		idx->ents[cursor[bucket]].check = (uint32_t)hashes[i];
		cursor[bucket]++;
	}
	idx->nents = idx->heads[idx->nbuckets];
	free(cursor);
	free(skip);
	free(hashes);
	*out = idx;
	return 0;
}

void pw_delta_index_free(struct pw_delta_index *idx)
{
	if (!idx)
		return;
	free(idx->heads);
	free(idx->ents);
	free(idx);
}

size_t pw_delta_index_memsize(const struct pw_delta_index *idx)
{
	return sizeof(*idx) + (idx->nbuckets + 1) * sizeof(*idx->heads) +
	       (idx->len / PW_DELTA_BLOCK) * sizeof(*idx->ents);
}

size_t pw_delta_index_base_len(const struct pw_delta_index *idx)
{
	return idx->len;
}

/* Literal bytes: instructions of at most 127 bytes each. */
static int emit_insert(struct pw_buf *out, const uint8_t *p, size_t n)
{
	while (n) {
		size_t k = n > MAX_INSERT ? MAX_INSERT : n;
		int rc = pw_buf_grow(out, k + 1);

		if (rc)
			return rc;
		out->data[out->len++] = (char)k;
		memcpy(out->data + out->len, p, k);
		out->len += k;
		p += k;
		n -= k;
	}
	return 0;
}

/* A copy from the base, split into 64 KiB pieces (the format's limit). */
static int emit_copy(struct pw_buf *out, uint64_t off, uint64_t n)
{
	while (n) {
		uint64_t k = n > MAX_COPY ? MAX_COPY : n;
		uint8_t ins[8];
		size_t len = 1;
		int i, rc;

		ins[0] = 0x80;
		for (i = 0; i < 4; i++) {
			uint8_t byte = (uint8_t)(off >> (8 * i));

			if (byte) {
				ins[0] |= (uint8_t)(1u << i);
				ins[len++] = byte;
			}
		}
		if (k != MAX_COPY)
			for (i = 0; i < 3; i++) {
				uint8_t byte = (uint8_t)(k >> (8 * i));

				if (byte) {
					ins[0] |= (uint8_t)(0x10u << i);
					ins[len++] = byte;
				}
			}
		rc = pw_buf_add(out, ins, len);
		if (rc)
			return rc;
		off += k;
		n -= k;
	}
	return 0;
}

/* The bytes a pending literal run of n bytes will take once emitted. */
static size_t insert_cost(size_t n)
{
	return n + (n + MAX_INSERT - 1) / MAX_INSERT;
}

/* Measure the match of base[off..] and t[pos..] (the first block is known to
 * be equal) and keep it when it is the longest so far. */
static inline void consider(const uint8_t *b, size_t blen, const uint8_t *t, size_t tlen,
                            size_t pos, size_t off, size_t *best_len, size_t *best_off)
{
	size_t len = PW_DELTA_BLOCK, maxlen = blen - off;

	if (maxlen > tlen - pos)
		maxlen = tlen - pos;
	while (len < maxlen && b[off + len] == t[pos + len])
		len++;
	if (len > *best_len) {
		*best_len = len;
		*best_off = off;
	}
}

int pw_delta_create_from_index(const struct pw_delta_index *idx, const void *target,
                               size_t target_len, size_t max_size, struct pw_buf *out)
{
	const uint8_t *t = target, *b = idx->base;
	size_t pos = 0, lit = 0, blen = idx->len; /* lit: start of pending literals */
	uint8_t hdr[20];
	size_t n;
	uint64_t h = 0;
	size_t copy_end = 0; /* base offset right after the last copy */
	int rc, have_copy = 0;

	pw_buf_reset(out);
	n = pw_delta_encode_size(hdr, blen);
	n += pw_delta_encode_size(hdr + n, target_len);
	rc = pw_buf_add(out, hdr, n);
	if (rc)
		return rc;
	if (idx->nents && target_len >= PW_DELTA_BLOCK)
		h = block_hash(t);
	while (idx->nents && pos + PW_DELTA_BLOCK <= target_len) {
		size_t bucket = mix(h) >> idx->shift;
		uint32_t first = idx->heads[bucket], last = idx->heads[bucket + 1], step = 1, j;
		size_t best_len = 0, best_off = 0, c;

		/* Two guesses before the table, good on edited files whose common
		 * blocks crowd a bucket: the base resumes where the last copy
		 * ended (an insertion), or on the same diagonal (an overwrite). */
		for (c = 0; c < 2 && have_copy; c++) {
			size_t off = c ? pos - lit + copy_end : copy_end;

			if (c && pos == lit)
				break;
			if (off + PW_DELTA_BLOCK <= blen &&
			    !memcmp(b + off, t + pos, PW_DELTA_BLOCK))
				consider(b, blen, t, target_len, pos, off, &best_len, &best_off);
		}
		if (last - first > BUCKET_SCAN)
			step = (last - first) / BUCKET_SCAN;
		for (j = first; j < last && best_len < target_len - pos; j += step) {
			const struct ent *e = &idx->ents[j];

			if (e->check != (uint32_t)h || memcmp(b + e->off, t + pos, PW_DELTA_BLOCK))
				continue;
			consider(b, blen, t, target_len, pos, e->off, &best_len, &best_off);
		}
		if (best_len) {
			/* Grow the match backward over literals not yet emitted. */
			while (pos > lit && best_off > 0 && b[best_off - 1] == t[pos - 1]) {
				pos--;
				best_off--;
				best_len++;
			}
			rc = emit_insert(out, t + lit, pos - lit);
			if (!rc)
				rc = emit_copy(out, best_off, best_len);
			if (rc)
				return rc;
			pos += best_len;
			lit = pos;
			copy_end = best_off + best_len;
			have_copy = 1;
			if (max_size && out->len > max_size)
				return PW_ETOOBIG;
			if (pos + PW_DELTA_BLOCK <= target_len)
				h = block_hash(t + pos);
			continue;
		}
		if (pos + PW_DELTA_BLOCK < target_len)
			h = h * HASH_MUL + t[pos + PW_DELTA_BLOCK] - t[pos] * idx->mul16;
		pos++;
		/* Bail out as soon as the literals alone make the delta too big. */
		if (max_size && out->len + insert_cost(pos - lit) > max_size)
			return PW_ETOOBIG;
	}
	if (max_size && out->len + insert_cost(target_len - lit) > max_size)
		return PW_ETOOBIG;
	return emit_insert(out, t + lit, target_len - lit);
}

int pw_delta_create(const void *base, size_t base_len, const void *target, size_t target_len,
                    size_t max_size, struct pw_buf *out)
{
	struct pw_delta_index *idx;
	int rc = pw_delta_index_new(&idx, base, base_len);

	if (rc)
		return rc;
	rc = pw_delta_create_from_index(idx, target, target_len, max_size, out);
	pw_delta_index_free(idx);
	return rc;
}
