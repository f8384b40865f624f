/* Writing pack index files (.idx), versions 1 and 2, byte for byte as Git
 * lays them out. Used by index-pack and by the pack writer. */
#ifndef PW_PACK_IDX_WRITE_H
#define PW_PACK_IDX_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

#define PW_IDX_SIGNATURE 0xff744f63u /* "\377tOc" */
/* Offsets above this go to the 64-bit table of a v2 index (Git's default). */
#define PW_IDX_OFF32_LIMIT 0x7fffffffu

struct pw_idx_entry {
	struct pw_oid oid;
	uint64_t offset;
	uint32_t crc32;
};

struct pw_idx_write_opts {
	int version;          /* 1 or 2 */
	uint64_t off32_limit; /* v2: offsets > this use the 64-bit table; 0 = default */
};

/* Sink for the bytes of the index; returns 0 or an error code (with a message
 * in err). */
typedef int (*pw_idx_write_fn)(void *ctx, const void *data, size_t len, struct pw_error *err);

/*
 * Write the index of `nr` entries, which must be sorted by object id with no
 * duplicates (PW_EINVAL otherwise), all of `algo`. `pack_checksum` is the
 * pack's trailing checksum (algo->rawsz bytes). The index's own checksum is
 * stored in `idx_checksum` when not NULL. Version 1 cannot hold offsets of
 * 4 GiB or more (PW_EUNSUPPORTED).
 */
int pw_idx_write(const struct pw_hash_algo *algo, const struct pw_idx_entry *const *entries,
                 size_t nr, const uint8_t *pack_checksum, const struct pw_idx_write_opts *opts,
                 pw_idx_write_fn fn, void *ctx, uint8_t *idx_checksum, struct pw_error *err);

/* The same into a buffer (appended) or a file descriptor. */
int pw_idx_write_buf(const struct pw_hash_algo *algo, const struct pw_idx_entry *const *entries,
                     size_t nr, const uint8_t *pack_checksum, const struct pw_idx_write_opts *opts,
                     struct pw_buf *out, uint8_t *idx_checksum, struct pw_error *err);
int pw_idx_write_fd(const struct pw_hash_algo *algo, const struct pw_idx_entry *const *entries,
                    size_t nr, const uint8_t *pack_checksum, const struct pw_idx_write_opts *opts,
                    int fd, uint8_t *idx_checksum, struct pw_error *err);

/* qsort comparator for arrays of `const struct pw_idx_entry *`. */
int pw_idx_entry_cmp(const void *a, const void *b);

#endif
