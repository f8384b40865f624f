/* The pack writer end to end without git: loose objects in a temporary odb,
 * a pack written to memory, then parsed back here (headers, zlib, deltas,
 * ids, trailer) for both algorithms. */
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "odb/delta.h"
#include "odb/entry.h"
#include "packwire/pack-write.h"
#include "packwire/packwire.h"
#include "packwire/odb.h"
#include "packwire/revlist.h"
#include "hash/oidmap.h"
#include "test.h"

struct parsed {
	struct pw_oid oid;
	int type;
	uint64_t offset;
	struct pw_buf data;
};

static int to_buf(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	(void)err;
	return pw_buf_add(ctx, data, len);
}

/* Inflate exactly one zlib stream at p; *used gets its compressed length. */
static int inflate_one(const uint8_t *p, size_t avail, uint64_t size, struct pw_buf *out,
                       size_t *used)
{
	z_stream s;
	int ret;

	memset(&s, 0, sizeof(s));
	if (inflateInit(&s) != Z_OK)
		return -1;
	pw_buf_reset(out);
	if (pw_buf_grow(out, (size_t)size + 1))
		return -1;
	s.next_in = (Bytef *)p;
	s.avail_in = (uInt)avail;
	s.next_out = (Bytef *)out->data;
	s.avail_out = (uInt)size + 1;
	ret = inflate(&s, Z_FINISH);
	*used = s.total_in;
	out->len = s.total_out;
	inflateEnd(&s);
	return ret == Z_STREAM_END && s.total_out == size ? 0 : -1;
}

/* Parse a whole pack; fills objs (malloc'd) and returns the count, or -1.
 * thin_odb: where REF_DELTA bases outside the pack are looked up. */
static long parse_pack(const struct pw_hash_algo *algo, const struct pw_buf *pack,
                       struct parsed **objs_out, struct pw_odb *thin_odb, int *nr_deltas)
{
	const uint8_t *p = (const uint8_t *)pack->data;
	uint32_t nr, i;
	size_t pos = PW_PACK_HEADER_SIZE;
	struct pw_error err = {0};
	struct parsed *objs;
	struct pw_oid sum;
	uint8_t raw[PW_MAX_RAWSZ];
	struct pw_buf delta = PW_BUF_INIT, base = PW_BUF_INIT;

	*nr_deltas = 0;
	if (pack->len < PW_PACK_HEADER_SIZE + algo->rawsz ||
	    pw_pack_header_decode(p, pack->len, &nr, &err))
		return -1;
	CHECK_EQ_INT(pw_hash_buf(algo, p, pack->len - algo->rawsz, &sum), 0);
	if (memcmp(sum.id, p + pack->len - algo->rawsz, algo->rawsz))
		return -1;
	objs = calloc(nr + 1, sizeof(*objs));
	for (i = 0; i < nr; i++) {
		struct pw_pack_entry_hdr h;
		size_t used;
		int btype = 0;

		if (pw_pack_entry_hdr_decode(p + pos, pack->len - pos, algo->rawsz, pos, &h, &err))
			goto bad;
		objs[i].offset = pos;
		pw_buf_init(&objs[i].data, 0);
		if (h.type != PW_OBJ_OFS_DELTA && h.type != PW_OBJ_REF_DELTA) {
			if (inflate_one(p + pos + h.hdr_len, pack->len - pos - h.hdr_len, h.size,
			                &objs[i].data, &used))
				goto bad;
			objs[i].type = h.type;
		} else {
			uint32_t j;
			int found = 0;

			(*nr_deltas)++;
			if (inflate_one(p + pos + h.hdr_len, pack->len - pos - h.hdr_len, h.size,
			                &delta, &used))
				goto bad;
			for (j = 0; j < i && !found; j++) {
				if (h.type == PW_OBJ_OFS_DELTA
				            ? objs[j].offset == pos - h.base_ofs
				            : !memcmp(objs[j].oid.id, h.base_raw, algo->rawsz)) {
					found = 1;
					btype = objs[j].type;
					pw_buf_reset(&base);
					pw_buf_add(&base, objs[j].data.data, objs[j].data.len);
				}
			}
			if (!found && h.type == PW_OBJ_REF_DELTA && thin_odb) {
				struct pw_oid b;

				pw_oid_from_raw(&b, h.base_raw, algo);
				if (!pw_odb_read(thin_odb, &b, &btype, &base))
					found = 1;
			}
			if (!found)
				goto bad;
			if (pw_delta_apply((uint8_t *)base.data, base.len, (uint8_t *)delta.data,
			                   delta.len, &objs[i].data, &err))
				goto bad;
			objs[i].type = btype;
		}
		pos += h.hdr_len + used;
		CHECK_EQ_INT(pw_object_hash(algo, objs[i].type, objs[i].data.data, objs[i].data.len,
		                            &objs[i].oid),
		             0);
	}
	(void)raw;
	pw_buf_free(&delta);
	pw_buf_free(&base);
	if (pos + algo->rawsz != pack->len)
		goto bad_noclean;
	*objs_out = objs;
	return nr;
bad:
	pw_buf_free(&delta);
	pw_buf_free(&base);
bad_noclean:
	for (i = 0; i < nr; i++)
		pw_buf_free(&objs[i].data);
	free(objs);
	return -1;
}

static void free_parsed(struct parsed *objs, long n)
{
	for (long i = 0; i < n; i++)
		pw_buf_free(&objs[i].data);
	free(objs);
}

struct history {
	struct pw_oid oids[200];
	int types[200];
	const char *paths[200];
	int n;
	struct pw_oid commits[40];
	int ncommits;
};

static void put(struct pw_odb *odb, struct history *h, int type, const void *data, size_t len,
                const char *path, struct pw_oid *out)
{
	CHECK_EQ_INT(pw_odb_write_loose(odb, type, data, len, out), 0);
	h->oids[h->n] = *out;
	h->types[h->n] = type;
	h->paths[h->n] = path;
	h->n++;
}

static void tree_entry(struct pw_buf *t, const char *mode, const char *name,
                       const struct pw_oid *oid, const struct pw_hash_algo *algo)
{
	pw_buf_addf(t, "%s %s", mode, name);
	pw_buf_addch(t, '\0');
	pw_buf_add(t, oid->id, algo->rawsz);
}

/* A history of 30 commits editing one growing file and a second one. */
static void build_history(struct pw_odb *odb, const struct pw_hash_algo *algo, struct history *h)
{
	struct pw_buf file = PW_BUF_INIT, other = PW_BUF_INIT, tree = PW_BUF_INIT,
	              commit = PW_BUF_INIT;
	struct pw_oid blob, blob2, t, c, parent;
	char hex[PW_MAX_HEXSZ + 1];
	int i, j;

	memset(h, 0, sizeof(*h));
	for (j = 0; j < 400; j++)
		pw_buf_addf(&file, "int function_%d(void) { return %d; }\n", j, j * 3);
	for (i = 0; i < 30; i++) {
		char *line = strstr(file.data, "return");

		for (j = 0; j < i * 7 && line; j++)
			line = strstr(line + 1, "return");
		if (line)
			line[7] = (char)('0' + i % 10);
		pw_buf_addf(&file, "/* revision %d */\n", i);
		put(odb, h, PW_OBJ_BLOB, file.data, file.len, "src/main.c", &blob);
		pw_buf_reset(&other);
		for (j = 0; j < 50 + i; j++)
			pw_buf_addf(&other, "readme line %d\n", j);
		put(odb, h, PW_OBJ_BLOB, other.data, other.len, "README", &blob2);
		pw_buf_reset(&tree);
		tree_entry(&tree, "100644", "README", &blob2, algo);
		tree_entry(&tree, "100644", "main.c", &blob, algo);
		put(odb, h, PW_OBJ_TREE, tree.data, tree.len, "src", &t);
		pw_buf_reset(&tree);
		tree_entry(&tree, "40000", "src", &t, algo);
		put(odb, h, PW_OBJ_TREE, tree.data, tree.len, "", &t);
		pw_buf_reset(&commit);
		pw_buf_addf(&commit, "tree %s\n", pw_oid_to_hex(&t, hex));
		if (i)
			pw_buf_addf(&commit, "parent %s\n", pw_oid_to_hex(&parent, hex));
		pw_buf_addf(&commit,
		            "author A <a@b> %d +0000\ncommitter A <a@b> %d +0000\n\nrev %d\n",
		            1000 + i, 1000 + i, i);
		put(odb, h, PW_OBJ_COMMIT, commit.data, commit.len, NULL, &c);
		h->commits[h->ncommits++] = c;
		parent = c;
	}
	pw_buf_free(&file);
	pw_buf_free(&other);
	pw_buf_free(&tree);
	pw_buf_free(&commit);
}

static int contains(struct parsed *objs, long n, const struct pw_oid *oid)
{
	for (long i = 0; i < n; i++)
		if (pw_oid_equal(&objs[i].oid, oid))
			return 1;
	return 0;
}

static int count_fn(const struct pw_revlist_obj *o, void *data)
{
	int *c = data;

	if (o->type == PW_OBJ_COMMIT)
		c[0]++;
	else
		c[1]++;
	return 0;
}

static void test_algo(const struct pw_hash_algo *algo)
{
	char dir[] = "/tmp/pw-test-packwrite-XXXXXX";
	struct pw_odb *odb;
	struct pw_error err = {0};
	struct history h;
	struct pw_pack_writer *w;
	struct pw_pack_write_opts opts;
	struct pw_pack_write_stats st;
	struct pw_buf pack = PW_BUF_INIT;
	struct parsed *objs;
	long n;
	int i, deltas, pass;
	uint8_t sum[PW_MAX_RAWSZ];

	CHECK(mkdtemp(dir) != NULL);
	CHECK_EQ_INT(pw_odb_open(&odb, dir, algo, &err), 0);
	build_history(odb, algo, &h);

	for (pass = 0; pass < 3; pass++) {
		pw_pack_write_opts_init(&opts);
		opts.ofs_delta = pass != 1;
		if (pass == 2) {
			opts.objects_dir = dir; /* two search threads */
			opts.threads = 2;
			opts.window = 4;
			opts.depth = 3;
		}
		CHECK_EQ_INT(pw_pack_writer_new(&w, odb, &opts), 0);
		for (i = 0; i < h.n; i++)
			CHECK_EQ_INT(pw_pack_writer_add(w, &h.oids[i], pass ? h.types[i] : 0,
			                                h.paths[i],
			                                h.paths[i] ? strlen(h.paths[i]) : 0),
			             0);
		CHECK_EQ_INT(pw_pack_writer_add(w, &h.oids[0], 0, NULL, 0), 0); /* duplicate */
		CHECK_EQ_INT(pw_pack_writer_count(w), h.n);
		pw_buf_reset(&pack);
		CHECK_EQ_INT(pw_pack_writer_write(w, to_buf, &pack, sum), 0);
		pw_pack_writer_stats(w, &st);
		n = parse_pack(algo, &pack, &objs, NULL, &deltas);
		CHECK_EQ_INT(n, h.n);
		CHECK(st.deltas > 20);
		CHECK_EQ_INT(deltas, st.deltas);
		CHECK_EQ_INT(st.written, h.n);
		CHECK_EQ_INT(st.bytes, pack.len);
		CHECK(!memcmp(sum, pack.data + pack.len - algo->rawsz, algo->rawsz));
		for (i = 0; i < h.n && n > 0; i++)
			CHECK(contains(objs, n, &h.oids[i]));
		/* no tags: the order added (the caller's recency order) is kept,
		 * as the commits show (too small to be deltas) */
		if (pass == 0 && n > 0) {
			long k, nc = 0;

			for (k = 0; k < n; k++)
				if (objs[k].type == PW_OBJ_COMMIT && nc < h.ncommits)
					CHECK(pw_oid_equal(&objs[k].oid, &h.commits[nc++]));
			CHECK_EQ_INT(nc, h.ncommits);
		}
		if (n > 0)
			free_parsed(objs, n);
		pw_pack_writer_free(w);
	}

	/* thin: the last 5 commits against the first 25 */
	{
		struct pw_buf thin = PW_BUF_INIT;
		int nsent = 0;

		pw_pack_write_opts_init(&opts);
		opts.thin = 1;
		CHECK_EQ_INT(pw_pack_writer_new(&w, odb, &opts), 0);
		/* add by hand: objects of commits 25..29 are sent, 24's are bases */
		for (i = 0; i < h.n; i++) {
			int commit_no = i / 5; /* 5 objects per commit */

			if (commit_no >= 25) {
				pw_pack_writer_add(w, &h.oids[i], h.types[i], h.paths[i],
				                   h.paths[i] ? strlen(h.paths[i]) : 0);
				nsent++;
			} else if (commit_no == 24 && h.types[i] != PW_OBJ_COMMIT) {
				pw_pack_writer_add_base(w, &h.oids[i], h.types[i], h.paths[i],
				                        h.paths[i] ? strlen(h.paths[i]) : 0);
			}
		}
		CHECK_EQ_INT(pw_pack_writer_count(w), nsent);
		/* contains: what is sent, not the thin bases nor the rest */
		for (i = 0; i < h.n; i++) {
			int commit_no = i / 5, want = commit_no >= 25;

			for (int j = 25 * 5; !want && j < h.n; j++)
				want = pw_oid_equal(&h.oids[i], &h.oids[j]);
			CHECK_EQ_INT(pw_pack_writer_contains(w, &h.oids[i]), want);
		}
		CHECK_EQ_INT(pw_pack_writer_write(w, to_buf, &thin, NULL), 0);
		pw_pack_writer_stats(w, &st);
		CHECK(st.thin_deltas > 0);
		n = parse_pack(algo, &thin, &objs, odb, &deltas);
		CHECK_EQ_INT(n, nsent);
		if (n > 0)
			free_parsed(objs, n);
		pw_pack_writer_free(w);
		pw_buf_free(&thin);
	}

	/* a missing object is a clear error */
	{
		struct pw_oid bogus = h.oids[0];

		bogus.id[0] ^= 0xff;
		CHECK_EQ_INT(pw_pack_writer_new(&w, odb, NULL), 0);
		CHECK_EQ_INT(pw_pack_writer_add(w, &bogus, 0, NULL, 0), 0);
		pw_buf_reset(&pack);
		CHECK_EQ_INT(pw_pack_writer_write(w, to_buf, &pack, NULL), PW_ENOTFOUND);
		CHECK(strstr(pw_pack_writer_error(w)->msg, "not found") != NULL);
		pw_pack_writer_free(w);
	}

	/* rev-list over the same history: 30 commits, 5 objects each, all listed */
	{
		struct pw_revlist *rl;
		int cnt[2] = {0, 0};

		CHECK_EQ_INT(pw_revlist_new(&rl, odb, PW_REVLIST_OBJECTS), 0);
		CHECK_EQ_INT(pw_revlist_add(rl, &h.commits[29], NULL, 0), 0);
		CHECK_EQ_INT(pw_revlist_add(rl, &h.commits[9], NULL, 1), 0);
		CHECK_EQ_INT(pw_revlist_run(rl, count_fn, cnt), 0);
		CHECK_EQ_INT(cnt[0], 20);
		CHECK_EQ_INT(pw_revlist_commit_count(rl), 20);
		CHECK_EQ_INT(cnt[1], 20 * 4);
		pw_revlist_free(rl);
	}
	pw_buf_free(&pack);
	pw_odb_free(odb);
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK_EQ_INT(system(cmd), 0);
	}
}

static void test_name_hash(void)
{
	/* same suffix, close values; whitespace ignored */
	CHECK_EQ_INT(pw_pack_name_hash("", 0), 0);
	CHECK(pw_pack_name_hash("a b.c", 5) == pw_pack_name_hash("ab.c", 4));
	/* only the last 16 or so characters count */
	CHECK(pw_pack_name_hash("aaaa/src/some_long_file.c", 25) ==
	      pw_pack_name_hash("b/src/some_long_file.c", 22));
	CHECK(pw_pack_name_hash("a.c", 3) != pw_pack_name_hash("b.c", 3));
}

int main(void)
{
	test_name_hash();
	test_algo(&pw_hash_sha1);
	test_algo(&pw_hash_sha256);
	return pw_test_done();
}
