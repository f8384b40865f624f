/* The cluster state record (src/cluster/state.h): round trips, merges and
 * the revision guard on a file in a scratch directory, and the parser on
 * malformed and hostile input (truncation, wrong algorithm, bad ids and
 * names, duplicates, overlong lines, the size bound). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster/state.h"
#include "test.h"
#include "util/fs.h"

#define H1 "1111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222"

static int parse(const char *s, struct pw_cstate *st, const struct pw_hash_algo *algo)
{
	struct pw_error e;
	int rc = pw_cstate_parse(s, strlen(s), algo, st, &e);

	if (!rc)
		pw_cstate_free(st);
	return rc;
}

static void test_parse(void)
{
	const struct pw_hash_algo *s1 = pw_hash_by_name("sha1", 4);
	const struct pw_hash_algo *s256 = pw_hash_by_name("sha256", 6);
	struct pw_cstate st;
	struct pw_error e;
	struct pw_buf b = PW_BUF_INIT;
	const char *good =
	        "packwire-cluster-state 1 sha1 42\n" H2 " refs/heads/z\n" H1 " refs/heads/a\n";

	CHECK_EQ_INT(pw_cstate_parse(good, strlen(good), s1, &st, &e), 0);
	CHECK(st.revision == 42 && st.nr == 2);
	CHECK_STR(st.refs[0].name, "refs/heads/a"); /* sorted */
	CHECK(!pw_cstate_format(&st, s1, &b));
	CHECK_STR(b.data,
	          "packwire-cluster-state 1 sha1 42\n" H1 " refs/heads/a\n" H2 " refs/heads/z\n");
	pw_cstate_free(&st);
	pw_buf_free(&b);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 0\n", &st, s1), 0);
	/* malformed */
	CHECK_EQ_INT(parse("", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 2 sha1 1\n", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 \n", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 -1\n", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1234567890123456789\n", &st, s1),
	             PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 md5 1\n", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n", &st, s256), PW_EMISMATCH);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n" H1 " refs/heads/a", &st, s1),
	             PW_EINVAL); /* truncated */
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n" H1 "refs/heads/a\n", &st, s1),
	             PW_EINVAL);
	CHECK_EQ_INT(
	        parse("packwire-cluster-state 1 sha1 1\nzz11111111111111111111111111111111111111"
	              " refs/heads/a\n",
	              &st, s1),
	        PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n" H1 " HEAD\n", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n" H1 " refs/heads/a..b\n", &st, s1),
	             PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n" H1 " \n", &st, s1), PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n"
	                   "0000000000000000000000000000000000000000 refs/heads/a\n",
	                   &st, s1),
	             PW_EINVAL);
	CHECK_EQ_INT(parse("packwire-cluster-state 1 sha1 1\n" H1 " refs/heads/a\n" H2
	                   " refs/heads/a\n",
	                   &st, s1),
	             PW_EINVAL); /* twice */
	{
		/* a NUL inside the name, and a line over the bound */
		char nul[] = "packwire-cluster-state 1 sha1 1\n" H1 " refs/heads/a\0b\n";
		char *big = malloc(PW_CSTATE_LINE_MAX + 200);

		CHECK_EQ_INT(pw_cstate_parse(nul, sizeof(nul) - 1, s1, &st, &e), PW_EINVAL);
		CHECK(big != NULL);
		if (big) {
			size_t n = (size_t)snprintf(
			        big, 100, "packwire-cluster-state 1 sha1 1\n" H1 " refs/heads/");
			memset(big + n, 'x', PW_CSTATE_LINE_MAX);
			big[n + PW_CSTATE_LINE_MAX] = '\n';
			CHECK_EQ_INT(pw_cstate_parse(big, n + PW_CSTATE_LINE_MAX + 1, s1, &st, &e),
			             PW_EINVAL);
			CHECK_EQ_INT(pw_cstate_parse(big, (size_t)PW_CSTATE_MAX + 1, s1, &st, &e),
			             PW_ETOOBIG);
			free(big);
		}
	}
}

static void test_store(void)
{
	const struct pw_hash_algo *s1 = pw_hash_by_name("sha1", 4);
	char dir[] = "/tmp/pw-cstate-XXXXXX";
	struct pw_cstate st;
	struct pw_error e;
	struct pw_oid o1, o2;
	struct pw_cstate_set set[3];
	int skipped = -1;

	CHECK(mkdtemp(dir) != NULL);
	pw_oid_from_hex(&o1, H1, 40, s1);
	pw_oid_from_hex(&o2, H2, 40, s1);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), PW_ENOTFOUND);
	set[0].name = "refs/heads/main";
	set[0].oid = &o1;
	set[1].name = "refs/tags/t";
	set[1].oid = &o2;
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 1, 10, set, 2, &skipped, &e), 0);
	CHECK_EQ_INT(skipped, 0);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), 0);
	CHECK(st.revision == 10 && st.nr == 2);
	pw_cstate_free(&st);
	/* an older snapshot does not replace a newer record */
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 1, 9, set, 1, &skipped, &e), 0);
	CHECK_EQ_INT(skipped, 1);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), 0);
	CHECK(st.revision == 10 && st.nr == 2);
	pw_cstate_free(&st);
	/* ... unless forced */
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 2, 9, set, 1, &skipped, &e), 0);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), 0);
	CHECK(st.revision == 9 && st.nr == 1);
	pw_cstate_free(&st);
	/* a merge: one changes, one goes, one comes; the revision never drops */
	set[0].oid = &o2;
	set[1].name = "refs/heads/new";
	set[1].oid = &o1;
	set[2].name = "refs/heads/gone";
	set[2].oid = NULL;
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 0, 0, set, 3, NULL, &e), 0);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), 0);
	CHECK(st.revision == 9 && st.nr == 2);
	if (st.nr == 2) {
		CHECK_STR(st.refs[0].name, "refs/heads/main");
		CHECK(pw_oid_equal(&st.refs[0].oid, &o2));
		CHECK_STR(st.refs[1].name, "refs/heads/new");
	}
	pw_cstate_free(&st);
	set[0].oid = NULL;
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 0, 12, set, 1, NULL, &e), 0);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), 0);
	CHECK(st.revision == 12 && st.nr == 1);
	pw_cstate_free(&st);
	/* a bad name is refused, the record unchanged */
	set[0].name = "HEAD";
	set[0].oid = &o1;
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 0, 0, set, 1, NULL, &e), PW_EINVAL);
	/* a corrupt record is replaced */
	{
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/" PW_CSTATE_FILE, dir);
		f = fopen(path, "w");
		CHECK(f != NULL);
		if (f) {
			fputs("packwire-cluster-state 1 sha1 7\ngarbage\n", f);
			fclose(f);
		}
		CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), PW_EINVAL);
	}
	set[0].name = "refs/heads/main";
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 0, 3, set, 1, NULL, &e), 0);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), 0);
	CHECK(st.revision == 3 && st.nr == 1);
	pw_cstate_free(&st);
	/* a sync at a newer revision with the same refs does not rewrite it */
	CHECK_EQ_INT(pw_cstate_store(dir, s1, 1, 30, set, 1, &skipped, &e), 0);
	CHECK_EQ_INT(pw_cstate_load(dir, s1, &st, &e), 0);
	CHECK(st.revision == 3 && st.nr == 1 && !skipped);
	pw_cstate_free(&st);
	pw_fs_remove_tree(dir, 0);
}

int main(void)
{
	test_parse();
	test_store();
	return pw_test_done();
}
