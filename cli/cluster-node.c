/* packwire serve's cluster options: see cluster-node.h. */
#include "cluster-node.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"

int pw_cli_cluster_option(struct pw_cli_cluster *cl, int argc, char **argv, int *i)
{
	const char *v;
	char *end;

	if (pw_cli_opt_value(argc, argv, i, "--cluster", NULL, &cl->etcd) ||
	    pw_cli_opt_value(argc, argv, i, "--node", NULL, &cl->node) ||
	    pw_cli_opt_value(argc, argv, i, "--advertise", NULL, &cl->advertise) ||
	    pw_cli_opt_value(argc, argv, i, "--peer-listen", NULL, &cl->peer_listen))
		return 1;
	if (pw_cli_opt_value(argc, argv, i, "--peer-port", NULL, &v)) {
		cl->peer_port = strtoull(v, &end, 10);
		if (!*v || *end || cl->peer_port > 65535) {
			pw_cli_fatal("invalid value for --peer-port: '%s'", v);
			return -1;
		}
		return 1;
	}
	if (pw_cli_opt_value(argc, argv, i, "--replicas", NULL, &v)) {
		cl->replicas = strtoull(v, &end, 10);
		if (!*v || *end || !cl->replicas || cl->replicas > 16) {
			pw_cli_fatal("invalid value for --replicas: '%s' (1 to 16)", v);
			return -1;
		}
		return 1;
	}
	return 0;
}

static void log_msg(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "%s\n", msg);
}

/* The peer endpoint's /healthz: whether this node reaches etcd (the peer
 * status its partitioned peers ask for). cl->c comes after the endpoint. */
static int peer_status(void *ctx, char *why, size_t cap)
{
	struct pw_cli_cluster *cl = ctx;
	struct pw_cluster *c = __atomic_load_n(&cl->c, __ATOMIC_ACQUIRE);

	if (!c) {
		snprintf(why, cap, "starting");
		return 1;
	}
	return pw_cluster_peer_status(c, why, cap);
}

int pw_cli_cluster_start(struct pw_cli_cluster *cl, struct pw_serve_opts *o, struct pw_error *err)
{
	struct pw_serve_opts po;
	struct pw_cluster_opts co;
	struct pw_cluster *c = NULL;
	char adv[300];
	int rc;

	if (!cl->node)
		return pw_error_set(err, PW_EINVAL, "--cluster needs --node=NAME");
	memset(&po, 0, sizeof(po));
	po.listen = cl->peer_listen ? cl->peer_listen : o->listen;
	po.port = (unsigned)cl->peer_port;
	po.base_path = o->base_path;
	po.threads = 2;
	po.max_jobs = o->max_jobs;
	po.timeout = o->timeout;
	po.max_body = o->max_body;
	po.no_metrics = 1;
	po.no_browse = 1;
	po.error_log = o->error_log;
	po.ref_store = pw_cluster_peer_store();
	po.allow_push = 1;
	po.allow_any_want = 1;
	po.not_ready = peer_status;
	po.hooks_ctx = cl;
	if ((rc = pw_serve_start(&cl->peer, &po, err)))
		return pw_error_wrap(err, "peer endpoint");
	if (!cl->advertise) {
		snprintf(adv, sizeof(adv), "http://%s:%u", po.listen ? po.listen : "127.0.0.1",
		         pw_serve_port(cl->peer));
		cl->advertise = adv;
	}
	memset(&co, 0, sizeof(co));
	co.etcd = cl->etcd;
	co.node = cl->node;
	co.advertise = cl->advertise;
	co.base_path = o->base_path;
	co.replicas = (unsigned)cl->replicas;
	co.log = log_msg;
	/* tests: a full catch-up pass this rarely, to see that the watch
	 * alone brings changes */
	if (getenv("PACKWIRE_TEST_CLUSTER_FULL_PASS_MS"))
		co.full_pass_ms =
		        (unsigned)strtoul(getenv("PACKWIRE_TEST_CLUSTER_FULL_PASS_MS"), NULL, 10);
	if ((rc = pw_cluster_start(&c, &co, err))) {
		pw_serve_stop(cl->peer, 0);
		cl->peer = NULL;
		return rc;
	}
	__atomic_store_n(&cl->c, c, __ATOMIC_RELEASE);
	fprintf(stderr, "packwire serve: cluster node %s, peer endpoint %s\n", cl->node,
	        cl->advertise);
	if (cl->advertise == adv)
		cl->advertise = NULL;
	o->ref_store = pw_cluster_store(cl->c);
	o->not_ready = pw_cluster_not_ready;
	o->metrics = pw_cluster_metrics;
	o->hooks_ctx = cl->c;
	return 0;
}

void pw_cli_cluster_stop(struct pw_cli_cluster *cl)
{
	/* the peer endpoint first: its /healthz reads the cluster */
	pw_serve_stop(cl->peer, 5);
	pw_cluster_stop(cl->c);
	cl->c = NULL;
	cl->peer = NULL;
}

int pw_cli_cluster_ssh_option(struct pw_cli_cluster *cl, int argc, char **argv, int *i)
{
	const char *a = argv[*i];
	int rc;

	if (!strncmp(a, "--peer-", 7)) {
		pw_cli_fatal("%s: only `packwire serve` has a peer endpoint", a);
		return -1;
	}
	if (pw_cli_opt_value(argc, argv, i, "--base-path", NULL, &cl->base_path))
		return 1;
	rc = pw_cli_cluster_option(cl, argc, argv, i);
	return rc;
}

int pw_cli_cluster_open(struct pw_cli_cluster *cl, struct pw_repo *repo,
                        const struct pw_ref_store **store, struct pw_error *err)
{
	struct pw_cluster_opts co;
	char base[PATH_MAX];
	char *slash;
	int rc;

	if (!cl->node)
		return pw_error_set(err, PW_EINVAL, "--cluster needs --node=NAME");
	if (!cl->base_path) {
		/* the directory that holds the repository (x.git, or x of x/.git) */
		if (!realpath(pw_repo_git_dir(repo), base))
			return pw_error_set(err, PW_EIO, "cannot resolve %s: %s",
			                    pw_repo_git_dir(repo), strerror(errno));
		slash = strrchr(base, '/');
		if (slash && !strcmp(slash, "/.git")) {
			*slash = '\0';
			slash = strrchr(base, '/');
		}
		if (!slash)
			return pw_error_set(err, PW_EINVAL, "%s has no parent directory", base);
		if (slash == base)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	memset(&co, 0, sizeof(co));
	co.etcd = cl->etcd;
	co.node = cl->node;
	co.advertise = cl->advertise;
	co.base_path = cl->base_path ? cl->base_path : base;
	co.replicas = (unsigned)cl->replicas;
	co.transient = 1;
	co.log = log_msg;
	if ((rc = pw_cluster_start(&cl->c, &co, err)))
		return rc;
	*store = pw_cluster_store(cl->c);
	return 0;
}
