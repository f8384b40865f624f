/* v2 command requests (structure, errors, object-format) and fetch argument
 * lines v0 and v2 for both algorithms, filter specs. */
#include <stdlib.h>

#include "packwire/proto.h"
#include "test.h"

static const struct pw_hash_algo *algos[] = {&pw_hash_sha1, &pw_hash_sha256};

/* Build a request from lines; "0000", "0001", "0002" stand for control packets. */
static void build(struct pw_buf *b, const char *const *lines)
{
	pw_buf_reset(b);
	for (; *lines; lines++) {
		if (!strcmp(*lines, "0000"))
			pw_pkt_flush(b);
		else if (!strcmp(*lines, "0001"))
			pw_pkt_delim(b);
		else if (!strcmp(*lines, "0002"))
			pw_pkt_response_end(b);
		else
			pw_pkt_writef(b, "%s\n", *lines);
	}
}

static int parse(struct pw_v2_request *req, const char *const *lines, struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	size_t used;
	int rc;

	build(&b, lines);
	pw_v2_request_init(req);
	rc = pw_v2_request_parse(req, (const uint8_t *)b.data, b.len, &used, err);
	if (!rc && used != b.len)
		rc = 99;
	pw_buf_free(&b);
	return rc;
}

static int sv_is(struct pw_str v, const char *s)
{
	return v.len == strlen(s) && !memcmp(v.p, s, v.len);
}

static void test_request_ok(void)
{
	/* what git 2.39 sends for ls-remote with protocol v2 */
	static const char *const ls[] = {
	        "command=ls-refs", "agent=git/2.39.5", "object-format=sha256", "0001", "peel",
	        "symrefs",         "unborn",           "ref-prefix HEAD",      "0000", NULL};
	static const char *const nodelim[] = {"command=ls-refs", "0000", NULL};
	static const char *const opts[] = {"server-option=hello",
	                                   "command=fetch",
	                                   "server-option=world",
	                                   "0001",
	                                   "0000",
	                                   NULL};
	static const char *const empty[] = {"0000", NULL};
	static const char *const cmds[] = {"ls-refs", "fetch", NULL};
	static const char *const caps[] = {"agent", "object-format", "server-option", NULL};
	struct pw_v2_request req;
	struct pw_error err = {0};
	struct pw_str v;

	CHECK_EQ_INT(parse(&req, ls, &err), 0);
	CHECK(sv_is(req.command, "ls-refs"));
	CHECK_EQ_INT(req.ncaps, 2);
	CHECK(sv_is(req.caps[0], "agent=git/2.39.5"));
	CHECK_EQ_INT(req.nargs, 4);
	CHECK(sv_is(req.args[0], "peel"));
	CHECK(sv_is(req.args[3], "ref-prefix HEAD"));
	CHECK_EQ_INT(req.empty, 0);
	CHECK_EQ_INT(pw_v2_request_cap(&req, "object-format", &v), 0);
	CHECK(sv_is(v, "sha256"));
	CHECK_EQ_INT(pw_v2_request_cap(&req, "object", &v), PW_ENOTFOUND);
	CHECK_EQ_INT(pw_v2_request_check(&req, cmds, caps, &err), 0);
	CHECK_EQ_INT(pw_v2_request_object_format(&req, &pw_hash_sha256, NULL, &err), 0);
	CHECK_EQ_INT(pw_v2_request_object_format(&req, &pw_hash_sha1, NULL, &err), PW_EMISMATCH);
	CHECK_STR(err.msg, "mismatched object format: server sha1; client sha256");
	pw_v2_request_free(&req);

	CHECK_EQ_INT(parse(&req, nodelim, &err), 0);
	CHECK(sv_is(req.command, "ls-refs"));
	CHECK_EQ_INT(req.ncaps + req.nargs, 0);
	/* no object-format: sha1 */
	CHECK_EQ_INT(pw_v2_request_object_format(&req, &pw_hash_sha1, NULL, &err), 0);
	CHECK_EQ_INT(pw_v2_request_object_format(&req, &pw_hash_sha256, NULL, &err), PW_EMISMATCH);
	CHECK_STR(err.msg, "mismatched object format: server sha256; client sha1");
	pw_v2_request_free(&req);

	CHECK_EQ_INT(parse(&req, opts, &err), 0);
	CHECK(sv_is(req.command, "fetch"));
	CHECK_EQ_INT(req.ncaps, 2);
	CHECK(sv_is(req.caps[1], "server-option=world"));
	CHECK_EQ_INT(req.nargs, 0);
	CHECK_EQ_INT(pw_v2_request_check(&req, cmds, caps, &err), 0);
	pw_v2_request_free(&req);

	CHECK_EQ_INT(parse(&req, empty, &err), 0);
	CHECK_EQ_INT(req.empty, 1);
	CHECK_EQ_INT(pw_v2_request_check(&req, cmds, caps, &err), 0);
	pw_v2_request_free(&req);
}

static void request_bad(const char *const *lines, int code, const char *msg)
{
	struct pw_v2_request req;
	struct pw_error err = {0};

	CHECK_EQ_INT(parse(&req, lines, &err), code);
	if (msg)
		CHECK_STR(err.msg, msg);
	pw_v2_request_free(&req);
}

static void test_request_bad(void)
{
	static const char *const nocmd[] = {"agent=git/test", "0000", NULL};
	static const char *const nocmd2[] = {"agent=git/test", "0001", "peel", "0000", NULL};
	static const char *const dup[] = {"command=ls-refs", "command=fetch", "0000", NULL};
	static const char *const emptycmd[] = {"command=", "0000", NULL};
	static const char *const delim2[] = {
	        "command=ls-refs", "0001", "peel", "0001", "0000", NULL};
	static const char *const delim2f[] = {"command=fetch", "0001", "0001", "0000", NULL};
	static const char *const rend[] = {"command=fetch", "0002", NULL};
	static const char *const rend2[] = {"command=fetch", "0001", "done", "0002", NULL};
	static const char *const emptycap[] = {"command=fetch", "", "0000", NULL};
	static const char *const trunc[] = {"command=fetch", "0001", "done", NULL};
	static const char *const badpkt[] = {"command=fetch", NULL};
	static const char *const cmds[] = {"ls-refs", "fetch", NULL};
	static const char *const caps[] = {"agent", "object-format", "server-option", NULL};
	struct pw_v2_request req;
	struct pw_error err = {0};
	struct pw_buf b = PW_BUF_INIT;
	size_t used;
	int i;

	request_bad(nocmd, PW_EPROTO, "no command requested");
	request_bad(nocmd2, PW_EPROTO, "no command requested");
	request_bad(dup, PW_EPROTO,
	            "command 'fetch' requested after already requesting command 'ls-refs'");
	request_bad(emptycmd, PW_EPROTO, "invalid command ''");
	/* t5704: an extra delim is a protocol error */
	request_bad(delim2, PW_EPROTO, "expected flush after ls-refs arguments");
	request_bad(delim2f, PW_EPROTO, "expected flush after fetch arguments");
	request_bad(rend, PW_EPROTO, "protocol error: unexpected response-end packet");
	request_bad(rend2, PW_EPROTO, "protocol error: unexpected response-end packet");
	request_bad(emptycap, PW_EPROTO, "protocol error: empty capability line");
	request_bad(trunc, PW_EMORE, NULL);
	request_bad(badpkt, PW_EMORE, NULL);

	/* a malformed packet inside the request */
	pw_v2_request_init(&req);
	CHECK_EQ_INT(pw_v2_request_parse(&req, (const uint8_t *)"0012command=fetch\n00z0", 22,
	                                 &used, &err),
	             PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: bad line length character: '00z0'");
	pw_v2_request_free(&req);

	/* unknown command / capability against what the server offers */
	{
		static const char *const unkcmd[] = {"command=push", "0000", NULL};
		static const char *const unkcap[] = {"command=fetch", "foo=bar", "0000", NULL};
		static const char *const prefix[] = {"command=fetch", "agentx=1", "0000", NULL};

		CHECK_EQ_INT(parse(&req, unkcmd, &err), 0);
		CHECK_EQ_INT(pw_v2_request_check(&req, cmds, caps, &err), PW_EPROTO);
		CHECK_STR(err.msg, "invalid command 'push'");
		pw_v2_request_free(&req);
		CHECK_EQ_INT(parse(&req, unkcap, &err), 0);
		CHECK_EQ_INT(pw_v2_request_check(&req, cmds, caps, &err), PW_EPROTO);
		CHECK_STR(err.msg, "unknown capability 'foo=bar'");
		pw_v2_request_free(&req);
		CHECK_EQ_INT(parse(&req, prefix, &err), 0);
		CHECK_EQ_INT(pw_v2_request_check(&req, cmds, caps, &err), PW_EPROTO);
		pw_v2_request_free(&req);
	}

	/* object-format errors with the exact messages */
	{
		static const char *const unk[] = {"command=fetch", "object-format=sha3", "0000",
		                                  NULL};
		static const char *const two[] = {"command=fetch", "object-format=sha1",
		                                  "object-format=sha256", "0000", NULL};

		CHECK_EQ_INT(parse(&req, unk, &err), 0);
		CHECK_EQ_INT(pw_v2_request_object_format(&req, &pw_hash_sha1, NULL, &err),
		             PW_EPROTO);
		CHECK_STR(err.msg, "unknown object format 'sha3'");
		pw_v2_request_free(&req);
		CHECK_EQ_INT(parse(&req, two, &err), 0); /* the first one counts */
		CHECK_EQ_INT(pw_v2_request_object_format(&req, &pw_hash_sha1, NULL, &err), 0);
		pw_v2_request_free(&req);
	}

	/* oversized: byte bound and the default line bound */
	pw_v2_request_init(&req);
	req.max_bytes = 1000;
	pw_pkt_writes(&b, "command=fetch");
	pw_pkt_delim(&b);
	for (i = 0; i < 100; i++)
		pw_pkt_writes(&b, "have 0123456789012345678901234567890123456789");
	pw_pkt_flush(&b);
	CHECK_EQ_INT(pw_v2_request_parse(&req, (const uint8_t *)b.data, b.len, &used, &err),
	             PW_ETOOBIG);
	CHECK_STR(err.msg, "protocol error: request too large");
	pw_v2_request_free(&req);
	pw_v2_request_init(&req); /* default bound is generous */
	CHECK_EQ_INT(pw_v2_request_parse(&req, (const uint8_t *)b.data, b.len, &used, &err), 0);
	CHECK_EQ_INT(req.nargs, 100);
	pw_v2_request_free(&req);
	pw_buf_free(&b);
}

/* Feeding packets one by one, as a server reading a socket would. */
static void test_request_feed(void)
{
	struct pw_v2_request req;
	struct pw_error err = {0};
	struct pw_pkt pkt = {PW_PKT_DATA, NULL, 0};
	char line[32];

	pw_v2_request_init(&req);
	strcpy(line, "command=fetch\n");
	pkt.data = line;
	pkt.len = strlen(line);
	CHECK_EQ_INT(pw_v2_request_feed(&req, &pkt, &err), PW_EMORE);
	strcpy(line, "agent=x"); /* reusing the buffer: the request copied it */
	pkt.len = strlen(line);
	CHECK_EQ_INT(pw_v2_request_feed(&req, &pkt, &err), PW_EMORE);
	pkt.kind = PW_PKT_DELIM;
	CHECK_EQ_INT(pw_v2_request_feed(&req, &pkt, &err), PW_EMORE);
	pkt.kind = PW_PKT_DATA;
	strcpy(line, "done\n");
	pkt.len = strlen(line);
	CHECK_EQ_INT(pw_v2_request_feed(&req, &pkt, &err), PW_EMORE);
	pkt.kind = PW_PKT_FLUSH;
	CHECK_EQ_INT(pw_v2_request_feed(&req, &pkt, &err), 0);
	CHECK(sv_is(req.command, "fetch"));
	CHECK(sv_is(req.caps[0], "agent=x"));
	CHECK(sv_is(req.args[0], "done"));
	CHECK_EQ_INT(pw_v2_request_feed(&req, &pkt, &err), PW_EINVAL);
	pw_v2_request_free(&req);

	pw_v2_request_init(&req);
	pkt.kind = PW_PKT_EOF;
	CHECK_EQ_INT(pw_v2_request_feed(&req, &pkt, &err), PW_EPROTO);
	pw_v2_request_free(&req);
}

/* ---- fetch arguments ------------------------------------------------------ */

static void hexid(const struct pw_hash_algo *algo, int seed, char *out)
{
	size_t i;

	for (i = 0; i < algo->hexsz; i++)
		out[i] = "0123456789abcdef"[(seed * 7 + (int)i) & 15];
	out[algo->hexsz] = '\0';
}

static int v2(struct pw_fetch_args *a, const char *line, struct pw_error *err)
{
	return pw_fetch_args_v2_line(a, line, strlen(line), err);
}

static void test_fetch_v2(const struct pw_hash_algo *algo)
{
	const struct pw_hash_algo *other = algo == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;
	struct pw_fetch_args a;
	struct pw_error err = {0};
	char id[PW_MAX_HEXSZ + 1], id2[PW_MAX_HEXSZ + 1], line[256], want[512],
	        back[PW_MAX_HEXSZ + 1];

	hexid(algo, 1, id);
	hexid(algo, 2, id2);
	pw_fetch_args_init(&a, algo);
	snprintf(line, sizeof(line), "want %s\n", id);
	CHECK_EQ_INT(v2(&a, line, &err), 0);
	snprintf(line, sizeof(line), "want %s", id2);
	CHECK_EQ_INT(v2(&a, line, &err), 0);
	snprintf(line, sizeof(line), "have %s", id2);
	CHECK_EQ_INT(v2(&a, line, &err), 0);
	snprintf(line, sizeof(line), "shallow %s", id);
	CHECK_EQ_INT(v2(&a, line, &err), 0);
	CHECK_EQ_INT(v2(&a, "want-ref refs/heads/main", &err), 0);
	CHECK_EQ_INT(v2(&a, "thin-pack", &err), 0);
	CHECK_EQ_INT(v2(&a, "ofs-delta\n", &err), 0);
	CHECK_EQ_INT(v2(&a, "no-progress", &err), 0);
	CHECK_EQ_INT(v2(&a, "include-tag", &err), 0);
	CHECK_EQ_INT(v2(&a, "deepen-relative", &err), 0);
	CHECK_EQ_INT(v2(&a, "sideband-all", &err), 0);
	CHECK_EQ_INT(v2(&a, "wait-for-done", &err), 0);
	CHECK_EQ_INT(v2(&a, "packfile-uris https,http", &err), 0);
	CHECK_EQ_INT(v2(&a, "deepen 3", &err), 0);
	CHECK_EQ_INT(v2(&a, "filter blob:limit=2k", &err), 0);
	CHECK_EQ_INT(v2(&a, "done", &err), 0);
	CHECK_EQ_INT(pw_fetch_args_check(&a, &err), 0);

	CHECK_EQ_INT(a.wants.nr, 2);
	CHECK_STR(pw_oid_to_hex(&a.wants.v[0], back), id);
	CHECK_EQ_INT(a.wants.v[0].algo, algo->id);
	CHECK_STR(pw_oid_to_hex(&a.wants.v[1], back), id2);
	CHECK_EQ_INT(a.haves.nr, 1);
	CHECK_EQ_INT(a.shallows.nr, 1);
	CHECK_EQ_INT(a.want_refs.nr, 1);
	CHECK_STR(a.want_refs.v[0], "refs/heads/main");
	CHECK(a.thin_pack && a.ofs_delta && a.no_progress && a.include_tag && a.deepen_relative &&
	      a.sideband_all && a.wait_for_done && a.packfile_uris && a.done);
	CHECK_EQ_INT(a.depth, 3);
	CHECK_EQ_INT(a.filter.kind, PW_FILTER_BLOB_LIMIT);
	CHECK_EQ_INT(a.filter.value, 2048);

	/* malformed ids: short, long, non-hex, the other algorithm's length */
	snprintf(line, sizeof(line), "want %.*s", (int)algo->hexsz - 1, id);
	CHECK_EQ_INT(v2(&a, line, &err), PW_EPROTO);
	snprintf(want, sizeof(want), "protocol error: expected 'want <%s id>', got '%s'",
	         algo->name, line);
	CHECK_STR(err.msg, want);
	snprintf(line, sizeof(line), "want %s0", id);
	CHECK_EQ_INT(v2(&a, line, &err), PW_EPROTO);
	snprintf(line, sizeof(line), "want %s extra", id);
	CHECK_EQ_INT(v2(&a, line, &err), PW_EPROTO); /* no capabilities in v2 */
	hexid(other, 3, line + 5);
	memcpy(line, "have ", 5);
	CHECK_EQ_INT(v2(&a, line, &err), PW_EPROTO);
	snprintf(want, sizeof(want), "protocol error: expected 'have <%s id>', got '%s'",
	         algo->name, line);
	CHECK_STR(err.msg, want);
	snprintf(line, sizeof(line), "have %s", id);
	line[7] = 'g';
	CHECK_EQ_INT(v2(&a, line, &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "have", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "want ", &err), PW_EPROTO);
	snprintf(line, sizeof(line), "want  %s", id);
	CHECK_EQ_INT(v2(&a, line, &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "shallow 1234", &err), PW_EPROTO);
	snprintf(want, sizeof(want),
	         "protocol error: expected 'shallow <%s id>', got 'shallow 1234'", algo->name);
	CHECK_STR(err.msg, want);
	CHECK_EQ_INT(v2(&a, "shallow", &err), PW_EPROTO);
	CHECK_EQ_INT(a.wants.nr, 2); /* nothing was added by the failures */
	CHECK_EQ_INT(a.haves.nr, 1);

	/* other malformed lines */
	CHECK_EQ_INT(v2(&a, "this-is-not-a-command", &err), PW_EPROTO);
	CHECK_STR(err.msg, "unexpected line: 'this-is-not-a-command'");
	CHECK_EQ_INT(v2(&a, "thin-packx", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "thin-pack ", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "", &err), PW_EPROTO);
	CHECK_STR(err.msg, "unexpected line: ''");
	CHECK_EQ_INT(v2(&a, "deepen 0", &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: invalid deepen: 'deepen 0'");
	CHECK_EQ_INT(v2(&a, "deepen -1", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "deepen 1x", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "deepen 2147483648", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "deepen 2147483647", &err), 0); /* --unshallow's "infinite" */
	CHECK_EQ_INT(v2(&a, "deepen-since 0", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "deepen-since 99999999999999999999", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "want-ref ", &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: invalid want-ref: 'want-ref '");
	CHECK_EQ_INT(v2(&a, "want-ref a b", &err), PW_EPROTO);
	CHECK_EQ_INT(v2(&a, "filter blob:none", &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: multiple filter-specs cannot be combined");
	pw_fetch_args_free(&a);

	/* deepen with deepen-since / deepen-not */
	pw_fetch_args_init(&a, algo);
	CHECK_EQ_INT(v2(&a, "deepen-since 1700000000", &err), 0);
	CHECK_EQ_INT(v2(&a, "deepen-not refs/tags/v1", &err), 0);
	CHECK_EQ_INT(a.deepen_since, 1700000000);
	CHECK_STR(a.deepen_not.v[0], "refs/tags/v1");
	CHECK_EQ_INT(pw_fetch_args_check(&a, &err), 0);
	CHECK_EQ_INT(v2(&a, "deepen 1", &err), 0);
	CHECK_EQ_INT(pw_fetch_args_check(&a, &err), PW_EPROTO);
	CHECK_STR(err.msg, "protocol error: deepen and deepen-since (or deepen-not) cannot be used "
	                   "together");
	pw_fetch_args_free(&a);
	CHECK(a.algo == algo);
}

static void test_fetch_v2_request(const struct pw_hash_algo *algo)
{
	char id[PW_MAX_HEXSZ + 1], w[PW_MAX_HEXSZ + 8], of[32];
	const char *lines[] = {"command=fetch",
	                       "agent=git/2.39.5",
	                       of,
	                       "0001",
	                       "thin-pack",
	                       "ofs-delta",
	                       w,
	                       w,
	                       "done",
	                       "0000",
	                       NULL};
	const char *bad[] = {"command=fetch", of, "0001", "want x", "0000", NULL};
	struct pw_v2_request req;
	struct pw_fetch_args a;
	struct pw_error err = {0};
	const struct pw_hash_algo *client;

	hexid(algo, 5, id);
	snprintf(w, sizeof(w), "want %s", id);
	snprintf(of, sizeof(of), "object-format=%s", algo->name);
	CHECK_EQ_INT(parse(&req, lines, &err), 0);
	CHECK_EQ_INT(pw_v2_request_object_format(&req, algo, &client, &err), 0);
	CHECK(client == algo);
	pw_fetch_args_init(&a, client);
	CHECK_EQ_INT(pw_fetch_args_v2_request(&a, &req, &err), 0);
	CHECK_EQ_INT(a.wants.nr, 2); /* git sends duplicates; kept as sent */
	CHECK(a.done && a.thin_pack && a.ofs_delta && !a.no_progress);
	pw_fetch_args_free(&a);
	pw_v2_request_free(&req);

	CHECK_EQ_INT(parse(&req, bad, &err), 0);
	pw_fetch_args_init(&a, algo);
	CHECK_EQ_INT(pw_fetch_args_v2_request(&a, &req, &err), PW_EPROTO);
	pw_fetch_args_free(&a);
	pw_v2_request_free(&req);
}

static void test_fetch_v0(const struct pw_hash_algo *algo)
{
	struct pw_fetch_args a;
	struct pw_error err = {0};
	char id[PW_MAX_HEXSZ + 1], line[512], want[640];

	hexid(algo, 9, id);
	pw_fetch_args_init(&a, algo);
	/* git 2.39's first want line */
	snprintf(line, sizeof(line),
	         "want %s multi_ack_detailed side-band-64k thin-pack no-progress include-tag "
	         "ofs-delta deepen-since deepen-not agent=git/2.39.5\n",
	         id);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, line, strlen(line), &err), 0);
	CHECK(a.multi_ack_detailed && a.side_band_64k && a.thin_pack && a.no_progress &&
	      a.include_tag && a.ofs_delta);
	CHECK(!a.multi_ack && !a.side_band && !a.no_done && !a.deepen_relative);
	CHECK(a.v0_caps && !strncmp(a.v0_caps, "multi_ack_detailed ", 19));
	CHECK(a.v0_caps && a.v0_caps[strlen(a.v0_caps) - 1] == '5'); /* LF stripped */
	snprintf(line, sizeof(line), "want %s\n", id);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, line, strlen(line), &err), 0);
	snprintf(line, sizeof(line), "shallow %s", id);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, line, strlen(line), &err), 0);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, "deepen 1\n", 9, &err), 0);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, "filter tree:0", 13, &err), 0);
	CHECK_EQ_INT(a.wants.nr, 2);
	CHECK_EQ_INT(a.shallows.nr, 1);
	CHECK_EQ_INT(a.depth, 1);
	CHECK_EQ_INT(a.filter.kind, PW_FILTER_TREE_DEPTH);

	/* malformed want lines */
	snprintf(line, sizeof(line), "want %.*s multi_ack", (int)algo->hexsz - 2, id);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, line, strlen(line), &err), PW_EPROTO);
	snprintf(want, sizeof(want), "protocol error: expected 'want <%s id>', got '%s'",
	         algo->name, line);
	CHECK_STR(err.msg, want);
	snprintf(line, sizeof(line), "want %s\tmulti_ack", id);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, line, strlen(line), &err), PW_EPROTO);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, "have 1", 6, &err), PW_EPROTO);
	snprintf(want, sizeof(want), "protocol error: expected 'want <%s id>', got 'have 1'",
	         algo->name);
	CHECK_STR(err.msg, want);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, "done", 4, &err), PW_EPROTO);
	CHECK_EQ_INT(pw_fetch_args_v0_want_line(&a, "want\0x", 6, &err), PW_EPROTO);
	snprintf(want, sizeof(want), "protocol error: expected 'want <%s id>', got 'want\\x00x'",
	         algo->name);
	CHECK_STR(err.msg, want);
	CHECK_EQ_INT(a.wants.nr, 2);

	/* negotiation */
	snprintf(line, sizeof(line), "have %s\n", id);
	CHECK_EQ_INT(pw_fetch_args_v0_have_line(&a, line, strlen(line), &err), 0);
	CHECK_EQ_INT(pw_fetch_args_v0_have_line(&a, "done\n", 5, &err), 0);
	CHECK(a.done);
	CHECK_EQ_INT(a.haves.nr, 1);
	snprintf(line, sizeof(line), "have %s", id);
	line[5] = 'x';
	CHECK_EQ_INT(pw_fetch_args_v0_have_line(&a, line, strlen(line), &err), PW_EPROTO);
	snprintf(want, sizeof(want), "protocol error: expected 'have <%s id>', got '%s'",
	         algo->name, line);
	CHECK_STR(err.msg, want);
	snprintf(line, sizeof(line), "want %s", id);
	CHECK_EQ_INT(pw_fetch_args_v0_have_line(&a, line, strlen(line), &err), PW_EPROTO);
	snprintf(want, sizeof(want), "protocol error: expected 'have <%s id>' or 'done', got '%s'",
	         algo->name, line);
	CHECK_STR(err.msg, want);
	CHECK_EQ_INT(pw_fetch_args_v0_have_line(&a, "done ", 5, &err), PW_EPROTO);
	pw_fetch_args_free(&a);
}

static void filter_ok(const char *spec, enum pw_filter_kind kind, uint64_t value)
{
	struct pw_filter f;
	struct pw_error err = {0};

	CHECK_EQ_INT(pw_filter_parse(&f, spec, strlen(spec), &err), 0);
	CHECK_EQ_INT(f.kind, kind);
	CHECK_EQ_INT(f.value, value);
	pw_filter_free(&f);
}

static void filter_bad(const char *spec, int code)
{
	struct pw_filter f;
	struct pw_error err = {0};
	char want[256];

	CHECK_EQ_INT(pw_filter_parse(&f, spec, strlen(spec), &err), code);
	snprintf(want, sizeof(want), "%s filter-spec '%s'",
	         code == PW_EUNSUPPORTED ? "unsupported" : "invalid", spec);
	CHECK_STR(err.msg, want);
	pw_filter_free(&f);
}

/* combine: sub-filters in order, %-decoded; Git's messages for bad ones */
static void test_filter_combine(void)
{
	struct pw_filter f;
	struct pw_error err = {0};

	CHECK_EQ_INT(pw_filter_parse(&f, "combine:blob:none+tree:1", 24, &err), 0);
	CHECK_EQ_INT(f.kind, PW_FILTER_COMBINE);
	CHECK_EQ_INT(f.nr_sub, 2);
	CHECK_EQ_INT(f.sub[0].kind, PW_FILTER_BLOB_NONE);
	CHECK_EQ_INT(f.sub[1].kind, PW_FILTER_TREE_DEPTH);
	CHECK_EQ_INT(f.sub[1].value, 1);
	pw_filter_free(&f);
	CHECK_EQ_INT(pw_filter_parse(&f, "combine:sparse:oid=main%3Aone+blob:limit=1k", 43, &err),
	             0);
	CHECK_EQ_INT(f.sub[0].kind, PW_FILTER_SPARSE_OID);
	CHECK_STR(f.sub[0].sparse_oid, "main:one");
	CHECK_EQ_INT(f.sub[1].value, 1024);
	pw_filter_free(&f);
	CHECK_EQ_INT(pw_filter_parse(&f, "combine:", 8, &err), PW_EINVAL);
	CHECK_STR(err.msg, "expected something after combine:");
	pw_filter_free(&f);
	CHECK_EQ_INT(pw_filter_parse(&f, "combine:blob:none+tree:1;", 25, &err), PW_EINVAL);
	CHECK_STR(err.msg, "must escape char in sub-filter-spec: ';'");
	pw_filter_free(&f);
	CHECK_EQ_INT(pw_filter_parse(&f, "combine:blob:none+tree:x", 24, &err), PW_EINVAL);
	pw_filter_free(&f);
}

static void test_filter(void)
{
	filter_ok("blob:none", PW_FILTER_BLOB_NONE, 0);
	filter_ok("blob:limit=0", PW_FILTER_BLOB_LIMIT, 0);
	filter_ok("blob:limit=123", PW_FILTER_BLOB_LIMIT, 123);
	filter_ok("blob:limit=1k", PW_FILTER_BLOB_LIMIT, 1024);
	filter_ok("blob:limit=1K", PW_FILTER_BLOB_LIMIT, 1024);
	filter_ok("blob:limit=3m", PW_FILTER_BLOB_LIMIT, 3u << 20);
	filter_ok("blob:limit=2g", PW_FILTER_BLOB_LIMIT, 2ull << 30);
	filter_ok("blob:limit=18446744073709551615", PW_FILTER_BLOB_LIMIT, UINT64_MAX);
	filter_ok("tree:0", PW_FILTER_TREE_DEPTH, 0);
	filter_ok("tree:12", PW_FILTER_TREE_DEPTH, 12);

	filter_bad("", PW_EINVAL);
	filter_bad("blob:nonex", PW_EINVAL);
	filter_bad("blob:limit=", PW_EINVAL);
	filter_bad("blob:limit=k", PW_EINVAL);
	filter_bad("blob:limit=1t", PW_EINVAL);
	filter_bad("blob:limit=-1", PW_EINVAL);
	filter_bad("blob:limit=18446744073709551616", PW_EINVAL);
	filter_bad("blob:limit=17179869184g", PW_EINVAL); /* overflows with the unit */
	filter_bad("tree:", PW_EINVAL);
	filter_bad("tree:-1", PW_EINVAL);
	filter_bad("tree:1x", PW_EINVAL);
	filter_bad("tree", PW_EINVAL);
	filter_bad("none", PW_EINVAL);
	filter_ok("sparse:oid=main:.sparse", PW_FILTER_SPARSE_OID, 0);
	filter_bad("sparse:path=x", PW_EUNSUPPORTED);
	filter_bad("object:type=blob", PW_EUNSUPPORTED);
	filter_ok("combine:blob:none+tree:0", PW_FILTER_COMBINE, 0);
	test_filter_combine();
}

int main(void)
{
	size_t i;

	test_request_ok();
	test_request_bad();
	test_request_feed();
	test_filter();
	for (i = 0; i < 2; i++) {
		test_fetch_v2(algos[i]);
		test_fetch_v2_request(algos[i]);
		test_fetch_v0(algos[i]);
	}
	return pw_test_done();
}
