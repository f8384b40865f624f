/* Where a server finds a superproject's submodules when a push must map a
 * gitlink (compat-receive.h): the resolver every caller uses
 * (pw_compat_submodules_for_repo: the repository's
 * compat.submodule.*.repository config, then the .gitmodules URLs that
 * resolve to repositories under the base path), with the servers' one
 * containment check (pw_srv_path_inside, every symlink resolved). */
#include "packwire/compat.h"
#include "server/compat-receive.h"
#include "server/paths.h"

int pw_rp_submodules_new(struct pw_compat_submodules **out, struct pw_repo *repo, const char *base,
                         struct pw_error *err)
{
	*out = NULL;
	return pw_compat_submodules_for_repo(out, repo, base, pw_srv_path_inside, err);
}
