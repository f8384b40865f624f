/* Shallow fetches: the new shallow boundary for deepen N (absolute or
 * relative to the client's boundary), deepen-since and deepen-not, and which
 * of the client's shallow commits become complete ("unshallow"). The flags
 * left on the graph (G_CUT_SEND, G_CUT_HAVE) steer the pack walk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/repo.h"
#include "packwire/refs.h"
#include "server/session.h"
#include "server/upload-parts.h"

#define INFINITE_DEPTH 0x7fffffffu

static int cmp_oid(const void *a, const void *b)
{
	return pw_oid_cmp(a, b);
}

/* $GIT_DIR/shallow: one id per line, the commits whose parents this
 * repository lacks. Absent means a complete repository. */
int pw_srv_load_repo_shallow(struct pw_upload_session *s)
{
	struct pw_buf data = PW_BUF_INIT;
	char *path;
	const char *p, *end;
	size_t i, n;
	int rc, created;

	if (s->srv_shallow_loaded)
		return 0;
	if (!(path = pw_path_join(pw_repo_git_dir(s->repo), "shallow")))
		return pw_srv_oom(s);
	rc = pw_fs_read_file(path, &data, 0, &s->err);
	free(path);
	if (rc == PW_ENOTFOUND) {
		pw_error_clear(&s->err);
		s->srv_shallow_loaded = 1;
		return 0;
	}
	if (rc)
		return rc;
	for (p = data.data, end = p + data.len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct pw_oid oid;

		if (len) {
			if (len != s->algo->hexsz || pw_oid_from_hex(&oid, p, len, s->algo)) {
				rc = pw_srv_fail(s, PW_ECORRUPT, "bad line in shallow file: %.*s",
				                 (int)(len > 80 ? 80 : len), p);
				goto out;
			}
			if ((rc = pw_srv__push_oid(s, &s->srv_shallow, &oid)))
				goto out;
		}
		p += len + 1;
	}
	if (s->srv_shallow.nr)
		qsort(s->srv_shallow.v, s->srv_shallow.nr, sizeof(*s->srv_shallow.v), cmp_oid);
	for (i = 0, n = 0; i < s->srv_shallow.nr; i++) {
		if (n && pw_oid_equal(&s->srv_shallow.v[n - 1], &s->srv_shallow.v[i]))
			continue;
		s->srv_shallow.v[n++] = s->srv_shallow.v[i];
		if (!pw_oidmap_put(&s->srv_shallow_map, &s->srv_shallow.v[i], &created)) {
			rc = pw_srv_oom(s);
			goto out;
		}
	}
	s->srv_shallow.nr = n;
	s->srv_shallow_loaded = 1;
out:
	pw_buf_free(&data);
	return rc;
}

struct queue {
	uint32_t *v;
	size_t head, nr, alloc;
};

static int q_push(struct pw_upload_session *s, struct queue *q, uint32_t idx)
{
	if (q->nr == q->alloc) {
		size_t na = q->alloc ? q->alloc * 2 : 256;
		uint32_t *nv = realloc(q->v, na * sizeof(*nv));

		if (!nv)
			return pw_error_set(&s->err, PW_ENOMEM, "out of memory");
		q->v = nv;
		q->alloc = na;
	}
	q->v[q->nr++] = idx;
	return 0;
}

/* Breadth first from `start` (depth 1): commits closer than `depth` are
 * G_NOT_SHALLOW, those at `depth` become the boundary (G_SHALLOW), even root
 * commits, as Git reports them. BFS reaches each commit first at its
 * smallest depth. */
static int by_depth(struct pw_upload_session *s, const uint32_t *start, size_t n, uint32_t depth)
{
	struct pw_graph *g = &s->graph;
	struct queue q = {0};
	uint32_t epoch = ++g->epoch;
	size_t i;
	int rc = 0;

	for (i = 0; i < n; i++) {
		if (g->v[start[i]].mark == epoch)
			continue;
		g->v[start[i]].mark = epoch;
		g->v[start[i]].depth = 1;
		if ((rc = q_push(s, &q, start[i])))
			goto out;
	}
	while (q.head < q.nr) {
		uint32_t c = q.v[q.head++], d = g->v[c].depth, j;

		rc = pw_graph_parse(g, c);
		if (rc == PW_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			goto out;
		/* the repository's own shallow commits are a boundary too */
		if (d >= depth || (g->v[c].flags & G_SRV_SHALLOW)) {
			g->v[c].flags |= G_SHALLOW;
			continue;
		}
		g->v[c].flags |= G_NOT_SHALLOW;
		for (j = 0; j < g->v[c].nparents; j++) {
			uint32_t p = pw_graph_parent(g, c, j);

			if (g->v[p].mark == epoch)
				continue;
			g->v[p].mark = epoch;
			g->v[p].depth = d + 1;
			if ((rc = q_push(s, &q, p)))
				goto out;
		}
	}
out:
	free(q.v);
	return rc;
}

/* deepen-not names: exactly one of Git's expansions of the name ("<x>",
 * refs/<x>, refs/tags/<x>, refs/heads/<x>, refs/remotes/<x>[/HEAD]) must
 * be a ref, as git upload-pack's expand_ref wants it; the message is its. */
static int resolve_not(struct pw_upload_session *s, const char *name, struct pw_oid *out)
{
	unsigned found = 0;
	int rc = strcmp(name, "@") ? pw_refs_dwim(s->repo, name, out, NULL, &found) : PW_ENOTFOUND;

	if (rc == PW_ENOMEM)
		return pw_error_set(&s->err, rc, "out of memory");
	if (rc || found != 1)
		return pw_srv_fail(s, PW_EPROTO,
		                   "git upload-pack: ambiguous deepen-not: deepen-not %s", name);
	return pw_srv_peel(s, out, out) < 0 ? s->err.code : 0;
}

/* Mark everything reachable from the deepen-not refs G_EXCL (no further back
 * than `floor`, when the since-cutoff makes older commits irrelevant). */
static int mark_excluded(struct pw_upload_session *s, int64_t floor)
{
	struct pw_graph *g = &s->graph;
	struct queue q = {0};
	size_t i;
	int rc = 0;

	for (i = 0; i < s->args.deepen_not.nr; i++) {
		struct pw_oid oid;
		uint32_t idx;

		if ((rc = resolve_not(s, s->args.deepen_not.v[i], &oid)))
			goto out;
		if ((rc = pw_graph_lookup(g, &oid, &idx)))
			goto out;
		if (g->v[idx].flags & G_EXCL)
			continue;
		g->v[idx].flags |= G_EXCL;
		if ((rc = q_push(s, &q, idx)))
			goto out;
	}
	while (q.head < q.nr) {
		uint32_t c = q.v[q.head++], j;

		rc = pw_graph_parse(g, c);
		if (rc == PW_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			goto out;
		if (g->v[c].date < floor)
			continue;
		for (j = 0; j < g->v[c].nparents; j++) {
			uint32_t p = pw_graph_parent(g, c, j);

			if (g->v[p].flags & G_EXCL)
				continue;
			g->v[p].flags |= G_EXCL;
			if ((rc = q_push(s, &q, p)))
				goto out;
		}
	}
out:
	free(q.v);
	return rc;
}

/* deepen-since / deepen-not: the commits reachable from the wants that are
 * recent enough and not reachable from a deepen-not ref are kept; those with
 * a parent outside that set form the boundary. */
static int by_rev_list(struct pw_upload_session *s, const uint32_t *start, size_t n)
{
	struct pw_graph *g = &s->graph;
	struct queue q = {0};
	uint32_t epoch = ++g->epoch;
	int64_t since = s->args.deepen_since ? (int64_t)s->args.deepen_since : INT64_MIN;
	size_t i, kept = 0;
	int rc = 0;

	if (s->args.deepen_not.nr && (rc = mark_excluded(s, since)))
		return rc;
	for (i = 0; i < n; i++) {
		uint32_t c = start[i];

		if (g->v[c].mark == epoch)
			continue;
		g->v[c].mark = epoch;
		if ((rc = q_push(s, &q, c)))
			goto out;
	}
	/* collect the kept set: G_NOT_SHALLOW */
	while (q.head < q.nr) {
		uint32_t c = q.v[q.head++], j;

		rc = pw_graph_parse(g, c);
		if (rc == PW_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			goto out;
		if (g->v[c].flags & G_EXCL || g->v[c].date < since)
			continue;
		g->v[c].flags |= G_NOT_SHALLOW;
		kept++;
		for (j = 0; j < g->v[c].nparents; j++) {
			uint32_t p = pw_graph_parent(g, c, j);

			if (g->v[p].mark == epoch)
				continue;
			g->v[p].mark = epoch;
			if ((rc = q_push(s, &q, p)))
				goto out;
		}
	}
	if (!kept) {
		rc = pw_srv_fail(s, PW_EPROTO, "no commits selected for shallow requests");
		goto out;
	}
	/* boundary: kept commits with a parent outside the set (missing parents
	 * of a shallow server count as outside too) */
	for (i = 0; i < q.nr; i++) {
		uint32_t c = q.v[i], j;

		if (!(g->v[c].flags & G_NOT_SHALLOW))
			continue;
		for (j = 0; j < g->v[c].nparents; j++)
			if (!(g->v[pw_graph_parent(g, c, j)].flags & G_NOT_SHALLOW))
				break;
		if (j < g->v[c].nparents)
			g->v[c].flags |= G_SHALLOW;
	}
	/* a boundary commit is not "not shallow" for the unshallow rule */
	for (i = 0; i < q.nr; i++)
		if (g->v[q.v[i]].flags & G_SHALLOW)
			g->v[q.v[i]].flags &= ~G_NOT_SHALLOW;
out:
	free(q.v);
	return rc;
}

/* The client's boundary (its shallow lines) marked in the graph; a line
 * naming an object we have that is no commit is refused, one we do not
 * know is ignored, as Git does. */
static int mark_client_shallow(struct pw_upload_session *s)
{
	struct pw_graph *g = &s->graph;
	struct pw_fetch_args *a = &s->args;
	size_t i;
	int rc;

	for (i = 0; i < a->shallows.nr; i++) {
		uint32_t idx;

		if ((rc = pw_graph_lookup(g, &a->shallows.v[i], &idx)))
			return rc;
		rc = pw_graph_parse(g, idx);
		if (rc == PW_ENOTFOUND) {
			uint64_t size;
			int type;
			char hex[PW_MAX_HEXSZ + 1];

			if (pw_odb_read_header(s->odb, &a->shallows.v[i], &type, &size))
				continue; /* unknown to us: ignored, as Git does */
			return pw_srv_fail(s, PW_EPROTO, "invalid shallow object %s",
			                   pw_oid_to_hex(&a->shallows.v[i], hex));
		}
		if (rc)
			return rc;
		g->v[idx].flags |= G_CLIENT_SHALLOW | G_CUT_HAVE;
	}
	return 0;
}

/* The new boundary (s->new_shallow, and nothing sent past it) and the
 * client's commits that stop being shallow (s->unshallow). */
static int record_boundary(struct pw_upload_session *s)
{
	struct pw_graph *g = &s->graph;
	struct pw_fetch_args *a = &s->args;
	size_t i;
	int rc;

	for (i = 0; i < g->nr; i++) {
		uint32_t f = g->v[i].flags;

		if ((f & G_SHALLOW) && !(f & G_NOT_SHALLOW)) {
			g->v[i].flags |= G_CUT_SEND;
			if (!(f & G_CLIENT_SHALLOW) &&
			    (rc = pw_srv__push_oid(s, &s->new_shallow, &g->v[i].oid)))
				return rc;
		}
	}
	for (i = 0; i < a->shallows.nr; i++) {
		uint32_t idx;

		if ((rc = pw_graph_lookup(g, &a->shallows.v[i], &idx)))
			return rc;
		if ((g->v[idx].flags & (G_CLIENT_SHALLOW | G_NOT_SHALLOW)) ==
		    (G_CLIENT_SHALLOW | G_NOT_SHALLOW)) {
			g->v[idx].flags &= ~G_CLIENT_SHALLOW;
			if ((rc = pw_srv__push_oid(s, &s->unshallow, &g->v[idx].oid)))
				return rc;
		}
	}
	return 0;
}

int pw_srv_compute_shallow(struct pw_upload_session *s)
{
	struct pw_graph *g = &s->graph;
	struct pw_fetch_args *a = &s->args;
	uint32_t *start = NULL;
	size_t n = 0, i;
	int deepen = a->depth || a->deepen_since || a->deepen_not.nr, rc = 0;
	/* a shallow repository tells a v2 client its boundary on every fetch,
	 * as a deepen to the full (grafted) history */
	int srv_full = !deepen && s->v2 && s->srv_shallow.nr;
	unsigned depth = srv_full ? INFINITE_DEPTH : a->depth;

	if ((rc = mark_client_shallow(s)))
		return rc;
	if (!deepen && !srv_full)
		goto cuts;

	start = malloc((a->wants.nr + a->shallows.nr + 1) * sizeof(*start));
	if (!start)
		return pw_error_set(&s->err, PW_ENOMEM, "out of memory");
	if (depth && a->deepen_relative) {
		for (i = 0; i < a->shallows.nr; i++) {
			uint32_t idx;

			if ((rc = pw_graph_lookup(g, &a->shallows.v[i], &idx)))
				goto out;
			if (g->v[idx].flags & G_CLIENT_SHALLOW)
				start[n++] = idx;
		}
	} else {
		for (i = 0; i < a->wants.nr; i++) {
			struct pw_oid peeled;
			uint32_t idx;

			if ((rc = pw_srv_peel(s, &a->wants.v[i], &peeled)) < 0)
				goto out;
			if ((rc = pw_graph_lookup(g, &peeled, &idx)))
				goto out;
			rc = pw_graph_parse(g, idx);
			if (rc == PW_ENOTFOUND)
				continue;
			if (rc)
				goto out;
			start[n++] = idx;
		}
	}
	if (depth >= INFINITE_DEPTH && !s->srv_shallow.nr) {
		/* --unshallow: the whole history, every client boundary goes away */
		for (i = 0; i < a->shallows.nr; i++) {
			uint32_t idx;

			if ((rc = pw_graph_lookup(g, &a->shallows.v[i], &idx)))
				goto out;
			if (g->v[idx].flags & G_CLIENT_SHALLOW)
				g->v[idx].flags |= G_NOT_SHALLOW;
		}
	} else if (depth) {
		uint64_t d = (uint64_t)depth + (a->deepen_relative ? 1 : 0);

		rc = by_depth(s, start, n, d > INFINITE_DEPTH ? INFINITE_DEPTH : (uint32_t)d);
	} else {
		rc = by_rev_list(s, start, n);
	}
	if (rc)
		goto out;

	if ((rc = record_boundary(s)))
		goto out;
cuts:
	/* the client's remaining boundary also stops what we send */
	for (i = 0; i < a->shallows.nr; i++) {
		uint32_t idx;

		if ((rc = pw_graph_lookup(g, &a->shallows.v[i], &idx)))
			goto out;
		if (g->v[idx].flags & G_CLIENT_SHALLOW)
			g->v[idx].flags |= G_CUT_SEND;
	}
	rc = deepen || srv_full;
out:
	free(start);
	return rc;
}
