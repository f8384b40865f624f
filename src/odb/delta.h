/* Git's delta format: apply, and the size varints that start every delta. */
#ifndef PW_ODB_DELTA_H
#define PW_ODB_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"

/* Upper bound of an object we are willing to build in memory (4 GiB). */
#define PW_DELTA_MAX_RESULT ((uint64_t)1 << 32)

/* Decode the base and result sizes at the start of a delta; *hdr_len is how
 * many bytes they took. PW_ECORRUPT when truncated or absurd. */
int pw_delta_sizes(const uint8_t *delta, size_t len, uint64_t *base_size, uint64_t *result_size,
                   size_t *hdr_len);

/* Apply `delta` to `base`; the result replaces out's content. Every copy is
 * bounds-checked against the base and the declared result size. */
int pw_delta_apply(const uint8_t *base, size_t base_len, const uint8_t *delta, size_t delta_len,
                   struct pw_buf *out, struct pw_error *err);

/* Encode a size varint (7 bits a byte, little end first); returns bytes written
 * (at most 10). */
size_t pw_delta_encode_size(uint8_t *out, uint64_t size);

#endif
