/* Where a server finds a superproject's submodules when a push must map a
 * gitlink (compat-receive.h): the repository's compat.submodule.*.repository
 * config, then the .gitmodules URLs that resolve to repositories under the
 * base path, never outside it (pw_srv_path_inside, every symlink
 * resolved). */
#include <stdlib.h>
#include <string.h>

#include "packwire/compat.h"
#include "packwire/repo.h"
#include "server/compat-receive.h"
#include "server/paths.h"

int pw_rp_submodules_new(struct pw_compat_submodules **out, struct pw_repo *repo, const char *base,
                         struct pw_error *err)
{
	struct pw_compat_submodules *s = NULL;
	const char *gd = pw_repo_git_dir(repo);
	size_t n = strlen(gd);
	char *super = strdup(gd), *parent = NULL;
	int rc;

	*out = NULL;
	if (!super || pw_compat_submodules_new(&s)) {
		free(super);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	/* a work tree's repository is named by the work tree */
	while (n > 1 && super[n - 1] == '/')
		super[--n] = '\0';
	if (n > 5 && !strcmp(super + n - 5, "/.git"))
		super[n - 5] = '\0';
	if (!base) {
		char *sl;

		if (!(parent = strdup(super))) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto out;
		}
		sl = strrchr(parent, '/');
		if (sl && sl != parent)
			*sl = '\0';
		else
			strcpy(parent, sl ? "/" : ".");
		base = parent;
	}
	if ((rc = pw_compat_submodules_add_config(s, pw_repo_config(repo), gd, err)) ||
	    (rc = pw_compat_submodules_set_super(s, pw_repo_objects_dir(repo), pw_repo_algo(repo),
	                                         pw_repo_compat_algo(repo), err)) ||
	    (rc = pw_compat_submodules_discover(s, base, super, pw_srv_path_inside, err)))
		goto out;
	*out = s;
	s = NULL;
out:
	pw_compat_submodules_free(s);
	free(super);
	free(parent);
	return rc;
}
