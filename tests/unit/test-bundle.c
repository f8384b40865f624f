/* The bundle header parser and writer, both algorithms: v2 (SHA-1 by
 * definition: 64-digit ids are "unrecognized header", as Git says), v3
 * (@object-format, @filter, else the id length), prerequisites, references,
 * byte-at-a-time feeding, and malformed or oversized headers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/bundle.h"
#include "test.h"

static const struct pw_hash_algo *algos[] = {&pw_hash_sha1, &pw_hash_sha256};

static void hexof(const struct pw_hash_algo *a, char c, char *out)
{
	memset(out, c, a->hexsz);
	out[a->hexsz] = 0;
}

static int parse(struct pw_bundle_header *h, const char *s, size_t *used, struct pw_error *err)
{
	return pw_bundle_header_parse(h, (const uint8_t *)s, strlen(s), used, err);
}

static void test_good(const struct pw_hash_algo *a)
{
	struct pw_bundle_header h;
	struct pw_error err = {0};
	struct pw_buf out = PW_BUF_INIT;
	char x[65], y[65], in[1024];
	size_t used, i;
	int v;

	hexof(a, 'a', x);
	hexof(a, 'b', y);
	pw_bundle_header_init(&h);
	for (v = 2; v <= 3; v++) {
		if (v == 3)
			snprintf(in, sizeof(in),
			         "# v3 git bundle\n@object-format=%s\n@filter=blob:none\n"
			         "-%s some subject\n-%s\n%s refs/heads/main\n%s HEAD\n\nPACK",
			         a->name, x, y, y, y);
		else
			snprintf(in, sizeof(in),
			         "# v2 git bundle\n-%s some subject\n-%s\n%s refs/heads/main\n"
			         "%s HEAD\n\nPACK",
			         x, y, y, y);
		if (v == 2 && a != &pw_hash_sha1) {
			/* issue 26: not a SHA-256 bundle, whatever its ids look like */
			CHECK_EQ_INT(parse(&h, in, &used, &err), PW_EPROTO);
			CHECK(strstr(err.msg, "bundle header line 2: unrecognized header: -") !=
			      NULL);
			CHECK(strstr(err.msg,
			             " some subject (77); a v2 bundle holds SHA-1 ids only") !=
			      NULL);
			continue;
		}
		CHECK_EQ_INT(parse(&h, in, &used, &err), 0);
		CHECK_EQ_INT((int)used, (int)(strlen(in) - 4));
		CHECK_EQ_INT(h.version, v);
		CHECK(h.algo == a);
		CHECK_EQ_INT(h.algo_from_caps, v == 3);
		CHECK_EQ_INT((int)h.nr_prereqs, 2);
		CHECK_EQ_INT((int)h.nr_refs, 2);
		CHECK_STR(h.prereqs[0].name, "some subject");
		CHECK_STR(h.prereqs[1].name, "");
		CHECK_STR(h.refs[0].name, "refs/heads/main");
		CHECK_STR(h.refs[1].name, "HEAD");
		CHECK(h.refs[0].oid.algo == a->id);
		if (v == 3)
			CHECK_STR(h.filter ? h.filter : "(none)", "blob:none");
		else
			CHECK(h.filter == NULL);
		/* the writer gives back the same bytes (v2 only for SHA-1) */
		pw_buf_reset(&out);
		CHECK_EQ_INT(pw_bundle_header_write(&h, &out, &err), 0);
		CHECK_EQ_INT((int)out.len, (int)used);
		CHECK(!memcmp(out.data, in, used));
		if (v == 3 && a != &pw_hash_sha1) {
			h.version = 2;
			CHECK_EQ_INT(pw_bundle_header_write(&h, &out, &err), PW_EINVAL);
			CHECK_STR(err.msg, "cannot write bundle version 2 with algorithm sha256");
			h.version = 3;
		}
		/* fed one byte more at a time: PW_EMORE until the blank line */
		for (i = 0; i < used; i++)
			CHECK_EQ_INT(
			        pw_bundle_header_parse(&h, (const uint8_t *)in, i, &used, &err),
			        PW_EMORE);
	}
	pw_buf_free(&out);
	pw_bundle_header_free(&h);
}

static void expect_bad(const char *in, int code, const char *msg)
{
	struct pw_bundle_header h;
	struct pw_error err = {0};
	size_t used;

	pw_bundle_header_init(&h);
	CHECK_EQ_INT(parse(&h, in, &used, &err), code);
	if (msg && !strstr(err.msg, msg)) {
		fprintf(stderr, "  message '%s' lacks '%s'\n", err.msg, msg);
		CHECK(0);
	}
	pw_bundle_header_free(&h);
}

static void test_bad(const struct pw_hash_algo *a)
{
	const struct pw_hash_algo *other = a == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;
	char x[65], o[65], in[2048], sig[64];

	/* the header that takes this algorithm's ids */
	snprintf(sig, sizeof(sig), "%s",
	         a == &pw_hash_sha1 ? "# v2 git bundle\n"
	                            : "# v3 git bundle\n@object-format=sha256\n");
	hexof(a, 'c', x);
	hexof(other, 'd', o);
	expect_bad("# v4 git bundle\n\n", PW_EPROTO, "not a v2 or v3 bundle");
	expect_bad("PACK\0\0\0\2", PW_EPROTO, "not a v2 or v3 bundle");
	expect_bad("# v2 git bundle", PW_EMORE, NULL);
	snprintf(in, sizeof(in), "# v3 git bundle\n%s refs/heads/a\n%s refs/heads/b\n\n", x, o);
	expect_bad(in, PW_EPROTO, "mixed lengths");
	/* v2: SHA-1 ids only, so the 64-digit line is the bad one (Git's words) */
	snprintf(in, sizeof(in), "# v2 git bundle\n%s refs/heads/a\n%s refs/heads/b\n\n", x, o);
	expect_bad(in, PW_EPROTO,
	           a == &pw_hash_sha1 ? "bundle header line 3: unrecognized header: "
	                              : "bundle header line 2: unrecognized header: ");
	expect_bad(in, PW_EPROTO,
	           a == &pw_hash_sha1 ? " refs/heads/b (77); a v2 bundle holds SHA-1"
	                              : " refs/heads/a (77); a v2 bundle holds SHA-1");
	snprintf(in, sizeof(in), "# v3 git bundle\n@object-format=%s\n%s refs/heads/b\n\n", a->name,
	         o);
	expect_bad(in, PW_EPROTO, "-digit id in a");
	snprintf(in, sizeof(in), "# v3 git bundle\n@object-format=md5\n%s refs/heads/b\n\n", x);
	expect_bad(in, PW_EPROTO, "unrecognized bundle hash algorithm: md5");
	snprintf(in, sizeof(in), "# v3 git bundle\n@foo=bar\n%s refs/heads/b\n\n", x);
	expect_bad(in, PW_EPROTO, "unknown capability 'foo=bar'");
	snprintf(in, sizeof(in), "# v3 git bundle\n@filter=nonsense\n%s refs/heads/b\n\n", x);
	expect_bad(in, PW_EPROTO, "bundle filter 'nonsense'");
	/* a capability line in v2 is not one */
	snprintf(in, sizeof(in), "# v2 git bundle\n@object-format=sha1\n%s refs/heads/b\n\n", x);
	expect_bad(in, PW_EPROTO, "unrecognized header");
	snprintf(in, sizeof(in), "# v2 git bundle\n-%.10s comment\n\n", x);
	expect_bad(in, PW_EPROTO, "unrecognized header");
	snprintf(in, sizeof(in), "# v2 git bundle\n-%sx comment\n\n", x);
	expect_bad(in, PW_EPROTO, "unrecognized header");
	snprintf(in, sizeof(in), "%s%s\n\n", sig, x);
	expect_bad(in, PW_EPROTO, "reference without a name");
	snprintf(in, sizeof(in), "%s%s refs/heads/a\n-%s c\n\n", sig, x, x);
	expect_bad(in, PW_EPROTO, "prerequisite after a reference");
	snprintf(in, sizeof(in), "# v3 git bundle\n%s refs/heads/a\n@object-format=sha1\n\n", x);
	expect_bad(in, PW_EPROTO, "capability after the ids");
	{
		/* a NUL inside a line */
		char nul[200];
		size_t n = (size_t)snprintf(nul, sizeof(nul), "# v2 git bundle\n%s refs/h", x);
		struct pw_bundle_header h;
		struct pw_error err = {0};
		size_t used;

		memcpy(nul + n, "\0x\n\n", 4);
		pw_bundle_header_init(&h);
		CHECK_EQ_INT(pw_bundle_header_parse(&h, (uint8_t *)nul, n + 4, &used, &err),
		             PW_EPROTO);
		pw_bundle_header_free(&h);
	}
	{
		/* a line past PW_BUNDLE_MAX_LINE without a newline */
		size_t n = PW_BUNDLE_MAX_LINE + 100;
		char *big = malloc(n + 1);
		struct pw_bundle_header h;
		struct pw_error err = {0};
		size_t used;

		memcpy(big, "# v2 git bundle\n", 16);
		memset(big + 16, 'a', n - 16);
		big[n] = 0;
		pw_bundle_header_init(&h);
		CHECK_EQ_INT(pw_bundle_header_parse(&h, (uint8_t *)big, n, &used, &err),
		             PW_ETOOBIG);
		pw_bundle_header_free(&h);
		free(big);
	}
}

static void test_signature(void)
{
	CHECK(pw_bundle_has_signature((const uint8_t *)"# v2 git bundle\n", 16));
	CHECK(pw_bundle_has_signature((const uint8_t *)"# v3 git bundle\nxx", 18));
	CHECK(!pw_bundle_has_signature((const uint8_t *)"# v2 git bundle", 15));
	CHECK(!pw_bundle_has_signature((const uint8_t *)"# v1 git bundle\n", 16));
}

int main(void)
{
	size_t i;

	test_signature();
	for (i = 0; i < 2; i++) {
		test_good(algos[i]);
		test_bad(algos[i]);
	}
	return pw_test_done();
}
