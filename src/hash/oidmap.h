/* An open-addressing hash table keyed by object id, with a pointer-sized
 * value. Used by the object walk, index-pack and the pack writer. */
#ifndef PW_HASH_OIDMAP_H
#define PW_HASH_OIDMAP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "packwire/hash.h"

struct pw_oidmap_entry {
	struct pw_oid oid;
	uint8_t used;
	void *value;
};

struct pw_oidmap {
	struct pw_oidmap_entry *slots;
	size_t cap; /* power of two, or 0 */
	size_t count;
};

#define PW_OIDMAP_INIT                                                                             \
	{                                                                                          \
		NULL, 0, 0                                                                         \
	}

void pw_oidmap_free(struct pw_oidmap *m);
/* Find an entry; NULL when absent. */
struct pw_oidmap_entry *pw_oidmap_get(const struct pw_oidmap *m, const struct pw_oid *oid);
/* Find or insert; *created says which. NULL only when out of memory. The
 * returned pointer is valid until the next insertion. */
struct pw_oidmap_entry *pw_oidmap_put(struct pw_oidmap *m, const struct pw_oid *oid, int *created);
/* Reserve room for n entries without rehashing. 0 or PW_ENOMEM. */
int pw_oidmap_reserve(struct pw_oidmap *m, size_t n);

/* Where a lookup of oid starts probing (ids are uniformly distributed
 * already: their first bytes are the hash). */
static inline size_t pw_oidmap_hash(const struct pw_oid *oid)
{
	size_t h;

	memcpy(&h, oid->id, sizeof(h));
	return h;
}

/* The slot where a lookup of oid starts, to be asked of memory ahead of a
 * batch of lookups (their cache misses then overlap). Only a hint: an
 * insertion may move the table. */
static inline void pw_oidmap_prefetch(const struct pw_oidmap *m, const struct pw_oid *oid)
{
	if (m->cap)
		__builtin_prefetch(&m->slots[pw_oidmap_hash(oid) & (m->cap - 1)]);
}

/* Iterate: for (i = 0; i < m.cap; i++) if (m.slots[i].used) ... */

#endif
