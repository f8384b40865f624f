/* packwire serve --cluster=...: the node's peer endpoint (a second
 * listener) and its pw_cluster, plugged into the server's options. */
#ifndef PW_CLI_CLUSTER_NODE_H
#define PW_CLI_CLUSTER_NODE_H

#include "packwire/packwire.h"

struct pw_cli_cluster {
	const char *etcd, *node, *advertise, *peer_listen;
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

#endif
