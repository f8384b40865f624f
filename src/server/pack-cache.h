/* The pack cache's directory (pack-cache.c): which entry a request gets and
 * in which role, publishing, removal and eviction, under a lock that holds
 * between threads (a mutex) and between processes (flock on DIR/lock).
 *
 * Names: <hex>.pack is a complete entry, <hex>.part a generation in
 * progress, flock'ed (LOCK_EX) by its writer for as long as it writes:
 * a part whose lock is free and that has no end record was left by a
 * writer that died, and is removed. Every change of a name happens under
 * the directory lock; the entries themselves are read without it. */
#ifndef PW_SERVER_PACK_CACHE_H
#define PW_SERVER_PACK_CACHE_H

#include <stdint.h>
#include <sys/types.h>

#include "packwire/pack-cache.h"
#include "server/pack-cache-entry.h"

enum pw_pc_role {
	PW_PC_BYPASS = 0, /* no cache for this request */
	PW_PC_HIT,        /* fd: a complete entry */
	PW_PC_FOLLOW,     /* fd: a part another writer is writing */
	PW_PC_LEAD,       /* fd: a new part, locked, its header written */
};

struct pw_pc_slot {
	enum pw_pc_role role;
	int fd;
	dev_t dev;
	ino_t ino;
	char name[PW_PC_KEY_SIZE * 2 + 6]; /* "<hex>.pack" or "<hex>.part" */
};

/* Find the entry of key (PW_PC_HIT), the generation in progress
 * (PW_PC_FOLLOW), or start one with the header hdr (PW_PC_LEAD). A
 * request gets PW_PC_BYPASS (0 returned, the reason in err) when the
 * bound of generations is reached or the cache is out of order; a
 * negative code only for out of memory. */
int pw_pc_lookup(struct pw_pack_cache *c, const uint8_t key[PW_PC_KEY_SIZE],
                 const uint8_t hdr[PW_PC_HDR_SIZE], struct pw_pc_slot *slot, struct pw_error *err);
/* A second descriptor on a LEAD's part, for the request that started the
 * generation to read it as any other reader does (reader: a FOLLOW). */
int pw_pc_open_reader(struct pw_pack_cache *c, const struct pw_pc_slot *slot,
                      struct pw_pc_slot *reader, struct pw_error *err);
/* Write len bytes at off of a LEAD slot's part. */
int pw_pc_write_at(struct pw_pack_cache *c, struct pw_pc_slot *slot, uint64_t off, const void *data,
                   size_t len, struct pw_error *err);
/* A LEAD's part is complete: sync it, make it <hex>.pack (unless it alone
 * is larger than the cache may hold: then it is removed), trim the
 * directory, release the lock and close. The slot is closed either way. */
int pw_pc_publish(struct pw_pack_cache *c, struct pw_pc_slot *slot, struct pw_error *err);
/* A LEAD's generation failed: remove its part, release, close. */
void pw_pc_abandon(struct pw_pack_cache *c, struct pw_pc_slot *slot);
/* Remove a HIT's entry (corrupt) or a FOLLOW's part (its writer died),
 * if the name still holds the file the slot has open; close the slot. */
void pw_pc_drop(struct pw_pack_cache *c, struct pw_pc_slot *slot, int corrupt);
/* Is the writer of a FOLLOW's part still at work (holding its lock)? */
int pw_pc_writer_alive(struct pw_pc_slot *slot);
void pw_pc_slot_close(struct pw_pc_slot *slot);
/* Was this complete entry (a HIT) checked whole by this process, and has
 * it not changed since (its ctime, size and inode)? */
int pw_pc_is_checked(struct pw_pack_cache *c, const struct pw_pc_slot *slot);
/* Mark it so, after a check that began when it was as in *before. */
struct stat;
void pw_pc_set_checked(struct pw_pack_cache *c, const struct pw_pc_slot *slot,
                       const struct stat *before);
/* After a write failure (disk full): lookups give PW_PC_BYPASS for a while. */
void pw_pc_pause(struct pw_pack_cache *c, unsigned seconds);

/* Test seam (tests/hooks/pack-cache.c, in packwire-test-hooks only):
 * called by a generation after each record it wrote (end = its offset). */
extern void (*pw_pack_cache__test_record_written)(uint64_t end);

/* Counters (pw_pack_cache_get_stats). */
enum pw_pc_counter {
	PW_PC_N_HIT,
	PW_PC_N_MISS,
	PW_PC_N_SHARED,
	PW_PC_N_BYPASS,
	PW_PC_N_GENERATED,
	PW_PC_N_SERVED,
};
void pw_pc_count(struct pw_pack_cache *c, enum pw_pc_counter which, uint64_t n);

#endif
