/* Make wire bytes safe to put in an error message. */
#ifndef PW_PROTO_QUOTE_H
#define PW_PROTO_QUOTE_H

#include <stddef.h>

/* Enough for the longest id-carrying line we quote plus escapes. */
#define PW_QUOTE_MAX 200

/*
 * Copy p[0..len) into dst (NUL-terminated, at most dstsz bytes), escaping
 * control and non-ASCII bytes as \xNN and cutting long input with "...".
 * Returns dst so it can sit in a printf argument list.
 */
char *pw_proto__quote(char *dst, size_t dstsz, const char *p, size_t len);

#endif
