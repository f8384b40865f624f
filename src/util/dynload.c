/* Shared libraries opened at first use: see dynload.h. */
#include "util/dynload.h"

#include <dlfcn.h>
#include <stdio.h>

int pw_dynload(const char *soname, const char *what, const struct pw_dynsym *syms, size_t n,
               char *why, size_t why_len)
{
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	const char *e;
	size_t i;

	if (!h) {
		e = dlerror();
		snprintf(why, why_len, "cannot load %s (needed for %s): %s", soname, what,
		         e ? e : "unknown error");
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (!(*syms[i].slot = dlsym(h, syms[i].name))) {
			snprintf(why, why_len, "%s (needed for %s) has no symbol %s", soname, what,
			         syms[i].name);
			return -1;
		}
	}
	return 0;
}
