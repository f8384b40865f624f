/* The one commit queue: newest first, commits of one date in the order they
 * were queued (Git's prio_queue rule), items of either kind (an index or a
 * pointer), reserve, and a long random run checked against a sort. */
#include <stdlib.h>
#include <string.h>

#include "odb/commit-queue.h"
#include "packwire/error.h"
#include "test.h"

static void test_order(void)
{
	struct pw_commit_queue q = PW_COMMIT_QUEUE_INIT;
	static const int64_t dates[] = {5, 9, 5, 1, 9, 5, -3, 0};
	static const uintptr_t want[] = {1, 4, 0, 2, 5, 3, 7, 6};
	int64_t d;
	size_t i;

	for (i = 0; i < sizeof(dates) / sizeof(dates[0]); i++)
		CHECK_EQ_INT(pw_commit_queue_push(&q, i, dates[i]), 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ_INT(pw_commit_queue_pop(&q, &d), want[i]);
		CHECK(d == dates[want[i]]);
	}
	CHECK_EQ_INT(q.nr, 0);
	pw_commit_queue_free(&q);
	CHECK(q.v == NULL && q.alloc == 0);
}

static void test_pointers(void)
{
	struct pw_commit_queue q = PW_COMMIT_QUEUE_INIT;
	int a, b;

	CHECK_EQ_INT(pw_commit_queue_reserve(&q, 2), 0);
	CHECK(q.alloc >= 2);
	CHECK_EQ_INT(pw_commit_queue_push(&q, (uintptr_t)&a, 1), 0);
	CHECK_EQ_INT(pw_commit_queue_push(&q, (uintptr_t)&b, 2), 0);
	CHECK((int *)pw_commit_queue_pop(&q, NULL) == &b);
	CHECK((int *)pw_commit_queue_pop(&q, NULL) == &a);
	CHECK_EQ_INT(pw_commit_queue_reserve(&q, SIZE_MAX), PW_ENOMEM);
	pw_commit_queue_free(&q);
}

struct ref {
	int64_t date;
	size_t seq;
};

static int cmp_ref(const void *a_, const void *b_)
{
	const struct ref *a = a_, *b = b_;

	if (a->date != b->date)
		return a->date > b->date ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* Pushes and pops interleaved: every pop is the newest, first-queued item
 * of what is queued then. */
static void test_random(void)
{
	struct pw_commit_queue q = PW_COMMIT_QUEUE_INIT;
	struct ref *live = calloc(4096, sizeof(*live));
	size_t nlive = 0, seq = 0, bad = 0, i;
	unsigned r = 12345;

	for (i = 0; live && i < 20000; i++) {
		r = r * 1103515245u + 12345u;
		if (nlive < 4096 && ((r >> 16) % 3 || !nlive)) {
			live[nlive].date = (int64_t)((r >> 8) % 50);
			live[nlive].seq = seq;
			if (pw_commit_queue_push(&q, seq, live[nlive].date))
				bad++;
			nlive++;
			seq++;
		} else {
			int64_t d;
			uintptr_t got;

			qsort(live, nlive, sizeof(*live), cmp_ref);
			got = pw_commit_queue_pop(&q, &d);
			if (got != live[0].seq || d != live[0].date)
				bad++;
			memmove(live, live + 1, --nlive * sizeof(*live));
		}
	}
	CHECK(live != NULL);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(q.nr, nlive);
	free(live);
	pw_commit_queue_free(&q);
}

int main(void)
{
	test_order();
	test_pointers();
	test_random();
	return pw_test_done();
}
