/* Translating objects from one algorithm to the other, each after
 * everything it references (an explicit stack, never recursion), so that
 * each look-up of a reference finds its id: the engine of `compat build`,
 * of the map's updates and of a push received in the other algorithm. */
#include <stdlib.h>
#include <string.h>

#include "compat/map-priv.h"
#include "compat/submodule.h"
#include "odb/odb-priv.h"
#include "packwire/object.h"
#include "packwire/odb.h"

struct frame {
	struct pw_oid oid;
	int expanded;
	int kept; /* its content is on the stack of kept contents */
};

struct pw_compat_xlate {
	struct pw_compat_xlate_opts o;
	struct pw_compat_pairs done;  /* from -> to of every object seen */
	struct pw_compat_pairs links; /* from -> to of gitlinks (opts.gitlink) */
	struct frame *stack;
	size_t sp, alloc_stack;
	struct pw_oid *deps;
	size_t nr_deps, alloc_deps;
	struct pw_buf content, conv;
	/* The contents of the expanded trees waiting for their entries: a
	 * stack too (a tree is expanded after, and finished before, the trees
	 * above it), so each tree is read once, not once more to convert it. */
	struct pw_buf *kept;
	size_t nr_kept, alloc_kept;
	uint64_t translated;
};

int pw_compat_xlate_new(struct pw_compat_xlate **out, const struct pw_compat_xlate_opts *opts)
{
	struct pw_compat_xlate *x;

	*out = NULL;
	if (!opts || !opts->from || !opts->to || opts->from->id == opts->to->id || !opts->odb ||
	    pw_odb_algo(opts->odb) != opts->from)
		return PW_EINVAL;
	if (!(x = calloc(1, sizeof(*x))))
		return PW_ENOMEM;
	x->o = *opts;
	if (!x->o.max_depth)
		x->o.max_depth = (size_t)1 << 22;
	pw_buf_init(&x->content, 0);
	pw_buf_init(&x->conv, 0);
	*out = x;
	return 0;
}

void pw_compat_xlate_free(struct pw_compat_xlate *x)
{
	if (!x)
		return;
	pw_compat_pairs_free(&x->done);
	pw_compat_pairs_free(&x->links);
	free(x->stack);
	free(x->deps);
	pw_buf_free(&x->content);
	pw_buf_free(&x->conv);
	for (size_t i = 0; i < x->alloc_kept; i++)
		pw_buf_free(&x->kept[i]);
	free(x->kept);
	free(x);
}

int pw_compat_xlate_reserve(struct pw_compat_xlate *x, size_t n)
{
	if (pw_oidmap_reserve(&x->done.by_storage, n) || pw_oidmap_reserve(&x->done.by_compat, n))
		return PW_ENOMEM;
	return 0;
}

uint64_t pw_compat_xlate_count(const struct pw_compat_xlate *x)
{
	return x->translated;
}

size_t pw_compat_xlate_known_count(const struct pw_compat_xlate *x)
{
	return x->done.nr;
}

int pw_compat_xlate_lookup(struct pw_compat_xlate *x, const struct pw_oid *from, struct pw_oid *to)
{
	const struct pw_compat_pair *p = pw_compat_pairs_by_storage(&x->done, from);
	struct pw_oid tmp;
	int rc;

	if (!p && x->links.nr)
		p = pw_compat_pairs_by_storage(&x->links, from);
	if (p) {
		if (to)
			*to = p->compat;
		return 0;
	}
	if (!x->o.known)
		return PW_ENOTFOUND;
	rc = x->o.known(x->o.known_data, from, &tmp);
	if (rc)
		return rc;
	if (pw_compat_pairs_add(&x->done, from, &tmp))
		return PW_ENOMEM;
	if (to)
		*to = tmp;
	return 0;
}

int pw_compat_xlate_reverse(struct pw_compat_xlate *x, const struct pw_oid *to, struct pw_oid *from)
{
	const struct pw_compat_pair *p = pw_compat_pairs_by_compat(&x->done, to);

	if (!p)
		return PW_ENOTFOUND;
	*from = p->storage;
	return 0;
}

static int lookup_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return pw_compat_xlate_lookup(data, from, out);
}

static int dep_cb(void *data, const struct pw_oid *oid)
{
	struct pw_compat_xlate *x = data;
	int rc = pw_compat_xlate_lookup(x, oid, NULL);

	if (rc != PW_ENOTFOUND)
		return rc;
	if (x->nr_deps == x->alloc_deps) {
		size_t n = x->alloc_deps ? x->alloc_deps * 2 : 64;
		struct pw_oid *nd = realloc(x->deps, n * sizeof(*nd));

		if (!nd)
			return PW_ENOMEM;
		x->deps = nd;
		x->alloc_deps = n;
	}
	x->deps[x->nr_deps++] = *oid;
	return 0;
}

static int push(struct pw_compat_xlate *x, const struct pw_oid *oid)
{
	if (x->sp == x->alloc_stack) {
		size_t n = x->alloc_stack ? x->alloc_stack * 2 : 256;
		struct frame *ns = realloc(x->stack, n * sizeof(*ns));

		if (!ns)
			return PW_ENOMEM;
		x->stack = ns;
		x->alloc_stack = n;
	}
	x->stack[x->sp].oid = *oid;
	x->stack[x->sp].expanded = 0;
	x->stack[x->sp].kept = 0;
	x->sp++;
	return 0;
}

static int record(struct pw_compat_xlate *x, const struct pw_oid *from, int type, const void *data,
                  size_t len, struct pw_error *err)
{
	struct pw_oid to;
	int rc;

	if (pw_object_hash(x->o.to, type, data, len, &to))
		return pw_hash_collision_error(err, &to);
	if (pw_compat_pairs_add(&x->done, from, &to))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	x->translated++;
	if (x->o.emit && (rc = x->o.emit(x->o.emit_data, from, &to, type, data, len, err)))
		return rc;
	return 0;
}

/* Move the content just read onto the stack of kept contents (the
 * buffers are swapped: nothing is copied). */
static int keep_content(struct pw_compat_xlate *x)
{
	struct pw_buf t;

	if (x->nr_kept == x->alloc_kept) {
		size_t n = x->alloc_kept ? 2 * x->alloc_kept : 16;
		struct pw_buf *nk = realloc(x->kept, n * sizeof(*nk));

		if (!nk)
			return PW_ENOMEM;
		for (size_t i = x->alloc_kept; i < n; i++)
			pw_buf_init(&nk[i], 0);
		x->kept = nk;
		x->alloc_kept = n;
	}
	t = x->kept[x->nr_kept];
	x->kept[x->nr_kept++] = x->content;
	x->content = t;
	return 0;
}

/* The top kept content back into x->content (discarded when !use). */
static void unkeep_content(struct pw_compat_xlate *x, int use)
{
	struct pw_buf t;

	x->nr_kept--;
	if (!use)
		return;
	t = x->content;
	x->content = x->kept[x->nr_kept];
	x->kept[x->nr_kept] = t;
}

/* ---- gitlinks through the submodule's map (opts.gitlink) ---------------- */

/* Where the tree at the top of the stack (its content in x->content) sits:
 * path gets the names of the trees it is in ("a/b/"): its ancestors are
 * the expanded trees below it, their contents on the stack of kept
 * contents, down to the commit (or tag) being translated. *root (optional)
 * gets the content of the tree the path starts at, *complete (optional)
 * whether a commit or tag sits below it (else the tree was reached on its
 * own, and the path starts there). */
static int gitlink_where(struct pw_compat_xlate *x, struct pw_buf *path, const struct pw_buf **root,
                         int *complete)
{
	const struct pw_oid *child = &x->stack[x->sp - 1].oid;
	struct pw_buf t = PW_BUF_INIT;
	size_t k = x->nr_kept;
	int rc = 0;

	if (root)
		*root = &x->content;
	if (complete)
		*complete = 0;
	for (size_t i = x->sp - 1; i-- > 0 && !rc;) {
		const struct frame *f = &x->stack[i];
		const struct pw_buf *parent;
		struct pw_tree_entry e;
		struct pw_error e2;
		size_t pos = 0;
		int found = 0;

		if (!f->expanded)
			continue;
		if (!f->kept || !k) {
			/* an expanded frame that keeps no content: a commit or tag */
			if (complete)
				*complete = 1;
			break;
		}
		parent = &x->kept[--k];
		while (!found &&
		       pw_tree_next(parent->data, parent->len, &pos, x->o.from, &e, &e2) == 1)
			found = e.mode == 040000 && pw_oid_equal(&e.oid, child);
		if (!found)
			break;
		pw_buf_reset(&t);
		if (pw_buf_add(&t, e.name, e.name_len) || pw_buf_addch(&t, '/') ||
		    pw_buf_add(&t, path->data, path->len)) {
			rc = PW_ENOMEM;
			break;
		}
		pw_buf_reset(path);
		if (pw_buf_add(path, t.data, t.len))
			rc = PW_ENOMEM;
		child = &f->oid;
		if (root)
			*root = parent;
	}
	pw_buf_free(&t);
	return rc;
}

/* The .gitmodules blob of a root tree: 1 with its id, and its content in
 * gm when the odb has it (at most PW_GITMODULES_MAX bytes), else 0. */
static int read_gitmodules(struct pw_compat_xlate *x, const struct pw_buf *root, struct pw_oid *oid,
                           struct pw_buf *gm, int *have_content)
{
	struct pw_tree_entry e;
	struct pw_error e2;
	size_t pos = 0;
	uint64_t size = 0;
	int type = 0;

	*have_content = 0;
	while (pw_tree_next(root->data, root->len, &pos, x->o.from, &e, &e2) == 1)
		if (e.name_len == 11 && !memcmp(e.name, ".gitmodules", 11) &&
		    (e.mode & 0170000) == 0100000) {
			*oid = e.oid;
			*have_content = !pw_odb_read_header(x->o.odb, oid, &type, &size) &&
			                type == PW_OBJ_BLOB && size <= PW_GITMODULES_MAX &&
			                !pw_odb_read(x->o.odb, oid, &type, gm);
			return 1;
		}
	return 0;
}

/* Every gitlink of the tree at the top of the stack that has no id yet,
 * through opts.gitlink, into x->links. */
static int map_gitlinks(struct pw_compat_xlate *x, struct pw_error *err)
{
	struct pw_buf path = PW_BUF_INIT, gm = PW_BUF_INIT;
	const struct pw_buf *root;
	struct pw_oid gm_oid;
	struct pw_tree_entry e;
	struct pw_error e2;
	size_t pos = 0, dir_len;
	int complete, rc, have_gm, gm_read;

	if ((rc = gitlink_where(x, &path, &root, &complete))) {
		pw_buf_free(&path);
		return pw_error_set(err, rc, "out of memory");
	}
	have_gm = read_gitmodules(x, root, &gm_oid, &gm, &gm_read);
	dir_len = path.len;
	while (!rc &&
	       pw_tree_next(x->content.data, x->content.len, &pos, x->o.from, &e, &e2) == 1) {
		struct pw_compat_gitlink g;
		struct pw_oid to;

		if (e.mode != 0160000 || pw_compat_xlate_lookup(x, &e.oid, NULL) != PW_ENOTFOUND)
			continue;
		pw_buf_setlen(&path, dir_len);
		if (pw_buf_add(&path, e.name, e.name_len)) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
		memset(&g, 0, sizeof(g));
		g.path = path.data;
		g.path_len = path.len;
		g.path_complete = complete;
		g.commit = &e.oid;
		g.to = x->o.to;
		g.gitmodules = gm_read ? gm.data : NULL;
		g.gitmodules_len = gm_read ? gm.len : 0;
		g.gitmodules_oid = have_gm ? &gm_oid : NULL;
		if ((rc = x->o.gitlink(x->o.gitlink_data, &g, &to, err)))
			break;
		if (to.algo != x->o.to->id)
			rc = pw_error_set(err, PW_EINVAL, "gitlink %s: not a %s id", path.data,
			                  x->o.to->name);
		else if (pw_compat_pairs_add(&x->links, &e.oid, &to))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	pw_buf_free(&path);
	pw_buf_free(&gm);
	return rc;
}

const struct pw_compat_pairs *pw_compat__xlate_links(const struct pw_compat_xlate *x)
{
	return &x->links;
}

int pw_compat__links_lines(const struct pw_compat_xlate *x, const struct pw_hash_algo *storage,
                           int (*has)(void *, const struct pw_oid *), void *has_data,
                           struct pw_buf *add)
{
	for (size_t i = 0; i < x->links.nr; i++) {
		const struct pw_compat_pair *p = &x->links.pairs[i];
		const struct pw_oid *s = p->storage.algo == storage->id ? &p->storage : &p->compat;
		const struct pw_oid *c = s == &p->storage ? &p->compat : &p->storage;
		char sh[PW_MAX_HEXSZ + 1], ch[PW_MAX_HEXSZ + 1];

		if (has && has(has_data, s))
			continue;
		if (pw_buf_addf(add, "%s %s\n", pw_oid_to_hex(s, sh), pw_oid_to_hex(c, ch)))
			return PW_ENOMEM;
	}
	return 0;
}

int pw_compat__xlate_commits_first(struct pw_compat_xlate *x, const struct pw_oid *oids, size_t nr,
                                   struct pw_error *err)
{
	int rc = 0;

	for (size_t i = 0; i < nr && !rc; i++) {
		uint64_t size;
		int type = 0;

		/* (what is known already costs no header read) */
		if (pw_compat_xlate_lookup(x, &oids[i], NULL) == PW_ENOTFOUND &&
		    !pw_odb_read_header(x->o.odb, &oids[i], &type, &size) &&
		    (type == PW_OBJ_COMMIT || type == PW_OBJ_TAG))
			rc = pw_compat_xlate_object(x, &oids[i], err);
	}
	return rc;
}

/* A tree that cannot be translated because of a gitlink: name it with its
 * whole path (the translation only knows the entry's name). */
static int gitlink_error(struct pw_compat_xlate *x, const struct pw_oid *tree, struct pw_error *err)
{
	struct pw_buf path = PW_BUF_INIT;
	struct pw_tree_entry e;
	struct pw_error e2;
	size_t pos = 0;
	int rc = 0;

	while (!rc &&
	       pw_tree_next(x->content.data, x->content.len, &pos, x->o.from, &e, &e2) == 1) {
		char hex[PW_MAX_HEXSZ + 1], th[PW_MAX_HEXSZ + 1];

		if (e.mode != 0160000 || pw_compat_xlate_lookup(x, &e.oid, NULL) != PW_ENOTFOUND)
			continue;
		gitlink_where(x, &path, NULL, NULL);
		rc = pw_error_set(err, PW_ENOTFOUND,
		                  "gitlink %s%.*s (%s submodule commit %s, in tree %s) has no %s "
		                  "id: the submodule's commits are not in the compat map",
		                  path.data, (int)e.name_len, e.name, x->o.from->name,
		                  pw_oid_to_hex(&e.oid, hex), pw_oid_to_hex(tree, th),
		                  x->o.to->name);
	}
	pw_buf_free(&path);
	return rc;
}

int pw_compat_xlate_object(struct pw_compat_xlate *x, const struct pw_oid *root,
                           struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1], hex2[PW_MAX_HEXSZ + 1];
	int rc;

	x->sp = 0;
	x->nr_kept = 0;
	if ((rc = push(x, root)))
		return pw_error_set(err, rc, "out of memory");
	while (x->sp) {
		struct frame *f = &x->stack[x->sp - 1];
		struct pw_oid oid = f->oid;
		int type;

		rc = pw_compat_xlate_lookup(x, &oid, NULL);
		if (!rc) {
			if (f->kept)
				unkeep_content(x, 0);
			x->sp--;
			continue;
		}
		if (rc != PW_ENOTFOUND)
			return rc == PW_ENOMEM ? pw_error_set(err, rc, "out of memory")
			                       : pw_error_set(err, rc, "looking up %s failed",
			                                      pw_oid_to_hex(&oid, hex));
		if (f->kept) {
			unkeep_content(x, 1);
			f->kept = 0;
			type = PW_OBJ_TREE;
			rc = 0;
		} else {
			rc = pw_odb_read(x->o.odb, &oid, &type, &x->content);
		}
		if (rc) {
			pw_oid_to_hex(&oid, hex);
			if (rc == PW_ENOTFOUND && x->sp > 1)
				return pw_error_set(err, rc,
				                    "object %s (referenced by %s) is missing", hex,
				                    pw_oid_to_hex(&x->stack[x->sp - 2].oid, hex2));
			if (rc == PW_ENOTFOUND)
				return pw_error_set(err, rc, "object %s is missing", hex);
			pw_error_copy(err, pw_odb_error(x->o.odb));
			return pw_error_wrap(err, "reading %s", hex);
		}
		if (type == PW_OBJ_BLOB) {
			if ((rc = record(x, &oid, type, x->content.data, x->content.len, err)))
				return rc;
			x->sp--;
			continue;
		}
		if (!f->expanded) {
			/* Everything it references may be known already (a
			 * directory whose changes are all blobs: they come
			 * first): then one pass translates it. Else the pass
			 * stopped at the first unknown id, and the references
			 * are pushed. */
			pw_buf_reset(&x->conv);
			if (type != PW_OBJ_BLOB &&
			    !pw_compat_convert(&x->conv, type, x->content.data, x->content.len,
			                       x->o.from, x->o.to, lookup_cb, x, err)) {
				if ((rc = record(x, &oid, type, x->conv.data, x->conv.len, err)))
					return rc;
				x->sp--;
				continue;
			}
			pw_error_clear(err);
			f = &x->stack[x->sp - 1];
			f->expanded = 1;
			x->nr_deps = 0;
			rc = pw_compat_references(type, x->content.data, x->content.len, x->o.from,
			                          dep_cb, x, err);
			if (rc) {
				if (rc == PW_ENOMEM)
					return pw_error_set(err, rc, "out of memory");
				return pw_error_wrap(err, "%s", pw_oid_to_hex(&oid, hex));
			}
			if (x->nr_deps) {
				/* a stack deeper than any history means a cycle */
				if (x->sp + x->nr_deps > x->o.max_depth)
					return pw_error_set(err, PW_ECORRUPT,
					                    "object %s: references form a cycle",
					                    pw_oid_to_hex(&oid, hex));
				if (type == PW_OBJ_TREE) {
					if (keep_content(x))
						return pw_error_set(err, PW_ENOMEM,
						                    "out of memory");
					f->kept = 1;
				}
				for (size_t i = x->nr_deps; i-- > 0;)
					if ((rc = push(x, &x->deps[i])))
						return pw_error_set(err, rc, "out of memory");
				continue;
			}
		}
		pw_buf_reset(&x->conv);
		rc = pw_compat_convert(&x->conv, type, x->content.data, x->content.len, x->o.from,
		                       x->o.to, lookup_cb, x, err);
		if (rc == PW_ENOTFOUND && type == PW_OBJ_TREE && x->o.gitlink) {
			/* a submodule's commit: through its own map, then again */
			if ((rc = map_gitlinks(x, err)))
				return rc;
			pw_buf_reset(&x->conv);
			rc = pw_compat_convert(&x->conv, type, x->content.data, x->content.len,
			                       x->o.from, x->o.to, lookup_cb, x, err);
		}
		if (rc == PW_ENOTFOUND && type == PW_OBJ_TREE && gitlink_error(x, &oid, err))
			return PW_ENOTFOUND;
		if (rc)
			return pw_error_wrap(err, "%s %s", pw_object_type_name(type),
			                     pw_oid_to_hex(&oid, hex));
		if ((rc = record(x, &oid, type, x->conv.data, x->conv.len, err)))
			return rc;
		x->sp--;
	}
	return 0;
}

/* Translate the packed objects whose type is in types (a mask of 1 << type),
 * each pack's in the order of the file. The ids are taken first: reading
 * reorders the odb's list of packs (most recently used first). An entry
 * that cannot be read is left to the caller's loop over every object. */
static int xlate_packed_in_file_order(struct pw_compat_xlate *x, unsigned types,
                                      struct pw_error *err)
{
	size_t npacks = pw_odb_pack_count(x->o.odb), n = 0, nr = 0, alloc = 0;
	struct pw_pack **packs = malloc((npacks ? npacks : 1) * sizeof(*packs));
	struct pw_oid *oids = NULL;
	int rc = 0;

	if (!packs)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (size_t k = 0; k < npacks; k++)
		if (!pw_odb_pack(x->o.odb, k, &packs[n]))
			n++;
	for (size_t k = 0; k < n && !rc; k++) {
		struct pw_pack *p = packs[k];
		struct pw_error e = {0};

		/* the pack's reverse index lists its entries in file order */
		if (pw_pack_revindex(p, &e))
			continue;
		for (uint32_t j = 0; j < p->nr && !rc; j++) {
			int type;

			if (pw_pack_entry_type(p, pw_pack_pos_offset(p, j), &type, &e) ||
			    type < 0 || type > 31 || !(types & 1u << type))
				continue;
			if (nr == alloc) {
				size_t na = alloc ? 2 * alloc : 1024;
				struct pw_oid *no = realloc(oids, na * sizeof(*no));

				if (!no) {
					rc = pw_error_set(err, PW_ENOMEM, "out of memory");
					break;
				}
				oids = no;
				alloc = na;
			}
			pw_idx_nth_oid(p->idx, p->rev_pos[j], &oids[nr++]);
		}
	}
	for (size_t i = 0; i < nr && !rc; i++)
		rc = pw_compat_xlate_object(x, &oids[i], err);
	free(oids);
	free(packs);
	return rc;
}

/* The blobs first. A blob's id needs all of its content; read in the order
 * of the ids, most delta chains are rebuilt from their roots, while in pack
 * order each delta finds its base in the cache. */
int pw_compat__xlate_blobs_first(struct pw_compat_xlate *x, struct pw_error *err)
{
	return xlate_packed_in_file_order(x, 1u << PW_OBJ_BLOB, err);
}

void pw_compat__xlate_take_pairs(struct pw_compat_xlate *x, struct pw_compat_pairs *out)
{
	*out = x->done;
	memset(&x->done, 0, sizeof(x->done));
}

/* The packed commits and tags (the blobs are done:
 * pw_compat__xlate_blobs_first), before the caller's loop over every
 * object: each tree is then reached from its commit. */
int pw_compat__xlate_packed_commits_first(struct pw_compat_xlate *x, struct pw_error *err)
{
	return xlate_packed_in_file_order(x, 1u << PW_OBJ_COMMIT | 1u << PW_OBJ_TAG, err);
}
