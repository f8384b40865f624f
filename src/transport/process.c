/* Process transports: the server is a child process (upload-pack run
 * locally through the shell, or ssh running it on another host) and the
 * session is its stdin/stdout. */
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/transport.h"
#include "transport/transport-priv.h"
#include "util/spawn.h"

/* Variables that describe the local repository: the server must not see them
 * (Git's local_repo_env). */
static const char *const local_repo_env[] = {
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_OBJECT_DIRECTORY",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_IMPLICIT_WORK_TREE",
        "GIT_GRAFT_FILE",
        "GIT_INDEX_FILE",
        "GIT_NO_REPLACE_OBJECTS",
        "GIT_REPLACE_REF_BASE",
        "GIT_PREFIX",
        "GIT_SHALLOW_FILE",
        "GIT_COMMON_DIR",
        "GIT_PROTOCOL",
        NULL,
};

static int proc_finish(struct pw_conn *c, int *status, struct pw_error *err)
{
	int rc;

	if (c->out_fd >= 0)
		close(c->out_fd);
	c->out_fd = -1;
	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = -1;
	if (pw_conn__impl(c)->pid <= 0) {
		if (status)
			*status = pw_conn__impl(c)->status;
		return 0;
	}
	rc = pw_spawn_wait(pw_conn__impl(c)->pid, &pw_conn__impl(c)->status, NULL, err);
	pw_conn__impl(c)->pid = 0;
	if (rc)
		return rc;
	if (status)
		*status = pw_conn__impl(c)->status;
	return 0;
}

static const struct pw_conn_ops proc_ops = {
        .finish = proc_finish,
};

/* Start argv with stdin/stdout on pipes, in our environment without what
 * the server must not inherit (all of local_repo_env when local, else
 * GIT_PROTOCOL), plus GIT_PROTOCOL=version=<version> when version > 0. */
static int spawn(struct pw_conn *c, char *const *argv, int local, int version, struct pw_error *err)
{
	const char *env[sizeof(local_repo_env) / sizeof(local_repo_env[0]) + 1];
	struct pw_spawn sp;
	char proto[64];
	size_t n = 0, i;
	int rc;

	for (i = 0; local_repo_env[i]; i++)
		if (local || !strcmp(local_repo_env[i], "GIT_PROTOCOL"))
			env[n++] = local_repo_env[i];
	if (version > 0) {
		snprintf(proto, sizeof(proto), "GIT_PROTOCOL=version=%d", version);
		env[n++] = proto;
	}
	env[n] = NULL;
	memset(&sp, 0, sizeof(sp));
	sp.argv = (const char *const *)argv;
	sp.flags = PW_SPAWN_PATH | PW_SPAWN_PIPE_IN | PW_SPAWN_PIPE_OUT;
	sp.env = env;
	if ((rc = pw_spawn_start(&sp, err)))
		return rc;
	pw_conn__impl(c)->pid = sp.pid;
	c->out_fd = sp.in_fd;
	c->in_fd = sp.out_fd;
	pw_conn__impl(c)->ops = &proc_ops;
	return 0;
}

int pw_transport__local(struct pw_conn *c, const char *path, const char *cmd, int version,
                        struct pw_error *err)
{
	struct pw_buf script = PW_BUF_INIT;
	char *argv[6];
	int rc;

	/* sh -c 'CMD "$@"' CMD PATH: CMD may carry options, as with Git */
	if (pw_buf_adds(&script, cmd) || pw_buf_adds(&script, " \"$@\"")) {
		pw_buf_free(&script);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = script.data;
	argv[3] = (char *)cmd;
	argv[4] = (char *)path;
	argv[5] = NULL;
	rc = spawn(c, argv, 1, version, err);
	pw_buf_free(&script);
	return rc;
}

enum ssh_variant { SSH_OPENSSH, SSH_PLINK, SSH_TORTOISE, SSH_SIMPLE };

static enum ssh_variant variant_of(const char *prog, size_t len, const char *v)
{
	const char *base = prog, *p;
	size_t n;

	if (v && *v) {
		if (!strcmp(v, "ssh"))
			return SSH_OPENSSH;
		if (!strcmp(v, "plink") || !strcmp(v, "putty"))
			return SSH_PLINK;
		if (!strcmp(v, "tortoiseplink"))
			return SSH_TORTOISE;
		return SSH_SIMPLE;
	}
	for (p = prog; p < prog + len; p++)
		if (*p == '/')
			base = p + 1;
	n = (size_t)(prog + len - base);
	if (n > 4 && !strncasecmp(base + n - 4, ".exe", 4))
		n -= 4;
	if (n == 3 && !strncmp(base, "ssh", 3))
		return SSH_OPENSSH;
	if ((n == 5 && !strncasecmp(base, "plink", 5)))
		return SSH_PLINK;
	if (n == 13 && !strncasecmp(base, "tortoiseplink", 13))
		return SSH_TORTOISE;
	return SSH_SIMPLE;
}

int pw_transport__ssh(struct pw_conn *c, const struct pw_url *u, const char *cmd, int version,
                      const struct pw_ssh_opts *so, struct pw_error *err)
{
	const char *ssh_cmd = so->command, *ssh = so->program;
	struct pw_buf remote = PW_BUF_INIT, script = PW_BUF_INIT, host = PW_BUF_INIT;
	enum ssh_variant var;
	char *argv[16];
	int n = 0, rc;

	if (pw_buf_adds(&remote, cmd) || pw_buf_addch(&remote, ' ') ||
	    pw_sq_quote(&remote, u->path) ||
	    (u->user && (pw_buf_adds(&host, u->user) || pw_buf_addch(&host, '@'))) ||
	    pw_buf_adds(&host, u->host)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (ssh_cmd && *ssh_cmd) {
		size_t w = strcspn(ssh_cmd, " \t");

		var = variant_of(ssh_cmd, w, so->variant);
		if (pw_buf_adds(&script, ssh_cmd) || pw_buf_adds(&script, " \"$@\"")) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto out;
		}
		argv[n++] = "sh";
		argv[n++] = "-c";
		argv[n++] = script.data;
		argv[n++] = (char *)ssh_cmd;
	} else {
		const char *prog = ssh && *ssh ? ssh : "ssh";

		var = variant_of(prog, strlen(prog), so->variant);
		argv[n++] = (char *)prog;
	}
	/* a "simple" ssh cannot pass GIT_PROTOCOL on: speak v0, as git does */
	if (var == SSH_SIMPLE)
		version = 0;
	if (var == SSH_OPENSSH && version > 0) {
		argv[n++] = "-o";
		argv[n++] = "SendEnv=GIT_PROTOCOL";
	}
	if (var == SSH_TORTOISE)
		argv[n++] = "-batch";
	if (u->port) {
		if (var == SSH_SIMPLE) {
			rc = pw_error_set(err, PW_EUNSUPPORTED,
			                  "ssh variant 'simple' does not support setting port");
			goto out;
		}
		argv[n++] = var == SSH_OPENSSH ? "-p" : "-P";
		argv[n++] = u->port;
	}
	argv[n++] = host.data;
	argv[n++] = remote.data;
	argv[n] = NULL;
	rc = spawn(c, argv, 0, version, err);
out:
	pw_buf_free(&remote);
	pw_buf_free(&script);
	pw_buf_free(&host);
	return rc;
}

int pw_transport__spawn(struct pw_conn *c, char *const *argv, struct pw_error *err)
{
	return spawn(c, argv, 0, 0, err);
}
