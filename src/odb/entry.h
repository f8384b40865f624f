/* The header of one pack entry: type and size varint, then for deltas the
 * base (negative offset or object name). */
#ifndef PW_ODB_ENTRY_H
#define PW_ODB_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"

#define PW_PACK_HEADER_SIZE 12
#define PW_PACK_SIGNATURE   0x5041434bu /* "PACK" */

struct pw_pack_entry_hdr {
	int type;                /* PW_OBJ_* */
	uint64_t size;           /* inflated size (of the delta for delta entries) */
	size_t hdr_len;          /* bytes up to the start of the zlib stream */
	uint64_t base_ofs;       /* OFS_DELTA: distance back to the base entry (> 0) */
	const uint8_t *base_raw; /* REF_DELTA: points into the input, rawsz bytes */
};

/* Decode the entry header at p. Returns 0, PW_EMORE when more bytes are needed
 * (only when avail < the header's length), or PW_ECORRUPT (bad type, size or
 * offset varint overflow) with a message. `offset` is the entry's position in
 * the pack, used to reject OFS_DELTA bases before the start of the pack. */
int pw_pack_entry_hdr_decode(const uint8_t *p, size_t avail, size_t rawsz, uint64_t offset,
                             struct pw_pack_entry_hdr *out, struct pw_error *err);

/* Encode type and size; returns the length (<= 10). */
size_t pw_pack_entry_hdr_encode(uint8_t *out, int type, uint64_t size);
/* Encode an OFS_DELTA distance; returns the length (<= 10). */
size_t pw_pack_ofs_encode(uint8_t *out, uint64_t distance);

/* Parse the 12-byte pack header: "PACK", version 2 or 3, object count. */
int pw_pack_header_decode(const uint8_t *p, size_t avail, uint32_t *nr_objects,
                          struct pw_error *err);
void pw_pack_header_encode(uint8_t *out, uint32_t nr_objects);

static inline uint32_t pw_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t pw_get_be64(const uint8_t *p)
{
	return (uint64_t)pw_get_be32(p) << 32 | pw_get_be32(p + 4);
}
static inline void pw_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}
static inline void pw_put_be64(uint8_t *p, uint64_t v)
{
	pw_put_be32(p, (uint32_t)(v >> 32));
	pw_put_be32(p + 4, (uint32_t)v);
}

#endif
