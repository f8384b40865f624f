/* pkt-line decode/encode and the blocking fd reader/writer. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/hash.h"
#include "packwire/pkt.h"
#include "proto/quote.h"
#include "util/fs.h"

int pw_pkt_decode(const uint8_t *in, size_t avail, struct pw_pkt *out, size_t *used,
                  struct pw_error *err)
{
	unsigned len = 0;
	int i;

	*used = 0;
	out->kind = PW_PKT_DATA;
	out->data = NULL;
	out->len = 0;
	if (avail < 4)
		return PW_EMORE;
	for (i = 0; i < 4; i++) {
		int v = pw_hexval(in[i]);

		if (v < 0) {
			char q[32];

			return pw_error_set(err, PW_EPROTO,
			                    "protocol error: bad line length character: '%s'",
			                    pw_proto__quote(q, sizeof(q), (const char *)in, 4));
		}
		len = len << 4 | (unsigned)v;
	}
	switch (len) {
	case 0:
		out->kind = PW_PKT_FLUSH;
		*used = 4;
		return 0;
	case 1:
		out->kind = PW_PKT_DELIM;
		*used = 4;
		return 0;
	case 2:
		out->kind = PW_PKT_RESPONSE_END;
		*used = 4;
		return 0;
	case 3:
		return pw_error_set(err, PW_EPROTO, "protocol error: bad line length 3");
	}
	if (len > PW_PKT_MAX)
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: bad line length %u (maximum is %u)", len,
		                    (unsigned)PW_PKT_MAX);
	if (avail < len)
		return PW_EMORE;
	out->data = (const char *)in + 4;
	out->len = len - 4;
	*used = len;
	return 0;
}

void pw_pkt_chomp(struct pw_pkt *pkt)
{
	if (pkt->kind == PW_PKT_DATA && pkt->len && pkt->data[pkt->len - 1] == '\n')
		pkt->len--;
}

static void put_len(char *dst, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	dst[0] = hex[(len >> 12) & 15];
	dst[1] = hex[(len >> 8) & 15];
	dst[2] = hex[(len >> 4) & 15];
	dst[3] = hex[len & 15];
}

int pw_pkt_write(struct pw_buf *out, const void *data, size_t len)
{
	int rc;

	if (len > PW_PKT_DATA_MAX)
		return PW_ETOOBIG;
	rc = pw_buf_grow(out, 4 + len);
	if (rc)
		return rc;
	put_len(out->data + out->len, 4 + len);
	if (len)
		memcpy(out->data + out->len + 4, data, len);
	out->len += 4 + len;
	out->data[out->len] = '\0';
	return 0;
}

int pw_pkt_writes(struct pw_buf *out, const char *s)
{
	return pw_pkt_write(out, s, strlen(s));
}

static int pkt_vwritef(struct pw_buf *out, const char *prefix, const char *fmt, va_list ap)
{
	size_t start = out->len, plen = strlen(prefix);
	va_list ap2;
	int n, rc;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return PW_EINVAL;
	if ((size_t)n + plen > PW_PKT_DATA_MAX)
		return PW_ETOOBIG;
	rc = pw_buf_grow(out, 4 + plen + (size_t)n);
	if (rc)
		return rc;
	put_len(out->data + start, 4 + plen + (size_t)n);
	memcpy(out->data + start + 4, prefix, plen);
	vsnprintf(out->data + start + 4 + plen, (size_t)n + 1, fmt, ap);
	out->len = start + 4 + plen + (size_t)n;
	out->data[out->len] = '\0';
	return 0;
}

int pw_pkt_writef(struct pw_buf *out, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = pkt_vwritef(out, "", fmt, ap);
	va_end(ap);
	return rc;
}

int pw_pkt_write_err(struct pw_buf *out, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = pkt_vwritef(out, "ERR ", fmt, ap);
	va_end(ap);
	return rc;
}

int pw_pkt_flush(struct pw_buf *out)
{
	return pw_buf_add(out, "0000", 4);
}

int pw_pkt_delim(struct pw_buf *out)
{
	return pw_buf_add(out, "0001", 4);
}

int pw_pkt_response_end(struct pw_buf *out)
{
	return pw_buf_add(out, "0002", 4);
}

int pw_pkt_is_err(const struct pw_pkt *pkt, struct pw_str *msg)
{
	if (pkt->kind != PW_PKT_DATA || pkt->len < 4 || memcmp(pkt->data, "ERR ", 4))
		return 0;
	if (msg) {
		msg->p = pkt->data + 4;
		msg->len = pkt->len - 4;
		if (msg->len && msg->p[msg->len - 1] == '\n')
			msg->len--;
	}
	return 1;
}

int pw_write_full(int fd, const void *data, size_t len, struct pw_error *err)
{
	if (pw_fs_write_all(fd, data, len))
		return pw_error_set(err, PW_EIO, "write error: %s", strerror(errno));
	return 0;
}

int pw_pkt_send(int fd, struct pw_buf *b, struct pw_error *err)
{
	int rc = pw_write_full(fd, b->data, b->len, err);

	pw_buf_reset(b);
	return rc;
}

/* ---- reader ------------------------------------------------------------- */

/* One packet plus as much read-ahead again. */
#define READER_CAP (2 * PW_PKT_MAX)

int pw_pkt_reader_init(struct pw_pkt_reader *r, int fd, unsigned flags)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	r->flags = flags;
	r->buf = malloc(READER_CAP);
	if (!r->buf)
		return PW_ENOMEM;
	r->cap = READER_CAP;
	return 0;
}

void pw_pkt_reader_free(struct pw_pkt_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = r->start = r->end = 0;
}

/* Make at least `need` unread bytes available (fewer only at EOF). */
static int reader_fill(struct pw_pkt_reader *r, size_t need, struct pw_error *err)
{
	while (r->end - r->start < need && !r->eof) {
		size_t want;
		ssize_t n;

		if (r->cap - r->start < need) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->start = 0;
		}
		if (r->flags & PW_PKT_READ_NO_AHEAD)
			want = need - (r->end - r->start);
		else
			want = r->cap - r->end;
		if (r->timeout_ms > 0) {
			struct pollfd pfd = {r->fd, POLLIN, 0};
			int pr = poll(&pfd, 1, r->timeout_ms);

			if (pr < 0 && errno == EINTR)
				continue;
			if (pr < 0)
				return pw_error_set(err, PW_EIO, "read error: poll: %s",
				                    strerror(errno));
			if (pr == 0 && (r->timed_out = 1))
				return pw_error_set(
				        err, PW_EIO,
				        "read timed out after %d ms waiting for the peer",
				        r->timeout_ms);
		}
		n = read(r->fd, r->buf + r->end, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				struct pollfd pfd = {r->fd, POLLIN, 0};

				poll(&pfd, 1, r->timeout_ms > 0 ? r->timeout_ms : -1);
				continue;
			}
			return pw_error_set(err, PW_EIO, "read error: %s", strerror(errno));
		}
		if (n == 0)
			r->eof = 1;
		r->end += (size_t)n;
	}
	return 0;
}

static int reader_next(struct pw_pkt_reader *r, struct pw_error *err)
{
	size_t used, have;
	int rc;

	rc = reader_fill(r, 4, err);
	if (rc)
		return rc;
	have = r->end - r->start;
	if (have == 0) {
		r->pkt.kind = PW_PKT_EOF;
		r->pkt.data = NULL;
		r->pkt.len = 0;
		r->pkt_used = 0;
		return 0;
	}
	for (;;) {
		rc = pw_pkt_decode(r->buf + r->start, have, &r->pkt, &used, err);
		if (rc != PW_EMORE)
			break;
		if (have < 4)
			return pw_error_set(err, PW_EPROTO,
			                    "the remote end hung up unexpectedly (EOF inside a "
			                    "packet header after %zu bytes)",
			                    have);
		{
			/* the header is complete, so the length is known */
			size_t len = 0;
			int i;

			for (i = 0; i < 4; i++)
				len = len << 4 | (size_t)pw_hexval(r->buf[r->start + i]);
			if (r->eof)
				return pw_error_set(err, PW_EPROTO,
				                    "the remote end hung up unexpectedly (EOF "
				                    "inside a packet: got %zu of %zu bytes)",
				                    have, len);
			rc = reader_fill(r, len, err);
			if (rc)
				return rc;
			have = r->end - r->start;
		}
	}
	if (rc)
		return rc;
	r->pkt_used = used;
	if (r->flags & PW_PKT_READ_CHOMP)
		pw_pkt_chomp(&r->pkt);
	if (r->flags & PW_PKT_READ_ERR) {
		struct pw_str msg;

		if (pw_pkt_is_err(&r->pkt, &msg)) {
			char q[PW_QUOTE_MAX];

			r->start += used;
			return pw_error_set(err, PW_ERROR, "remote error: %s",
			                    pw_proto__quote(q, sizeof(q), msg.p, msg.len));
		}
	}
	return 0;
}

int pw_pkt_peek(struct pw_pkt_reader *r, struct pw_pkt *out, struct pw_error *err)
{
	if (!r->peeked) {
		int rc = reader_next(r, err);

		if (rc)
			return rc;
		r->peeked = 1;
	}
	*out = r->pkt;
	return 0;
}

int pw_pkt_read(struct pw_pkt_reader *r, struct pw_pkt *out, struct pw_error *err)
{
	int rc = pw_pkt_peek(r, out, err);

	if (rc)
		return rc;
	r->peeked = 0;
	r->start += r->pkt_used;
	return 0;
}

void pw_pkt_reader_pending(const struct pw_pkt_reader *r, const uint8_t **data, size_t *len)
{
	size_t skip = r->peeked ? r->pkt_used : 0;

	*data = r->buf + r->start + skip;
	*len = r->end - r->start - skip;
}
