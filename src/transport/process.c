/* Process transports: the server is a child process (upload-pack run
 * locally through the shell, or ssh running it on another host) and the
 * session is its stdin/stdout. */
#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/transport.h"
#include "transport/transport-priv.h"

extern char **environ;

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

static int env_dropped(const char *entry, int local)
{
	size_t i;

	for (i = 0; local_repo_env[i]; i++) {
		size_t n = strlen(local_repo_env[i]);

		if (!local && strcmp(local_repo_env[i], "GIT_PROTOCOL"))
			continue;
		if (!strncmp(entry, local_repo_env[i], n) && entry[n] == '=')
			return 1;
	}
	return 0;
}

/* environ minus what the server must not inherit, plus GIT_PROTOCOL. */
static char **make_env(int local, int version, char *proto_buf, size_t proto_sz)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (n = 0; environ[n]; n++)
		if (!env_dropped(environ[n], local))
			env[k++] = environ[n];
	if (version > 0) {
		snprintf(proto_buf, proto_sz, "GIT_PROTOCOL=version=%d", version);
		env[k++] = proto_buf;
	}
	env[k] = NULL;
	return env;
}

static int proc_finish(struct pw_conn *c, int *status, struct pw_error *err)
{
	int st = 0;
	pid_t r;

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
	do
		r = waitpid(pw_conn__impl(c)->pid, &st, 0);
	while (r < 0 && errno == EINTR);
	pw_conn__impl(c)->pid = 0;
	if (r < 0)
		return pw_error_set(err, PW_EIO, "waitpid: %s", strerror(errno));
	if (WIFEXITED(st))
		pw_conn__impl(c)->status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		pw_conn__impl(c)->status = 128 + WTERMSIG(st);
	else
		pw_conn__impl(c)->status = 255;
	if (status)
		*status = pw_conn__impl(c)->status;
	return 0;
}

static const struct pw_conn_ops proc_ops = {
        .finish = proc_finish,
};

/* Start argv with stdin/stdout on pipes. */
static int spawn(struct pw_conn *c, char *const *argv, int local, int version, struct pw_error *err)
{
	int to_child[2] = {-1, -1}, from_child[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	char proto[64];
	char **env;
	pid_t pid;
	int rc;

	if (pipe2(to_child, O_CLOEXEC) || pipe2(from_child, O_CLOEXEC)) {
		rc = pw_error_set(err, PW_EIO, "pipe: %s", strerror(errno));
		goto fail;
	}
	env = make_env(local, version, proto, sizeof(proto));
	if (!env) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, to_child[0], 0);
	posix_spawn_file_actions_adddup2(&fa, from_child[1], 1);
	rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	free(env);
	if (rc) {
		rc = pw_error_set(err, PW_EIO, "cannot run %s: %s", argv[0], strerror(rc));
		goto fail;
	}
	close(to_child[0]);
	close(from_child[1]);
	pw_conn__impl(c)->pid = pid;
	c->out_fd = to_child[1];
	c->in_fd = from_child[0];
	pw_conn__impl(c)->ops = &proc_ops;
	return 0;
fail:
	if (to_child[0] >= 0)
		close(to_child[0]);
	if (to_child[1] >= 0)
		close(to_child[1]);
	if (from_child[0] >= 0)
		close(from_child[0]);
	if (from_child[1] >= 0)
		close(from_child[1]);
	return rc;
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
