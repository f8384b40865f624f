/* Refspecs: [+]src[:dst], ^negative, one '*' on each side of a glob. */
#include <stdlib.h>
#include <string.h>

#include "packwire/client.h"

void pw_refspec_free(struct pw_refspec *r)
{
	free(r->src);
	free(r->dst);
	memset(r, 0, sizeof(*r));
}

static int stars(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '*';
	return n;
}

int pw_refspec_parse(struct pw_refspec *out, const char *spec, struct pw_error *err)
{
	const char *p = spec, *colon;
	int ss, ds;

	memset(out, 0, sizeof(*out));
	if (*p == '+') {
		out->force = 1;
		p++;
	} else if (*p == '^') {
		out->negative = 1;
		p++;
	}
	colon = strchr(p, ':');
	out->src = colon ? strndup(p, (size_t)(colon - p)) : strdup(p);
	if (colon && colon[1])
		out->dst = strdup(colon + 1);
	if (!out->src || (colon && colon[1] && !out->dst)) {
		pw_refspec_free(out);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	ss = stars(out->src);
	ds = stars(out->dst);
	if (out->negative && (out->dst || colon || !*out->src))
		goto bad;
	if (ss > 1 || ds > 1 || (out->dst && ss != ds))
		goto bad;
	if (!*out->src && !out->dst)
		goto bad;
	out->glob = ss == 1;
	return 0;
bad:
	pw_refspec_free(out);
	return pw_error_set(err, PW_EINVAL, "invalid refspec '%s'", spec);
}

int pw_refspec_match(const struct pw_refspec *r, const char *name, int reverse, char **out)
{
	const char *pat = reverse ? r->dst : r->src, *other = reverse ? r->src : r->dst;
	const char *star, *ostar;
	size_t pre, suf, nl = strlen(name), mid;

	if (out)
		*out = NULL;
	if (!pat)
		return 0;
	if (!r->glob) {
		if (strcmp(pat, name))
			return 0;
		if (out && other && !(*out = strdup(other)))
			return PW_ENOMEM;
		return 1;
	}
	star = strchr(pat, '*');
	pre = (size_t)(star - pat);
	suf = strlen(star + 1);
	if (nl < pre + suf || strncmp(name, pat, pre) || strcmp(name + nl - suf, star + 1))
		return 0;
	if (!out || !other)
		return 1;
	mid = nl - pre - suf;
	ostar = strchr(other, '*');
	*out = malloc(strlen(other) + mid + 1);
	if (!*out)
		return PW_ENOMEM;
	memcpy(*out, other, (size_t)(ostar - other));
	memcpy(*out + (ostar - other), name + pre, mid);
	strcpy(*out + (ostar - other) + mid, ostar + 1);
	return 1;
}
