/* Any HTTP method with a body on a dumb connection (PROPFIND, LOCK, PUT,
 * MOVE, ...): the WebDAV requests of client/dav-push.c, with the
 * connection's settings and credentials. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "transport/http-priv.h"
#include "transport/transport-priv.h"

struct any_req {
	struct http *h;
	struct pw_http__req *r;
	uint64_t off;
	int toobig, rd_err;
};

static size_t any_read(char *buf, size_t sz, size_t n, void *arg)
{
	struct any_req *a = arg;
	uint64_t left = a->r->body_len - a->off;
	size_t want = sz * n < left ? sz * n : (size_t)left;

	if (!want)
		return 0;
	if (a->r->body) {
		memcpy(buf, (const char *)a->r->body + a->off, want);
	} else {
		ssize_t got = pread(a->r->body_fd, buf, want, (off_t)a->off);

		if (got <= 0) {
			a->rd_err = 1;
			return CURL_READFUNC_ABORT;
		}
		want = (size_t)got;
	}
	a->off += want;
	return want;
}

static size_t any_write(char *p, size_t sz, size_t n, void *arg)
{
	struct any_req *a = arg;

	if (!a->r->resp)
		return sz * n;
	if (pw_buf_add(a->r->resp, p, sz * n)) {
		a->toobig = 1;
		return 0;
	}
	return sz * n;
}

static size_t any_header(char *p, size_t sz, size_t n, void *arg)
{
	struct any_req *a = arg;

	/* a new response (after a 401 or a 100 Continue) starts afresh */
	if (sz * n > 5 && !strncmp(p, "HTTP/", 5) && a->r->resp_headers)
		pw_buf_reset(a->r->resp_headers);
	if (a->r->resp_headers && pw_buf_add(a->r->resp_headers, p, sz * n))
		a->toobig = 1;
	return pw_http__header_seen(p, sz, n, a->h);
}

int pw_http__request(struct pw_conn *c, struct pw_http__req *r, struct pw_error *err)
{
	struct http *h = pw_http__dumb_of(c);
	struct any_req a = {h, r, 0, 0, 0};
	struct curl_slist *hl;
	const char *lines[9] = {"Expect:"}; /* no 100-continue wait before a body */
	CURLcode cc = CURLE_OK;
	size_t k = 1;
	int tries, again;

	r->status = 0;
	if (!h)
		return pw_error_set(err, PW_EINVAL, "not a dumb HTTP connection");
	for (; r->headers && r->headers[k - 1] && k < 8; k++)
		lines[k] = r->headers[k - 1];
	lines[k] = NULL;
	if (!(hl = pw_http__headers(h, lines, 0, 0)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (tries = 0; tries < 2; tries++) {
		a.off = 0;
		if (r->resp)
			pw_buf_reset(r->resp);
		if (r->resp_headers)
			pw_buf_reset(r->resp_headers);
		pw_http__setup_common(h, 0);
		curl_easy_setopt(h->curl, CURLOPT_URL, r->url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, any_header);
		curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &a);
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, any_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &a);
		if (r->body || r->body_fd >= 0) {
			curl_easy_setopt(h->curl, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, any_read);
			curl_easy_setopt(h->curl, CURLOPT_READDATA, &a);
			curl_easy_setopt(h->curl, CURLOPT_INFILESIZE_LARGE,
			                 (curl_off_t)r->body_len);
		}
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, r->method);
		cc = curl_easy_perform(h->curl);
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &r->status);
		again = pw_http__ask_once(h, r->status, !tries && cc == CURLE_OK, err);
		if (again < 0) {
			curl_slist_free_all(hl);
			return again;
		}
		if (!again)
			break;
	}
	curl_slist_free_all(hl);
	if (a.toobig)
		return pw_error_set(err, PW_ETOOBIG, "%s %s: response too large", r->method,
		                    r->url);
	if (a.rd_err)
		return pw_error_set(err, PW_EIO, "%s %s: cannot read the body to send", r->method,
		                    r->url);
	if (cc != CURLE_OK)
		return pw_error_set(err, PW_EIO, "unable to access '%s': %s", r->url,
		                    pw_http__curl_why(h, cc));
	if (r->status == 401) {
		pw_http__auth_reject(h);
		return pw_error_set(err, PW_EIO, "Authentication failed for '%s'", h->shown);
	}
	if (r->status < 300 && !h->approved) {
		pw_http__auth_approve(h);
		h->approved = 1;
	}
	return 0;
}
