/* A commit graph over an object database: nodes keyed by oid, parsed on
 * demand, each with a date, its parents and flag bits for the walks of its
 * user (upload-pack's negotiation, shallow computation and pack generation).
 * Knows nothing of who uses it. */
#ifndef PW_ODB_GRAPH_H
#define PW_ODB_GRAPH_H

#include <stdint.h>

#include "hash/oidmap.h"
#include "packwire/odb.h"

/* Flags the graph itself sets; the bits from PW_GRAPH_FIRST_FREE up are the
 * caller's (upload-pack's negotiation and shallow marks: server/session.h). */
enum {
	PW_GRAPH_PARSED = 1 << 0,
	PW_GRAPH_MISSING = 1 << 1, /* not in the odb (or not a commit) */
	PW_GRAPH_GRAFTED = 1 << 2, /* in g->grafts: parsed without its parents */
	PW_GRAPH_FIRST_FREE = 1 << 3,
};

struct pw_gcommit {
	struct pw_oid oid, tree;
	int64_t date;
	uint32_t parents_off, nparents; /* into graph->parents */
	uint32_t flags;
	uint32_t mark; /* epoch of the last search that visited it */
	uint32_t depth;
};

struct pw_graph {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	struct pw_error *err;
	struct pw_oidmap map; /* oid -> index + 1 */
	struct pw_gcommit *v;
	size_t nr, alloc;
	uint32_t *parents;
	size_t parents_nr, parents_alloc;
	uint32_t epoch;
	struct pw_buf buf;
	/* the repository's own shallow commits, or NULL: parsed without
	 * parents, as Git's grafts make them (borrowed) */
	const struct pw_oidmap *grafts;
};

void pw_graph_init(struct pw_graph *g, struct pw_odb *odb, struct pw_error *err);
void pw_graph_free(struct pw_graph *g);
/* Find or add a commit node (unparsed). */
int pw_graph_lookup(struct pw_graph *g, const struct pw_oid *oid, uint32_t *idx);
/* Parse the node (a commit in g->grafts gets no parents and PW_GRAPH_GRAFTED): 0, or
 * PW_ENOTFOUND (flag PW_GRAPH_MISSING) when the object is absent or not a commit; other
 * errors are real. */
int pw_graph_parse(struct pw_graph *g, uint32_t idx);
static inline uint32_t pw_graph_parent(const struct pw_graph *g, uint32_t idx, uint32_t i)
{
	return g->parents[g->v[idx].parents_off + i];
}

#endif
