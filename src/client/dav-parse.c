/* The XML a WebDAV server answers PROPFIND and LOCK with, parsed without
 * I/O (fuzzed by fuzz-dav). Only what a push needs is kept: each response's
 * href and whether it is a collection, whether an exclusive write lock is
 * supported, and the lock token. A small tokenizer, not a general XML
 * parser: elements are matched by local name (any prefix), attribute values
 * are skipped, DOCTYPE is refused (no entity expansion). Every index is
 * checked against the end of the input before it is read. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/dav.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "proto/quote.h"

struct name {
	const char *p; /* qualified name as written */
	size_t len;
	const char *local; /* after the prefix */
	size_t local_len;
};

struct xp {
	const uint8_t *p;
	size_t n, i;
	struct name stack[PW_DAV_MAX_DEPTH];
	size_t depth;
	struct pw_dav_answer *a;
	struct pw_error *err;
	/* the response being read */
	int in_response, collection;
	struct pw_buf href, token;
	int lock_exclusive, lock_write; /* inside the current lockentry */
};

static int bad(struct xp *x, const char *what)
{
	char q[PW_QUOTE_MAX];
	size_t k = x->n - x->i < 40 ? x->n - x->i : 40;

	return pw_error_set(x->err, PW_EPROTO, "WebDAV: malformed XML at byte %zu: %s near '%s'",
	                    x->i, what,
	                    pw_proto__quote(q, sizeof(q), (const char *)x->p + x->i, k));
}

static int is(const struct name *nm, const char *local)
{
	size_t l = strlen(local);

	return nm->local_len == l && !memcmp(nm->local, local, l);
}

/* The element at depth - 1 - up has this local name. */
static int at(const struct xp *x, size_t up, const char *local)
{
	return x->depth > up && is(&x->stack[x->depth - 1 - up], local);
}

static int inside(const struct xp *x, const char *local)
{
	size_t i;

	for (i = 0; i < x->depth; i++)
		if (is(&x->stack[i], local))
			return 1;
	return 0;
}

static int name_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-' || c == '.' || c == ':' || c >= 0x80;
}

static int space(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void skip_space(struct xp *x)
{
	while (x->i < x->n && space(x->p[x->i]))
		x->i++;
}

/* Find the terminator t from x->i; x->i moves past it. */
static int skip_past(struct xp *x, const char *t, const char *what)
{
	size_t tl = strlen(t);

	for (; x->i + tl <= x->n; x->i++)
		if (!memcmp(x->p + x->i, t, tl)) {
			x->i += tl;
			return 0;
		}
	x->i = x->n;
	return bad(x, what);
}

static int read_name(struct xp *x, struct name *nm)
{
	const char *colon;

	nm->p = (const char *)x->p + x->i;
	while (x->i < x->n && name_char(x->p[x->i]))
		x->i++;
	nm->len = (size_t)((const char *)x->p + x->i - nm->p);
	if (!nm->len)
		return bad(x, "expected a name");
	colon = memchr(nm->p, ':', nm->len);
	nm->local = colon ? colon + 1 : nm->p;
	nm->local_len = nm->len - (size_t)(nm->local - nm->p);
	if (!nm->local_len)
		return bad(x, "empty local name");
	return 0;
}

/* Where text goes: the current response's href or the lock token. */
static struct pw_buf *text_sink(struct xp *x)
{
	if (!at(x, 0, "href"))
		return NULL;
	if (at(x, 1, "response") && x->in_response)
		return &x->href;
	if (at(x, 1, "locktoken"))
		return &x->token;
	return NULL;
}

static int add(struct xp *x, struct pw_buf *b, const void *p, size_t len)
{
	int rc = pw_buf_add(b, p, len);

	if (rc == PW_ETOOBIG)
		return pw_error_set(x->err, rc, "WebDAV: an href longer than %u bytes",
		                    PW_DAV_MAX_HREF);
	if (rc)
		return pw_error_set(x->err, rc, "out of memory");
	return 0;
}

static int utf8(struct xp *x, struct pw_buf *b, unsigned long c)
{
	uint8_t u[4];
	size_t k;

	if (c < 0x80) {
		u[0] = (uint8_t)c;
		k = 1;
	} else if (c < 0x800) {
		u[0] = (uint8_t)(0xc0 | (c >> 6));
		u[1] = (uint8_t)(0x80 | (c & 0x3f));
		k = 2;
	} else if (c < 0x10000) {
		u[0] = (uint8_t)(0xe0 | (c >> 12));
		u[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		u[2] = (uint8_t)(0x80 | (c & 0x3f));
		k = 3;
	} else {
		u[0] = (uint8_t)(0xf0 | (c >> 18));
		u[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
		u[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		u[3] = (uint8_t)(0x80 | (c & 0x3f));
		k = 4;
	}
	return add(x, b, u, k);
}

/* "&...;" at x->i: XML's five entities and character references. */
static int entity(struct xp *x, struct pw_buf *b)
{
	static const struct {
		const char *name;
		char c;
	} ents[] = {{"lt;", '<'}, {"gt;", '>'}, {"amp;", '&'}, {"quot;", '"'}, {"apos;", '\''}};
	size_t i, left;

	x->i++;
	left = x->n - x->i;
	for (i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
		size_t l = strlen(ents[i].name);

		if (left >= l && !memcmp(x->p + x->i, ents[i].name, l)) {
			x->i += l;
			return b ? add(x, b, &ents[i].c, 1) : 0;
		}
	}
	if (left >= 1 && x->p[x->i] == '#') {
		unsigned long c = 0;
		int hex = 0;
		size_t digits = 0;

		x->i++;
		if (x->i < x->n && x->p[x->i] == 'x') {
			hex = 1;
			x->i++;
		}
		for (; x->i < x->n && x->p[x->i] != ';'; x->i++, digits++) {
			int v = x->p[x->i];

			if (v >= '0' && v <= '9')
				v -= '0';
			else if (hex && v >= 'a' && v <= 'f')
				v -= 'a' - 10;
			else if (hex && v >= 'A' && v <= 'F')
				v -= 'A' - 10;
			else
				return bad(x, "bad character reference");
			c = c * (hex ? 16 : 10) + (unsigned long)v;
			if (c > 0x10ffff)
				return bad(x, "character reference out of range");
		}
		if (x->i >= x->n || !digits || !c || (c >= 0xd800 && c <= 0xdfff))
			return bad(x, "bad character reference");
		x->i++;
		return b ? utf8(x, b, c) : 0;
	}
	return bad(x, "unknown entity");
}

static int text(struct xp *x)
{
	struct pw_buf *b = text_sink(x);
	int rc;

	while (x->i < x->n && x->p[x->i] != '<') {
		size_t k = x->i;

		if (x->p[x->i] == '&') {
			if ((rc = entity(x, b)))
				return rc;
			continue;
		}
		while (k < x->n && x->p[k] != '<' && x->p[k] != '&')
			k++;
		if (b && (rc = add(x, b, x->p + x->i, k - x->i)))
			return rc;
		x->i = k;
	}
	return 0;
}

/* An href as a path: trimmed, scheme and host dropped, %XX decoded. */
static int href_path(struct xp *x, const char *s, size_t len, char **out)
{
	const char *scheme;
	char *o;
	size_t i, k = 0;

	while (len && space((uint8_t)*s))
		s++, len--;
	while (len && space((uint8_t)s[len - 1]))
		len--;
	scheme = len > 3 ? memchr(s, ':', len) : NULL;
	if (scheme && (size_t)(scheme - s) + 2 < len && scheme[1] == '/' && scheme[2] == '/') {
		const char *host = scheme + 3, *slash;

		slash = memchr(host, '/', len - (size_t)(host - s));
		if (!slash)
			slash = s + len;
		len -= (size_t)(slash - s);
		s = slash;
	}
	if (!(o = malloc(len + 1)))
		return pw_error_set(x->err, PW_ENOMEM, "out of memory");
	for (i = 0; i < len; i++) {
		if (s[i] == '%') {
			int hi = i + 2 < len ? pw_hexval((uint8_t)s[i + 1]) : -1;
			int lo = i + 2 < len ? pw_hexval((uint8_t)s[i + 2]) : -1;

			if (hi < 0 || lo < 0 || (!hi && !lo)) {
				free(o);
				return bad(x, "bad %-escape in an href");
			}
			o[k++] = (char)(hi * 16 + lo);
			i += 2;
		} else if (!s[i]) {
			free(o);
			return bad(x, "NUL in an href");
		} else {
			o[k++] = s[i];
		}
	}
	o[k] = 0;
	*out = o;
	return 0;
}

static int start(struct xp *x, const struct name *nm)
{
	if (x->depth >= PW_DAV_MAX_DEPTH)
		return pw_error_set(x->err, PW_ETOOBIG,
		                    "WebDAV: XML nested deeper than %d elements", PW_DAV_MAX_DEPTH);
	x->stack[x->depth++] = *nm;
	if (is(nm, "response") && at(x, 1, "multistatus")) {
		if (x->a->nr >= PW_DAV_MAX_ENTRIES)
			return pw_error_set(x->err, PW_ETOOBIG,
			                    "WebDAV: more than %u entries in one answer",
			                    PW_DAV_MAX_ENTRIES);
		x->in_response = 1;
		x->collection = 0;
		pw_buf_reset(&x->href);
	} else if (is(nm, "collection") && inside(x, "resourcetype") && x->in_response) {
		x->collection = 1;
	} else if (is(nm, "lockentry")) {
		x->lock_exclusive = x->lock_write = 0;
	} else if (is(nm, "exclusive") && at(x, 1, "lockscope")) {
		x->lock_exclusive = 1;
	} else if (is(nm, "write") && at(x, 1, "locktype")) {
		x->lock_write = 1;
	} else if (is(nm, "href") && at(x, 1, "locktoken")) {
		pw_buf_reset(&x->token);
	}
	return 0;
}

static int end(struct xp *x)
{
	const struct name *nm = &x->stack[x->depth - 1];
	int rc;

	if (is(nm, "response") && x->in_response && at(x, 1, "multistatus")) {
		struct pw_dav_entry *e;

		x->in_response = 0;
		if (!x->href.len)
			return bad(x, "a response without an href");
		if (x->a->nr == x->a->alloc) {
			size_t na = x->a->alloc ? 2 * x->a->alloc : 16;

			if (!(e = realloc(x->a->entries, na * sizeof(*e))))
				return pw_error_set(x->err, PW_ENOMEM, "out of memory");
			x->a->entries = e;
			x->a->alloc = na;
		}
		e = &x->a->entries[x->a->nr];
		if ((rc = href_path(x, x->href.data, x->href.len, &e->path)))
			return rc;
		e->collection = x->collection;
		x->a->nr++;
	} else if (is(nm, "lockentry")) {
		if (x->lock_exclusive && x->lock_write)
			x->a->exclusive_write = 1;
	} else if (is(nm, "href") && at(x, 1, "locktoken")) {
		char *t;
		size_t b = 0, e = x->token.len;

		while (b < e && space((uint8_t)x->token.data[b]))
			b++;
		while (e > b && space((uint8_t)x->token.data[e - 1]))
			e--;
		if (b == e || memchr(x->token.data + b, 0, e - b))
			return bad(x, "an empty or binary lock token");
		if (!x->a->lock_token) {
			if (!(t = strndup(x->token.data + b, e - b)))
				return pw_error_set(x->err, PW_ENOMEM, "out of memory");
			x->a->lock_token = t;
		}
	}
	x->depth--;
	return 0;
}

/* "<" at x->i */
static int tag(struct xp *x)
{
	struct name nm;
	int rc;

	x->i++;
	if (x->i >= x->n)
		return bad(x, "input ends in a tag");
	if (x->p[x->i] == '?')
		return skip_past(x, "?>", "unterminated processing instruction");
	if (x->p[x->i] == '!') {
		if (x->n - x->i >= 3 && !memcmp(x->p + x->i, "!--", 3))
			return skip_past(x, "-->", "unterminated comment");
		if (x->n - x->i >= 8 && !memcmp(x->p + x->i, "![CDATA[", 8)) {
			struct pw_buf *b = text_sink(x);
			size_t s = x->i + 8;

			if ((rc = skip_past(x, "]]>", "unterminated CDATA section")))
				return rc;
			return b ? add(x, b, x->p + s, x->i - 3 - s) : 0;
		}
		return bad(x, "DOCTYPE and other declarations are not accepted");
	}
	if (x->p[x->i] == '/') {
		x->i++;
		if ((rc = read_name(x, &nm)))
			return rc;
		skip_space(x);
		if (x->i >= x->n || x->p[x->i] != '>')
			return bad(x, "expected '>' after an end tag");
		x->i++;
		if (!x->depth || x->stack[x->depth - 1].len != nm.len ||
		    memcmp(x->stack[x->depth - 1].p, nm.p, nm.len))
			return bad(x, "end tag does not match its start tag");
		return end(x);
	}
	if ((rc = read_name(x, &nm)))
		return rc;
	for (;;) {
		struct name attr;
		uint8_t q;

		skip_space(x);
		if (x->i >= x->n)
			return bad(x, "input ends in a tag");
		if (x->p[x->i] == '>') {
			x->i++;
			return start(x, &nm);
		}
		if (x->p[x->i] == '/') {
			if (x->i + 1 >= x->n || x->p[x->i + 1] != '>')
				return bad(x, "expected '/>'");
			x->i += 2;
			if ((rc = start(x, &nm)))
				return rc;
			return end(x);
		}
		if ((rc = read_name(x, &attr)))
			return rc;
		skip_space(x);
		if (x->i >= x->n || x->p[x->i] != '=')
			return bad(x, "expected '=' after an attribute name");
		x->i++;
		skip_space(x);
		if (x->i >= x->n || (x->p[x->i] != '"' && x->p[x->i] != '\''))
			return bad(x, "expected a quoted attribute value");
		q = x->p[x->i++];
		while (x->i < x->n && x->p[x->i] != q && x->p[x->i] != '<')
			x->i++;
		if (x->i >= x->n || x->p[x->i] != q)
			return bad(x, "unterminated attribute value");
		x->i++;
	}
}

int pw_dav_parse(const uint8_t *p, size_t n, struct pw_dav_answer *out, struct pw_error *err)
{
	struct xp x;
	int rc = 0, seen_root = 0;

	memset(out, 0, sizeof(*out));
	if (n > PW_DAV_MAX_XML)
		return pw_error_set(err, PW_ETOOBIG, "WebDAV: an answer larger than %u bytes",
		                    PW_DAV_MAX_XML);
	memset(&x, 0, sizeof(x));
	x.p = p;
	x.n = n;
	x.a = out;
	x.err = err;
	pw_buf_init(&x.href, PW_DAV_MAX_HREF);
	pw_buf_init(&x.token, PW_DAV_MAX_HREF);
	/* a UTF-8 byte order mark */
	if (n >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		x.i = 3;
	while (!rc && x.i < x.n) {
		if (x.p[x.i] == '<') {
			size_t before = x.depth;

			rc = tag(&x);
			if (!rc && !before && x.depth)
				seen_root = 1;
		} else if (!x.depth) {
			skip_space(&x);
			if (x.i < x.n && x.p[x.i] != '<')
				rc = bad(&x, "text outside the root element");
		} else {
			rc = text(&x);
		}
	}
	if (!rc && x.depth)
		rc = bad(&x, "input ends inside an element");
	if (!rc && !seen_root)
		rc = pw_error_set(err, PW_EPROTO, "WebDAV: the answer has no XML element");
	pw_buf_free(&x.href);
	pw_buf_free(&x.token);
	return rc;
}

void pw_dav_answer_free(struct pw_dav_answer *a)
{
	size_t i;

	for (i = 0; i < a->nr; i++)
		free(a->entries[i].path);
	free(a->entries);
	free(a->lock_token);
	memset(a, 0, sizeof(*a));
}

char *pw_dav_lock_token_header(const char *h, size_t n)
{
	size_t i = 0;

	while (i < n) {
		const char *l = h + i, *nl = memchr(l, '\n', n - i);
		size_t len = nl ? (size_t)(nl - l) : n - i;

		i += len + (nl ? 1 : 0);
		if (len > 11 && !strncasecmp(l, "Lock-Token:", 11)) {
			const char *s = l + 11, *e = l + len;

			while (s < e && (*s == ' ' || *s == '\t'))
				s++;
			while (e > s && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
				e--;
			if (e - s >= 3 && *s == '<' && e[-1] == '>' &&
			    (size_t)(e - s - 2) <= PW_DAV_MAX_HREF && !memchr(s + 1, 0, e - s - 2))
				return strndup(s + 1, (size_t)(e - s - 2));
		}
	}
	return NULL;
}

int pw_dav_parse_packed_refs(const uint8_t *p, size_t n,
                             int (*fn)(void *ctx, const char *name, size_t name_len,
                                       const char *hex, size_t hex_len),
                             void *ctx, struct pw_error *err)
{
	size_t off = 0, line = 0;
	int rc = 0;

	while (off < n && !rc) {
		const uint8_t *l = p + off, *nl = memchr(l, '\n', n - off), *sp;
		size_t len = nl ? (size_t)(nl - l) : n - off;

		off += len + (nl ? 1 : 0);
		line++;
		if (len && l[len - 1] == '\r')
			len--;
		if (!len || l[0] == '#' || l[0] == '^' || !(sp = memchr(l, ' ', len)))
			continue;
		if (len - (size_t)(sp + 1 - l) > PW_DAV_MAX_HREF)
			return pw_error_set(
			        err, PW_EPROTO,
			        "WebDAV: packed-refs line %zu: a name longer than %u bytes", line,
			        PW_DAV_MAX_HREF);
		rc = fn(ctx, (const char *)sp + 1, len - (size_t)(sp + 1 - l), (const char *)l,
		        (size_t)(sp - l));
	}
	return rc;
}
