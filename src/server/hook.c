/* Hook processes: see hook.h. Everything the child needs (argv, envp) is
 * built before fork, so the child only calls dup2/chdir/execve. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/hook.h"
#include "util/fs.h"

extern char **environ;

char *pw_hook_find(const char *hooks_dir, const char *name)
{
	char *p = pw_path_join(hooks_dir, name);
	struct stat st;

	if (!p)
		return NULL;
	if (stat(p, &st) || !S_ISREG(st.st_mode) || access(p, X_OK)) {
		free(p);
		return NULL;
	}
	return p;
}

static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

/* environ minus the names set or unset in extra, plus extra's settings. */
static char **build_env(const char *const *extra)
{
	size_t n = 0, m = 0, i, j, k = 0;
	char **env;

	while (environ[n])
		n++;
	while (extra && extra[m])
		m++;
	env = calloc(n + m + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (i = 0; i < n; i++) {
		size_t nl = name_len(environ[i]);
		int drop = 0;

		for (j = 0; j < m && !drop; j++)
			drop = name_len(extra[j]) == nl && !memcmp(extra[j], environ[i], nl);
		if (!drop)
			env[k++] = environ[i];
	}
	for (j = 0; j < m; j++)
		if (strchr(extra[j], '='))
			env[k++] = (char *)extra[j];
	env[k] = NULL;
	return env;
}

int pw_hook_run(const struct pw_hook_run *h, int *status, struct pw_error *err)
{
	int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1};
	size_t nargs = 0, i, off = 0;
	char **argv = NULL, **envp = NULL;
	char buf[8192];
	pid_t pid;
	int rc = 0, st;

	*status = -1;
	while (h->args && h->args[nargs])
		nargs++;
	argv = calloc(nargs + 2, sizeof(*argv));
	envp = build_env(h->env);
	if (!argv || !envp) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	argv[0] = (char *)h->path;
	for (i = 0; i < nargs; i++)
		argv[i + 1] = (char *)h->args[i];
	if (pipe2(in_pipe, O_CLOEXEC) || pipe2(out_pipe, O_CLOEXEC)) {
		rc = pw_error_set(err, PW_EIO, "cannot create pipes for hook %s: %s", h->path,
		                  strerror(errno));
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		rc = pw_error_set(err, PW_EIO, "cannot run hook %s: %s", h->path, strerror(errno));
		goto out;
	}
	if (!pid) {
		if (dup2(in_pipe[0], 0) < 0 || dup2(out_pipe[1], 1) < 0 || dup2(out_pipe[1], 2) < 0)
			_exit(127);
		if (h->cwd && chdir(h->cwd))
			_exit(127);
		/* a bare program name is looked up in PATH (by libc) */
		if (strchr(h->path, '/'))
			execve(h->path, argv, envp);
		else
			execvpe(h->path, argv, envp);
		_exit(126);
	}
	close(in_pipe[0]);
	close(out_pipe[1]);
	in_pipe[0] = out_pipe[1] = -1;
	if (!h->input_len) {
		close(in_pipe[1]);
		in_pipe[1] = -1;
	} else {
		fcntl(in_pipe[1], F_SETFL, fcntl(in_pipe[1], F_GETFL) | O_NONBLOCK);
	}
	/* Feed stdin and drain the output together: a hook that writes a lot
	 * before reading must not deadlock against us. */
	while (out_pipe[0] >= 0) {
		struct pollfd p[2];
		int np = 0, wi = -1;

		p[np].fd = out_pipe[0];
		p[np].events = POLLIN;
		np++;
		if (in_pipe[1] >= 0) {
			p[np].fd = in_pipe[1];
			p[np].events = POLLOUT;
			wi = np++;
		}
		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (wi >= 0 && (p[wi].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t w = write(in_pipe[1], h->input + off, h->input_len - off);

			if (w > 0)
				off += (size_t)w;
			/* EPIPE: the hook did not read its input; that is its choice */
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || off == h->input_len) {
				close(in_pipe[1]);
				in_pipe[1] = -1;
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r = read(out_pipe[0], buf, sizeof(buf));

			if (r > 0) {
				if (h->output)
					h->output(h->ctx, buf, (size_t)r);
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(out_pipe[0]);
				out_pipe[0] = -1;
			}
		}
	}
	if (in_pipe[1] >= 0) {
		close(in_pipe[1]);
		in_pipe[1] = -1;
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR) {
			rc = pw_error_set(err, PW_EIO, "waiting for hook %s: %s", h->path,
			                  strerror(errno));
			goto out;
		}
	}
	if (WIFEXITED(st))
		*status = WEXITSTATUS(st);
	else
		*status = 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
out:
	for (i = 0; i < 2; i++) {
		if (in_pipe[i] >= 0)
			close(in_pipe[i]);
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
	}
	free(argv);
	free(envp);
	return rc;
}

int pw_hook_spawn(const struct pw_hook_run *h, int *pid, int *in, int *out, int *err_fd,
                  struct pw_error *err)
{
	int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	size_t nargs = 0, i;
	char **argv = NULL, **envp = NULL;
	pid_t child;
	int rc = 0;

	*pid = -1;
	*in = *out = *err_fd = -1;
	while (h->args && h->args[nargs])
		nargs++;
	argv = calloc(nargs + 2, sizeof(*argv));
	envp = build_env(h->env);
	if (!argv || !envp) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	argv[0] = (char *)h->path;
	for (i = 0; i < nargs; i++)
		argv[i + 1] = (char *)h->args[i];
	for (i = 0; i < 3; i++)
		if (pipe2(p[i], O_CLOEXEC)) {
			rc = pw_error_set(err, PW_EIO, "cannot create pipes for hook %s: %s",
			                  h->path, strerror(errno));
			goto out;
		}
	child = fork();
	if (child < 0) {
		rc = pw_error_set(err, PW_EIO, "cannot run hook %s: %s", h->path, strerror(errno));
		goto out;
	}
	if (!child) {
		if (dup2(p[0][0], 0) < 0 || dup2(p[1][1], 1) < 0 || dup2(p[2][1], 2) < 0)
			_exit(127);
		if (h->cwd && chdir(h->cwd))
			_exit(127);
		if (strchr(h->path, '/'))
			execve(h->path, argv, envp);
		else
			execvpe(h->path, argv, envp);
		_exit(126);
	}
	*pid = (int)child;
	*in = p[0][1];
	*out = p[1][0];
	*err_fd = p[2][0];
	p[0][1] = p[1][0] = p[2][0] = -1;
	fcntl(*in, F_SETFL, fcntl(*in, F_GETFL) | O_NONBLOCK);
out:
	for (i = 0; i < 3; i++) {
		if (p[i][0] >= 0)
			close(p[i][0]);
		if (p[i][1] >= 0)
			close(p[i][1]);
	}
	free(argv);
	free(envp);
	return rc;
}
