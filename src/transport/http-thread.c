/* The request thread of a smart HTTP connection: it owns the curl handle
 * while the connection lives, sends the advertisement, then turns each
 * request the caller writes into its pipe into a POST (buffered and
 * gzip'd, or chunked past http.postBuffer) and streams the answer into
 * the caller's socket, with a v2 response-end packet after each. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/pkt.h"
#include "transport/http-priv.h"
#include "transport/transport-priv.h"

struct post {
	struct http *h;
	int checked, failed;
	int may_retry;       /* a 401 gets credentials and one more try */
	const uint8_t *body; /* buffered part of the request */
	size_t body_len, body_off;
	int stream_fd;              /* the rest, chunked; -1 when all is buffered */
	struct pw_http_pktcheck pc; /* v2: where the answer is in its packets */
};

static void signal_response(struct http *h, int rc)
{
	pthread_mutex_lock(&h->mu);
	h->resp_rc = rc;
	h->resp_seq++;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static int send_resp(struct http *h, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(h->resp_wr, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The status of a POST's answer, checked when its first bytes come (or at
 * its end when it has none). Its Content-Type is not checked, as Git does
 * not: the packets say what they are. */
static int check_post(struct post *p, CURLcode cc)
{
	struct http *h = p->h;
	long code = 0;

	p->checked = 1;
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OK || code >= 300) {
		if (code == 401)
			pw_error_set(&h->resp_err, PW_EIO, "Authentication failed for '%s'",
			             h->shown);
		else if (code >= 300)
			pw_error_set(
			        &h->resp_err, PW_EIO,
			        "RPC failed; HTTP %ld curl 22 The requested URL returned error: "
			        "%ld",
			        code, code);
		else
			pw_error_set(&h->resp_err, PW_EIO, "RPC failed; curl %d %s", (int)cc,
			             pw_http__curl_why(h, cc));
		p->failed = 1;
		signal_response(h, h->resp_err.code);
		return -1;
	}
	signal_response(h, 0);
	return 0;
}

static size_t post_write(char *data, size_t sz, size_t n, void *arg)
{
	struct post *p = arg;

	if (!p->checked && p->may_retry) {
		long code = 0;

		curl_easy_getinfo(p->h->curl, CURLINFO_RESPONSE_CODE, &code);
		if (code == 401)
			return sz * n; /* the body of a 401 about to be retried */
	}
	if (!p->checked && check_post(p, CURLE_OK))
		return 0;
	/* v2: the response-end packet is ours to add, and where the answer
	 * stops matters (Git's words for an answer cut off) */
	if (p->h->v2 &&
	    pw_http__pktcheck_feed(&p->pc, (const uint8_t *)data, sz * n, &p->h->resp_err)) {
		p->failed = 1;
		return 0;
	}
	if (send_resp(p->h, data, sz * n))
		return 0;
	return sz * n;
}

static size_t post_read(char *buf, size_t sz, size_t n, void *arg)
{
	struct post *p = arg;
	size_t want = sz * n;

	if (p->body_off < p->body_len) {
		size_t k = p->body_len - p->body_off;

		if (k > want)
			k = want;
		memcpy(buf, p->body + p->body_off, k);
		p->body_off += k;
		return k;
	}
	if (p->stream_fd < 0)
		return 0;
	for (;;) {
		ssize_t r = read(p->stream_fd, buf, want);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return CURL_READFUNC_ABORT;
		return (size_t)r;
	}
}

static int gzip_buf(const struct pw_buf *in, struct pw_buf *out)
{
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return PW_ENOMEM;
	size_t bound = deflateBound(&z, in->len) + 32;

	if (pw_buf_grow(out, bound)) {
		deflateEnd(&z);
		return PW_ENOMEM;
	}
	z.next_in = (Bytef *)in->data;
	z.avail_in = (uInt)in->len;
	z.next_out = (Bytef *)out->data;
	z.avail_out = (uInt)bound;
	rc = deflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END) {
		deflateEnd(&z);
		return PW_ENOMEM;
	}
	pw_buf_setlen(out, z.total_out);
	deflateEnd(&z);
	return 0;
}

/* Read the request: up to post_buffer bytes; *eof when it ended within. */
static int read_request(int fd, struct pw_buf *b, size_t max, int *eof)
{
	*eof = 0;
	while (b->len < max) {
		ssize_t r;

		if (pw_buf_grow(b, 65536))
			return PW_ENOMEM;
		r = read(fd, b->data + b->len, max - b->len < 65536 ? max - b->len : (size_t)65536);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return PW_EIO;
		if (!r) {
			*eof = 1;
			return 0;
		}
		pw_buf_setlen(b, b->len + (size_t)r);
	}
	return 0;
}

static void drain(int fd)
{
	char buf[65536];
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		;
}

/* The POST's header lines into lines (NULL-terminated; room for 6), and
 * its body: req as it is, or gzip'd into gz (upload-pack requests past
 * HTTP_GZIP_MIN), or streamed in chunks after it when !eof. */
static const struct pw_buf *post_lines(struct http *h, const struct pw_buf *req, int eof,
                                       struct pw_buf *gz, char *ctype, char *accept,
                                       const char **lines)
{
	const struct pw_buf *body = req;
	int nl = 0;

	snprintf(ctype, 96, "Content-Type: application/x-%s-request", h->service);
	snprintf(accept, 96, "Accept: application/x-%s-result", h->service);
	lines[nl++] = ctype;
	lines[nl++] = accept;
	lines[nl++] = "Expect:";
	if (!eof)
		lines[nl++] = "Transfer-Encoding: chunked";
	else if (!strcmp(h->service, "git-upload-pack") && req->len > HTTP_GZIP_MIN &&
	         !gzip_buf(req, gz)) {
		lines[nl++] = "Content-Encoding: gzip";
		body = gz;
	}
	lines[nl] = NULL;
	return body;
}

/* "POST git-upload-pack (123 bytes)", as git-remote-http tells it at
 * verbosity 2. */
static void note_post(struct http *h, const struct pw_buf *req, const struct pw_buf *gz, int gzip,
                      int eof)
{
	char note[160];

	if (!h->set.note)
		return;
	if (!eof)
		snprintf(note, sizeof(note), "POST %s (chunked)", h->service);
	else if (gzip)
		snprintf(note, sizeof(note), "POST %s (gzip %zu to %zu bytes)", h->service,
		         req->len, gz->len);
	else
		snprintf(note, sizeof(note), "POST %s (%zu bytes)", h->service, req->len);
	h->set.note(h->set.note_ctx, 2, note);
}

/* Send the POST, once more with credentials after a 401 (a buffered
 * request only); *code gets the last status. */
static CURLcode perform_post(struct http *h, struct post *p, const char *url, struct curl_slist *hl,
                             const struct pw_buf *body, int eof, long *code)
{
	CURLcode cc = CURLE_OK;
	int tries;

	for (tries = 0; tries < 2; tries++) {
		*code = 0;
		p->checked = p->failed = 0;
		memset(&p->pc, 0, sizeof(p->pc));
		p->may_retry = eof && !tries && !h->have_cred;
		p->body = (const uint8_t *)body->data;
		p->body_len = body->len;
		p->body_off = 0;
		pw_http__setup_common(h, h->set.follow == 2);
		curl_easy_setopt(h->curl, CURLOPT_URL, url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
		if (eof) {
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body->data);
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			                 (curl_off_t)body->len);
		} else {
			curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, post_read);
			curl_easy_setopt(h->curl, CURLOPT_READDATA, p);
		}
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, post_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, p);
		/* the status is ours to judge (no FAILONERROR): 401 may be retried */
		cc = curl_easy_perform(h->curl);
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, code);
		pw_http__narrow_auth(h);
		if (!p->checked && *code == 401 && eof && !tries) {
			struct pw_error e;

			if (!h->have_cred && !pw_http__cred_fill(h, &e)) {
				h->have_cred = 1;
				continue;
			}
		}
		break;
	}
	return cc;
}

static void do_post(struct http *h, struct pw_buf *req, int eof)
{
	char ctype[96], accept[96], *url;
	const char *lines[6];
	struct pw_buf gz = PW_BUF_INIT;
	struct curl_slist *hl = NULL;
	const struct pw_buf *body;
	struct post p;
	long code = 0;
	CURLcode cc;

	memset(&p, 0, sizeof(p));
	p.h = h;
	p.stream_fd = eof ? -1 : h->req_rd;
	body = post_lines(h, req, eof, &gz, ctype, accept, lines);
	url = malloc(strlen(h->base) + strlen(h->service) + 2);
	hl = url ? pw_http__headers(h, lines, h->version, 1) : NULL;
	if (!hl) {
		pw_error_set(&h->resp_err, PW_ENOMEM, "out of memory");
		signal_response(h, PW_ENOMEM);
		goto out;
	}
	sprintf(url, "%s/%s", h->base, h->service);
	note_post(h, req, &gz, body == &gz, eof);
	cc = perform_post(h, &p, url, hl, body, eof, &code);
	if (!p.checked) {
		check_post(&p, cc);
		/* not a byte: upload-pack died before it said anything (a stateless
		 * v0 reader would wait for the rest for ever; git hangs up) */
		if (!p.failed && !strcmp(h->service, "git-upload-pack")) {
			pw_error_set(&h->resp_err, PW_EPROTO,
			             "the remote end hung up unexpectedly");
			p.failed = 1;
		}
	} else if (p.failed) {
		/* the answer's framing was wrong: resp_err says how */
	} else if (!p.failed && cc != CURLE_OK) {
		/* cut off mid-response: the reader sees the end of the stream */
		pw_error_set(&h->resp_err, PW_EIO, "RPC failed; curl %d %s", (int)cc,
		             pw_http__curl_why(h, cc));
		p.failed = 1;
	}
	if (code == 401) {
		pw_http__auth_reject(h);
	} else if (!p.failed && h->have_cred && !h->approved) {
		pw_http__auth_approve(h);
		h->approved = 1;
	}
	if (!p.failed && h->v2 && pw_http__pktcheck_end(&p.pc, &h->resp_err))
		p.failed = 1;
	if (!p.failed && h->v2) {
		if (send_resp(h, "0002", 4))
			p.failed = 1;
	}
out:
	if (p.failed || !hl) {
		pthread_mutex_lock(&h->mu);
		h->dead = 1;
		pthread_mutex_unlock(&h->mu);
		shutdown(h->resp_wr, SHUT_WR);
	}
	if (!eof)
		drain(h->req_rd);
	curl_slist_free_all(hl);
	free(url);
	pw_buf_free(&gz);
}

static int one_packet(const struct pw_buf *b)
{
	int n = b->len >= 4 ? pw_hexval(b->data[0]) : -1, i;

	for (i = 1; i < 4 && n >= 0; i++)
		n = pw_hexval(b->data[i]) < 0 ? -1 : n * 16 + pw_hexval(b->data[i]);
	return n >= 4 && (size_t)n == b->len;
}

void *pw_http__thread_main(void *arg)
{
	struct http *h = arg;
	struct pw_buf req = PW_BUF_INIT;

	if (send_resp(h, h->adv.data + h->adv_skip, h->adv.len - h->adv_skip))
		goto out;
	pw_buf_free(&h->adv);
	for (;;) {
		int eof, rc;

		pw_buf_reset(&req);
		rc = read_request(h->req_rd, &req, h->set.post_buffer, &eof);
		if (rc) {
			pw_error_set(&h->resp_err, rc, "reading the request: %s", strerror(errno));
			signal_response(h, rc);
			break;
		}
		/* Git's buffer must have room for a whole packet before each
		 * read: what it sends with a length is at most
		 * http.postBuffer - LARGE_PACKET_MAX (and one packet) */
		if (eof && req.len > h->set.post_buffer - PW_PKT_MAX && !one_packet(&req))
			eof = 0;
		if (req.len)
			do_post(h, &req, eof);
		pthread_mutex_lock(&h->mu);
		if (!req.len && h->req_seq > h->resp_seq) {
			/* an empty request: nothing is sent, nothing comes back */
			h->resp_rc = 0;
			h->resp_seq = h->req_seq;
			pthread_cond_broadcast(&h->cv);
		}
		while (!h->nr_next && !h->quit)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->quit || h->dead) {
			pthread_mutex_unlock(&h->mu);
			break;
		}
		close(h->req_rd);
		h->req_rd = h->next_req_rd[0];
		memmove(h->next_req_rd, h->next_req_rd + 1, --h->nr_next * sizeof(int));
		pthread_mutex_unlock(&h->mu);
	}
out:
	pw_buf_free(&req);
	shutdown(h->resp_wr, SHUT_WR);
	return NULL;
}
