/* Hook processes: see hook.h. They are started by util/spawn. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "repo/hook.h"
#include "util/fs.h"
#include "util/spawn.h"

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

/* argv for the hook: its path, then h->args (malloc'd array, borrowed strings). */
static char **hook_argv(const struct pw_hook_run *h)
{
	size_t nargs = 0, i;
	char **argv;

	while (h->args && h->args[nargs])
		nargs++;
	if (!(argv = calloc(nargs + 2, sizeof(*argv))))
		return NULL;
	argv[0] = (char *)h->path;
	for (i = 0; i < nargs; i++)
		argv[i + 1] = (char *)h->args[i];
	return argv;
}

int pw_hook_run(const struct pw_hook_run *h, int *status, struct pw_error *err)
{
	struct pw_spawn_io io = {h->input, h->input_len, h->output, NULL, h->ctx};
	struct pw_spawn sp;
	char **argv = hook_argv(h);
	int rc;

	*status = -1;
	if (!argv)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memset(&sp, 0, sizeof(sp));
	sp.argv = (const char *const *)argv;
	/* stdin a pipe even without input: never the client's connection */
	sp.flags = PW_SPAWN_PATH | PW_SPAWN_PIPE_IN | PW_SPAWN_ERR_TO_OUT;
	sp.env = h->env;
	sp.dir = h->cwd;
	rc = pw_spawn_run(&sp, &io, status, err);
	/* a hook that cannot be run (a bad interpreter, a directory gone)
	 * fails as a hook does; only our own failures are errors */
	if (rc && sp.errnum && sp.errnum != ENOMEM && sp.errnum != EAGAIN) {
		*status = 126;
		rc = 0;
	}
	free(argv);
	return rc;
}

int pw_hook_spawn(const struct pw_hook_run *h, int *pid, int *in, int *out, int *err_fd,
                  struct pw_error *err)
{
	struct pw_spawn sp;
	char **argv = hook_argv(h);
	int rc;

	*pid = -1;
	*in = *out = *err_fd = -1;
	if (!argv)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memset(&sp, 0, sizeof(sp));
	sp.argv = (const char *const *)argv;
	sp.flags = PW_SPAWN_PATH | PW_SPAWN_PIPE_IN | PW_SPAWN_PIPE_OUT | PW_SPAWN_PIPE_ERR |
	           PW_SPAWN_NONBLOCK_IN;
	sp.env = h->env;
	sp.dir = h->cwd;
	rc = pw_spawn_start(&sp, err);
	free(argv);
	if (rc)
		return rc;
	*pid = sp.pid;
	*in = sp.in_fd;
	*out = sp.out_fd;
	*err_fd = sp.err_fd;
	return 0;
}
