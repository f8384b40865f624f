/* The smart-HTTP client's pure readers of answers: the framing of a v2
 * answer as it streams (cut off inside a length or a body, a bad length, a
 * response-end packet from the server), fed whole and byte by byte; and
 * the info/refs preamble telling v0, v1 and v2 apart, with ids of both
 * algorithms. */
#include <string.h>

#include "packwire/hash.h"
#include "transport/transport-priv.h"
#include "test.h"

static const struct pw_hash_algo *algos[] = {&pw_hash_sha1, &pw_hash_sha256};

/* Feed s whole (step 0) or in pieces of step bytes; the _end result. */
static int check(const char *s, size_t step, int *feed_rc, struct pw_error *err)
{
	struct pw_http_pktcheck st;
	size_t n = strlen(s), off = 0;

	memset(&st, 0, sizeof(st));
	*feed_rc = 0;
	while (off < n) {
		size_t k = step && step < n - off ? step : n - off;

		if ((*feed_rc = pw_http__pktcheck_feed(&st, (const uint8_t *)s + off, k, err)))
			return *feed_rc;
		off += k;
	}
	return pw_http__pktcheck_end(&st, err);
}

static void test_pktcheck(void)
{
	static const size_t steps[] = {0, 1, 3, 5};
	struct pw_error err;
	size_t i;
	int frc;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		size_t s = steps[i];

		/* whole answers: packets, delim, flush */
		CHECK_EQ_INT(check("0009hello00010009world0000", s, &frc, &err), 0);
		CHECK_EQ_INT(check("", s, &frc, &err), 0);
		/* cut inside a length: Git's words */
		CHECK_EQ_INT(check("00", s, &frc, &err), PW_EPROTO);
		CHECK(frc == 0 && !strcmp(err.msg, "2 bytes of length header were received"));
		CHECK_EQ_INT(check("0009hello000", s, &frc, &err), PW_EPROTO);
		CHECK(!strcmp(err.msg, "3 bytes of length header were received"));
		/* cut inside a body (t5702's incomplete body: 0x79 - 4 - 2) */
		CHECK_EQ_INT(check("007945", s, &frc, &err), PW_EPROTO);
		CHECK(frc == 0 && !strcmp(err.msg, "115 bytes of body are still expected"));
		/* a bad length character and a response-end from the server */
		CHECK_EQ_INT(check("00x9hello", s, &frc, &err), PW_EPROTO);
		CHECK(frc == PW_EPROTO && strstr(err.msg, "bad line length character: 00x9"));
		CHECK_EQ_INT(check("0008abcd0002", s, &frc, &err), PW_EPROTO);
		CHECK(frc == PW_EPROTO && strstr(err.msg, "response end"));
		/* 0003 has no body: the packet reader judges it */
		CHECK_EQ_INT(check("0003", s, &frc, &err), 0);
		/* the largest length */
		CHECK_EQ_INT(check("ffff", s, &frc, &err), PW_EPROTO);
		CHECK(!strcmp(err.msg, "65531 bytes of body are still expected"));
	}
}

static size_t pkt(char *out, const char *line)
{
	size_t n = strlen(line) + 4;
	static const char hx[] = "0123456789abcdef";

	out[0] = hx[(n >> 12) & 15];
	out[1] = hx[(n >> 8) & 15];
	out[2] = hx[(n >> 4) & 15];
	out[3] = hx[n & 15];
	memcpy(out + 4, line, n - 4);
	return n;
}

static void test_discovery(const struct pw_hash_algo *algo)
{
	char body[512], line[256], hex[65];
	struct pw_error err;
	size_t n, skip, pre;
	int version;

	memset(hex, 'b', algo->hexsz);
	hex[algo->hexsz] = 0;
	/* v1: "version 1" after the service preamble */
	n = pkt(body, "# service=git-upload-pack\n");
	memcpy(body + n, "0000", 4);
	pre = n += 4;
	n += pkt(body + n, "version 1\n");
	snprintf(line, sizeof(line), "%s refs/heads/main\n", hex);
	n += pkt(body + n, line);
	memcpy(body + n, "0000", 4);
	n += 4;
	CHECK_EQ_INT(pw_http__discovery((const uint8_t *)body, n, "git-upload-pack", &skip,
	                                &version, &err),
	             0);
	CHECK_EQ_INT(version, 1);
	CHECK_EQ_INT(skip, pre);
	/* v0: the refs at once */
	n = pre + pkt(body + pre, line);
	CHECK_EQ_INT(pw_http__discovery((const uint8_t *)body, n, "git-upload-pack", &skip,
	                                &version, &err),
	             0);
	CHECK_EQ_INT(version, 0);
	/* "version 3" and "version 1x" are refs lines to the v0 reader, not v1 */
	n = pre + pkt(body + pre, "version 3\n");
	CHECK_EQ_INT(pw_http__discovery((const uint8_t *)body, n, "git-upload-pack", &skip,
	                                &version, &err),
	             0);
	CHECK_EQ_INT(version, 0);
	n = pre + pkt(body + pre, "version 1x\n");
	CHECK_EQ_INT(pw_http__discovery((const uint8_t *)body, n, "git-upload-pack", &skip,
	                                &version, &err),
	             0);
	CHECK_EQ_INT(version, 0);
	/* v2 without a preamble */
	n = pkt(body, "version 2\n");
	CHECK_EQ_INT(pw_http__discovery((const uint8_t *)body, n, "git-upload-pack", &skip,
	                                &version, &err),
	             0);
	CHECK_EQ_INT(version, 2);
	/* the preamble cut short, another service's */
	CHECK_EQ_INT(pw_http__discovery((const uint8_t *)body, 3, "git-upload-pack", &skip,
	                                &version, &err),
	             PW_EPROTO);
	n = pkt(body, "# service=git-receive-pack\n");
	CHECK_EQ_INT(pw_http__discovery((const uint8_t *)body, n, "git-upload-pack", &skip,
	                                &version, &err),
	             PW_EPROTO);
}

int main(void)
{
	size_t i;

	test_pktcheck();
	for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++)
		test_discovery(algos[i]);
	return pw_test_done();
}
