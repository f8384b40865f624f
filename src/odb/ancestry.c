/* "Is A an ancestor of B", written once for the client's fast-forward checks
 * (fetch, push) and receive-pack's denial of non-fast-forward updates. A
 * newest-first walk from B that stops at A, and gives up on lines of history
 * older than A (with a day's allowance for clock skew, as Git's walks do). */
#include <stdlib.h>

#include "packwire/odb.h"
#include "hash/oidmap.h"

#define CLOCK_SKEW 86400

struct item {
	struct pw_oid oid;
	int64_t time;
};

struct walk {
	struct pw_odb *odb;
	struct pw_oidmap seen;
	struct item *heap;
	size_t nr, alloc;
	struct pw_buf buf;
};

/* Read a commit: 1 and *ci filled, 0 when it is missing or no commit (the
 * line of history ends there quietly, as at a shallow boundary). */
static int read_commit(struct walk *w, const struct pw_oid *oid, struct pw_commit_info *ci)
{
	int type;

	if (pw_odb_read(w->odb, oid, &type, &w->buf) || type != PW_OBJ_COMMIT)
		return 0;
	return !pw_commit_parse(ci, w->buf.data, w->buf.len, pw_odb_algo(w->odb), NULL);
}

static int heap_push(struct walk *w, const struct pw_oid *oid, int64_t time)
{
	size_t i;

	if (w->nr == w->alloc) {
		size_t a = w->alloc ? w->alloc * 2 : 64;
		struct item *p = realloc(w->heap, a * sizeof(*p));

		if (!p)
			return PW_ENOMEM;
		w->heap = p;
		w->alloc = a;
	}
	i = w->nr++;
	while (i && time > w->heap[(i - 1) / 2].time) {
		w->heap[i] = w->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	w->heap[i].oid = *oid;
	w->heap[i].time = time;
	return 0;
}

static struct item heap_pop(struct walk *w)
{
	struct item top = w->heap[0], last = w->heap[--w->nr];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= w->nr)
			break;
		if (c + 1 < w->nr && w->heap[c + 1].time > w->heap[c].time)
			c++;
		if (w->heap[c].time <= last.time)
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (w->nr)
		w->heap[i] = last;
	return top;
}

/* Queue a commit once, keyed by its committer date. */
static int visit(struct walk *w, const struct pw_oid *oid)
{
	struct pw_commit_info ci;
	int created, rc;

	if (!pw_oidmap_put(&w->seen, oid, &created))
		return PW_ENOMEM;
	if (!created || !read_commit(w, oid, &ci))
		return 0;
	rc = heap_push(w, oid, ci.commit_time);
	pw_commit_info_free(&ci);
	return rc;
}

int pw_odb_is_ancestor(struct pw_odb *odb, const struct pw_oid *anc, const struct pw_oid *desc,
                       struct pw_error *err)
{
	struct walk w = {odb, PW_OIDMAP_INIT, NULL, 0, 0, PW_BUF_INIT};
	struct pw_commit_info target;
	int64_t target_time;
	int rc, found = 0;

	if (pw_oid_equal(anc, desc))
		return 1;
	/* not a readable commit: it cannot be a fast-forward base */
	if (!read_commit(&w, anc, &target)) {
		pw_buf_free(&w.buf);
		return 0;
	}
	target_time = target.commit_time;
	pw_commit_info_free(&target);
	rc = visit(&w, desc);
	while (!rc && w.nr) {
		struct item it = heap_pop(&w);
		struct pw_commit_info ci;
		size_t i;

		if (pw_oid_equal(&it.oid, anc)) {
			found = 1;
			break;
		}
		/* older than the target: its ancestors are older still */
		if (it.time + CLOCK_SKEW < target_time || !read_commit(&w, &it.oid, &ci))
			continue;
		for (i = 0; !rc && i < ci.nr_parents; i++)
			rc = visit(&w, &ci.parents[i]);
		pw_commit_info_free(&ci);
	}
	free(w.heap);
	pw_buf_free(&w.buf);
	pw_oidmap_free(&w.seen);
	if (rc)
		return pw_error_set(err, rc, "out of memory");
	return found;
}
