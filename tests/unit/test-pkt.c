/* pkt-line: decoder on valid and malformed input, encoders, ERR packets,
 * the fd reader (EOF kinds, chomp, peek, no read-ahead, timeout) and writer. */
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/wait.h>

#include "packwire/pkt.h"
#include "test.h"

static int dec(const char *in, size_t len, struct pw_pkt *pkt, size_t *used, struct pw_error *err)
{
	return pw_pkt_decode((const uint8_t *)in, len, pkt, used, err);
}

static void test_decode_valid(void)
{
	struct pw_pkt pkt;
	struct pw_error err = {0};
	size_t used;

	CHECK_EQ_INT(dec("0006a\n", 6, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_DATA);
	CHECK_EQ_INT(pkt.len, 2);
	CHECK(!memcmp(pkt.data, "a\n", 2));
	CHECK_EQ_INT(used, 6);
	pw_pkt_chomp(&pkt);
	CHECK_EQ_INT(pkt.len, 1);
	pw_pkt_chomp(&pkt); /* only one LF, and only if present */
	CHECK_EQ_INT(pkt.len, 1);

	CHECK_EQ_INT(dec("0005a", 5, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.len, 1);
	CHECK_EQ_INT(dec("000bfoobar\nXXXX", 15, &pkt, &used, &err), 0);
	CHECK_EQ_INT(used, 11);
	CHECK_EQ_INT(pkt.len, 7);
	/* upper-case hex is hex too */
	CHECK_EQ_INT(dec("000Afoobar", 10, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.len, 6);

	/* the empty data packet is data, not flush */
	CHECK_EQ_INT(dec("0004", 4, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_DATA);
	CHECK_EQ_INT(pkt.len, 0);
	CHECK_EQ_INT(used, 4);

	CHECK_EQ_INT(dec("0000", 4, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_FLUSH);
	CHECK_EQ_INT(used, 4);
	CHECK_EQ_INT(dec("0001rest", 8, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_DELIM);
	CHECK_EQ_INT(used, 4);
	CHECK_EQ_INT(dec("0002", 4, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_RESPONSE_END);

	/* binary-clean, and a NUL inside is fine */
	CHECK_EQ_INT(dec("0008\0\xff\n\x01", 8, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.len, 4);
	CHECK_EQ_INT((unsigned char)pkt.data[1], 0xff);
}

static void test_decode_max(void)
{
	struct pw_pkt pkt;
	struct pw_error err = {0};
	size_t used;
	char *big = malloc(PW_PKT_MAX + 8);

	memset(big, 'x', PW_PKT_MAX + 8);
	memcpy(big, "fff0", 4); /* 65520: the largest allowed */
	CHECK_EQ_INT(dec(big, PW_PKT_MAX + 8, &pkt, &used, &err), 0);
	CHECK_EQ_INT(pkt.len, PW_PKT_DATA_MAX);
	CHECK_EQ_INT(used, PW_PKT_MAX);
	CHECK_EQ_INT(dec(big, PW_PKT_MAX - 1, &pkt, &used, &err), PW_EMORE);
	CHECK_EQ_INT(used, 0);

	memcpy(big, "fff1", 4);
	CHECK_EQ_INT(dec(big, PW_PKT_MAX + 8, &pkt, &used, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad line length 65521 (maximum is 65520)");
	/* the length is judged before waiting for the payload */
	CHECK_EQ_INT(dec("ffff", 4, &pkt, &used, &err), PW_EPROTO);
	free(big);
}

static void test_decode_malformed(void)
{
	struct pw_pkt pkt;
	struct pw_error err = {0};
	size_t used = 99;

	CHECK_EQ_INT(dec("", 0, &pkt, &used, &err), PW_EMORE);
	CHECK_EQ_INT(used, 0);
	CHECK_EQ_INT(dec("00", 2, &pkt, &used, &err), PW_EMORE);
	CHECK_EQ_INT(dec("000", 3, &pkt, &used, &err), PW_EMORE);
	CHECK_EQ_INT(dec("0009abc", 7, &pkt, &used, &err), PW_EMORE);

	CHECK_EQ_INT(dec("0003", 4, &pkt, &used, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad line length 3");
	CHECK_EQ_INT(dec("00g4", 4, &pkt, &used, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad line length character: '00g4'");
	CHECK_EQ_INT(dec("ERR ", 4, &pkt, &used, &err), PW_EPROTO);
	CHECK_EQ_INT(dec(" 004", 4, &pkt, &used, &err), PW_EPROTO);
	CHECK_EQ_INT(dec("+004", 4, &pkt, &used, &err), PW_EPROTO);
	CHECK_EQ_INT(dec("0x04", 4, &pkt, &used, &err), PW_EPROTO);
	CHECK_EQ_INT(dec("\n\0\x01\xff", 4, &pkt, &used, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad line length character: '\\x0a\\x00\\x01\\xff'");
}

static void test_encode(void)
{
	struct pw_buf b = PW_BUF_INIT;
	char *big;

	CHECK_EQ_INT(pw_pkt_writes(&b, "a\n"), 0);
	CHECK_EQ_INT(pw_pkt_write(&b, "", 0), 0);
	CHECK_EQ_INT(pw_pkt_flush(&b), 0);
	CHECK_EQ_INT(pw_pkt_delim(&b), 0);
	CHECK_EQ_INT(pw_pkt_response_end(&b), 0);
	CHECK_EQ_INT(pw_pkt_writef(&b, "want %s %d\n", "x", 12), 0);
	CHECK_EQ_INT(pw_pkt_write_err(&b, "upload-pack: not our ref %s", "abc"), 0);
	CHECK_STR(b.data, "0006a\n0004000000010002000ewant x 12\n"
	                  "0024ERR upload-pack: not our ref abc");

	big = malloc(PW_PKT_DATA_MAX + 2);
	memset(big, 'y', PW_PKT_DATA_MAX + 1);
	big[PW_PKT_DATA_MAX + 1] = '\0';
	pw_buf_reset(&b);
	CHECK_EQ_INT(pw_pkt_write(&b, big, PW_PKT_DATA_MAX), 0);
	CHECK_EQ_INT(b.len, PW_PKT_MAX);
	CHECK(!memcmp(b.data, "fff0", 4));
	CHECK_EQ_INT(pw_pkt_write(&b, big, PW_PKT_DATA_MAX + 1), PW_ETOOBIG);
	CHECK_EQ_INT(pw_pkt_writef(&b, "%s", big), PW_ETOOBIG);
	big[PW_PKT_DATA_MAX - 3] = '\0';
	CHECK_EQ_INT(pw_pkt_write_err(&b, "%s", big), PW_ETOOBIG); /* "ERR " counts */
	CHECK_EQ_INT(b.len, PW_PKT_MAX);                           /* unchanged */
	free(big);

	/* a bounded buffer refuses growth and stays as it was */
	pw_buf_free(&b);
	pw_buf_init(&b, 10);
	CHECK_EQ_INT(pw_pkt_writes(&b, "abcd"), 0);
	CHECK_EQ_INT(pw_pkt_writes(&b, "abcd"), PW_ETOOBIG);
	CHECK_EQ_INT(pw_pkt_writef(&b, "abcd"), PW_ETOOBIG);
	CHECK_STR(b.data, "0008abcd");
	pw_buf_free(&b);
}

static void test_err_packet(void)
{
	struct pw_pkt pkt;
	struct pw_str msg;
	size_t used;

	dec("000fERR no repo\n", 15, &pkt, &used, NULL);
	CHECK(pw_pkt_is_err(&pkt, &msg));
	CHECK_EQ_INT(msg.len, 7);
	CHECK(!memcmp(msg.p, "no repo", 7));
	dec("0008ERR ", 8, &pkt, &used, NULL);
	CHECK(pw_pkt_is_err(&pkt, &msg));
	CHECK_EQ_INT(msg.len, 0);
	dec("0007ERR", 7, &pkt, &used, NULL);
	CHECK(!pw_pkt_is_err(&pkt, NULL));
	dec("0009ERROR", 9, &pkt, &used, NULL);
	CHECK(!pw_pkt_is_err(&pkt, NULL));
	dec("0000", 4, &pkt, &used, NULL);
	CHECK(!pw_pkt_is_err(&pkt, NULL));
}

/* Write `len` bytes into a pipe from a child process, then close it. */
static int feed_pipe(const char *data, size_t len, pid_t *pid)
{
	int fds[2];

	if (pipe(fds))
		return -1;
	*pid = fork();
	if (*pid == 0) {
		close(fds[0]);
		pw_write_full(fds[1], data, len, NULL);
		_exit(0);
	}
	close(fds[1]);
	return fds[0];
}

static void test_reader(void)
{
	static const char stream[] = "0009hello0000000aworld\n00010002"
	                             "000fERR failed\n0004";
	struct pw_pkt_reader r;
	struct pw_pkt pkt;
	struct pw_error err = {0};
	pid_t pid;
	int fd = feed_pipe(stream, sizeof(stream) - 1, &pid);

	CHECK_EQ_INT(pw_pkt_reader_init(&r, fd, PW_PKT_READ_CHOMP), 0);
	CHECK_EQ_INT(pw_pkt_peek(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_DATA);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.len, 5);
	CHECK(!memcmp(pkt.data, "hello", 5));
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_FLUSH);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.len, 5); /* chomped */
	CHECK(!memcmp(pkt.data, "world", 5));
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_DELIM);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_RESPONSE_END);
	r.flags |= PW_PKT_READ_ERR;
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), PW_ERROR);
	CHECK_STR(err.msg, "remote error: failed");
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_DATA);
	CHECK_EQ_INT(pkt.len, 0);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_EOF);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0); /* and stays there */
	CHECK_EQ_INT(pkt.kind, PW_PKT_EOF);
	pw_pkt_reader_free(&r);
	close(fd);
	waitpid(pid, NULL, 0);
}

static void test_reader_truncated(void)
{
	struct pw_pkt_reader r;
	struct pw_pkt pkt;
	struct pw_error err = {0};
	pid_t pid;
	int fd;

	fd = feed_pipe("0009hel", 7, &pid);
	pw_pkt_reader_init(&r, fd, 0);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), PW_EPROTO);
	CHECK_STR(err.msg, "the remote end hung up unexpectedly (EOF inside a packet: got 7 of 9 "
	                   "bytes)");
	pw_pkt_reader_free(&r);
	close(fd);
	waitpid(pid, NULL, 0);

	fd = feed_pipe("0000ab", 6, &pid);
	pw_pkt_reader_init(&r, fd, 0);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_FLUSH);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), PW_EPROTO);
	CHECK_STR(err.msg, "the remote end hung up unexpectedly (EOF inside a packet header after "
	                   "2 bytes)");
	pw_pkt_reader_free(&r);
	close(fd);
	waitpid(pid, NULL, 0);

	fd = feed_pipe("0003", 4, &pid);
	pw_pkt_reader_init(&r, fd, 0);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad line length 3");
	pw_pkt_reader_free(&r);
	close(fd);
	waitpid(pid, NULL, 0);
}

/* Many packets of every size through a pipe: exercises buffer compaction. */
static void test_reader_bulk(unsigned flags)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_pkt_reader r;
	struct pw_pkt pkt;
	struct pw_error err = {0};
	char *payload = malloc(PW_PKT_DATA_MAX);
	size_t sizes[] = {0, 1, 100, 65000, PW_PKT_DATA_MAX, 3, PW_PKT_DATA_MAX, 7, 40000, 1};
	size_t i, n = sizeof(sizes) / sizeof(sizes[0]);
	const uint8_t *rest;
	size_t restlen;
	pid_t pid;
	int fd, ok = 1;

	for (i = 0; i < PW_PKT_DATA_MAX; i++)
		payload[i] = (char)(i * 7);
	for (i = 0; i < n; i++)
		pw_pkt_write(&b, payload, sizes[i]);
	pw_pkt_flush(&b);
	pw_buf_add(&b, "PACK", 4); /* raw bytes after the pkt-lines */
	fd = feed_pipe(b.data, b.len, &pid);
	pw_pkt_reader_init(&r, fd, flags);
	for (i = 0; i < n; i++) {
		if (pw_pkt_read(&r, &pkt, &err) || pkt.kind != PW_PKT_DATA || pkt.len != sizes[i] ||
		    (pkt.len && memcmp(pkt.data, payload, pkt.len)))
			ok = 0;
	}
	CHECK(ok);
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), 0);
	CHECK_EQ_INT(pkt.kind, PW_PKT_FLUSH);
	pw_pkt_reader_pending(&r, &rest, &restlen);
	if (flags & PW_PKT_READ_NO_AHEAD) {
		char tail[5] = {0};

		CHECK_EQ_INT(restlen, 0);
		CHECK_EQ_INT(read(fd, tail, 4), 4); /* still in the pipe */
		CHECK_STR(tail, "PACK");
	} else {
		/* may or may not have been read yet, but never lost */
		CHECK(restlen == 0 || (restlen == 4 && !memcmp(rest, "PACK", 4)));
	}
	pw_pkt_reader_free(&r);
	close(fd);
	waitpid(pid, NULL, 0);
	pw_buf_free(&b);
	free(payload);
}

static void test_reader_timeout(void)
{
	struct pw_pkt_reader r;
	struct pw_pkt pkt;
	struct pw_error err = {0};
	int fds[2];

	CHECK_EQ_INT(pipe(fds), 0);
	CHECK_EQ_INT(write(fds[1], "00", 2), 2);
	pw_pkt_reader_init(&r, fds[0], 0);
	r.timeout_ms = 50;
	CHECK_EQ_INT(pw_pkt_read(&r, &pkt, &err), PW_EIO);
	CHECK_STR(err.msg, "read timed out after 50 ms waiting for the peer");
	pw_pkt_reader_free(&r);
	close(fds[0]);
	close(fds[1]);
}

static void test_write_full(void)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err = {0};
	int fds[2];
	char got[16] = {0};

	CHECK_EQ_INT(pipe(fds), 0);
	pw_pkt_writes(&b, "abc");
	CHECK_EQ_INT(pw_pkt_send(fds[1], &b, &err), 0);
	CHECK_EQ_INT(b.len, 0);
	CHECK_EQ_INT(read(fds[0], got, sizeof(got) - 1), 7);
	CHECK_STR(got, "0007abc");
	close(fds[0]);
	close(fds[1]);
	CHECK_EQ_INT(pw_write_full(fds[1], "x", 1, &err), PW_EIO);
	CHECK(!strncmp(err.msg, "write error: ", 13));
	pw_buf_free(&b);
}

int main(void)
{
	test_decode_valid();
	test_decode_max();
	test_decode_malformed();
	test_encode();
	test_err_packet();
	test_reader();
	test_reader_truncated();
	test_reader_bulk(0);
	test_reader_bulk(PW_PKT_READ_NO_AHEAD);
	test_reader_timeout();
	test_write_full();
	return pw_test_done();
}
