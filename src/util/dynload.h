/* Shared libraries opened at first use instead of linked (libcurl for the
 * HTTP client, libmicrohttpd for packwire serve): see transport/curl-load.h
 * for why. */
#ifndef PW_UTIL_DYNLOAD_H
#define PW_UTIL_DYNLOAD_H

#include <stddef.h>

struct pw_dynsym {
	const char *name;
	void **slot; /* receives the address: POSIX lets a function pointer be set this way */
};

/* dlopen soname and resolve every symbol into its slot. 0, or -1 with a
 * message in why (naming the library, and the symbol when one is missing;
 * `what` says what the library is for). The library is never closed. */
int pw_dynload(const char *soname, const char *what, const struct pw_dynsym *syms, size_t n,
               char *why, size_t why_len);

#endif
