/* A bounded cache of inflated pack objects (delta bases), keyed by pack and
 * offset, with LRU replacement; it also owns the per-thread inflate state so
 * that readers allocate it once. One cache per thread (or per odb handle). */
#ifndef PW_ODB_CACHE_H
#define PW_ODB_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"

/* Git's delta base cache holds 96 MiB; ours keeps whole inflated bases the
 * same way. Less is faster here: the walk meets trees in recency order, so
 * the bases it needs are the ones it just built, and a cache that never
 * fills up costs a fresh page (a fault and a zeroed page) per 4 KiB it
 * grows. On git.git's v2.0.0 history a no-bitmap pack-objects --all took
 * 53k page faults and 168 MB at 64 MiB, 39k and 113 MB at 16 MiB, 4% less
 * CPU; cat-file --batch --batch-all-objects 25% less; 8 MiB was slower. */
#define PW_BASE_CACHE_DEFAULT_LIMIT ((size_t)16 << 20)

struct pw_base_cache;
struct libdeflate_decompressor;

struct pw_base_cache_hit {
	int type;
	const uint8_t *data; /* borrowed: valid until the next put on this cache */
	size_t len;
};

/* limit: bytes of object data kept (0 = default). */
int pw_base_cache_new(struct pw_base_cache **out, size_t limit);
void pw_base_cache_free(struct pw_base_cache *c);
/* 1 and *hit filled when (pack_id, offset) is cached, else 0. */
int pw_base_cache_get(struct pw_base_cache *c, uint64_t pack_id, uint64_t offset,
                      struct pw_base_cache_hit *hit);
/* Store buf's content under (pack_id, offset). On success (returns 1) the cache
 * takes buf's memory and buf becomes empty; returns 0 (buf untouched) when the
 * object is too big to cache or memory is short. Replaces an existing entry. */
int pw_base_cache_put(struct pw_base_cache *c, uint64_t pack_id, uint64_t offset, int type,
                      struct pw_buf *buf);
/* Forget everything cached for one pack (before it is closed). */
void pw_base_cache_drop_pack(struct pw_base_cache *c, uint64_t pack_id);
/* The cache's libdeflate decompressor (NULL when allocation failed). */
struct libdeflate_decompressor *pw_base_cache_decompressor(struct pw_base_cache *c);
/* Statistics, for benchmarks and tests. */
void pw_base_cache_stats(const struct pw_base_cache *c, uint64_t *hits, uint64_t *misses,
                         size_t *bytes);

#endif
