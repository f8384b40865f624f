/* Owned copies of protocol lines, kept as offsets into one buffer while they
 * arrive (the buffer may move) and turned into views when complete. */
#ifndef PW_PROTO_LINES_H
#define PW_PROTO_LINES_H

#include "packwire/buf.h"

/* Append p[0..n) as line number `nr`; PW_ETOOBIG when nr reaches max_lines
 * or store->max is hit. */
int pw_proto__lines_add(struct pw_buf *store, size_t **off, size_t **len, size_t *alloc, size_t nr,
                        const char *p, size_t n, size_t max_lines);
/* Views of lines [0..nr) into store; *out malloc'd (NULL when nr is 0). */
int pw_proto__lines_views(const struct pw_buf *store, const size_t *off, const size_t *len,
                          size_t nr, struct pw_str **out);

#endif
