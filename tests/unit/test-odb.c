/* The object database on loose objects (write, read, header, foreach,
 * alternates, corruption) and the commit/tree/tag parsers, for both
 * algorithms. Packs are covered by tests/interop/t-cat-file.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "odb/loose.h"
#include "odb/cache.h"
#include "packwire/odb.h"
#include "packwire/packwire.h"
#include "util/fs.h"
#include "test.h"

static char root[256];

static int count_cb(const struct pw_oid *oid, void *data)
{
	(void)oid;
	(*(int *)data)++;
	return 0;
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (f) {
		fwrite(data, 1, len, f);
		fclose(f);
	}
}

static void test_loose(const struct pw_hash_algo *algo)
{
	struct pw_buf dir = PW_BUF_INIT, alt = PW_BUF_INIT, path = PW_BUF_INIT;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_odb *odb = NULL, *odb2 = NULL;
	struct pw_oid oid, oid2, missing;
	uint64_t size;
	int type, n = 0;

	pw_buf_addf(&dir, "%s/%s/objects", root, algo->name);
	pw_buf_addf(&alt, "%s/%s/other/objects", root, algo->name);
	CHECK_EQ_INT(pw_fs_mkdir_p(dir.data, &err), 0);
	CHECK_EQ_INT(pw_fs_mkdir_p(alt.data, &err), 0);
	CHECK_EQ_INT(pw_odb_open(&odb, dir.data, algo, &err), 0);
	if (!odb)
		return;
	CHECK(pw_odb_algo(odb) == algo);
	CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_BLOB, "hello\n", 6, &oid), 0);
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, "hello\n", 6, &oid2), 0);
	CHECK(pw_oid_equal(&oid, &oid2));
	CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_BLOB, "hello\n", 6, &oid), 0); /* again */
	CHECK_EQ_INT(pw_odb_write_loose(odb, PW_OBJ_TREE, "", 0, &oid2), 0);
	CHECK(pw_oid_equal(&oid2, algo->empty_tree));
	CHECK_EQ_INT(pw_odb_exists(odb, &oid), 1);
	CHECK_EQ_INT(pw_odb_read(odb, &oid, &type, &out), 0);
	CHECK_EQ_INT(type, PW_OBJ_BLOB);
	CHECK_EQ_INT(out.len, 6);
	CHECK(!memcmp(out.data, "hello\n", 6));
	CHECK_EQ_INT(pw_odb_read_header(odb, &oid2, &type, &size), 0);
	CHECK_EQ_INT(type, PW_OBJ_TREE);
	CHECK_EQ_INT(size, 0);
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, "nope", 4, &missing), 0);
	CHECK_EQ_INT(pw_odb_exists(odb, &missing), 0);
	CHECK_EQ_INT(pw_odb_read(odb, &missing, &type, &out), PW_ENOTFOUND);
	CHECK(strstr(pw_odb_error(odb)->msg, "not found") != NULL);
	CHECK_EQ_INT(pw_odb_foreach(odb, count_cb, &n), 0);
	CHECK_EQ_INT(n, 2);

	/* an id of the other algorithm is refused */
	CHECK_EQ_INT(pw_object_hash(algo == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1,
	                            PW_OBJ_BLOB, "x", 1, &oid2),
	             0);
	CHECK_EQ_INT(pw_odb_read(odb, &oid2, &type, &out), PW_EINVAL);

	/* a corrupt copy: verification catches a swapped file */
	pw_loose_path(&path, dir.data, &missing);
	{
		uint8_t z[128];
		uLongf zl = sizeof(z);
		char raw[] = "blob 4\0abcd";

		compress(z, &zl, (const Bytef *)raw, sizeof(raw) - 1);
		*strrchr(path.data, '/') = '\0';
		pw_fs_mkdir_p(path.data, NULL);
		pw_loose_path(&path, dir.data, &missing);
		write_file(path.data, z, zl);
	}
	CHECK_EQ_INT(pw_odb_read(odb, &missing, &type, &out), 0); /* no check by default */
	pw_odb_set_verify(odb, 1);
	CHECK_EQ_INT(pw_odb_read(odb, &missing, &type, &out), PW_ECORRUPT);
	CHECK(strstr(pw_odb_error(odb)->msg, "hashes to") != NULL);
	pw_odb_set_verify(odb, 0);
	write_file(path.data, "not zlib at all", 15);
	CHECK_EQ_INT(pw_odb_read(odb, &missing, &type, &out), PW_ECORRUPT);
	CHECK(strstr(pw_odb_error(odb)->msg, path.data) != NULL);
	unlink(path.data);

	/* alternates: a relative path, resolved against the objects directory */
	pw_buf_reset(&path);
	pw_buf_addf(&path, "%s/info", alt.data);
	pw_fs_mkdir_p(path.data, NULL);
	pw_buf_adds(&path, "/alternates");
	write_file(path.data, "# comment\n../../objects\n\n", 26);
	CHECK_EQ_INT(pw_odb_open(&odb2, alt.data, algo, &err), 0);
	if (odb2) {
		CHECK_EQ_INT(pw_odb_exists(odb2, &oid), 1);
		CHECK_EQ_INT(pw_odb_read(odb2, &oid, &type, &out), 0);
		CHECK_EQ_INT(out.len, 6);
		n = 0;
		pw_odb_foreach(odb2, count_cb, &n);
		CHECK_EQ_INT(n, 2);
		pw_odb_free(odb2);
	}
	/* an alternate whose repository uses the other algorithm */
	pw_buf_reset(&path);
	pw_buf_addf(&path, "%s/%s/config", root, algo->name);
	pw_buf_reset(&out);
	pw_buf_addf(&out,
	            "[core]\n\trepositoryformatversion = 1\n[extensions]\n\tobjectformat = %s\n",
	            algo == &pw_hash_sha1 ? "sha256" : "sha1");
	write_file(path.data, out.data, out.len);
	CHECK_EQ_INT(pw_odb_open(&odb2, alt.data, algo, &err), PW_EMISMATCH);
	CHECK(strstr(err.msg, "alternate") != NULL);
	unlink(path.data);
	/* an alternates cycle stops (each directory once) */
	pw_buf_reset(&path);
	pw_buf_addf(&path, "%s/info", dir.data);
	pw_fs_mkdir_p(path.data, NULL);
	pw_buf_adds(&path, "/alternates");
	pw_buf_reset(&out);
	pw_buf_addf(&out, "%s\n", alt.data);
	write_file(path.data, out.data, out.len);
	CHECK_EQ_INT(pw_odb_open(&odb2, alt.data, algo, &err), 0);
	pw_odb_free(odb2);
	unlink(path.data);

	pw_odb_free(odb);
	pw_buf_free(&dir);
	pw_buf_free(&alt);
	pw_buf_free(&path);
	pw_buf_free(&out);
}

static void test_decode(void)
{
	struct {
		const char *raw;
		size_t len;
		int rc;
		const char *msg;
	} cases[] = {
	        {"blob 5\0hello", 12, 0, NULL},
	        {"blob 12\0ten bytes!", 18, PW_ECORRUPT, "header says 12 bytes, inflated 10"},
	        {"blob 3\0ten bytes!", 17, PW_ECORRUPT, "inflated"},
	        {"blub 1\0x", 8, PW_ECORRUPT, "unknown type"},
	        {"blob x\0x", 8, PW_ECORRUPT, "no size"},
	        {"blob 01\0x", 9, PW_ECORRUPT, "leading zero"},
	        {"blob 1x\0x", 9, PW_ECORRUPT, "after the size"},
	        {"blob 99999999999999999999999\0x", 30, PW_ECORRUPT, "overflow"},
	        {"blob 1", 6, PW_ECORRUPT, "NUL"},
	        {"blob", 4, PW_ECORRUPT, "no type"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t z[256];
		uLongf zl = sizeof(z);
		struct pw_buf out = PW_BUF_INIT;
		struct pw_error err = {0};
		uint64_t size;
		int type, rc;

		compress(z, &zl, (const Bytef *)cases[i].raw, cases[i].len);
		rc = pw_loose_decode(z, zl, &type, &size, &out, "obj", &err);
		CHECK_EQ_INT(rc, cases[i].rc);
		if (cases[i].msg && !strstr(err.msg, cases[i].msg)) {
			fprintf(stderr, "case %zu: '%s' lacks '%s'\n", i, err.msg, cases[i].msg);
			CHECK(0);
		}
		/* trailing garbage after a valid stream */
		if (!cases[i].rc) {
			z[zl] = 'x';
			CHECK_EQ_INT(pw_loose_decode(z, zl + 1, &type, &size, &out, "o", &err),
			             PW_ECORRUPT);
			CHECK(strstr(err.msg, "garbage") != NULL);
			/* truncated stream */
			CHECK_EQ_INT(pw_loose_decode(z, zl - 3, &type, &size, &out, "o", &err),
			             PW_ECORRUPT);
		}
		pw_buf_free(&out);
	}
}

/* Feed z in pieces of `piece` bytes; the first error, else finish's. */
static int stream(const struct pw_hash_algo *algo, const uint8_t *z, size_t zl, size_t piece,
                  struct pw_oid *oid, int *type, uint64_t *size, struct pw_error *err)
{
	struct pw_loose_stream s;
	size_t off;
	int rc = pw_loose_stream_init(&s, algo, 0, "obj", err);

	for (off = 0; !rc && off < zl; off += piece)
		rc = pw_loose_stream_feed(&s, z + off, zl - off < piece ? zl - off : piece, err);
	if (!rc)
		rc = pw_loose_stream_finish(&s, oid, type, size, err);
	pw_loose_stream_free(&s);
	return rc;
}

/* The streaming decoder: the same verdicts as pw_loose_decode, the id
 * computed while inflating, and a lying header stopped at the first byte
 * past it (issue 26: it never holds an object whole). */
static void test_stream(const struct pw_hash_algo *algo)
{
	static const char *const bad[] = {"blob 12\0ten bytes!", "blob 3\0ten bytes!", "blub 1\0x",
	                                  "blob 01\0x",          "blob 1x\0x",         "blob"};
	static const size_t badlen[] = {18, 17, 8, 9, 9, 4};
	size_t pieces[] = {1, 3, 7, 100000}, i, k;
	uint8_t *big = calloc(1, 1 << 20), *z = malloc(1 << 20);
	struct pw_error err = {0};
	struct pw_oid oid, want;
	uint64_t size;
	uLongf zl;
	int type;
	char hdr[64];

	if (!big || !z)
		return;
	/* a good one, fed in pieces of every size */
	memcpy(big, "blob 70000", 10);
	for (i = 11; i < 70011; i++)
		big[i] = (uint8_t)(i * 7);
	zl = 1 << 20;
	compress2(z, &zl, big, 70011, 6);
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, big + 11, 70000, &want), 0);
	for (k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
		CHECK_EQ_INT(stream(algo, z, zl, pieces[k], &oid, &type, &size, &err), 0);
		CHECK(pw_oid_equal(&oid, &want));
		CHECK_EQ_INT(type, PW_OBJ_BLOB);
		CHECK_EQ_INT((long long)size, 70000);
	}
	/* trailing garbage, a truncated stream */
	z[zl] = 'x';
	CHECK_EQ_INT(stream(algo, z, zl + 1, 5, &oid, &type, &size, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "garbage") != NULL);
	CHECK_EQ_INT(stream(algo, z, zl - 3, 5, &oid, &type, &size, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "truncated") != NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		zl = 1 << 20;
		compress(z, &zl, (const Bytef *)bad[i], badlen[i]);
		CHECK_EQ_INT(stream(algo, z, zl, 2, &oid, &type, &size, &err), PW_ECORRUPT);
	}
	/* a small stream that declares a huge object: fails once the data ends,
	 * after hashing what came (the declared size is never allocated) */
	snprintf(hdr, sizeof(hdr), "blob %llu", 1ull << 39);
	memset(big, 0, 1 << 20);
	memcpy(big, hdr, strlen(hdr) + 1);
	zl = 1 << 20;
	compress2(z, &zl, big, 1 << 20, 9);
	CHECK_EQ_INT(stream(algo, z, zl, 4096, &oid, &type, &size, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "header says 549755813888 bytes, inflated") != NULL);
	/* one that inflates past what it declares: stopped there */
	memcpy(big, "blob 10", 8);
	zl = 1 << 20;
	compress2(z, &zl, big, 1 << 20, 9);
	CHECK_EQ_INT(stream(algo, z, zl, 4096, &oid, &type, &size, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "inflates to more than the 10 bytes its header declares") != NULL);
	/* past the loose bound (2^40) */
	snprintf(hdr, sizeof(hdr), "blob %llu", (1ull << 40) + 1);
	memcpy(big, hdr, strlen(hdr) + 1);
	zl = 1 << 20;
	compress2(z, &zl, big, strlen(hdr) + 1, 9);
	CHECK_EQ_INT(stream(algo, z, zl, 4096, &oid, &type, &size, &err), PW_ETOOBIG);
	free(big);
	free(z);
}

static void test_parse(const struct pw_hash_algo *algo)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_commit_info c;
	struct pw_tag_info t;
	struct pw_tree_entry e;
	char hex[PW_MAX_HEXSZ + 1];
	size_t pos = 0, cut;

	pw_oid_to_hex(algo->empty_tree, hex);
	pw_buf_addf(&b,
	            "tree %s\nparent %s\nparent %s\nparent %s\nauthor A <a@b> 1 +0000\n"
	            "committer C <c@d> 1700000000 +0100\n\nmsg\n",
	            hex, hex, hex, hex);
	CHECK_EQ_INT(pw_commit_parse(&c, b.data, b.len, algo, &err), 0);
	CHECK(pw_oid_equal(&c.tree, algo->empty_tree));
	CHECK_EQ_INT(c.nr_parents, 3);
	CHECK_EQ_INT(c.commit_time, 1700000000);
	pw_commit_info_free(&c);
	for (cut = 0; cut < 5 + algo->hexsz; cut++)
		CHECK_EQ_INT(pw_commit_parse(&c, b.data, cut, algo, &err), PW_ECORRUPT);
	pw_buf_reset(&b);
	pw_buf_addf(&b, "tree %s\nparent %.10s\n", hex, hex);
	CHECK_EQ_INT(pw_commit_parse(&c, b.data, b.len, algo, &err), PW_ECORRUPT);

	pw_buf_reset(&b);
	pw_buf_adds(&b, "100644 a.txt");
	pw_buf_add(&b, "", 1);
	pw_buf_add(&b, algo->empty_tree->id, algo->rawsz);
	pw_buf_adds(&b, "40000 sub");
	pw_buf_add(&b, "", 1);
	pw_buf_add(&b, algo->empty_tree->id, algo->rawsz);
	CHECK_EQ_INT(pw_tree_next(b.data, b.len, &pos, algo, &e, &err), 1);
	CHECK_EQ_INT(e.mode, 0100644);
	CHECK_EQ_INT(e.name_len, 5);
	CHECK(!memcmp(e.name, "a.txt", 5));
	CHECK_EQ_INT(pw_tree_next(b.data, b.len, &pos, algo, &e, &err), 1);
	CHECK_EQ_INT(e.mode, 040000);
	CHECK(pw_oid_equal(&e.oid, algo->empty_tree));
	CHECK_EQ_INT(pw_tree_next(b.data, b.len, &pos, algo, &e, &err), 0);
	pos = 0;
	CHECK_EQ_INT(pw_tree_next(b.data, b.len - 1, &pos, algo, &e, &err), 1);
	CHECK_EQ_INT(pw_tree_next(b.data, b.len - 1, &pos, algo, &e, &err), PW_ECORRUPT);
	pos = 0;
	CHECK_EQ_INT(pw_tree_next("x00644 a", 8, &pos, algo, &e, &err), PW_ECORRUPT);

	pw_buf_reset(&b);
	pw_buf_addf(&b, "object %s\ntype tree\ntag v1\ntagger T <t> 1 +0000\n\nm\n", hex);
	CHECK_EQ_INT(pw_tag_parse(&t, b.data, b.len, algo, &err), 0);
	CHECK_EQ_INT(t.type, PW_OBJ_TREE);
	CHECK_EQ_INT(t.name_len, 2);
	CHECK(pw_oid_equal(&t.object, algo->empty_tree));
	for (cut = 0; cut < b.len - 30; cut++)
		CHECK(pw_tag_parse(&t, b.data, cut, algo, &err) == PW_ECORRUPT);
	pw_buf_free(&b);
}

static void test_cache(void)
{
	struct pw_base_cache *c;
	struct pw_base_cache_hit hit;
	struct pw_buf b = PW_BUF_INIT;
	uint64_t i, hits, misses;
	size_t bytes;

	CHECK_EQ_INT(pw_base_cache_new(&c, 4096), 0);
	if (!c)
		return;
	for (i = 0; i < 100; i++) {
		pw_buf_reset(&b);
		pw_buf_addf(&b, "object %03llu.......", (unsigned long long)i);
		pw_buf_grow(&b, 100);
		pw_buf_setlen(&b, 100);
		CHECK_EQ_INT(pw_base_cache_put(c, 1, i, PW_OBJ_BLOB, &b), 1);
		CHECK_EQ_INT(pw_base_cache_get(c, 1, 0, &hit), 1); /* keep 0 hot */
	}
	pw_base_cache_stats(c, &hits, &misses, &bytes);
	CHECK(bytes <= 4096);
	CHECK_EQ_INT(pw_base_cache_get(c, 1, 0, &hit), 1);
	CHECK(!memcmp(hit.data, "object 000", 10));
	CHECK_EQ_INT(pw_base_cache_get(c, 1, 99, &hit), 1);
	CHECK_EQ_INT(pw_base_cache_get(c, 1, 5, &hit), 0);  /* evicted */
	CHECK_EQ_INT(pw_base_cache_get(c, 2, 99, &hit), 0); /* other pack */
	pw_buf_reset(&b);
	pw_buf_grow(&b, 2000);
	pw_buf_setlen(&b, 2000); /* over a quarter of the limit */
	CHECK_EQ_INT(pw_base_cache_put(c, 1, 1000, PW_OBJ_BLOB, &b), 0);
	pw_base_cache_drop_pack(c, 1);
	CHECK_EQ_INT(pw_base_cache_get(c, 1, 99, &hit), 0);
	pw_base_cache_free(c);
	pw_buf_free(&b);
}

int main(void)
{
	char cmd[300];

	snprintf(root, sizeof(root), "/tmp/pw-test-odb-%d", (int)getpid());
	test_loose(&pw_hash_sha1);
	test_loose(&pw_hash_sha256);
	test_parse(&pw_hash_sha1);
	test_parse(&pw_hash_sha256);
	test_decode();
	test_stream(&pw_hash_sha1);
	test_stream(&pw_hash_sha256);
	test_cache();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", root);
	return pw_test_done();
}
