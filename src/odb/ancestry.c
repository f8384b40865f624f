/* "Is A an ancestor of B", written once for the client's fast-forward checks
 * (fetch, push) and receive-pack's denial of non-fast-forward updates. A
 * newest-first walk from B that stops at A, and gives up on lines of history
 * older than A (with a day's allowance for clock skew, as Git's walks do). */
#include <stdlib.h>

#include "hash/oidmap.h"
#include "odb/commit-queue.h"
#include "packwire/odb.h"

#define CLOCK_SKEW 86400

struct walk {
	struct pw_odb *odb;
	struct pw_oidmap seen;
	struct pw_commit_queue queue; /* items index oids */
	struct pw_oid *oids;
	size_t nr_oids, alloc_oids;
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

/* Queue a commit once, keyed by its committer date. */
static int visit(struct walk *w, const struct pw_oid *oid)
{
	struct pw_commit_info ci;
	int created, rc;

	if (!pw_oidmap_put(&w->seen, oid, &created))
		return PW_ENOMEM;
	if (!created || !read_commit(w, oid, &ci))
		return 0;
	rc = PW_ENOMEM;
	if (w->nr_oids == w->alloc_oids) {
		size_t a = w->alloc_oids ? w->alloc_oids * 2 : 64;
		struct pw_oid *p = realloc(w->oids, a * sizeof(*p));

		if (!p)
			goto out;
		w->oids = p;
		w->alloc_oids = a;
	}
	w->oids[w->nr_oids] = *oid;
	if (!pw_commit_queue_push(&w->queue, w->nr_oids, ci.commit_time)) {
		w->nr_oids++;
		rc = 0;
	}
out:
	pw_commit_info_free(&ci);
	return rc;
}

int pw_odb_is_ancestor(struct pw_odb *odb, const struct pw_oid *anc, const struct pw_oid *desc,
                       struct pw_error *err)
{
	struct walk w = {odb, PW_OIDMAP_INIT, PW_COMMIT_QUEUE_INIT, NULL, 0, 0, PW_BUF_INIT};
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
	while (!rc && w.queue.nr) {
		int64_t time;
		struct pw_oid oid = w.oids[pw_commit_queue_pop(&w.queue, &time)];
		struct pw_commit_info ci;
		size_t i;

		if (pw_oid_equal(&oid, anc)) {
			found = 1;
			break;
		}
		/* older than the target: its ancestors are older still */
		if (time + CLOCK_SKEW < target_time || !read_commit(&w, &oid, &ci))
			continue;
		for (i = 0; !rc && i < ci.nr_parents; i++)
			rc = visit(&w, &ci.parents[i]);
		pw_commit_info_free(&ci);
	}
	pw_commit_queue_free(&w.queue);
	free(w.oids);
	pw_buf_free(&w.buf);
	pw_oidmap_free(&w.seen);
	if (rc)
		return pw_error_set(err, rc, "out of memory");
	return found;
}
