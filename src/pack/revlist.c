/* The object walk. Commits are walked newest first with a priority queue;
 * excluded commits spread their mark to their ancestors, and the walk stops
 * once only excluded commits remain queued (plus a few extra steps against
 * clock skew), as Git's limited walk does. With objects, the trees of the
 * boundary (excluded parents of listed commits) are marked excluded
 * recursively before the listed commits' trees are traversed. */
#include <stdlib.h>
#include <string.h>

#include "hash/oidmap.h"
#include "odb/commit-queue.h"
#include "packwire/object.h"
#include "packwire/revlist.h"

/* Extra queue pops after only excluded commits remain (Git uses 5 too). */
#define SLOP 5
/* Trees kept for skipping unchanged entries: one per path, this many paths
 * at most (a collision loses a tree, never a correct answer). */
#define PREV_SLOTS 1024
/* Deepest tree nesting we follow; deeper is treated as corrupt. */
#define MAX_TREE_DEPTH 4096

enum {
	C_PARSED = 1,
	C_QUEUED = 2,
	C_UNINT = 4,
	C_LISTED = 8,
};

enum {
	O_SEEN = 1,
	O_UNINT = 2,
};

struct rl_commit {
	struct pw_oid oid, tree;
	int64_t date;
	uint32_t *parents;
	uint32_t nparents;
	uint32_t flags;
};

struct rl_pending {
	struct pw_oid oid;
	int type;
	char *name;
};

struct pw_revlist {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	unsigned flags;
	struct pw_error err;
	struct pw_oidmap commit_map; /* oid -> index + 1 */
	struct rl_commit *commits;
	size_t nr_commits, alloc_commits;
	struct pw_oidmap obj_map; /* trees, blobs, tags -> O_* flags */
	struct pw_commit_queue queue;
	uint32_t *listed; /* commits in the order popped as included */
	size_t nr_listed, alloc_listed, nr_result;
	struct rl_pending *pending;
	size_t nr_pending, alloc_pending;
	struct pw_buf data, path;
	/* one per tree depth, reused; each one allocated on its own, since a
	 * walk one level down may grow the array under a caller's pointer */
	struct pw_buf **tree_bufs;
	size_t nr_tree_bufs;
	/* the last tree walked at each path (hashed), to skip the lookups of
	 * unchanged entries (see changed_entries) */
	struct pw_buf *prev_trees; /* per slot: the tree, its end offsets */
	uint64_t *prev_keys;
	struct pw_buf no_prev[2];
	uint32_t *stack; /* for spreading the excluded mark */
	size_t stack_alloc;
	int ran;
};

static int grow(void **arr, size_t *alloc, size_t need, size_t elem)
{
	size_t n;
	void *p;

	if (need <= *alloc)
		return 0;
	n = *alloc ? *alloc * 2 : 64;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * elem);
	if (!p)
		return PW_ENOMEM;
	*arr = p;
	*alloc = n;
	return 0;
}

int pw_revlist_new(struct pw_revlist **out, struct pw_odb *odb, unsigned flags)
{
	struct pw_revlist *rl = calloc(1, sizeof(*rl));

	*out = NULL;
	if (!rl)
		return PW_ENOMEM;
	rl->odb = odb;
	rl->algo = pw_odb_algo(odb);
	rl->flags = flags;
	if (flags & PW_REVLIST_EDGES)
		rl->flags |= PW_REVLIST_OBJECTS;
	pw_buf_init(&rl->data, 0);
	pw_buf_init(&rl->path, 0);
	pw_buf_init(&rl->no_prev[0], 0);
	pw_buf_init(&rl->no_prev[1], 0);
	*out = rl;
	return 0;
}

void pw_revlist_free(struct pw_revlist *rl)
{
	size_t i;

	if (!rl)
		return;
	for (i = 0; i < rl->nr_commits; i++)
		free(rl->commits[i].parents);
	free(rl->commits);
	pw_oidmap_free(&rl->commit_map);
	pw_oidmap_free(&rl->obj_map);
	pw_commit_queue_free(&rl->queue);
	free(rl->listed);
	for (i = 0; i < rl->nr_pending; i++)
		free(rl->pending[i].name);
	free(rl->pending);
	pw_buf_free(&rl->data);
	pw_buf_free(&rl->path);
	for (i = 0; i < rl->nr_tree_bufs; i++)
		if (rl->tree_bufs[i]) {
			pw_buf_free(rl->tree_bufs[i]);
			free(rl->tree_bufs[i]);
		}
	free(rl->tree_bufs);
	free(rl->stack);
	if (rl->prev_trees)
		for (i = 0; i < 2 * PREV_SLOTS; i++)
			pw_buf_free(&rl->prev_trees[i]);
	free(rl->prev_trees);
	free(rl->prev_keys);
	pw_buf_free(&rl->no_prev[0]);
	pw_buf_free(&rl->no_prev[1]);
	free(rl);
}

const struct pw_error *pw_revlist_error(const struct pw_revlist *rl)
{
	return &rl->err;
}

size_t pw_revlist_commit_count(const struct pw_revlist *rl)
{
	return rl->nr_result;
}

int pw_revlist_commit_info(const struct pw_revlist *rl, const struct pw_oid *oid,
                           struct pw_commit_info *out)
{
	struct pw_oidmap_entry *e = pw_oidmap_get(&rl->commit_map, oid);
	const struct rl_commit *c;
	uint32_t i;

	memset(out, 0, sizeof(*out));
	if (!e)
		return 0;
	c = &rl->commits[(uintptr_t)e->value - 1];
	if (!(c->flags & C_PARSED))
		return 0;
	if (c->nparents && !(out->parents = malloc(c->nparents * sizeof(*out->parents))))
		return PW_ENOMEM;
	for (i = 0; i < c->nparents; i++)
		out->parents[i] = rl->commits[c->parents[i]].oid;
	out->nr_parents = c->nparents;
	out->tree = c->tree;
	out->commit_time = c->date;
	return 1;
}

int pw_revlist_reserve(struct pw_revlist *rl, size_t n)
{
	return pw_oidmap_reserve(&rl->obj_map, n);
}

static int nomem(struct pw_revlist *rl)
{
	return pw_error_set(&rl->err, PW_ENOMEM, "rev-list: out of memory");
}

static int lookup_commit(struct pw_revlist *rl, const struct pw_oid *oid, uint32_t *idx)
{
	int created;
	struct pw_oidmap_entry *e = pw_oidmap_put(&rl->commit_map, oid, &created);
	struct rl_commit *c;

	if (!e)
		return nomem(rl);
	if (!created) {
		*idx = (uint32_t)((uintptr_t)e->value - 1);
		return 0;
	}
	if (grow((void **)&rl->commits, &rl->alloc_commits, rl->nr_commits + 1,
	         sizeof(*rl->commits)))
		return nomem(rl);
	*idx = (uint32_t)rl->nr_commits;
	e->value = (void *)(uintptr_t)(rl->nr_commits + 1);
	c = &rl->commits[rl->nr_commits++];
	memset(c, 0, sizeof(*c));
	c->oid = *oid;
	return 0;
}

static uint32_t obj_flags(struct pw_revlist *rl, const struct pw_oid *oid)
{
	struct pw_oidmap_entry *e = pw_oidmap_get(&rl->obj_map, oid);

	return e ? (uint32_t)(uintptr_t)e->value : 0;
}

/* One probe for "seen already? else mark": 1 when any of `test` was set (and
 * nothing changes), 0 after setting `set`, or PW_ENOMEM. */
static int test_and_set(struct pw_revlist *rl, const struct pw_oid *oid, uint32_t test,
                        uint32_t set)
{
	int created;
	struct pw_oidmap_entry *e = pw_oidmap_put(&rl->obj_map, oid, &created);
	uint32_t v;

	if (!e)
		return nomem(rl);
	v = (uint32_t)(uintptr_t)e->value;
	if (v & test)
		return 1;
	e->value = (void *)(uintptr_t)(v | set);
	return 0;
}

static int obj_set(struct pw_revlist *rl, const struct pw_oid *oid, uint32_t flags)
{
	int created;
	struct pw_oidmap_entry *e = pw_oidmap_put(&rl->obj_map, oid, &created);

	if (!e)
		return nomem(rl);
	e->value = (void *)(uintptr_t)((uintptr_t)e->value | flags);
	return 0;
}

/* Read an object that must be of `want` type. */
static int read_typed(struct pw_revlist *rl, const struct pw_oid *oid, int want, struct pw_buf *buf,
                      const char *path)
{
	char hex[PW_MAX_HEXSZ + 1];
	int type, rc = pw_odb_read(rl->odb, oid, &type, buf);

	if (rc == PW_ENOTFOUND)
		return pw_error_set(&rl->err, rc, "missing %s %s%s%s", pw_object_type_name(want),
		                    pw_oid_to_hex(oid, hex), path && *path ? " at " : "",
		                    path ? path : "");
	if (rc)
		return pw_error_copy(&rl->err, pw_odb_error(rl->odb));
	if (type != want)
		return pw_error_set(&rl->err, PW_ECORRUPT, "object %s is a %s, not a %s",
		                    pw_oid_to_hex(oid, hex), pw_object_type_name(type),
		                    pw_object_type_name(want));
	return 0;
}

static int parse_commit(struct pw_revlist *rl, uint32_t idx)
{
	struct pw_commit_info info;
	struct pw_oid oid = rl->commits[idx].oid;
	uint32_t *parents = NULL;
	size_t i;
	int rc;

	if (rl->commits[idx].flags & C_PARSED)
		return 0;
	rc = read_typed(rl, &oid, PW_OBJ_COMMIT, &rl->data, NULL);
	if (rc)
		return rc;
	rc = pw_commit_parse(&info, rl->data.data, rl->data.len, rl->algo, &rl->err);
	if (rc)
		return rc;
	if (info.nr_parents) {
		parents = malloc(info.nr_parents * sizeof(*parents));
		if (!parents) {
			pw_commit_info_free(&info);
			return nomem(rl);
		}
	}
	for (i = 0; i < info.nr_parents; i++) {
		rc = lookup_commit(rl, &info.parents[i], &parents[i]);
		if (rc) {
			free(parents);
			pw_commit_info_free(&info);
			return rc;
		}
	}
	/* lookup_commit may have moved the array */
	rl->commits[idx].tree = info.tree;
	rl->commits[idx].date = info.commit_time;
	rl->commits[idx].parents = parents;
	rl->commits[idx].nparents = (uint32_t)info.nr_parents;
	rl->commits[idx].flags |= C_PARSED;
	pw_commit_info_free(&info);
	return 0;
}

/* ---- the queue: newest commit first (odb/commit-queue.h) ----------------- */

static int queue_commit(struct pw_revlist *rl, uint32_t idx)
{
	if (rl->commits[idx].flags & C_QUEUED)
		return 0;
	/* The date orders the queue, so parse now, as Git does when it queues a
	 * parent. A commit that does not parse is queued anyway: popping it
	 * parses it again and reports the error where the walk always did. */
	if (!(rl->commits[idx].flags & C_PARSED) && parse_commit(rl, idx))
		pw_error_clear(&rl->err);
	if (pw_commit_queue_push(&rl->queue, idx, rl->commits[idx].date))
		return nomem(rl);
	rl->commits[idx].flags |= C_QUEUED;
	return 0;
}

/* Mark a commit excluded and spread the mark to the ancestors already parsed
 * (the unparsed ones receive it when they are popped). */
static int mark_uninteresting(struct pw_revlist *rl, uint32_t idx)
{
	size_t sp = 0;

	if (rl->commits[idx].flags & C_UNINT)
		return 0;
	rl->commits[idx].flags |= C_UNINT;
	if (grow((void **)&rl->stack, &rl->stack_alloc, 1, sizeof(*rl->stack)))
		return nomem(rl);
	rl->stack[sp++] = idx;
	while (sp) {
		struct rl_commit *c = &rl->commits[rl->stack[--sp]];
		uint32_t i;

		if (!(c->flags & C_PARSED))
			continue;
		for (i = 0; i < c->nparents; i++) {
			uint32_t p = c->parents[i];

			if (rl->commits[p].flags & C_UNINT)
				continue;
			rl->commits[p].flags |= C_UNINT;
			if (grow((void **)&rl->stack, &rl->stack_alloc, sp + 1, sizeof(*rl->stack)))
				return nomem(rl);
			rl->stack[sp++] = p; /* c stays valid: only the stack moved */
		}
	}
	return 0;
}

static int everybody_uninteresting(const struct pw_revlist *rl)
{
	size_t i;

	for (i = 0; i < rl->queue.nr; i++)
		if (!(rl->commits[rl->queue.v[i].item].flags & C_UNINT))
			return 0;
	return 1;
}

/* ---- tips --------------------------------------------------------------- */

static int add_pending(struct pw_revlist *rl, const struct pw_oid *oid, int type, const char *name,
                       size_t name_len)
{
	struct rl_pending *p;

	if (grow((void **)&rl->pending, &rl->alloc_pending, rl->nr_pending + 1,
	         sizeof(*rl->pending)))
		return nomem(rl);
	p = &rl->pending[rl->nr_pending];
	p->name = malloc(name_len + 1);
	if (!p->name)
		return nomem(rl);
	memcpy(p->name, name, name_len);
	p->name[name_len] = '\0';
	p->oid = *oid;
	p->type = type;
	rl->nr_pending++;
	return 0;
}

static int mark_tree_uninteresting(struct pw_revlist *rl, const struct pw_oid *tree, size_t depth,
                                   pw_revlist_fn fn, void *data);

int pw_revlist_add(struct pw_revlist *rl, const struct pw_oid *oid_in, const char *name,
                   int exclude)
{
	struct pw_oid oid = *oid_in;
	char hex[PW_MAX_HEXSZ + 1];
	uint64_t size;
	int type, rc, hops = 0;

	if (!name)
		name = "";
	for (;;) {
		rc = pw_odb_read_header(rl->odb, &oid, &type, &size);
		if (rc == PW_ENOTFOUND)
			return pw_error_set(&rl->err, rc, "bad object %s",
			                    pw_oid_to_hex(&oid, hex));
		if (rc)
			return pw_error_copy(&rl->err, pw_odb_error(rl->odb));
		if (type != PW_OBJ_TAG)
			break;
		{
			struct pw_tag_info tag;

			if (++hops > 100)
				return pw_error_set(&rl->err, PW_ECORRUPT,
				                    "tag %s: chain of tags too long",
				                    pw_oid_to_hex(oid_in, hex));
			rc = read_typed(rl, &oid, PW_OBJ_TAG, &rl->data, NULL);
			if (rc)
				return rc;
			rc = pw_tag_parse(&tag, rl->data.data, rl->data.len, rl->algo, &rl->err);
			if (rc)
				return rc;
			if (exclude) {
				rc = obj_set(rl, &oid, O_UNINT);
			} else if (!(obj_flags(rl, &oid) & O_SEEN)) {
				rc = obj_set(rl, &oid, O_SEEN);
				if (!rc)
					rc = add_pending(rl, &oid, PW_OBJ_TAG, tag.name,
					                 tag.name_len);
			}
			if (rc)
				return rc;
			oid = tag.object;
		}
	}
	if (type == PW_OBJ_COMMIT) {
		uint32_t idx;

		rc = lookup_commit(rl, &oid, &idx);
		if (!rc && exclude)
			rc = mark_uninteresting(rl, idx);
		if (!rc)
			rc = queue_commit(rl, idx);
		return rc;
	}
	if (!(rl->flags & PW_REVLIST_OBJECTS))
		return 0;
	if (exclude) {
		if (type == PW_OBJ_TREE)
			return mark_tree_uninteresting(rl, &oid, 0, NULL, NULL);
		return obj_set(rl, &oid, O_UNINT);
	}
	return add_pending(rl, &oid, type, name, strlen(name));
}

/* ---- trees ---------------------------------------------------------------- */

static struct pw_buf *tree_buf(struct pw_revlist *rl, size_t depth)
{
	if (depth >= rl->nr_tree_bufs) {
		size_t n = rl->nr_tree_bufs ? rl->nr_tree_bufs * 2 : 16, i;
		struct pw_buf **p;

		while (n <= depth)
			n *= 2;
		p = realloc(rl->tree_bufs, n * sizeof(*p));
		if (!p)
			return NULL;
		for (i = rl->nr_tree_bufs; i < n; i++)
			p[i] = NULL;
		rl->tree_bufs = p;
		rl->nr_tree_bufs = n;
	}
	if (!rl->tree_bufs[depth]) {
		if (!(rl->tree_bufs[depth] = malloc(sizeof(struct pw_buf))))
			return NULL;
		pw_buf_init(rl->tree_bufs[depth], 0);
	}
	return rl->tree_bufs[depth];
}

static int is_gitlink(unsigned mode)
{
	return (mode & 0170000) == 0160000;
}

static int is_dir(unsigned mode)
{
	return (mode & 0170000) == 0040000;
}

static int report(pw_revlist_fn fn, void *data, const struct pw_oid *oid, int type,
                  const struct pw_buf *path, int excluded)
{
	struct pw_revlist_obj o;

	o.oid = *oid;
	o.type = type;
	o.path = path ? path->data : NULL;
	o.path_len = path ? path->len : 0;
	o.excluded = excluded;
	return fn(&o, data);
}

/* Append "/name" (or "name" at the root) to the path; returns the old length. */
static int path_push(struct pw_revlist *rl, const char *name, size_t len, size_t *old)
{
	*old = rl->path.len;
	if (rl->path.len && pw_buf_addch(&rl->path, '/'))
		return nomem(rl);
	if (pw_buf_add(&rl->path, name, len))
		return nomem(rl);
	return 0;
}

/* Exclude a boundary tree and everything below it. Missing trees are skipped:
 * the excluded side may be incomplete (shallow), as Git tolerates. With fn,
 * each newly excluded object is reported (thin-pack bases). */
static int mark_tree_uninteresting(struct pw_revlist *rl, const struct pw_oid *tree, size_t depth,
                                   pw_revlist_fn fn, void *data)
{
	struct pw_buf *buf;
	struct pw_tree_entry e;
	size_t pos = 0, old;
	int type, rc;

	rc = test_and_set(rl, tree, O_UNINT, O_UNINT);
	if (rc)
		return rc < 0 ? rc : 0;
	if (depth > MAX_TREE_DEPTH)
		return pw_error_set(&rl->err, PW_ECORRUPT, "trees nested too deeply at %s",
		                    rl->path.data);
	buf = tree_buf(rl, 4 * depth + 2);
	if (!buf)
		return nomem(rl);
	rc = pw_odb_read(rl->odb, tree, &type, buf);
	if (rc == PW_ENOTFOUND)
		return 0;
	if (rc)
		return pw_error_copy(&rl->err, pw_odb_error(rl->odb));
	if (type != PW_OBJ_TREE)
		return 0;
	if (fn && (rc = report(fn, data, tree, PW_OBJ_TREE, &rl->path, 1)))
		return rc;
	while ((rc = pw_tree_next(buf->data, buf->len, &pos, rl->algo, &e, &rl->err)) == 1) {
		if (is_gitlink(e.mode))
			continue;
		if (is_dir(e.mode)) {
			if ((rc = path_push(rl, e.name, e.name_len, &old)))
				return rc;
			rc = mark_tree_uninteresting(rl, &e.oid, depth + 1, fn, data);
			pw_buf_setlen(&rl->path, old);
			if (rc)
				return rc;
			/* the child's read replaced nothing of ours: buffers are per depth */
			continue;
		}
		rc = test_and_set(rl, &e.oid, O_UNINT, O_UNINT);
		if (rc < 0)
			return rc;
		if (rc)
			continue;
		if (fn) {
			if ((rc = path_push(rl, e.name, e.name_len, &old)))
				return rc;
			rc = report(fn, data, &e.oid, PW_OBJ_BLOB, &rl->path, 1);
			pw_buf_setlen(&rl->path, old);
			if (rc)
				return rc;
		}
	}
	return rc < 0 ? rc : 0;
}

/* The tree walked last at the path being walked (rl->path), kept in one of
 * PREV_SLOTS slots chosen by a hash of the path; another path's tree in the
 * slot (a collision) is no match. rl->no_prev when there is none. */
static int last_walked(struct pw_revlist *rl, struct pw_buf **prev, uint64_t *key)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	size_t i;

	for (i = 0; i < rl->path.len; i++)
		h = (h ^ (uint8_t)rl->path.data[i]) * 0x100000001b3u;
	h |= 1; /* 0 marks an empty slot */
	*key = h;
	*prev = &rl->no_prev[0];
	if (!rl->prev_trees) {
		rl->prev_trees = calloc(2 * PREV_SLOTS, sizeof(*rl->prev_trees));
		rl->prev_keys = calloc(PREV_SLOTS, sizeof(*rl->prev_keys));
		if (!rl->prev_trees || !rl->prev_keys)
			return nomem(rl);
		for (i = 0; i < 2 * PREV_SLOTS; i++)
			pw_buf_init(&rl->prev_trees[i], 0);
	}
	if (rl->prev_keys[h % PREV_SLOTS] == h)
		*prev = &rl->prev_trees[2 * (h % PREV_SLOTS)];
	return 0;
}

/* How many bytes a and b have in common from their start: whole blocks
 * through memcmp (vectorised in the C library; unchanged runs of a tree
 * are long), then eight bytes at a time within the block that differs. */
static size_t common_len(const char *a, const char *b, size_t n)
{
	size_t i = 0;
	uint64_t x, y;

	while (i + 256 <= n && !memcmp(a + i, b + i, 256))
		i += 256;
	while (i + 8 <= n) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
		i += 8;
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

/* The end offsets of a tree's entries (uint32 each) in a pw_buf. */
static size_t nbounds(const struct pw_buf *b)
{
	return b->len / sizeof(uint32_t);
}

static uint32_t bound(const struct pw_buf *b, size_t i)
{
	uint32_t v;

	memcpy(&v, b->data + i * sizeof(v), sizeof(v));
	return v;
}

static int add_bound(struct pw_revlist *rl, struct pw_buf *b, size_t v)
{
	uint32_t x = (uint32_t)v;

	return pw_buf_add(b, &x, sizeof(x)) ? nomem(rl) : 0;
}

/* After a changed entry named name: move the cursor *qi of prev (entry
 * index; pb its end offsets) past the entries sorted before that name and
 * past the one of that name. Both trees are sorted by name. */
static void resync(const struct pw_buf *prev, const struct pw_buf *pb, size_t *qi, const char *name,
                   size_t name_len)
{
	size_t j = *qi, n = nbounds(pb);

	while (j < n) {
		size_t s = j ? bound(pb, j - 1) : 0, e = bound(pb, j), qlen;
		const char *sp, *qname, *nul;
		int c;

		if (e > prev->len || s >= e || !(sp = memchr(prev->data + s, ' ', e - s)) ||
		    !(nul = memchr(sp, '\0', (size_t)(prev->data + e - sp))))
			break;
		qname = sp + 1;
		qlen = (size_t)(nul - qname);
		c = memcmp(qname, name, qlen < name_len ? qlen : name_len);
		if (c > 0 || (c == 0 && qlen > name_len))
			break; /* prev has no entry of this name */
		j++;
		if (c == 0 && qlen == name_len)
			break; /* same name, another id or mode */
	}
	*qi = j;
}

/* An entry of a tree that differs from the tree walked last at its path. */
struct changed {
	struct pw_oid oid;
	unsigned mode;
	uint32_t name_off, name_len; /* into the tree */
};

/* The entries of buf that prev (pb: its end offsets) does not have, into
 * list; buf's end offsets into bounds. Unchanged entries since prev: the
 * bytes at both cursors agree up to some point; every entry of prev that
 * ends before it is an entry of this tree too (parsing is the same from the
 * same bytes), already marked since prev was walked to its end. */
static int changed_entries(struct pw_revlist *rl, const struct pw_buf *buf, struct pw_buf *prev,
                           const struct pw_buf *pb, struct pw_buf *bounds, struct pw_buf *list)
{
	struct pw_tree_entry e;
	size_t pos = 0, qi = 0;
	int rc;

	pw_buf_reset(bounds);
	pw_buf_reset(list);
	for (;;) {
		if (prev != &rl->no_prev[0] && qi < nbounds(pb)) {
			size_t q = qi ? bound(pb, qi - 1) : 0, m, lo = qi, hi = nbounds(pb);

			m = q <= prev->len
			            ? common_len(buf->data + pos, prev->data + q,
			                         buf->len - pos < prev->len - q ? buf->len - pos
			                                                        : prev->len - q)
			            : 0;
			while (lo < hi) { /* the entries of prev ending within m */
				size_t mid = lo + (hi - lo) / 2;

				if (bound(pb, mid) <= q + m)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo > qi) {
				size_t at = bounds->len;

				if (pw_buf_grow(bounds, (lo - qi) * sizeof(uint32_t)))
					return nomem(rl);
				for (; qi < lo; qi++, at += sizeof(uint32_t)) {
					uint32_t v = (uint32_t)(bound(pb, qi) - q + pos);

					memcpy(bounds->data + at, &v, sizeof(v));
				}
				pw_buf_setlen(bounds, at);
				pos += bound(pb, qi - 1) - q;
				continue;
			}
		}
		if ((rc = pw_tree_next(buf->data, buf->len, &pos, rl->algo, &e, &rl->err)) != 1)
			return rc;
		if ((rc = add_bound(rl, bounds, pos)))
			return rc;
		if (prev != &rl->no_prev[0])
			resync(prev, pb, &qi, e.name, e.name_len);
		if (!is_gitlink(e.mode)) {
			struct changed c;

			c.oid = e.oid;
			c.mode = e.mode;
			c.name_off = (uint32_t)(e.name - buf->data);
			c.name_len = (uint32_t)e.name_len;
			if (pw_buf_add(list, &c, sizeof(c)))
				return nomem(rl);
		}
	}
}

static int process_tree(struct pw_revlist *rl, const struct pw_oid *tree, size_t depth,
                        pw_revlist_fn fn, void *data)
{
	struct pw_buf *buf, *bounds, *list, *prev, tmp;
	const struct changed *c;
	size_t i, n, old;
	uint64_t key;
	char hex[PW_MAX_HEXSZ + 1];
	int rc;

	rc = test_and_set(rl, tree, O_SEEN | O_UNINT, O_SEEN);
	if (rc)
		return rc < 0 ? rc : 0;
	if (depth > MAX_TREE_DEPTH)
		return pw_error_set(&rl->err, PW_ECORRUPT, "trees nested too deeply at %s",
		                    rl->path.data);
	/* per depth: the tree, its entries' end offsets (to be kept for the
	 * next tree at this path), a slot for mark_tree_uninteresting, the
	 * changed entries */
	buf = tree_buf(rl, 4 * depth);
	bounds = tree_buf(rl, 4 * depth + 1);
	list = tree_buf(rl, 4 * depth + 3);
	if (!buf || !bounds || !list)
		return nomem(rl);
	if ((rc = last_walked(rl, &prev, &key)))
		return rc;
	if ((rc = read_typed(rl, tree, PW_OBJ_TREE, buf, rl->path.data)))
		return rc;
	if ((rc = report(fn, data, tree, PW_OBJ_TREE, &rl->path, 0)))
		return rc;
	/* all of the comparing first, while prev is ours (a walk below may put
	 * another path's tree in its slot) */
	if ((rc = changed_entries(rl, buf, prev, prev + 1, bounds, list)) < 0)
		return rc;
	/* then the lookups, whose table slots are cache misses: asked for all
	 * at once, they arrive together */
	c = (const struct changed *)list->data;
	n = list->len / sizeof(*c);
	for (i = 0; i < n; i++)
		pw_oidmap_prefetch(&rl->obj_map, &c[i].oid);
	for (i = 0; i < n; i++) {
		if (!is_dir(c[i].mode)) {
			rc = test_and_set(rl, &c[i].oid, O_SEEN | O_UNINT, O_SEEN);
			if (rc < 0)
				return rc;
			if (rc)
				continue;
		}
		if ((rc = path_push(rl, buf->data + c[i].name_off, c[i].name_len, &old)))
			return rc;
		if (is_dir(c[i].mode)) {
			rc = process_tree(rl, &c[i].oid, depth + 1, fn, data);
		} else {
			if (!pw_odb_exists(rl->odb, &c[i].oid))
				rc = pw_error_set(&rl->err, PW_ENOTFOUND, "missing blob %s at %s",
				                  pw_oid_to_hex(&c[i].oid, hex), rl->path.data);
			if (!rc)
				rc = report(fn, data, &c[i].oid, PW_OBJ_BLOB, &rl->path, 0);
		}
		pw_buf_setlen(&rl->path, old);
		if (rc)
			return rc;
	}
	/* walked to its end: the next tree at this path compares with it */
	if (rl->prev_trees) {
		prev = &rl->prev_trees[2 * (key % PREV_SLOTS)];
		tmp = *prev;
		*prev = *buf;
		*buf = tmp;
		tmp = prev[1];
		prev[1] = *bounds;
		*bounds = tmp;
		rl->prev_keys[key % PREV_SLOTS] = key;
	}
	return 0;
}

/* ---- the walk ------------------------------------------------------------- */

static int walk_commits(struct pw_revlist *rl)
{
	int slop = SLOP, rc;

	while (rl->queue.nr) {
		uint32_t idx = (uint32_t)pw_commit_queue_pop(&rl->queue, NULL), i;
		struct rl_commit *c;

		if ((rc = parse_commit(rl, idx)))
			return rc;
		c = &rl->commits[idx]; /* queue_commit may move the array: c is stale after */
		if (c->flags & C_UNINT) {
			for (i = 0; i < rl->commits[idx].nparents; i++) {
				uint32_t p = rl->commits[idx].parents[i];

				if ((rc = mark_uninteresting(rl, p)) || (rc = queue_commit(rl, p)))
					return rc;
			}
		} else {
			if (!(c->flags & C_LISTED)) {
				c->flags |= C_LISTED;
				if (grow((void **)&rl->listed, &rl->alloc_listed, rl->nr_listed + 1,
				         sizeof(*rl->listed)))
					return nomem(rl);
				rl->listed[rl->nr_listed++] = idx;
			}
			for (i = 0; i < rl->commits[idx].nparents; i++)
				if ((rc = queue_commit(rl, rl->commits[idx].parents[i])))
					return rc;
		}
		if (everybody_uninteresting(rl)) {
			if (--slop <= 0)
				break;
		} else {
			slop = SLOP;
		}
	}
	return 0;
}

/* What only the walk needs (the table of trees and blobs seen, the trees
 * kept for comparing), freed when it ends: what stays is the commits. */
static void free_walk_state(struct pw_revlist *rl)
{
	size_t i;

	pw_oidmap_free(&rl->obj_map);
	for (i = 0; i < rl->nr_tree_bufs; i++)
		if (rl->tree_bufs[i]) {
			pw_buf_free(rl->tree_bufs[i]);
			free(rl->tree_bufs[i]);
		}
	free(rl->tree_bufs);
	rl->tree_bufs = NULL;
	rl->nr_tree_bufs = 0;
	if (rl->prev_trees)
		for (i = 0; i < 2 * PREV_SLOTS; i++)
			pw_buf_free(&rl->prev_trees[i]);
	free(rl->prev_trees);
	free(rl->prev_keys);
	rl->prev_trees = NULL;
	rl->prev_keys = NULL;
	pw_buf_free(&rl->data);
}

static int run_walk(struct pw_revlist *rl, pw_revlist_fn fn, void *data);

int pw_revlist_run(struct pw_revlist *rl, pw_revlist_fn fn, void *data)
{
	int rc;

	if (rl->ran)
		return pw_error_set(&rl->err, PW_EINVAL, "rev-list: walk already ran");
	rl->ran = 1;
	rc = run_walk(rl, fn, data);
	free_walk_state(rl);
	return rc;
}

static int run_walk(struct pw_revlist *rl, pw_revlist_fn fn, void *data)
{
	size_t i, n = 0;
	int rc;

	if ((rc = walk_commits(rl)))
		return rc;
	/* Commits popped as included may have been excluded later (clock skew). */
	for (i = 0; i < rl->nr_listed; i++)
		if (!(rl->commits[rl->listed[i]].flags & C_UNINT))
			rl->listed[n++] = rl->listed[i];
	rl->nr_listed = rl->nr_result = n;

	if (rl->flags & PW_REVLIST_OBJECTS) {
		pw_revlist_fn edge_fn = rl->flags & PW_REVLIST_EDGES ? fn : NULL;

		for (i = 0; i < rl->nr_listed; i++) {
			uint32_t j, np = rl->commits[rl->listed[i]].nparents;

			for (j = 0; j < np; j++) {
				uint32_t p = rl->commits[rl->listed[i]].parents[j];

				if (!(rl->commits[p].flags & C_UNINT))
					continue;
				rc = parse_commit(rl, p);
				if (rc == PW_ENOTFOUND) /* shallow boundary */
					continue;
				if (rc)
					return rc;
				pw_buf_reset(&rl->path);
				rc = mark_tree_uninteresting(rl, &rl->commits[p].tree, 0, edge_fn,
				                             data);
				if (rc)
					return rc;
			}
		}
	}
	for (i = 0; i < rl->nr_listed; i++) {
		struct pw_oid oid = rl->commits[rl->listed[i]].oid;

		if ((rc = report(fn, data, &oid, PW_OBJ_COMMIT, NULL, 0)))
			return rc;
	}
	if (!(rl->flags & PW_REVLIST_OBJECTS))
		return 0;
	for (i = 0; i < rl->nr_pending; i++) {
		struct rl_pending *p = &rl->pending[i];
		char hex[PW_MAX_HEXSZ + 1];

		pw_buf_reset(&rl->path);
		if (pw_buf_adds(&rl->path, p->name))
			return nomem(rl);
		if (p->type == PW_OBJ_TREE) {
			rc = process_tree(rl, &p->oid, 0, fn, data);
		} else if (p->type == PW_OBJ_TAG) {
			rc = report(fn, data, &p->oid, PW_OBJ_TAG, &rl->path, 0);
		} else if (obj_flags(rl, &p->oid) & (O_SEEN | O_UNINT)) {
			rc = 0;
		} else {
			rc = obj_set(rl, &p->oid, O_SEEN);
			if (!rc && !pw_odb_exists(rl->odb, &p->oid))
				rc = pw_error_set(&rl->err, PW_ENOTFOUND, "missing blob %s",
				                  pw_oid_to_hex(&p->oid, hex));
			if (!rc)
				rc = report(fn, data, &p->oid, PW_OBJ_BLOB, &rl->path, 0);
		}
		if (rc)
			return rc;
	}
	for (i = 0; i < rl->nr_listed; i++) {
		struct pw_oid tree = rl->commits[rl->listed[i]].tree;

		pw_buf_reset(&rl->path);
		if ((rc = process_tree(rl, &tree, 0, fn, data)))
			return rc;
	}
	return 0;
}
