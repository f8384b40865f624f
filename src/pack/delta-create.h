/* Creating Git deltas: index a base once, then encode any number of targets
 * against it as copy/insert instructions (the format pw_delta_apply reads). */
#ifndef PW_PACK_DELTA_CREATE_H
#define PW_PACK_DELTA_CREATE_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"

/* Bytes per indexed block of the base; matches shorter than this are not found. */
#define PW_DELTA_BLOCK 16
/* Largest base we index: copy offsets are 32-bit in the format. */
#define PW_DELTA_MAX_BASE ((uint64_t)0xffffffffu)

struct pw_delta_index;

/* Index `base` (borrowed: it must outlive the index). PW_ENOMEM, or PW_ETOOBIG
 * when the base is larger than PW_DELTA_MAX_BASE. */
int pw_delta_index_new(struct pw_delta_index **out, const void *base, size_t len);
void pw_delta_index_free(struct pw_delta_index *idx);
/* Memory the index holds, for window memory accounting. */
size_t pw_delta_index_memsize(const struct pw_delta_index *idx);
size_t pw_delta_index_base_len(const struct pw_delta_index *idx);

/* Encode `target` against the indexed base into out (replaced). When
 * max_size != 0 and the delta would be longer than max_size bytes, stops early
 * and returns PW_ETOOBIG (out is then undefined); PW_ENOMEM otherwise. */
int pw_delta_create_from_index(const struct pw_delta_index *idx, const void *target,
                               size_t target_len, size_t max_size, struct pw_buf *out);

/* One-shot: index base, encode target. */
int pw_delta_create(const void *base, size_t base_len, const void *target, size_t target_len,
                    size_t max_size, struct pw_buf *out);

#endif
