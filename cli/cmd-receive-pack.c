/* packwire receive-pack [--stateless-rpc] [--advertise-refs]
 * [--http-backend-info-refs] [--timeout=<n>] [--object-format=<algo>]
 * <directory>: the server side of git push, as git receive-pack
 * (stdin/stdout; GIT_PROTOCOL=version=1 adds "version 1"); with
 * --object-format naming the other algorithm, a push from a client of that
 * algorithm into a repository with its compat map (docs/compat-map.md). Hook output and errors go
 * to the client on side-band 2 when it asked for it, else to stderr.
 * --cluster=etcd:URL --node=NAME: the repository is a cluster node's copy
 * (docs/cluster.md, "ssh"): the push goes through etcd as a node's. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "client-util.h"
#include "cluster-node.h"
#include "cmds.h"
#include "packwire/env.h"
#include "packwire/packwire.h"
#include "packwire/receive.h"
#include "trace2.h"

static const char usage_str[] =
        "packwire receive-pack [--object-format=(sha1|sha256)]\n"
        "                      [--cluster=etcd:URL[,URL...] --node=NAME [--advertise=URL]\n"
        "                       [--replicas=N] [--base-path=DIR]] <git-dir>";

/* PACKWIRE_TEST_COMPAT_KILL=N: SIGKILL at the Nth compat map publication
 * (a test of crash safety; as compat build's). */
struct kill_hook {
	long at, seen;
};

static void before_publish(void *data, const char *tmp, const char *final)
{
	struct kill_hook *k = data;

	(void)tmp;
	(void) final;
	if (k->at > 0 && ++k->seen == k->at)
		kill(getpid(), SIGKILL);
}

int cmd_receive_pack(int argc, char **argv)
{
	struct pw_receive_opts opts;
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	struct pw_repo_opts ro = {0};
	const char *dir = NULL, *proto = getenv("GIT_PROTOCOL");
	struct pw_cli_trace2 *trace;
	char sid[128];
	const char *kill_env = getenv("PACKWIRE_TEST_COMPAT_KILL");
	struct kill_hook k = {kill_env ? atol(kill_env) : 0, 0};
	struct pw_cli_cluster cl;
	int i, rc, crc;

	memset(&cl, 0, sizeof(cl));
	pw_receive_opts_init(&opts);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--stateless-rpc"))
			opts.stateless_rpc = 1;
		else if (!strcmp(a, "--advertise-refs") || !strcmp(a, "--http-backend-info-refs"))
			opts.advertise_refs = 1;
		else if (!strncmp(a, "--timeout=", 10))
			opts.timeout_ms = atoi(a + 10) * 1000;
		else if (!strncmp(a, "--object-format=", 16))
			opts.object_format = a + 16;
		else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
			; /* progress is not sent anyway */
		else if (!strcmp(a, "--"))
			continue;
		else if ((crc = pw_cli_cluster_ssh_option(&cl, argc, argv, &i)) < 0)
			return 129;
		else if (crc)
			continue;
		else if (a[0] == '-')
			return pw_cli_unknown_option(a, usage_str);
		else if (!dir)
			dir = a;
		else
			return pw_cli_usage(usage_str);
	}
	if (!dir)
		return pw_cli_usage(usage_str);
	if (!cl.etcd && (cl.node || cl.base_path || cl.replicas || cl.advertise))
		return pw_cli_fatal(
		        "--node, --advertise, --replicas and --base-path need --cluster");
	/* GIT_USER_AGENT replaces the agent string, as with git (and upload-pack) */
	opts.agent = getenv("GIT_USER_AGENT");
	/* the reflog's committer, as Git's ident reads it */
	opts.committer_name = getenv("GIT_COMMITTER_NAME");
	opts.committer_email = getenv("GIT_COMMITTER_EMAIL");
	opts.committer_date = getenv("GIT_COMMITTER_DATE");
	opts.default_email = getenv("EMAIL");
	opts.before_map_publish = before_publish;
	opts.before_map_publish_data = &k;
	if (proto && strstr(proto, "version=1"))
		opts.protocol_version = 1;
	signal(SIGPIPE, SIG_IGN);
	ro.config = &pw_cli_env()->config;
	if (pw_repo_open_exact_opts(&repo, dir, &ro, &err))
		return pw_cli_fatal("'%s' does not appear to be a git repository", dir);
	/* in a cluster: refs compared-and-swapped in etcd, objects copied to
	 * peers before the report (docs/cluster.md, "ssh") */
	if (cl.etcd && pw_cli_cluster_open(&cl, repo, &opts.ref_store, &err)) {
		pw_repo_free(repo);
		return pw_cli_fatal("%s", err.msg);
	}
	pw_cli_sid_make(sid, sizeof(sid));
	opts.session_id = sid;
	opts.service_path = dir;
	trace = pw_cli_trace2_open(sid);
	opts.trace_data = pw_cli_trace2_data;
	opts.trace_ctx = trace;
	rc = pw_receive_pack(repo, 0, 1, &opts, &err);
	pw_cli_trace2_close(trace);
	pw_cli_cluster_stop(&cl);
	pw_repo_free(repo);
	if (rc)
		return pw_cli_fatal("%s", err.msg);
	return 0;
}
