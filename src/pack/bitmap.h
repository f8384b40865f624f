/* Reachability bitmaps (.bitmap beside a .pack, format version 1): plain
 * bit sets over pack positions (objects in pack-offset order), the EWAH
 * compressed form they are stored in, and the reader of the file (type
 * bitmaps, one bitmap per selected commit, XOR chains between them).
 *
 * The walk on top of it answers "every object reachable from these tips and
 * not from those" as a bit set (plus a short list of objects outside the
 * bitmapped pack), and writes a pack straight from it by copying entries of
 * the bitmapped pack. Anything it cannot answer (missing objects, too many
 * objects outside the pack, a damaged file) makes it return PW_ENOTFOUND or
 * PW_ECORRUPT before anything is written, so that the caller falls back to
 * the ordinary object walk. */
#ifndef PW_PACK_BITMAP_H
#define PW_PACK_BITMAP_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/bitmap.h"
#include "packwire/pack-write.h"

struct pw_pack;

/* ---- plain bit sets ---------------------------------------------------- */

struct pw_bitset {
	uint64_t *w;   /* nwords words, bit n is w[n / 64] >> (n % 64) */
	size_t nwords; /* (nbits + 63) / 64 */
	uint32_t nbits;
};

int pw_bitset_init(struct pw_bitset *b, uint32_t nbits);
void pw_bitset_free(struct pw_bitset *b);
static inline int pw_bitset_get(const struct pw_bitset *b, uint32_t n)
{
	return n < b->nbits && (b->w[n / 64] >> (n % 64)) & 1;
}
static inline void pw_bitset_set(struct pw_bitset *b, uint32_t n)
{
	b->w[n / 64] |= (uint64_t)1 << (n % 64);
}
uint32_t pw_bitset_count(const struct pw_bitset *b);

/* ---- EWAH ---------------------------------------------------------------- */

/* A serialized EWAH bitmap inside a file: a view, checked for size only. */
struct pw_ewah {
	uint32_t bit_size;
	uint32_t nwords;
	const uint8_t *words; /* nwords big-endian 64-bit words */
};

/* Parse the EWAH at p (bit count, word count, words, last-RLW position);
 * *used = its serialized length. PW_ECORRUPT when it does not fit in avail. */
int pw_ewah_parse(struct pw_ewah *out, const uint8_t *p, size_t avail, size_t *used,
                  struct pw_error *err);
/* Decode into dst: OR (xor = 0) or XOR (xor = 1). PW_ECORRUPT when the
 * stream is malformed or sets a bit at or past dst->nbits. */
int pw_ewah_apply(const struct pw_ewah *e, struct pw_bitset *dst, int xor, struct pw_error *err);

/* ---- the .bitmap file ---------------------------------------------------- */

#define PW_BITMAP_OPT_FULL_DAG     0x1
#define PW_BITMAP_OPT_HASH_CACHE   0x4
#define PW_BITMAP_OPT_LOOKUP_TABLE 0x10
#define PW_BITMAP_MAX_XOR          160

struct pw_bitmap_entry {
	uint32_t idx_pos; /* the commit's entry number in the .idx */
	uint8_t xor ;     /* XOR with the bitmap of the entry this many before */
	uint8_t flags;
	struct pw_ewah ewah;
};

struct pw_bitmap {
	const struct pw_hash_algo *algo;
	uint32_t nr_objects;
	uint16_t flags;
	const uint8_t *data; /* whole file */
	size_t size;
	int mapped;
	struct pw_bitset types[4]; /* commits, trees, blobs, tags (pack positions) */
	struct pw_bitmap_entry *entries;
	uint32_t nr_entries;
	uint32_t *by_idx;      /* entry numbers sorted by idx_pos */
	const uint8_t *hashes; /* name-hash cache (nr_objects be32) or NULL */
};

/* Parse a .bitmap held in memory (kept alive by the caller) for a pack of
 * nr_objects objects. pack_checksum (rawsz bytes, may be NULL) must match the
 * one recorded in the file. Every stored bitmap is bounds-checked here. */
int pw_bitmap_parse(struct pw_bitmap **out, const uint8_t *data, size_t size,
                    const struct pw_hash_algo *algo, uint32_t nr_objects,
                    const uint8_t *pack_checksum, struct pw_error *err);
/* Open "<pack>.bitmap" for an opened pack. PW_ENOTFOUND when there is none. */
int pw_bitmap_open(struct pw_bitmap **out, struct pw_pack *pack, struct pw_error *err);
void pw_bitmap_free(struct pw_bitmap *bm);

/* Entry number of the stored bitmap of the commit at idx position idx_pos:
 * 1 and *entry when there is one, else 0. */
int pw_bitmap_find(const struct pw_bitmap *bm, uint32_t idx_pos, uint32_t *entry);
/* OR the full bitmap of entry `entry` (its XOR chain resolved) into dst;
 * tmp is scratch of the same size. */
int pw_bitmap_get(const struct pw_bitmap *bm, uint32_t entry, struct pw_bitset *dst,
                  struct pw_bitset *tmp, struct pw_error *err);
/* Real object type at a pack position per the type bitmaps (PW_OBJ_NONE
 * when none says). */
int pw_bitmap_type(const struct pw_bitmap *bm, uint32_t pos);

/* ---- answering a walk and writing its pack -------------------------------- */

/* The walk itself (new, add, run, count, error, write) is public:
 * packwire/bitmap.h. What servers add on top: */

/* After run: when `peeled` is sent and the tag `tag` is not, add the tag and
 * every tag between it and `peeled` (include-tag). */
int pw_bitmap_walk_include_tag(struct pw_bitmap_walk *w, const struct pw_oid *tag,
                               const struct pw_oid *peeled);
/* Drop blobs from the result except the tips themselves (filter blob:none). */
void pw_bitmap_walk_drop_blobs(struct pw_bitmap_walk *w);
/* Drop blobs of `limit` bytes or more, except the tips (blob:limit=N). */
int pw_bitmap_walk_drop_large_blobs(struct pw_bitmap_walk *w, uint64_t limit);

/* ---- writing ---------------------------------------------------------------- */

/* An object of a written pack, in pack order (by offset). */
struct pw_bitmap_obj {
	struct pw_oid oid;
	uint32_t hash; /* name hash (0 without a path) */
	uint8_t type;  /* real type */
};

/* Where an object is in the pack being indexed: its position in pack
 * order, or -1 when it is not in it. */
typedef int64_t (*pw_bitmap_pos_fn)(void *data, const struct pw_oid *oid);

struct pw_bitmap_write_index_opts {
	pw_progress_fn progress; /* may be NULL */
	void *progress_data;
	/* the caller's lookup of objects (the pack writer's table), else
	 * (NULL) the bitmap writer makes its own */
	pw_bitmap_pos_fn pos;
	void *pos_data;
	/* what a walk already parsed of a commit (pw_pack_commit_fn), else
	 * (NULL, or when it answers 0) the commit is read */
	pw_pack_commit_fn commit;
	void *commit_data;
};

/* Build the .bitmap of a pack of `nr` objects (objs in pack order, the
 * pack's trailing checksum pack_checksum) and hand its bytes to fn in one
 * call. Commit bitmaps go to commits spaced along history as Git spaces
 * them; a commit `tips` peels to (pack.preferBitmapTips) is preferred in
 * its window. The objects are read through odb. PW_ENOTFOUND
 * (nothing written) when the pack is not closed under reachability. */
int pw_bitmap_write(struct pw_odb *odb, const struct pw_bitmap_obj *objs, uint32_t nr,
                    const uint8_t *pack_checksum, const struct pw_oid *tips, size_t ntips,
                    const struct pw_bitmap_write_index_opts *opts, pw_pack_out_fn fn, void *ctx,
                    struct pw_error *err);

#endif
