/* Object translation between SHA-1 and SHA-256 (signatures, mergetags,
 * gitlinks, malformed content) and the map files' encoders and parsers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat/map-priv.h"
#include "packwire/packwire.h"
#include "test.h"

/* A fake translation: the id in the other algorithm is the hash of the raw
 * id, except for ids listed as unknown. */
static struct pw_oid unknown;

static int fake_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	const struct pw_hash_algo *to =
	        from->algo == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;

	(void)data;
	if (pw_oid_equal(from, &unknown))
		return PW_ENOTFOUND;
	CHECK_EQ_INT(pw_hash_buf(to, from->id, pw_oid_rawsz(from), out), 0);
	return 0;
}

/* A look-up knowing one pair: data[0] -> data[1]. */
static int pair_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	const struct pw_oid *pair = data;

	if (!pw_oid_equal(from, &pair[0]))
		return PW_ENOTFOUND;
	*out = pair[1];
	return 0;
}

/* Translate content from -> to; returns the result (static buffer). */
static const char *conv(int type, const char *in, const struct pw_hash_algo *from,
                        const struct pw_hash_algo *to, int *rc, struct pw_error *err)
{
	static struct pw_buf out = PW_BUF_INIT;

	pw_buf_reset(&out);
	*rc = pw_compat_convert(&out, type, in, strlen(in), from, to, fake_lookup, NULL, err);
	return out.data;
}

static void hexof(const struct pw_hash_algo *a, const char *seed, char *hex)
{
	struct pw_oid o;

	CHECK_EQ_INT(pw_hash_buf(a, seed, strlen(seed), &o), 0);
	pw_oid_to_hex(&o, hex);
}

static void mapped_hex(const char *hex, const struct pw_hash_algo *from, char *out)
{
	struct pw_oid o, m;

	pw_oid_from_hex(&o, hex, from->hexsz, from);
	fake_lookup(NULL, &o, &m);
	pw_oid_to_hex(&m, out);
}

#define SIG1 "-----BEGIN PGP SIGNATURE-----\nsig one\n-----END PGP SIGNATURE-----\n"
#define SIG2 "-----BEGIN PGP SIGNATURE-----\nsig two\n-----END PGP SIGNATURE-----\n"

static void test_tags(void)
{
	const struct pw_hash_algo *s1 = &pw_hash_sha1, *s256 = &pw_hash_sha256;
	char h1[65], m256[65], in[2048], want[2048], back[2048];
	struct pw_error err;
	const char *got;
	int rc;

	hexof(s1, "commit", h1);
	mapped_hex(h1, s1, m256);
	/* unsigned: only the object line changes */
	snprintf(in, sizeof(in), "object %s\ntype commit\ntag v1\ntagger T <t@x> 1 +0000\n\nmsg\n",
	         h1);
	snprintf(want, sizeof(want),
	         "object %s\ntype commit\ntag v1\ntagger T <t@x> 1 +0000\n\nmsg\n", m256);
	got = conv(PW_OBJ_TAG, in, s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, 0);
	CHECK_STR(got, want);

	/* signed in SHA-1: the in-body signature becomes the gpgsig header of
	 * the SHA-256 content, at the end of the header */
	snprintf(in, sizeof(in),
	         "object %s\ntype commit\ntag v1\ntagger T <t@x> 1 +0000\n\nmsg\n" SIG1, h1);
	snprintf(want, sizeof(want),
	         "object %s\ntype commit\ntag v1\ntagger T <t@x> 1 +0000\n"
	         "gpgsig -----BEGIN PGP SIGNATURE-----\n sig one\n -----END PGP SIGNATURE-----\n"
	         "\nmsg\n",
	         m256);
	got = conv(PW_OBJ_TAG, in, s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, 0);
	CHECK_STR(got, want);
	/* and back: the header becomes the in-body signature again */
	snprintf(back, sizeof(back), "%s", got);
	{
		struct pw_buf out = PW_BUF_INIT;
		struct pw_oid pair[2];

		pw_oid_from_hex(&pair[0], m256, s256->hexsz, s256);
		pw_oid_from_hex(&pair[1], h1, s1->hexsz, s1);
		rc = pw_compat_convert(&out, PW_OBJ_TAG, back, strlen(back), s256, s1, pair_lookup,
		                       pair, &err);
		CHECK_EQ_INT(rc, 0);
		CHECK_STR(out.data, in);
		pw_buf_free(&out);
	}

	/* dual-signed SHA-1 tag: in-body (SHA-1) + gpgsig-sha256 header */
	snprintf(in, sizeof(in),
	         "object %s\ntype commit\ntag v1\ntagger T <t@x> 1 +0000\n"
	         "gpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n sig two\n -----END PGP "
	         "SIGNATURE-----\n"
	         "\nmsg\n" SIG1,
	         h1);
	snprintf(want, sizeof(want),
	         "object %s\ntype commit\ntag v1\ntagger T <t@x> 1 +0000\n"
	         "gpgsig -----BEGIN PGP SIGNATURE-----\n sig one\n -----END PGP SIGNATURE-----\n"
	         "\nmsg\n" SIG2,
	         m256);
	got = conv(PW_OBJ_TAG, in, s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, 0);
	CHECK_STR(got, want);

	/* SHA-256 tag with its own in-body signature -> gpgsig-sha256 header */
	{
		char h256[65], m1[65];

		hexof(s256, "commit", h256);
		mapped_hex(h256, s256, m1);
		snprintf(in, sizeof(in), "object %s\ntype commit\ntag v\n\nm\n" SIG2, h256);
		snprintf(want, sizeof(want),
		         "object %s\ntype commit\ntag v\n"
		         "gpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n sig two\n -----END PGP "
		         "SIGNATURE-----\n\nm\n",
		         m1);
		got = conv(PW_OBJ_TAG, in, s256, s1, &rc, &err);
		CHECK_EQ_INT(rc, 0);
		CHECK_STR(got, want);
	}

	/* malformed */
	got = conv(PW_OBJ_TAG, "object 123\n", s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, PW_ECORRUPT);
	got = conv(PW_OBJ_TAG, "", s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, PW_ECORRUPT);
	/* unknown target */
	pw_oid_from_hex(&unknown, h1, s1->hexsz, s1);
	snprintf(in, sizeof(in), "object %s\ntype commit\ntag v1\n\nm\n", h1);
	got = conv(PW_OBJ_TAG, in, s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, PW_ENOTFOUND);
	CHECK(strstr(err.msg, h1) != NULL);
	memset(&unknown, 0, sizeof(unknown));
}

static void test_commits(void)
{
	const struct pw_hash_algo *s1 = &pw_hash_sha1, *s256 = &pw_hash_sha256;
	char t[65], p1[65], p2[65], tg[65], mt[65], mp1[65], mp2[65], mtg[65];
	char in[4096], want[4096];
	struct pw_error err;
	const char *got;
	int rc;

	hexof(s1, "tree", t);
	hexof(s1, "p1", p1);
	hexof(s1, "p2", p2);
	hexof(s1, "tagged", tg);
	mapped_hex(t, s1, mt);
	mapped_hex(p1, s1, mp1);
	mapped_hex(p2, s1, mp2);
	mapped_hex(tg, s1, mtg);
	/* signatures of commits stay as they are (their payload excludes both
	 * headers); a mergetag's tag is translated, its signature moved */
	snprintf(in, sizeof(in),
	         "tree %s\nparent %s\nparent %s\nauthor A <a> 1 +0000\ncommitter C <c> 1 +0000\n"
	         "mergetag object %s\n type commit\n tag v\n tagger T <t> 1 +0000\n \n m\n"
	         " -----BEGIN PGP SIGNATURE-----\n sig one\n -----END PGP SIGNATURE-----\n"
	         "x-extra a\n b\n"
	         "gpgsig -----BEGIN PGP SIGNATURE-----\n s1\n -----END PGP SIGNATURE-----\n"
	         "gpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n s2\n -----END PGP SIGNATURE-----\n"
	         "\nmessage\ntree %s\n",
	         t, p1, p2, tg, t);
	snprintf(want, sizeof(want),
	         "tree %s\nparent %s\nparent %s\nauthor A <a> 1 +0000\ncommitter C <c> 1 +0000\n"
	         "mergetag object %s\n type commit\n tag v\n tagger T <t> 1 +0000\n"
	         " gpgsig -----BEGIN PGP SIGNATURE-----\n  sig one\n  -----END PGP SIGNATURE-----\n"
	         " \n m\n"
	         "x-extra a\n b\n"
	         "gpgsig -----BEGIN PGP SIGNATURE-----\n s1\n -----END PGP SIGNATURE-----\n"
	         "gpgsig-sha256 -----BEGIN PGP SIGNATURE-----\n s2\n -----END PGP SIGNATURE-----\n"
	         "\nmessage\ntree %s\n",
	         mt, mp1, mp2, mtg, t);
	got = conv(PW_OBJ_COMMIT, in, s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, 0);
	CHECK_STR(got, want);

	got = conv(PW_OBJ_COMMIT, "tree 1234\n\n", s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, PW_ECORRUPT);
	got = conv(PW_OBJ_COMMIT, "author x", s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, PW_ECORRUPT);
	snprintf(in, sizeof(in), "tree %s\nparent %s\n\n", t, p1);
	pw_oid_from_hex(&unknown, p1, s1->hexsz, s1);
	got = conv(PW_OBJ_COMMIT, in, s1, s256, &rc, &err);
	CHECK_EQ_INT(rc, PW_ENOTFOUND);
	CHECK(strstr(err.msg, "parent") != NULL);
	memset(&unknown, 0, sizeof(unknown));
}

static void test_trees(void)
{
	const struct pw_hash_algo *s1 = &pw_hash_sha1, *s256 = &pw_hash_sha256;
	struct pw_buf in = PW_BUF_INIT, out = PW_BUF_INIT;
	struct pw_oid a, b, ma, mb;
	struct pw_error err;
	int rc;

	CHECK_EQ_INT(pw_hash_buf(s1, "a", 1, &a), 0);
	CHECK_EQ_INT(pw_hash_buf(s1, "b", 1, &b), 0);
	fake_lookup(NULL, &a, &ma);
	fake_lookup(NULL, &b, &mb);
	pw_buf_add(&in, "100644 file\0", 12);
	pw_buf_add(&in, a.id, 20);
	pw_buf_add(&in, "160000 sub\0", 11);
	pw_buf_add(&in, b.id, 20);
	rc = pw_compat_convert(&out, PW_OBJ_TREE, in.data, in.len, s1, s256, fake_lookup, NULL,
	                       &err);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(out.len, 12 + 32 + 11 + 32);
	CHECK(!memcmp(out.data, "100644 file\0", 12) && !memcmp(out.data + 12, ma.id, 32));
	CHECK(!memcmp(out.data + 44, "160000 sub\0", 11) && !memcmp(out.data + 55, mb.id, 32));
	/* the gitlink's id is unknown: an error naming its path */
	unknown = b;
	pw_buf_reset(&out);
	rc = pw_compat_convert(&out, PW_OBJ_TREE, in.data, in.len, s1, s256, fake_lookup, NULL,
	                       &err);
	CHECK_EQ_INT(rc, PW_ENOTFOUND);
	CHECK(strstr(err.msg, "gitlink 'sub'") != NULL);
	memset(&unknown, 0, sizeof(unknown));
	/* truncated entries */
	for (size_t cut = 1; cut < in.len; cut += 7) {
		pw_buf_reset(&out);
		rc = pw_compat_convert(&out, PW_OBJ_TREE, in.data, in.len - cut, s1, s256,
		                       fake_lookup, NULL, &err);
		CHECK(rc == PW_ECORRUPT || (rc == 0 && in.len - cut == 32));
	}
	pw_buf_free(&in);
	pw_buf_free(&out);
}

static int count_pair(void *data, const struct pw_oid *s, const struct pw_oid *c)
{
	(void)s;
	(void)c;
	(*(int *)data)++;
	return 0;
}

static void test_loose_idx(void)
{
	const struct pw_hash_algo *s1 = &pw_hash_sha1, *s256 = &pw_hash_sha256;
	char h1[65], h256[65], buf[512];
	struct pw_error err;
	int n = 0;

	hexof(s256, "x", h256);
	hexof(s1, "x", h1);
	snprintf(buf, sizeof(buf), "# loose-object-idx\n%s %s\n%s %s\n", h256, h1, h256, h1);
	CHECK_EQ_INT(pw_compat_loose_idx_parse(buf, strlen(buf), s256, s1, count_pair, &n, &err),
	             0);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(
	        pw_compat_loose_idx_parse("# loose-object-idx\n", 19, s256, s1, NULL, NULL, &err),
	        0);
	CHECK_EQ_INT(
	        pw_compat_loose_idx_parse("# loose-object-id\n", 18, s256, s1, NULL, NULL, &err),
	        PW_ECORRUPT);
	/* the wrong order of algorithms */
	snprintf(buf, sizeof(buf), "# loose-object-idx\n%s %s\n", h1, h256);
	CHECK_EQ_INT(pw_compat_loose_idx_parse(buf, strlen(buf), s256, s1, NULL, NULL, &err),
	             PW_ECORRUPT);
	snprintf(buf, sizeof(buf), "# loose-object-idx\n%s  %s\n", h256, h1);
	CHECK_EQ_INT(pw_compat_loose_idx_parse(buf, strlen(buf), s256, s1, NULL, NULL, &err),
	             PW_ECORRUPT);
	CHECK(strstr(err.msg, "line 2") != NULL);
}

static void test_pack_map(void)
{
	const struct pw_hash_algo *s = &pw_hash_sha256, *c = &pw_hash_sha1;
	enum { NR = 300 };
	uint8_t ids[NR * 20], cksum[32];
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err;

	for (int i = 0; i < NR; i++) {
		struct pw_oid o;
		char seed[16];

		snprintf(seed, sizeof(seed), "%d", i);
		CHECK_EQ_INT(pw_hash_buf(c, seed, strlen(seed), &o), 0);
		memcpy(ids + i * 20, o.id, 20);
	}
	memset(cksum, 0xab, sizeof(cksum));
	CHECK_EQ_INT(pw_compat_pack_map_encode(&out, s, cksum, ids, NR, &err), 0);
	CHECK_EQ_INT(out.len, pw_compat_pack_map_size(s, NR));
	CHECK_EQ_INT(pw_compat_pack_map_check((uint8_t *)out.data, out.len, s, NR, cksum, 1, &err),
	             0);
	CHECK_EQ_INT(
	        pw_compat_pack_map_check((uint8_t *)out.data, out.len, s, NR - 1, cksum, 1, &err),
	        PW_EMISMATCH);
	CHECK_EQ_INT(
	        pw_compat_pack_map_check((uint8_t *)out.data, out.len - 1, s, NR, cksum, 1, &err),
	        PW_ECORRUPT);
	CHECK_EQ_INT(pw_compat_pack_map_check((uint8_t *)out.data, out.len, c, NR, cksum, 1, &err),
	             PW_EMISMATCH);
	/* every single-byte change is caught by the full check */
	for (size_t at = 0; at < out.len; at += 97) {
		out.data[at] ^= 0x40;
		CHECK(pw_compat_pack_map_check((uint8_t *)out.data, out.len, s, NR, cksum, 1,
		                               &err) != 0);
		out.data[at] ^= 0x40;
	}
	cksum[0] ^= 1;
	CHECK_EQ_INT(pw_compat_pack_map_check((uint8_t *)out.data, out.len, s, NR, cksum, 0, &err),
	             PW_EMISMATCH);
	pw_buf_free(&out);
}

/* pw_compat_map_add_loose appends Git's lines under the lock; a held lock
 * is PW_ELOCKED; the map opened again finds both directions. */
static void test_add_loose(void)
{
	const struct pw_hash_algo *s = &pw_hash_sha256, *c = &pw_hash_sha1;
	char dir[] = "/tmp/pw-test-compat-XXXXXX", path[256], lock[300];
	struct pw_compat_map *m = NULL;
	struct pw_buf b = PW_BUF_INIT;
	struct pw_oid so, co, got;
	struct pw_error err;
	char want[256], sh[65], ch[65];
	FILE *f;

	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	CHECK_EQ_INT(pw_hash_buf(s, "x", 1, &so), 0);
	CHECK_EQ_INT(pw_hash_buf(c, "x", 1, &co), 0);
	CHECK_EQ_INT(pw_compat_map_open(&m, dir, s, c, &err), 0);
	CHECK_EQ_INT(pw_compat_from_storage(m, &so, &got), PW_ENOTFOUND);
	CHECK_EQ_INT(pw_compat_map_add_loose(m, &so, &co), 0);
	CHECK_EQ_INT(pw_compat_from_storage(m, &so, &got), 0);
	CHECK(pw_oid_equal(&got, &co));
	snprintf(path, sizeof(path), "%s/loose-object-idx", dir);
	snprintf(lock, sizeof(lock), "%s.lock", path);
	CHECK_EQ_INT(pw_fs_read_file(path, &b, 0, &err), 0);
	snprintf(want, sizeof(want), "# loose-object-idx\n%s %s\n", pw_oid_to_hex(&so, sh),
	         pw_oid_to_hex(&co, ch));
	CHECK_STR(b.data, want);
	if ((f = fopen(lock, "w")))
		fclose(f);
	CHECK_EQ_INT(pw_compat_map_add_loose(m, &so, &co), PW_ELOCKED);
	remove(lock);
	pw_compat_map_free(m);
	CHECK_EQ_INT(pw_compat_map_open(&m, dir, s, c, &err), 0);
	CHECK_EQ_INT(pw_compat_to_storage(m, &co, &got), 0);
	CHECK(pw_oid_equal(&got, &so));
	pw_compat_map_free(m);
	CHECK_EQ_INT(pw_compat_map_open(&m, dir, s, s, &err), PW_EINVAL);
	CHECK(m == NULL);
	remove(path);
	remove(dir);
	pw_buf_free(&b);
}

/* compat-view/current: "<algo> <pack-hex> g-XXXXXX\n" and nothing else. */
static void test_view_current(void)
{
	const char *h1 = "0123456789abcdef0123456789abcdef01234567";
	char line[200], hex[PW_MAX_HEXSZ + 1], gen[PW_COMPAT_VIEW_GEN_LEN + 1];
	struct pw_error err = {0};
	size_t n;

	n = (size_t)snprintf(line, sizeof(line), "sha1 %s g-Ab3xYz\n", h1);
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err), 0);
	CHECK_STR(hex, h1);
	CHECK_STR(gen, "g-Ab3xYz");
	/* every shorter prefix, the wrong algorithm, a bad digit, no newline */
	for (size_t cut = 0; cut < n; cut++)
		CHECK_EQ_INT(pw_compat_view_parse_current(line, cut, &pw_hash_sha1, hex, gen, &err),
		             PW_ECORRUPT);
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha256, hex, gen, &err),
	             PW_ECORRUPT);
	line[10] = 'G';
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err),
	             PW_ECORRUPT);
	line[10] = 'A'; /* upper case is not a name pack files have */
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err),
	             PW_ECORRUPT);
	line[10] = '4';
	line[n - 3] = '/'; /* a generation name never leaves the directory */
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err),
	             PW_ECORRUPT);
	line[n - 3] = '.';
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err),
	             PW_ECORRUPT);
	line[n - 3] = 'x';
	line[n - 9] = 'h'; /* "h-..." */
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err),
	             PW_ECORRUPT);
	line[n - 9] = 'g';
	line[n - 1] = ' ';
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err),
	             PW_ECORRUPT);
	line[n - 1] = '\n';
	line[n] = '\n';
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n + 1, &pw_hash_sha1, hex, gen, &err),
	             PW_ECORRUPT);
	CHECK(strstr(err.msg, "compat-view/current") != NULL);
	CHECK_EQ_INT(pw_compat_view_parse_current(line, n, &pw_hash_sha1, hex, gen, &err), 0);
}

int main(void)
{
	test_view_current();
	test_tags();
	test_commits();
	test_trees();
	test_loose_idx();
	test_pack_map();
	test_add_loose();
	return pw_test_done();
}
