/* Refs and repository handles in a temporary directory, for both algorithms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "packwire/packwire.h"
#include "refs/reflog.h"
#include "test.h"
#include "util/fs.h"

static char tmp[] = "/tmp/pw-test-refs-XXXXXX";

static void write_file(const char *dir, const char *name, const char *text)
{
	char *p = pw_path_join(dir, name);

	CHECK_EQ_INT(pw_fs_write_atomic(p, text, strlen(text), NULL), 0);
	free(p);
}

static int exists(struct pw_repo *repo, const char *name)
{
	char *p = pw_path_join(pw_repo_git_dir(repo), name);
	int e = pw_fs_exists(p);

	free(p);
	return e;
}

static void fake_oid(const struct pw_hash_algo *algo, const char *seed, struct pw_oid *out)
{
	CHECK_EQ_INT(pw_hash_buf(algo, seed, strlen(seed), out), 0);
}

static int collect(const struct pw_ref *ref, void *data)
{
	struct pw_buf *b = data;
	char hex[PW_MAX_HEXSZ + 1], phex[PW_MAX_HEXSZ + 1];

	pw_buf_addf(b, "%s %.8s%s%s%s%.8s\n", ref->name, pw_oid_to_hex(&ref->oid, hex),
	            ref->symref_target ? " -> " : "", ref->symref_target ? ref->symref_target : "",
	            ref->has_peeled ? " ^" : "",
	            ref->has_peeled ? pw_oid_to_hex(&ref->peeled, phex) : "");
	return 0;
}

static void test_names(void)
{
	static const char *const good[] = {"refs/heads/main", "refs/tags/v1.0", "refs/a/b-c_d",
	                                   "refs/heads/@", "refs/x/a.b"};
	static const char *const badn[] = {"refs/heads/a..b",
	                                   "refs/heads/.hidden",
	                                   "refs/heads/a.lock",
	                                   "refs/heads/a/",
	                                   "/refs/heads/a",
	                                   "refs//heads",
	                                   "refs/heads/a.",
	                                   "refs/heads/a@{1}",
	                                   "refs/heads/a b",
	                                   "refs/heads/a~1",
	                                   "refs/heads/a^",
	                                   "refs/heads/a:b",
	                                   "refs/heads/a?",
	                                   "refs/heads/a*",
	                                   "refs/heads/a[",
	                                   "refs/heads/a\\b",
	                                   "refs/heads/a\x01",
	                                   "refs/heads/a\x7f",
	                                   "@",
	                                   "main",
	                                   ""};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(pw_refname_is_valid(good[i], 0));
	for (i = 0; i < sizeof(badn) / sizeof(badn[0]); i++) {
		if (pw_refname_is_valid(badn[i], 0))
			fprintf(stderr, "accepted bad name '%s'\n", badn[i]);
		CHECK(!pw_refname_is_valid(badn[i], 0));
	}
	CHECK(pw_refname_is_valid("main", PW_REFNAME_ALLOW_ONELEVEL));
	CHECK(pw_refname_is_storable("HEAD"));
	CHECK(pw_refname_is_storable("FETCH_HEAD"));
	CHECK(!pw_refname_is_storable("head"));
	CHECK(!pw_refname_is_storable("foo/bar"));
}

static void test_algo(const struct pw_hash_algo *algo)
{
	char dir[256], hex[PW_MAX_HEXSZ + 1], hex2[PW_MAX_HEXSZ + 1], hex3[PW_MAX_HEXSZ + 1];
	char packed[1024];
	struct pw_repo *repo = NULL, *r2 = NULL;
	struct pw_error err = {0};
	struct pw_oid a, b, c, t, peeled, got, zero;
	struct pw_ref_tx *tx;
	struct pw_buf out = PW_BUF_INIT;
	char *sym = NULL, *final = NULL;

	snprintf(dir, sizeof(dir), "%s/%s", tmp, algo->name);
	CHECK_EQ_INT(pw_repo_init(&repo, dir, 1, algo, &err), 0);
	if (!repo)
		return;
	CHECK(pw_repo_algo(repo) == algo);
	CHECK(pw_repo_is_bare(repo));
	CHECK(pw_repo_work_tree(repo) == NULL);
	CHECK_EQ_INT(pw_repo_open_exact(&r2, dir, &err), 0);
	if (r2) {
		CHECK(pw_repo_algo(r2) == algo);
		pw_repo_free(r2);
	}
	fake_oid(algo, "a", &a);
	fake_oid(algo, "b", &b);
	fake_oid(algo, "c", &c);
	fake_oid(algo, "tag", &t);
	fake_oid(algo, "peeled", &peeled);
	pw_oid_zero(&zero, algo);

	/* unborn HEAD */
	CHECK_EQ_INT(pw_refs_read(repo, "HEAD", &got, &sym), 0);
	CHECK_STR(sym, "refs/heads/master");
	free(sym);
	CHECK_EQ_INT(pw_refs_resolve(repo, "HEAD", &got, &final), PW_ENOTFOUND);
	CHECK_STR(final, "refs/heads/master");
	free(final);

	/* a transaction creating three refs */
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/master", &a, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/b", &b, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/sub/c", &c, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/bad..name", &c, NULL, 0), PW_EINVAL);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), 0);
	pw_ref_tx_free(tx);
	CHECK_EQ_INT(pw_refs_resolve(repo, "HEAD", &got, &final), 0);
	CHECK(pw_oid_equal(&got, &a));
	CHECK_STR(final, "refs/heads/master");
	free(final);
	CHECK_EQ_INT(pw_refs_create_symref(repo, "refs/remotes/o/HEAD", "refs/heads/b"), 0);

	/* packed refs with a peeled tag, one overridden by a loose ref */
	snprintf(packed, sizeof(packed),
	         "# pack-refs with: peeled fully-peeled sorted \n"
	         "%s refs/heads/b\n%s refs/heads/packed\n%s refs/tags/v1\n^%s\n",
	         pw_oid_to_hex(&c, hex), pw_oid_to_hex(&c, hex), pw_oid_to_hex(&t, hex2),
	         pw_oid_to_hex(&peeled, hex3));
	write_file(pw_repo_git_dir(repo), "packed-refs", packed);
	/* a loose ref with an invalid name on disk is ignored */
	write_file(pw_repo_git_dir(repo), "refs/heads/x..y", "0000\n");

	CHECK_EQ_INT(pw_refs_foreach(repo, NULL, PW_REFS_INCLUDE_HEAD, collect, &out), 0);
	{
		char want[2048];
		char ha[9], hb[9], hc[9], ht[9], hp[9];

		snprintf(ha, 9, "%s", pw_oid_to_hex(&a, hex));
		snprintf(hb, 9, "%s", pw_oid_to_hex(&b, hex));
		snprintf(hc, 9, "%s", pw_oid_to_hex(&c, hex));
		snprintf(ht, 9, "%s", pw_oid_to_hex(&t, hex));
		snprintf(hp, 9, "%s", pw_oid_to_hex(&peeled, hex));
		snprintf(want, sizeof(want),
		         "HEAD %s -> refs/heads/master\n"
		         "refs/heads/b %s\n"
		         "refs/heads/master %s\n"
		         "refs/heads/packed %s\n"
		         "refs/heads/sub/c %s\n"
		         "refs/remotes/o/HEAD %s -> refs/heads/b\n"
		         "refs/tags/v1 %s ^%s\n",
		         ha, hb, ha, hc, hc, hb, ht, hp);
		CHECK_STR(out.data, want);
	}
	pw_buf_reset(&out);
	CHECK_EQ_INT(pw_refs_foreach(repo, "refs/tags/", 0, collect, &out), 0);
	CHECK(!strncmp(out.data, "refs/tags/v1 ", 13) && !strchr(out.data + 1, '\n')[1]);

	/* old-value mismatch: nothing changes, no locks left */
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/new", &a, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/master", &b, &c, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_delete(tx, "refs/heads/packed", NULL), 0);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), PW_EMISMATCH);
	{
		char want[512];

		snprintf(want, sizeof(want),
		         "cannot lock ref 'refs/heads/master': is at %s but expected %s",
		         pw_oid_to_hex(&a, hex), pw_oid_to_hex(&c, hex2));
		CHECK_STR(pw_ref_tx_error(tx)->msg, want);
	}
	pw_ref_tx_free(tx);
	CHECK(!exists(repo, "refs/heads/new"));
	CHECK(!exists(repo, "refs/heads/new.lock"));
	CHECK(!exists(repo, "refs/heads/master.lock"));
	CHECK(!exists(repo, "packed-refs.lock"));
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/heads/master", &got, NULL), 0);
	CHECK(pw_oid_equal(&got, &a));
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/heads/packed", &got, NULL), 0);

	/* must-not-exist on an existing (packed) ref */
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/packed", &a, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), PW_EMISMATCH);
	CHECK_STR(pw_ref_tx_error(tx)->msg,
	          "cannot lock ref 'refs/heads/packed': reference already exists");
	pw_ref_tx_free(tx);

	/* a held lock */
	write_file(pw_repo_git_dir(repo), "refs/heads/b.lock", "");
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/a2", &a, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/b", &a, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), PW_ELOCKED);
	CHECK(strstr(pw_ref_tx_error(tx)->msg, "cannot lock ref 'refs/heads/b'") != NULL);
	pw_ref_tx_free(tx);
	CHECK(!exists(repo, "refs/heads/a2"));
	CHECK(!exists(repo, "refs/heads/a2.lock"));
	CHECK(exists(repo, "refs/heads/b.lock"));
	{
		char *p = pw_path_join(pw_repo_git_dir(repo), "refs/heads/b.lock");

		unlink(p);
		free(p);
	}

	/* directory/file conflicts */
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/master/x", &a, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), PW_EEXISTS);
	pw_ref_tx_free(tx);
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/sub", &a, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), PW_EEXISTS);
	pw_ref_tx_free(tx);

	/* deleting packed and loose refs, updating through HEAD */
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_delete(tx, "refs/heads/packed", &c), 0);
	CHECK_EQ_INT(pw_ref_tx_delete(tx, "refs/heads/b", NULL), 0);
	CHECK_EQ_INT(pw_ref_tx_delete(tx, "refs/heads/sub/c", &c), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "HEAD", &c, &a, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), 0);
	pw_ref_tx_free(tx);
	CHECK_EQ_INT(pw_refs_read(repo, "refs/heads/packed", &got, &sym), PW_ENOTFOUND);
	CHECK_EQ_INT(pw_refs_read(repo, "refs/heads/b", &got, &sym), PW_ENOTFOUND);
	CHECK(!exists(repo, "refs/heads/sub"));
	CHECK(exists(repo, "refs/heads"));
	CHECK_EQ_INT(pw_refs_read(repo, "refs/heads/master", &got, &sym), 0);
	CHECK(sym == NULL && pw_oid_equal(&got, &c));
	CHECK_EQ_INT(pw_refs_read(repo, "HEAD", &got, &sym), 0);
	CHECK_STR(sym, "refs/heads/master");
	free(sym);
	{
		struct pw_buf pk = PW_BUF_INIT;
		char *p = pw_path_join(pw_repo_git_dir(repo), "packed-refs");
		char want[512];

		CHECK_EQ_INT(pw_fs_read_file(p, &pk, 0, NULL), 0);
		snprintf(want, sizeof(want),
		         "# pack-refs with: peeled fully-peeled sorted \n%s refs/tags/v1\n^%s\n",
		         pw_oid_to_hex(&t, hex), pw_oid_to_hex(&peeled, hex2));
		CHECK_STR(pk.data, want);
		pw_buf_free(&pk);
		free(p);
	}

	/* corrupt packed-refs */
	write_file(pw_repo_git_dir(repo), "packed-refs", "# pack-refs with: peeled \nnot a line\n");
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/tags/v1", &got, NULL), PW_ECORRUPT);
	CHECK(strstr(pw_repo_error(repo)->msg, "unexpected line 2") != NULL);
	write_file(pw_repo_git_dir(repo), "packed-refs", "^abc\n");
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/tags/v1", &got, NULL), PW_ECORRUPT);
	/* a symref loop */
	CHECK_EQ_INT(pw_refs_create_symref(repo, "refs/heads/l1", "refs/heads/l2"), 0);
	CHECK_EQ_INT(pw_refs_create_symref(repo, "refs/heads/l2", "refs/heads/l1"), 0);
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/heads/l1", &got, NULL), PW_ECORRUPT);
	write_file(pw_repo_git_dir(repo), "packed-refs", "");
	/* a wrong-length oid in a loose ref */
	write_file(pw_repo_git_dir(repo), "refs/heads/short", "abcdef\n");
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/heads/short", &got, NULL), PW_ECORRUPT);

	/* the object format can be rewritten (clone does this) */
	{
		const struct pw_hash_algo *other =
		        algo == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;

		CHECK_EQ_INT(pw_repo_set_object_format(repo, other, &err), 0);
		CHECK(pw_repo_algo(repo) == other);
		CHECK_EQ_INT(pw_repo_open(&r2, dir, &err), 0);
		if (r2) {
			CHECK(pw_repo_algo(r2) == other);
			pw_repo_free(r2);
		}
		CHECK_EQ_INT(pw_repo_set_object_format(repo, algo, &err), 0);
	}
	pw_buf_free(&out);
	pw_repo_free(repo);
}

static void test_format(void)
{
	char dir[256], sub[300];
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};

	snprintf(dir, sizeof(dir), "%s/fmt", tmp);
	CHECK_EQ_INT(pw_repo_init(&repo, dir, 0, NULL, &err), 0);
	pw_repo_free(repo);
	snprintf(sub, sizeof(sub), "%s/a/b", dir);
	CHECK_EQ_INT(pw_fs_mkdir_p(sub, NULL), 0);
	CHECK_EQ_INT(pw_repo_open(&repo, sub, &err), 0);
	if (repo) {
		CHECK(!pw_repo_is_bare(repo));
		CHECK(pw_repo_algo(repo) == &pw_hash_sha1);
		CHECK(strstr(pw_repo_git_dir(repo), "/fmt/.git") != NULL);
		pw_repo_free(repo);
	}
	snprintf(sub, sizeof(sub), "%s/.git", dir);
	write_file(sub, "config",
	           "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tfoo = x\n");
	CHECK_EQ_INT(pw_repo_open(&repo, dir, &err), PW_EUNSUPPORTED);
	CHECK(strstr(err.msg, "foo") != NULL);
	write_file(sub, "config",
	           "[core]\n\trepositoryformatversion = 0\n[extensions]\n\tfoo = x\n");
	CHECK_EQ_INT(pw_repo_open(&repo, dir, &err), 0); /* unknown ignored in v0 */
	pw_repo_free(repo);
	write_file(sub, "config", "[extensions]\n\tobjectformat = sha256\n");
	CHECK_EQ_INT(pw_repo_open(&repo, dir, &err), PW_EUNSUPPORTED);
	CHECK(strstr(err.msg, "repo version is 0") != NULL);
	write_file(sub, "config",
	           "[core]\n\trepositoryformatversion = 1\n[extensions]\n\t"
	           "objectformat = md5\n");
	CHECK_EQ_INT(pw_repo_open(&repo, dir, &err), PW_EUNSUPPORTED);
	CHECK(strstr(err.msg, "md5") != NULL);
	write_file(sub, "config", "[core]\n\trepositoryformatversion = 2\n");
	CHECK_EQ_INT(pw_repo_open(&repo, dir, &err), PW_EUNSUPPORTED);
	write_file(sub, "config", "[core]\n\trepositoryformatversion = 1\n");
	CHECK_EQ_INT(pw_repo_open(&repo, dir, &err), 0);
	if (repo)
		CHECK(pw_repo_algo(repo) == &pw_hash_sha1);
	pw_repo_free(repo);
	write_file(sub, "config", "[core\n");
	CHECK_EQ_INT(pw_repo_open(&repo, dir, &err), PW_EINVAL);
	CHECK(strstr(err.msg, "bad config line 1 in file") != NULL);
	CHECK_EQ_INT(pw_repo_open(&repo, "/", &err), PW_ENOTFOUND);
	/* a .git file pointing elsewhere */
	snprintf(sub, sizeof(sub), "%s/linked", tmp);
	pw_fs_mkdir_p(sub, NULL);
	write_file(sub, ".git", "gitdir: ../bare-target\n");
	snprintf(dir, sizeof(dir), "%s/bare-target", tmp);
	CHECK_EQ_INT(pw_repo_init(&repo, dir, 1, &pw_hash_sha256, &err), 0);
	pw_repo_free(repo);
	CHECK_EQ_INT(pw_repo_open(&repo, sub, &err), 0);
	if (repo) {
		CHECK(pw_repo_algo(repo) == &pw_hash_sha256);
		CHECK(pw_repo_work_tree(repo) != NULL);
		pw_repo_free(repo);
	}
}

/* A transaction of more refs than the process may open files (a clone of
 * a repository with 100000 branches): each lock is closed once written. */
static void test_many(const struct pw_hash_algo *algo)
{
	struct rlimit old, low;
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	struct pw_ref_tx *tx;
	struct pw_oid a, got;
	char dir[256], name[64];
	int i, n = 600;

	snprintf(dir, sizeof(dir), "%s/many-%s", tmp, algo->name);
	CHECK_EQ_INT(pw_repo_init(&repo, dir, 1, algo, &err), 0);
	if (!repo)
		return;
	fake_oid(algo, "many", &a);
	CHECK_EQ_INT(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 256;
	CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &low), 0);
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "refs/heads/b%04d", i);
		CHECK_EQ_INT(pw_ref_tx_update(tx, name, &a, NULL, 0), 0);
	}
	CHECK_EQ_INT(pw_ref_tx_commit(tx), 0);
	if (pw_ref_tx_error(tx)->code)
		fprintf(stderr, "  %s\n", pw_ref_tx_error(tx)->msg);
	pw_ref_tx_free(tx);
	CHECK_EQ_INT(setrlimit(RLIMIT_NOFILE, &old), 0);
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/heads/b0000", &got, NULL), 0);
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/heads/b0599", &got, NULL), 0);
	CHECK(pw_oid_equal(&got, &a));
	pw_repo_free(repo);
}

/* A clone's first refs go into packed-refs at once, as git clone writes them. */
static void test_initial(const struct pw_hash_algo *algo)
{
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	struct pw_ref_tx *tx;
	struct pw_oid a, b, got;
	struct pw_buf data = PW_BUF_INIT;
	char dir[256], path[300], hex[PW_MAX_HEXSZ + 1], hexb[PW_MAX_HEXSZ + 1], want[400];

	snprintf(dir, sizeof(dir), "%s/initial-%s", tmp, algo->name);
	CHECK_EQ_INT(pw_repo_init(&repo, dir, 1, algo, &err), 0);
	if (!repo)
		return;
	fake_oid(algo, "one", &a);
	fake_oid(algo, "two", &b);
	/* "a" and "a/b" cannot both be refs */
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/x", &a, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/x/y", &a, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit_initial(tx), PW_EEXISTS);
	pw_ref_tx_free(tx);
	snprintf(path, sizeof(path), "%s/packed-refs", dir);
	CHECK(access(path, F_OK) != 0);

	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/tags/v1", &b, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/main", &a, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit_initial(tx), 0);
	pw_ref_tx_free(tx);
	CHECK_EQ_INT(pw_fs_read_file(path, &data, 1 << 20, &err), 0);
	snprintf(want, sizeof(want),
	         "# pack-refs with: sorted \n%s refs/heads/main\n%s refs/tags/v1\n",
	         pw_oid_to_hex(&a, hex), pw_oid_to_hex(&b, hexb));
	CHECK_STR(data.data, want);
	snprintf(path, sizeof(path), "%s/refs/heads/main", dir);
	CHECK(access(path, F_OK) != 0); /* no loose file */
	CHECK_EQ_INT(pw_refs_resolve(repo, "refs/tags/v1", &got, NULL), 0);
	CHECK(pw_oid_equal(&got, &b));
	/* not the first refs any more: an ordinary transaction */
	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/next", &b, NULL, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit_initial(tx), 0);
	pw_ref_tx_free(tx);
	snprintf(path, sizeof(path), "%s/refs/heads/next", dir);
	CHECK(access(path, F_OK) == 0);
	pw_buf_free(&data);
	pw_repo_free(repo);
}

struct seen {
	int64_t t[8];
	int n, stop_at;
};

static int seen_one(const struct pw_reflog_entry *e, void *data)
{
	struct seen *s = data;

	if (s->n < 8)
		s->t[s->n] = e->timestamp;
	return ++s->n == s->stop_at ? 7 : 0;
}

/* A log read newest first; lines that do not parse (short ids, no '>', no
 * time, a time that overflows, no newline at the end) are passed over. */
static void test_reflog_read(const struct pw_hash_algo *algo)
{
	char dir[256], a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1], log[2048];
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	struct pw_oid x, y;
	struct seen s = {{0}, 0, 0};
	struct pw_reflog_entry e;
	char *logs;

	snprintf(dir, sizeof(dir), "%s/reflog-%s", tmp, algo->name);
	CHECK_EQ_INT(pw_repo_init(&repo, dir, 1, algo, &err), 0);
	if (!repo)
		return;
	fake_oid(algo, "x", &x);
	fake_oid(algo, "y", &y);
	pw_oid_to_hex(&x, a);
	pw_oid_to_hex(&y, b);
	snprintf(log, sizeof(log),
	         "%s %s T <t@e> 100 +0000\tone\n"
	         "%.10s %s T <t@e> 150 +0000\tshort id\n"
	         "%s %s T t@e 160 +0000\tno email\n"
	         "%s %s T <t@e> +0000\tno time\n"
	         "%s %s T <t@e> 99999999999999999999999 +0000\toverflow\n"
	         "\n"
	         "%s %s T <t@e> 200 +0000\ttwo\n"
	         "%s %s T <t@e> 300 -0100",
	         a, b, a, b, a, b, a, b, a, b, b, a, a, b);
	logs = pw_path_join(dir, "logs/refs/heads");
	CHECK_EQ_INT(pw_fs_mkdir_p(logs, &err), 0);
	free(logs);
	write_file(dir, "logs/refs/heads/x", log);
	CHECK_EQ_INT(pw_reflog_foreach_reverse(repo, "refs/heads/x", seen_one, &s, &err), 0);
	CHECK_EQ_INT(s.n, 3);
	CHECK(s.t[0] == 300 && s.t[1] == 200 && s.t[2] == 100);
	memset(&s, 0, sizeof(s));
	s.stop_at = 2;
	CHECK_EQ_INT(pw_reflog_foreach_reverse(repo, "refs/heads/x", seen_one, &s, &err), 7);
	CHECK_EQ_INT(s.n, 2);
	memset(&s, 0, sizeof(s));
	CHECK_EQ_INT(pw_reflog_foreach_reverse(repo, "refs/heads/none", seen_one, &s, &err), 0);
	CHECK_EQ_INT(s.n, 0);
	snprintf(log, sizeof(log), "%s %s T <t@e> 42 +0000\tm", b, a);
	CHECK_EQ_INT(pw_reflog_parse_entry(algo, log, strlen(log), &e), 0);
	CHECK(pw_oid_equal(&e.old_oid, &y) && pw_oid_equal(&e.new_oid, &x) && e.timestamp == 42);
	CHECK_EQ_INT(pw_reflog_parse_entry(algo, log, 2 * algo->hexsz + 1, &e), -1);
	pw_repo_free(repo);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	test_names();
	test_algo(&pw_hash_sha1);
	test_algo(&pw_hash_sha256);
	test_many(&pw_hash_sha1);
	test_many(&pw_hash_sha256);
	test_initial(&pw_hash_sha1);
	test_initial(&pw_hash_sha256);
	test_format();
	test_reflog_read(&pw_hash_sha1);
	test_reflog_read(&pw_hash_sha256);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "could not clean %s\n", tmp);
	return pw_test_done();
}
