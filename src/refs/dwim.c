/* Git's rules for a short ref name ("main", "v1.0", "origin"): the order
 * rev-parse, fetch and push try its expansions in. Written once here for the
 * CLI's revision arguments, fetch's refspec sources and push's sources. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/refs.h"
#include "packwire/repo.h"

static const char *const dwim_rules[] = {"%s",
                                         "refs/%s",
                                         "refs/tags/%s",
                                         "refs/heads/%s",
                                         "refs/remotes/%s",
                                         "refs/remotes/%s/HEAD"};

#define NR_RULES (sizeof(dwim_rules) / sizeof(dwim_rules[0]))

int pw_refname_dwim_match(const char *shortname, const char *name)
{
	char buf[1024];
	size_t i;

	for (i = 0; i < NR_RULES; i++) {
		if (snprintf(buf, sizeof(buf), dwim_rules[i], shortname) >= (int)sizeof(buf))
			return 0;
		if (!strcmp(buf, name))
			return 1;
	}
	return 0;
}

int pw_refs_dwim(struct pw_repo *repo, const char *shortname, struct pw_oid *oid, char **full_name,
                 unsigned *nmatch)
{
	unsigned found = 0;
	size_t i;

	if (full_name)
		*full_name = NULL;
	if (nmatch)
		*nmatch = 0;
	if (!strcmp(shortname, "@"))
		shortname = "HEAD";
	for (i = 0; i < NR_RULES; i++) {
		char name[4096];
		struct pw_oid cur;
		int n = snprintf(name, sizeof(name), dwim_rules[i], shortname);

		if (n < 0 || (size_t)n >= sizeof(name) || !pw_refname_is_storable(name))
			continue;
		if (pw_refs_resolve(repo, name, &cur, NULL))
			continue;
		if (!found++) {
			*oid = cur;
			if (full_name && !(*full_name = strdup(name)))
				return PW_ENOMEM;
		}
		if (!nmatch)
			break;
	}
	if (nmatch)
		*nmatch = found;
	return found ? 0 : PW_ENOTFOUND;
}
