/* Reading packs: a .pack mapped beside its .idx, entries read at an offset
 * with delta chains resolved iteratively, raw entries exposed for verbatim
 * reuse by the pack writer, and a reverse index (entries sorted by offset) so
 * that the compressed extent of every entry is known. */
#ifndef PW_ODB_PACK_H
#define PW_ODB_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "odb/cache.h"
#include "odb/idx.h"

/* Longest delta chain we follow; also what stops REF_DELTA cycles. */
#define PW_PACK_MAX_DELTA_DEPTH 10000

struct pw_pack {
	const struct pw_hash_algo *algo;
	uint64_t id;      /* unique in the process: the delta-base cache key */
	char *path;       /* ".../pack-<hex>.pack" */
	char *idx_path;   /* ".../pack-<hex>.idx" */
	const char *name; /* basename of path, into path */
	struct pw_idx *idx;
	const uint8_t *data; /* whole .pack (mmap) */
	size_t size;
	int mapped;  /* data is our mmap (not a caller's buffer) */
	uint32_t nr; /* objects (pack header == idx) */
	/* reverse index, built on first use (pw_pack_revindex); read the
	 * offsets through pw_pack_pos_offset */
	uint32_t *rev_pos;     /* idx entry of each pack position, nr + 1 */
	uint32_t *pack_pos;    /* pack position of each idx entry, nr + 1 */
	uint32_t *rev_off32;   /* below 4 GiB: each position's offset, ascending; the
	                        * last is the trailer's */
	uint64_t *rev_offsets; /* the same for a pack of 4 GiB or more */
	void *rev_mem;         /* the block holding the 32-bit arrays */
	size_t rev_mem_len;
};

/* The offset of the entry at pack position pos (nr: the trailer's); the
 * reverse index is built. */
static inline uint64_t pw_pack_pos_offset(const struct pw_pack *p, uint32_t pos)
{
	return p->rev_off32 ? p->rev_off32[pos] : p->rev_offsets[pos];
}

/* The bytes [from, to) of a mapped pack will not be read again soon: their
 * pages leave the process's memory (they stay in the page cache, and a later
 * read maps them back). A no-op for a caller's buffer. */
void pw_pack_release(struct pw_pack *p, uint64_t from, uint64_t to);

/* Open a pack by its .idx path (the .pack beside it is mapped). Checks the
 * pack header, that the object counts agree and that the pack's trailing
 * checksum is the one recorded in the idx (a cheap check: nothing is hashed). */
int pw_pack_open(struct pw_pack **out, const char *idx_path, const struct pw_hash_algo *algo,
                 struct pw_error *err);
/* The same with an idx the caller opened already: on success the pack owns
 * idx, on failure the caller still does. */
int pw_pack_open_idx(struct pw_pack **out, struct pw_idx *idx, const char *idx_path,
                     struct pw_error *err);
/* A pack in a caller's buffer (kept alive until pw_pack_free), without an
 * idx: entries are read by offset, REF_DELTA bases cannot be found, there is
 * no reverse index. For tests and fuzzing. */
int pw_pack_open_memory(struct pw_pack **out, const void *data, size_t len,
                        const struct pw_hash_algo *algo, struct pw_error *err);
void pw_pack_free(struct pw_pack *pack);

static inline const struct pw_hash_algo *pw_pack_algo(const struct pw_pack *p)
{
	return p->algo;
}
static inline const char *pw_pack_path(const struct pw_pack *p)
{
	return p->path;
}
static inline uint32_t pw_pack_nr_objects(const struct pw_pack *p)
{
	return p->nr;
}

/* 1 and *offset when the object (raw id of the pack's algorithm) is in the pack. */
int pw_pack_find(const struct pw_pack *pack, const uint8_t *raw, uint64_t *offset);

/* One entry as stored: what the pack writer needs to copy it verbatim. */
struct pw_pack_raw_entry {
	uint64_t offset;
	int type;               /* PW_OBJ_*, including OFS_DELTA / REF_DELTA */
	uint64_t size;          /* inflated size from the header (delta size for deltas) */
	size_t hdr_len;         /* header bytes before the zlib stream */
	uint64_t base_offset;   /* OFS_DELTA: absolute offset of the base */
	struct pw_oid base_oid; /* REF_DELTA: the base's id */
	const uint8_t *data;    /* whole raw entry: header through end of zlib data */
	size_t len;
	uint32_t idx_pos; /* the entry's number in the idx */
};
/* Describe the entry at `offset` (which must be an entry start listed in the
 * idx); builds the reverse index on first use. */
int pw_pack_entry_raw(struct pw_pack *pack, uint64_t offset, struct pw_pack_raw_entry *info,
                      struct pw_error *err);

/* Read the whole object at `offset`: *type is its real type (never a delta).
 * cache may be NULL (slower on delta chains). */
int pw_pack_read(struct pw_pack *pack, uint64_t offset, struct pw_base_cache *cache, int *type,
                 struct pw_buf *out, struct pw_error *err);
/* Type and size of the object at `offset` without building it (inflates only
 * the first bytes of a delta). */
int pw_pack_read_header(struct pw_pack *pack, uint64_t offset, int *type, uint64_t *size,
                        struct pw_error *err);

/* The real type of the object at `offset` (headers only: nothing inflated). */
int pw_pack_entry_type(struct pw_pack *pack, uint64_t offset, int *type, struct pw_error *err);

/* Build the reverse index now (idempotent). */
int pw_pack_revindex(struct pw_pack *pack, struct pw_error *err);
/* The same, choosing how: wide 0 sorts idx positions by their 32-bit
 * offsets (a pack below 4 GiB), 1 sorts 64-bit offsets and searches each
 * entry's place (what a larger pack needs; tests use it on small ones). */
int pw_pack__revindex_build(struct pw_pack *pack, int wide, struct pw_error *err);
/* 1 and *pos = the pack position of the entry starting at offset, 0 when
 * none does (binary search; the reverse index is built). */
int pw_pack_pos_at_offset(const struct pw_pack *pack, uint64_t offset, uint32_t *pos);
/* Drop the reverse index (tests build it both ways). */
void pw_pack__revindex_drop(struct pw_pack *pack);
/* Where the entry starting at `offset` ends (the next entry or the trailer). */
int pw_pack_entry_end(struct pw_pack *pack, uint64_t offset, uint64_t *end, struct pw_error *err);

/* Hash the whole pack and compare with its trailer (verify-pack). */
int pw_pack_verify_checksum(struct pw_pack *pack, struct pw_error *err);

#endif
