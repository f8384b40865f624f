/* A cache of the packs upload-pack sends, for clone storms (many clients
 * asking for the same thing at once, as CI fleets do): `packwire serve
 * --pack-cache=DIR`, and `uploadpack.packCache` for `upload-pack` and
 * `http-backend`. A pack is cached under a key made of everything that
 * decides its bytes (the repository, the object formats, the wants, the
 * haves the server shares, shallow and deepen lines, the filter, thin-pack,
 * ofs-delta, include-tag and, with include-tag, the tags the server
 * advertises). Concurrent identical requests share one generation, which
 * streams to all of them as it is written; later ones read the file.
 *
 * One handle may be used by any number of threads at once (a server's
 * sessions), and any number of processes may share one directory (locks are
 * flock(2) locks, so the directory must be on a local file system). The
 * directory must be writable by the server only: a reader checks every
 * entry's checksums, but whoever can write the directory can write an entry.
 * docs/pack-cache.md describes the key, the file format and the locking. */
#ifndef PACKWIRE_PACK_CACHE_H
#define PACKWIRE_PACK_CACHE_H

#include "packwire/export.h"

#include <stdint.h>

#include "packwire/error.h"

/* Defaults and bounds. */
#define PW_PACK_CACHE_DEFAULT_MAX         ((uint64_t)1 << 30) /* 1 GiB on disk */
#define PW_PACK_CACHE_DEFAULT_ENTRIES     4096
#define PW_PACK_CACHE_DEFAULT_GENERATIONS 16

struct pw_pack_cache_opts {
	const char *dir; /* created (one level) when missing; required */
	/* Bytes of complete entries kept: past it the least recently used go
	 * first; an entry larger than this is served but not kept.
	 * 0 = PW_PACK_CACHE_DEFAULT_MAX. */
	uint64_t max_bytes;
	/* Complete entries kept; 0 = PW_PACK_CACHE_DEFAULT_ENTRIES. */
	unsigned max_entries;
	/* Generations in progress in the directory (all processes); a request
	 * that would start one more is served without the cache.
	 * 0 = PW_PACK_CACHE_DEFAULT_GENERATIONS. */
	unsigned max_generations;
};

/* Zero the options (every field then means its default). */
PW_API void pw_pack_cache_opts_init(struct pw_pack_cache_opts *o);

struct pw_pack_cache;

/* Open (and create) the cache directory; removes what crashed generations
 * left behind and trims the directory to its bounds. *out is freed with
 * pw_pack_cache_free, after every session using it has ended. */
PW_API int pw_pack_cache_open(struct pw_pack_cache **out, const struct pw_pack_cache_opts *o,
                              struct pw_error *err);
PW_API void pw_pack_cache_free(struct pw_pack_cache *c);
/* The directory (borrowed). */
PW_API const char *pw_pack_cache_dir(const struct pw_pack_cache *c);

/* What a handle has done since it was opened (counted in this process). */
struct pw_pack_cache_stats {
	/* Pack requests that met the cache, by result: a complete entry
	 * served (hit), a generation started (miss), a generation in progress
	 * joined (shared), served without the cache (bypass: a request that
	 * cannot be cached, such as packfile-uris, sparse:oid filters or
	 * uploadpack.packObjectsHook, or the generation bound reached). */
	uint64_t hits, misses, shared, bypass;
	uint64_t bytes_generated; /* pack bytes written into entries */
	uint64_t bytes_served;    /* pack bytes sent to clients from entries */
	uint64_t evictions;       /* entries removed to stay within the bounds */
	uint64_t corrupt;         /* entries found damaged (removed, never sent) */
	/* Complete entries in the directory and their bytes, as last counted
	 * (when opened and after each new entry). */
	uint64_t entries, bytes;
};

/* A snapshot of the counters; any thread, at any time (atomic reads). */
PW_API void pw_pack_cache_get_stats(const struct pw_pack_cache *c, struct pw_pack_cache_stats *out);

#endif
