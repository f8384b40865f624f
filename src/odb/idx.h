/* Pack index files (.idx) version 1 and 2, for either hash size, read through
 * mmap (or from a caller's buffer). Every table's extent is checked against
 * the file size when the index is opened, so accessors need no checks beyond
 * the entry number. */
#ifndef PW_ODB_IDX_H
#define PW_ODB_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/idx.h"

#define PW_IDX_V2_MAGIC    0xff744f63u /* "\377tOc" */
#define PW_IDX_FANOUT_SIZE (256 * 4)

struct pw_idx {
	const struct pw_hash_algo *algo;
	char *path;          /* for messages; "<memory>" when read from a buffer */
	int version;         /* 1 or 2 */
	uint32_t nr;         /* number of objects */
	const uint8_t *data; /* whole file */
	size_t size;
	int mapped;                   /* data is our mmap */
	const uint8_t *fanout;        /* 256 big-endian counts */
	const uint8_t *names;         /* v2: nr * rawsz; v1: nr * (4 + rawsz), name after offset */
	const uint8_t *crcs;          /* v2 only */
	const uint8_t *offsets;       /* v2: nr * 4 */
	const uint8_t *large;         /* v2: 64-bit offset table */
	uint32_t nr_large;            /* entries in the 64-bit table */
	size_t stride;                /* bytes between two names */
	const uint8_t *pack_checksum; /* rawsz bytes: the .pack's trailing checksum */
	const uint8_t *idx_checksum;  /* rawsz bytes */
};

/* Expected size of an idx file: `version` 1 or 2, `nr` objects of which
 * `nr_large` need the 64-bit offset table (v2 only; must be 0 for v1). Returns
 * 0 when the arguments are invalid. */
uint64_t pw_idx_expected_size(int version, size_t rawsz, uint64_t nr, uint64_t nr_large);

/* Opening, freeing and the entry accessors are public (packwire/idx.h). */

/* Binary search: 1 and *pos = entry number when found, else 0. */
int pw_idx_find(const struct pw_idx *idx, const uint8_t *raw, uint32_t *pos);

/* Accessors for entry n < idx->nr. */
static inline const uint8_t *pw_idx_nth_raw(const struct pw_idx *idx, uint32_t n)
{
	return idx->names + (size_t)n * idx->stride;
}

#endif
