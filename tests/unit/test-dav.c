/* The WebDAV push's parser of the server's answers: a PROPFIND multistatus
 * as Apache's mod_dav writes it (hrefs as paths or absolute URLs, %-escapes,
 * collections), supportedlock, a LOCK answer's token (body and header), the
 * constructs the tokenizer skips or decodes, and malformed or oversized
 * input, each refused with a message. */
#include <stdlib.h>
#include <string.h>

#include "client/dav.h"
#include "test.h"

static int parse(const char *s, struct pw_dav_answer *a, struct pw_error *err)
{
	return pw_dav_parse((const uint8_t *)s, strlen(s), a, err);
}

static void test_multistatus(void)
{
	static const char ms[] =
	        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n"
	        "<D:multistatus xmlns:D=\"DAV:\">\n"
	        "<D:response xmlns:lp1=\"DAV:\"><D:href>/r.git/refs/</D:href>"
	        "<D:propstat><D:prop><lp1:resourcetype><D:collection/></lp1:resourcetype>"
	        "</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>\n"
	        "<D:response><D:href>http://host:80/r.git/refs/a%20b&amp;c</D:href>"
	        "<D:propstat><D:prop><D:resourcetype/></D:prop></D:propstat></D:response>\n"
	        "<response><href>\n  /r.git/refs/x \n</href></response>"
	        "</D:multistatus>\n";
	struct pw_dav_answer a;
	struct pw_error err;

	CHECK_EQ_INT(parse(ms, &a, &err), 0);
	CHECK_EQ_INT(a.nr, 3);
	if (a.nr == 3) {
		CHECK_STR(a.entries[0].path, "/r.git/refs/");
		CHECK(a.entries[0].collection);
		CHECK_STR(a.entries[1].path, "/r.git/refs/a b&c");
		CHECK(!a.entries[1].collection);
		CHECK_STR(a.entries[2].path, "/r.git/refs/x");
	}
	CHECK(!a.exclusive_write);
	CHECK(!a.lock_token);
	pw_dav_answer_free(&a);
}

static void test_locks(void)
{
	static const char sl[] =
	        "<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>/r/</D:href><D:propstat>"
	        "<D:prop><D:supportedlock><D:lockentry><D:lockscope><D:shared/></D:lockscope>"
	        "<D:locktype><D:write/></D:locktype></D:lockentry></D:supportedlock></D:prop>"
	        "</D:propstat></D:response></D:multistatus>";
	static const char lk[] = "<?xml version=\"1.0\"?><!-- mod_dav -->"
	                         "<D:prop xmlns:D=\"DAV:\"><D:lockdiscovery><D:activelock>"
	                         "<D:owner><D:href>someone</D:href></D:owner>"
	                         "<D:locktoken><D:href> opaquelocktoken:abc-1 </D:href>"
	                         "</D:locktoken></D:activelock></D:lockdiscovery></D:prop>";
	static const char hdr[] = "HTTP/1.1 200 OK\r\nlock-token:  <opaquelocktoken:abc-2>\r\n\r\n";
	struct pw_dav_answer a;
	struct pw_error err;
	char *t;

	/* shared only: no exclusive write lock */
	CHECK_EQ_INT(parse(sl, &a, &err), 0);
	CHECK(!a.exclusive_write);
	pw_dav_answer_free(&a);
	{
		static const char ex[] =
		        "<D:multistatus xmlns:D=\"DAV:\"><D:response><D:href>/r/</D:href>"
		        "<D:propstat><D:prop><D:supportedlock><D:lockentry><D:lockscope>"
		        "<D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype>"
		        "</D:lockentry></D:supportedlock></D:prop></D:propstat></D:response>"
		        "</D:multistatus>";

		CHECK_EQ_INT(parse(ex, &a, &err), 0);
		CHECK(a.exclusive_write);
		pw_dav_answer_free(&a);
	}
	CHECK_EQ_INT(parse(lk, &a, &err), 0);
	CHECK_STR(a.lock_token, "opaquelocktoken:abc-1");
	pw_dav_answer_free(&a);
	t = pw_dav_lock_token_header(hdr, strlen(hdr));
	CHECK_STR(t, "opaquelocktoken:abc-2");
	free(t);
	CHECK(!pw_dav_lock_token_header("Lock-Token: opaque\r\n", 20));
	CHECK(!pw_dav_lock_token_header("Lock-Token: <", 13));
}

static void test_malformed(void)
{
	static const char *bad[] = {
	        "",
	        "   ",
	        "text only",
	        "<a>",
	        "<a></b>",
	        "<a><b></a></b>",
	        "<a",
	        "<a x></a>",
	        "<a x=\"1></a>",
	        "<a>&bogus;</a>",
	        "<a>&#0;</a>",
	        "<a>&#x110000;</a>",
	        "<a>&#xd800;</a>",
	        "<a>&#;</a>",
	        "<a>&amp</a>",
	        "<!DOCTYPE a><a/>",
	        "<!-- never closed <a/>",
	        "<?xml never closed",
	        "<a><![CDATA[ open </a>",
	        "<a/>trailing text",
	        "</a>",
	        "<:a/>",
	        "<m:multistatus xmlns:m=\"DAV:\"><m:response><m:status/></m:response>"
	        "</m:multistatus>",
	        "<multistatus><response><href>/a%zz</href></response></multistatus>",
	        "<multistatus><response><href>/a%00</href></response></multistatus>",
	        "<multistatus><response><href>/a%2</href></response></multistatus>",
	        "<prop><locktoken><href>  </href></locktoken></prop>",
	};
	struct pw_dav_answer a;
	struct pw_error err;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;

		err.msg[0] = 0;
		rc = parse(bad[i], &a, &err);
		if (rc >= 0)
			fprintf(stderr, "accepted: %s\n", bad[i]);
		CHECK(rc < 0);
		CHECK(err.msg[0] != 0);
		pw_dav_answer_free(&a);
	}
}

static void test_bounds(void)
{
	struct pw_dav_answer a;
	struct pw_error err;
	char *s = malloc(PW_DAV_MAX_HREF + 200), *deep = malloc(PW_DAV_MAX_DEPTH * 3 + 10);
	size_t i, k = 0;

	/* an href past its bound */
	k += (size_t)sprintf(s, "<multistatus><response><href>/");
	memset(s + k, 'a', PW_DAV_MAX_HREF + 1);
	k += PW_DAV_MAX_HREF + 1;
	strcpy(s + k, "</href></response></multistatus>");
	CHECK_EQ_INT(parse(s, &a, &err), PW_ETOOBIG);
	pw_dav_answer_free(&a);
	/* nesting past its bound */
	for (k = 0, i = 0; i <= PW_DAV_MAX_DEPTH; i++)
		k += (size_t)sprintf(deep + k, "<a>");
	CHECK_EQ_INT(parse(deep, &a, &err), PW_ETOOBIG);
	pw_dav_answer_free(&a);
	/* an answer past its bound: refused before it is read */
	CHECK_EQ_INT(pw_dav_parse((const uint8_t *)s, (size_t)PW_DAV_MAX_XML + 1, &a, &err),
	             PW_ETOOBIG);
	pw_dav_answer_free(&a);
	free(s);
	free(deep);
}

struct seen {
	char names[4][32];
	size_t hexlen[4], nr;
};

static int packed_one(void *ctx, const char *name, size_t len, const char *hex, size_t hexlen)
{
	struct seen *s = ctx;

	(void)hex;
	if (s->nr < 4 && len < 32) {
		memcpy(s->names[s->nr], name, len);
		s->names[s->nr][len] = 0;
		s->hexlen[s->nr++] = hexlen;
	}
	return 0;
}

static void test_packed_refs(void)
{
	static const char pr[] = "# pack-refs with: peeled fully-peeled sorted \n"
	                         "0123456789012345678901234567890123456789 refs/heads/main\r\n"
	                         "^0123456789012345678901234567890123456789\n"
	                         "no space here\n"
	                         "\n"
	                         "abc refs/tags/v1";
	struct seen s;
	struct pw_error err;
	char *longname = malloc(PW_DAV_MAX_HREF + 64);

	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(
	        pw_dav_parse_packed_refs((const uint8_t *)pr, strlen(pr), packed_one, &s, &err), 0);
	CHECK_EQ_INT(s.nr, 3);
	CHECK_STR(s.names[0], "refs/heads/main");
	CHECK_EQ_INT(s.hexlen[0], 40);
	CHECK_STR(s.names[1], "space here");
	CHECK_STR(s.names[2], "refs/tags/v1");
	CHECK_EQ_INT(s.hexlen[2], 3);
	memcpy(longname, "abc ", 4);
	memset(longname + 4, 'r', PW_DAV_MAX_HREF + 1);
	CHECK_EQ_INT(pw_dav_parse_packed_refs((const uint8_t *)longname, PW_DAV_MAX_HREF + 5,
	                                      packed_one, &s, &err),
	             PW_EPROTO);
	free(longname);
}

int main(void)
{
	test_packed_refs();
	test_multistatus();
	test_locks();
	test_malformed();
	test_bounds();
	return pw_test_done();
}
