/* receive-pack: pushes to a checked-out branch (where a branch is checked
 * out, in the main or a linked work tree) and push-to-checkout
 * (receive.denyCurrentBranch=updateInstead and its hook). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "hash/oidmap.h"
#include "odb/fsck.h"
#include "odb/idx.h"
#include "odb/quarantine.h"
#include "pack/index-pack.h"
#include "packwire/buf.h"
#include "packwire/compat.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/receive.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "packwire/server.h"
#include "packwire/version.h"
#include "proto/adv.h"
#include "refs/hide.h"
#include "refs/reflog.h"
#include "repo/hook.h"
#include "server/compat-receive.h"
#include "server/proc-receive.h"
#include "server/pushcert.h"
#include "server/receive-cmds.h"
#include "server/receive-priv.h"
#include "util/fs.h"

/* "ref: <name>" in the HEAD file at path. */
static int head_file_is(const char *path, const char *name)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error e;
	size_t n = strlen(name);
	int r = 0;

	if (!pw_fs_read_file(path, &b, 4096, &e) && b.len >= 5 + n && !memcmp(b.data, "ref: ", 5) &&
	    !memcmp(b.data + 5, name, n) &&
	    (b.len == 5 + n || b.data[5 + n] == '\n' || b.data[5 + n] == '\r'))
		r = 1;
	pw_buf_free(&b);
	return r;
}

/* Where branch `name` is checked out, as Git's find_shared_symref sees it:
 * the main work tree of a non-bare repository, or a linked work tree
 * (<git-dir>/worktrees/<id>/HEAD, its path in .../gitdir). 1 with *wt and
 * *gd (absolute, malloc'd), 0 when nowhere, negative on ENOMEM. */
int pw_rp__checked_out(struct rp *s, const char *name, char **wt, char **gd)
{
	char real[PATH_MAX], *dir;
	DIR *d;
	struct dirent *de;
	int found = 0;

	*wt = *gd = NULL;
	if (!pw_repo_is_bare(s->repo) && s->head_target && !strcmp(name, s->head_target)) {
		const char *w = pw_repo_work_tree(s->repo), *cw = NULL;
		char *tmp = NULL;
		size_t n;

		/* opened by its git dir: core.worktree, else the parent of ".git" */
		if (!w &&
		    !pw_config_get_string(pw_repo_config(s->repo), "core.worktree", &cw, NULL) &&
		    cw)
			w = tmp = cw[0] == '/' ? strdup(cw)
			                       : pw_path_join(pw_repo_git_dir(s->repo), cw);
		if (!w && realpath(pw_repo_git_dir(s->repo), real) && (n = strlen(real)) > 5 &&
		    !strcmp(real + n - 5, "/.git")) {
			real[n - 5] = '\0';
			w = tmp = strdup(real);
		}
		if (w && realpath(w, real))
			*wt = strdup(real);
		free(tmp);
		if (realpath(pw_repo_git_dir(s->repo), real))
			*gd = strdup(real);
		return 1;
	}
	if (!(dir = pw_path_join(pw_repo_git_dir(s->repo), "worktrees")))
		return PW_ENOMEM;
	d = opendir(dir);
	while (d && !found && (de = readdir(d))) {
		char path[PATH_MAX];
		struct pw_buf b = PW_BUF_INIT;
		struct pw_error e;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/HEAD", dir, de->d_name);
		if (!head_file_is(path, name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/gitdir", dir, de->d_name);
		if (!pw_fs_read_file(path, &b, PATH_MAX, &e)) {
			while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
				b.data[--b.len] = '\0';
			if (b.len > 5 && !strcmp(b.data + b.len - 5, "/.git"))
				b.data[b.len -= 5] = '\0';
			*wt = strdup(b.data);
		}
		pw_buf_free(&b);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (realpath(path, real))
			*gd = strdup(real);
		found = 1;
	}
	if (d)
		closedir(d);
	free(dir);
	return found;
}

/* ---- receive.denyCurrentBranch=updateInstead ------------------------------ */

/* Run path (freed here) with args in cwd, with GIT_DIR=git_dir (and
 * GIT_WORK_TREE when work_tree), output relayed: 0, 1 failed, <0. */
static int run_in_worktree(struct rp *s, char *path, const char *const *args, const char *cwd,
                           const char *git_dir, const char *work_tree)
{
	struct env e = {NULL, 0};
	int rc;

	rc = pw_rp__env_add(&e, "GIT_DIR=%s", git_dir) ||
	     pw_rp__env_add(&e, "GIT_QUARANTINE_PATH") ||
	     pw_rp__env_add(&e, "GIT_OBJECT_DIRECTORY") ||
	     pw_rp__env_add(&e, "GIT_ALTERNATE_OBJECT_DIRECTORIES") ||
	     pw_rp__env_add(&e, "GIT_INDEX_FILE") ||
	     (work_tree ? pw_rp__env_add(&e, "GIT_WORK_TREE=%s", work_tree)
	                : pw_rp__env_add(&e, "GIT_WORK_TREE"));
	return pw_rp__run_with_env(s, path, args, &e, rc, cwd, NULL, 0);
}

/* Git's push_to_checkout / push_to_deploy: the push-to-checkout hook when
 * there is one, else (with stock git, as Git runs its own commands) refresh
 * the index, require a clean work tree and index, and read-tree -u -m the
 * new commit. NULL when the work tree now matches, else the "ng" reason. */
const char *pw_rp__update_worktree(struct rp *s, struct pw_receive_cmd *c)
{
	char hex[PW_MAX_HEXSZ + 1], base[PW_MAX_HEXSZ + 1];
	char *hook = pw_hook_find(s->hooks_dir, "push-to-checkout"), *git;
	const char *hook_args[] = {hex, NULL};
	const char *refresh[] = {"update-index", "-q", "--ignore-submodules", "--refresh", NULL};
	const char *files[] = {"diff-files", "--quiet", "--ignore-submodules", "--", NULL};
	const char *index[] = {"diff-index", "--quiet", "--cached", "--ignore-submodules",
	                       base,         "--",      NULL};
	const char *rtree[] = {"read-tree", "-u", "-m", hex, NULL};
	struct {
		const char *const *args;
		const char *why;
	} steps[] = {{refresh, "Up-to-date check failed"},
	             {files, "Working directory has unstaged changes"},
	             {index, "Working directory has staged changes"},
	             {rtree, "Could not update working tree to new HEAD"}};
	size_t i;

	pw_oid_to_hex(&c->new_oid, hex);
	if (hook)
		return run_in_worktree(s, hook, hook_args, pw_repo_git_dir(s->repo),
		                       c->worktree_git_dir, c->worktree)
		               ? "push-to-checkout hook declined"
		               : NULL;
	/* diff-index against HEAD, or the empty tree on an unborn branch */
	if (pw_oid_is_zero(&c->old_oid))
		pw_oid_to_hex(s->algo->empty_tree, base);
	else
		snprintf(base, sizeof(base), "HEAD");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (!(git = strdup("git")))
			return "Up-to-date check failed";
		if (run_in_worktree(s, git, steps[i].args, c->worktree, c->worktree_git_dir, NULL))
			return steps[i].why;
	}
	return NULL;
}
