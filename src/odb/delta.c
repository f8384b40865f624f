#include <stdlib.h>
#include <string.h>

#include "odb/delta.h"

static int read_varint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t c;

	do {
		if (p >= end || shift > 63)
			return PW_ECORRUPT;
		c = *p++;
		v |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	} while (c & 0x80);
	*pp = p;
	*out = v;
	return 0;
}

int pw_delta_sizes(const uint8_t *delta, size_t len, uint64_t *base_size, uint64_t *result_size,
                   size_t *hdr_len)
{
	const uint8_t *p = delta, *end = delta + len;

	if (read_varint(&p, end, base_size) || read_varint(&p, end, result_size))
		return PW_ECORRUPT;
	*hdr_len = (size_t)(p - delta);
	return 0;
}

size_t pw_delta_encode_size(uint8_t *out, uint64_t size)
{
	size_t n = 0;

	do {
		uint8_t c = size & 0x7f;

		size >>= 7;
		out[n++] = c | (size ? 0x80 : 0);
	} while (size);
	return n;
}

/* Run the instructions after the size header. With dst NULL nothing is
 * written: the instructions are only checked, in order, against the base and
 * the declared result size, so a result is allocated only once they are known
 * to produce exactly that many bytes. */
static int run(const uint8_t *base, size_t base_len, const uint8_t *p, const uint8_t *end,
               uint64_t rsize, uint8_t *dst, struct pw_error *err)
{
	size_t pos = 0;

	while (p < end) {
		uint8_t op = *p++;

		if (op & 0x80) {
			uint64_t off = 0, size = 0;
			int i;

			for (i = 0; i < 4; i++)
				if (op & (1u << i)) {
					if (p >= end)
						goto truncated;
					off |= (uint64_t)*p++ << (8 * i);
				}
			for (i = 0; i < 3; i++)
				if (op & (0x10u << i)) {
					if (p >= end)
						goto truncated;
					size |= (uint64_t)*p++ << (8 * i);
				}
			if (!size)
				size = 0x10000;
			if (off > base_len || size > base_len - off)
				return pw_error_set(err, PW_ECORRUPT,
				                    "delta: copy of %llu bytes at offset %llu is "
				                    "outside the %zu-byte base",
				                    (unsigned long long)size,
				                    (unsigned long long)off, base_len);
			if (size > rsize - pos)
				goto overflow;
			if (dst)
				memcpy(dst + pos, base + off, (size_t)size);
			pos += (size_t)size;
		} else if (op) {
			if ((size_t)(end - p) < op)
				goto truncated;
			if (op > rsize - pos)
				goto overflow;
			if (dst)
				memcpy(dst + pos, p, op);
			p += op;
			pos += op;
		} else {
			return pw_error_set(err, PW_ECORRUPT, "delta: reserved opcode 0");
		}
	}
	if (pos != rsize)
		return pw_error_set(err, PW_ECORRUPT,
		                    "delta: result is %zu bytes but the header says %llu", pos,
		                    (unsigned long long)rsize);
	return 0;
truncated:
	return pw_error_set(err, PW_ECORRUPT, "delta: instruction truncated");
overflow:
	return pw_error_set(err, PW_ECORRUPT, "delta: result exceeds the declared %llu bytes",
	                    (unsigned long long)rsize);
}

int pw_delta_apply(const uint8_t *base, size_t base_len, const uint8_t *delta, size_t delta_len,
                   struct pw_buf *out, struct pw_error *err)
{
	const uint8_t *end = delta + delta_len;
	uint64_t bsize, rsize;
	size_t hdr;
	int rc;

	if (pw_delta_sizes(delta, delta_len, &bsize, &rsize, &hdr))
		return pw_error_set(err, PW_ECORRUPT, "delta: truncated size header");
	if (bsize != base_len)
		return pw_error_set(err, PW_ECORRUPT,
		                    "delta: base size %llu does not match base object size %zu",
		                    (unsigned long long)bsize, base_len);
	if (rsize > PW_DELTA_MAX_RESULT)
		return pw_error_set(err, PW_ETOOBIG, "delta: result size %llu is too large",
		                    (unsigned long long)rsize);
	/* The header alone justifies no memory: a few bytes can claim gigabytes.
	 * What the instructions produce can (each copy at most min(base size,
	 * 0xffffff) bytes, each insert 127 bytes for its 128), so check them
	 * first and allocate only a result they really build. */
	if ((rc = run(base, base_len, delta + hdr, end, rsize, NULL, err)))
		return rc;
	pw_buf_reset(out);
	/* Exactly the result's size, not the next power of two: results are
	 * kept in base caches whose limits count their length, so slack from
	 * doubling would be memory that no limit sees (a third more, on average). */
	if (out->cap < (size_t)rsize + 1 && (!out->max || rsize <= out->max)) {
		char *p = malloc((size_t)rsize + 1);

		if (!p)
			return pw_error_set(err, PW_ENOMEM, "delta: cannot allocate %llu bytes",
			                    (unsigned long long)rsize);
		if (out->cap)
			free(out->data);
		p[0] = '\0';
		out->data = p;
		out->cap = (size_t)rsize + 1;
	}
	rc = pw_buf_grow(out, (size_t)rsize);
	if (rc)
		return pw_error_set(err, rc, "delta: cannot allocate %llu bytes",
		                    (unsigned long long)rsize);
	if ((rc = run(base, base_len, delta + hdr, end, rsize, (uint8_t *)out->data, err)))
		return rc;
	out->len = (size_t)rsize;
	out->data[out->len] = '\0';
	return 0;
}
