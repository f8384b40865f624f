/* Capability lists v0/v1 and v2, and the object-format rules of both sides. */
#include <stdlib.h>

#include "packwire/proto.h"
#include "test.h"

static const struct pw_hash_algo *algos[] = {&pw_hash_sha1, &pw_hash_sha256};

/* What git 2.39 upload-pack advertises (GIT_TRACE_PACKET), plus repeats. */
static const char v0caps[] =
        "multi_ack thin-pack side-band side-band-64k ofs-delta shallow deepen-since "
        "deepen-not deepen-relative no-progress include-tag multi_ack_detailed "
        "symref=HEAD:refs/heads/main symref=refs/remotes/o/HEAD:refs/remotes/o/main "
        "object-format=sha256 object-format=sha1 agent=git/2.39.5 empty= ofs-deltax";

static int val_is(struct pw_str v, const char *s)
{
	return v.p && v.len == strlen(s) && !memcmp(v.p, s, v.len);
}

static void test_v0_get(void)
{
	size_t n = strlen(v0caps);
	struct pw_str v;

	CHECK_EQ_INT(pw_caps_get(v0caps, n, "object-format", &v), 0);
	CHECK(val_is(v, "sha256")); /* the first one wins */
	CHECK_EQ_INT(pw_caps_get(v0caps, n, "agent", &v), 0);
	CHECK(val_is(v, "git/2.39.5"));
	CHECK_EQ_INT(pw_caps_get(v0caps, n, "ofs-delta", &v), 0);
	CHECK(v.p == NULL && v.len == 0); /* bare */
	CHECK_EQ_INT(pw_caps_get(v0caps, n, "empty", &v), 0);
	CHECK(v.p != NULL && v.len == 0); /* "key=" */
	CHECK_EQ_INT(pw_caps_get(v0caps, n, "multi_ack", &v), 0);
	CHECK(v.p == NULL);

	/* whole tokens only, in both directions */
	CHECK(pw_caps_has(v0caps, n, "ofs-delta"));
	CHECK(pw_caps_has(v0caps, n, "ofs-deltax"));
	CHECK(!pw_caps_has(v0caps, n, "ofs-delt"));
	CHECK(!pw_caps_has(v0caps, n, "ofs-deltaxx"));
	CHECK(!pw_caps_has(v0caps, n, "object-formatx"));
	CHECK(!pw_caps_has(v0caps, n, "object"));
	CHECK(!pw_caps_has(v0caps, n, "side"));
	CHECK(!pw_caps_has(v0caps, n, "sha256")); /* a value is not a key */
	CHECK(!pw_caps_has(v0caps, n, "HEAD:refs/heads/main"));
	CHECK(!pw_caps_has(v0caps, n, "multi"));
	CHECK(pw_caps_has(v0caps, n, "symref"));
	CHECK(pw_caps_has("object-formatx=sha1 a", 21, "a"));
	CHECK_EQ_INT(pw_caps_get("object-formatx=sha1", 19, "object-format", &v), PW_ENOTFOUND);
	CHECK_EQ_INT(pw_caps_get("xobject-format=sha1", 19, "object-format", &v), PW_ENOTFOUND);
	/* `len` bounds the search; LF and repeated spaces separate */
	CHECK(!pw_caps_has("thin-pack ofs-delta", 9 + 4, "ofs-delta"));
	CHECK(pw_caps_has("  a   b\n", 8, "b"));
	CHECK(pw_caps_has("a\nb", 3, "a"));
	CHECK(!pw_caps_has("", 0, "a"));
	CHECK(!pw_caps_has(NULL, 0, "a"));
	CHECK_EQ_INT(pw_caps_get("a=b=c", 5, "a", &v), 0);
	CHECK(val_is(v, "b=c"));
	CHECK(!pw_caps_has("a=b=c", 5, "a=b"));
}

static void test_v0_iter(void)
{
	struct pw_caps_iter it;
	struct pw_str k, v;
	int count = 0;

	pw_caps_iter_init(&it, v0caps, strlen(v0caps));
	CHECK(pw_caps_next_value(&it, "symref", &v));
	CHECK(val_is(v, "HEAD:refs/heads/main"));
	CHECK(pw_caps_next_value(&it, "symref", &v));
	CHECK(val_is(v, "refs/remotes/o/HEAD:refs/remotes/o/main"));
	CHECK(!pw_caps_next_value(&it, "symref", &v));

	pw_caps_iter_init(&it, v0caps, strlen(v0caps));
	while (pw_caps_next(&it, &k, &v))
		count++;
	CHECK_EQ_INT(count, 19);
	pw_caps_iter_init(&it, " ", 1);
	CHECK(!pw_caps_next(&it, &k, &v));
}

static void test_v0_build(void)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_str head, caps;

	pw_buf_add(&b, "0123 HEAD", 9);
	pw_buf_addch(&b, '\0');
	CHECK_EQ_INT(pw_caps_add(&b, "multi_ack", NULL), 0);
	CHECK_EQ_INT(pw_caps_add(&b, "object-format", "sha256"), 0);
	CHECK_EQ_INT(pw_caps_add(&b, "agent", "packwire/0.1"), 0);
	pw_buf_addch(&b, '\n');
	CHECK_EQ_INT(b.len, 10 + 49 + 1);
	CHECK_EQ_INT(pw_adv_line_split(b.data, b.len, &head, &caps), 1);
	CHECK_EQ_INT(head.len, 9);
	CHECK_EQ_INT(caps.len, 49);
	CHECK(!memcmp(caps.p, "multi_ack object-format=sha256 agent=packwire/0.1", 49));
	CHECK(pw_caps_has(caps.p, caps.len, "agent"));
	CHECK_EQ_INT(pw_adv_line_split("abc refs/x\n", 11, &head, &caps), 0);
	CHECK_EQ_INT(head.len, 10);
	CHECK_EQ_INT(caps.len, 0);
	pw_buf_free(&b);
}

static void test_v2_caps(void)
{
	/* git 2.39's advertisement, byte for byte */
	static const char adv[] = "000eversion 2\n0015agent=git/2.39.5\n0013ls-refs=unborn\n"
	                          "0020fetch=shallow wait-for-done\n0012server-option\n"
	                          "0019object-format=sha256\n0010object-info\n0000"
	                          "0014command=ls-refs\n";
	static const char *const lines[] = {
	        "agent=git/2.39.5", "ls-refs=unborn",       "fetch=shallow wait-for-done",
	        "server-option",    "object-format=sha256", "object-info"};
	struct pw_v2_caps c;
	struct pw_error err = {0};
	struct pw_buf b = PW_BUF_INIT;
	struct pw_str v;
	size_t used, cut;

	pw_v2_caps_init(&c);
	CHECK_EQ_INT(pw_v2_caps_parse(&c, (const uint8_t *)adv, sizeof(adv) - 1, &used, &err), 0);
	CHECK_EQ_INT(used, sizeof(adv) - 1 - 20);
	CHECK_EQ_INT(c.nr, 6);
	CHECK_EQ_INT(pw_v2_caps_get(&c, "object-format", &v), 0);
	CHECK(val_is(v, "sha256"));
	CHECK(pw_v2_caps_has(&c, "server-option"));
	CHECK_EQ_INT(pw_v2_caps_get(&c, "server-option", &v), 0);
	CHECK(v.p == NULL);
	CHECK(!pw_v2_caps_has(&c, "ls-ref"));
	CHECK(!pw_v2_caps_has(&c, "object"));
	CHECK(pw_v2_caps_has_feature(&c, "fetch", "shallow"));
	CHECK(pw_v2_caps_has_feature(&c, "fetch", "wait-for-done"));
	CHECK(!pw_v2_caps_has_feature(&c, "fetch", "filter"));
	CHECK(!pw_v2_caps_has_feature(&c, "fetch", "wait"));
	CHECK(!pw_v2_caps_has_feature(&c, "server-option", "x"));
	CHECK(pw_v2_caps_has_feature(&c, "ls-refs", "unborn"));

	/* the builder produces the same bytes */
	CHECK_EQ_INT(pw_v2_adv_write(&b, lines, 6), 0);
	CHECK_EQ_INT(b.len, sizeof(adv) - 1 - 20);
	CHECK(!memcmp(b.data, adv, b.len));
	pw_buf_free(&b);
	pw_v2_caps_free(&c);

	/* every truncation asks for more */
	for (cut = 0; cut < sizeof(adv) - 1 - 20; cut++) {
		pw_v2_caps_init(&c);
		CHECK_EQ_INT(pw_v2_caps_parse(&c, (const uint8_t *)adv, cut, &used, &err),
		             PW_EMORE);
		pw_v2_caps_free(&c);
	}
}

static void v2_caps_bad(const char *in, int code, const char *msg)
{
	struct pw_v2_caps c;
	struct pw_error err = {0};
	size_t used;

	pw_v2_caps_init(&c);
	CHECK_EQ_INT(pw_v2_caps_parse(&c, (const uint8_t *)in, strlen(in), &used, &err), code);
	if (msg)
		CHECK_STR(err.msg, msg);
	pw_v2_caps_free(&c);
}

static void test_v2_caps_bad(void)
{
	struct pw_buf b = PW_BUF_INIT;
	int i;

	v2_caps_bad("0000", PW_EPROTO, "protocol error: expected 'version 2', got '0000'");
	v2_caps_bad("000dversion 1", PW_EPROTO,
	            "protocol error: expected 'version 2', got 'version 1'");
	v2_caps_bad("000fversion 2x\n", PW_EPROTO, NULL);
	v2_caps_bad("000eversion 2\n0001", PW_EPROTO,
	            "protocol error: unexpected delim packet in capability advertisement");
	v2_caps_bad("000eversion 2\n0002", PW_EPROTO, NULL);
	v2_caps_bad("000eversion 2\n0004", PW_EPROTO,
	            "protocol error: empty line in capability advertisement");
	v2_caps_bad("000eversion 2\n0003", PW_EPROTO, "protocol error: bad line length 3");
	/* without LF is fine */
	v2_caps_bad("000dversion 20009agent0000", 0, NULL);

	pw_pkt_writes(&b, "version 2");
	for (i = 0; i <= PW_V2_CAPS_MAX; i++)
		pw_pkt_writes(&b, "x");
	pw_pkt_flush(&b);
	v2_caps_bad(b.data, PW_ETOOBIG,
	            "protocol error: capability advertisement longer than 1024 lines");
	pw_buf_free(&b);
}

static void test_object_format_server(const struct pw_hash_algo *server)
{
	const struct pw_hash_algo *other =
	        server == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;
	const struct pw_hash_algo *client = NULL;
	struct pw_error err = {0};
	struct pw_str v;
	char want[128];

	v.p = server->name;
	v.len = strlen(server->name);
	CHECK_EQ_INT(pw_object_format_server_check(server, &v, &client, &err), 0);
	CHECK(client == server);

	v.p = other->name;
	v.len = strlen(other->name);
	CHECK_EQ_INT(pw_object_format_server_check(server, &v, &client, &err), PW_EMISMATCH);
	snprintf(want, sizeof(want), "mismatched object format: server %s; client %s", server->name,
	         other->name);
	CHECK_STR(err.msg, want);

	/* absent means sha1 */
	client = NULL;
	if (server == &pw_hash_sha1) {
		CHECK_EQ_INT(pw_object_format_server_check(server, NULL, &client, &err), 0);
		CHECK(client == &pw_hash_sha1);
	} else {
		CHECK_EQ_INT(pw_object_format_server_check(server, NULL, &client, &err),
		             PW_EMISMATCH);
		CHECK_STR(err.msg, "mismatched object format: server sha256; client sha1");
	}

	v.p = "sha3";
	v.len = 4;
	CHECK_EQ_INT(pw_object_format_server_check(server, &v, &client, &err), PW_EPROTO);
	CHECK_STR(err.msg, "unknown object format 'sha3'");
	v.p = "sha1x";
	v.len = 5;
	CHECK_EQ_INT(pw_object_format_server_check(server, &v, &client, &err), PW_EPROTO);
	CHECK_STR(err.msg, "unknown object format 'sha1x'");
	v.p = "sha256";
	v.len = 3; /* the view's length counts, not the NUL */
	CHECK_EQ_INT(pw_object_format_server_check(server, &v, &client, &err), PW_EPROTO);
	CHECK_STR(err.msg, "unknown object format 'sha'");
	v.p = NULL; /* "object-format" without a value */
	v.len = 0;
	CHECK_EQ_INT(pw_object_format_server_check(server, &v, &client, &err), PW_EPROTO);
	CHECK_STR(err.msg, "unknown object format ''");
	v.p = "sh\x01";
	v.len = 3;
	CHECK_EQ_INT(pw_object_format_server_check(server, &v, &client, &err), PW_EPROTO);
	CHECK_STR(err.msg, "unknown object format 'sh\\x01'");
}

static void test_object_format_v0(void)
{
	const struct pw_hash_algo *a = NULL;
	struct pw_error err = {0};
	size_t n = strlen(v0caps);

	CHECK_EQ_INT(pw_object_format_from_caps(v0caps, n, &a, &err), 0);
	CHECK(a == &pw_hash_sha256);
	CHECK_EQ_INT(pw_object_format_from_caps("ofs-delta agent=x", 17, &a, &err), 0);
	CHECK(a == &pw_hash_sha1);
	CHECK_EQ_INT(pw_object_format_from_caps("object-format=md5", 17, &a, &err), PW_EPROTO);
	CHECK_STR(err.msg, "unknown object format 'md5'");
	CHECK_EQ_INT(pw_object_format_from_caps("object-formatx=sha256", 21, &a, &err), 0);
	CHECK(a == &pw_hash_sha1);

	CHECK(pw_object_format_caps_supports(v0caps, n, &pw_hash_sha1));
	CHECK(pw_object_format_caps_supports(v0caps, n, &pw_hash_sha256));
	CHECK(pw_object_format_caps_supports("a b", 3, &pw_hash_sha1));
	CHECK(!pw_object_format_caps_supports("a b", 3, &pw_hash_sha256));
	CHECK(!pw_object_format_caps_supports("object-format=sha256", 20, &pw_hash_sha1));
	CHECK(!pw_object_format_caps_supports("object-format=sha2567", 21, &pw_hash_sha256));
}

static void test_object_format_client(const struct pw_hash_algo *local)
{
	const struct pw_hash_algo *other = local == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;
	struct pw_error err = {0};
	struct pw_str v;
	char want[128];

	v.p = local->name;
	v.len = strlen(local->name);
	CHECK_EQ_INT(pw_object_format_client_check(local, &v, &err), 0);
	v.p = other->name;
	v.len = strlen(other->name);
	CHECK_EQ_INT(pw_object_format_client_check(local, &v, &err), PW_EMISMATCH);
	snprintf(want, sizeof(want), "mismatched algorithms: client %s; server %s", local->name,
	         other->name);
	CHECK_STR(err.msg, want);
	v.p = "blake3";
	v.len = 6;
	CHECK_EQ_INT(pw_object_format_client_check(local, &v, &err), PW_EMISMATCH);
	if (local == &pw_hash_sha1) {
		CHECK_EQ_INT(pw_object_format_client_check(local, NULL, &err), 0);
	} else {
		CHECK_EQ_INT(pw_object_format_client_check(local, NULL, &err), PW_EUNSUPPORTED);
		CHECK_STR(err.msg, "the server does not support algorithm 'sha256'");
	}
}

int main(void)
{
	size_t i;

	test_v0_get();
	test_v0_iter();
	test_v0_build();
	test_v2_caps();
	test_v2_caps_bad();
	test_object_format_v0();
	for (i = 0; i < 2; i++) {
		test_object_format_server(algos[i]);
		test_object_format_client(algos[i]);
	}
	return pw_test_done();
}
