/* libcurl loaded on first use: see curl-load.h. */
#define PW_CURL_LOAD_IMPL 1
#include "transport/curl-load.h"

#include <pthread.h>
#include <stdio.h>

#include "util/dynload.h"

#ifndef PW_CURL_SONAME
#define PW_CURL_SONAME "libcurl.so.4"
#endif

struct pw_curl_api pw_curl__api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_why[320]; /* empty once loaded and initialised */

static void load(void)
{
#define PW_CURL_SYM(name) {#name, (void **)&pw_curl__api.name},
	static const struct pw_dynsym syms[] = {PW_CURL_FUNCS(PW_CURL_SYM)};
#undef PW_CURL_SYM
	CURLcode cc;

	if (pw_dynload(PW_CURL_SONAME, "HTTP", syms, sizeof(syms) / sizeof(syms[0]), load_why,
	               sizeof(load_why)))
		return;
	if ((cc = pw_curl__api.curl_global_init(CURL_GLOBAL_DEFAULT)) != CURLE_OK)
		snprintf(load_why, sizeof(load_why), "cannot initialise libcurl: %s",
		         pw_curl__api.curl_easy_strerror(cc));
}

int pw_curl_load(struct pw_error *err)
{
	pthread_once(&load_once, load);
	if (load_why[0])
		return pw_error_set(err, PW_EIO, "%s", load_why);
	return 0;
}
