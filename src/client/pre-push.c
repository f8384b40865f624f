/* The pre-push hook, as Git 2.39's transport runs it: once the server's
 * refs are known and every update has its verdict, before anything is
 * sent (dry runs and pushes with nothing to send included). Its arguments
 * are the remote's name (the URL when a URL was given) and the URL; its
 * stdin one line per update the push could still make:
 *     <local ref> SP <local oid> SP <remote ref> SP <remote oid> LF
 * ("(delete)" and the zero id for a delete, the zero id as the remote oid
 * of a new ref). Updates that are up to date or refused as non-fast-forward
 * or stale are left out, as Git leaves them out. Its stdout goes to our
 * stderr (Git's stdout_to_stderr), its stderr is ours; a hook that does
 * not read its input is no error. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-priv.h"
#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/fs.h"
#include "packwire/repo.h"
#include "repo/hook.h"
#include "util/spawn.h"

/* Where hooks are run (Git's working directory for them): the top of the
 * work tree, or the git directory of a bare repository. */
static const char *hook_cwd(struct pw_repo *repo)
{
	return pw_repo_work_tree(repo) ? pw_repo_work_tree(repo) : pw_repo_git_dir(repo);
}

/* core.hooksPath (absolute, or relative to where hooks run; the library
 * reads no environment, so no "~/"), else $GIT_DIR/hooks. malloc'd. */
static char *hooks_dir(struct pw_repo *repo)
{
	const char *hp = NULL;

	if (pw_config_get_string(pw_repo_config(repo), "core.hooksPath", &hp, NULL) || !hp || !*hp)
		return pw_path_join(pw_repo_git_dir(repo), "hooks");
	if (hp[0] == '/')
		return strdup(hp);
	return pw_path_join(hook_cwd(repo), hp);
}

static int hook_line(const struct pw_push_ref *r)
{
	switch (r->status) {
	case PW_PUSH_UPTODATE:
	case PW_PUSH_REJECT_NONFF:
	case PW_PUSH_REJECT_STALE:
	case PW_PUSH_REJECT_REMOTE_UPDATED:
	case PW_PUSH_NO_SUCH_REF: /* Git stops before the hook */
		return 0;
	default:
		return 1;
	}
}

int pw_push__pre_push_input(const struct pw_push_result *res, struct pw_buf *out)
{
	size_t i;

	for (i = 0; i < res->nr; i++) {
		const struct pw_push_ref *r = &res->refs[i];
		char a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1];
		const char *src = r->is_delete ? "(delete)" : r->src;

		if (!hook_line(r))
			continue;
		pw_oid_to_hex(&r->new_oid, a);
		pw_oid_to_hex(&r->old_oid, b);
		if (pw_buf_addf(out, "%s %s %s %s\n", src ? src : a, a, r->dst, b))
			return PW_ENOMEM;
	}
	return 0;
}

int pw_push__pre_push(struct pw_repo *repo, const struct pw_push_opts *o,
                      struct pw_push_result *res, struct pw_error *err)
{
	struct pw_error e;
	struct pw_buf in = PW_BUF_INIT;
	struct pw_spawn_fd out_to_err = {1, 2};
	struct pw_spawn sp;
	struct pw_spawn_io io;
	char *dir = hooks_dir(repo), *hook = NULL, *abs = NULL;
	const char *argv[4];
	int rc, status = 0;

	if (!dir)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	hook = pw_hook_find(dir, "pre-push");
	free(dir);
	if (!hook)
		return 0;
	/* the hook runs elsewhere: its path must not depend on our cwd */
	abs = realpath(hook, NULL);
	if ((rc = pw_push__pre_push_input(res, &in))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto out;
	}
	argv[0] = abs ? abs : hook;
	argv[1] = res->remote_name ? res->remote_name : res->url;
	argv[2] = res->url;
	argv[3] = NULL;
	memset(&sp, 0, sizeof(sp));
	sp.argv = argv;
	sp.flags = PW_SPAWN_PIPE_IN | PW_SPAWN_SIGPIPE_DFL;
	sp.dir = hook_cwd(repo);
	sp.fds = &out_to_err;
	sp.nr_fds = 1;
	memset(&io, 0, sizeof(io));
	io.input = in.data;
	io.input_len = in.len;
	memset(&e, 0, sizeof(e));
	rc = pw_spawn_run(&sp, &io, &status, &e);
	if (rc && (!sp.errnum || sp.errnum == ENOMEM || sp.errnum == EAGAIN)) {
		pw_error_copy(err, &e);
		goto out;
	}
	if (rc) {
		/* a hook that cannot be run fails as a hook does */
		if (o->report.error)
			o->report.error(o->report.data, e.msg);
		status = 126;
	}
	rc = 0;
	if (status) {
		res->pre_push_refused = status;
		rc = pw_error_set(err, PW_ERROR,
		                  "the pre-push hook refused the push (exit status %d)", status);
	}
out:
	pw_buf_free(&in);
	free(abs);
	free(hook);
	return rc;
}
