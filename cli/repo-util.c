/* Helpers shared by the commands that work inside a repository: finding it
 * the way Git does (GIT_DIR, else discovery from the current directory) and
 * turning a revision argument into an object id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"

int pw_cli_find_repo(struct pw_repo **out, int required)
{
	struct pw_error err = {0};
	const char *gd = getenv("GIT_DIR");
	int rc = pw_repo_discover(out, gd, ".", pw_cli_repo_opts(), &err);

	if (!rc)
		return 0;
	*out = NULL;
	if (rc == PW_ENOTFOUND && !(gd && *gd))
		return required ? pw_cli_fatal("not a git repository (or any of the parent "
		                               "directories): .git")
		                : 0;
	return pw_cli_fatal("%s", err.msg);
}

int pw_cli_open_repo(struct pw_repo **out)
{
	return pw_cli_find_repo(out, 1);
}

int pw_cli_resolve_rev(struct pw_repo *repo, const char *arg, struct pw_oid *out, char **full_name)
{
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	size_t len = strlen(arg);
	unsigned found = 0;
	int rc;

	if (full_name)
		*full_name = NULL;
	if (len == algo->hexsz && !pw_oid_from_hex(out, arg, len, algo))
		return 0;
	rc = pw_refs_dwim(repo, arg, out, full_name, &found);
	if (found > 1)
		fprintf(stderr, "warning: refname '%s' is ambiguous.\n", arg);
	return rc;
}

void pw_cli_warning_cb(void *data, const char *msg)
{
	(void)data;
	fprintf(stderr, "warning: %s\n", msg);
}
