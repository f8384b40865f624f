/* libcurl, loaded when the first HTTP connection is made rather than linked.
 *
 * Linking libcurl maps it and its thirty-odd dependencies (GnuTLS, Kerberos,
 * LDAP, ...) into every process, and relocating them costs about 4.5 MiB of
 * resident memory and a millisecond at every start. Most packwire processes
 * never speak HTTP as a client: an upload-pack spawned by sshd or the daemon
 * only reads a repository. So http.c calls libcurl through this table, which
 * pw_curl_load fills from libcurl's shared object on first use.
 *
 * Include this instead of <curl/curl.h>: the macros at the end send the
 * usual curl_* names through the table, so callers read as plain libcurl. */
#ifndef PW_TRANSPORT_CURL_LOAD_H
#define PW_TRANSPORT_CURL_LOAD_H

/* The table holds plain function pointers: no type-checking macros. */
#define CURL_DISABLE_TYPECHECK 1
#include <curl/curl.h>

#include "packwire/error.h"

/* Every libcurl function packwire calls. */
#define PW_CURL_FUNCS(X)                                                                           \
	X(curl_global_init)                                                                        \
	X(curl_easy_init)                                                                          \
	X(curl_easy_setopt)                                                                        \
	X(curl_easy_getinfo)                                                                       \
	X(curl_easy_perform)                                                                       \
	X(curl_easy_reset)                                                                         \
	X(curl_easy_cleanup)                                                                       \
	X(curl_easy_strerror)                                                                      \
	X(curl_slist_append)                                                                       \
	X(curl_slist_free_all)

struct pw_curl_api {
#define PW_CURL_SLOT(name) __typeof__(name) *name;
	PW_CURL_FUNCS(PW_CURL_SLOT)
#undef PW_CURL_SLOT
};

extern struct pw_curl_api pw_curl__api;

/* Load libcurl once per process (thread-safe) and call curl_global_init.
 * 0, or PW_EIO with a message that names the library and what went wrong. */
int pw_curl_load(struct pw_error *err);

#ifndef PW_CURL_LOAD_IMPL
/* curl.h wraps these two in argument-counting macros. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init    pw_curl__api.curl_global_init
#define curl_easy_init      pw_curl__api.curl_easy_init
#define curl_easy_setopt    pw_curl__api.curl_easy_setopt
#define curl_easy_getinfo   pw_curl__api.curl_easy_getinfo
#define curl_easy_perform   pw_curl__api.curl_easy_perform
#define curl_easy_reset     pw_curl__api.curl_easy_reset
#define curl_easy_cleanup   pw_curl__api.curl_easy_cleanup
#define curl_easy_strerror  pw_curl__api.curl_easy_strerror
#define curl_slist_append   pw_curl__api.curl_slist_append
#define curl_slist_free_all pw_curl__api.curl_slist_free_all
#endif

#endif
