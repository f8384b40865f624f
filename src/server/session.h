/* The upload-pack session shared by its parts: the session struct and the
 * helpers every part uses (session.c). The parts (negotiate.c, shallow.c,
 * packgen.c, serve.c) include this header and their own, never upload.c's
 * entry points: upload.c drives them, they do not call back into it. */
#ifndef PW_SERVER_SESSION_H
#define PW_SERVER_SESSION_H

#include <stdint.h>

#include "hash/oidmap.h"
#include "odb/graph.h"
#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/server.h"
#include "server/compat-serve.h"

/* ---- the commit graph's flags in a fetch -------------------------------- */

enum {
	G_PARSED = PW_GRAPH_PARSED,
	G_MISSING = PW_GRAPH_MISSING,           /* not in the odb (or not a commit) */
	G_SRV_SHALLOW = PW_GRAPH_GRAFTED,       /* in the serving repository's shallow file */
	G_THEY_HAVE = PW_GRAPH_FIRST_FREE << 0, /* the client has it (a have, or a have's parent) */
	G_COMMON_KNOWN = PW_GRAPH_FIRST_FREE << 1, /* a want already known reachable from a have */
	G_SHALLOW = PW_GRAPH_FIRST_FREE << 2,      /* boundary of this fetch's depth */
	G_NOT_SHALLOW = PW_GRAPH_FIRST_FREE << 3,
	G_CLIENT_SHALLOW = PW_GRAPH_FIRST_FREE << 4,
	G_SEEN = PW_GRAPH_FIRST_FREE << 5, /* walk scratch */
	G_UNINT = PW_GRAPH_FIRST_FREE << 6,
	G_LISTED = PW_GRAPH_FIRST_FREE << 7,
	G_CUT_SEND = PW_GRAPH_FIRST_FREE << 8, /* do not send parents of this commit */
	G_CUT_HAVE = PW_GRAPH_FIRST_FREE << 9, /* the client lacks this commit's parents */
	G_WANT = PW_GRAPH_FIRST_FREE << 10,
	G_QUEUED = PW_GRAPH_FIRST_FREE << 11,
	G_EXCL = PW_GRAPH_FIRST_FREE << 12,        /* reachable from deepen-not */
	G_HAVE_LISTED = PW_GRAPH_FIRST_FREE << 13, /* in have_objs */
};

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
	char *ns; /* "refs/namespaces/<a>/..." prefix of GIT_NAMESPACE, or NULL */
	size_t ns_len;
	int in_fd, out_fd;
	struct pw_pkt_reader rd;
	int rd_ok;
	struct pw_buf out;
	size_t out_traced; /* bytes of out already passed to opts.trace_packet */
	/* v2 "packfile-uris <protocols>" of the fetch being served, or NULL;
	 * with it the "packfile" header waits until the pack's objects are
	 * known, for the packfile-uris section that goes before it */
	char *uri_protocols;
	int packfile_pending;
	struct pw_error err;
	int err_sent;     /* the client has been told */
	int pack_started; /* raw pack bytes went out: no ERR packet possible */
	int sideband;     /* enum pw_sideband_mode of the pack being sent */
	int sideband_all; /* v2: every line of the response on band 1 */
	int v2;

	/* configuration */
	unsigned allow_filter : 1, allow_tip : 1, allow_reachable : 1, allow_any : 1;
	unsigned allow_ref_in_want : 1, allow_sideband_all : 1, advertise_sid : 1;
	char sid[96]; /* our session id (transfer.advertiseSID) */

	/* refs (loaded once per request) */
	struct pw_adv_ref *refs;
	size_t nr_refs;
	int refs_loaded;
	char *head_symref; /* what HEAD points at, also when unborn */
	int head_unborn;
	struct pw_oidmap our_refs; /* advertised oids and their peeled values */

	/* the repository's own shallow file (loaded once per session): its
	 * commits end the history we have and serve */
	struct pw_oid_array srv_shallow; /* sorted */
	struct pw_oidmap srv_shallow_map;
	int srv_shallow_loaded;

	/* one fetch */
	struct pw_fetch_args args;
	struct pw_graph graph;
	struct pw_oid_array have_objs; /* haves we have (in order) */
	struct pw_oid_array new_shallow, unshallow;
	int64_t oldest_have;
	int have_oldest;
	struct pw_upload_stats stats;

	/* a client of the other algorithm (compat-serve.h): its algorithm
	 * (algo when none), the map, and the pack writer's translation
	 * (made on the first pack, its cache kept for the session) */
	const struct pw_hash_algo *wire;
	struct pw_compat_map *compat;
	struct pw_compat_pack *compat_pack;
	/* the stored view in the client's algorithm (pw_srv_compat_view) */
	struct pw_odb *view_odb;
	int view_tried;
};

/* session helpers (session.c): what every part of a session may call */
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
/* Record PW_ENOMEM in s->err and return it. */
int pw_srv_oom(struct pw_upload_session *s);
/* Append oid to arr; PW_ENOMEM is recorded in s->err. */
int pw_srv__push_oid(struct pw_upload_session *s, struct pw_oid_array *arr,
                     const struct pw_oid *oid);

/* The full name of a ref the client names (namespace prefix added), malloc'd;
 * NULL when out of memory (recorded). */
char *pw_srv_ref_full_name(struct pw_upload_session *s, const char *name);

/* A trace2-style data event for the caller (opts.trace_data), if any. */
void pw_srv_trace(struct pw_upload_session *s, const char *key, const char *value);
/* One packet to opts.trace_packet (write: sent to the client). */
void pw_srv_trace_pkt(struct pw_upload_session *s, int write, const struct pw_pkt *pkt);

/* Read the repository's shallow file into srv_shallow (shallow.c). */
int pw_srv_load_repo_shallow(struct pw_upload_session *s);

/* Queue the "shallow <oid>" and "unshallow <oid>" lines of new_shallow and
 * unshallow (no flush). */
int pw_srv_send_shallow_lines(struct pw_upload_session *s);

#endif
