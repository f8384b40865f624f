/* An index of the object ids in an array its user keeps (each element
 * starts with a struct pw_oid): id -> element number. A slot is 8 bytes, the
 * element number and the id's first 32 bits, against 48 for a pw_oidmap
 * entry; other ids are told apart on those bits without touching the array.
 * For large tables whose elements hold their ids anyway (the pack writer's
 * objects). */
#ifndef PW_HASH_OIDIDX_H
#define PW_HASH_OIDIDX_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/hash.h"

#define PW_OIDIDX_NONE UINT32_MAX

struct pw_oididx {
	uint64_t *slots; /* id bits << 32 | element number + 1; 0 empty */
	size_t cap;      /* power of two, or 0 */
	size_t count;
};

#define PW_OIDIDX_INIT                                                                             \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

void pw_oididx_free(struct pw_oididx *x);
/* Room for n ids without rehashing: 0 or PW_ENOMEM. */
int pw_oididx_reserve(struct pw_oididx *x, size_t n);
/* The element of oid, or PW_OIDIDX_NONE. Element i is at base + i * stride. */
uint32_t pw_oididx_find(const struct pw_oididx *x, const struct pw_oid *oid, const void *base,
                        size_t stride);
/* The element of oid; when there is none, records it as element `next`
 * (below PW_OIDIDX_NONE - 1, which the caller then fills) and returns next.
 * PW_OIDIDX_NONE when out of memory. */
uint32_t pw_oididx_put(struct pw_oididx *x, const struct pw_oid *oid, uint32_t next,
                       const void *base, size_t stride);

#endif
