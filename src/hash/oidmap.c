#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/error.h"
#include "hash/oidmap.h"
#include "util/bigmem.h"

/* Most probes meet a different id: reject those on the first 8 bytes without
 * a call. */
static inline int same_oid(const struct pw_oid *a, const struct pw_oid *b)
{
	uint64_t x, y;

	memcpy(&x, a->id, sizeof(x));
	memcpy(&y, b->id, sizeof(y));
	return x == y && pw_oid_equal(a, b);
}

void pw_oidmap_free(struct pw_oidmap *m)
{
	pw_bigmem_free(m->slots, m->cap * sizeof(*m->slots));
	m->slots = NULL;
	m->cap = m->count = 0;
}

struct pw_oidmap_entry *pw_oidmap_get(const struct pw_oidmap *m, const struct pw_oid *oid)
{
	size_t i, mask;

	if (!m->cap)
		return NULL;
	mask = m->cap - 1;
	for (i = pw_oidmap_hash(oid) & mask;; i = (i + 1) & mask) {
		struct pw_oidmap_entry *e = &m->slots[i];

		if (!e->used)
			return NULL;
		if (same_oid(&e->oid, oid))
			return e;
	}
}

static int rehash(struct pw_oidmap *m, size_t ncap)
{
	struct pw_oidmap_entry *old = m->slots, *slots;
	size_t i, oldcap = m->cap;

	/* a large table on huge pages, zeroed by writing (bigmem.h) */
	if (ncap > SIZE_MAX / sizeof(*slots))
		return PW_ENOMEM;
	slots = pw_bigmem_alloc_zeroed(ncap * sizeof(*slots));
	if (!slots)
		return PW_ENOMEM;
	m->slots = slots;
	m->cap = ncap;
	for (i = 0; i < oldcap; i++) {
		size_t j;

		if (!old[i].used)
			continue;
		for (j = pw_oidmap_hash(&old[i].oid) & (ncap - 1); slots[j].used;
		     j = (j + 1) & (ncap - 1))
			;
		slots[j] = old[i];
	}
	pw_bigmem_free(old, oldcap * sizeof(*old));
	return 0;
}

int pw_oidmap_reserve(struct pw_oidmap *m, size_t n)
{
	size_t ncap = m->cap ? m->cap : 64;

	while (ncap / 4 * 3 < n)
		ncap *= 2;
	if (ncap == m->cap)
		return 0;
	return rehash(m, ncap);
}

struct pw_oidmap_entry *pw_oidmap_put(struct pw_oidmap *m, const struct pw_oid *oid, int *created)
{
	size_t i, mask;

	if ((m->count + 1) > m->cap / 4 * 3 && pw_oidmap_reserve(m, m->count + 1))
		return NULL;
	mask = m->cap - 1;
	for (i = pw_oidmap_hash(oid) & mask;; i = (i + 1) & mask) {
		struct pw_oidmap_entry *e = &m->slots[i];

		if (!e->used) {
			e->used = 1;
			e->oid = *oid;
			e->value = NULL;
			m->count++;
			if (created)
				*created = 1;
			return e;
		}
		if (same_oid(&e->oid, oid)) {
			if (created)
				*created = 0;
			return e;
		}
	}
}
