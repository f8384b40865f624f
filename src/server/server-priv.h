/* Internals of the upload-pack session shared by its files: the session
 * struct, the commit graph used by negotiation and shallow computation, and
 * pack generation. */
#ifndef PW_SERVER_PRIV_H
#define PW_SERVER_PRIV_H

#include <stdint.h>

#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/server.h"
#include "hash/oidmap.h"

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
};

void pw_graph_init(struct pw_graph *g, struct pw_odb *odb, struct pw_error *err);
void pw_graph_free(struct pw_graph *g);
/* Find or add a commit node (unparsed). */
int pw_graph_lookup(struct pw_graph *g, const struct pw_oid *oid, uint32_t *idx);
/* Parse the node: 0, or PW_ENOTFOUND (flag G_MISSING) when the object is absent
 * or not a commit; other errors are real. */
int pw_graph_parse(struct pw_graph *g, uint32_t idx);
static inline uint32_t pw_graph_parent(const struct pw_graph *g, uint32_t idx, uint32_t i)
{
	return g->parents[g->v[idx].parents_off + i];
}

/* ---- session ------------------------------------------------------------ */

struct pw_adv_ref {
	char *name;
	char *symref; /* immediate target, or NULL */
	struct pw_oid oid, peeled;
	int has_peeled;
};

struct pw_upload_session {
	struct pw_repo *repo;
	const struct pw_hash_algo *algo;
	struct pw_odb *odb;
	struct pw_upload_pack_opts opts;
	char agent[64];
	int in_fd, out_fd;
	struct pw_pkt_reader rd;
	int rd_ok;
	struct pw_buf out;
	struct pw_error err;
	int err_sent;     /* the client has been told */
	int pack_started; /* raw pack bytes went out: no ERR packet possible */
	int sideband;     /* enum pw_sideband_mode of the pack being sent */
	int sideband_all; /* v2: every line of the response on band 1 */
	int v2;

	/* configuration */
	unsigned allow_filter : 1, allow_tip : 1, allow_reachable : 1, allow_any : 1;
	unsigned allow_ref_in_want : 1, allow_sideband_all : 1;

	/* refs (loaded once per request) */
	struct pw_adv_ref *refs;
	size_t nr_refs;
	int refs_loaded;
	char *head_symref; /* what HEAD points at, also when unborn */
	int head_unborn;
	struct pw_oidmap our_refs; /* advertised oids and their peeled values */

	/* one fetch */
	struct pw_fetch_args args;
	struct pw_graph graph;
	struct pw_oid_array have_objs; /* haves we have (in order) */
	struct pw_oid_array new_shallow, unshallow;
	int64_t oldest_have;
	int have_oldest;
	struct pw_upload_stats stats;
};

/* session helpers (upload.c) */
int pw_srv_fail(struct pw_upload_session *s, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
int pw_srv_flush_out(struct pw_upload_session *s);
int pw_srv_load_refs(struct pw_upload_session *s);
void pw_srv_unload_refs(struct pw_upload_session *s);
int pw_srv_peel(struct pw_upload_session *s, const struct pw_oid *oid, struct pw_oid *peeled);
int pw_srv_odb(struct pw_upload_session *s);
void pw_srv_reset_fetch(struct pw_upload_session *s);
/* A data line of the response (newline added); over band 1 with sideband-all. */
int pw_srv_line(struct pw_upload_session *s, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* The same without the newline (Git sends shallow and object-info lines so). */
int pw_srv_line_nolf(struct pw_upload_session *s, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* negotiation and shallow (negotiate.c, shallow.c) */
/* Record a have: 1 when we have it (now in have_objs), 0 when not, <0 on error. */
int pw_srv_got_have(struct pw_upload_session *s, const struct pw_oid *oid);
/* Is every want reachable from something the client has? 1/0, <0 on error. */
int pw_srv_ok_to_give_up(struct pw_upload_session *s);
/* Check the wants against what this server lets clients ask for (v0). */
int pw_srv_check_wants(struct pw_upload_session *s);
/* Compute new_shallow / unshallow from the deepen arguments; 1 when the
 * request deepens (lines to send), 0 when not. */
int pw_srv_compute_shallow(struct pw_upload_session *s);

/* pack generation (packgen.c): wants, haves, shallows of s->args */
int pw_srv_send_pack(struct pw_upload_session *s);

#endif
