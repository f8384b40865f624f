/* Pack index files (.idx, version 1 and 2, SHA-1 or SHA-256): the sorted
 * object ids of one pack with their offsets (and CRC32s, v2). Every table is
 * checked against the file size when the index is opened, so the accessors
 * only need an entry number below pw_idx_count(). An opened index is
 * read-only: it may be shared between threads. */
#ifndef PACKWIRE_IDX_H
#define PACKWIRE_IDX_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_idx;

/* Open and validate an idx file (mapped until pw_idx_free) whose ids are of
 * algo (required). PW_ENOTFOUND, PW_EIO, PW_ECORRUPT (with err saying what
 * is wrong) or PW_ENOMEM on failure. */
PW_API int pw_idx_open(struct pw_idx **out, const char *path, const struct pw_hash_algo *algo,
                       struct pw_error *err);
/* The same over a buffer the caller keeps alive (and owns) until pw_idx_free.
 * `name` is used in messages (may be NULL). */
PW_API int pw_idx_open_memory(struct pw_idx **out, const void *data, size_t len, const char *name,
                              const struct pw_hash_algo *algo, struct pw_error *err);
/* NULL is fine. */
PW_API void pw_idx_free(struct pw_idx *idx);

/* Number of objects. */
PW_API uint32_t pw_idx_count(const struct pw_idx *idx);
/* 1 or 2. */
PW_API int pw_idx_version(const struct pw_idx *idx);
PW_API const struct pw_hash_algo *pw_idx_algo(const struct pw_idx *idx);

/* Entry n < pw_idx_count(idx), in object-id order: */
PW_API void pw_idx_nth_oid(const struct pw_idx *idx, uint32_t n, struct pw_oid *out);
/* PW_ECORRUPT when a 64-bit offset escape points outside the table. */
PW_API int pw_idx_nth_offset(const struct pw_idx *idx, uint32_t n, uint64_t *offset,
                             struct pw_error *err);
/* v2: the stored CRC32 (*has_crc = 1); v1 has none (returns 0, *has_crc = 0). */
PW_API uint32_t pw_idx_nth_crc(const struct pw_idx *idx, uint32_t n, int *has_crc);

#endif
