/* The first look at an HTTP request (pw_http_admit, pw_http_check_headers),
 * both algorithms: the body's framing from raw header fields (a length
 * that is not one, libmicrohttpd's "unknown size" marker, Content-Length
 * fields that disagree, Transfer-Encoding with a length or without a final
 * chunked, repeated Host/Content-Type/Content-Encoding), and the declared
 * length against the front's bound and the endpoint's (an upload-pack POST
 * over the request buffer is refused before any body byte is read, gzip or
 * not), answered as pw_http_serve answers; a repository reached through a
 * symlink out of the project root is refused (the daemon's rule). */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/http.h"
#include "packwire/repo.h"
#include "server/paths.h"
#include "test.h"

#define NR(a) (sizeof(a) / sizeof((a)[0]))

struct answer {
	int status, calls;
	char body[1024];
	size_t len;
	int body_read; /* the handler asked for body bytes */
};

static int on_start(void *ctx, int status, const char *reason, const struct pw_http_header *h,
                    size_t nr)
{
	struct answer *a = ctx;

	(void)reason, (void)h, (void)nr;
	a->status = status;
	a->calls++;
	return 0;
}

static int on_write(void *ctx, const void *data, size_t len)
{
	struct answer *a = ctx;

	if (a->len + len < sizeof(a->body)) {
		memcpy(a->body + a->len, data, len);
		a->len += len;
		a->body[a->len] = 0;
	}
	return 0;
}

static long read_body(void *ctx, void *buf, size_t len)
{
	struct answer *a = ctx;

	(void)buf, (void)len;
	a->body_read = 1;
	return 0;
}

/* check(expected rc, header lines "Name: value" ..., NULL) */
static int check_set(const char *version, struct pw_http_framing *f, struct pw_error *err, ...)
{
	struct pw_http_header h[16];
	char names[16][64];
	size_t nr = 0;
	const char *line;
	va_list ap;

	va_start(ap, err);
	while ((line = va_arg(ap, const char *)) && nr < NR(h)) {
		const char *colon = strchr(line, ':');

		snprintf(names[nr], sizeof(names[nr]), "%.*s", (int)(colon - line), line);
		h[nr].name = names[nr];
		h[nr].value = colon + 1 + (colon[1] == ' ');
		nr++;
	}
	va_end(ap);
	return pw_http_check_headers(h, nr, version, f, err);
}

static void test_headers(void)
{
	struct pw_http_framing f;
	struct pw_error err;

	/* good ones */
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Host: x", NULL), 0);
	CHECK(!f.has_length && !f.chunked);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "content-length: 42", NULL), 0);
	CHECK(f.has_length && f.length == 42 && !f.chunked);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length:  7 ", NULL), 0);
	CHECK(f.length == 7);
	/* the same length twice (a list, or two fields) is one length */
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 5, 5", NULL), 0);
	CHECK_EQ_INT(
	        check_set("HTTP/1.1", &f, &err, "Content-Length: 5", "Content-Length: 5", NULL), 0);
	CHECK(f.length == 5);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: chunked", NULL), 0);
	CHECK(f.chunked && !f.has_length);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: Chunked", NULL), 0);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 9223372036854775807", NULL),
	             0);
	CHECK(f.length == 9223372036854775807ull);

	/* lengths that are not one */
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 18446744073709551615", NULL),
	             PW_EINVAL);
	CHECK_STR(err.msg, "Content-Length 18446744073709551615 is too large");
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 9223372036854775808", NULL),
	             PW_EINVAL);
	CHECK_EQ_INT(
	        check_set("HTTP/1.1", &f, &err, "Content-Length: 99999999999999999999999", NULL),
	        PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: -1", NULL), PW_EINVAL);
	CHECK_STR(err.msg, "Content-Length '-1' is not a length");
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: +4", NULL), PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 0x10", NULL), PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 4 4", NULL), PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length:", NULL), PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: \x01\x02", NULL), PW_EINVAL);
	CHECK_STR(err.msg, "Content-Length '?"
	                   "?' is not a length");

	/* lengths that disagree: how a request is smuggled past a proxy */
	CHECK_EQ_INT(
	        check_set("HTTP/1.1", &f, &err, "Content-Length: 4", "Content-Length: 10", NULL),
	        PW_EINVAL);
	CHECK_STR(err.msg, "Content-Length headers disagree (4 and 10)");
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 4, 10", NULL), PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Length: 4",
	                       "Transfer-Encoding: chunked", NULL),
	             PW_EINVAL);
	CHECK(strstr(err.msg, "both Transfer-Encoding and Content-Length") != NULL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: chunked",
	                       "Content-Length: 4", NULL),
	             PW_EINVAL);

	/* transfer codings */
	CHECK_EQ_INT(check_set("HTTP/1.0", &f, &err, "Transfer-Encoding: chunked", NULL),
	             PW_EINVAL);
	CHECK_STR(err.msg, "Transfer-Encoding in an HTTP/1.0 request");
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: identity", NULL),
	             PW_EINVAL);
	CHECK(strstr(err.msg, "does not end in chunked") != NULL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: chunked, gzip", NULL),
	             PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: chunked",
	                       "Transfer-Encoding: chunked", NULL),
	             PW_EINVAL);
	CHECK_STR(err.msg, "Transfer-Encoding applies chunked twice");
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: ", NULL), PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: gzip, chunked", NULL),
	             PW_EUNSUPPORTED);
	CHECK_STR(err.msg, "transfer coding 'gzip' is not supported");
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Transfer-Encoding: gzip",
	                       "Transfer-Encoding: chunked", NULL),
	             PW_EUNSUPPORTED);

	/* repeated fields two readers could take differently */
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Host: a", "host: b", NULL), PW_EINVAL);
	CHECK_STR(err.msg, "more than one Host header");
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Type: a", "Content-Type: a", NULL),
	             PW_EINVAL);
	CHECK_EQ_INT(check_set("HTTP/1.1", &f, &err, "Content-Encoding: gzip",
	                       "Content-Encoding: identity", NULL),
	             PW_EINVAL);
}

/* One request through pw_http_admit and pw_http_serve. */
static int admit(const char *root, const char *method, const char *path, const char *ctype,
                 const char *cenc, long long clen, const char *raw_clen, uint64_t max_body,
                 uint64_t *limit, struct answer *a, int serve)
{
	struct pw_http_request req;
	struct pw_http_sink sink = {on_start, on_write, a};
	struct pw_http_header h[1] = {{"Content-Length", raw_clen}};
	struct pw_error err;

	memset(a, 0, sizeof(*a));
	pw_http_request_init(&req);
	req.method = method;
	req.path_info = path;
	req.project_root = root;
	req.export_all = 1;
	req.server_protocol = "HTTP/1.1";
	req.content_type = ctype;
	req.content_encoding = cenc;
	req.content_length = clen;
	req.max_request_buffer = 1000;
	req.max_body = max_body;
	req.read_body = read_body;
	req.body_ctx = a;
	if (raw_clen) {
		req.headers = h;
		req.nr_headers = 1;
	}
	if (serve)
		return pw_http_serve(&req, &sink, &err);
	return pw_http_admit(&req, &sink, limit, &err);
}

static void test_admit(const char *root)
{
	static const char up[] = "application/x-git-upload-pack-request";
	static const char rp[] = "application/x-git-receive-pack-request";
	struct answer a;
	uint64_t limit;

	/* an upload-pack POST over the request buffer: 413 before any body byte */
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-upload-pack", up, NULL, 1001, NULL, 0, &limit,
	                   &a, 0),
	             PW_ETOOBIG);
	CHECK_EQ_INT(a.status, 413);
	CHECK_STR(a.body, "request was larger than our maximum size\n");
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-upload-pack", up, "gzip", 1001, NULL, 0,
	                   &limit, &a, 0),
	             PW_ETOOBIG);
	CHECK_EQ_INT(a.status, 413);
	/* the same through the handler: refused before the body is read */
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-upload-pack", up, "gzip", 1001, NULL, 0,
	                   &limit, &a, 1),
	             PW_ETOOBIG);
	CHECK_EQ_INT(a.status, 413);
	CHECK_EQ_INT(a.body_read, 0);
	/* from the raw header, whatever content_length says */
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-upload-pack", up, NULL, -1, "200000000", 0,
	                   &limit, &a, 0),
	             PW_ETOOBIG);
	CHECK_EQ_INT(a.status, 413);
	/* within the bound: go ahead, with the bound to hold a chunked body to */
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-upload-pack", up, NULL, 1000, NULL, 0, &limit,
	                   &a, 0),
	             0);
	CHECK_EQ_INT(a.calls, 0);
	CHECK_EQ_INT((long long)limit, 1000);
	CHECK_EQ_INT(
	        admit(root, "POST", "/r.git/git-upload-pack", up, NULL, -1, NULL, 0, &limit, &a, 0),
	        0);
	CHECK_EQ_INT((long long)limit, 1000);
	/* receive-pack streams its body: only the front's bound */
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-receive-pack", rp, NULL, 5000, NULL, 0, &limit,
	                   &a, 0),
	             0);
	CHECK(limit == UINT64_MAX);
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-receive-pack", rp, NULL, 5000, NULL, 4096,
	                   &limit, &a, 0),
	             PW_ETOOBIG);
	CHECK_EQ_INT(a.status, 413);
	/* a GET, a refused route or no repository: the handler reads no body */
	CHECK_EQ_INT(
	        admit(root, "GET", "/r.git/info/refs", NULL, NULL, 5000, NULL, 0, &limit, &a, 0),
	        0);
	CHECK_EQ_INT((long long)limit, 0);
	CHECK_EQ_INT(admit(root, "POST", "/nothing.git/git-upload-pack", up, NULL, 5000, NULL, 0,
	                   &limit, &a, 0),
	             0);
	CHECK_EQ_INT((long long)limit, 0);
	CHECK_EQ_INT(a.calls, 0);
	/* framing: 400 at once, "unknown size" included */
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-upload-pack", up, NULL, -1,
	                   "18446744073709551615", 0, &limit, &a, 0),
	             PW_EINVAL);
	CHECK_EQ_INT(a.status, 400);
	CHECK_EQ_INT(admit(root, "POST", "/r.git/git-upload-pack", up, NULL, -1,
	                   "18446744073709551615", 0, &limit, &a, 1),
	             PW_EINVAL);
	CHECK_EQ_INT(a.status, 400);
	CHECK_EQ_INT(a.body_read, 0);
}

/* One path rule for every server: a symlink out of the base is refused. */
static void test_symlinks(const char *root, const char *outside)
{
	char p[512], q[512];
	struct answer a;
	uint64_t limit;

	snprintf(p, sizeof(p), "%s/out.git", root);
	CHECK_EQ_INT(symlink(outside, p), 0);
	snprintf(q, sizeof(q), "%s/in.git", root);
	CHECK_EQ_INT(symlink("r.git", q), 0);
	CHECK_EQ_INT(pw_srv_path_inside(root, p), 0);
	CHECK_EQ_INT(pw_srv_path_inside(root, q), 1);
	CHECK_EQ_INT(pw_srv_path_inside(root, root), 1);
	CHECK_EQ_INT(pw_srv_path_inside(root, "/nonexistent/x"), 0);
	CHECK_EQ_INT(
	        admit(root, "GET", "/out.git/info/refs", NULL, NULL, -1, NULL, 0, &limit, &a, 1),
	        PW_ENOTFOUND);
	CHECK_EQ_INT(a.status, 404);
	CHECK_EQ_INT(
	        admit(root, "GET", "/in.git/info/refs", NULL, NULL, -1, NULL, 0, &limit, &a, 1), 0);
	CHECK_EQ_INT(a.status, 200);
	/* nothing read from the outside one: its body bound is 0 */
	CHECK_EQ_INT(admit(root, "POST", "/out.git/git-receive-pack",
	                   "application/x-git-receive-pack-request", NULL, 10, NULL, 0, &limit, &a,
	                   0),
	             0);
	CHECK_EQ_INT((long long)limit, 0);
	unlink(p);
	unlink(q);
}

int main(void)
{
	char root[] = "/tmp/pw-test-admit-XXXXXX", outside[] = "/tmp/pw-test-admit-XXXXXX";
	char path[256], cmd[300];
	int k;

	test_headers();
	if (!mkdtemp(root) || !mkdtemp(outside))
		return 1;
	for (k = 0; k < 2; k++) {
		struct pw_repo_init_opts o;
		struct pw_repo *repo;
		struct pw_error err;

		memset(&o, 0, sizeof(o));
		o.bare = 1;
		o.algo = k ? &pw_hash_sha256 : &pw_hash_sha1;
		snprintf(path, sizeof(path), "%s/r.git", root);
		CHECK_EQ_INT(pw_repo_init_ext(&repo, path, &o, &err), 0);
		pw_repo_free(repo);
		test_admit(root);
		snprintf(path, sizeof(path), "%s/elsewhere.git", outside);
		CHECK_EQ_INT(pw_repo_init_ext(&repo, path, &o, &err), 0);
		pw_repo_free(repo);
		test_symlinks(root, path);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
		CHECK_EQ_INT(system(cmd), 0);
		snprintf(cmd, sizeof(cmd), "rm -rf '%s/r.git'", root);
		CHECK_EQ_INT(system(cmd), 0);
	}
	rmdir(root);
	rmdir(outside);
	return pw_test_done();
}
