/* The pack writer's write order: Git's pack-objects order (see below), and
 * the tagged objects it puts early (pw_pack_writer_add_tagged,
 * pw_pack_writer_add_tag_refs). */
#include <stdlib.h>
#include <string.h>

#include "pack/pack-write-priv.h"
#include "packwire/refs.h"

/* Objects are written in the order Git's pack-objects writes them, so that a
 * repack gives the same pack as git repack given the same deltas, and a
 * reader finds the history it reads together in one region of the file:
 *  - in the order added (the walk's recency order: commits newest first,
 *    then tags, trees and blobs as the walk met them) up to the first object
 *    a tag names;
 *  - then every tagged object (tags and what they peel to);
 *  - then the remaining commits and tags, then the remaining trees (but
 *    reused deltas, which Git files under their delta type);
 *  - then the rest (blobs) one delta family at a time: the root of the
 *    family, then its deltas level by level in recency order.
 * Each entry's base is still written before it (write_all climbs). */

/* The index of the object a delta entry of the new pack is based on, or -1. */
static int32_t write_base(const struct wobj *o)
{
	if (o->base >= 0 && (pw_pack_writer__reused_delta(o) || (o->zdata && o->zdelta)))
		return o->base;
	return -1;
}

int pw_pack_writer_add_tagged(struct pw_pack_writer *w, const struct pw_oid *oid)
{
	w->tagged_given = 1;
	if (w->nr_tagged == w->alloc_tagged) {
		size_t n = w->alloc_tagged ? w->alloc_tagged * 2 : 64;
		struct pw_oid *p = realloc(w->tagged, n * sizeof(*p));

		if (!p)
			return pw_pack_writer__nomem(w);
		w->tagged = p;
		w->alloc_tagged = n;
	}
	w->tagged[w->nr_tagged++] = *oid;
	return 0;
}

struct tag_refs {
	struct pw_pack_writer *w;
	int rc;
};

static int tag_ref(const struct pw_ref *ref, void *data)
{
	struct tag_refs *t = data;
	struct pw_oid peeled;
	struct pw_error err = {0};

	if ((t->rc = pw_pack_writer_add_tagged(t->w, &ref->oid)))
		return 1;
	if (ref->has_peeled)
		t->rc = pw_pack_writer_add_tagged(t->w, &ref->peeled);
	/* a broken tag is reported by whoever reads it for the pack */
	else if (!ref->peel_known && pw_odb_peel(t->w->odb, &ref->oid, &peeled, NULL, &err) > 0)
		t->rc = pw_pack_writer_add_tagged(t->w, &peeled);
	return t->rc ? 1 : 0;
}

int pw_pack_writer_add_tag_refs(struct pw_pack_writer *w, struct pw_repo *repo)
{
	struct tag_refs t = {w, 0};

	w->tagged_given = 1; /* no tags: nothing is written early */
	pw_refs_foreach(repo, "refs/tags/", 0, tag_ref, &t);
	return t.rc;
}

/* Mark the objects named by pw_pack_writer_add_tagged; without any, every
 * tag of the pack and the objects it peels to. */
static int mark_tagged(struct pw_pack_writer *w)
{
	struct pw_buf buf = PW_BUF_INIT;
	size_t i;
	int rc = 0;

	if (w->tagged_given) {
		for (i = 0; i < w->nr_tagged; i++) {
			int32_t j = pw_pack_writer__lookup(w, &w->tagged[i]);

			if (j >= 0)
				w->objs[j].flags |= W_TAGGED;
		}
		return 0;
	}
	for (i = 0; i < w->nr && !rc; i++) {
		struct pw_oid oid;
		int hops, type;

		if (w->objs[i].type != PW_OBJ_TAG || (w->objs[i].flags & W_BASE_ONLY))
			continue;
		w->objs[i].flags |= W_TAGGED;
		oid = w->objs[i].oid;
		for (hops = 0; hops < 64; hops++) {
			struct pw_tag_info tag;
			int32_t j;

			if ((rc = pw_odb_read(w->odb, &oid, &type, &buf))) {
				rc = pw_error_copy(&w->err, pw_odb_error(w->odb));
				break;
			}
			if (type != PW_OBJ_TAG ||
			    pw_tag_parse(&tag, buf.data, buf.len, w->algo, &w->err)) {
				/* the writer reports a broken tag when it copies it */
				pw_error_clear(&w->err);
				break;
			}
			if ((j = pw_pack_writer__lookup(w, &tag.object)) < 0)
				break;
			w->objs[j].flags |= W_TAGGED;
			if (w->objs[j].type != PW_OBJ_TAG)
				break;
			oid = tag.object;
		}
	}
	pw_buf_free(&buf);
	return rc;
}

struct order {
	int32_t *list; /* indexes in write order */
	size_t n;
	uint8_t *taken;
	int32_t *child, *sibling; /* first delta child, next delta sibling, -1 */
};

static void order_take(struct order *ord, size_t i)
{
	if (ord->taken[i])
		return;
	ord->taken[i] = 1;
	ord->list[ord->n++] = (int32_t)i;
}

/* The family of object i: up to its root, then every level of deltas below
 * it, each object's deltas together (recency order) before any of theirs. */
static void order_family(struct pw_pack_writer *w, struct order *ord, size_t i, int32_t *stack)
{
	int32_t root = (int32_t)i, c;
	size_t sp = 0, guard = 0;

	while (write_base(&w->objs[root]) >= 0 && guard++ < w->nr)
		root = write_base(&w->objs[root]);
	order_take(ord, (size_t)root);
	stack[sp++] = root;
	while (sp) {
		int32_t x = stack[--sp];
		size_t first = sp;

		for (c = ord->child[x]; c >= 0; c = ord->sibling[c])
			order_take(ord, (size_t)c);
		/* visit the children in recency order: push them reversed */
		for (c = ord->child[x]; c >= 0; c = ord->sibling[c])
			stack[sp++] = c;
		for (size_t a = first, b = sp; b > a + 1; a++, b--) {
			int32_t t = stack[a];

			stack[a] = stack[b - 1];
			stack[b - 1] = t;
		}
	}
}

/* Fills *out (malloc'd, w->nr entries) with the write order. */
int pw_pack_writer__compute_write_order(struct pw_pack_writer *w, int32_t **out)
{
	struct order ord;
	int32_t *stack;
	size_t i, first_tagged;
	int rc;

	*out = NULL;
	if ((rc = mark_tagged(w)))
		return rc;
	memset(&ord, 0, sizeof(ord));
	ord.list = malloc((w->nr + 1) * sizeof(*ord.list));
	ord.taken = calloc(w->nr + 1, 1);
	ord.child = malloc((w->nr + 1) * sizeof(*ord.child));
	ord.sibling = malloc((w->nr + 1) * sizeof(*ord.sibling));
	stack = malloc((w->nr + 1) * sizeof(*stack));
	if (!ord.list || !ord.taken || !ord.child || !ord.sibling || !stack) {
		free(ord.list);
		free(ord.taken);
		free(ord.child);
		free(ord.sibling);
		free(stack);
		return pw_pack_writer__nomem(w);
	}
	for (i = 0; i < w->nr; i++)
		ord.child[i] = ord.sibling[i] = -1;
	/* backwards, so that each list of deltas ends up in recency order */
	for (i = w->nr; i-- > 0;) {
		int32_t b = write_base(&w->objs[i]);

		if (b >= 0) {
			ord.sibling[i] = ord.child[b];
			ord.child[b] = (int32_t)i;
		}
	}
	for (i = 0; i < w->nr && !(w->objs[i].flags & W_TAGGED); i++)
		order_take(&ord, i);
	first_tagged = i;
	for (; i < w->nr; i++)
		if (w->objs[i].flags & W_TAGGED)
			order_take(&ord, i);
	/* a reused delta counts as a delta, not as its object's type: it goes
	 * with its family, as in Git */
	for (i = first_tagged; i < w->nr; i++)
		if ((w->objs[i].type == PW_OBJ_COMMIT || w->objs[i].type == PW_OBJ_TAG) &&
		    !pw_pack_writer__reused_delta(&w->objs[i]))
			order_take(&ord, i);
	for (i = first_tagged; i < w->nr; i++)
		if (w->objs[i].type == PW_OBJ_TREE && !pw_pack_writer__reused_delta(&w->objs[i]))
			order_take(&ord, i);
	for (i = first_tagged; i < w->nr; i++)
		if (!ord.taken[i])
			order_family(w, &ord, i, stack);
	free(ord.taken);
	free(ord.child);
	free(ord.sibling);
	free(stack);
	*out = ord.list;
	return 0;
}
