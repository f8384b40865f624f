/* Running repository hooks (pre-receive, update, post-receive, ...) as child
 * processes: stdin fed from memory, stdout and stderr merged and handed to a
 * callback as they arrive (receive-pack relays them on side-band 2). */
#ifndef PW_REPO_HOOK_H
#define PW_REPO_HOOK_H

#include <stddef.h>

#include "packwire/error.h"

struct pw_hook_run {
	const char *path;        /* the executable; without a '/', found in PATH */
	const char *const *args; /* extra arguments (NULL-terminated), may be NULL */
	const char *const *env;  /* "NAME=value" (or "NAME" to unset), NULL-terminated */
	const char *cwd;         /* may be NULL */
	const char *input;       /* fed to stdin, then closed; may be NULL */
	size_t input_len;
	void (*output)(void *ctx, const char *data, size_t len);
	void *ctx;
};

/* Path of hook `name` under hooks_dir when it exists and is executable
 * (malloc'd), else NULL. */
char *pw_hook_find(const char *hooks_dir, const char *name);

/* Run the hook and wait for it. *status gets its exit code (128 + signal
 * when killed, 126 when it could not be run). Errors only for our own
 * failures to start it (memory, pipes) or to talk to it. */
int pw_hook_run(const struct pw_hook_run *h, int *status, struct pw_error *err);

/* Start the hook with stdin, stdout and stderr each on its own pipe (for a
 * hook that speaks a protocol on stdout, as proc-receive does): *in (write
 * end, non-blocking), *out and *err (read ends) are the caller's to close;
 * wait for *pid (pw_spawn_wait). h->input and h->output are not used. A
 * hook that cannot be run is an error naming it. */
int pw_hook_spawn(const struct pw_hook_run *h, int *pid, int *in, int *out, int *err_fd,
                  struct pw_error *err);

#endif
