/* packwire serve --cluster=...: the node's peer endpoint (a second
 * listener) and its pw_cluster, plugged into the server's options; and
 * upload-pack / receive-pack --cluster=... (ssh): a transient member. */
#ifndef PW_CLI_CLUSTER_NODE_H
#define PW_CLI_CLUSTER_NODE_H

#include "packwire/packwire.h"

struct pw_cli_cluster {
	const char *etcd, *node, *advertise, *peer_listen, *base_path;
	unsigned long long peer_port, replicas;
	struct pw_serve *peer;
	struct pw_cluster *c;
};

/* Parse one of the cluster options at argv[*i]: 1 taken, 0 not one of
 * them, -1 bad value (message printed). */
int pw_cli_cluster_option(struct pw_cli_cluster *cl, int argc, char **argv, int *i);
/* Start the peer endpoint and join; set o's hooks. */
int pw_cli_cluster_start(struct pw_cli_cluster *cl, struct pw_serve_opts *o, struct pw_error *err);
void pw_cli_cluster_stop(struct pw_cli_cluster *cl);

/* upload-pack / receive-pack over ssh with --cluster: one of the cluster
 * options, or --base-path=DIR (what repository names are relative to;
 * default: the directory that holds the repository). The peer endpoint's
 * options are refused: such a process has none. 1 taken, 0 not one, -1
 * bad value (message printed). */
int pw_cli_cluster_ssh_option(struct pw_cli_cluster *cl, int argc, char **argv, int *i);
/* A transient member of the cluster (no lease, no peer endpoint, no
 * thread) for a session on repo: *store gets its ref store. Stop it with
 * pw_cli_cluster_stop. */
int pw_cli_cluster_open(struct pw_cli_cluster *cl, struct pw_repo *repo,
                        const struct pw_ref_store **store, struct pw_error *err);

#endif
