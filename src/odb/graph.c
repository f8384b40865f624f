/* A commit graph over an object database: see graph.h. */
#include <stdlib.h>
#include <string.h>

#include "odb/graph.h"
#include "packwire/object.h"

void pw_graph_init(struct pw_graph *g, struct pw_odb *odb, struct pw_error *err)
{
	memset(g, 0, sizeof(*g));
	g->odb = odb;
	g->algo = odb ? pw_odb_algo(odb) : NULL;
	g->err = err;
	pw_buf_init(&g->buf, 0);
}

void pw_graph_free(struct pw_graph *g)
{
	pw_oidmap_free(&g->map);
	free(g->v);
	free(g->parents);
	pw_buf_free(&g->buf);
	memset(g, 0, sizeof(*g));
}

static int nomem(struct pw_graph *g)
{
	return pw_error_set(g->err, PW_ENOMEM, "out of memory");
}

int pw_graph_lookup(struct pw_graph *g, const struct pw_oid *oid, uint32_t *idx)
{
	struct pw_oidmap_entry *e;
	int created;

	e = pw_oidmap_put(&g->map, oid, &created);
	if (!e)
		return nomem(g);
	if (!created) {
		*idx = (uint32_t)((uintptr_t)e->value - 1);
		return 0;
	}
	if (g->nr == g->alloc) {
		size_t na = g->alloc ? g->alloc * 2 : 256;
		struct pw_gcommit *nv;

		if (g->nr >= UINT32_MAX - 1)
			return nomem(g);
		nv = realloc(g->v, na * sizeof(*nv));
		if (!nv)
			return nomem(g);
		g->v = nv;
		g->alloc = na;
	}
	memset(&g->v[g->nr], 0, sizeof(g->v[g->nr]));
	g->v[g->nr].oid = *oid;
	e->value = (void *)(uintptr_t)(g->nr + 1);
	*idx = (uint32_t)g->nr++;
	return 0;
}

int pw_graph_parse(struct pw_graph *g, uint32_t idx)
{
	struct pw_commit_info ci;
	struct pw_oid oid;
	int type, rc;
	size_t i;

	if (g->v[idx].flags & PW_GRAPH_PARSED)
		return 0;
	if (g->v[idx].flags & PW_GRAPH_MISSING)
		return PW_ENOTFOUND;
	oid = g->v[idx].oid;
	rc = pw_odb_read(g->odb, &oid, &type, &g->buf);
	if (rc == PW_ENOTFOUND || (!rc && type != PW_OBJ_COMMIT)) {
		g->v[idx].flags |= PW_GRAPH_MISSING;
		return PW_ENOTFOUND;
	}
	if (rc)
		return pw_error_copy(g->err, pw_odb_error(g->odb));
	rc = pw_commit_parse(&ci, g->buf.data, g->buf.len, g->algo, g->err);
	if (rc)
		return rc;
	if (g->grafts && pw_oidmap_get(g->grafts, &oid)) {
		ci.nr_parents = 0; /* the history stops here */
		g->v[idx].flags |= PW_GRAPH_GRAFTED;
	}
	if (g->parents_nr + ci.nr_parents > g->parents_alloc) {
		size_t na = g->parents_alloc ? g->parents_alloc * 2 : 512;
		uint32_t *np;

		while (na < g->parents_nr + ci.nr_parents)
			na *= 2;
		np = realloc(g->parents, na * sizeof(*np));
		if (!np) {
			pw_commit_info_free(&ci);
			return nomem(g);
		}
		g->parents = np;
		g->parents_alloc = na;
	}
	for (i = 0; i < ci.nr_parents; i++) {
		uint32_t p;

		rc = pw_graph_lookup(g, &ci.parents[i], &p);
		if (rc) {
			pw_commit_info_free(&ci);
			return rc;
		}
		g->parents[g->parents_nr + i] = p;
	}
	/* lookups may have moved g->v */
	g->v[idx].parents_off = (uint32_t)g->parents_nr;
	g->v[idx].nparents = (uint32_t)ci.nr_parents;
	g->v[idx].tree = ci.tree;
	g->v[idx].date = ci.commit_time;
	g->v[idx].flags |= PW_GRAPH_PARSED;
	g->parents_nr += ci.nr_parents;
	pw_commit_info_free(&ci);
	return 0;
}
