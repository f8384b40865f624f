/* libmicrohttpd loaded on first use: see mhd-load.h. */
#define PW_MHD_LOAD_IMPL 1
#include "server/mhd-load.h"

#include <pthread.h>

#include "util/dynload.h"

#ifndef PW_MHD_SONAME
#define PW_MHD_SONAME "libmicrohttpd.so.12"
#endif

struct pw_mhd_api pw_mhd__api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_why[320]; /* empty once loaded */

static void load(void)
{
#define PW_MHD_SYM(name) {#name, (void **)&pw_mhd__api.name},
	static const struct pw_dynsym syms[] = {PW_MHD_FUNCS(PW_MHD_SYM)};
#undef PW_MHD_SYM

	pw_dynload(PW_MHD_SONAME, "packwire serve", syms, sizeof(syms) / sizeof(syms[0]), load_why,
	           sizeof(load_why));
}

int pw_mhd_load(struct pw_error *err)
{
	pthread_once(&load_once, load);
	if (load_why[0])
		return pw_error_set(err, PW_EIO, "%s", load_why);
	return 0;
}
