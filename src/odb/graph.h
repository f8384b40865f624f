/* The commit graph of one upload-pack fetch, used by negotiation, shallow
 * computation and pack generation. Knows nothing of the session. */
#ifndef PW_ODB_GRAPH_H
#define PW_ODB_GRAPH_H

#include <stdint.h>

#include "hash/oidmap.h"
#include "packwire/odb.h"

/* ---- commit graph ------------------------------------------------------- */

enum {
	G_PARSED = 1 << 0,
	G_MISSING = 1 << 1,      /* not in the odb (or not a commit) */
	G_THEY_HAVE = 1 << 2,    /* the client has it (a have, or a have's parent) */
	G_COMMON_KNOWN = 1 << 3, /* a want already known reachable from a have */
	G_SHALLOW = 1 << 4,      /* boundary of this fetch's depth */
	G_NOT_SHALLOW = 1 << 5,
	G_CLIENT_SHALLOW = 1 << 6,
	G_SEEN = 1 << 7, /* walk scratch */
	G_UNINT = 1 << 8,
	G_LISTED = 1 << 9,
	G_CUT_SEND = 1 << 10, /* do not send parents of this commit */
	G_CUT_HAVE = 1 << 11, /* the client lacks this commit's parents */
	G_WANT = 1 << 12,
	G_QUEUED = 1 << 13,
	G_EXCL = 1 << 14,        /* reachable from deepen-not */
	G_HAVE_LISTED = 1 << 15, /* in have_objs */
	G_SRV_SHALLOW = 1 << 16, /* in the serving repository's shallow file */
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
/* Parse the node (a commit in g->grafts gets no parents and G_SRV_SHALLOW): 0, or PW_ENOTFOUND
 * (flag G_MISSING) when the object is absent or not a commit; other errors are real. */
int pw_graph_parse(struct pw_graph *g, uint32_t idx);
static inline uint32_t pw_graph_parent(const struct pw_graph *g, uint32_t idx, uint32_t i)
{
	return g->parents[g->v[idx].parents_off + i];
}

#endif
