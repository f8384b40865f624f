#include <stdlib.h>

#include "proto/lines.h"

int pw_proto__lines_add(struct pw_buf *store, size_t **off, size_t **len, size_t *alloc, size_t nr,
                        const char *p, size_t n, size_t max_lines)
{
	int rc;

	if (nr >= max_lines)
		return PW_ETOOBIG;
	if (nr == *alloc) {
		size_t na = *alloc ? *alloc * 2 : 16;
		size_t *no, *nl;

		no = realloc(*off, na * sizeof(*no));
		if (!no)
			return PW_ENOMEM;
		*off = no;
		nl = realloc(*len, na * sizeof(*nl));
		if (!nl)
			return PW_ENOMEM;
		*len = nl;
		*alloc = na;
	}
	(*off)[nr] = store->len;
	(*len)[nr] = n;
	/* NUL-separated so each line is also a C string */
	rc = pw_buf_add(store, p, n);
	if (!rc)
		rc = pw_buf_addch(store, '\0');
	return rc;
}

int pw_proto__lines_views(const struct pw_buf *store, const size_t *off, const size_t *len,
                          size_t nr, struct pw_str **out)
{
	size_t i;

	*out = NULL;
	if (!nr)
		return 0;
	*out = malloc(nr * sizeof(**out));
	if (!*out)
		return PW_ENOMEM;
	for (i = 0; i < nr; i++) {
		(*out)[i].p = store->data + off[i];
		(*out)[i].len = len[i];
	}
	return 0;
}
