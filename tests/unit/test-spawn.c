/* util/spawn: arguments, environment edits, the descriptor map, the working
 * directory, missing programs, exit codes and signals, and no descriptor of
 * ours reaching a child. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "test.h"
#include "util/spawn.h"

static void collect(void *ctx, const char *data, size_t len)
{
	pw_buf_add(ctx, data, len);
}

/* Run argv (with sp's other settings) to the end: its stdout in out. */
static int run(struct pw_spawn *sp, const char *const *argv, const char *input, size_t ilen,
               struct pw_buf *out, int *status, struct pw_error *err)
{
	struct pw_spawn_io io = {input, ilen, collect, NULL, out};

	pw_buf_reset(out);
	sp->argv = argv;
	return pw_spawn_run(sp, &io, status, err);
}

static void test_args_and_status(void)
{
	const char *const echo[] = {
	        "/bin/sh", "-c", "printf '%s|' \"$0\" \"$@\"; exit 3", "zero", "one two", "", NULL};
	const char *const both[] = {"/bin/sh", "-c", "echo out; echo err >&2", NULL};
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_spawn sp;
	int status = 0;

	memset(&sp, 0, sizeof(sp));
	CHECK_EQ_INT(run(&sp, echo, NULL, 0, &out, &status, &err), 0);
	CHECK_STR(out.data, "zero|one two||");
	CHECK_EQ_INT(status, 3);

	/* stderr merged into stdout, in order */
	memset(&sp, 0, sizeof(sp));
	sp.flags = PW_SPAWN_ERR_TO_OUT;
	CHECK_EQ_INT(run(&sp, both, NULL, 0, &out, &status, &err), 0);
	CHECK_STR(out.data, "out\nerr\n");
	CHECK_EQ_INT(status, 0);

	/* found in PATH only when asked */
	{
		const char *const sh[] = {"sh", "-c", "echo found", NULL};

		memset(&sp, 0, sizeof(sp));
		sp.flags = PW_SPAWN_PATH;
		CHECK_EQ_INT(run(&sp, sh, NULL, 0, &out, &status, &err), 0);
		CHECK_STR(out.data, "found\n");
		memset(&sp, 0, sizeof(sp));
		sp.dir = "/";
		CHECK_EQ_INT(run(&sp, sh, NULL, 0, &out, &status, &err), PW_EIO);
		CHECK_STR(err.msg, "cannot run 'sh' in '/': No such file or directory");
	}
	pw_buf_free(&out);
}

static void test_input(void)
{
	/* writes 200000 bytes before it reads: no deadlock, all input arrives */
	const char *const talk[] = {"/bin/sh", "-c", "head -c 200000 /dev/zero; wc -c", NULL};
	const char *const deaf[] = {"/bin/sh", "-c", "exit 0", NULL};
	size_t n = 300000;
	char *in = malloc(n);
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_spawn sp;
	int status = -1;

	memset(in, 'x', n);
	memset(&sp, 0, sizeof(sp));
	CHECK_EQ_INT(run(&sp, talk, in, n, &out, &status, &err), 0);
	CHECK_EQ_INT(out.len, 200000 + 7);
	CHECK(out.len == 200007 && !strcmp(out.data + 200000, "300000\n"));
	CHECK_EQ_INT(status, 0);

	/* a child that never reads: neither an error nor SIGPIPE for us (this
	 * process does not ignore SIGPIPE) */
	memset(&sp, 0, sizeof(sp));
	CHECK_EQ_INT(run(&sp, deaf, in, n, &out, &status, &err), 0);
	CHECK_EQ_INT(status, 0);
	free(in);
	pw_buf_free(&out);
}

static void test_env(void)
{
	const char *const env[] = {"/usr/bin/env", NULL};
	const char *const base[] = {"A=1", "B=2", "C=3", NULL};
	const char *const edits[] = {"B", "D=4", "A=x", "A=5", NULL};
	const char *const set_only[] = {"ONLY=1", "GONE", NULL};
	const char *const own[] = {"PW_SPAWN_T_SET=new", "PW_SPAWN_T_DROP", NULL};
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_spawn sp;
	int status;

	/* on top of a given environment; a later edit of a name wins */
	memset(&sp, 0, sizeof(sp));
	sp.env_base = base;
	sp.env = edits;
	CHECK_EQ_INT(run(&sp, env, NULL, 0, &out, &status, &err), 0);
	CHECK_STR(out.data, "C=3\nD=4\nA=5\n");

	/* clear, then set */
	memset(&sp, 0, sizeof(sp));
	sp.flags = PW_SPAWN_ENV_CLEAR;
	sp.env = set_only;
	CHECK_EQ_INT(run(&sp, env, NULL, 0, &out, &status, &err), 0);
	CHECK_STR(out.data, "ONLY=1\n");

	/* on top of ours (the test may change its own environment; the
	 * library never does) */
	setenv("PW_SPAWN_T_SET", "old", 1);
	setenv("PW_SPAWN_T_DROP", "gone", 1);
	setenv("PW_SPAWN_T_KEEP", "kept", 1);
	memset(&sp, 0, sizeof(sp));
	sp.env = own;
	CHECK_EQ_INT(run(&sp, env, NULL, 0, &out, &status, &err), 0);
	CHECK(strstr(out.data, "\nPW_SPAWN_T_SET=new\n") != NULL);
	CHECK(strstr(out.data, "PW_SPAWN_T_SET=old") == NULL);
	CHECK(strstr(out.data, "PW_SPAWN_T_DROP") == NULL);
	CHECK(strstr(out.data, "PW_SPAWN_T_KEEP=kept\n") != NULL);
	CHECK_STR(getenv("PW_SPAWN_T_SET"), "old");
	CHECK_STR(getenv("PW_SPAWN_T_DROP"), "gone");
	pw_buf_free(&out);
}

static void test_cwd(void)
{
	const char *const pwd[] = {"/bin/sh", "-c", "pwd -P", NULL};
	char tmpl[] = "/tmp/pw-spawn-XXXXXX", real[PATH_MAX], want[PATH_MAX + 2];
	char here[PATH_MAX], now[PATH_MAX];
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_spawn sp;
	int status;

	CHECK(mkdtemp(tmpl) != NULL);
	CHECK(realpath(tmpl, real) != NULL);
	CHECK(getcwd(here, sizeof(here)) != NULL);
	memset(&sp, 0, sizeof(sp));
	sp.dir = tmpl;
	CHECK_EQ_INT(run(&sp, pwd, NULL, 0, &out, &status, &err), 0);
	snprintf(want, sizeof(want), "%s\n", real);
	CHECK_STR(out.data, want);
	CHECK(getcwd(now, sizeof(now)) != NULL && !strcmp(here, now)); /* ours unchanged */
	rmdir(tmpl);

	/* a directory that is not there */
	memset(&sp, 0, sizeof(sp));
	sp.dir = tmpl;
	CHECK_EQ_INT(run(&sp, pwd, NULL, 0, &out, &status, &err), PW_EIO);
	CHECK(strstr(err.msg, "cannot run '/bin/sh' in '/tmp/pw-spawn-") == err.msg);
	pw_buf_free(&out);
}

static void test_missing(void)
{
	const char *const nope[] = {"pw-no-such-program", NULL};
	const char *const abs[] = {"/nonexistent/pw-prog", "arg", NULL};
	struct pw_error err = {0};
	struct pw_spawn sp;

	memset(&sp, 0, sizeof(sp));
	sp.argv = nope;
	sp.flags = PW_SPAWN_PATH | PW_SPAWN_PIPE_IN | PW_SPAWN_PIPE_OUT | PW_SPAWN_PIPE_ERR;
	CHECK_EQ_INT(pw_spawn_start(&sp, &err), PW_EIO);
	CHECK_STR(err.msg, "cannot run 'pw-no-such-program': No such file or directory");
	CHECK_EQ_INT(sp.errnum, ENOENT); /* how a caller tells "not found" */
	CHECK_EQ_INT(sp.pid, -1);
	CHECK(sp.in_fd == -1 && sp.out_fd == -1 && sp.err_fd == -1);

	memset(&sp, 0, sizeof(sp));
	sp.argv = abs;
	CHECK_EQ_INT(pw_spawn_start(&sp, &err), PW_EIO);
	CHECK_STR(err.msg, "cannot run '/nonexistent/pw-prog': No such file or directory");

	/* prog, when given, is what runs; argv[0] is only the name it sees */
	{
		const char *const named[] = {"a-name", "-c", "printf %s \"$0\"", NULL};
		struct pw_buf out = PW_BUF_INIT;
		int status;

		memset(&sp, 0, sizeof(sp));
		sp.prog = "/bin/sh";
		CHECK_EQ_INT(run(&sp, named, NULL, 0, &out, &status, &err), 0);
		CHECK_STR(out.data, "a-name");
		pw_buf_free(&out);
	}

	/* not a program */
	memset(&sp, 0, sizeof(sp));
	sp.argv = (const char *const[]){"/", NULL};
	CHECK_EQ_INT(pw_spawn_start(&sp, &err), PW_EIO);
	CHECK_STR(err.msg, "cannot run '/': Permission denied");

	/* a bad map is refused before anything runs */
	{
		struct pw_spawn_fd twice[] = {{3, 0}, {3, 1}};

		memset(&sp, 0, sizeof(sp));
		sp.argv = (const char *const[]){"/bin/true", NULL};
		sp.fds = twice;
		sp.nr_fds = 2;
		CHECK_EQ_INT(pw_spawn_start(&sp, &err), PW_EINVAL);
		sp.fds = (struct pw_spawn_fd[]){{1, 2}};
		sp.nr_fds = 1;
		sp.flags = PW_SPAWN_PIPE_OUT;
		CHECK_EQ_INT(pw_spawn_start(&sp, &err), PW_EINVAL);
	}
}

static void test_exit_and_signals(void)
{
	const char *const code[] = {"/bin/sh", "-c", "exit 7", NULL};
	const char *const term[] = {"/bin/sh", "-c", "kill -TERM $$", NULL};
	const char *const sleeper[] = {"/bin/sleep", "30", NULL};
	struct pw_error err = {0};
	struct pw_spawn sp;
	int status, sig;

	memset(&sp, 0, sizeof(sp));
	sp.argv = code;
	CHECK_EQ_INT(pw_spawn_start(&sp, &err), 0);
	CHECK_EQ_INT(pw_spawn_wait(sp.pid, &status, &sig, &err), 0);
	CHECK_EQ_INT(status, 7);
	CHECK_EQ_INT(sig, 0);

	memset(&sp, 0, sizeof(sp));
	sp.argv = term;
	CHECK_EQ_INT(pw_spawn_start(&sp, &err), 0);
	CHECK_EQ_INT(pw_spawn_wait(sp.pid, &status, &sig, &err), 0);
	CHECK_EQ_INT(status, 128 + SIGTERM);
	CHECK_EQ_INT(sig, SIGTERM);

	memset(&sp, 0, sizeof(sp));
	sp.argv = sleeper;
	CHECK_EQ_INT(pw_spawn_start(&sp, &err), 0);
	CHECK_EQ_INT(pw_spawn_kill(sp.pid, SIGKILL), 0);
	CHECK_EQ_INT(pw_spawn_wait(sp.pid, &status, &sig, &err), 0);
	CHECK_EQ_INT(status, 128 + SIGKILL);
	CHECK_EQ_INT(sig, SIGKILL);

	/* reaped: nothing more to wait for */
	CHECK_EQ_INT(pw_spawn_wait(sp.pid, &status, &sig, &err), PW_EIO);
	CHECK_EQ_INT(pw_spawn_wait(-1, &status, NULL, &err), PW_EINVAL);
	CHECK_EQ_INT(pw_spawn_kill(-1, SIGTERM), -1);
}

/* Bit of SIGPIPE in the child's SigIgn mask (/proc/self/status). */
static int child_ignores_sigpipe(unsigned flags)
{
	const char *const argv[] = {"/bin/sh", "-c", "grep '^SigIgn:' /proc/self/status", NULL};
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_spawn sp;
	unsigned long long mask = 0;
	int status, r = -1;

	memset(&sp, 0, sizeof(sp));
	sp.flags = flags;
	if (!run(&sp, argv, NULL, 0, &out, &status, &err) &&
	    sscanf(out.data, "SigIgn: %llx", &mask) == 1)
		r = (mask >> (SIGPIPE - 1)) & 1;
	pw_buf_free(&out);
	return r;
}

static void test_sigpipe(void)
{
	void (*old)(int) = signal(SIGPIPE, SIG_IGN);

	CHECK_EQ_INT(child_ignores_sigpipe(0), 1); /* inherited, as with Git */
	CHECK_EQ_INT(child_ignores_sigpipe(PW_SPAWN_SIGPIPE_DFL), 0);
	signal(SIGPIPE, old);
}

static unsigned long pipe_ino(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : (unsigned long)st.st_ino;
}

/* How many of the child's descriptors are the pipe with inode ino. */
static int count_pipe(const char *listing, unsigned long ino)
{
	char want[64];
	const char *p = listing;
	int n = 0;

	snprintf(want, sizeof(want), "pipe:[%lu]", ino);
	while ((p = strstr(p, want))) {
		n++;
		p += strlen(want);
	}
	return n;
}

static void test_fd_map_and_leaks(void)
{
	int other[2], a[2], b[2], c[2], fa, fb;
	struct pw_spawn_fd map[3];
	struct pw_error err = {0};
	struct pw_buf listing = PW_BUF_INIT;
	struct pw_spawn sp;
	char buf[4096];
	ssize_t r;
	int status;

	/* what another thread would be holding while we spawn */
	CHECK_EQ_INT(pipe2(other, O_CLOEXEC), 0);
	CHECK_EQ_INT(pipe2(a, O_CLOEXEC), 0);
	CHECK_EQ_INT(pipe2(b, O_CLOEXEC), 0);
	CHECK_EQ_INT(pipe2(c, O_CLOEXEC), 0);
	/* crossed: the child's 3 is our 4 and its 4 our 3 (a move must not
	 * overwrite what a later one reads) */
	fa = dup3(a[1], 40, O_CLOEXEC);
	fb = dup3(b[1], 41, O_CLOEXEC);
	CHECK(fa == 40 && fb == 41);
	map[0] = (struct pw_spawn_fd){40, 41};
	map[1] = (struct pw_spawn_fd){41, 40};
	map[2] = (struct pw_spawn_fd){5, c[1]};
	memset(&sp, 0, sizeof(sp));
	/* (bash: dash knows no descriptor above 9) */
	sp.argv = (const char *const[]){"/bin/bash", "-c",
	                                "echo to-40 >&40; echo to-41 >&41; "
	                                "ls -l /proc/$$/fd/ >&5; echo err >&2",
	                                NULL};
	sp.fds = map;
	sp.nr_fds = 3;
	sp.flags = PW_SPAWN_PIPE_IN | PW_SPAWN_PIPE_OUT | PW_SPAWN_PIPE_ERR;
	CHECK_EQ_INT(pw_spawn_start(&sp, &err), 0);
	close(a[1]);
	close(b[1]);
	close(c[1]);
	close(fa);
	close(fb);
	close(sp.in_fd);
	r = read(a[0], buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = 0;
	CHECK_STR(buf, "to-41\n");
	r = read(b[0], buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = 0;
	CHECK_STR(buf, "to-40\n");
	while ((r = read(c[0], buf, sizeof(buf))) > 0)
		pw_buf_add(&listing, buf, (size_t)r);
	r = read(sp.err_fd, buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = 0;
	CHECK_STR(buf, "err\n");
	CHECK_EQ_INT(pw_spawn_wait(sp.pid, &status, NULL, &err), 0);
	CHECK_EQ_INT(status, 0);

	/* the child (the shell) has its three pipes once each (as 0, 1, 2), the mapped ones
	 * once, and nothing else of ours */
	CHECK_EQ_INT(count_pipe(listing.data, pipe_ino(sp.out_fd)), 1);
	CHECK_EQ_INT(count_pipe(listing.data, pipe_ino(sp.err_fd)), 1);
	CHECK_EQ_INT(count_pipe(listing.data, pipe_ino(a[0])), 1);
	CHECK_EQ_INT(count_pipe(listing.data, pipe_ino(b[0])), 1);
	CHECK_EQ_INT(count_pipe(listing.data, pipe_ino(c[0])), 1);
	CHECK_EQ_INT(count_pipe(listing.data, pipe_ino(other[0])), 0);
	CHECK(strstr(listing.data, " 0 -> pipe:[") != NULL);
	CHECK(strstr(listing.data, " 40 -> pipe:[") != NULL);
	close(sp.out_fd);
	close(sp.err_fd);
	close(a[0]);
	close(b[0]);
	close(c[0]);
	close(other[0]);
	close(other[1]);
	pw_buf_free(&listing);
}

int main(void)
{
	test_args_and_status();
	test_input();
	test_env();
	test_cwd();
	test_missing();
	test_exit_and_signals();
	test_sigpipe();
	test_fd_map_and_leaks();
	return pw_test_done();
}
