/* The HTTP request handler behind every front (CGI, embedded server): routes
 * a request as git http-backend does and answers through the caller's sink.
 * The smart POSTs run upload-pack/receive-pack on a worker thread over a
 * socket pair; this thread feeds the body in and the response out, so the
 * sink and the body reader only ever run on the caller's thread. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/http.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/receive.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/server.h"
#include "server/browse.h"
#include "server/http-priv.h"
#include "server/paths.h"
#include "transport/dumb.h"

#define IO_CHUNK 65536

void pw_http_request_init(struct pw_http_request *req)
{
	memset(req, 0, sizeof(*req));
	req->content_length = -1;
	req->err_fd = -1;
}

/* ---- the response: headers collected, then sent once ------------------- */

#define MAX_HDRS 12

struct resp {
	const struct pw_http_sink *sink;
	const char *view; /* "sha1"/"sha256": the other algorithm's view, or NULL */
	int head_only;    /* HEAD: headers, no body */
	int started, failed;
	struct pw_http_header h[MAX_HDRS];
	char vals[MAX_HDRS][96];
	size_t nr;
};

static void hdr(struct resp *r, const char *name, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void hdr(struct resp *r, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (r->nr >= MAX_HDRS)
		return;
	va_start(ap, fmt);
	vsnprintf(r->vals[r->nr], sizeof(r->vals[0]), fmt, ap);
	va_end(ap);
	r->h[r->nr].name = name;
	r->h[r->nr].value = r->vals[r->nr];
	r->nr++;
}

static void hdr_nocache(struct resp *r)
{
	hdr(r, "Expires", "Fri, 01 Jan 1980 00:00:00 GMT");
	hdr(r, "Pragma", "no-cache");
	hdr(r, "Cache-Control", "no-cache, max-age=0, must-revalidate");
}

/* Git's RFC 2822 dates, in UTC: "Thu, 3 Dec 2026 12:58:34 +0000" */
static void hdr_date(struct resp *r, const char *name, time_t when)
{
	static const char days[] = "SunMonTueWedThuFriSat",
	                  months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	struct tm tm;

	if (!gmtime_r(&when, &tm))
		return;
	hdr(r, name, "%.3s, %d %.3s %d %02d:%02d:%02d +0000", days + 3 * tm.tm_wday, tm.tm_mday,
	    months + 3 * tm.tm_mon, tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

static void hdr_forever(struct resp *r)
{
	time_t now = time(NULL);

	hdr_date(r, "Date", now);
	hdr_date(r, "Expires", now + 31536000);
	hdr(r, "Cache-Control", "public, max-age=31536000");
}

static int resp_start(struct resp *r, int status, const char *reason)
{
	if (r->started)
		return r->failed ? -1 : 0;
	r->started = 1;
	if (r->sink->start(r->sink->ctx, status, reason, r->h, r->nr))
		r->failed = 1;
	return r->failed ? -1 : 0;
}

static int resp_write(struct resp *r, const void *data, size_t len)
{
	if (!r->started && resp_start(r, 200, "OK"))
		return -1;
	if (r->failed)
		return -1;
	if (r->head_only || !len)
		return 0;
	if (r->sink->write(r->sink->ctx, data, len))
		r->failed = 1;
	return r->failed ? -1 : 0;
}

/* A refusal: status, no-cache headers, an optional body; the message (for
 * the log) into err with code. */
static int refuse(struct resp *r, int status, const char *reason, const char *body, int code,
                  struct pw_error *err, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int refuse(struct resp *r, int status, const char *reason, const char *body, int code,
                  struct pw_error *err, const char *fmt, ...)
{
	va_list ap;
	char msg[PW_ERROR_MSG_MAX];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!r->started) {
		r->nr = 0;
		hdr_nocache(r);
		if (body && status != 415) /* git's 415 has no type */
			hdr(r, "Content-Type", "text/plain");
		if (!resp_start(r, status, reason) && body)
			resp_write(r, body, strlen(body));
	}
	return pw_error_set(err, code, "%s", msg);
}

/* ---- routing ----------------------------------------------------------- */

enum route {
	R_HEAD,
	R_INFO_REFS,
	R_TEXT,
	R_INFO_PACKS,
	R_LOOSE,
	R_PACK,
	R_IDX,
	R_RPC,
};

static int all_hex(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return 0;
	return 1;
}

static int ends_with(const char *s, size_t len, const char *suffix, size_t *at)
{
	size_t n = strlen(suffix);

	if (len < n || memcmp(s + len - n, suffix, n))
		return 0;
	*at = len - n;
	return 1;
}

/* The file-name tail of `dir` that names a service (the part Git's regexes
 * match), its route and method; *at is where it starts (at its '/'). */
static int match_route(const char *dir, size_t len, enum route *route, const char **method,
                       size_t *at)
{
	static const struct {
		const char *suffix;
		enum route route;
	} fixed[] = {
	        {"/HEAD", R_HEAD},
	        {"/info/refs", R_INFO_REFS},
	        {"/objects/info/alternates", R_TEXT},
	        {"/objects/info/http-alternates", R_TEXT},
	        {"/objects/info/packs", R_INFO_PACKS},
	        {"/git-upload-pack", R_RPC},
	        {"/git-receive-pack", R_RPC},
	};
	static const size_t hexlens[] = {40, 64};
	size_t i, k;

	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		if (ends_with(dir, len, fixed[i].suffix, at)) {
			*route = fixed[i].route;
			*method = *route == R_RPC ? "POST" : "GET";
			return 1;
		}
	*method = "GET";
	for (k = 0; k < 2; k++) {
		size_t hex = hexlens[k], n;

		/* /objects/xx/<hex-2> */
		n = 9 + 2 + 1 + hex - 2;
		if (len >= n && !memcmp(dir + len - n, "/objects/", 9) &&
		    all_hex(dir + len - n + 9, 2) && dir[len - n + 11] == '/' &&
		    all_hex(dir + len - n + 12, hex - 2)) {
			*route = R_LOOSE;
			*at = len - n;
			return 1;
		}
		/* /objects/pack/pack-<hex>.pack and .idx */
		for (i = 0; i < 2; i++) {
			const char *ext = i ? ".idx" : ".pack";
			size_t el = strlen(ext);

			n = 19 + hex + el;
			if (len >= n && !memcmp(dir + len - n, "/objects/pack/pack-", 19) &&
			    all_hex(dir + len - n + 19, hex) && !memcmp(dir + len - el, ext, el)) {
				*route = i ? R_IDX : R_PACK;
				*at = len - n;
				return 1;
			}
		}
	}
	return 0;
}

/* The value of `name` in a query string ("a=b&service=x"), %-decoded into
 * out; 0 when found. */
static int query_param(const char *q, const char *name, char *out, size_t cap)
{
	size_t nl = strlen(name);

	while (q && *q) {
		const char *end = strchr(q, '&');
		size_t len = end ? (size_t)(end - q) : strlen(q);

		if (len > nl && !memcmp(q, name, nl) && q[nl] == '=') {
			size_t i, o = 0;

			for (i = nl + 1; i < len && o + 1 < cap; i++) {
				int hi, lo;

				if (q[i] == '+')
					out[o++] = ' ';
				else if (q[i] == '%' && i + 2 < len &&
				         (hi = pw_hexval(q[i + 1])) >= 0 &&
				         (lo = pw_hexval(q[i + 2])) >= 0) {
					out[o++] = (char)(hi << 4 | lo);
					i += 2;
				} else
					out[o++] = q[i];
			}
			out[o] = 0;
			return 0;
		}
		q = end ? end + 1 : NULL;
	}
	return -1;
}

int pw_http__service(const char *path, const char *query)
{
	enum route route;
	const char *method;
	char service[16];
	size_t at;

	if (!path || !match_route(path, strlen(path), &route, &method, &at))
		return PW_SVC_OTHER;
	if (route == R_RPC)
		return !strcmp(path + at + 1, "git-receive-pack") ? PW_SVC_RECEIVE_PACK
		                                                  : PW_SVC_UPLOAD_PACK;
	if (route == R_INFO_REFS && !query_param(query, "service", service, sizeof(service)))
		return PW_SVC_INFO_REFS;
	return PW_SVC_DUMB;
}

/* ---- the dumb files ----------------------------------------------------- */

static int send_buf(struct resp *r, const char *type, const struct pw_buf *b)
{
	hdr(r, "Content-Length", "%zu", b->len);
	hdr(r, "Content-Type", "%s", type);
	return resp_write(r, b->data, b->len);
}

static int send_file(struct resp *r, struct pw_repo *repo, const char *name, const char *type,
                     struct pw_error *err)
{
	char *path = NULL, *buf = NULL;
	struct stat st;
	int fd, rc = 0;

	if (asprintf(&path, "%s/%s", pw_repo_git_dir(repo), name) < 0)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		int e = fd < 0 ? errno : EISDIR;

		if (fd >= 0)
			close(fd);
		rc = refuse(r, 404, "Not Found", NULL, PW_ENOTFOUND, err, "Cannot open '%s': %s",
		            path, strerror(e));
		free(path);
		return rc;
	}
	hdr(r, "Content-Length", "%lld", (long long)st.st_size);
	hdr(r, "Content-Type", "%s", type);
	hdr_date(r, "Last-Modified", st.st_mtime);
	if (resp_start(r, 200, "OK") || !(buf = malloc(IO_CHUNK)))
		goto out;
	for (;;) {
		ssize_t n = read(fd, buf, IO_CHUNK);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = pw_error_set(err, PW_EIO, "reading '%s': %s", path, strerror(errno));
			break;
		}
		if (!n || resp_write(r, buf, (size_t)n))
			break;
	}
out:
	free(buf);
	free(path);
	close(fd);
	return rc;
}

/* The namespace's ref prefix ("refs/namespaces/<ns>/...", "" for none) in
 * *out: 0 or PW_ENOMEM. */
static int ns_prefix(struct pw_buf *out, const char *ns)
{
	return pw_srv_namespace_prefix(out, ns ? ns : "");
}

/* Dumb info/refs: the refs of the namespace (GIT_NAMESPACE), named without
 * it, as Git's for_each_namespaced_ref lists them. */
static int get_text_refs(struct resp *r, struct pw_repo *repo, const char *ns, struct pw_error *err)
{
	struct pw_buf out = PW_BUF_INIT, prefix = PW_BUF_INIT;
	struct pw_odb *odb = NULL;
	size_t ns_len;
	int rc;

	if (ns_prefix(&prefix, ns))
		return refuse(r, 500, "Internal Server Error", NULL, PW_ENOMEM, err,
		              "out of memory");
	ns_len = prefix.len;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err))) {
		pw_buf_free(&prefix);
		return refuse(r, 500, "Internal Server Error", NULL, rc, err, "%s", err->msg);
	}
	if ((rc = pw_buf_addf(&prefix, "refs/")) == 0)
		rc = pw_dumb_info_refs(repo, odb, prefix.data, ns_len, 1, &out, err);
	pw_buf_free(&prefix);
	if (rc) {
		rc = refuse(r, 500, "Internal Server Error", NULL, rc, err, "%s",
		            rc == PW_ENOMEM ? "out of memory" : err->msg);
	} else {
		hdr_nocache(r);
		send_buf(r, "text/plain", &out); /* a vanished client is not our error */
	}
	pw_odb_free(odb);
	pw_buf_free(&out);
	return rc;
}

/* The namespace's HEAD (GIT_NAMESPACE), its target named without the
 * namespace, as Git's head_ref_namespaced shows it. */
static int get_head(struct resp *r, struct pw_repo *repo, const char *ns)
{
	struct pw_buf out = PW_BUF_INIT, prefix = PW_BUF_INIT;

	if (ns_prefix(&prefix, ns) || pw_dumb_head(repo, prefix.data ? prefix.data : "", &out)) {
		pw_buf_free(&prefix);
		pw_buf_free(&out);
		return refuse(r, 500, "Internal Server Error", NULL, PW_ENOMEM, NULL,
		              "out of memory");
	}
	pw_buf_free(&prefix);
	send_buf(r, "text/plain", &out);
	pw_buf_free(&out);
	return 0;
}

/* objects/info/packs: "P pack-<hex>.pack" per local pack that has its idx,
 * newest first (Git's order), then an empty line. */
static int get_info_packs(struct resp *r, struct pw_repo *repo, struct pw_error *err)
{
	struct pw_buf out = PW_BUF_INIT;
	int rc = pw_dumb_info_packs(pw_repo_objects_dir(repo), &out);

	if (rc)
		rc = refuse(r, 500, "Internal Server Error", NULL, PW_ENOMEM, err, "out of memory");
	else {
		hdr_nocache(r);
		send_buf(r, "text/plain; charset=utf-8", &out);
	}
	pw_buf_free(&out);
	return rc;
}

/* ---- the request body --------------------------------------------------- */

struct body {
	const struct pw_http_request *req;
	long long raw_left; /* -1 = to EOF */
	int gzip, z_live, z_done, eof;
	z_stream z;
	unsigned char *in;
	uint64_t out_total, max; /* max 0 = none */
	/* a buffered body, served from memory */
	const char *mem;
	size_t mem_len, mem_off;
	int err_status; /* 400 or 413 once reading failed */
	char err_msg[256];
};

static long raw_read(struct body *b, void *buf, size_t len)
{
	long n;

	if (!b->req->read_body || !b->raw_left)
		return 0;
	if (b->raw_left > 0 && (long long)len > b->raw_left)
		len = (size_t)b->raw_left;
	n = b->req->read_body(b->req->body_ctx, buf, len);
	if (n < 0 || (n == 0 && b->raw_left > 0)) {
		b->err_status = 400;
		snprintf(b->err_msg, sizeof(b->err_msg), "%s",
		         n < 0 ? "error reading the request body"
		               : "the request body ended before its Content-Length");
		return -1;
	}
	if (b->raw_left > 0)
		b->raw_left -= n;
	return n;
}

static int body_fail(struct body *b, int status, const char *msg)
{
	b->err_status = status;
	snprintf(b->err_msg, sizeof(b->err_msg), "%s", msg);
	return -1;
}

/* Up to cap decoded body bytes into out: the count, 0 at the end, -1 on
 * error (err_status/err_msg set). */
static long body_read(struct body *b, unsigned char *out, size_t cap)
{
	long n;

	if (b->mem) {
		size_t k = b->mem_len - b->mem_off < cap ? b->mem_len - b->mem_off : cap;

		memcpy(out, b->mem + b->mem_off, k);
		b->mem_off += k;
		return (long)k;
	}
	if (b->eof)
		return 0;
	if (!b->gzip) {
		n = raw_read(b, out, cap);
		if (n == 0)
			b->eof = 1;
		if (n > 0 && b->max && (b->out_total += (uint64_t)n) > b->max)
			return body_fail(b, 413, "request was larger than our maximum size");
		return n;
	}
	if (!b->z_live) {
		memset(&b->z, 0, sizeof(b->z));
		if (!(b->in = malloc(IO_CHUNK)) || inflateInit2(&b->z, 16 + MAX_WBITS) != Z_OK)
			return body_fail(b, 500, "out of memory");
		b->z_live = 1;
	}
	b->z.next_out = out;
	b->z.avail_out = (uInt)cap;
	while (b->z.avail_out == cap) {
		int zr;

		if (!b->z.avail_in) {
			n = raw_read(b, b->in, IO_CHUNK);
			if (n < 0)
				return -1;
			if (!n)
				return body_fail(b, 400,
				                 "request ended in the middle of the gzip stream");
			b->z.next_in = b->in;
			b->z.avail_in = (uInt)n;
		}
		zr = inflate(&b->z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END) {
			b->eof = 1;
			break;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			return body_fail(b, 400, "the gzip request body is damaged");
	}
	n = (long)(cap - b->z.avail_out);
	if (b->max && (b->out_total += (uint64_t)n) > b->max)
		return body_fail(b, 413, "request was larger than our maximum size");
	return n;
}

static void body_free(struct body *b)
{
	if (b->z_live)
		inflateEnd(&b->z);
	free(b->in);
}

int pw_http_gunzip(struct pw_buf *out, const void *in, size_t len, uint64_t max,
                   struct pw_error *err)
{
	struct pw_http_request req;
	struct body b;
	unsigned char *chunk = malloc(IO_CHUNK);
	long n;
	int rc = 0;

	pw_http_request_init(&req);
	pw_buf_reset(out);
	if (!chunk)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memset(&b, 0, sizeof(b));
	b.req = &req;
	b.raw_left = -1;
	b.gzip = 1;
	b.max = max;
	/* feed the whole input at once, with no reader behind it */
	memset(&b.z, 0, sizeof(b.z));
	if (inflateInit2(&b.z, 16 + MAX_WBITS) != Z_OK) {
		free(chunk);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	b.z_live = 1;
	b.z.next_in = (unsigned char *)(uintptr_t)in;
	b.z.avail_in = (uInt)len;
	while ((n = body_read(&b, chunk, IO_CHUNK)) > 0)
		if (pw_buf_add(out, chunk, (size_t)n)) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
	if (!rc && n < 0)
		rc = pw_error_set(err, b.err_status == 413 ? PW_ETOOBIG : PW_EINVAL, "%s",
		                  b.err_msg);
	body_free(&b);
	free(chunk);
	return rc;
}

/* ---- the smart services ------------------------------------------------- */

struct job {
	struct pw_repo *repo;
	int receive;
	struct pw_upload_pack_opts up;
	struct pw_receive_opts rp;
	int in_fd, out_fd;
	int rc;
	struct pw_error err;
	char email[512]; /* the pusher's "<user>@http.<addr>" */
};

static void *job_main(void *arg)
{
	struct job *j = arg;

	if (j->receive)
		j->rc = pw_receive_pack(j->repo, j->in_fd, j->out_fd, &j->rp, &j->err);
	else
		j->rc = pw_upload_pack(j->repo, j->in_fd, j->out_fd, &j->up, &j->err);
	close(j->out_fd);
	close(j->in_fd);
	return NULL;
}

/* Run the job on a thread; feed it the body (b, NULL = none) and pass what
 * it writes to the response. */
/* The session's two sockets (the body in, the answer out; our ends in
 * *in_w and *out_r) and its thread. 0, or the refusal's code. */
static int start_job(struct resp *r, struct job *j, struct body *b, int *in_w, int *out_r,
                     pthread_t *th, struct pw_error *err)
{
	int in_sv[2], out_sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in_sv))
		return refuse(r, 500, "Internal Server Error", NULL, PW_EIO, err, "socketpair: %s",
		              strerror(errno));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, out_sv)) {
		close(in_sv[0]);
		close(in_sv[1]);
		return refuse(r, 500, "Internal Server Error", NULL, PW_EIO, err, "socketpair: %s",
		              strerror(errno));
	}
	j->in_fd = in_sv[1];
	j->out_fd = out_sv[1];
	*in_w = in_sv[0];
	*out_r = out_sv[0];
	shutdown(*in_w, SHUT_RD);
	shutdown(*out_r, SHUT_WR);
	if (!b)
		shutdown(*in_w, SHUT_WR); /* the session reads EOF at once */
	if (pthread_create(th, NULL, job_main, j)) {
		close(in_sv[0]);
		close(in_sv[1]);
		close(out_sv[0]);
		close(out_sv[1]);
		return refuse(r, 500, "Internal Server Error", NULL, PW_EIO, err,
		              "cannot start a thread");
	}
	if (!b) {
		close(*in_w);
		*in_w = -1;
	}
	return 0;
}

static int run_job(struct resp *r, struct job *j, struct body *b, struct pw_error *err)
{
	int in_w = -1, out_r = -1, rc = 0;
	unsigned char *ibuf = NULL, *obuf = NULL;
	size_t ipend = 0, ioff = 0;
	int in_failed = 0;
	pthread_t th;

	if (!(ibuf = malloc(IO_CHUNK)) || !(obuf = malloc(IO_CHUNK))) {
		free(ibuf);
		return refuse(r, 500, "Internal Server Error", NULL, PW_ENOMEM, err,
		              "out of memory");
	}
	if ((rc = start_job(r, j, b, &in_w, &out_r, &th, err))) {
		free(ibuf);
		free(obuf);
		return rc;
	}
	while (out_r >= 0) {
		struct pollfd p[2];
		int n = 0, oi;

		if (in_w >= 0) {
			p[n].fd = in_w;
			p[n].events = POLLOUT;
			p[n++].revents = 0;
		}
		oi = n;
		p[n].fd = out_r;
		p[n].events = POLLIN;
		p[n++].revents = 0;
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (in_w >= 0 && p[0].revents) {
			if (ioff == ipend) {
				long got = body_read(b, ibuf, IO_CHUNK);

				ioff = ipend = 0;
				if (got <= 0) {
					in_failed = got < 0;
					close(in_w); /* EOF (or the end of a bad body) for the
					                session */
					in_w = -1;
				} else
					ipend = (size_t)got;
			}
			if (in_w >= 0 && ioff < ipend) {
				ssize_t w = send(in_w, ibuf + ioff, ipend - ioff,
				                 MSG_NOSIGNAL | MSG_DONTWAIT);

				if (w > 0)
					ioff += (size_t)w;
				else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
				         errno != EINTR) {
					close(in_w); /* the session stopped reading */
					in_w = -1;
				}
			}
		}
		if (p[oi].revents) {
			ssize_t got = read(out_r, obuf, IO_CHUNK);

			if (got < 0 && errno == EINTR)
				continue;
			if (got <= 0) {
				close(out_r);
				out_r = -1;
				break;
			}
			/* after a bad body the session's answer is not sent */
			if (!in_failed && resp_write(r, obuf, (size_t)got)) {
				close(out_r); /* the client is gone: the session gets EPIPE */
				out_r = -1;
			}
		}
	}
	if (in_w >= 0)
		close(in_w);
	pthread_join(th, NULL);
	free(ibuf);
	free(obuf);
	if (in_failed)
		return refuse(r, b->err_status,
		              b->err_status == 413 ? "Request Entity Too Large" : "Bad Request",
		              b->err_msg, b->err_status == 413 ? PW_ETOOBIG : PW_EINVAL, err, "%s",
		              b->err_msg);
	if (!r->started)
		resp_write(r, "", 0);
	if (j->rc)
		rc = pw_error_copy(err, &j->err);
	return rc;
}

struct svc {
	const char *name;   /* "upload-pack" */
	const char *config; /* "http.uploadpack" */
	int receive;
};

static const struct svc services[] = {
        {"upload-pack", "http.uploadpack", 0},
        {"receive-pack", "http.receivepack", 1},
};

/* Git's select_service: a known "git-<name>", enabled by config (push
 * needs an authenticated user unless http.receivepack says so). */
static const struct svc *select_service(struct resp *r, const struct pw_http_request *req,
                                        struct pw_repo *repo, const char *name,
                                        struct pw_error *err)
{
	const struct svc *s = NULL;
	int enabled;
	size_t i;

	if (!strncmp(name, "git-", 4))
		for (i = 0; i < sizeof(services) / sizeof(services[0]); i++)
			if (!strcmp(name + 4, services[i].name))
				s = &services[i];
	if (!s) {
		refuse(r, 403, "Forbidden", NULL, PW_EUNSUPPORTED, err, "Unsupported service: '%s'",
		       name);
		return NULL;
	}
	if (s->receive && req->allow_push)
		enabled = 1;
	else if (pw_config_get_bool(pw_repo_config(repo), s->config, &enabled, NULL))
		enabled = s->receive ? (req->remote_user && *req->remote_user) : 1;
	if (!enabled) {
		refuse(r, 403, "Forbidden", NULL, PW_EUNSUPPORTED, err, "Service not enabled: '%s'",
		       s->name);
		return NULL;
	}
	return s;
}

static void job_init(struct job *j, struct pw_repo *repo, const struct svc *s,
                     const struct pw_http_request *req)
{
	memset(j, 0, sizeof(*j));
	j->repo = repo;
	j->receive = s->receive;
	pw_upload_pack_opts_init(&j->up);
	j->up.version = pw_protocol_version_from_env(req->git_protocol);
	j->up.agent = req->agent;
	j->up.ref_namespace = req->ref_namespace;
	j->up.pack_cache = req->pack_cache;
	j->up.ref_store = req->ref_store;
	j->up.allow_any_want = req->allow_any_want;
	pw_receive_opts_init(&j->rp);
	j->rp.ref_store = req->ref_store;
	j->rp.err_fd = req->err_fd;
	j->rp.agent = req->agent;
	j->rp.service_path = "."; /* git http-backend runs `receive-pack --stateless-rpc .` */
	/* submodules under the same root (NULL: beside the repository) */
	j->rp.submodule_base = req->project_root && *req->project_root ? req->project_root : NULL;
	/* a push's reflog names the web user, as git http-backend sets
	 * GIT_COMMITTER_NAME/EMAIL when the environment has none */
	j->rp.committer_name = req->committer_name                     ? req->committer_name
	                       : req->remote_user && *req->remote_user ? req->remote_user
	                                                               : "anonymous";
	j->rp.committer_email = req->committer_email;
	if (!j->rp.committer_email) {
		snprintf(j->email, sizeof(j->email), "%s@http.%s", j->rp.committer_name,
		         req->remote_addr && *req->remote_addr ? req->remote_addr : "(none)");
		j->rp.committer_email = j->email;
	}
	j->rp.committer_date = req->committer_date;
	/* push has no v2 yet: Git's receive-pack falls back to v0 as well */
	if (pw_protocol_version_from_env(req->git_protocol) == 1)
		j->rp.protocol_version = 1;
}

static int get_info_refs_smart(struct resp *r, const struct pw_http_request *req,
                               struct pw_repo *repo, const char *service, struct pw_error *err)
{
	const struct svc *s = select_service(r, req, repo, service, err);
	struct pw_buf pre = PW_BUF_INIT;
	struct job j;
	int rc;

	if (!s)
		return err->code;
	hdr_nocache(r);
	hdr(r, "Content-Type", "application/x-git-%s-advertisement", s->name);
	job_init(&j, repo, s, req);
	j.up.object_format = j.rp.object_format = r->view;
	j.up.advertise_refs = j.up.stateless_rpc = 1;
	j.rp.advertise_refs = j.rp.stateless_rpc = 1;
	if (pw_protocol_version_from_env(req->git_protocol) != 2) {
		pw_pkt_writef(&pre, "# service=git-%s\n", s->name);
		pw_pkt_flush(&pre);
	}
	if (resp_write(r, pre.data, pre.len)) {
		pw_buf_free(&pre);
		return 0;
	}
	pw_buf_free(&pre);
	rc = run_job(r, &j, NULL, err);
	return rc;
}

static int service_rpc(struct resp *r, const struct pw_http_request *req, struct pw_repo *repo,
                       const char *service, uint64_t max_buffer, struct pw_error *err)
{
	const struct svc *s = select_service(r, req, repo, service, err);
	const char *ct = req->content_type ? req->content_type : "";
	char want[64], body[256];
	struct pw_buf full = PW_BUF_INIT;
	struct pw_receive_result pushed;
	unsigned char *chunk = NULL;
	struct body b;
	struct job j;
	int rc;

	if (!s)
		return err->code;
	snprintf(want, sizeof(want), "application/x-git-%s-request", s->name);
	if (strcmp(ct, want)) {
		snprintf(body, sizeof(body),
		         "Expected POST with Content-Type '%s', but received '%s' instead.\n", want,
		         ct);
		return refuse(r, 415, "Unsupported Media Type", body, PW_EUNSUPPORTED, err,
		              "Expected POST with Content-Type '%s', but received '%.200s' instead",
		              want, ct);
	}
	/* git http-backend parses the length when it starts the service */
	if (req->content_length_bad)
		return refuse(r, 500, "Internal Server Error", NULL, PW_EINVAL, err,
		              "failed to parse CONTENT_LENGTH: %.200s", req->content_length_bad);
	hdr_nocache(r);
	hdr(r, "Content-Type", "application/x-git-%s-result", s->name);
	job_init(&j, repo, s, req);
	j.up.object_format = j.rp.object_format = r->view;
	j.up.stateless_rpc = j.rp.stateless_rpc = 1;

	memset(&b, 0, sizeof(b));
	b.req = req;
	b.raw_left = req->content_length;
	b.gzip = req->content_encoding && (!strcmp(req->content_encoding, "gzip") ||
	                                   !strcmp(req->content_encoding, "x-gzip"));
	if (!s->receive) {
		/* upload-pack's request is read whole first (bounded, as Git) */
		long n;

		/* a declared length over max_buffer was refused by admit() */
		b.max = max_buffer;
		if (!(chunk = malloc(IO_CHUNK)))
			return refuse(r, 500, "Internal Server Error", NULL, PW_ENOMEM, err,
			              "out of memory");
		while ((n = body_read(&b, chunk, IO_CHUNK)) > 0)
			if (pw_buf_add(&full, chunk, (size_t)n)) {
				n = body_fail(&b, 500, "out of memory");
				break;
			}
		free(chunk);
		body_free(&b);
		if (n < 0) {
			pw_buf_free(&full);
			return refuse(r, b.err_status,
			              b.err_status == 413   ? "Request Entity Too Large"
			              : b.err_status == 500 ? "Internal Server Error"
			                                    : "Bad Request",
			              b.err_msg, b.err_status == 413 ? PW_ETOOBIG : PW_EINVAL, err,
			              "%s", b.err_msg);
		}
		memset(&b, 0, sizeof(b));
		b.req = req;
		b.mem = full.data;
		b.mem_len = full.len;
	}
	memset(&pushed, 0, sizeof(pushed));
	if (s->receive)
		j.rp.result = &pushed;
	rc = run_job(r, &j, &b, err);
	body_free(&b);
	pw_buf_free(&full);
	if (s->receive && req->result && (pushed.commands || pushed.failed || rc))
		req->result->push =
		        !rc && pushed.commands && !pushed.refused && !pushed.failed ? 1 : -1;
	return rc;
}

/* ---- the first look at a request ---------------------------------------- */

static int is_ows(char c)
{
	return c == ' ' || c == '\t';
}

/* The next element of a comma-separated field value, trimmed, in [*b, *e);
 * advances *p. 0 when there is none left. */
static int list_next(const char **p, const char **b, const char **e)
{
	const char *s = *p, *end;

	if (!*s)
		return 0;
	end = strchr(s, ',');
	if (!end)
		end = s + strlen(s);
	*p = *end ? end + 1 : end;
	while (s < end && is_ows(*s))
		s++;
	while (end > s && is_ows(end[-1]))
		end--;
	*b = s;
	*e = end;
	return 1;
}

/* A decimal length below 2^63: 0, -1 when it is no number, -2 when too big. */
static int parse_length(const char *b, const char *e, uint64_t *v)
{
	uint64_t n = 0;

	if (b == e)
		return -1;
	for (; b < e; b++) {
		unsigned d = (unsigned)(*b - '0');

		if (*b < '0' || *b > '9')
			return -1;
		if (n > ((uint64_t)INT64_MAX - d) / 10)
			return -2;
		n = n * 10 + d;
	}
	*v = n;
	return 0;
}

/* A field value as messages show it: printable ASCII, at most 40 bytes. */
static const char *shown(char *out, size_t cap, const char *v, size_t len)
{
	size_t i, k = 0;

	for (i = 0; i < len && k + 4 < cap && k < 40; i++)
		out[k++] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
	if (i < len)
		out[k++] = '.', out[k++] = '.', out[k++] = '.';
	out[k] = 0;
	return out;
}

int pw_http_check_headers(const struct pw_http_header *h, size_t nr, const char *http_version,
                          struct pw_http_framing *out, struct pw_error *err)
{
	/* fields whose repeats a proxy and we could read differently */
	static const char *const single[] = {"Host", "Content-Type", "Content-Encoding"};
	size_t seen[3] = {0, 0, 0}, i, k, ncodings = 0, nchunked = 0, other_len = 0;
	const char *other = NULL;
	int te = 0, last_chunked = 0;
	char show[48];

	memset(out, 0, sizeof(*out));
	for (i = 0; i < nr; i++) {
		const char *name = h[i].name, *v = h[i].value ? h[i].value : "", *p = v, *b, *e;

		if (!name)
			continue;
		for (k = 0; k < 3; k++)
			if (!strcasecmp(name, single[k]) && ++seen[k] > 1)
				return pw_error_set(err, PW_EINVAL, "more than one %s header",
				                    single[k]);
		if (!strcasecmp(name, "Content-Length")) {
			int any = 0;

			while (list_next(&p, &b, &e)) {
				uint64_t n = 0;
				int bad = parse_length(b, e, &n);

				if (b == e)
					continue; /* an empty list element */
				if (bad == -2)
					return pw_error_set(
					        err, PW_EINVAL, "Content-Length %s is too large",
					        shown(show, sizeof(show), v, strlen(v)));
				if (bad)
					return pw_error_set(
					        err, PW_EINVAL,
					        "Content-Length '%s' is not a length",
					        shown(show, sizeof(show), v, strlen(v)));
				if (out->has_length && n != out->length)
					return pw_error_set(
					        err, PW_EINVAL,
					        "Content-Length headers disagree (%llu and "
					        "%llu)",
					        (unsigned long long)out->length,
					        (unsigned long long)n);
				out->has_length = 1;
				out->length = n;
				any = 1;
			}
			if (!any)
				return pw_error_set(err, PW_EINVAL,
				                    "Content-Length '%s' is not a length",
				                    shown(show, sizeof(show), v, strlen(v)));
		} else if (!strcasecmp(name, "Transfer-Encoding")) {
			te = 1;
			while (list_next(&p, &b, &e)) {
				const char *ce = memchr(b, ';', (size_t)(e - b));

				if (b == e)
					continue; /* an empty list element */
				if (!ce)
					ce = e;
				while (ce > b && is_ows(ce[-1]))
					ce--;
				ncodings++;
				last_chunked = ce - b == 7 && !strncasecmp(b, "chunked", 7);
				if (last_chunked)
					nchunked++;
				else if (!other) {
					other = b;
					other_len = (size_t)(ce - b);
				}
			}
		}
	}
	if (!te)
		return 0;
	if (http_version && !strcmp(http_version, "HTTP/1.0"))
		return pw_error_set(err, PW_EINVAL, "Transfer-Encoding in an HTTP/1.0 request");
	if (out->has_length)
		return pw_error_set(err, PW_EINVAL,
		                    "both Transfer-Encoding and Content-Length: the body's end "
		                    "is ambiguous");
	if (!ncodings)
		return pw_error_set(err, PW_EINVAL, "Transfer-Encoding names no coding");
	if (nchunked > 1)
		return pw_error_set(err, PW_EINVAL, "Transfer-Encoding applies chunked twice");
	if (!last_chunked)
		return pw_error_set(err, PW_EINVAL,
		                    "Transfer-Encoding does not end in chunked: the body's end "
		                    "is unknown");
	if (other)
		return pw_error_set(err, PW_EUNSUPPORTED, "transfer coding '%s' is not supported",
		                    shown(show, sizeof(show), other, other_len));
	out->chunked = 1;
	return 0;
}

/* Every response of the first look goes through here; a quiet look (the
 * resolution pw_http_admit makes for the limit) answers nothing. */
static int quiet_start(void *ctx, int status, const char *reason, const struct pw_http_header *h,
                       size_t nr)
{
	(void)ctx, (void)status, (void)reason, (void)h, (void)nr;
	return 0;
}

static int quiet_write(void *ctx, const void *data, size_t len)
{
	(void)ctx, (void)data, (void)len;
	return 0;
}

static const struct pw_http_sink quiet_sink = {quiet_start, quiet_write, NULL};

/* The first look's rules that need no endpoint: the framing,
 * then the declared length (*declared, -1 = none) against max_body. */
static int admit_framing(struct resp *r, const struct pw_http_request *req, long long *declared,
                         struct pw_error *err)
{
	struct pw_http_framing f;
	char body[PW_ERROR_MSG_MAX + 32];
	int rc;

	*declared = req->content_length;
	if (req->headers) {
		if ((rc = pw_http_check_headers(req->headers, req->nr_headers, req->server_protocol,
		                                &f, err))) {
			int status = rc == PW_EUNSUPPORTED ? 501 : 400;

			snprintf(body, sizeof(body), "%s: %s\n",
			         status == 501 ? "Not Implemented" : "Bad Request", err->msg);
			return refuse(r, status, status == 501 ? "Not Implemented" : "Bad Request",
			              body, rc, err, "%s", err->msg);
		}
		if (f.has_length)
			*declared = (long long)f.length;
		else
			*declared = f.chunked ? -1 : 0; /* neither: no body (RFC 9112) */
	}
	if (req->max_body && *declared >= 0 && (uint64_t)*declared > req->max_body)
		return refuse(r, 413, "Request Entity Too Large", "Request Entity Too Large\n",
		              PW_ETOOBIG, err,
		              "request body of %lld bytes is larger than the server's maximum "
		              "(%llu bytes)",
		              *declared, (unsigned long long)req->max_body);
	return 0;
}

/* Where a request goes: resolved by resolve(). */
struct target {
	char *dir;        /* the repository's path as requested (malloc'd) */
	const char *name; /* the file-name tail of the route, in dir's buffer */
	enum route route;
	struct pw_repo *repo;
	const char *view;    /* "sha1"/"sha256": the other algorithm's view */
	uint64_t max_buffer; /* bound of a buffered (upload-pack) body */
};

static void target_free(struct target *t)
{
	pw_repo_free(t->repo);
	free(t->dir);
	memset(t, 0, sizeof(*t));
}

/* The endpoint's rule: an upload-pack POST is read whole, so a declared
 * length over the request buffer is refused before a byte of it is read
 * (git http-backend refuses it as it reads the length, gzip or not). */
static int admit_endpoint(struct resp *r, const struct target *t, const char *method,
                          long long declared, uint64_t *limit, struct pw_error *err)
{
	*limit = 0;
	if (t->route != R_RPC || strcmp(method, "POST"))
		return 0; /* a GET (or a refusal): the handler reads no body */
	if (strcmp(t->name, "git-upload-pack")) {
		*limit = UINT64_MAX; /* receive-pack streams it (receive.maxInputSize) */
		return 0;
	}
	*limit = t->max_buffer;
	if (declared >= 0 && (uint64_t)declared > t->max_buffer)
		return refuse(r, 413, "Request Entity Too Large",
		              "request was larger than our maximum size\n", PW_ETOOBIG, err,
		              "request was larger than our maximum size (%llu);"
		              " try setting GIT_HTTP_MAX_REQUEST_BUFFER",
		              (unsigned long long)t->max_buffer);
	return 0;
}

/* From the request to the repository and the route (Git's http-backend
 * steps), with the refusals answered: 0 or the refusal's code. */
static int resolve(struct resp *r, const struct pw_http_request *req, const char *method,
                   struct target *t, struct pw_error *err)
{
	const char *want;
	size_t at, len;
	int rc;

	memset(t, 0, sizeof(*t));
	if (req->project_root && *req->project_root) {
		const char *pi = req->path_info;
		size_t rl = strlen(req->project_root);

		if (!pi || !*pi)
			return refuse(r, 500, "Internal Server Error", NULL, PW_EINVAL, err,
			              "GIT_PROJECT_ROOT is set but PATH_INFO is not");
		if (pw_srv_path_is_aliased(pi))
			return refuse(r, 500, "Internal Server Error", NULL, PW_EINVAL, err,
			              "'%s': aliased", pi);
		if (*pi == '/')
			pi++;
		if (asprintf(&t->dir, "%s%s%s", req->project_root,
		             req->project_root[rl - 1] == '/' ? "" : "/", pi) < 0) {
			t->dir = NULL;
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	} else if (req->path_translated && *req->path_translated) {
		/* Git trusts the web server here (a doubled or "." segment is
		 * served as the file system resolves it); we still refuse ".." */
		if (pw_srv_path_has_dotdot(req->path_translated))
			return refuse(r, 500, "Internal Server Error", NULL, PW_EINVAL, err,
			              "'%s': aliased", req->path_translated);
		if (!(t->dir = strdup(req->path_translated)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	} else
		return refuse(r, 500, "Internal Server Error", NULL, PW_EINVAL, err,
		              "No GIT_PROJECT_ROOT or PATH_TRANSLATED from server");

	len = strlen(t->dir);
	if (!match_route(t->dir, len, &t->route, &want, &at))
		return refuse(r, 404, "Not Found", NULL, PW_ENOTFOUND, err,
		              "Request not supported: '%s'", t->dir);
	if (strcmp(method, want)) {
		r->nr = 0;
		if (req->server_protocol && !strcmp(req->server_protocol, "HTTP/1.1")) {
			hdr(r, "Allow", "%s", !strcmp(want, "GET") ? "GET, HEAD" : want);
			hdr_nocache(r);
			resp_start(r, 405, "Method Not Allowed");
		} else {
			hdr_nocache(r);
			resp_start(r, 400, "Bad Request");
		}
		return pw_error_set(err, PW_EUNSUPPORTED, "%s not allowed for '%s'", req->method,
		                    t->dir);
	}
	t->name = t->dir + at + 1;
	t->dir[at] = 0;
	if (pw_repo_open_exact(&t->repo, t->dir, NULL)) {
		/* "<repository>@sha1": the other algorithm's view of it */
		size_t bl;
		const char *view = pw_srv_path_view(t->dir, strlen(t->dir), &bl);
		char *base = view ? strndup(t->dir, bl) : NULL;

		t->repo = NULL;
		if (!base || pw_repo_open_exact(&t->repo, base, NULL)) {
			free(base);
			t->repo = NULL;
			return refuse(r, 404, "Not Found", NULL, PW_ENOTFOUND, err,
			              "Not a git repository: '%s'", t->dir);
		}
		free(base);
		t->view = view;
	}
	/* a symlink under the root may lead anywhere: the daemon's rule */
	if (req->project_root && *req->project_root &&
	    !pw_srv_path_inside(req->project_root, pw_repo_git_dir(t->repo)))
		return refuse(r, 404, "Not Found", NULL, PW_ENOTFOUND, err,
		              "'%s': resolves outside the base path", t->dir);
	if (!req->export_all) {
		char *ok = NULL;

		if (asprintf(&ok, "%s/git-daemon-export-ok", pw_repo_git_dir(t->repo)) < 0)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		rc = access(ok, F_OK);
		free(ok);
		if (rc)
			return refuse(r, 404, "Not Found", NULL, PW_ENOTFOUND, err,
			              "Repository not exported: '%s'", t->dir);
	}
	t->max_buffer = req->max_request_buffer;
	if (!t->max_buffer) {
		int64_t v;

		if (!pw_config_get_int64(pw_repo_config(t->repo), "http.maxrequestbuffer", &v,
		                         NULL) &&
		    v > 0)
			t->max_buffer = (uint64_t)v;
		else
			t->max_buffer = PW_HTTP_MAX_REQUEST_BUFFER;
	}
	return 0;
}

int pw_http_admit(const struct pw_http_request *req, const struct pw_http_sink *sink,
                  uint64_t *limit, struct pw_error *err)
{
	struct resp r, quiet;
	struct target t;
	struct pw_error local, ignored;
	const char *method = req->method;
	long long declared;
	uint64_t lim = 0;
	int rc;

	if (!err)
		err = &local;
	pw_error_clear(err);
	if (limit)
		*limit = 0;
	memset(&r, 0, sizeof(r));
	r.sink = sink;
	if ((rc = admit_framing(&r, req, &declared, err)))
		return rc;
	if (!method)
		return 0; /* pw_http_serve answers that */
	if (!strcmp(method, "HEAD"))
		method = "GET";
	if (!declared)
		return 0; /* no body: nothing to bound (a GET needs no repository here) */
	/* the endpoint, quietly: a request the handler refuses reads no body */
	memset(&quiet, 0, sizeof(quiet));
	quiet.sink = &quiet_sink;
	if (resolve(&quiet, req, method, &t, &ignored)) {
		target_free(&t);
		return 0;
	}
	rc = admit_endpoint(&r, &t, method, declared, &lim, err);
	target_free(&t);
	if (!rc && limit)
		*limit = lim;
	return rc;
}

/* A browse page (req->browse): GET or HEAD only, never cached, and a
 * policy that runs no script even if an escape were missed. */
static int serve_browse(struct resp *r, const struct pw_http_request *req, const char *method,
                        struct pw_error *err)
{
	struct pw_buf page;
	int rc;

	if (strcmp(method, "GET")) {
		r->nr = 0;
		hdr(r, "Allow", "GET, HEAD");
		hdr_nocache(r);
		resp_start(r, 405, "Method Not Allowed");
		return pw_error_set(err, PW_EUNSUPPORTED, "%s not allowed for '%s'", req->method,
		                    req->path_info);
	}
	pw_buf_init(&page, PW_BROWSE_MAX_PAGE);
	rc = pw_browse_page(&page, req, err);
	if (rc == PW_ENOTFOUND || rc == PW_EINVAL) {
		pw_buf_free(&page);
		return refuse(r, 404, "Not Found", "Not Found\n", PW_ENOTFOUND, err, "%s",
		              err->msg);
	}
	if (rc) {
		pw_buf_free(&page);
		return refuse(r, 500, "Internal Server Error", NULL, rc, err, "%s", err->msg);
	}
	hdr_nocache(r);
	hdr(r, "Content-Type", "text/html; charset=utf-8");
	hdr(r, "Content-Security-Policy",
	    "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'");
	hdr(r, "X-Content-Type-Options", "nosniff");
	hdr(r, "Content-Length", "%zu", page.len);
	if (!resp_start(r, 200, "OK"))
		resp_write(r, page.data, page.len);
	pw_buf_free(&page);
	return 0;
}

int pw_http_serve(const struct pw_http_request *req, const struct pw_http_sink *sink,
                  struct pw_error *err)
{
	struct resp r;
	struct target t;
	struct pw_error local;
	const char *method = req->method;
	char service[128];
	int has_service = 0;
	long long declared;
	uint64_t limit;
	int rc;

	if (!err)
		err = &local;
	pw_error_clear(err);
	if (req->result)
		memset(req->result, 0, sizeof(*req->result));
	memset(&r, 0, sizeof(r));
	memset(&t, 0, sizeof(t));
	r.sink = sink;
	if ((rc = admit_framing(&r, req, &declared, err)))
		return rc;
	if (!method)
		return refuse(&r, 500, "Internal Server Error", NULL, PW_EINVAL, err,
		              "No REQUEST_METHOD from server");
	if (!strcmp(method, "HEAD")) {
		method = "GET";
		r.head_only = 1;
	}
	if (req->browse && pw_browse_is_page(req->path_info)) {
		rc = serve_browse(&r, req, method, err);
		goto out;
	}
	if ((rc = resolve(&r, req, method, &t, err)) ||
	    (rc = admit_endpoint(&r, &t, method, declared, &limit, err)))
		goto out;
	r.view = t.view;

	if (t.route == R_INFO_REFS)
		has_service = !query_param(req->query, "service", service, sizeof(service));
	if (r.view && t.route != R_RPC && !has_service) {
		/* the files on disk are the storage algorithm's */
		rc = refuse(&r, 404, "Not Found", NULL, PW_ENOTFOUND, err,
		            "'%s': the %s view is served over smart HTTP only", t.dir, r.view);
		goto out;
	}
	if (t.route != R_RPC && !has_service) {
		int any;

		if (!pw_config_get_bool(pw_repo_config(t.repo), "http.getanyfile", &any, NULL) &&
		    !any) {
			rc = refuse(&r, 403, "Forbidden", NULL, PW_EUNSUPPORTED, err,
			            "Unsupported service: getanyfile");
			goto out;
		}
	}
	switch (t.route) {
	case R_HEAD:
		rc = get_head(&r, t.repo, req->ref_namespace);
		break;
	case R_INFO_REFS:
		if (has_service)
			rc = get_info_refs_smart(&r, req, t.repo, service, err);
		else
			rc = get_text_refs(&r, t.repo, req->ref_namespace, err);
		break;
	case R_TEXT:
		hdr_nocache(&r);
		rc = send_file(&r, t.repo, t.name, "text/plain", err);
		break;
	case R_INFO_PACKS:
		rc = get_info_packs(&r, t.repo, err);
		break;
	case R_LOOSE:
		hdr_forever(&r);
		rc = send_file(&r, t.repo, t.name, "application/x-git-loose-object", err);
		break;
	case R_PACK:
		hdr_forever(&r);
		rc = send_file(&r, t.repo, t.name, "application/x-git-packed-objects", err);
		break;
	case R_IDX:
		hdr_forever(&r);
		rc = send_file(&r, t.repo, t.name, "application/x-git-packed-objects-toc", err);
		break;
	case R_RPC:
		rc = service_rpc(&r, req, t.repo, t.name, t.max_buffer, err);
		break;
	}
out:
	target_free(&t);
	return rc;
}
