/* Push over WebDAV, as `git http-push` does against Apache's mod_dav, for a
 * dumb HTTP server: the refs are the files under refs/ (PROPFIND, GET) and
 * packed-refs; a push locks info/refs and each ref it changes (LOCK, with
 * the token in an If header on every write), sends the objects the remote
 * lacks (what the new tips reach minus what its refs reach here), as loose
 * objects (PUT to a temporary name, MOVE into place, as Git does) or, past
 * a few hundred, as one pack with its .idx listed in objects/info/packs,
 * then writes the refs, rewrites info/refs and unlocks. Objects go before
 * any ref: a push that fails leaves every ref as it was. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "client/client-priv.h"
#include "client/dav.h"
#include "util/fs.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "transport/dumb.h"
#include "transport/transport-priv.h"

/* Up to this many objects go loose (one PUT and one MOVE each, as Git's
 * http-push); more go as one pack. */
#define DAV_LOOSE_MAX 256
#define DAV_MAX_SMALL (64u << 20) /* a ref, packed-refs, info/refs, info/packs */

struct dav_lock {
	char *path; /* below base */
	char *token;
};

struct pw_dav {
	struct pw_conn *conn;
	char *base;      /* "http://host/repo.git/" */
	char *base_path; /* "/repo.git/", percent-decoded */
	const struct pw_hash_algo *algo;
	struct pw_buf packed; /* packed-refs as fetched; "" when absent */
	struct pw_buf info;   /* info/refs as fetched, for peeled values */
	struct dav_lock *locks;
	size_t nr_locks;
	struct pw_adv *adv; /* push.c's, filled by pw_dav_open */
	size_t nr_refs_seen;
};

static const char PROPFIND_LOCKS[] =
        "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n"
        "<D:propfind xmlns:D=\"DAV:\"><D:prop><D:supportedlock/></D:prop></D:propfind>\n";
static const char PROPFIND_TYPE[] =
        "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n"
        "<D:propfind xmlns:D=\"DAV:\"><D:prop><D:resourcetype/></D:prop></D:propfind>\n";
static const char LOCKINFO[] = "<?xml version=\"1.0\" encoding=\"utf-8\" ?>\n"
                               "<D:lockinfo xmlns:D=\"DAV:\">"
                               "<D:lockscope><D:exclusive/></D:lockscope>"
                               "<D:locktype><D:write/></D:locktype>"
                               "<D:owner><D:href>packwire</D:href></D:owner>"
                               "</D:lockinfo>\n";

/* ---- requests ------------------------------------------------------------ */

/* path below base, percent-encoded where a URL needs it */
static int url_of(struct pw_buf *u, const struct pw_dav *d, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;
	int rc = pw_buf_adds(u, d->base);

	for (p = (const unsigned char *)path; !rc && *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~/", *p)) {
			rc = pw_buf_addch(u, (char)*p);
		} else {
			rc = pw_buf_addch(u, '%');
			rc = rc ? rc : pw_buf_addch(u, hex[*p >> 4]);
			rc = rc ? rc : pw_buf_addch(u, hex[*p & 15]);
		}
	}
	return rc;
}

struct call {
	const char *method, *path;
	const char *hdr[6];
	const void *body;
	size_t body_len;
	int body_fd;
	struct pw_buf *resp, *resp_headers;
	long status;
};

static int call(struct pw_dav *d, struct call *c, struct pw_error *err)
{
	struct pw_http__req r;
	struct pw_buf url = PW_BUF_INIT;
	int rc;

	if (url_of(&url, d, c->path))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memset(&r, 0, sizeof(r));
	r.method = c->method;
	r.url = url.data;
	r.headers = c->hdr;
	r.body = c->body;
	r.body_len = c->body_len;
	r.body_fd = c->body ? -1 : c->body_fd;
	r.resp = c->resp;
	r.resp_headers = c->resp_headers;
	rc = pw_http__request(d->conn, &r, err);
	c->status = r.status;
	pw_buf_free(&url);
	return rc;
}

static void call_init(struct call *c, const char *method, const char *path)
{
	memset(c, 0, sizeof(*c));
	c->method = method;
	c->path = path;
	c->body_fd = -1;
}

static int http_fail(struct pw_error *err, const struct call *c, const struct pw_dav *d)
{
	return pw_error_set(err, c->status == 423 ? PW_ELOCKED : PW_EIO,
	                    "WebDAV: %s %s%s: HTTP %ld%s", c->method, d->base, c->path, c->status,
	                    c->status == 423 ? " (locked by another push?)" : "");
}

/* GET path into b (bounded): 1 when it is there, 0 when absent (404/410). */
static int get(struct pw_dav *d, const char *path, struct pw_buf *b, struct pw_error *err)
{
	struct call c;
	int rc;

	call_init(&c, "GET", path);
	pw_buf_init(b, DAV_MAX_SMALL);
	c.resp = b;
	if ((rc = call(d, &c, err)))
		return rc;
	if (c.status == 404 || c.status == 410) {
		pw_buf_reset(b);
		return 0;
	}
	if (c.status != 200)
		return http_fail(err, &c, d);
	return 1;
}

/* PROPFIND with depth; the answer parsed into a. */
static int propfind(struct pw_dav *d, const char *path, const char *depth, const char *body,
                    struct pw_dav_answer *a, long *status, struct pw_error *err)
{
	struct pw_buf resp;
	struct call c;
	char dh[32];
	int rc;

	memset(a, 0, sizeof(*a));
	pw_buf_init(&resp, PW_DAV_MAX_XML);
	call_init(&c, "PROPFIND", path);
	snprintf(dh, sizeof(dh), "Depth: %s", depth);
	c.hdr[0] = dh;
	c.hdr[1] = "Content-Type: text/xml; charset=\"utf-8\"";
	c.body = body;
	c.body_len = strlen(body);
	c.resp = &resp;
	rc = call(d, &c, err);
	*status = c.status;
	if (!rc && c.status == 207 &&
	    (rc = pw_dav_parse((const uint8_t *)resp.data, resp.len, a, err)) && rc != PW_ENOMEM) {
		char msg[PW_ERROR_MSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		pw_error_set(err, rc, "PROPFIND %s%s: %s", d->base, path, msg);
	}
	pw_buf_free(&resp);
	return rc;
}

/* MKCOL path (ending in '/'); an existing collection is fine. */
static int mkcol(struct pw_dav *d, const char *path, struct pw_error *err)
{
	struct call c;
	int rc;

	call_init(&c, "MKCOL", path);
	if ((rc = call(d, &c, err)))
		return rc;
	if (c.status == 201 || c.status == 405 || c.status == 200)
		return 0;
	return http_fail(err, &c, d);
}

/* The If header for writes to a locked path (none when not locked). */
static const char *lock_of(const struct pw_dav *d, const char *path)
{
	size_t i;

	for (i = 0; i < d->nr_locks; i++)
		if (!strcmp(d->locks[i].path, path))
			return d->locks[i].token;
	return NULL;
}

static int put(struct pw_dav *d, const char *path, const void *body, size_t len, int fd,
               struct pw_error *err)
{
	struct pw_buf ifh = PW_BUF_INIT;
	const char *tok = lock_of(d, path);
	struct call c;
	int rc;

	call_init(&c, "PUT", path);
	if (tok && pw_buf_addf(&ifh, "If: (<%s>)", tok))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	c.hdr[0] = "Content-Type: application/octet-stream";
	c.hdr[1] = tok ? ifh.data : NULL;
	c.body = body;
	c.body_fd = fd;
	c.body_len = len;
	rc = call(d, &c, err);
	pw_buf_free(&ifh);
	if (!rc && c.status != 200 && c.status != 201 && c.status != 204)
		rc = http_fail(err, &c, d);
	return rc;
}

static int move(struct pw_dav *d, const char *from, const char *to, struct pw_error *err)
{
	struct pw_buf dest = PW_BUF_INIT;
	struct call c;
	int rc;

	if (pw_buf_adds(&dest, "Destination: ") || url_of(&dest, d, to))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	call_init(&c, "MOVE", from);
	c.hdr[0] = dest.data;
	c.hdr[1] = "Overwrite: T";
	rc = call(d, &c, err);
	pw_buf_free(&dest);
	if (!rc && c.status != 201 && c.status != 204)
		rc = http_fail(err, &c, d);
	return rc;
}

/* ---- locks --------------------------------------------------------------- */

static int lock(struct pw_dav *d, const char *path, struct pw_error *err)
{
	struct pw_buf resp, hdrs;
	struct pw_dav_answer a;
	struct dav_lock *n;
	struct call c;
	char *token = NULL;
	int rc;

	pw_buf_init(&resp, PW_DAV_MAX_XML);
	pw_buf_init(&hdrs, 1u << 20);
	call_init(&c, "LOCK", path);
	c.hdr[0] = "Timeout: Second-600";
	c.hdr[1] = "Content-Type: text/xml; charset=\"utf-8\"";
	c.body = LOCKINFO;
	c.body_len = strlen(LOCKINFO);
	c.resp = &resp;
	c.resp_headers = &hdrs;
	memset(&a, 0, sizeof(a));
	if ((rc = call(d, &c, err)))
		goto out;
	if (c.status != 200 && c.status != 201) {
		rc = pw_error_set(err, PW_ELOCKED, "WebDAV: cannot lock %s%s: HTTP %ld%s", d->base,
		                  path, c.status,
		                  c.status == 423 ? " (locked by another push?)" : "");
		goto out;
	}
	/* the header names the lock; the body must parse and agree */
	if ((rc = pw_dav_parse((const uint8_t *)resp.data, resp.len, &a, err))) {
		char msg[PW_ERROR_MSG_MAX];

		snprintf(msg, sizeof(msg), "%s", err->msg);
		rc = pw_error_set(err, rc, "LOCK %s%s: %s", d->base, path, msg);
		goto out;
	}
	token = pw_dav_lock_token_header(hdrs.data, hdrs.len);
	if (!token && a.lock_token && !(token = strdup(a.lock_token))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (!token || strchr(token, '>') || strchr(token, '\r') || strchr(token, '\n')) {
		rc = pw_error_set(err, PW_EPROTO, "WebDAV: LOCK %s%s: the answer has no lock token",
		                  d->base, path);
		goto out;
	}
	if (!(n = realloc(d->locks, (d->nr_locks + 1) * sizeof(*n)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	d->locks = n;
	if (!(n[d->nr_locks].path = strdup(path))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	n[d->nr_locks++].token = token;
	token = NULL;
out:
	if (rc && c.status >= 200 && c.status < 300 && token) {
		/* locked, but unusable: let go of it */
		struct pw_buf lt = PW_BUF_INIT;
		struct pw_error e;
		struct call u;

		if (!pw_buf_addf(&lt, "Lock-Token: <%s>", token)) {
			call_init(&u, "UNLOCK", path);
			u.hdr[0] = lt.data;
			call(d, &u, &e);
		}
		pw_buf_free(&lt);
	}
	free(token);
	pw_dav_answer_free(&a);
	pw_buf_free(&resp);
	pw_buf_free(&hdrs);
	return rc;
}

static void unlock_all(struct pw_dav *d)
{
	size_t i;

	for (i = d->nr_locks; i-- > 0;) {
		struct pw_buf lt = PW_BUF_INIT;
		struct pw_error e;
		struct call c;

		if (!pw_buf_addf(&lt, "Lock-Token: <%s>", d->locks[i].token)) {
			call_init(&c, "UNLOCK", d->locks[i].path);
			c.hdr[0] = lt.data;
			call(d, &c, &e);
		}
		pw_buf_free(&lt);
		free(d->locks[i].path);
		free(d->locks[i].token);
	}
	d->nr_locks = 0;
}

/* Renew every lock (a LOCK with the token and no body): sending the objects
 * of a large push may outlast the locks' timeout, and the refs are written
 * after it. A lock lost meanwhile stops the push before any ref changes. */
static int refresh_all(struct pw_dav *d, struct pw_error *err)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < d->nr_locks && !rc; i++) {
		struct pw_buf ifh = PW_BUF_INIT;
		struct call c;

		if (pw_buf_addf(&ifh, "If: (<%s>)", d->locks[i].token))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		call_init(&c, "LOCK", d->locks[i].path);
		c.hdr[0] = "Timeout: Second-600";
		c.hdr[1] = ifh.data;
		rc = call(d, &c, err);
		if (!rc && c.status != 200)
			rc = pw_error_set(err, PW_ELOCKED,
			                  "WebDAV: the lock on %s%s was lost (refresh: HTTP %ld)",
			                  d->base, d->locks[i].path, c.status);
		pw_buf_free(&ifh);
	}
	return rc;
}

/* ---- the remote's refs ----------------------------------------------------- */

static int set_algo(struct pw_dav *d, size_t hexlen, const char *what, struct pw_error *err)
{
	const struct pw_hash_algo *a = pw_hash_guess_from_hexlen(hexlen);

	if (!a)
		return pw_error_set(err, PW_EPROTO, "WebDAV: %s: not an object id", what);
	if (d->algo && d->algo != a)
		return pw_error_set(err, PW_EPROTO,
		                    "WebDAV: %s: a %s id among %s ones (mixed object formats)",
		                    what, a->name, d->algo->name);
	d->algo = a;
	return 0;
}

static int add_ref(struct pw_dav *d, const char *name, size_t len, const char *hex, size_t hexlen,
                   struct pw_error *err)
{
	struct pw_remote_ref *r;
	int rc;

	if (d->adv->nr >= PW_DAV_MAX_REFS)
		return pw_error_set(err, PW_ETOOBIG, "WebDAV: more than %u refs", PW_DAV_MAX_REFS);
	if ((rc = set_algo(d, hexlen, name, err)))
		return rc;
	if ((rc = pw_adv__add_ref(d->adv, name, len, &r, err)))
		return rc;
	if (pw_oid_from_hex(&r->oid, hex, hexlen, d->algo))
		return pw_error_set(err, PW_EPROTO, "WebDAV: %.*s: bad object id", (int)len, name);
	return 0;
}

/* A loose ref file: "<hex>\n" (a symref or an empty lock-null file is no ref). */
static int read_ref(struct pw_dav *d, const char *name, struct pw_error *err)
{
	struct pw_buf b;
	size_t n;
	int rc;

	if ((rc = get(d, name, &b, err)) <= 0) {
		pw_buf_free(&b);
		return rc;
	}
	n = b.len;
	while (n && (b.data[n - 1] == '\n' || b.data[n - 1] == '\r'))
		n--;
	if (n && strncmp(b.data, "ref:", 4))
		rc = add_ref(d, name, strlen(name), b.data, n, err);
	pw_buf_free(&b);
	return rc;
}

/* PROPFIND dir (below base, ending in '/'), one level; files are refs,
 * collections are walked in turn. */
static int list_dir(struct pw_dav *d, const char *dir, int level, struct pw_error *err)
{
	struct pw_dav_answer a;
	struct pw_buf want = PW_BUF_INIT, name = PW_BUF_INIT;
	long status;
	size_t i;
	int rc;

	if (level > PW_DAV_MAX_REF_DIR)
		return pw_error_set(err, PW_ETOOBIG, "WebDAV: refs nested deeper than %d levels",
		                    PW_DAV_MAX_REF_DIR);
	if ((rc = propfind(d, dir, "1", PROPFIND_TYPE, &a, &status, err)))
		goto out;
	if (status == 404 && level == 0)
		goto out;
	if (status != 207) {
		rc = pw_error_set(err, PW_EPROTO, "WebDAV: PROPFIND %s%s: HTTP %ld (expected 207)",
		                  d->base, dir, status);
		goto out;
	}
	if (pw_buf_adds(&want, d->base_path) || pw_buf_adds(&want, dir)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < a.nr && !rc; i++) {
		const char *p = a.entries[i].path, *rest;
		size_t rl;

		/* entries outside dir, and dir itself, are not ours */
		if (strncmp(p, want.data, want.len))
			continue;
		rest = p + want.len;
		rl = strlen(rest);
		if (rl && rest[rl - 1] == '/')
			rl--;
		/* (".", ".." and dot-files are never ref components) */
		if (!rl || memchr(rest, '/', rl) || rest[0] == '.')
			continue;
		if (++d->nr_refs_seen > PW_DAV_MAX_REFS) {
			rc = pw_error_set(err, PW_ETOOBIG,
			                  "WebDAV: more than %u entries under refs/",
			                  PW_DAV_MAX_REFS);
			break;
		}
		pw_buf_reset(&name);
		if (pw_buf_adds(&name, dir) || pw_buf_add(&name, rest, rl) ||
		    (a.entries[i].collection && pw_buf_addch(&name, '/'))) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
		if (a.entries[i].collection)
			rc = list_dir(d, name.data, level + 1, err);
		else if (pw_refname_is_valid(name.data, 0))
			rc = read_ref(d, name.data, err);
	}
out:
	pw_dav_answer_free(&a);
	pw_buf_free(&want);
	pw_buf_free(&name);
	return rc;
}

struct packed_ctx {
	struct pw_dav *d;
	struct pw_error *err;
};

static int packed_one(void *ctx, const char *name, size_t len, const char *hex, size_t hexlen)
{
	struct packed_ctx *c = ctx;
	char *dup = strndup(name, len);
	int rc = 0;

	if (!dup)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	if (strlen(dup) == len && pw_refname_is_valid(dup, 0) && !pw_adv_find(c->d->adv, dup))
		rc = add_ref(c->d, dup, len, hex, hexlen, c->err);
	free(dup);
	return rc;
}

/* packed-refs: the refs that have no loose file. */
static int read_packed(struct pw_dav *d, struct pw_error *err)
{
	struct packed_ctx c = {d, err};
	int rc;

	if ((rc = get(d, "packed-refs", &d->packed, err)) <= 0)
		return rc;
	return pw_dav_parse_packed_refs((const uint8_t *)d->packed.data, d->packed.len, packed_one,
	                                &c, err);
}

static char *base_path_of(const char *base)
{
	const char *s = strstr(base, "://"), *p;
	char *o;
	size_t k = 0;

	p = s ? strchr(s + 3, '/') : NULL;
	if (!p)
		p = "/";
	if (!(o = malloc(strlen(p) + 2)))
		return NULL;
	for (; *p; p++) {
		int hi, lo;

		if (*p == '%' && p[1] && p[2] && (hi = pw_hexval(p[1])) >= 0 &&
		    (lo = pw_hexval(p[2])) >= 0) {
			o[k++] = (char)(hi * 16 + lo);
			p += 2;
		} else {
			o[k++] = *p;
		}
	}
	if (!k || o[k - 1] != '/')
		o[k++] = '/';
	o[k] = 0;
	return o;
}

int pw_dav_open(struct pw_dav **out, struct pw_conn *conn, const struct pw_hash_algo *local,
                struct pw_adv *adv, struct pw_error *err)
{
	struct pw_dav *d;
	struct pw_dav_answer a;
	const char *base = pw_http__base(conn);
	long status = 0;
	int rc;

	*out = NULL;
	if (!base)
		return pw_error_set(err, PW_EINVAL, "WebDAV: not a dumb HTTP connection");
	if (!(d = calloc(1, sizeof(*d))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	d->conn = conn;
	d->adv = adv;
	pw_buf_init(&d->packed, DAV_MAX_SMALL);
	pw_buf_init(&d->info, DAV_MAX_SMALL);
	if (!(d->base = malloc(strlen(base) + 2)) || !(d->base_path = base_path_of(base))) {
		pw_dav_free(d);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	sprintf(d->base, "%s/", base);
	/* a server that cannot lock cannot take a push safely */
	rc = propfind(d, "", "0", PROPFIND_LOCKS, &a, &status, err);
	if (!rc && status != 207)
		rc = pw_error_set(
		        err, PW_EUNSUPPORTED,
		        "%s has no smart receive-pack and no WebDAV (PROPFIND: HTTP %ld): "
		        "cannot push there",
		        d->base, status);
	else if (!rc && !a.exclusive_write)
		rc = pw_error_set(err, PW_EUNSUPPORTED,
		                  "WebDAV: no DAV locking support on %s (no exclusive write lock)",
		                  d->base);
	pw_dav_answer_free(&a);
	if (!rc)
		rc = list_dir(d, "refs/", 0, err);
	if (!rc)
		rc = read_packed(d, err);
	if (!rc && (rc = get(d, "info/refs", &d->info, err)) > 0)
		rc = 0;
	if (rc) {
		pw_dav_free(d);
		return rc;
	}
	if (!d->algo)
		d->algo = local;
	adv->algo = d->algo;
	adv->empty = !adv->nr;
	*out = d;
	return 0;
}

void pw_dav_free(struct pw_dav *d)
{
	if (!d)
		return;
	unlock_all(d);
	free(d->locks);
	free(d->base);
	free(d->base_path);
	pw_buf_free(&d->packed);
	pw_buf_free(&d->info);
	free(d);
}

/* ---- objects ------------------------------------------------------------- */

struct obj {
	struct pw_oid oid;
	int type;
	char *path;
};

struct objs {
	struct obj *v;
	size_t nr, alloc;
};

static int collect(const struct pw_revlist_obj *o, void *data)
{
	struct objs *s = data;

	if (o->excluded)
		return 0;
	if (s->nr == s->alloc) {
		size_t na = s->alloc ? 2 * s->alloc : 256;
		struct obj *n = realloc(s->v, na * sizeof(*n));

		if (!n)
			return PW_ENOMEM;
		s->v = n;
		s->alloc = na;
	}
	s->v[s->nr].oid = o->oid;
	s->v[s->nr].type = o->type;
	s->v[s->nr].path = NULL;
	if (o->path && o->type != PW_OBJ_COMMIT && o->type != PW_OBJ_TAG &&
	    !(s->v[s->nr].path = strndup(o->path, o->path_len)))
		return PW_ENOMEM;
	s->nr++;
	return 0;
}

static void objs_free(struct objs *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		free(s->v[i].path);
	free(s->v);
}

/* What the new tips reach that the remote's refs (those we have) do not. */
static int missing_objects(struct pw_dav *d, struct pw_odb *odb, const struct pw_push_result *res,
                           struct objs *out, struct pw_error *err)
{
	struct pw_revlist *rl = NULL;
	size_t i;
	int rc;

	if ((rc = pw_revlist_new(&rl, odb, PW_REVLIST_OBJECTS)))
		return pw_error_set(err, rc, "out of memory");
	for (i = 0; i < res->nr && !rc; i++) {
		const struct pw_push_ref *r = &res->refs[i];

		if (r->status == PW_PUSH_PENDING && !r->is_delete)
			rc = pw_revlist_add(rl, &r->new_oid, NULL, 0);
	}
	for (i = 0; i < d->adv->nr && !rc; i++)
		if (pw_odb_exists(odb, &d->adv->refs[i].oid))
			pw_revlist_add(rl, &d->adv->refs[i].oid, NULL, 1);
	if (!rc)
		rc = pw_revlist_run(rl, collect, out);
	if (rc)
		rc = pw_revlist_error(rl)->code ? pw_error_copy(err, pw_revlist_error(rl))
		                                : pw_error_set(err, rc, "out of memory");
	pw_revlist_free(rl);
	return rc;
}

/* "_<hex>" after a temporary name: the hash of the info/refs lock token, so
 * that two pushes never write the same temporary file (as Git names them). */
static void tmp_suffix(const struct pw_dav *d, char *out)
{
	struct pw_hash_ctx ctx;
	struct pw_oid h;

	/* a name for the temporary file, not an object id */
	pw_hash_init_checksum(&ctx, d->algo);
	pw_hash_update(&ctx, d->locks[0].token, strlen(d->locks[0].token));
	pw_oid_zero(&h, d->algo);
	pw_hash_final_checksum(&ctx, h.id);
	out[0] = '_';
	pw_oid_to_hex(&h, out + 1);
}

static int send_loose(struct pw_dav *d, struct pw_odb *odb, const struct objs *s,
                      struct pw_error *err)
{
	struct pw_buf data = PW_BUF_INIT, z = PW_BUF_INIT;
	char suffix[PW_MAX_HEXSZ + 2], hex[PW_MAX_HEXSZ + 1], path[64 + 2 * PW_MAX_HEXSZ];
	char dirs[256] = {0};
	size_t i;
	int rc = 0;

	tmp_suffix(d, suffix);
	for (i = 0; i < s->nr && !rc; i++) {
		char hdr[64], dir[16];
		size_t hl;
		uLongf zl;
		int type;

		pw_oid_to_hex(&s->v[i].oid, hex);
		if (!dirs[s->v[i].oid.id[0]]) {
			snprintf(dir, sizeof(dir), "objects/%.2s/", hex);
			if ((rc = mkcol(d, dir, err)))
				break;
			dirs[s->v[i].oid.id[0]] = 1;
		}
		if ((rc = pw_odb_read(odb, &s->v[i].oid, &type, &data))) {
			rc = pw_error_copy(err, pw_odb_error(odb));
			break;
		}
		hl = pw_object_header(hdr, type, data.len);
		zl = compressBound((uLong)(hl + data.len));
		pw_buf_reset(&z);
		if ((rc = pw_buf_grow(&z, zl + hl))) {
			rc = pw_error_set(err, rc, "out of memory");
			break;
		}
		/* header and content as one zlib stream, as loose objects are */
		{
			z_stream zs;

			memset(&zs, 0, sizeof(zs));
			if (deflateInit(&zs, Z_DEFAULT_COMPRESSION) != Z_OK) {
				rc = pw_error_set(err, PW_ENOMEM, "out of memory");
				break;
			}
			zs.next_out = (Bytef *)z.data;
			zs.avail_out = (uInt)(zl + hl);
			zs.next_in = (Bytef *)hdr;
			zs.avail_in = (uInt)hl;
			deflate(&zs, Z_NO_FLUSH);
			zs.next_in = (Bytef *)data.data;
			zs.avail_in = (uInt)data.len;
			if (deflate(&zs, Z_FINISH) != Z_STREAM_END) {
				deflateEnd(&zs);
				rc = pw_error_set(err, PW_EIO, "deflate failed");
				break;
			}
			zl = zs.total_out;
			deflateEnd(&zs);
		}
		snprintf(path, sizeof(path), "objects/%.2s/%s%s", hex, hex + 2, suffix);
		if ((rc = put(d, path, z.data, zl, -1, err)))
			break;
		{
			char final[16 + PW_MAX_HEXSZ];

			snprintf(final, sizeof(final), "objects/%.2s/%s", hex, hex + 2);
			rc = move(d, path, final, err);
		}
	}
	pw_buf_free(&data);
	pw_buf_free(&z);
	return rc;
}

static int put_file(struct pw_dav *d, const char *tmp, const char *final, int fd,
                    struct pw_error *err)
{
	struct stat st;
	int rc;

	if (fstat(fd, &st))
		return pw_error_set(err, PW_EIO, "cannot stat a temporary file");
	if ((rc = put(d, tmp, NULL, (size_t)st.st_size, fd, err)))
		return rc;
	return move(d, tmp, final, err);
}

/* One pack and its .idx, then objects/info/packs names it. */
static int send_pack(struct pw_dav *d, struct pw_repo *repo, struct pw_odb *odb,
                     const struct objs *s, const struct pw_push_opts *o, struct pw_error *err)
{
	struct pw_pack_write_opts po;
	struct pw_pack_writer *w = NULL;
	struct pw_buf packs, body = PW_BUF_INIT;
	char tmpl[2][4096], hex[PW_MAX_HEXSZ + 1], suffix[PW_MAX_HEXSZ + 2];
	char name[64 + PW_MAX_HEXSZ], final[128 + PW_MAX_HEXSZ];
	char tmp[sizeof(final) + sizeof(suffix)];
	uint8_t sum[32];
	struct pw_oid cs;
	int fd[2] = {-1, -1}, rc, i;
	size_t k;

	pw_buf_init(&packs, DAV_MAX_SMALL);
	for (i = 0; i < 2; i++) {
		snprintf(tmpl[i], sizeof(tmpl[i]), "%s/tmp_dav_%s_XXXXXX",
		         pw_repo_objects_dir(repo), i ? "idx" : "pack");
		if ((fd[i] = pw_fs_mkstemp_mode(tmpl[i], 0600)) < 0) {
			rc = pw_error_set(err, PW_EIO, "cannot create a temporary file in %s",
			                  pw_repo_objects_dir(repo));
			goto out;
		}
	}
	pw_pack_write_opts_init(&po);
	pw_pack_write_opts_from_config(&po, pw_repo_config(repo));
	po.objects_dir = pw_repo_objects_dir(repo);
	po.progress = o->progress ? o->report.progress : NULL;
	po.progress_data = o->report.data;
	if ((rc = pw_pack_writer_new(&w, odb, &po))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto out;
	}
	for (k = 0; k < s->nr && !rc; k++)
		rc = pw_pack_writer_add(w, &s->v[k].oid, s->v[k].type, s->v[k].path,
		                        s->v[k].path ? strlen(s->v[k].path) : 0);
	if (!rc)
		rc = pw_pack_writer_write_fd(w, fd[0], sum);
	if (!rc)
		rc = pw_pack_writer_write_idx_fd(w, fd[1], 2);
	if (rc) {
		rc = pw_error_copy(err, pw_pack_writer_error(w));
		goto out;
	}
	pw_oid_from_raw(&cs, sum, d->algo);
	pw_oid_to_hex(&cs, hex);
	tmp_suffix(d, suffix);
	snprintf(name, sizeof(name), "pack-%s.pack", hex);
	if ((rc = mkcol(d, "objects/pack/", err)))
		goto out;
	/* the pack before its .idx: a reader that finds the .idx finds the pack */
	for (i = 0; i < 2 && !rc; i++) {
		snprintf(final, sizeof(final), "objects/pack/pack-%s.%s", hex, i ? "idx" : "pack");
		snprintf(tmp, sizeof(tmp), "%s%s", final, suffix);
		rc = put_file(d, tmp, final, fd[i], err);
	}
	if (rc)
		goto out;
	if ((rc = get(d, "objects/info/packs", &packs, err)) < 0)
		goto out;
	if (!rc && (rc = mkcol(d, "objects/info/", err)))
		goto out;
	rc = pw_dumb_info_packs_add(packs.data, packs.len, name, &body);
	if (rc == 1) {
		rc = 0;
		goto out; /* the same objects pushed before */
	}
	if (rc) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	rc = put(d, "objects/info/packs", body.data, body.len, -1, err);
out:
	for (i = 0; i < 2; i++)
		if (fd[i] >= 0) {
			close(fd[i]);
			unlink(tmpl[i]);
		}
	pw_pack_writer_free(w);
	pw_buf_free(&packs);
	pw_buf_free(&body);
	return rc;
}

/* ---- refs ---------------------------------------------------------------- */

/* packed-refs without name (and its peeled line), written back. */
static int unpack_ref(struct pw_dav *d, const char *name, struct pw_error *err)
{
	struct pw_buf o = PW_BUF_INIT;
	const char *p = d->packed.data, *end = p + d->packed.len;
	size_t nl = strlen(name);
	int skip = 0, found = 0, rc;

	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t len = e ? (size_t)(e - p + 1) : (size_t)(end - p);
		const char *sp = memchr(p, ' ', len);

		if (p[0] == '^') {
			if (skip) {
				p += len;
				continue;
			}
		} else {
			skip = p[0] != '#' && sp &&
			       (size_t)(p + len - sp - 1) - (e ? 1 : 0) == nl &&
			       !memcmp(sp + 1, name, nl);
			if (skip) {
				found = 1;
				p += len;
				continue;
			}
		}
		if (pw_buf_add(&o, p, len)) {
			pw_buf_free(&o);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		p += len;
	}
	rc = found ? put(d, "packed-refs", o.data, o.len, -1, err) : 0;
	if (!rc && found) {
		pw_buf_free(&d->packed);
		d->packed = o;
	} else {
		pw_buf_free(&o);
	}
	return rc;
}

/* Unlock path now (mod_dav refuses to DELETE a locked file: 424). */
static void unlock_one(struct pw_dav *d, const char *path)
{
	size_t i;

	for (i = 0; i < d->nr_locks; i++)
		if (!strcmp(d->locks[i].path, path)) {
			struct pw_buf lt = PW_BUF_INIT;
			struct pw_error e;
			struct call c;

			if (!pw_buf_addf(&lt, "Lock-Token: <%s>", d->locks[i].token)) {
				call_init(&c, "UNLOCK", path);
				c.hdr[0] = lt.data;
				call(d, &c, &e);
			}
			pw_buf_free(&lt);
			free(d->locks[i].path);
			free(d->locks[i].token);
			d->locks[i] = d->locks[--d->nr_locks];
			return;
		}
}

static int delete_ref(struct pw_dav *d, const char *name, struct pw_error *err)
{
	struct call c;
	int rc;

	unlock_one(d, name);
	call_init(&c, "DELETE", name);
	rc = call(d, &c, err);
	if (!rc && c.status != 200 && c.status != 204 && c.status != 404)
		rc = http_fail(err, &c, d);
	return rc ? rc : unpack_ref(d, name, err);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pw_remote_ref *)a)->name,
	              ((const struct pw_remote_ref *)b)->name);
}

/* The peeled value of the old info/refs for name at oid, if any. */
static int old_peeled(const struct pw_dav *d, const char *name, const struct pw_oid *oid,
                      struct pw_oid *out)
{
	const char *p = d->info.data, *end = p + d->info.len;
	char hex[PW_MAX_HEXSZ + 1];
	size_t nl = strlen(name), hl = d->algo->hexsz;
	int after = 0;

	pw_oid_to_hex(oid, hex);
	while (p < end) {
		const char *e = memchr(p, '\n', (size_t)(end - p));
		size_t len = e ? (size_t)(e - p) : (size_t)(end - p);

		if (after && len == hl + 1 + nl + 3 && !memcmp(p + hl + 1, name, nl) &&
		    !memcmp(p + hl + 1 + nl, "^{}", 3))
			return !pw_oid_from_hex(out, p, hl, d->algo);
		after = len == hl + 1 + nl && !memcmp(p, hex, hl) && !memcmp(p + hl + 1, name, nl);
		p += len + 1;
	}
	return 0;
}

/* info/refs afresh from the refs as they are now, peeled tags included. */
static int write_info_refs(struct pw_dav *d, struct pw_odb *odb, const struct pw_push_result *res,
                           struct pw_error *err)
{
	struct pw_remote_ref *v;
	struct pw_buf b = PW_BUF_INIT;
	size_t i, j, nr = 0;
	int rc = 0;

	if (!(v = calloc(d->adv->nr + res->nr + 1, sizeof(*v))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (i = 0; i < d->adv->nr; i++)
		v[nr++] = d->adv->refs[i];
	for (i = 0; i < res->nr; i++) {
		const struct pw_push_ref *r = &res->refs[i];

		if (r->status != PW_PUSH_OK)
			continue;
		for (j = 0; j < nr && strcmp(v[j].name, r->dst); j++)
			;
		if (r->is_delete) {
			if (j < nr)
				v[j] = v[--nr];
			continue;
		}
		if (j == nr) {
			memset(&v[nr], 0, sizeof(v[nr]));
			v[nr++].name = r->dst;
		}
		v[j].oid = r->new_oid;
	}
	qsort(v, nr, sizeof(*v), name_cmp);
	for (i = 0; i < nr && !rc; i++) {
		struct pw_oid peeled;
		struct pw_error e;
		int tags = pw_odb_exists(odb, &v[i].oid)
		                   ? pw_odb_peel(odb, &v[i].oid, &peeled, NULL, &e)
		                   : old_peeled(d, v[i].name, &v[i].oid, &peeled);

		rc = pw_dumb_info_refs_line(&b, &v[i].oid, v[i].name, tags > 0 ? &peeled : NULL);
	}
	free(v);
	rc = rc ? pw_error_set(err, PW_ENOMEM, "out of memory")
	        : put(d, "info/refs", b.data, b.len, -1, err);
	pw_buf_free(&b);
	return rc;
}

/* MKCOL the directories of a new ref below refs/x/ (LOCK of a file in a
 * missing collection fails). */
static int ref_dirs(struct pw_dav *d, const char *name, struct pw_error *err)
{
	char *p, *dup = strdup(name);
	int rc = 0, slashes = 0;

	if (!dup)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (p = dup; *p && !rc; p++)
		if (*p == '/' && ++slashes >= 2) {
			char c = p[1];

			p[1] = 0;
			rc = mkcol(d, dup, err);
			p[1] = c;
		}
	free(dup);
	return rc;
}

int pw_dav_push(struct pw_dav *d, struct pw_repo *repo, struct pw_odb *odb,
                const struct pw_push_opts *o, struct pw_push_result *res, struct pw_error *err)
{
	struct objs s = {0};
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	/* info/refs first: every push takes it, so pushes take turns */
	if ((rc = lock(d, "info/refs", err)))
		goto out;
	for (i = 0; i < res->nr && !rc; i++) {
		struct pw_push_ref *r = &res->refs[i];
		struct pw_buf cur;
		size_t n;

		if (r->status != PW_PUSH_PENDING)
			continue;
		if (!r->is_delete && pw_oid_is_zero(&r->old_oid) && (rc = ref_dirs(d, r->dst, err)))
			break;
		if ((rc = lock(d, r->dst, err)))
			break;
		/* what decide() saw may have changed before the lock */
		if ((rc = get(d, r->dst, &cur, err)) < 0) {
			pw_buf_free(&cur);
			break;
		}
		rc = 0;
		n = cur.len;
		while (n && (cur.data[n - 1] == '\n' || cur.data[n - 1] == '\r'))
			n--;
		if (n && !r->force &&
		    (n != d->algo->hexsz ||
		     strncmp(cur.data, pw_oid_to_hex(&r->old_oid, hex), n))) {
			r->status = PW_PUSH_REMOTE_REJECT;
			free(r->remote_msg);
			r->remote_msg =
			        strdup("the remote ref changed during the push (fetch first)");
		}
		pw_buf_free(&cur);
	}
	if (rc)
		goto out;
	if ((rc = missing_objects(d, odb, res, &s, err)))
		goto out;
	if (s.nr && (rc = s.nr <= DAV_LOOSE_MAX ? send_loose(d, odb, &s, err)
	                                        : send_pack(d, repo, odb, &s, o, err)))
		goto out;
	if (s.nr && (rc = refresh_all(d, err)))
		goto out;
	for (i = 0; i < res->nr && !rc; i++) {
		struct pw_push_ref *r = &res->refs[i];
		char body[PW_MAX_HEXSZ + 2];

		if (r->status != PW_PUSH_PENDING)
			continue;
		if (r->is_delete) {
			rc = delete_ref(d, r->dst, err);
		} else {
			snprintf(body, sizeof(body), "%s\n", pw_oid_to_hex(&r->new_oid, hex));
			rc = put(d, r->dst, body, strlen(body), -1, err);
		}
		if (!rc)
			r->status = PW_PUSH_OK;
	}
	if (!rc)
		rc = write_info_refs(d, odb, res, err);
out:
	unlock_all(d);
	objs_free(&s);
	return rc;
}
