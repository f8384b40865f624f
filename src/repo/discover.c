/* The repository a command works in, found as Git finds it: an explicit git
 * directory (GIT_DIR, --git-dir) when one is given, else discovery upwards. */
#include "packwire/repo.h"

int pw_repo_discover(struct pw_repo **out, const char *git_dir, const char *path,
                     const struct pw_repo_opts *o, struct pw_error *err)
{
	if (git_dir && *git_dir)
		return pw_repo_open_gitdir_opts(out, git_dir, o, err);
	return pw_repo_open_opts(out, path ? path : ".", o, err);
}
