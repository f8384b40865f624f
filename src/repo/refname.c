/* Ref-name syntax (the rules of git check-ref-format). It lives below the
 * refs layer because the repository needs it too: pw_repo_init checks the
 * initial branch name before any ref exists. */
#include <string.h>

#include "repo/repo-priv.h"

int pw_repo__refname_ok(const char *name, int allow_onelevel)
{
	const char *p = name;
	int comps = 0;
	size_t n = strlen(name);

	if (!n || name[0] == '/' || name[n - 1] == '/' || name[n - 1] == '.' || !strcmp(name, "@"))
		return 0;
	for (;;) {
		const char *s = p;

		if (*p == '.')
			return 0;
		while (*p && *p != '/') {
			unsigned char c = (unsigned char)*p;

			if (c < 0x20 || c == 0x7f || c == ' ' || c == '~' || c == '^' || c == ':' ||
			    c == '?' || c == '*' || c == '[' || c == '\\')
				return 0;
			if ((c == '.' && p[1] == '.') || (c == '@' && p[1] == '{'))
				return 0;
			p++;
		}
		if (p == s)
			return 0;
		if (p - s >= 5 && !memcmp(p - 5, ".lock", 5))
			return 0;
		comps++;
		if (!*p)
			break;
		p++;
	}
	return comps >= 2 || allow_onelevel;
}
