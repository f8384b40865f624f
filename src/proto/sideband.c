/* Side-band multiplexing (bands 1 data, 2 progress, 3 fatal error). */
#include <stdio.h>
#include <string.h>

#include "packwire/pkt.h"

size_t pw_sideband_max(enum pw_sideband_mode mode)
{
	switch (mode) {
	case PW_SIDEBAND_SMALL:
		return PW_SIDEBAND_SMALL_MAX;
	case PW_SIDEBAND_64K:
		return PW_SIDEBAND_64K_MAX;
	default:
		return 0;
	}
}

int pw_sideband_write(struct pw_buf *out, int band, const void *data, size_t len, size_t max_pkt)
{
	const char *p = data;
	size_t start = out->len;

	if (band < 1 || band > 3 || max_pkt < 6 || max_pkt > PW_PKT_MAX)
		return PW_EINVAL;
	while (len) {
		/* 4 bytes of length and 1 band byte per packet */
		size_t n = len < max_pkt - 5 ? len : max_pkt - 5;
		char hdr[5];
		int rc;

		rc = pw_buf_grow(out, 5 + n);
		if (rc) {
			pw_buf_setlen(out, start);
			return rc;
		}
		snprintf(hdr, sizeof(hdr), "%04zx", n + 5);
		memcpy(out->data + out->len, hdr, 4);
		out->data[out->len + 4] = (char)band;
		memcpy(out->data + out->len + 5, p, n);
		out->len += 5 + n;
		out->data[out->len] = '\0';
		p += n;
		len -= n;
	}
	return 0;
}

int pw_sideband_demux(const struct pw_pkt *pkt, int *band, struct pw_str *payload,
                      struct pw_error *err)
{
	int b;

	if (pkt->kind != PW_PKT_DATA)
		return pw_error_set(err, PW_EINVAL,
		                    "side-band demultiplexer given a control packet");
	if (pkt->len < 1)
		return pw_error_set(err, PW_EPROTO, "protocol error: no band designator");
	b = (unsigned char)pkt->data[0];
	if (b < 1 || b > 3)
		return pw_error_set(err, PW_EPROTO, "protocol error: bad band #%d", b);
	*band = b;
	payload->p = pkt->data + 1;
	payload->len = pkt->len - 1;
	return 0;
}

/* ---- progress relay ----------------------------------------------------- */

#define RELAY_PREFIX "remote: "

void pw_progress_relay_init(struct pw_progress_relay *r, const char *suffix)
{
	pw_buf_init(&r->out, 0);
	r->suffix = suffix ? suffix : "";
	r->partial = r->line = 0;
	r->cut = 0;
}

void pw_progress_relay_free(struct pw_progress_relay *r)
{
	pw_buf_free(&r->out);
	r->partial = r->line = 0;
	r->cut = 0;
}

/* Text of the current line: "remote: " first when it starts it. */
static int relay_text(struct pw_progress_relay *r, const char *p, size_t n)
{
	size_t before = r->out.len;
	int rc = 0;

	if (!r->partial)
		rc = pw_buf_adds(&r->out, RELAY_PREFIX);
	if (!rc)
		rc = pw_buf_add(&r->out, p, n);
	r->partial += r->out.len - before;
	r->line += n;
	return rc;
}

int pw_progress_relay_feed(struct pw_progress_relay *r, const char *data, size_t len)
{
	size_t i = 0;
	int rc;

	while (i < len) {
		size_t j = i, take;

		while (j < len && data[j] != '\n' && data[j] != '\r')
			j++;
		if (r->cut) {
			/* the rest of a line that passed the bound: dropped, with
			 * its terminator (the line was ended already) */
			if (j == len)
				return 0;
			r->cut = 0;
			i = j + 1;
			continue;
		}
		take = j - i;
		if (take > PW_PROGRESS_LINE_MAX - r->line)
			take = PW_PROGRESS_LINE_MAX - r->line;
		if (j == len && r->line + take < PW_PROGRESS_LINE_MAX)
			/* unterminated: kept for the next packet */
			return take ? relay_text(r, data + i, take) : 0;
		if (take < j - i || j == len) {
			/* the line reached PW_PROGRESS_LINE_MAX: it ends here */
			if ((rc = relay_text(r, data + i, take)) ||
			    (rc = pw_buf_adds(&r->out, r->suffix)) ||
			    (rc = pw_buf_addch(&r->out, '\n')))
				return rc;
			r->partial = r->line = 0;
			r->cut = 1;
			i += take;
			continue;
		}
		/* a terminator continuing a partial line clears what is left of
		 * the previous text on that line */
		if (r->partial && j == i) {
			rc = pw_buf_adds(&r->out, r->suffix);
			if (rc)
				return rc;
		}
		if (!r->partial) {
			rc = pw_buf_adds(&r->out, RELAY_PREFIX);
			if (rc)
				return rc;
		}
		if (j > i) {
			rc = pw_buf_add(&r->out, data + i, j - i);
			if (!rc)
				rc = pw_buf_adds(&r->out, r->suffix);
			if (rc)
				return rc;
		}
		rc = pw_buf_addch(&r->out, data[j]);
		if (rc)
			return rc;
		r->partial = r->line = 0;
		i = j + 1;
	}
	return 0;
}

int pw_progress_relay_finish(struct pw_progress_relay *r)
{
	int rc = 0;

	if (r->partial) {
		rc = pw_buf_addch(&r->out, '\n');
		r->partial = 0;
	}
	r->line = 0;
	r->cut = 0;
	return rc;
}

int pw_progress_relay_flush_fd(struct pw_progress_relay *r, int fd, struct pw_error *err)
{
	size_t done = r->out.len - r->partial;
	int rc;

	if (!done)
		return 0;
	rc = pw_write_full(fd, r->out.data, done, err);
	memmove(r->out.data, r->out.data + done, r->partial);
	pw_buf_setlen(&r->out, r->partial);
	return rc;
}
