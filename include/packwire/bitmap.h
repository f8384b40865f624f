/* Reachability bitmaps (.bitmap beside a pack): answer "every object
 * reachable from these tips and not from those" from the bitmaps of the
 * repository's bitmapped pack, and write that pack straight from it by
 * copying entries. Anything the walk cannot answer (missing objects, too
 * many objects outside the bitmapped pack, a damaged file) makes it return
 * PW_ENOTFOUND or PW_ECORRUPT before anything is written, so that the caller
 * falls back to the ordinary object walk (packwire/revlist.h). A walk is used
 * by one thread at a time, with an odb handle no other thread uses meanwhile. */
#ifndef PACKWIRE_BITMAP_H
#define PACKWIRE_BITMAP_H

#include "packwire/export.h"

#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"

struct pw_bitmap_walk;

/* Find the odb's bitmapped pack and load its bitmap. PW_ENOTFOUND when there
 * is none (or it is unusable; the reason is in err). */
PW_API int pw_bitmap_walk_new(struct pw_bitmap_walk **out, struct pw_odb *odb,
                              struct pw_error *err);
/* NULL is fine. The odb must outlive the walk. */
PW_API void pw_bitmap_walk_free(struct pw_bitmap_walk *w);
/* Queue a tip (exclude = 0) or an exclusion; done by pw_bitmap_walk_run. */
PW_API int pw_bitmap_walk_add(struct pw_bitmap_walk *w, const struct pw_oid *oid, int exclude);
/* Compute the objects to send. Objects outside the bitmapped pack are
 * walked through the odb; PW_ENOTFOUND when one is missing or when there are
 * too many of them (the caller walks instead). */
PW_API int pw_bitmap_walk_run(struct pw_bitmap_walk *w);
/* After run: the number of objects to send. */
PW_API uint32_t pw_bitmap_walk_count(const struct pw_bitmap_walk *w);
/* The last error of add, run or write (borrowed). */
PW_API const struct pw_error *pw_bitmap_walk_error(const struct pw_bitmap_walk *w);

struct pw_bitmap_write_opts {
	int ofs_delta; /* else deltas are written as REF_DELTA */
	int thin;      /* deltas against excluded objects may stay deltas */
	pw_progress_fn progress;
	void *progress_data;
	/* 0: reused entries are checked against the idx CRC before the first
	 * byte goes out. 1: they are not, as Git does when it streams a pack to
	 * a client, whose index-pack checks every object anyway; and when the
	 * result is every object of the bitmapped pack and nothing else, the
	 * pack file itself is sent, trailer included, without rehashing. */
	int trust_reused;
};
/* Write the pack of the result by copying entries in pack order: deltas
 * whose base is sent (or excluded, when thin) are copied, other deltas are
 * written whole. Unless opts->trust_reused, reused entries are checked
 * against the idx CRC first; a mismatch is PW_ECORRUPT before any byte is
 * written. fn receives the pack stream; checksum (rawsz bytes, may be NULL)
 * gets its trailing checksum and stats (may be NULL) what was written. */
PW_API int pw_bitmap_walk_write(struct pw_bitmap_walk *w, const struct pw_bitmap_write_opts *opts,
                                pw_pack_out_fn fn, void *ctx, uint8_t *checksum,
                                struct pw_pack_write_stats *stats);

#endif
