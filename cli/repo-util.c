/* Helpers shared by the commands that work inside a repository: finding it
 * the way Git does (GIT_DIR, else discovery from the current directory) and
 * turning a revision argument into an object id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"

int pw_cli_open_repo(struct pw_repo **out)
{
	struct pw_error err = {0};
	const char *gd = getenv("GIT_DIR");
	int rc;

	if (gd && *gd)
		rc = pw_repo_open_gitdir_opts(out, gd, pw_cli_repo_opts(), &err);
	else
		rc = pw_repo_open_opts(out, ".", pw_cli_repo_opts(), &err);
	if (!rc)
		return 0;
	if (rc == PW_ENOTFOUND && !(gd && *gd))
		return pw_cli_fatal(
		        "not a git repository (or any of the parent directories): .git");
	return pw_cli_fatal("%s", err.msg);
}

/* Git's DWIM order for a short ref name. */
static const char *const rev_rules[] = {"%s",
                                        "refs/%s",
                                        "refs/tags/%s",
                                        "refs/heads/%s",
                                        "refs/remotes/%s",
                                        "refs/remotes/%s/HEAD"};

int pw_cli_resolve_rev(struct pw_repo *repo, const char *arg, struct pw_oid *out, char **full_name)
{
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	size_t i, len = strlen(arg);
	int found = 0;

	if (full_name)
		*full_name = NULL;
	if (len == algo->hexsz && !pw_oid_from_hex(out, arg, len, algo))
		return 0;
	if (!strcmp(arg, "@"))
		arg = "HEAD";
	for (i = 0; i < sizeof(rev_rules) / sizeof(rev_rules[0]); i++) {
		char name[4096];
		struct pw_oid oid;
		int n = snprintf(name, sizeof(name), rev_rules[i], arg);

		if (n < 0 || (size_t)n >= sizeof(name) || !pw_refname_is_storable(name))
			continue;
		if (pw_refs_resolve(repo, name, &oid, NULL))
			continue;
		if (!found) {
			*out = oid;
			if (full_name)
				*full_name = strdup(name);
		}
		found++;
	}
	if (found > 1)
		fprintf(stderr, "warning: refname '%s' is ambiguous.\n", arg);
	return found ? 0 : PW_ENOTFOUND;
}
