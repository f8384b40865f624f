/* The bounded JSON reader and the etcd answer decoders: valid answers,
 * malformed and hostile ones (truncation, bad escapes, depth and node
 * bounds, bad base64, wrong types). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cluster/etcd.h"
#include "test.h"
#include "util/json.h"

static int parse(struct pw_json *j, const char *s)
{
	struct pw_error e;

	return pw_json_parse(j, s, strlen(s), &e);
}

static void test_valid(void)
{
	struct pw_json j;
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error e;
	int64_t v;
	int n;

	pw_json_init(&j);
	CHECK_EQ_INT(parse(&j, " {\"a\": [1, -2.5e3, true, false, null], "
	                       "\"b\":\"x\\u00e9\\ud83d\\ude00\\n\","
	                       "\"c\":\"-9223372036854775808\", \"k\\u0065y\": {}} "),
	             0);
	CHECK_EQ_INT(pw_json_type(&j, 0), PW_JSON_OBJECT);
	n = pw_json_get(&j, 0, "a");
	CHECK_EQ_INT(pw_json_type(&j, n), PW_JSON_ARRAY);
	CHECK(!pw_json_int(&j, j.nodes[n].child, &v, &e) && v == 1);
	CHECK(pw_json_int(&j, j.nodes[j.nodes[n].child].next, &v, &e) == PW_EINVAL);
	CHECK(!pw_json_string(&j, pw_json_get(&j, 0, "b"), &b, &e));
	CHECK_STR(b.data, "x\xc3\xa9\xf0\x9f\x98\x80\n");
	CHECK(!pw_json_int(&j, pw_json_get(&j, 0, "c"), &v, &e) && v == INT64_MIN);
	CHECK_EQ_INT(pw_json_type(&j, pw_json_get(&j, 0, "key")), PW_JSON_OBJECT);
	CHECK_EQ_INT(pw_json_get(&j, 0, "nope"), -1);
	CHECK_EQ_INT(pw_json_get(&j, n, "a"), -1); /* not an object */
	pw_buf_reset(&b);
	CHECK(parse(&j, "\"aGVsbG8=\"") == 0 && !pw_json_base64(&j, 0, &b, &e));
	CHECK_STR(b.data, "hello");
	pw_buf_reset(&b);
	CHECK(pw_json_add_base64(&b, "hello", 5) == 0);
	CHECK_STR(b.data, "\"aGVsbG8=\"");
	pw_buf_reset(&b);
	CHECK(pw_json_add_string(&b, "a\"\\\x01", 4) == 0);
	CHECK_STR(b.data, "\"a\\\"\\\\\\u0001\"");
	pw_buf_free(&b);
	pw_json_free(&j);
}

static void test_malformed(void)
{
	static const char *const bad[] = {
	        "",
	        " ",
	        "{",
	        "[",
	        "[1,]",
	        "{\"a\"}",
	        "{\"a\":}",
	        "{\"a\":1,}",
	        "{a:1}",
	        "\"abc",
	        "\"a\\x\"",
	        "\"a\\u12\"",
	        "\"a\\u12g4\"",
	        "\"\x01\"",
	        "01",
	        "-",
	        "1.",
	        "1e",
	        "1e+",
	        "tru",
	        "nul",
	        "[1 2]",
	        "{} {}",
	        "[\"a\"",
	        "\"\\",
	        "{\"a\":1 \"b\":2}",
	        "]",
	        "+1",
	        ".5",
	        "[1]x",
	};
	struct pw_json j;
	struct pw_error e;
	size_t i;

	pw_json_init(&j);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = pw_json_parse(&j, bad[i], strlen(bad[i]), &e);
		if (rc != PW_EINVAL)
			fprintf(stderr, "accepted: %s\n", bad[i]);
		CHECK_EQ_INT(rc, PW_EINVAL);
		CHECK(strstr(e.msg, "malformed JSON") != NULL);
	}
	/* truncations of a valid answer never pass, never crash */
	{
		const char *ok = "{\"header\":{\"revision\":\"5\"},\"kvs\":[{\"key\":\"YQ==\"}]}";
		size_t n;

		for (n = 0; n < strlen(ok); n++)
			CHECK(pw_json_parse(&j, ok, n, &e) < 0);
		CHECK_EQ_INT(pw_json_parse(&j, ok, strlen(ok), &e), 0);
	}
	pw_json_free(&j);
}

static void test_bounds(void)
{
	struct pw_json j;
	struct pw_error e;
	char deep[200];
	struct pw_buf b = PW_BUF_INIT;
	int64_t v;

	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	pw_json_init(&j);
	CHECK_EQ_INT(pw_json_parse(&j, deep, 200, &e), PW_ETOOBIG);
	CHECK(strstr(e.msg, "nested deeper") != NULL);
	j.max_depth = 128;
	CHECK_EQ_INT(pw_json_parse(&j, deep, 200, &e), 0);
	j.max_nodes = 3;
	CHECK_EQ_INT(parse(&j, "[1,2,3]"), PW_ETOOBIG);
	CHECK_EQ_INT(parse(&j, "[1,2]"), 0);
	j.max_nodes = 0;
	CHECK(parse(&j, "\"9223372036854775808\"") == 0 && pw_json_int(&j, 0, &v, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"12a\"") == 0 && pw_json_int(&j, 0, &v, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"\"") == 0 && pw_json_int(&j, 0, &v, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"\\ud800\"") == 0 && pw_json_string(&j, 0, &b, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"\\udc00\"") == 0 && pw_json_string(&j, 0, &b, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"\\ud800\\u0041\"") == 0 && pw_json_string(&j, 0, &b, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"YQ=\"") == 0 && pw_json_base64(&j, 0, &b, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"Y===\"") == 0 && pw_json_base64(&j, 0, &b, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"YQ==YQ==\"") == 0 && pw_json_base64(&j, 0, &b, &e) == PW_EINVAL);
	CHECK(parse(&j, "\"Y*==\"") == 0 && pw_json_base64(&j, 0, &b, &e) == PW_EINVAL);
	CHECK(parse(&j, "1") == 0 && pw_json_base64(&j, 0, &b, &e) == PW_EINVAL);
	b.max = 2;
	pw_buf_reset(&b);
	CHECK(parse(&j, "\"aGVsbG8=\"") == 0 && pw_json_base64(&j, 0, &b, &e) == PW_ETOOBIG);
	pw_buf_free(&b);
	pw_json_free(&j);
}

static void test_etcd_answers(void)
{
	struct pw_etcd_range r;
	struct pw_etcd_group g[2];
	struct pw_error e;
	int64_t rev = 0;
	const char *ok =
	        "{\"header\":{\"cluster_id\":\"1\",\"revision\":\"7\"},\"kvs\":[{\"key\":\"L2E=\","
	        "\"create_revision\":\"2\",\"mod_revision\":\"6\",\"version\":\"3\","
	        "\"value\":\"eA==\"},{\"key\":\"L2I=\"}],\"count\":\"2\"}";

	CHECK_EQ_INT(pw_etcd_parse_range(ok, strlen(ok), &r, &e), 0);
	CHECK_EQ_INT(r.revision, 7);
	CHECK_EQ_INT(r.nr, 2);
	CHECK(r.nr == 2 && !strcmp(r.kvs[0].key, "/a") && !strcmp(r.kvs[0].value, "x") &&
	      r.kvs[0].mod_revision == 6 && !strcmp(r.kvs[1].value, ""));
	pw_etcd_range_free(&r);
	CHECK_EQ_INT(pw_etcd_parse_range("{\"header\":{}}", 13, &r, &e), 0);
	CHECK_EQ_INT(r.nr, 0);
	pw_etcd_range_free(&r);
	CHECK(pw_etcd_parse_range("[]", 2, &r, &e) == PW_EPROTO);
	CHECK(pw_etcd_parse_range("{}", 2, &r, &e) == PW_EPROTO);
	CHECK(pw_etcd_parse_range("{\"header\":{},\"kvs\":{}}", 22, &r, &e) == PW_EPROTO);
	CHECK(pw_etcd_parse_range("{\"header\":{},\"kvs\":[1]}", 23, &r, &e) == PW_EPROTO);
	{
		const char *badkey = "{\"header\":{},\"kvs\":[{\"key\":\"L2E\"}]}";
		const char *badrev =
		        "{\"header\":{},\"kvs\":[{\"key\":\"L2E=\",\"mod_revision\":true}]}";

		CHECK(pw_etcd_parse_range(badkey, strlen(badkey), &r, &e) == PW_EINVAL);
		CHECK(pw_etcd_parse_range(badrev, strlen(badrev), &r, &e) == PW_EINVAL);
		CHECK(strstr(e.msg, "mod_revision") != NULL);
	}
	memset(g, 0, sizeof(g));
	CHECK_EQ_INT(pw_etcd_parse_txn("{\"header\":{\"revision\":\"9\"},\"succeeded\":true}", 44,
	                               g, 1, &rev, &e),
	             0);
	CHECK(g[0].succeeded == 1 && rev == 9);
	CHECK_EQ_INT(pw_etcd_parse_txn("{\"header\":{\"revision\":\"9\"}}", 27, g, 1, &rev, &e), 0);
	CHECK(g[0].succeeded == 0);
	{
		const char *two =
		        "{\"header\":{\"revision\":\"3\"},\"succeeded\":true,\"responses\":["
		        "{\"response_txn\":{\"header\":{},\"succeeded\":true}},"
		        "{\"response_txn\":{\"header\":{}}}]}";
		const char *one = "{\"header\":{\"revision\":\"3\"},\"responses\":["
		                  "{\"response_txn\":{\"succeeded\":true}}]}";
		const char *put = "{\"header\":{\"revision\":\"3\"},\"responses\":["
		                  "{\"response_put\":{}},{\"response_txn\":{}}]}";

		CHECK_EQ_INT(pw_etcd_parse_txn(two, strlen(two), g, 2, &rev, &e), 0);
		CHECK(g[0].succeeded == 1 && g[1].succeeded == 0);
		/* a lying answer (too few, wrong kind) succeeds nothing */
		CHECK_EQ_INT(pw_etcd_parse_txn(one, strlen(one), g, 2, &rev, &e), PW_EPROTO);
		CHECK(g[0].succeeded == 0 && g[1].succeeded == 0);
		CHECK_EQ_INT(pw_etcd_parse_txn(put, strlen(put), g, 2, &rev, &e), PW_EPROTO);
		CHECK_EQ_INT(pw_etcd_parse_txn(two, strlen(two), g, 1, &rev, &e), 0);
	}
}

int main(void)
{
	test_valid();
	test_malformed();
	test_bounds();
	test_etcd_answers();
	return pw_test_done();
}
