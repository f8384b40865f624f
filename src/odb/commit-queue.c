/* The date-ordered commit queue: see commit-queue.h. */
#include <stdlib.h>

#include "odb/commit-queue.h"
#include "packwire/error.h"

void pw_commit_queue_free(struct pw_commit_queue *q)
{
	free(q->v);
	q->v = NULL;
	q->nr = q->alloc = 0;
	q->seq = 0;
}

int pw_commit_queue_reserve(struct pw_commit_queue *q, size_t n)
{
	size_t na = q->alloc ? q->alloc : 64;
	struct pw_commit_queue_entry *nv;

	if (n > SIZE_MAX / sizeof(*nv) - q->nr)
		return PW_ENOMEM;
	if (q->nr + n <= q->alloc)
		return 0;
	while (na < q->nr + n)
		na = na > SIZE_MAX / sizeof(*nv) / 2 ? q->nr + n : na * 2;
	if (!(nv = realloc(q->v, na * sizeof(*nv))))
		return PW_ENOMEM;
	q->v = nv;
	q->alloc = na;
	return 0;
}

/* Does a come out before b? */
static int before(const struct pw_commit_queue_entry *a, const struct pw_commit_queue_entry *b)
{
	if (a->date != b->date)
		return a->date > b->date;
	return a->seq < b->seq;
}

int pw_commit_queue_push(struct pw_commit_queue *q, uintptr_t item, int64_t date)
{
	struct pw_commit_queue_entry e;
	size_t i;

	if (q->nr == q->alloc && pw_commit_queue_reserve(q, 1))
		return PW_ENOMEM;
	e.date = date;
	e.seq = q->seq++;
	e.item = item;
	for (i = q->nr++; i;) {
		size_t parent = (i - 1) / 2;

		if (!before(&e, &q->v[parent]))
			break;
		q->v[i] = q->v[parent];
		i = parent;
	}
	q->v[i] = e;
	return 0;
}

uintptr_t pw_commit_queue_pop(struct pw_commit_queue *q, int64_t *date)
{
	struct pw_commit_queue_entry top = q->v[0], last = q->v[--q->nr];
	size_t i = 0, n = q->nr;

	while (2 * i + 1 < n) {
		size_t child = 2 * i + 1;

		if (child + 1 < n && before(&q->v[child + 1], &q->v[child]))
			child++;
		if (!before(&q->v[child], &last))
			break;
		q->v[i] = q->v[child];
		i = child;
	}
	if (n)
		q->v[i] = last;
	if (date)
		*date = top.date;
	return top.item;
}
