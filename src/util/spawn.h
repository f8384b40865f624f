/* Running a program: the one place in the library that starts processes.
 * posix_spawn (no fork: safe in a threaded server, cheap with a large heap)
 * with an argument vector, environment edits, a file-descriptor map, a
 * working directory and optional pipes to the child's stdin, stdout and
 * stderr. Every pipe is made close-on-exec, so a child sees only the
 * descriptors it was given, even when other threads spawn at the same time. */
#ifndef PW_UTIL_SPAWN_H
#define PW_UTIL_SPAWN_H

#include <stddef.h>

#include "packwire/error.h"

/* flags */
#define PW_SPAWN_PATH        0x01 /* a program name without '/' is looked up in PATH */
#define PW_SPAWN_ENV_CLEAR   0x02 /* the edits start from an empty environment */
#define PW_SPAWN_PIPE_IN     0x04 /* a pipe to the child's stdin: our end in in_fd */
#define PW_SPAWN_PIPE_OUT    0x08 /* a pipe from its stdout: our end in out_fd */
#define PW_SPAWN_PIPE_ERR    0x10 /* a pipe from its stderr: our end in err_fd */
#define PW_SPAWN_ERR_TO_OUT  0x20 /* its stderr goes where its stdout goes */
#define PW_SPAWN_NONBLOCK_IN 0x40 /* in_fd is non-blocking */
#define PW_SPAWN_SIGPIPE_DFL                                                                       \
	0x80 /* SIGPIPE at its default action in the child even when                               \
	        we ignore it (ignored signals stay ignored otherwise) */

/* The child's descriptor `child` is our descriptor `parent`. */
struct pw_spawn_fd {
	int child;
	int parent;
};

/* Zero it, fill in what applies, then pw_spawn_start. A zeroed struct with
 * argv runs argv[0] as a path, in our directory, with our environment and
 * our stdin, stdout and stderr. Nothing here is copied or freed. */
struct pw_spawn {
	const char *const *argv; /* NULL-terminated; argv[0] names the program */
	const char *prog;        /* the program to run when it is not argv[0]; may be NULL */
	unsigned flags;          /* PW_SPAWN_* */
	/* The environment: env_base (NULL: this process's), or nothing with
	 * PW_SPAWN_ENV_CLEAR, then the edits in env in order: "NAME=value" sets
	 * NAME, "NAME" unsets it (NULL-terminated; may be NULL). */
	const char *const *env_base;
	const char *const *env;
	const char *dir; /* working directory of the child; NULL: ours */
	/* more descriptors for the child (after the pipes): a child descriptor
	 * named here must not also be a pipe asked for in flags */
	const struct pw_spawn_fd *fds;
	size_t nr_fds;

	/* set by pw_spawn_start */
	int pid;
	int in_fd;  /* write end of the child's stdin (PW_SPAWN_PIPE_IN), else -1 */
	int out_fd; /* read end of its stdout (PW_SPAWN_PIPE_OUT), else -1 */
	int err_fd; /* read end of its stderr (PW_SPAWN_PIPE_ERR), else -1 */
	int errnum; /* why posix_spawn failed (an errno) when it did, else 0 */
};

/* Start the program. On failure nothing is left open or running, and the
 * message names the program ("cannot run 'x': No such file or directory");
 * the code is PW_ENOMEM, PW_EINVAL for a bad request, else PW_EIO; sp->errnum is
 * set only when the child could not be made or could not run the program
 * (not for a failure before that: pipes, memory, a bad request). The caller
 * closes in_fd, out_fd and err_fd, and waits for the child. */
int pw_spawn_start(struct pw_spawn *sp, struct pw_error *err);

/* Wait for the child pid (retrying on EINTR). *status (may be NULL): its exit
 * code, or 128 + the signal that killed it, as a shell reports it; *sig (may
 * be NULL): that signal, or 0 when it exited. */
int pw_spawn_wait(int pid, int *status, int *sig, struct pw_error *err);

/* Send sig to the child pid: 0, or -1 with errno set. */
int pw_spawn_kill(int pid, int sig);

/* What pw_spawn_run feeds the child and does with its output. */
struct pw_spawn_io {
	const char *input; /* written to its stdin, which is then closed; may be NULL */
	size_t input_len;
	/* its stdout as it arrives (NULL: read and dropped); with
	 * PW_SPAWN_ERR_TO_OUT its stderr too */
	void (*output)(void *ctx, const char *data, size_t len);
	/* its stderr, with PW_SPAWN_PIPE_ERR (NULL: read and dropped) */
	void (*error_output)(void *ctx, const char *data, size_t len);
	void *ctx;
};

/* Start the program with a pipe from its stdout (unless sp->fds names it)
 * and one to its stdin when there is input or sp asks for it with
 * PW_SPAWN_PIPE_IN (it then sees the end of its input at once when there is
 * none); feed the input while reading the output (a child that writes much
 * before it reads cannot deadlock against us), and wait.
 * A child that exits without reading its input is no error and raises no
 * SIGPIPE here. *status as for pw_spawn_wait. Errors are for a failure to
 * start it or to talk to it; its exit status is the caller's to judge. */
int pw_spawn_run(struct pw_spawn *sp, const struct pw_spawn_io *io, int *status,
                 struct pw_error *err);

#endif
