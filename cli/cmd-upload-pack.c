/* packwire upload-pack [--strict] [--timeout=<n>] [--stateless-rpc]
 * [--advertise-refs] [--object-format=<algo>] <dir>: serve a fetch on stdin/stdout the way
 * `git upload-pack` does, in the protocol version GIT_PROTOCOL asks for.
 * --cluster=etcd:URL --node=NAME: the repository is a cluster node's copy
 * (docs/cluster.md, "ssh"): its refs come from etcd first.
 * Errors go to the client (ERR packet) and to stderr as "fatal: ...", exit 128. */
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
#include "packwire/server.h"
#include "trace-packet.h"
#include "trace2.h"

static const char usage_text[] =
        "packwire upload-pack [--[no-]strict] [--timeout=<n>] [--stateless-rpc]\n"
        "                     [--advertise-refs] [--object-format=(sha1|sha256)]\n"
        "                     [--cluster=etcd:URL[,URL...] --node=NAME [--advertise=URL]\n"
        "                      [--replicas=N] [--base-path=DIR]] <directory>";

int cmd_upload_pack(int argc, char **argv)
{
	struct pw_cli_trace2 *trace;
	struct pw_cli_trace_packet *ptrace;
	struct pw_cli_trace_packet *ctrace;
	char sid[96];
	struct pw_upload_pack_opts opts;
	struct pw_repo *repo;
	struct pw_error err;
	struct pw_repo_opts ro = {0};
	const char *dir = NULL;
	struct pw_cli_cluster cl;
	int i, rc, crc;

	memset(&cl, 0, sizeof(cl));
	pw_upload_pack_opts_init(&opts);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--strict"))
			opts.strict = 1;
		else if (!strcmp(a, "--no-strict"))
			opts.strict = 0;
		else if (!strncmp(a, "--timeout=", 10)) {
			char *end;
			long v = strtol(a + 10, &end, 10);

			if (*end || v < 0 || v > 1000000)
				return pw_cli_usage(usage_text);
			opts.timeout = (int)v;
		} else if (!strcmp(a, "--stateless-rpc"))
			opts.stateless_rpc = 1;
		else if (!strcmp(a, "--advertise-refs") || !strcmp(a, "--http-backend-info-refs"))
			opts.advertise_refs = 1;
		else if (!strncmp(a, "--object-format=", 16))
			opts.object_format = a + 16; /* served through the compat map */
		else if (!strcmp(a, "--"))
			continue;
		else if ((crc = pw_cli_cluster_ssh_option(&cl, argc, argv, &i)) < 0)
			return 129;
		else if (crc)
			continue;
		else if (a[0] == '-' && a[1])
			return pw_cli_unknown_option(a, usage_text);
		else if (!dir)
			dir = a;
		else
			return pw_cli_usage(usage_text);
	}
	if (!dir)
		return pw_cli_usage(usage_text);
	if (!cl.etcd && (cl.node || cl.base_path || cl.replicas || cl.advertise))
		return pw_cli_fatal(
		        "--node, --advertise, --replicas and --base-path need --cluster");
	opts.version = pw_protocol_version_from_env(getenv("GIT_PROTOCOL"));
	/* Git lets GIT_USER_AGENT replace its agent string; so do we */
	opts.agent = getenv("GIT_USER_AGENT");
	opts.ref_namespace = getenv("GIT_NAMESPACE");
	if (opts.agent && (!*opts.agent || strlen(opts.agent) > 60 || strpbrk(opts.agent, " \n")))
		opts.agent = NULL;

	/* the config layers of the environment; no work tree, no ceilings */
	ro.config = &pw_cli_env()->config;
	/* --strict: exactly this directory is the git dir (as Git's enter_repo) */
	if (opts.strict)
		rc = pw_repo_is_git_dir(dir) ? pw_repo_open_gitdir_opts(&repo, dir, &ro, &err)
		                             : PW_ENOTFOUND;
	else
		rc = pw_repo_open_exact_opts(&repo, dir, &ro, &err);
	if (rc)
		return pw_cli_fatal("'%s' does not appear to be a git repository", dir);
	/* in a cluster: refs from etcd, missing objects from a peer, first */
	if (cl.etcd && pw_cli_cluster_open(&cl, repo, &opts.ref_store, &err)) {
		pw_repo_free(repo);
		return pw_cli_fatal("%s", err.msg);
	}

	/* a client hanging up must not kill us with SIGPIPE: writes report EPIPE */
	signal(SIGPIPE, SIG_IGN);
	pw_cli_sid_make(sid, sizeof(sid));
	opts.session_id = sid;
	trace = pw_cli_trace2_open(sid);
	opts.trace_data = pw_cli_trace2_data;
	opts.trace_ctx = trace;
	if ((ptrace = pw_cli_trace_packet_open("upload-pack"))) {
		opts.trace_packet = pw_cli_trace_packet;
		opts.trace_packet_ctx = ptrace;
	}
	if ((ctrace = pw_cli_trace_open())) {
		opts.trace_command = pw_cli_trace_line;
		opts.trace_command_ctx = ctrace;
	}
	opts.pack_cache = pw_cli_pack_cache_from_config();
	rc = pw_upload_pack(repo, 0, 1, &opts, &err);
	pw_pack_cache_free(opts.pack_cache);
	pw_cli_trace_packet_close(ctrace);
	pw_cli_trace_packet_close(ptrace);
	pw_cli_trace2_close(trace);
	pw_cli_cluster_stop(&cl);
	pw_repo_free(repo);
	if (rc)
		return pw_cli_fatal("%s", err.msg);
	return 0;
}
