/* Running a program: see spawn.h. Everything the child needs (argv, the
 * environment, the descriptor moves) is built here; posix_spawn does the
 * rest, so nothing runs between fork and exec in our address space. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/spawn.h"

/* The one reader of the process environment for children (the lint allows
 * it here only): the library never changes it. */
extern char **environ;

static size_t name_len(const char *kv)
{
	const char *eq = strchr(kv, '=');

	return eq ? (size_t)(eq - kv) : strlen(kv);
}

static int same_name(const char *a, const char *b)
{
	size_t n = name_len(a);

	return n == name_len(b) && !memcmp(a, b, n);
}

/* Whether an edit in env[from..] names the variable of kv. */
static int edited(const char *const *env, size_t from, const char *kv)
{
	for (; env && env[from]; from++)
		if (same_name(env[from], kv))
			return 1;
	return 0;
}

/* The child's environment (an array of borrowed strings, the array
 * malloc'd), or NULL when out of memory. */
static char **build_env(const struct pw_spawn *sp)
{
	const char *const *base = (const char *const *)environ;
	const char *const *edits = sp->env;
	size_t n = 0, m = 0, i, k = 0;
	char **env;

	if (sp->flags & PW_SPAWN_ENV_CLEAR)
		base = NULL;
	else if (sp->env_base)
		base = sp->env_base;
	while (base && base[n])
		n++;
	while (edits && edits[m])
		m++;
	if (!(env = calloc(n + m + 1, sizeof(*env))))
		return NULL;
	for (i = 0; i < n; i++)
		if (!edited(edits, 0, base[i]))
			env[k++] = (char *)base[i];
	/* a later edit of the same name wins */
	for (i = 0; i < m; i++)
		if (strchr(edits[i], '=') && !edited(edits, i + 1, edits[i]))
			env[k++] = (char *)edits[i];
	env[k] = NULL;
	return env;
}

struct move {
	int child, parent;
};

/* The descriptor moves into file actions. When a move's source is the
 * target of an earlier one, every source is first copied above all the
 * numbers involved, so that no move overwrites what a later one reads. */
static int add_moves(posix_spawn_file_actions_t *fa, const struct move *mv, size_t n)
{
	int clash = 0, top = 2, rc = 0;
	size_t i, j;

	for (i = 0; i < n; i++) {
		top = mv[i].child > top ? mv[i].child : top;
		top = mv[i].parent > top ? mv[i].parent : top;
		for (j = 0; j < i; j++)
			if (mv[j].child != mv[j].parent && mv[j].child == mv[i].parent)
				clash = 1;
	}
	if (!clash) {
		/* (a move onto itself clears close-on-exec: glibc does as POSIX says) */
		for (i = 0; !rc && i < n; i++)
			rc = posix_spawn_file_actions_adddup2(fa, mv[i].parent, mv[i].child);
		return rc;
	}
	for (i = 0; !rc && i < n; i++)
		if (mv[i].child != mv[i].parent)
			rc = posix_spawn_file_actions_adddup2(fa, mv[i].parent, top + 1 + (int)i);
	for (i = 0; !rc && i < n; i++) {
		int from = mv[i].child != mv[i].parent ? top + 1 + (int)i : mv[i].parent;

		rc = posix_spawn_file_actions_adddup2(fa, from, mv[i].child);
	}
	for (i = 0; !rc && i < n; i++)
		if (mv[i].child != mv[i].parent)
			rc = posix_spawn_file_actions_addclose(fa, top + 1 + (int)i);
	return rc;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int start_error(const struct pw_spawn *sp, const char *prog, int e, struct pw_error *err)
{
	if (e == ENOMEM)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (sp->dir)
		return pw_error_set(err, PW_EIO, "cannot run '%s' in '%s': %s", prog, sp->dir,
		                    strerror(e));
	return pw_error_set(err, PW_EIO, "cannot run '%s': %s", prog, strerror(e));
}

int pw_spawn_start(struct pw_spawn *sp, struct pw_error *err)
{
	const char *prog = sp->prog ? sp->prog : sp->argv ? sp->argv[0] : NULL;
	static const unsigned pipe_flag[3] = {PW_SPAWN_PIPE_IN, PW_SPAWN_PIPE_OUT,
	                                      PW_SPAWN_PIPE_ERR};
	int p[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct move *mv = NULL;
	char **env = NULL;
	size_t nmv = 0, i, j;
	pid_t pid;
	int rc = 0, e;

	sp->pid = -1;
	sp->in_fd = sp->out_fd = sp->err_fd = -1;
	sp->errnum = 0;
	if (!sp->argv || !sp->argv[0] || !prog || !*prog)
		return pw_error_set(err, PW_EINVAL, "cannot run a program without a name");
	for (i = 0; i < sp->nr_fds; i++) {
		int c = sp->fds[i].child;

		if (c < 0 || sp->fds[i].parent < 0 || (c < 3 && (sp->flags & pipe_flag[c])) ||
		    (c == 2 && (sp->flags & PW_SPAWN_ERR_TO_OUT)))
			return pw_error_set(err, PW_EINVAL, "cannot run '%s': bad descriptor map",
			                    prog);
		for (j = 0; j < i; j++)
			if (sp->fds[j].child == c)
				return pw_error_set(err, PW_EINVAL,
				                    "cannot run '%s': descriptor %d given twice",
				                    prog, c);
	}
	if ((sp->flags & PW_SPAWN_ERR_TO_OUT) && (sp->flags & PW_SPAWN_PIPE_ERR))
		return pw_error_set(err, PW_EINVAL,
		                    "cannot run '%s': stderr both piped and sent to stdout", prog);
	if (!(mv = calloc(sp->nr_fds + 4, sizeof(*mv))) || !(env = build_env(sp))) {
		free(mv);
		return start_error(sp, prog, ENOMEM, err);
	}
	for (i = 0; i < 3; i++) {
		if (!(sp->flags & pipe_flag[i]))
			continue;
		if (pipe2(p[i], O_CLOEXEC)) {
			e = errno;
			rc = pw_error_set(err, e == ENOMEM ? PW_ENOMEM : PW_EIO,
			                  "cannot create a pipe for '%s': %s", prog, strerror(e));
			goto out;
		}
		mv[nmv].child = (int)i;
		mv[nmv++].parent = p[i][i ? 1 : 0];
	}
	for (i = 0; i < sp->nr_fds; i++) {
		mv[nmv].child = sp->fds[i].child;
		mv[nmv++].parent = sp->fds[i].parent;
	}
	if ((e = posix_spawn_file_actions_init(&fa))) {
		rc = start_error(sp, prog, e, err);
		goto out;
	}
	if ((e = posix_spawnattr_init(&attr))) {
		posix_spawn_file_actions_destroy(&fa);
		rc = start_error(sp, prog, e, err);
		goto out;
	}
	/* (failures to build the actions are ENOMEM: no errnum for them) */
	e = add_moves(&fa, mv, nmv);
	if (!e && (sp->flags & PW_SPAWN_ERR_TO_OUT))
		e = posix_spawn_file_actions_adddup2(&fa, 1, 2);
	if (!e && sp->dir)
		e = posix_spawn_file_actions_addchdir_np(&fa, sp->dir);
	if (!e && (sp->flags & PW_SPAWN_SIGPIPE_DFL)) {
		sigset_t def;

		sigemptyset(&def);
		sigaddset(&def, SIGPIPE);
		e = posix_spawnattr_setsigdefault(&attr, &def);
		if (!e)
			e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
	}
	if (!e) {
		e = (sp->flags & PW_SPAWN_PATH)
		            ? posix_spawnp(&pid, prog, &fa, &attr, (char *const *)sp->argv, env)
		            : posix_spawn(&pid, prog, &fa, &attr, (char *const *)sp->argv, env);
		sp->errnum = e;
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (e) {
		rc = start_error(sp, prog, e, err);
		goto out;
	}
	sp->pid = (int)pid;
	sp->in_fd = p[0][1];
	sp->out_fd = p[1][0];
	sp->err_fd = p[2][0];
	p[0][1] = p[1][0] = p[2][0] = -1;
	if (sp->in_fd >= 0 && (sp->flags & PW_SPAWN_NONBLOCK_IN))
		fcntl(sp->in_fd, F_SETFL, fcntl(sp->in_fd, F_GETFL) | O_NONBLOCK);
out:
	for (i = 0; i < 3; i++) {
		close_fd(&p[i][0]);
		close_fd(&p[i][1]);
	}
	free(mv);
	free(env);
	return rc;
}

int pw_spawn_wait(int pid, int *status, int *sig, struct pw_error *err)
{
	int st = 0;

	if (status)
		*status = -1;
	if (sig)
		*sig = 0;
	if (pid <= 0)
		return pw_error_set(err, PW_EINVAL, "no child process to wait for");
	while (waitpid((pid_t)pid, &st, 0) < 0)
		if (errno != EINTR)
			return pw_error_set(err, PW_EIO, "waiting for process %d: %s", pid,
			                    strerror(errno));
	if (WIFSIGNALED(st) && sig)
		*sig = WTERMSIG(st);
	if (status)
		*status = WIFEXITED(st)     ? WEXITSTATUS(st)
		          : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
		                            : 255;
	return 0;
}

int pw_spawn_kill(int pid, int sig)
{
	if (pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	return kill((pid_t)pid, sig);
}

/* write(2) that raises no SIGPIPE whatever the process does with it: the
 * signal is blocked in this thread for the call, and one the call raised is
 * taken back before it is unblocked (SIGPIPE goes to the thread that wrote). */
static ssize_t write_nosigpipe(int fd, const void *data, size_t len)
{
	sigset_t pipe_set, old, pending;
	struct timespec zero = {0, 0};
	int was_pending, e;
	ssize_t w;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old))
		return write(fd, data, len);
	was_pending = !sigpending(&pending) && sigismember(&pending, SIGPIPE);
	w = write(fd, data, len);
	e = errno;
	if (w < 0 && e == EPIPE && !was_pending)
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = e;
	return w;
}

static int mapped(const struct pw_spawn *sp, int child)
{
	size_t i;

	for (i = 0; i < sp->nr_fds; i++)
		if (sp->fds[i].child == child)
			return 1;
	return 0;
}

int pw_spawn_run(struct pw_spawn *sp, const struct pw_spawn_io *io, int *status,
                 struct pw_error *err)
{
	size_t off = 0, ilen = io && io->input ? io->input_len : 0;
	int fd[3], rc, i;
	char buf[8192];

	if (status)
		*status = -1;
	if (ilen)
		sp->flags |= PW_SPAWN_PIPE_IN;
	if (sp->flags & PW_SPAWN_PIPE_IN)
		sp->flags |= PW_SPAWN_NONBLOCK_IN;
	if (!mapped(sp, 1))
		sp->flags |= PW_SPAWN_PIPE_OUT;
	if ((rc = pw_spawn_start(sp, err)))
		return rc;
	fd[0] = sp->in_fd;
	fd[1] = sp->out_fd;
	fd[2] = sp->err_fd;
	sp->in_fd = sp->out_fd = sp->err_fd = -1;
	if (!ilen)
		close_fd(&fd[0]);
	while (fd[0] >= 0 || fd[1] >= 0 || fd[2] >= 0) {
		struct pollfd pf[3];
		int at[3] = {-1, -1, -1};
		nfds_t n = 0;

		for (i = 0; i < 3; i++) {
			if (fd[i] < 0)
				continue;
			pf[n] = (struct pollfd){fd[i], (short)(i ? POLLIN : POLLOUT), 0};
			at[i] = (int)n++;
		}
		if (poll(pf, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = pw_error_set(err, PW_EIO, "talking to '%s': %s",
			                  sp->prog ? sp->prog : sp->argv[0], strerror(errno));
			break;
		}
		if (at[0] >= 0 && pf[at[0]].revents) {
			ssize_t w = write_nosigpipe(fd[0], io->input + off, ilen - off);

			if (w > 0)
				off += (size_t)w;
			/* EPIPE: the child did not read its input; that is its choice */
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || off == ilen)
				close_fd(&fd[0]);
		}
		for (i = 1; i < 3; i++) {
			void (*cb)(void *, const char *, size_t);
			ssize_t r;

			if (at[i] < 0 || !pf[at[i]].revents)
				continue;
			r = read(fd[i], buf, sizeof(buf));
			cb = !io ? NULL : i == 1 ? io->output : io->error_output;
			if (r > 0) {
				if (cb)
					cb(io->ctx, buf, (size_t)r);
			} else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
				close_fd(&fd[i]);
			}
		}
	}
	for (i = 0; i < 3; i++)
		close_fd(&fd[i]);
	if (!rc)
		rc = pw_spawn_wait(sp->pid, status, NULL, err);
	else
		pw_spawn_wait(sp->pid, NULL, NULL, NULL);
	return rc;
}
