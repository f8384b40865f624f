/* Translating objects from one algorithm to the other, each after
 * everything it references (an explicit stack, never recursion), so that
 * each look-up of a reference finds its id: the engine of `compat build`,
 * of the map's updates and of a push received in the other algorithm. */
#include <stdlib.h>
#include <string.h>

#include "compat/map-priv.h"
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
	struct pw_compat_pairs done; /* from -> to of every object seen */
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

/* Where the tree at the top of the stack sits: the names of the entries
 * along the chain of frames being expanded (its ancestors), "a/b/". */
static void tree_path(struct pw_compat_xlate *x, struct pw_buf *path)
{
	struct pw_buf t = PW_BUF_INIT;
	const struct frame *parent = NULL;

	for (size_t i = 0; i < x->sp; i++) {
		const struct frame *f = &x->stack[i];
		struct pw_tree_entry e;
		struct pw_error e2;
		size_t pos = 0;
		int type;

		if (!f->expanded)
			continue;
		if (parent && !pw_odb_read(x->o.odb, &parent->oid, &type, &t) &&
		    type == PW_OBJ_TREE)
			while (pw_tree_next(t.data, t.len, &pos, x->o.from, &e, &e2) == 1)
				if (pw_oid_equal(&e.oid, &f->oid)) {
					if (pw_buf_add(path, e.name, e.name_len) ||
					    pw_buf_addch(path, '/'))
						goto out;
					break;
				}
		parent = f;
	}
out:
	pw_buf_free(&t);
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
		tree_path(x, &path);
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

/* The blobs first, each pack's in the order of the file. A blob's id needs
 * all of its content; read in the order of the ids, most delta chains are
 * rebuilt from their roots, while in pack order each delta finds its base
 * in the cache. An entry that cannot be read is left to the caller's loop
 * over every object to report. */
int pw_compat__xlate_blobs_first(struct pw_compat_xlate *x, struct pw_error *err)
{
	size_t npacks = pw_odb_pack_count(x->o.odb), n = 0;
	/* reading reorders the odb's list of packs (most recently used
	 * first): take them all before */
	struct pw_pack **packs = malloc((npacks ? npacks : 1) * sizeof(*packs));
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
			struct pw_oid oid;
			int type;

			if (pw_pack_entry_type(p, p->rev_offsets[j], &type, &e) ||
			    type != PW_OBJ_BLOB)
				continue;
			pw_idx_nth_oid(p->idx, p->rev_pos[j], &oid);
			rc = pw_compat_xlate_object(x, &oid, err);
		}
	}
	free(packs);
	return rc;
}

void pw_compat__xlate_take_pairs(struct pw_compat_xlate *x, struct pw_compat_pairs *out)
{
	*out = x->done;
	memset(&x->done, 0, sizeof(x->done));
}
