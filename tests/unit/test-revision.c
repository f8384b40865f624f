/* The library's revision syntax (pw_revs_*), short ref names (pw_refs_dwim,
 * pw_refname_dwim_match), tag peeling and the ancestry check, over a small
 * history written object by object, for both algorithms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/odb.h"
#include "packwire/packwire.h"
#include "packwire/revision.h"
#include "packwire/revlist.h"
#include "test.h"

static char tmp[] = "/tmp/pw-test-revision-XXXXXX";

static void put(struct pw_odb *odb, int type, const char *text, size_t len, struct pw_oid *out)
{
	CHECK_EQ_INT(pw_odb_write_loose(odb, type, text, len, out), 0);
}

static void commit(struct pw_odb *odb, const struct pw_oid *tree, const struct pw_oid *parent,
                   long when, struct pw_oid *out)
{
	char text[1024], th[PW_MAX_HEXSZ + 1], ph[PW_MAX_HEXSZ + 1];
	int n;

	n = snprintf(text, sizeof(text),
	             "tree %s\n%s%s%sauthor A <a@x> %ld +0000\n"
	             "committer A <a@x> %ld +0000\n\nc\n",
	             pw_oid_to_hex(tree, th), parent ? "parent " : "",
	             parent ? pw_oid_to_hex(parent, ph) : "", parent ? "\n" : "", when, when);
	put(odb, PW_OBJ_COMMIT, text, (size_t)n, out);
}

static void tag(struct pw_odb *odb, const struct pw_oid *target, const char *type, const char *name,
                struct pw_oid *out)
{
	char text[1024], h[PW_MAX_HEXSZ + 1];
	int n = snprintf(text, sizeof(text),
	                 "object %s\ntype %s\ntag %s\ntagger A <a@x> 1700000000 +0000\n\nt\n",
	                 pw_oid_to_hex(target, h), type, name);

	put(odb, PW_OBJ_TAG, text, (size_t)n, out);
}

static int warnings;
static void on_warn(void *data, const char *msg)
{
	(void)data;
	CHECK_STR(msg, "refname 'main' is ambiguous.");
	warnings++;
}

static int count_obj(const struct pw_revlist_obj *o, void *data)
{
	(void)o;
	(*(int *)data)++;
	return 0;
}

static void test_names(void)
{
	CHECK(pw_refname_dwim_match("main", "refs/heads/main"));
	CHECK(pw_refname_dwim_match("main", "refs/tags/main"));
	CHECK(pw_refname_dwim_match("heads/main", "refs/heads/main"));
	CHECK(pw_refname_dwim_match("origin", "refs/remotes/origin/HEAD"));
	CHECK(pw_refname_dwim_match("refs/heads/x", "refs/heads/x"));
	CHECK(!pw_refname_dwim_match("main", "refs/heads/mainline"));
	CHECK(!pw_refname_dwim_match("main", "refs/notes/main"));
}

static void test_algo(const struct pw_hash_algo *algo)
{
	char dir[256], tree_text[128], *full = NULL;
	struct pw_repo *repo = NULL;
	struct pw_odb *odb = NULL;
	struct pw_revs *revs = NULL;
	struct pw_revlist *rl = NULL;
	struct pw_ref_tx *tx;
	struct pw_error err = {0};
	struct pw_oid blob, tree, c1, c2, c3, t1, t2, got, zero;
	unsigned nmatch;
	size_t tl;
	int type, excl, listed;

	warnings = 0;
	snprintf(dir, sizeof(dir), "%s/%s", tmp, algo->name);
	CHECK_EQ_INT(pw_repo_init(&repo, dir, 1, algo, &err), 0);
	if (!repo)
		return;
	CHECK_EQ_INT(pw_odb_open(&odb, pw_repo_objects_dir(repo), algo, &err), 0);
	pw_oid_zero(&zero, algo);
	put(odb, PW_OBJ_BLOB, "hello\n", 6, &blob);
	tl = (size_t)snprintf(tree_text, sizeof(tree_text), "100644 a");
	tree_text[tl++] = '\0';
	memcpy(tree_text + tl, blob.id, algo->rawsz);
	put(odb, PW_OBJ_TREE, tree_text, tl + algo->rawsz, &tree);
	commit(odb, &tree, NULL, 1700000000, &c1);
	commit(odb, &tree, &c1, 1700000100, &c2);
	commit(odb, &tree, &c2, 1700000200, &c3);
	tag(odb, &c2, "commit", "v1", &t1);
	tag(odb, &t1, "tag", "v1-again", &t2);

	CHECK_EQ_INT(pw_ref_tx_new(&tx, repo), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/heads/main", &c3, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/tags/main", &c1, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/tags/v1", &t1, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_update(tx, "refs/tags/v2", &t2, &zero, 0), 0);
	CHECK_EQ_INT(pw_ref_tx_commit(tx), 0);
	pw_ref_tx_free(tx);
	CHECK_EQ_INT(pw_refs_create_symref(repo, "HEAD", "refs/heads/main"), 0);

	/* short names: tags come before heads, as in Git */
	CHECK_EQ_INT(pw_refs_dwim(repo, "main", &got, &full, &nmatch), 0);
	CHECK_STR(full, "refs/tags/main");
	CHECK(pw_oid_equal(&got, &c1));
	CHECK_EQ_INT(nmatch, 2);
	free(full);
	CHECK_EQ_INT(pw_refs_dwim(repo, "@", &got, NULL, NULL), 0);
	CHECK(pw_oid_equal(&got, &c3));
	CHECK_EQ_INT(pw_refs_dwim(repo, "nosuch", &got, &full, &nmatch), PW_ENOTFOUND);
	CHECK(full == NULL);
	CHECK_EQ_INT(nmatch, 0);

	/* peeling and ancestry */
	CHECK_EQ_INT(pw_odb_peel(odb, &t2, &got, &type, &err), 2);
	CHECK(pw_oid_equal(&got, &c2));
	CHECK_EQ_INT(type, PW_OBJ_COMMIT);
	CHECK_EQ_INT(pw_odb_peel(odb, &c1, &got, &type, &err), 0);
	CHECK(pw_oid_equal(&got, &c1));
	CHECK_EQ_INT(pw_odb_is_ancestor(odb, &c1, &c3, &err), 1);
	CHECK_EQ_INT(pw_odb_is_ancestor(odb, &c3, &c1, &err), 0);
	CHECK_EQ_INT(pw_odb_is_ancestor(odb, &c2, &c2, &err), 1);
	CHECK_EQ_INT(pw_odb_is_ancestor(odb, &blob, &c3, &err), 0);

	/* revision syntax */
	CHECK_EQ_INT(pw_revs_new(&revs, repo, odb), 0);
	pw_revs_set_warn(revs, on_warn, NULL);
	CHECK_EQ_INT(pw_revs_resolve(revs, "HEAD~2", &got), 0);
	CHECK(pw_oid_equal(&got, &c1));
	CHECK_EQ_INT(pw_revs_resolve(revs, "heads/main^", &got), 0);
	CHECK(pw_oid_equal(&got, &c2));
	CHECK_EQ_INT(pw_revs_resolve(revs, "v2^{}", &got), 0);
	CHECK(pw_oid_equal(&got, &c2));
	CHECK_EQ_INT(pw_revs_resolve(revs, "v2^{tag}", &got), 0);
	CHECK(pw_oid_equal(&got, &t2));
	CHECK_EQ_INT(pw_revs_resolve(revs, "v1^{tree}", &got), 0);
	CHECK(pw_oid_equal(&got, &tree));
	CHECK_EQ_INT(pw_revs_resolve(revs, "v1~1", &got), 0);
	CHECK(pw_oid_equal(&got, &c1));
	CHECK_EQ_INT(warnings, 0);
	CHECK_EQ_INT(pw_revs_resolve(revs, "main", &got), 0);
	CHECK(pw_oid_equal(&got, &c1));
	CHECK_EQ_INT(warnings, 1);
	CHECK_EQ_INT(pw_revs_resolve(revs, "HEAD^{blob}", &got), PW_EINVAL);
	CHECK_STR(pw_revs_error(revs)->msg, "'HEAD^{blob}': not a blob");
	CHECK_EQ_INT(pw_revs_resolve(revs, "HEAD^{nope}", &got), PW_EINVAL);
	CHECK_STR(pw_revs_error(revs)->msg, "bad revision 'HEAD^{nope}'");
	CHECK_EQ_INT(pw_revs_resolve(revs, "HEAD~3^2", &got), PW_ENOTFOUND);
	CHECK_EQ_INT(pw_revs_resolve(revs, "nosuch~1", &got), PW_ENOTFOUND);
	CHECK_STR(pw_revs_error(revs)->msg, "ambiguous argument 'nosuch~1': unknown revision or "
	                                    "path not in the working tree.");

	/* arguments into a walk: A..B is ^A B (the tag itself is recorded;
	 * the walk peels it), --not flips */
	CHECK_EQ_INT(pw_revlist_new(&rl, odb, 0), 0);
	CHECK_EQ_INT(pw_revs_add(revs, rl, "v1..heads/main"), 0);
	CHECK_EQ_INT(pw_revs_add(revs, rl, "--not"), 0);
	CHECK_EQ_INT(pw_revs_add(revs, rl, "HEAD~2"), 0);
	CHECK_EQ_INT(pw_revs_count(revs), 3);
	CHECK(pw_oid_equal(pw_revs_get(revs, 0, &excl), &t1) && excl == 1);
	CHECK(pw_oid_equal(pw_revs_get(revs, 1, &excl), &c3) && excl == 0);
	CHECK(pw_oid_equal(pw_revs_get(revs, 2, &excl), &c1) && excl == 1);
	listed = 0;
	CHECK_EQ_INT(pw_revlist_run(rl, count_obj, &listed), 0);
	CHECK_EQ_INT(listed, 1); /* c3 alone */
	pw_revlist_free(rl);

	pw_revs_free(revs);
	pw_odb_free(odb);
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
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		fprintf(stderr, "could not clean %s\n", tmp);
	return pw_test_done();
}
