/* packwire remote-http <remote> [<url>] (also remote-https): stock git's
 * git-remote-http(s), a remote helper (gitremote-helpers(7)) over packwire's
 * client. The helper itself is the library's pw_helper_serve
 * (src/client/helper-serve.c); this front reads the arguments and the
 * environment, wires stdin and stdout, renders what the library reports
 * and turns an error into "fatal: ..." and exit code 128. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-util.h"
#include "cmds.h"
#include "push-sign.h"
#include "trace-packet.h"
#include "trace2.h"
#include "packwire/packwire.h"

static const char usage_str[] = "packwire remote-http <remote> [<url>]";

struct front {
	struct pw_cli_trace_packet *trace;
	struct pw_cli_trace2 *trace2;
};

/* $GIT_DIR (or the repository around the working directory), never a
 * message here: the library decides what a missing one means. */
static int open_repo(void *ctx, struct pw_repo **out, struct pw_error *err)
{
	const char *gd = getenv("GIT_DIR");
	int rc = pw_repo_discover(out, gd, ".", pw_cli_repo_opts(), err);

	(void)ctx;
	if (rc == PW_ENOTFOUND && !(gd && *gd)) {
		*out = NULL;
		return 0;
	}
	if (rc)
		*out = NULL;
	return rc;
}

/* The version git-remote-http would ask for: protocol.version when it is
 * set, else GIT_TEST_PROTOCOL_VERSION (Git's test suite), else 2, as in Git. */
static int wanted_version(void *ctx, const struct pw_repo *repo)
{
	const char *v = getenv("GIT_TEST_PROTOCOL_VERSION");

	(void)ctx;
	if (pw_config_get_entry(pw_cli_config(repo), "protocol.version"))
		return pw_cli_protocol_version(repo);
	if (v && (!strcmp(v, "0") || !strcmp(v, "1") || !strcmp(v, "2")))
		return v[0] - '0';
	return 2;
}

static void message(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
}

static void trace_packet(void *ctx, int write, const char *data, size_t len)
{
	const struct front *f = ctx;

	pw_cli_trace_packet(f->trace, write, data, len);
}

static void trace_who(void *ctx, const char *who)
{
	const struct front *f = ctx;

	pw_cli_trace_packet_who(f->trace, who);
}

/* The pack a push sent: its object count as Git's pack-objects reports it
 * to trace2 (Git's t5549 reads it to see what push.negotiate saved). */
static void pack_done(void *ctx, const struct pw_pack_write_stats *st)
{
	const struct front *f = ctx;
	char n[16];

	snprintf(n, sizeof(n), "%u", (unsigned)st->written);
	pw_cli_trace2_data(f->trace2, "pack-objects", "write_pack_file/wrote", n);
}

int cmd_remote_http(int argc, char **argv)
{
	struct pw_helper_serve_opts o;
	struct front f = {0};
	struct pw_error err = {0};
	char sid[96];
	int rc;

	if (argc < 2 || argc > 3 || !strcmp(argv[1], "-h"))
		return pw_cli_usage(usage_str);
	memset(&o, 0, sizeof(o));
	o.url = argc == 3 ? argv[2] : argv[1];
	o.in_fd = 0;
	o.out_fd = 1;
	o.ctx = &f;
	o.open_repo = open_repo;
	o.config = pw_cli_config(NULL);
	o.protocol_version = wanted_version;
	o.ssh = pw_cli_env()->ssh;
	o.protocol = &pw_cli_env()->protocol;
	o.http = pw_cli_env()->http;
	pw_cli_report(&o.report, NULL);
	o.message = message;
	f.trace = pw_cli_trace_packet_open("git");
	if (f.trace) {
		o.trace_packet = trace_packet;
		o.trace_who = trace_who;
	}
	o.push_pusher = pw_cli_push_pusher;
	o.push_sign = pw_cli_push_sign;
	pw_cli_sid_make(sid, sizeof(sid));
	f.trace2 = pw_cli_trace2_open(sid);
	o.pack_done = pack_done;
	pw_cli_client_signals();
	/* the answers go through fd 1 unbuffered: nothing of ours waits in stdio */
	fflush(stdout);
	rc = pw_helper_serve(&o, &err) ? pw_cli_fatal("%s", err.msg) : 0;
	pw_cli_trace_packet_close(f.trace);
	pw_cli_trace2_close(f.trace2);
	return rc;
}
