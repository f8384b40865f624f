/* Walking local history for the client: the commits offered as "have"
 * (newest first, from every ref), ancestry for fast-forward checks, and the
 * shallow file. Missing objects (shallow boundaries) end a line of history
 * quietly. */
#include <stdlib.h>
#include <string.h>

#include "client/client-priv.h"
#include "hash/oidmap.h"
#include "odb/commit-queue.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "util/fs.h"

struct node {
	struct pw_oid oid;
	int64_t time;
	struct node **parents;
	size_t nr_parents;
	unsigned seen : 1, popped : 1, common : 1, parsed : 1;
};

struct pw_have_walk {
	struct pw_odb *odb;
	struct pw_oidmap map;
	struct pw_commit_queue queue; /* of struct node * */
	struct pw_buf buf;
};

static struct node *get_node(struct pw_have_walk *w, const struct pw_oid *oid)
{
	struct pw_oidmap_entry *e;
	int created;

	e = pw_oidmap_put(&w->map, oid, &created);
	if (!e)
		return NULL;
	if (created) {
		struct node *n = calloc(1, sizeof(*n));

		if (!n)
			return NULL;
		n->oid = *oid;
		e->value = n;
	}
	return e->value;
}

/* Read a commit's date and parents; 0, or non-zero when it is not a
 * readable commit (then it is left out). */
static int parse_node(struct pw_have_walk *w, struct node *n)
{
	struct pw_commit_info ci;
	size_t i;
	int type;

	if (n->parsed)
		return 0;
	if (pw_odb_read(w->odb, &n->oid, &type, &w->buf) || type != PW_OBJ_COMMIT)
		return -1;
	if (pw_commit_parse(&ci, w->buf.data, w->buf.len, pw_odb_algo(w->odb), NULL))
		return -1;
	n->time = ci.commit_time;
	n->parents = calloc(ci.nr_parents + 1, sizeof(*n->parents));
	if (!n->parents) {
		pw_commit_info_free(&ci);
		return -1;
	}
	for (i = 0; i < ci.nr_parents; i++) {
		struct node *p = get_node(w, &ci.parents[i]);

		if (p)
			n->parents[n->nr_parents++] = p;
	}
	pw_commit_info_free(&ci);
	n->parsed = 1;
	return 0;
}

static int push(struct pw_have_walk *w, struct node *n)
{
	if (n->seen)
		return 0;
	n->seen = 1;
	if (parse_node(w, n))
		return 0;
	return pw_commit_queue_push(&w->queue, (uintptr_t)n, n->time);
}

static struct node *pop(struct pw_have_walk *w)
{
	return w->queue.nr ? (struct node *)pw_commit_queue_pop(&w->queue, NULL) : NULL;
}

/* Peel a tag chain to a commit; 0 or -1. */
static int peel_to_commit(struct pw_odb *odb, struct pw_oid *oid)
{
	int type;

	return pw_odb_peel(odb, oid, oid, &type, NULL) < 0 || type != PW_OBJ_COMMIT ? -1 : 0;
}

struct tip_ctx {
	struct pw_have_walk *w;
	int rc;
};

static int add_tip(const struct pw_ref *ref, void *data)
{
	struct tip_ctx *t = data;
	struct pw_oid oid = ref->oid;
	struct node *n;

	if (pw_oid_is_zero(&oid) || peel_to_commit(t->w->odb, &oid))
		return 0;
	n = get_node(t->w, &oid);
	if (!n || push(t->w, n))
		return t->rc = PW_ENOMEM;
	return 0;
}

int pw_have_walk_new(struct pw_have_walk **out, struct pw_odb *odb, struct pw_repo *repo,
                     struct pw_error *err)
{
	struct pw_have_walk *w = calloc(1, sizeof(*w));
	struct tip_ctx t;

	*out = NULL;
	if (!w)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	w->odb = odb;
	t.w = w;
	t.rc = 0;
	pw_refs_foreach(repo, NULL, PW_REFS_INCLUDE_HEAD, add_tip, &t);
	if (t.rc) {
		pw_have_walk_free(w);
		return pw_error_set(err, t.rc, "out of memory");
	}
	*out = w;
	return 0;
}

int pw_have_walk_new_tips(struct pw_have_walk **out, struct pw_odb *odb, const struct pw_oid *tips,
                          size_t nr, struct pw_error *err)
{
	struct pw_have_walk *w = calloc(1, sizeof(*w));
	size_t i;

	*out = NULL;
	if (!w)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	w->odb = odb;
	for (i = 0; i < nr; i++) {
		struct pw_oid oid = tips[i];
		struct node *n;

		if (pw_oid_is_zero(&oid) || peel_to_commit(odb, &oid))
			continue;
		/* a tip given twice is one node, already queued */
		if (pw_oidmap_get(&w->map, &oid))
			continue;
		if (!(n = get_node(w, &oid)) || push(w, n)) {
			pw_have_walk_free(w);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	}
	*out = w;
	return 0;
}

static void mark_common(struct node *n)
{
	size_t i;

	/* iterative enough for real history: recursion only through popped
	 * commits, whose parents are all known */
	if (n->common)
		return;
	n->common = 1;
	if (n->popped)
		for (i = 0; i < n->nr_parents; i++)
			mark_common(n->parents[i]);
}

void pw_have_walk_mark_common(struct pw_have_walk *w, const struct pw_oid *oid)
{
	struct pw_oidmap_entry *e = pw_oidmap_get(&w->map, oid);

	if (e && e->value)
		mark_common(e->value);
}

int pw_have_walk_next(struct pw_have_walk *w, struct pw_oid *out)
{
	struct node *n;

	while ((n = pop(w))) {
		size_t i;

		n->popped = 1;
		for (i = 0; i < n->nr_parents; i++) {
			if (n->common)
				mark_common(n->parents[i]);
			if (push(w, n->parents[i]))
				return 0;
		}
		if (n->common)
			continue;
		*out = n->oid;
		return 1;
	}
	return 0;
}

void pw_have_walk_free(struct pw_have_walk *w)
{
	size_t i;

	if (!w)
		return;
	for (i = 0; i < w->map.cap; i++)
		if (w->map.slots[i].used && w->map.slots[i].value) {
			struct node *n = w->map.slots[i].value;

			free(n->parents);
			free(n);
		}
	pw_oidmap_free(&w->map);
	pw_commit_queue_free(&w->queue);
	pw_buf_free(&w->buf);
	free(w);
}

int pw_commit_is_ancestor(struct pw_repo *repo, const struct pw_oid *anc, const struct pw_oid *desc,
                          struct pw_error *err)
{
	struct pw_odb *odb = NULL;
	int rc;

	if (pw_oid_equal(anc, desc))
		return 1;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err)))
		return rc;
	rc = pw_odb_is_ancestor(odb, anc, desc, err);
	pw_odb_free(odb);
	return rc;
}

static int cmp_oid(const void *a, const void *b)
{
	return pw_oid_cmp(a, b);
}

int pw_shallow_read(struct pw_repo *repo, struct pw_oid **out, size_t *nr, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	struct pw_buf data = PW_BUF_INIT;
	char *path = pw_path_join(pw_repo_git_dir(repo), "shallow");
	size_t n = 0, k, alloc = 0;
	struct pw_oid *v = NULL;
	const char *p, *end;
	int rc;

	*out = NULL;
	*nr = 0;
	if (!path)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	rc = pw_fs_read_file(path, &data, 0, err);
	free(path);
	if (rc == PW_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	p = data.data;
	end = p + data.len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (len) {
			if (n == alloc) {
				void *q;

				alloc = alloc ? alloc * 2 : 16;
				q = realloc(v, alloc * sizeof(*v));
				if (!q) {
					rc = pw_error_set(err, PW_ENOMEM, "out of memory");
					goto fail;
				}
				v = q;
			}
			if (pw_oid_from_hex(&v[n], p, len, algo)) {
				rc = pw_error_set(err, PW_ECORRUPT, "bad line in shallow file");
				goto fail;
			}
			n++;
		}
		p += len + 1;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_oid);
	for (k = 0, *nr = 0; k < n; k++)
		if (!*nr || !pw_oid_equal(&v[*nr - 1], &v[k]))
			v[(*nr)++] = v[k];
	*out = v;
	pw_buf_free(&data);
	return 0;
fail:
	free(v);
	pw_buf_free(&data);
	return rc;
}
