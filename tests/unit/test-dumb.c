/* The dumb HTTP client's parsers, both algorithms: info/refs (the
 * algorithm from the first id, peeled lines), HEAD, objects/info/packs and
 * the resolution of alternates (relative, server-absolute, absolute URLs). */
#include <stdlib.h>
#include <string.h>

#include "client/dumb.h"
#include "test.h"

static const struct pw_hash_algo *algos[] = {&pw_hash_sha1, &pw_hash_sha256};

static void test_info_refs(const struct pw_hash_algo *algo)
{
	char body[1024], hex[65];
	const struct pw_hash_algo *got;
	struct pw_adv a;
	struct pw_error err;

	memset(hex, 'a', algo->hexsz);
	hex[algo->hexsz] = 0;
	snprintf(body, sizeof(body), "%s\trefs/heads/main\n%s\trefs/tags/v1\n%s\trefs/tags/v1^{}\n",
	         hex, hex, hex);
	pw_adv_init(&a);
	CHECK_EQ_INT(pw_dumb_parse_info_refs((const uint8_t *)body, strlen(body), &a, &got, &err),
	             0);
	CHECK(got == algo);
	CHECK_EQ_INT(a.nr, 2);
	CHECK(a.nr == 2 && a.refs[1].has_peeled && !strcmp(a.refs[1].name, "refs/tags/v1"));
	pw_adv_free(&a);

	/* a peeled line without its ref, a short id, no tab */
	snprintf(body, sizeof(body), "%s\trefs/tags/v1^{}\n", hex);
	pw_adv_init(&a);
	CHECK_EQ_INT(pw_dumb_parse_info_refs((const uint8_t *)body, strlen(body), &a, &got, &err),
	             PW_EPROTO);
	pw_adv_free(&a);
	snprintf(body, sizeof(body), "%.39s\trefs/heads/x\n", hex);
	pw_adv_init(&a);
	CHECK_EQ_INT(pw_dumb_parse_info_refs((const uint8_t *)body, strlen(body), &a, &got, &err),
	             PW_EPROTO);
	CHECK(strstr(err.msg, "39 hex digits") != NULL);
	pw_adv_free(&a);
	pw_adv_init(&a);
	CHECK_EQ_INT(pw_dumb_parse_info_refs((const uint8_t *)"", 0, &a, &got, &err), 0);
	CHECK(got == NULL && a.nr == 0 && a.empty);
	pw_adv_free(&a);
}

static void test_head(const struct pw_hash_algo *algo)
{
	char hex[66];
	struct pw_oid oid;
	struct pw_error err;
	char *sym = NULL;

	CHECK_EQ_INT(pw_dumb_parse_head((const uint8_t *)"ref: refs/heads/main\n", 21, algo, &sym,
	                                &oid, &err),
	             0);
	CHECK_STR(sym, "refs/heads/main");
	free(sym);
	memset(hex, 'b', algo->hexsz);
	hex[algo->hexsz] = '\n';
	CHECK_EQ_INT(
	        pw_dumb_parse_head((const uint8_t *)hex, algo->hexsz + 1, NULL, &sym, &oid, &err),
	        0);
	CHECK(sym == NULL && pw_oid_algo(&oid) == algo);
	CHECK_EQ_INT(pw_dumb_parse_head((const uint8_t *)"ref: HEAD\n", 10, algo, &sym, &oid, &err),
	             PW_EPROTO);
}

static void test_packs(const struct pw_hash_algo *algo)
{
	char body[512], hex[65];
	char **v;
	size_t nr;
	struct pw_error err;

	memset(hex, 'c', algo->hexsz);
	hex[algo->hexsz] = 0;
	snprintf(body, sizeof(body), "P pack-%s.pack\nD junk\n\nP pack-%s.pack\n\n", hex, hex);
	CHECK_EQ_INT(pw_dumb_parse_packs((const uint8_t *)body, strlen(body), algo, &v, &nr, &err),
	             0);
	CHECK_EQ_INT(nr, 1);
	pw_dumb_free_names(v, nr);
	CHECK_EQ_INT(pw_dumb_parse_packs((const uint8_t *)"P pack-x/../y.pack\n", 19, algo, &v, &nr,
	                                 &err),
	             PW_EPROTO);
}

static void test_alternates(void)
{
	const char *in = "../../other.git/objects\n/srv/x.git/objects/\n"
	                 "https://e.example/y.git/objects\nftp://z/objects\n# comment\n";
	const char *base = "http://h:8080/a/r.git/objects";
	char **v;
	size_t nr, skipped;
	struct pw_error err;

	CHECK_EQ_INT(pw_dumb_parse_alternates((const uint8_t *)in, strlen(in), base, &v, &nr,
	                                      &skipped, &err),
	             0);
	CHECK_EQ_INT(nr, 3);
	CHECK_EQ_INT(skipped, 1);
	if (nr == 3) {
		CHECK_STR(v[0], "http://h:8080/a/other.git/objects");
		CHECK_STR(v[1], "http://h:8080/srv/x.git/objects");
		CHECK_STR(v[2], "https://e.example/y.git/objects");
	}
	pw_dumb_free_names(v, nr);
	CHECK_EQ_INT(pw_dumb_parse_alternates((const uint8_t *)"../../../../../x\n", 17, base, &v,
	                                      &nr, &skipped, &err),
	             PW_EPROTO);
}

/* The WebDAV push's objects/info/packs: the new pack first, once. */
static void test_packs_add(void)
{
	static const char old[] = "P pack-1.pack\n\n";
	struct pw_buf b = PW_BUF_INIT;

	CHECK_EQ_INT(pw_dumb_info_packs_add(NULL, 0, "pack-2.pack", &b), 0);
	CHECK(b.len == 14 && !memcmp(b.data, "P pack-2.pack\n", 14));
	pw_buf_reset(&b);
	CHECK_EQ_INT(pw_dumb_info_packs_add(old, sizeof(old) - 1, "pack-2.pack", &b), 0);
	CHECK(b.len == 29 && !memcmp(b.data, "P pack-2.pack\nP pack-1.pack\n\n", 29));
	pw_buf_reset(&b);
	CHECK_EQ_INT(pw_dumb_info_packs_add(old, sizeof(old) - 1, "pack-1.pack", &b), 1);
	CHECK_EQ_INT(b.len, 0);
	pw_buf_free(&b);
}

int main(void)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		test_info_refs(algos[i]);
		test_head(algos[i]);
		test_packs(algos[i]);
	}
	test_alternates();
	test_packs_add();
	return pw_test_done();
}
