/* Classifying and splitting remote addresses as Git does. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/transport.h"

static char *dupn(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		memcpy(s, p, n);
		s[n] = 0;
	}
	return s;
}

void pw_url_free(struct pw_url *u)
{
	if (!u)
		return;
	free(u->helper);
	free(u->user);
	free(u->host);
	free(u->port);
	free(u->path);
	free(u->raw);
	memset(u, 0, sizeof(*u));
}

/* "scheme://": letters, digits, '+', '-', '.' before "://". */
static size_t scheme_len(const char *url)
{
	size_t i = 0;

	while (isalnum((unsigned char)url[i]) || url[i] == '+' || url[i] == '-' || url[i] == '.')
		i++;
	if (i && !strncmp(url + i, "://", 3))
		return i;
	return 0;
}

int pw_url_is_local(const char *url)
{
	const char *colon, *slash;

	if (!strncmp(url, "file://", 7))
		return 1;
	if (strstr(url, "::") || scheme_len(url))
		return 0;
	colon = strchr(url, ':');
	slash = strchr(url, '/');
	return !colon || (slash && slash < colon);
}

/* "[user@]host[:port]" or "[user@][host:port]" into u. */
static int split_host(struct pw_url *u, const char *p, size_t n, int allow_port,
                      struct pw_error *err)
{
	const char *at = memchr(p, '@', n), *end = p + n, *colon;

	if (at) {
		if (!(u->user = dupn(p, (size_t)(at - p))))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		p = at + 1;
	}
	if (p < end && *p == '[') {
		const char *rb = memchr(p, ']', (size_t)(end - p));

		if (!rb)
			return pw_error_set(err, PW_EINVAL, "malformed host in '%s'", u->raw);
		if (!(u->host = dupn(p + 1, (size_t)(rb - p - 1))))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		colon = memchr(u->host, ':', strlen(u->host));
		if (colon && !allow_port) {
			/* scp-like "[host:port]:path" */
			if (!(u->port = strdup(colon + 1)))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			u->host[colon - u->host] = 0;
		}
		p = rb + 1;
		if (allow_port && p < end && *p == ':') {
			if (!(u->port = dupn(p + 1, (size_t)(end - p - 1))))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	} else {
		colon = allow_port ? memchr(p, ':', (size_t)(end - p)) : NULL;
		if (colon) {
			if (!(u->port = dupn(colon + 1, (size_t)(end - colon - 1))))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			end = colon;
		}
		if (!(u->host = dupn(p, (size_t)(end - p))))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (u->port && !*u->port) {
		free(u->port);
		u->port = NULL;
	}
	if (!*u->host)
		return pw_error_set(err, PW_EINVAL, "no host in '%s'", u->raw);
	if (u->host[0] == '-' || (u->user && u->user[0] == '-'))
		return pw_error_set(err, PW_EINVAL, "strange hostname '%s' blocked", u->host);
	if (u->port && u->port[0] == '-')
		return pw_error_set(err, PW_EINVAL, "strange port '%s' blocked", u->port);
	return 0;
}

int pw_url_parse(struct pw_url *out, const char *url, struct pw_error *err)
{
	const char *sep;
	size_t sl;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!(out->raw = strdup(url)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (!*url) {
		rc = pw_error_set(err, PW_EINVAL, "empty remote address");
		goto fail;
	}
	sep = strstr(url, "::");
	sl = scheme_len(url);
	if (sep && (!sl || sep < url + sl)) {
		out->scheme = PW_URL_HELPER;
		if (!(out->helper = dupn(url, (size_t)(sep - url))) ||
		    !(out->path = strdup(sep + 2)))
			goto oom;
		return 0;
	}
	if (sl) {
		const char *rest = url + sl + 3, *slash;

		if (sl == 4 && !strncmp(url, "file", 4)) {
			out->scheme = PW_URL_FILE;
			if (!(out->path = strdup(rest)))
				goto oom;
			if (!*out->path) {
				rc = pw_error_set(err, PW_EINVAL, "no path in '%s'", url);
				goto fail;
			}
			return 0;
		}
		if ((sl == 3 && !strncmp(url, "ssh", 3)) ||
		    (sl == 7 && !strncmp(url, "git+ssh", 7)) ||
		    (sl == 7 && !strncmp(url, "ssh+git", 7)))
			out->scheme = PW_URL_SSH;
		else if (sl == 3 && !strncmp(url, "git", 3))
			out->scheme = PW_URL_GIT;
		else if (sl == 4 && !strncmp(url, "http", 4))
			out->scheme = PW_URL_HTTP;
		else if (sl == 5 && !strncmp(url, "https", 5))
			out->scheme = PW_URL_HTTPS;
		else {
			out->scheme = PW_URL_HELPER;
			if (!(out->helper = dupn(url, sl)) || !(out->path = strdup(url)))
				goto oom;
			return 0;
		}
		slash = strchr(rest, '/');
		if (!slash) {
			rc = pw_error_set(err, PW_EINVAL, "no path specified in '%s'", url);
			goto fail;
		}
		if ((rc = split_host(out, rest, (size_t)(slash - rest), 1, err)))
			goto fail;
		/* ssh://host/~user/x means ~user/x, as in Git */
		if ((out->scheme == PW_URL_SSH || out->scheme == PW_URL_GIT) && slash[1] == '~')
			slash++;
		if (!(out->path = strdup(slash)))
			goto oom;
		return 0;
	}
	if (pw_url_is_local(url)) {
		out->scheme = PW_URL_LOCAL;
		if (!(out->path = strdup(url)))
			goto oom;
		return 0;
	}
	/* scp-like [user@]host:path or [user@][host:port]:path */
	{
		const char *colon;

		if (url[0] == '[' || strchr(url, '[')) {
			const char *rb = strchr(url, ']');

			colon = rb ? strchr(rb, ':') : NULL;
		} else {
			colon = strchr(url, ':');
		}
		if (!colon) {
			rc = pw_error_set(err, PW_EINVAL, "malformed remote address '%s'", url);
			goto fail;
		}
		out->scheme = PW_URL_SSH;
		if ((rc = split_host(out, url, (size_t)(colon - url), 0, err)))
			goto fail;
		if (!(out->path = strdup(colon + 1)))
			goto oom;
		if (!*out->path) {
			rc = pw_error_set(err, PW_EINVAL, "no path specified in '%s'", url);
			goto fail;
		}
	}
	return 0;
oom:
	rc = pw_error_set(err, PW_ENOMEM, "out of memory");
fail:
	pw_url_free(out);
	return rc;
}

int pw_sq_quote(struct pw_buf *out, const char *s)
{
	int rc = pw_buf_addch(out, '\'');

	for (; !rc && *s; s++) {
		if (*s == '\'' || *s == '!') {
			rc = pw_buf_adds(out, "'\\");
			if (!rc)
				rc = pw_buf_addch(out, *s);
			if (!rc)
				rc = pw_buf_addch(out, '\'');
		} else {
			rc = pw_buf_addch(out, *s);
		}
	}
	return rc ? rc : pw_buf_addch(out, '\'');
}
