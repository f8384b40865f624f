/* The files of a dumb HTTP server, parsed without I/O (fuzzed by
 * fuzz-dumb-info-refs and fuzz-dumb-info-packs): info/refs, HEAD,
 * objects/info/packs and the two alternates files. */
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/hash.h"
#include "proto/quote.h"
#include "transport/dumb.h"

static int bad(struct pw_error *err, const char *file, size_t line, const char *what,
               const uint8_t *p, size_t n)
{
	char q[PW_QUOTE_MAX];

	return pw_error_set(err, PW_EPROTO, "dumb HTTP: %s line %zu: %s: '%s'", file, line, what,
	                    pw_proto__quote(q, sizeof(q), (const char *)p, n));
}

/* The next line of p[0..n) from *off (without its '\n'); 0 at the end. */
static int next_line(const uint8_t *p, size_t n, size_t *off, const uint8_t **line, size_t *len)
{
	const uint8_t *nl;

	if (*off >= n)
		return 0;
	*line = p + *off;
	nl = memchr(*line, '\n', n - *off);
	*len = nl ? (size_t)(nl - *line) : n - *off;
	*off += *len + (nl ? 1 : 0);
	return 1;
}

static int is_hex(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

static int name_ok(const uint8_t *p, size_t n)
{
	size_t i;

	if (!n || n > 4096)
		return 0;
	for (i = 0; i < n; i++)
		if (p[i] <= ' ' || p[i] == 0x7f)
			return 0;
	return 1;
}

int pw_dumb_parse_refs(const uint8_t *p, size_t n, pw_dumb_ref_fn fn, void *ctx,
                       const struct pw_hash_algo **algo, struct pw_error *err)
{
	const uint8_t *line, *tab, *prev = NULL;
	size_t off = 0, len, no = 0, prev_len = 0;
	int rc;

	*algo = NULL;
	while (next_line(p, n, &off, &line, &len)) {
		struct pw_oid oid;
		const uint8_t *name;
		size_t hexlen, nlen;
		int peeled;

		no++;
		if (len && line[len - 1] == '\r')
			len--;
		if (!len)
			continue;
		tab = memchr(line, '\t', len);
		if (!tab)
			return bad(err, "info/refs", no, "not '<object id> TAB <ref name>'", line,
			           len);
		hexlen = (size_t)(tab - line);
		if (!*algo) {
			if (!is_hex(line, hexlen))
				return bad(err, "info/refs", no, "not an object id", line, hexlen);
			if (!(*algo = pw_hash_guess_from_hexlen(hexlen)))
				return pw_error_set(err, PW_EPROTO,
				                    "dumb HTTP: info/refs: an object id of %zu hex "
				                    "digits is neither SHA-1 (40) nor SHA-256 (64)",
				                    hexlen);
		}
		if (hexlen != (*algo)->hexsz || !is_hex(line, hexlen) ||
		    pw_oid_from_hex(&oid, (const char *)line, hexlen, *algo))
			return bad(err, "info/refs", no,
			           (*algo)->hexsz == 40
			                   ? "not a SHA-1 object id like the first line's"
			                   : "not a SHA-256 object id like the first line's",
			           line, hexlen);
		name = tab + 1;
		nlen = len - hexlen - 1;
		if (!name_ok(name, nlen))
			return bad(err, "info/refs", no, "bad ref name", name, nlen);
		peeled = nlen > 3 && !memcmp(name + nlen - 3, "^{}", 3);
		if (peeled && (!prev || prev_len != nlen - 3 || memcmp(prev, name, nlen - 3)))
			return bad(err, "info/refs", no, "peeled value without its ref", name,
			           nlen);
		if (!peeled) {
			prev = name;
			prev_len = nlen;
		}
		if ((rc = fn(ctx, (const char *)name, peeled ? nlen - 3 : nlen, &oid, peeled)))
			return rc;
	}
	return 0;
}

int pw_dumb_parse_head(const uint8_t *p, size_t n, const struct pw_hash_algo *algo, char **symref,
                       struct pw_oid *oid, struct pw_error *err)
{
	*symref = NULL;
	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (n > 5 && !memcmp(p, "ref: ", 5)) {
		const uint8_t *name = p + 5;
		size_t len = n - 5;

		while (len && *name == ' ')
			name++, len--;
		if (!name_ok(name, len) || len < 5 || memcmp(name, "refs/", 5))
			return bad(err, "HEAD", 1, "not a symbolic ref to refs/", p, n);
		if (!(*symref = malloc(len + 1)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		memcpy(*symref, name, len);
		(*symref)[len] = 0;
		return 0;
	}
	if (!algo)
		algo = pw_hash_guess_from_hexlen(n);
	if (!algo || n != algo->hexsz || !is_hex(p, n) ||
	    pw_oid_from_hex(oid, (const char *)p, n, algo))
		return bad(err, "HEAD", 1, "neither 'ref: <name>' nor an object id", p, n);
	return 0;
}

void pw_dumb_free_names(char **names, size_t nr)
{
	size_t i;

	for (i = 0; names && i < nr; i++)
		free(names[i]);
	free(names);
}

static int push_name(char ***v, size_t *nr, size_t max, const char *s, size_t len,
                     struct pw_error *err)
{
	char **q, *c;

	if (*nr >= max)
		return pw_error_set(err, PW_ETOOBIG, "dumb HTTP: more than %zu entries", max);
	if (!(c = malloc(len + 1)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memcpy(c, s, len);
	c[len] = 0;
	if (!(q = realloc(*v, (*nr + 1) * sizeof(**v)))) {
		free(c);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	*v = q;
	q[(*nr)++] = c;
	return 0;
}

int pw_dumb_parse_packs(const uint8_t *p, size_t n, const struct pw_hash_algo *algo, char ***names,
                        size_t *nr, struct pw_error *err)
{
	const uint8_t *line;
	size_t off = 0, len, no = 0, i;
	int rc;

	*names = NULL;
	*nr = 0;
	while (next_line(p, n, &off, &line, &len)) {
		const uint8_t *name;
		size_t nlen;

		no++;
		if (len && line[len - 1] == '\r')
			len--;
		if (len < 2 || line[0] != 'P' || line[1] != ' ')
			continue; /* "D", "T" and blank lines of old writers, as Git */
		name = line + 2;
		nlen = len - 2;
		/* the name becomes part of a URL and a file name: only this shape */
		if (nlen != 5 + algo->hexsz + 5 || memcmp(name, "pack-", 5) ||
		    !is_hex(name + 5, algo->hexsz) || memcmp(name + 5 + algo->hexsz, ".pack", 5)) {
			rc = bad(err, "objects/info/packs", no,
			         algo->hexsz == 40 ? "not 'P pack-<40 hex digits>.pack'"
			                           : "not 'P pack-<64 hex digits>.pack'",
			         line, len);
			goto fail;
		}
		for (i = 0; i < *nr; i++)
			if (!memcmp((*names)[i], name, nlen))
				break;
		if (i < *nr)
			continue;
		if ((rc = push_name(names, nr, PW_DUMB_MAX_PACKS, (const char *)name, nlen, err)))
			goto fail;
	}
	return 0;
fail:
	pw_dumb_free_names(*names, *nr);
	*names = NULL;
	*nr = 0;
	return rc;
}

/* Remove "." and ".." segments from the path part of url (after the host):
 * -1 when ".." climbs above the root. */
static int normalize(struct pw_buf *url, size_t path_start)
{
	struct pw_buf out = PW_BUF_INIT;
	const char *s = url->data + path_start, *seg;
	int rc = 0;

	if (pw_buf_add(&out, url->data, path_start))
		return PW_ENOMEM;
	while (*s) {
		size_t l;

		while (*s == '/')
			s++;
		seg = s;
		l = strcspn(s, "/");
		s += l;
		if (!l || (l == 1 && seg[0] == '.'))
			continue;
		if (l == 2 && seg[0] == '.' && seg[1] == '.') {
			char *slash;

			if (out.len <= path_start) {
				rc = -1;
				break;
			}
			slash = memrchr(out.data + path_start, '/', out.len - path_start);
			pw_buf_setlen(&out, slash ? (size_t)(slash - out.data) : path_start);
			continue;
		}
		if (pw_buf_addch(&out, '/') || pw_buf_add(&out, seg, l)) {
			rc = PW_ENOMEM;
			break;
		}
	}
	if (!rc) {
		pw_buf_free(url);
		*url = out;
		return 0;
	}
	pw_buf_free(&out);
	return rc;
}

/* Where the path starts in "scheme://host[:port]/...": the first '/' after
 * the host (the length when there is none). */
static size_t path_start(const char *url)
{
	const char *h = strstr(url, "://");

	if (!h)
		return 0;
	h += 3;
	return (size_t)(h - url) + strcspn(h, "/?#");
}

int pw_dumb_parse_alternates(const uint8_t *p, size_t n, const char *objects_url, char ***urls,
                             size_t *nr, size_t *skipped, struct pw_error *err)
{
	const uint8_t *line;
	size_t off = 0, len, no = 0, ps;
	struct pw_buf u = PW_BUF_INIT;
	int rc = 0;

	*urls = NULL;
	*nr = 0;
	*skipped = 0;
	while (next_line(p, n, &off, &line, &len)) {
		no++;
		while (len &&
		       (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '/'))
			len--;
		if (!len || line[0] == '#')
			continue;
		if (memchr(line, 0, len) || memchr(line, '?', len) || memchr(line, '#', len) ||
		    len > 4096) {
			rc = bad(err, "objects/info/alternates", no, "not a path or URL", line,
			         len);
			goto fail;
		}
		pw_buf_reset(&u);
		if ((len > 7 && !memcmp(line, "http://", 7)) ||
		    (len > 8 && !memcmp(line, "https://", 8))) {
			rc = pw_buf_add(&u, line, len);
			ps = 0;
		} else if (memchr(line, ':', len) && memmem(line, len, "://", 3)) {
			(*skipped)++; /* another protocol: not followed, as Git */
			continue;
		} else if (line[0] == '/') {
			/* a path on the same server */
			rc = pw_buf_add(&u, objects_url, path_start(objects_url));
			if (!rc)
				rc = pw_buf_add(&u, line, len);
			ps = path_start(objects_url);
		} else {
			rc = pw_buf_addf(&u, "%s/", objects_url);
			if (!rc)
				rc = pw_buf_add(&u, line, len);
			ps = path_start(objects_url);
		}
		if (rc) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto fail;
		}
		if (!ps) {
			/* an absolute URL: a host of host-name characters */
			const char *h = strstr(u.data, "://") + 3;
			size_t hl = strcspn(h, "/"), k;

			for (k = 0; k < hl; k++)
				if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				            "0123456789.-_:[]@%",
				            h[k]))
					break;
			if (!hl || k < hl || (hl <= 2 && h[0] == '.')) {
				rc = bad(err, "objects/info/alternates", no, "not a valid URL",
				         line, len);
				goto fail;
			}
			ps = path_start(u.data);
		}
		if ((rc = normalize(&u, ps))) {
			rc = rc == PW_ENOMEM ? pw_error_set(err, rc, "out of memory")
			                     : bad(err, "objects/info/alternates", no,
			                           "climbs above the server's root", line, len);
			goto fail;
		}
		if ((rc = push_name(urls, nr, PW_DUMB_MAX_ALTERNATES, u.data, u.len, err)))
			goto fail;
	}
	pw_buf_free(&u);
	return 0;
fail:
	pw_buf_free(&u);
	pw_dumb_free_names(*urls, *nr);
	*urls = NULL;
	*nr = 0;
	return rc;
}
