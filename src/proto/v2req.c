/* Protocol v2 command requests: command=, capability lines, delim, arguments,
 * flush (gitprotocol-v2 "Command Request"). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/proto.h"
#include "proto/lines.h"
#include "proto/quote.h"

enum { REQ_KEYS = 0, REQ_ARGS, REQ_DONE, REQ_FAILED };

void pw_v2_request_init(struct pw_v2_request *req)
{
	memset(req, 0, sizeof(*req));
	pw_buf_init(&req->store_, PW_V2_REQUEST_MAX_BYTES);
}

void pw_v2_request_free(struct pw_v2_request *req)
{
	free(req->caps); /* args point into the same array */
	free(req->off_);
	free(req->len_);
	pw_buf_free(&req->store_);
	pw_v2_request_init(req);
}

static int fail(struct pw_v2_request *req, struct pw_error *err, int code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int fail(struct pw_v2_request *req, struct pw_error *err, int code, const char *fmt, ...)
{
	char msg[PW_ERROR_MSG_MAX];
	va_list ap;

	req->state_ = REQ_FAILED;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pw_error_set(err, code, "%s", msg);
}

static int finish(struct pw_v2_request *req, struct pw_error *err)
{
	struct pw_str *all;
	int rc;

	if (!req->has_cmd_) {
		if (req->nlines_ == 0 && req->state_ == REQ_KEYS) {
			req->empty = 1;
			req->state_ = REQ_DONE;
			return 0;
		}
		return fail(req, err, PW_EPROTO, "no command requested");
	}
	rc = pw_proto__lines_views(&req->store_, req->off_, req->len_, req->nlines_, &all);
	if (rc)
		return fail(req, err, rc, "%s", pw_strerror(rc));
	req->caps = all;
	req->ncaps = req->ncaps_;
	req->args = all ? all + req->ncaps_ : NULL;
	req->nargs = req->nlines_ - req->ncaps_;
	req->command.p = req->store_.data + req->cmd_off_;
	req->command.len = req->cmd_len_;
	req->state_ = REQ_DONE;
	return 0;
}

static int add_line(struct pw_v2_request *req, const char *p, size_t n, struct pw_error *err)
{
	int rc;

	rc = pw_proto__lines_add(&req->store_, &req->off_, &req->len_, &req->alloc_, req->nlines_,
	                         p, n, PW_V2_REQUEST_MAX_LINES);
	if (rc == PW_ETOOBIG)
		return fail(req, err, rc, "protocol error: request too large");
	if (rc)
		return fail(req, err, rc, "%s", pw_strerror(rc));
	req->nlines_++;
	return 0;
}

int pw_v2_request_feed(struct pw_v2_request *req, const struct pw_pkt *pkt, struct pw_error *err)
{
	char q1[PW_QUOTE_MAX], q2[PW_QUOTE_MAX];
	struct pw_pkt p = *pkt;
	int rc;

	if (req->state_ == REQ_DONE || req->state_ == REQ_FAILED)
		return pw_error_set(err, PW_EINVAL, "request already complete");
	if (req->max_bytes)
		req->store_.max = req->max_bytes;
	pw_pkt_chomp(&p);
	switch (p.kind) {
	case PW_PKT_FLUSH:
		return finish(req, err);
	case PW_PKT_DELIM:
		if (req->state_ == REQ_ARGS) {
			const char *cmd = req->has_cmd_ ? req->store_.data + req->cmd_off_ : "";

			return fail(req, err, PW_EPROTO, "expected flush after %s arguments",
			            pw_proto__quote(q1, sizeof(q1), cmd,
			                            req->has_cmd_ ? req->cmd_len_ : 0));
		}
		if (!req->has_cmd_)
			return fail(req, err, PW_EPROTO, "no command requested");
		req->state_ = REQ_ARGS;
		return PW_EMORE;
	case PW_PKT_RESPONSE_END:
		return fail(req, err, PW_EPROTO, "protocol error: unexpected response-end packet");
	case PW_PKT_EOF:
		return fail(req, err, PW_EPROTO,
		            "the remote end hung up in the middle of a request");
	case PW_PKT_DATA:
		break;
	}
	if (req->state_ == REQ_ARGS) {
		rc = add_line(req, p.data, p.len, err);
		return rc ? rc : PW_EMORE;
	}
	if (!p.len)
		return fail(req, err, PW_EPROTO, "protocol error: empty capability line");
	if (p.len >= 8 && !memcmp(p.data, "command=", 8)) {
		const char *name = p.data + 8;
		size_t nlen = p.len - 8;

		if (req->has_cmd_)
			return fail(req, err, PW_EPROTO,
			            "command '%s' requested after already requesting command '%s'",
			            pw_proto__quote(q1, sizeof(q1), name, nlen),
			            pw_proto__quote(q2, sizeof(q2),
			                            req->store_.data + req->cmd_off_,
			                            req->cmd_len_));
		if (!nlen)
			return fail(req, err, PW_EPROTO, "invalid command ''");
		/* stored like a line but not counted as one */
		req->cmd_off_ = req->store_.len;
		req->cmd_len_ = nlen;
		rc = pw_buf_add(&req->store_, name, nlen);
		if (!rc)
			rc = pw_buf_addch(&req->store_, '\0');
		if (rc == PW_ETOOBIG)
			return fail(req, err, rc, "protocol error: request too large");
		if (rc)
			return fail(req, err, rc, "%s", pw_strerror(rc));
		req->has_cmd_ = 1;
		return PW_EMORE;
	}
	/* capability lines come before any argument, so they are lines [0, ncaps) */
	rc = add_line(req, p.data, p.len, err);
	if (rc)
		return rc;
	req->ncaps_++;
	return PW_EMORE;
}

int pw_v2_request_parse(struct pw_v2_request *req, const uint8_t *in, size_t len, size_t *used,
                        struct pw_error *err)
{
	size_t off = 0;

	*used = 0;
	for (;;) {
		struct pw_pkt pkt;
		size_t n;
		int rc = pw_pkt_decode(in + off, len - off, &pkt, &n, err);

		if (rc)
			return rc;
		off += n;
		rc = pw_v2_request_feed(req, &pkt, err);
		if (rc != PW_EMORE) {
			if (!rc)
				*used = off;
			return rc;
		}
	}
}

int pw_v2_request_cap(const struct pw_v2_request *req, const char *key, struct pw_str *val)
{
	size_t i, klen = strlen(key);

	for (i = 0; i < req->ncaps; i++) {
		struct pw_str k, v;

		pw_v2_split(req->caps[i], &k, &v);
		if (k.len == klen && !memcmp(k.p, key, klen)) {
			if (val)
				*val = v;
			return 0;
		}
	}
	return PW_ENOTFOUND;
}

static int in_list(const char *const *list, const char *p, size_t len)
{
	for (; list && *list; list++)
		if (strlen(*list) == len && !memcmp(*list, p, len))
			return 1;
	return 0;
}

int pw_v2_request_check(const struct pw_v2_request *req, const char *const *commands,
                        const char *const *caps, struct pw_error *err)
{
	char q[PW_QUOTE_MAX];
	size_t i;

	if (req->empty)
		return 0;
	if (!in_list(commands, req->command.p, req->command.len))
		return pw_error_set(
		        err, PW_EPROTO, "invalid command '%s'",
		        pw_proto__quote(q, sizeof(q), req->command.p, req->command.len));
	for (i = 0; i < req->ncaps; i++) {
		struct pw_str k, v;

		pw_v2_split(req->caps[i], &k, &v);
		if (!in_list(caps, k.p, k.len))
			return pw_error_set(
			        err, PW_EPROTO, "unknown capability '%s'",
			        pw_proto__quote(q, sizeof(q), req->caps[i].p, req->caps[i].len));
	}
	return 0;
}

int pw_v2_request_object_format(const struct pw_v2_request *req, const struct pw_hash_algo *server,
                                const struct pw_hash_algo **client, struct pw_error *err)
{
	struct pw_str v;

	if (pw_v2_request_cap(req, "object-format", &v))
		return pw_object_format_server_check(server, NULL, client, err);
	return pw_object_format_server_check(server, &v, client, err);
}
