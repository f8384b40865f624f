/* The translation engine (pw_compat_xlate) in both directions, its errors
 * (a missing object, a gitlink of unknown id named with its path), and the
 * map's updates: new loose entries written under the lock, seen by another
 * open handle after a miss (reload). Each test runs for both algorithms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat/map-priv.h"
#include "packwire/packwire.h"
#include "server/compat-receive.h"
#include "server/receive-cmds.h"
#include "test.h"
#include "util/fs.h"

static const struct pw_hash_algo *other(const struct pw_hash_algo *a)
{
	return a->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
}

static int mkdir_tmp(char *dir)
{
	if (!mkdtemp(dir)) {
		CHECK(0);
		return -1;
	}
	return 0;
}

static void put(struct pw_odb *odb, int type, const void *data, size_t len, struct pw_oid *oid)
{
	CHECK_EQ_INT(pw_odb_write_loose(odb, type, data, len, oid), 0);
}

/* tree with one entry (mode, name, id) */
static void tree1(struct pw_buf *b, const char *mode, const char *name, const struct pw_oid *oid)
{
	pw_buf_reset(b);
	pw_buf_addf(b, "%s %s", mode, name);
	pw_buf_addch(b, '\0');
	pw_buf_add(b, oid->id, pw_oid_rawsz(oid));
}

static void commit_of(struct pw_buf *b, const struct pw_oid *tree)
{
	char hex[PW_MAX_HEXSZ + 1];

	pw_buf_reset(b);
	pw_buf_addf(b, "tree %s\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n\nmsg\n",
	            pw_oid_to_hex(tree, hex));
}

struct sink {
	struct pw_odb *odb;
	int n;
};

static int emit_to_odb(void *data, const struct pw_oid *from, const struct pw_oid *to, int type,
                       const void *content, size_t len, struct pw_error *err)
{
	struct sink *s = data;
	struct pw_oid got;

	(void)from;
	(void)err;
	if (pw_odb_write_loose(s->odb, type, content, len, &got) || !pw_oid_equal(&got, to))
		return PW_ERROR;
	s->n++;
	return 0;
}

/* a -> b, then b -> a again: the same ids come back */
static void test_round_trip(const struct pw_hash_algo *a)
{
	const struct pw_hash_algo *b = other(a);
	char da[] = "/tmp/pw-test-xlate-a-XXXXXX", db[] = "/tmp/pw-test-xlate-b-XXXXXX";
	struct pw_odb *oa = NULL, *ob = NULL;
	struct pw_compat_xlate *x = NULL, *back = NULL;
	struct pw_compat_xlate_opts xo = {0};
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_oid blob, tree, commit, cb, again, rev;
	struct pw_error err;
	struct sink s = {0};

	if (mkdir_tmp(da) || mkdir_tmp(db))
		return;
	CHECK_EQ_INT(pw_odb_open(&oa, da, a, &err), 0);
	CHECK_EQ_INT(pw_odb_open(&ob, db, b, &err), 0);
	put(oa, PW_OBJ_BLOB, "hello\n", 6, &blob);
	tree1(&buf, "100644", "a.txt", &blob);
	put(oa, PW_OBJ_TREE, buf.data, buf.len, &tree);
	commit_of(&buf, &tree);
	put(oa, PW_OBJ_COMMIT, buf.data, buf.len, &commit);

	xo.from = a;
	xo.to = b;
	xo.odb = oa;
	xo.emit = emit_to_odb;
	xo.emit_data = &s;
	s.odb = ob;
	CHECK_EQ_INT(pw_compat_xlate_new(&x, &xo), 0);
	CHECK_EQ_INT(pw_compat_xlate_object(x, &commit, &err), 0);
	CHECK_EQ_INT(s.n, 3);
	CHECK_EQ_INT(pw_compat_xlate_count(x), 3);
	CHECK_EQ_INT(pw_compat_xlate_lookup(x, &commit, &cb), 0);
	CHECK_EQ_INT(cb.algo, b->id);
	CHECK_EQ_INT(pw_compat_xlate_reverse(x, &cb, &rev), 0);
	CHECK(pw_oid_equal(&rev, &commit));
	/* a second call translates nothing again */
	CHECK_EQ_INT(pw_compat_xlate_object(x, &tree, &err), 0);
	CHECK_EQ_INT(s.n, 3);

	xo.from = b;
	xo.to = a;
	xo.odb = ob;
	xo.emit = NULL;
	CHECK_EQ_INT(pw_compat_xlate_new(&back, &xo), 0);
	CHECK_EQ_INT(pw_compat_xlate_object(back, &cb, &err), 0);
	CHECK_EQ_INT(pw_compat_xlate_lookup(back, &cb, &again), 0);
	CHECK(pw_oid_equal(&again, &commit));

	/* options that cannot work: one algorithm, an odb of the other */
	{
		struct pw_compat_xlate *bad = NULL;

		xo.to = b;
		CHECK_EQ_INT(pw_compat_xlate_new(&bad, &xo), PW_EINVAL);
		xo.to = a;
		xo.odb = oa;
		CHECK_EQ_INT(pw_compat_xlate_new(&bad, &xo), PW_EINVAL);
		CHECK(bad == NULL);
	}
	pw_compat_xlate_free(x);
	pw_compat_xlate_free(back);
	pw_odb_free(oa);
	pw_odb_free(ob);
	pw_buf_free(&buf);
	pw_fs_remove_tree(da, 0);
	pw_fs_remove_tree(db, 0);
}

/* a missing reference and an unknown gitlink: refused, named */
static void test_errors(const struct pw_hash_algo *a)
{
	char da[] = "/tmp/pw-test-xlate-e-XXXXXX";
	struct pw_odb *oa = NULL;
	struct pw_compat_xlate *x = NULL;
	struct pw_compat_xlate_opts xo = {0};
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_oid ghost, sub, mod, top, commit;
	struct pw_error err;

	if (mkdir_tmp(da))
		return;
	CHECK_EQ_INT(pw_odb_open(&oa, da, a, &err), 0);
	CHECK_EQ_INT(pw_hash_buf(a, "ghost", 5, &ghost), 0);
	commit_of(&buf, &ghost); /* its tree is not there */
	put(oa, PW_OBJ_COMMIT, buf.data, buf.len, &commit);
	xo.from = a;
	xo.to = other(a);
	xo.odb = oa;
	CHECK_EQ_INT(pw_compat_xlate_new(&x, &xo), 0);
	memset(&err, 0, sizeof(err));
	CHECK_EQ_INT(pw_compat_xlate_object(x, &commit, &err), PW_ENOTFOUND);
	CHECK(strstr(err.msg, "is missing") != NULL);

	CHECK_EQ_INT(pw_hash_buf(a, "submodule", 9, &sub), 0);
	tree1(&buf, "160000", "sub", &sub);
	put(oa, PW_OBJ_TREE, buf.data, buf.len, &mod);
	tree1(&buf, "40000", "mod", &mod);
	put(oa, PW_OBJ_TREE, buf.data, buf.len, &top);
	commit_of(&buf, &top);
	put(oa, PW_OBJ_COMMIT, buf.data, buf.len, &commit);
	memset(&err, 0, sizeof(err));
	CHECK_EQ_INT(pw_compat_xlate_object(x, &commit, &err), PW_ENOTFOUND);
	CHECK(strstr(err.msg, "gitlink mod/sub") != NULL);
	CHECK_EQ_INT(pw_compat_xlate_count(x), 0);
	pw_compat_xlate_free(x);
	pw_odb_free(oa);
	pw_buf_free(&buf);
	pw_fs_remove_tree(da, 0);
}

/* map updates: written under the lock, seen by another handle on a miss */
static void test_map_update(const struct pw_hash_algo *s)
{
	char dir[] = "/tmp/pw-test-mapupd-XXXXXX", lock[300];
	struct pw_odb *odb = NULL;
	struct pw_compat_map *reader = NULL, *writer = NULL;
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_oid oids[3], c, back;
	struct pw_error err;
	char *path;
	FILE *f;

	if (mkdir_tmp(dir))
		return;
	CHECK_EQ_INT(pw_odb_open(&odb, dir, s, &err), 0);
	put(odb, PW_OBJ_BLOB, "one\n", 4, &oids[0]);
	tree1(&buf, "100644", "one", &oids[0]);
	put(odb, PW_OBJ_TREE, buf.data, buf.len, &oids[1]);
	commit_of(&buf, &oids[1]);
	put(odb, PW_OBJ_COMMIT, buf.data, buf.len, &oids[2]);
	CHECK_EQ_INT(pw_compat_map_open(&reader, dir, s, other(s), &err), 0);
	CHECK_EQ_INT(pw_compat_map_open(&writer, dir, s, other(s), &err), 0);
	CHECK_EQ_INT(pw_compat_from_storage(reader, &oids[2], &c), PW_ENOTFOUND);

	/* a held lock: refused, nothing written */
	path = pw_compat_loose_idx_path(dir);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	if ((f = fopen(lock, "w")))
		fclose(f);
	CHECK_EQ_INT(pw_compat_map_add_objects(writer, NULL, &oids[2], 1, &err), PW_ELOCKED);
	CHECK(!pw_fs_exists(path));
	remove(lock);

	/* the commit alone: what it needs is translated too, only it is written */
	CHECK_EQ_INT(pw_compat_map_add_objects(writer, NULL, &oids[2], 1, &err), 0);
	CHECK(!pw_fs_exists(lock));
	CHECK_EQ_INT(pw_compat_from_storage(reader, &oids[2], &c), 0); /* reloaded */
	CHECK_EQ_INT(pw_compat_to_storage(reader, &c, &back), 0);
	CHECK(pw_oid_equal(&back, &oids[2]));
	CHECK_EQ_INT(pw_compat_from_storage(reader, &oids[0], &c), PW_ENOTFOUND);
	/* the rest; an entry already there is not written twice */
	CHECK_EQ_INT(pw_compat_map_add_objects(writer, NULL, oids, 3, &err), 0);
	pw_buf_reset(&buf);
	CHECK_EQ_INT(pw_fs_read_file(path, &buf, 0, &err), 0);
	CHECK_EQ_INT(buf.len, strlen(PW_LOOSE_IDX_HEADER) + 3 * (s->hexsz + other(s)->hexsz + 2));
	CHECK_EQ_INT(pw_compat_loose_idx_parse(buf.data, buf.len, s, other(s), NULL, NULL, &err),
	             0);
	CHECK_EQ_INT(pw_compat_from_storage(reader, &oids[0], &c), 0);
	free(path);
	pw_compat_map_free(reader);
	pw_compat_map_free(writer);
	pw_odb_free(odb);
	pw_buf_free(&buf);
	pw_fs_remove_tree(dir, 0);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if ((f = fopen(p, "w"))) {
		fputs(text, f);
		fclose(f);
	}
}

/* receive-pack's translation of a command's ids (pw_rp_compat_cmd) and the
 * refusal of a repository without the extension */
static void test_commands(const struct pw_hash_algo *s)
{
	const struct pw_hash_algo *w = other(s);
	char dir[] = "/tmp/pw-test-rpc-XXXXXX", objs[256], cfg[256], hex[PW_MAX_HEXSZ + 1];
	struct pw_repo *repo = NULL;
	struct pw_rp_compat *c = NULL;
	struct pw_odb *odb = NULL;
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_oid blob, tree, commit, wcommit, unknown;
	struct pw_receive_cmd cmd;
	struct pw_error err;

	if (mkdir_tmp(dir))
		return;
	snprintf(objs, sizeof(objs), "%s/objects", dir);
	snprintf(cfg, sizeof(cfg), "%s/refs/heads", dir);
	CHECK_EQ_INT(pw_fs_mkdir_p(cfg, &err), 0);
	CHECK_EQ_INT(pw_fs_mkdir_p(objs, &err), 0);
	write_text(dir, "HEAD", "ref: refs/heads/main\n");
	snprintf(cfg, sizeof(cfg),
	         "[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
	         "[extensions]\n\tobjectformat = %s\n",
	         s->name);
	write_text(dir, "config", cfg);
	CHECK_EQ_INT(pw_odb_open(&odb, objs, s, &err), 0);
	put(odb, PW_OBJ_BLOB, "x\n", 2, &blob);
	tree1(&buf, "100644", "x", &blob);
	put(odb, PW_OBJ_TREE, buf.data, buf.len, &tree);
	commit_of(&buf, &tree);
	put(odb, PW_OBJ_COMMIT, buf.data, buf.len, &commit);
	CHECK_EQ_INT(pw_compat_build(objs, s, w, NULL, &err), 0);

	/* no extension: refused, saying what to do */
	CHECK_EQ_INT(pw_repo_open_gitdir(&repo, dir, &err), 0);
	memset(&err, 0, sizeof(err));
	CHECK(pw_rp_compat_open(&c, repo, w->name, &err) != 0);
	CHECK(strstr(err.msg, "compatObjectFormat") != NULL);
	CHECK_EQ_INT(pw_rp_compat_open(&c, repo, s->name, &err), 0); /* native */
	CHECK(c == NULL);
	CHECK(pw_rp_compat_open(&c, repo, "md5", &err) != 0);
	pw_repo_free(repo);
	repo = NULL;

	snprintf(cfg, sizeof(cfg),
	         "[core]\n\trepositoryformatversion = 1\n\tbare = true\n"
	         "[extensions]\n\tobjectformat = %s\n\tcompatobjectformat = %s\n",
	         s->name, w->name);
	write_text(dir, "config", cfg);
	CHECK_EQ_INT(pw_repo_open_gitdir(&repo, dir, &err), 0);
	CHECK_EQ_INT(pw_rp_compat_open(&c, repo, w->name, &err), 0);
	if (!c)
		goto out;
	CHECK(pw_rp_compat_wire(c) == w);
	CHECK_EQ_INT(pw_rp_compat_to_wire(c, &commit, &wcommit), 0);
	CHECK_EQ_INT(wcommit.algo, w->id);
	CHECK_EQ_INT(pw_hash_buf(w, "nobody", 6, &unknown), 0);

	memset(&cmd, 0, sizeof(cmd));
	cmd.name = "refs/heads/main";
	pw_oid_zero(&cmd.old_oid, w);
	cmd.new_oid = wcommit;
	CHECK(pw_rp_compat_cmd(c, &cmd, &err) == NULL);
	CHECK(pw_oid_equal(&cmd.new_oid, &commit));
	CHECK(pw_oid_is_zero(&cmd.old_oid) && cmd.old_oid.algo == s->id);

	cmd.old_oid = wcommit;
	pw_oid_zero(&cmd.new_oid, w);
	CHECK(pw_rp_compat_cmd(c, &cmd, &err) == NULL);
	CHECK(pw_oid_equal(&cmd.old_oid, &commit));

	cmd.old_oid = unknown;
	cmd.new_oid = wcommit;
	CHECK_STR(pw_rp_compat_cmd(c, &cmd, &err), "stale info");
	CHECK(strstr(err.msg, pw_oid_to_hex(&unknown, hex)) != NULL);

	pw_oid_zero(&cmd.old_oid, w);
	cmd.new_oid = unknown;
	CHECK_STR(pw_rp_compat_cmd(c, &cmd, &err), "missing necessary objects");
	CHECK(strstr(err.msg, "refs/heads/main") != NULL);
out:
	pw_rp_compat_free(c);
	pw_repo_free(repo);
	pw_odb_free(odb);
	pw_buf_free(&buf);
	pw_fs_remove_tree(dir, 0);
}

int main(void)
{
	const struct pw_hash_algo *algos[] = {&pw_hash_sha1, &pw_hash_sha256};

	for (size_t i = 0; i < 2; i++) {
		test_round_trip(algos[i]);
		test_errors(algos[i]);
		test_map_update(algos[i]);
		test_commands(algos[i]);
	}
	return pw_test_done();
}
