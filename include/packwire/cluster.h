/* Cluster mode (docs/cluster.md): packwire nodes that each keep their own
 * copy of the repositories, with the refs in etcd. A node plugs into the
 * servers through a ref store (packwire/receive.h): before a session reads
 * refs, the node brings the repository's refs up to date from etcd (a
 * linearizable read), fetching from a peer the objects it lacks; a push's
 * updates are copied to --replicas - 1 other live nodes, then committed in
 * one etcd transaction that compares every old value, then applied here.
 * Peers reach each other on a second listener (the peer endpoint), which
 * takes objects without touching refs and serves any object by id. */
#ifndef PACKWIRE_CLUSTER_H
#define PACKWIRE_CLUSTER_H

#include "packwire/export.h"

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/receive.h"

struct pw_cluster_opts {
	const char *etcd;         /* "etcd:URL[,URL...]" (required) */
	const char *node;         /* this node's name, unique in the cluster (required) */
	const char *advertise;    /* where peers reach this node's peer endpoint (required) */
	const char *base_path;    /* the repositories' directory, as the server's */
	unsigned replicas;        /* copies of a push's objects before it is acknowledged; 0 = 2 */
	unsigned etcd_timeout_ms; /* one etcd request to one endpoint; 0 = 2000 */
	unsigned lease_ttl;       /* seconds a dead node stays listed; 0 = 5 */
	unsigned poll_ms;      /* lease keep-alive, and catch-up while the watch is down; 0 = 500 */
	unsigned full_pass_ms; /* a full catch-up pass while the watch is up; 0 = 10 * poll_ms */
	/* A short-lived process (ssh's upload-pack and receive-pack): no lease
	 * and no catch-up thread; it reads the node list that the running
	 * nodes registered, and advertise may be NULL. Its refs go through etcd
	 * as a node's: prepare and commit work the same. */
	int transient;
	/* Messages of the background work (may be NULL); any thread. */
	void (*log)(void *ctx, const char *msg);
	void *log_ctx;
};

struct pw_cluster;

/* Join: register in etcd (a lease), start the catch-up thread (neither
 * with opts->transient). */
PW_API int pw_cluster_start(struct pw_cluster **out, const struct pw_cluster_opts *opts,
                            struct pw_error *err);
/* Leave (revoke nothing: the lease runs out) and free. NULL is fine. */
PW_API void pw_cluster_stop(struct pw_cluster *c);

/* The ref store of the client-facing servers (borrowed, lives with c). */
PW_API const struct pw_ref_store *pw_cluster_store(struct pw_cluster *c);
/* The ref store of the peer endpoint: pushed objects are kept, no ref is
 * written (static storage). */
PW_API const struct pw_ref_store *pw_cluster_peer_store(void);

/* For pw_serve_opts.not_ready / .metrics (ctx = the cluster). */
PW_API int pw_cluster_not_ready(void *ctx, char *why, size_t cap);
PW_API int pw_cluster_metrics(void *ctx, struct pw_buf *out);
/* For the peer endpoint's pw_serve_opts.not_ready: 0 (200) while this node
 * reaches etcd (an answer within the last 1.5 s), else 1 (503). A node
 * that cannot reach etcd asks its peers this: when one of them can, it is
 * partitioned and answers 503 on its own /healthz. */
PW_API int pw_cluster_peer_status(void *ctx, char *why, size_t cap);

/* packwire cluster add: put the repository at base_path/name under the
 * cluster's care (its algorithm, HEAD and refs into etcd, from this
 * node's copy). PW_EEXISTS when it already is. */
PW_API int pw_cluster_add(const char *etcd, const char *base_path, const char *name,
                          struct pw_error *err);

#endif
