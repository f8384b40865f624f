/* The one date-ordered commit queue: newest first, and commits of the same
 * date in the order they were queued, as Git's prio_queue orders commits
 * (compare_commits_by_commit_date). Every walk that goes back in history
 * newest first uses it: pack generation and rev-list, upload-pack's shallow
 * walks, the bitmap writer (keyed by topological rank instead of date), the
 * client's "have" walk and the ancestry checks. An item is the caller's: an
 * index into its own table, or a pointer. */
#ifndef PW_ODB_COMMIT_QUEUE_H
#define PW_ODB_COMMIT_QUEUE_H

#include <stddef.h>
#include <stdint.h>

struct pw_commit_queue_entry {
	int64_t date;
	uint64_t seq; /* queued order: the tie-break */
	uintptr_t item;
};

struct pw_commit_queue {
	struct pw_commit_queue_entry *v; /* a max-heap on (date, -seq) */
	size_t nr, alloc;
	uint64_t seq;
};

#define PW_COMMIT_QUEUE_INIT                                                                       \
	{                                                                                          \
		NULL, 0, 0, 0                                                                      \
	}

void pw_commit_queue_free(struct pw_commit_queue *q);
/* Make room for n more items, so that as many pushes cannot fail: 0 or
 * PW_ENOMEM. */
int pw_commit_queue_reserve(struct pw_commit_queue *q, size_t n);
/* Empty the queue, keeping its room. */
static inline void pw_commit_queue_clear(struct pw_commit_queue *q)
{
	q->nr = 0;
}
/* Queue item with its date (or any key: larger comes out first). 0 or
 * PW_ENOMEM (the queue is then unchanged). */
int pw_commit_queue_push(struct pw_commit_queue *q, uintptr_t item, int64_t date);
/* The newest item (the first queued among equals); q->nr must be > 0.
 * *date (may be NULL) gets its date. */
uintptr_t pw_commit_queue_pop(struct pw_commit_queue *q, int64_t *date);
/* The items still queued, in no particular order: q->v[i].item for i < q->nr. */

#endif
