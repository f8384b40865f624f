/* Fuzz the readers of what a pushed superproject says about its
 * submodules (src/compat/submodule.h): byte 0 picks the mode. Even: the
 * rest is a .gitmodules (pw_compat__gitmodules_parse), and every URL found
 * is resolved against "g/super.git". Odd: the rest is one URL, resolved
 * against "g/super.git" (bit 1 clear) or with no superproject path. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compat/submodule.h"

static void resolve(const char *super, const char *url, size_t len)
{
	struct pw_buf out = PW_BUF_INIT;
	int kind = pw_compat__submodule_url(&out, super, url, len);

	/* a path below the base never climbs out of it */
	if (kind == PW_SUBURL_REL || kind == PW_SUBURL_NET) {
		const char *p = out.data;

		if (!out.len || p[0] == '/' || !strncmp(p, "../", 3) || strstr(p, "/../") ||
		    (out.len >= 3 && !strcmp(p + out.len - 3, "/..")) || !strcmp(p, ".."))
			__builtin_trap();
	}
	if (kind == PW_SUBURL_ABS &&
	    (out.len < 2 || out.data[0] != '/' || strstr(out.data, "/../")))
		__builtin_trap();
	pw_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	struct pw_gitmodules g;
	struct pw_error err;

	if (!size)
		return 0;
	if (data[0] & 1) {
		resolve(data[0] & 2 ? NULL : "g/super.git", text, size - 1);
		return 0;
	}
	if (pw_compat__gitmodules_parse(&g, text, size - 1, &err))
		return 0;
	for (size_t i = 0; i < g.nr; i++)
		if (g.v[i].url)
			resolve("g/super.git", g.v[i].url, strlen(g.v[i].url));
	pw_compat__gitmodules_free(&g);
	return 0;
}
