/* Side-band: splitting to the packet size of each mode, demultiplexing with
 * its errors, and the "remote: " progress relay. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/pkt.h"
#include "test.h"

/* Decode every packet of b and check sizes/bands; returns the payload bytes. */
static size_t walk(const struct pw_buf *b, int band, size_t max_pkt, const char *expect, int *ok)
{
	size_t off = 0, total = 0;

	while (off < b->len) {
		struct pw_pkt pkt;
		struct pw_str payload;
		struct pw_error err;
		size_t used;
		int got;

		if (pw_pkt_decode((const uint8_t *)b->data + off, b->len - off, &pkt, &used,
		                  &err) ||
		    used > max_pkt || pw_sideband_demux(&pkt, &got, &payload, &err) ||
		    got != band || memcmp(payload.p, expect + total, payload.len)) {
			*ok = 0;
			return total;
		}
		total += payload.len;
		off += used;
	}
	return total;
}

static void test_split(size_t max_pkt)
{
	struct pw_buf b = PW_BUF_INIT;
	size_t len = 200000, i;
	char *data = malloc(len);
	int ok = 1;

	for (i = 0; i < len; i++)
		data[i] = (char)(i * 13 + 1);
	CHECK_EQ_INT(pw_sideband_write(&b, 1, data, len, max_pkt), 0);
	CHECK_EQ_INT(walk(&b, 1, max_pkt, data, &ok), len);
	CHECK(ok);
	/* full packets are exactly max_pkt long */
	{
		char hdr[5];

		snprintf(hdr, sizeof(hdr), "%04zx", max_pkt);
		CHECK(!memcmp(b.data, hdr, 4));
	}
	CHECK_EQ_INT(b.len, len + 5 * ((len + max_pkt - 6) / (max_pkt - 5)));
	pw_buf_free(&b);
	free(data);
}

static void test_write(void)
{
	struct pw_buf b = PW_BUF_INIT;

	CHECK_EQ_INT(pw_sideband_max(PW_SIDEBAND_SMALL), 1000);
	CHECK_EQ_INT(pw_sideband_max(PW_SIDEBAND_64K), 65520);
	CHECK_EQ_INT(pw_sideband_max(PW_SIDEBAND_NONE), 0);
	test_split(PW_SIDEBAND_SMALL_MAX);
	test_split(PW_SIDEBAND_64K_MAX);
	test_split(6); /* one byte per packet */

	CHECK_EQ_INT(pw_sideband_write(&b, 2, "abc", 3, 1000), 0);
	CHECK_EQ_INT(pw_sideband_write(&b, 3, "x", 1, 1000), 0);
	CHECK_EQ_INT(pw_sideband_write(&b, 1, "", 0, 1000), 0); /* nothing */
	CHECK_EQ_INT(b.len, 8 + 6);
	CHECK(!memcmp(b.data, "0008\002abc0006\003x", 14));
	CHECK_EQ_INT(pw_sideband_write(&b, 0, "abc", 3, 1000), PW_EINVAL);
	CHECK_EQ_INT(pw_sideband_write(&b, 4, "abc", 3, 1000), PW_EINVAL);
	CHECK_EQ_INT(pw_sideband_write(&b, 1, "abc", 3, 5), PW_EINVAL);
	CHECK_EQ_INT(pw_sideband_write(&b, 1, "abc", 3, 65521), PW_EINVAL);
	CHECK_EQ_INT(b.len, 14);
	pw_buf_free(&b);
}

static void test_demux(void)
{
	struct pw_pkt pkt = {PW_PKT_DATA, NULL, 0};
	struct pw_error err = {0};
	struct pw_str payload;
	int band = 0;

	pkt.data = "\001PACK";
	pkt.len = 5;
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), 0);
	CHECK_EQ_INT(band, 1);
	CHECK_EQ_INT(payload.len, 4);
	pkt.data = "\002";
	pkt.len = 1;
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), 0);
	CHECK_EQ_INT(band, 2);
	CHECK_EQ_INT(payload.len, 0);
	pkt.data = "\003fatal";
	pkt.len = 6;
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), 0);
	CHECK_EQ_INT(band, 3);

	pkt.len = 0;
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: no band designator");
	pkt.data = "\000x";
	pkt.len = 2;
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad band #0");
	pkt.data = "\004x";
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad band #4");
	pkt.data = "\377x";
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad band #255");
	pkt.data = "Px"; /* a v0 "PACK" stream where side-band was expected */
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), PW_EPROTO);
	pkt.kind = PW_PKT_FLUSH;
	CHECK_EQ_INT(pw_sideband_demux(&pkt, &band, &payload, &err), PW_EINVAL);
}

static void feed(struct pw_progress_relay *r, const char *s)
{
	CHECK_EQ_INT(pw_progress_relay_feed(r, s, strlen(s)), 0);
}

static void test_relay(void)
{
	struct pw_progress_relay r;
	struct pw_error err = {0};
	int fds[2];
	char got[256] = {0};

	pw_progress_relay_init(&r, "~");
	feed(&r, "Counting: 1\rCounting: 2\rCounting: 3, done.\n");
	CHECK_STR(r.out.data, "remote: Counting: 1~\rremote: Counting: 2~\r"
	                      "remote: Counting: 3, done.~\n");
	pw_buf_reset(&r.out);

	/* a line split across packets gets one prefix */
	feed(&r, "Compress");
	feed(&r, "ing 50%");
	CHECK_EQ_INT(r.partial, strlen("remote: Compressing 50%"));
	feed(&r, "\r");
	CHECK_STR(r.out.data, "remote: Compressing 50%~\r");
	CHECK_EQ_INT(r.partial, 0);
	pw_buf_reset(&r.out);

	/* an empty line gets no suffix; a terminator right after a partial
	 * line clears the rest of it */
	feed(&r, "\n");
	feed(&r, "abc");
	feed(&r, "\ndef");
	CHECK_STR(r.out.data, "remote: \nremote: abc~\nremote: def");
	CHECK_EQ_INT(pw_progress_relay_finish(&r), 0);
	CHECK_STR(r.out.data, "remote: \nremote: abc~\nremote: def\n");
	pw_buf_reset(&r.out);

	/* flushing to an fd writes complete lines and keeps the partial one */
	CHECK_EQ_INT(pipe(fds), 0);
	feed(&r, "one\ntw");
	CHECK_EQ_INT(pw_progress_relay_flush_fd(&r, fds[1], &err), 0);
	CHECK_STR(r.out.data, "remote: tw");
	feed(&r, "o\n");
	CHECK_EQ_INT(pw_progress_relay_flush_fd(&r, fds[1], &err), 0);
	CHECK_EQ_INT(r.out.len, 0);
	close(fds[1]);
	CHECK(read(fds[0], got, sizeof(got) - 1) > 0);
	CHECK_STR(got, "remote: one~\nremote: two~\n");
	close(fds[0]);
	pw_progress_relay_free(&r);
}

/* A server that never ends its line (issue 26): the relay keeps at most
 * PW_PROGRESS_LINE_MAX bytes of it, ends it there and drops the rest up to
 * its terminator; what follows is relayed as usual. */
static void test_relay_endless(void)
{
	struct pw_progress_relay r;
	struct pw_error err;
	char *chunk = malloc(65515);
	size_t i, most = 0;
	int devnull = open("/dev/null", O_WRONLY);

	if (!chunk || devnull < 0)
		return;
	memset(chunk, 'a', 65515);
	pw_progress_relay_init(&r, "~");
	for (i = 0; i < 2000; i++) { /* 128 MiB of one line */
		CHECK_EQ_INT(pw_progress_relay_feed(&r, chunk, 65515), 0);
		if (r.out.len > most)
			most = r.out.len;
		if (i == 1) {
			/* the line was ended at the bound, no more */
			CHECK_EQ_INT((int)r.out.len, 8 + PW_PROGRESS_LINE_MAX + 1 + 1);
			CHECK(!memcmp(r.out.data, "remote: aaa", 11));
			CHECK(!memcmp(r.out.data + r.out.len - 3, "a~\n", 3));
		}
		CHECK_EQ_INT(pw_progress_relay_flush_fd(&r, devnull, &err), 0);
	}
	CHECK(most <= 8 + PW_PROGRESS_LINE_MAX + 2);
	CHECK_EQ_INT((int)r.out.len, 0);
	/* its end, then an ordinary line */
	feed(&r, "aaa\rnext\n");
	CHECK_STR(r.out.data, "remote: next~\n");
	pw_buf_reset(&r.out);
	/* a line at the bound exactly, in pieces, then more of it */
	memset(chunk, 'b', 65515);
	CHECK_EQ_INT(pw_progress_relay_feed(&r, chunk, 65515), 0);
	CHECK_EQ_INT(pw_progress_relay_feed(&r, chunk, PW_PROGRESS_LINE_MAX - 65515), 0);
	CHECK_EQ_INT((int)r.out.len, 8 + PW_PROGRESS_LINE_MAX + 2);
	feed(&r, "bbb\nok\n");
	CHECK(!strcmp(r.out.data + r.out.len - 15, "b~\nremote: ok~\n") ||
	      !fprintf(stderr, "  tail: '%s'\n", r.out.data + r.out.len - 15));
	CHECK_EQ_INT(pw_progress_relay_finish(&r), 0);
	pw_progress_relay_free(&r);
	close(devnull);
	free(chunk);
}

int main(void)
{
	test_write();
	test_demux();
	test_relay();
	test_relay_endless();
	return pw_test_done();
}
