#include <stdint.h>
#include <string.h>

#include "packwire/error.h"
#include "hash/oididx.h"
#include "util/bigmem.h"

/* The first 32 bits of an id: where its probe starts and what tells most
 * other ids apart (ids are uniformly distributed already). */
static uint32_t id_bits(const struct pw_oid *oid)
{
	uint32_t h;

	memcpy(&h, oid->id, sizeof(h));
	return h;
}

static const struct pw_oid *elem(const void *base, size_t stride, uint64_t slot)
{
	return (const struct pw_oid *)((const char *)base + ((slot & UINT32_MAX) - 1) * stride);
}

void pw_oididx_free(struct pw_oididx *x)
{
	pw_bigmem_free(x->slots, x->cap * sizeof(*x->slots));
	x->slots = NULL;
	x->cap = x->count = 0;
}

static int rehash(struct pw_oididx *x, size_t ncap)
{
	uint64_t *old = x->slots, *slots;
	size_t i, oldcap = x->cap;

	if (ncap > SIZE_MAX / sizeof(*slots) || ncap > (size_t)1 << 32)
		return PW_ENOMEM;
	if (!(slots = pw_bigmem_alloc_zeroed(ncap * sizeof(*slots))))
		return PW_ENOMEM;
	for (i = 0; i < oldcap; i++) {
		size_t j;

		if (!old[i])
			continue;
		for (j = (old[i] >> 32) & (ncap - 1); slots[j]; j = (j + 1) & (ncap - 1))
			;
		slots[j] = old[i];
	}
	pw_bigmem_free(old, oldcap * sizeof(*old));
	x->slots = slots;
	x->cap = ncap;
	return 0;
}

int pw_oididx_reserve(struct pw_oididx *x, size_t n)
{
	size_t ncap = x->cap ? x->cap : 64;

	while (ncap / 4 * 3 < n)
		ncap *= 2;
	return ncap == x->cap ? 0 : rehash(x, ncap);
}

/* The element of oid, or PW_OIDIDX_NONE with *at the empty slot where it
 * would go. x->cap is not 0. */
static uint32_t probe(const struct pw_oididx *x, const struct pw_oid *oid, const void *base,
                      size_t stride, size_t *at)
{
	uint32_t h = id_bits(oid);
	size_t i, mask = x->cap - 1;

	for (i = h & mask; x->slots[i]; i = (i + 1) & mask)
		if ((uint32_t)(x->slots[i] >> 32) == h &&
		    pw_oid_equal(elem(base, stride, x->slots[i]), oid))
			return (uint32_t)(x->slots[i] & UINT32_MAX) - 1;
	*at = i;
	return PW_OIDIDX_NONE;
}

uint32_t pw_oididx_find(const struct pw_oididx *x, const struct pw_oid *oid, const void *base,
                        size_t stride)
{
	size_t at;

	return x->cap ? probe(x, oid, base, stride, &at) : PW_OIDIDX_NONE;
}

uint32_t pw_oididx_put(struct pw_oididx *x, const struct pw_oid *oid, uint32_t next,
                       const void *base, size_t stride)
{
	size_t at;
	uint32_t found;

	if (next >= PW_OIDIDX_NONE - 1)
		return PW_OIDIDX_NONE;
	if (x->count + 1 > x->cap / 4 * 3 && pw_oididx_reserve(x, x->count + 1))
		return PW_OIDIDX_NONE;
	if ((found = probe(x, oid, base, stride, &at)) != PW_OIDIDX_NONE)
		return found;
	x->slots[at] = (uint64_t)id_bits(oid) << 32 | ((uint64_t)next + 1);
	x->count++;
	return next;
}
