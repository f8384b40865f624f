/* The index-pack engine on packs built here: a blob and chains of OFS and
 * REF deltas, resolved with one and several threads and with a base cache so
 * small that every ancestor is dropped and rebuilt; ids must match the
 * objects' own hashes. Then link collection: packs that are (or are not, by
 * one object) self-contained, with links from whole objects and from deltas.
 * Both algorithms. */
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "odb/delta.h"
#include "odb/entry.h"
#include "pack/index-pack.h"
#include "packwire/object.h"
#include "test.h"

#define CHAINS 40
#define DEPTH  5

static void add_entry(struct pw_buf *pack, int type, const void *data, size_t len,
                      uint64_t base_dist, const struct pw_oid *base_oid)
{
	uint8_t hdr[64];
	size_t hl = pw_pack_entry_hdr_encode(hdr, type, len);
	uLongf zl = compressBound((uLong)len);
	uint8_t *z = malloc(zl);

	if (type == PW_OBJ_OFS_DELTA)
		hl += pw_pack_ofs_encode(hdr + hl, base_dist);
	if (type == PW_OBJ_REF_DELTA) {
		memcpy(hdr + hl, base_oid->id, pw_oid_rawsz(base_oid));
		hl += pw_oid_rawsz(base_oid);
	}
	compress(z, &zl, data, (uLong)len);
	pw_buf_add(pack, hdr, hl);
	pw_buf_add(pack, z, zl);
	free(z);
}

/* delta: copy all of base, insert `tail` */
static size_t make_delta(uint8_t *d, size_t base_len, const char *tail, size_t tail_len)
{
	size_t n = 0;

	n += pw_delta_encode_size(d + n, base_len);
	n += pw_delta_encode_size(d + n, base_len + tail_len);
	d[n++] = 0x80 | 0x01 | 0x10 | 0x20; /* offset byte 0, size bytes 0-1 */
	d[n++] = 0;
	d[n++] = (uint8_t)(base_len & 0xff);
	d[n++] = (uint8_t)(base_len >> 8);
	d[n++] = (uint8_t)tail_len;
	memcpy(d + n, tail, tail_len);
	return n + tail_len;
}

static void test_algo(const struct pw_hash_algo *algo)
{
	struct pw_buf pack = PW_BUF_INIT, content = PW_BUF_INIT;
	struct pw_oid want[1 + CHAINS * DEPTH], base_oid;
	uint64_t offsets[1 + CHAINS * DEPTH];
	char base[600];
	size_t nr = 0, i;
	int c, d, threads, limit;
	uint8_t hdr[12];
	struct pw_hash_ctx h;
	uint8_t sum[PW_MAX_RAWSZ];

	memset(base, 'x', sizeof(base));
	pw_pack_header_encode(hdr, 1 + CHAINS * DEPTH);
	pw_buf_add(&pack, hdr, 12);
	offsets[nr] = pack.len;
	add_entry(&pack, PW_OBJ_BLOB, base, sizeof(base), 0, NULL);
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, base, sizeof(base), &want[nr++]), 0);
	base_oid = want[0];
	for (c = 0; c < CHAINS; c++) {
		size_t prev = 0;

		pw_buf_reset(&content);
		pw_buf_add(&content, base, sizeof(base));
		for (d = 0; d < DEPTH; d++) {
			char tail[32];
			uint8_t delta[64];
			size_t tl = (size_t)snprintf(tail, sizeof(tail), "c%d d%d\n", c, d);
			size_t dl = make_delta(delta, content.len, tail, tl);

			offsets[nr] = pack.len;
			/* odd chains start with a REF_DELTA on the blob */
			if (d == 0 && (c & 1))
				add_entry(&pack, PW_OBJ_REF_DELTA, delta, dl, 0, &base_oid);
			else
				add_entry(&pack, PW_OBJ_OFS_DELTA, delta, dl,
				          offsets[nr] - (d ? offsets[prev] : offsets[0]), NULL);
			pw_buf_add(&content, tail, tl);
			CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, content.data, content.len,
			                            &want[nr]),
			             0);
			prev = nr++;
		}
	}
	pw_hash_init(&h, algo);
	pw_hash_update(&h, pack.data, pack.len);
	CHECK_EQ_INT(pw_hash_final_raw(&h, sum), 0);
	pw_buf_add(&pack, sum, algo->rawsz);

	for (threads = 1; threads <= 3; threads++)
		for (limit = 0; limit < 2; limit++) {
			struct pw_ipack_opts opts = {0};
			struct pw_ipack *ip;
			struct pw_error err;
			int ok = 1;

			opts.algo = algo;
			opts.threads = threads;
			opts.cache_limit = limit ? 1 : 0;
			CHECK_EQ_INT(pw_ipack_new(&ip, &opts, &err), 0);
			CHECK_EQ_INT(pw_ipack_parse_mem(ip, (uint8_t *)pack.data, pack.len), 0);
			CHECK_EQ_INT(pw_ipack_resolve(ip), 0);
			CHECK_EQ_INT(pw_ipack_nr_objects(ip), nr);
			CHECK_EQ_INT(pw_ipack_nr_deltas(ip), nr - 1);
			for (i = 0; i < nr; i++) {
				struct pw_ipack_info info;

				pw_ipack_info(ip, (uint32_t)i, &info);
				if (!pw_oid_equal(&info.oid, &want[i]) ||
				    info.type != PW_OBJ_BLOB || info.offset != offsets[i] ||
				    info.depth != (i ? (i - 1) % DEPTH + 1 : 0))
					ok = 0;
			}
			CHECK(ok);
			CHECK(!memcmp(pw_ipack_checksum(ip), sum, algo->rawsz));
			pw_ipack_free(ip);
		}

	/* the same pack with the other algorithm fails cleanly */
	{
		struct pw_ipack_opts opts = {0};
		struct pw_ipack *ip;
		struct pw_error err;

		opts.algo = algo->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
		CHECK_EQ_INT(pw_ipack_new(&ip, &opts, &err), 0);
		CHECK(pw_ipack_parse_mem(ip, (uint8_t *)pack.data, pack.len) < 0);
		CHECK(strstr(pw_ipack_error(ip)->msg, algo->name) != NULL);
		pw_ipack_free(ip);
	}
	pw_buf_free(&pack);
	pw_buf_free(&content);
}

/* ---- links: is the pack self-contained? ---------------------------------- */

#define NBLOBS 5000 /* more ids than one batch and the first set size */

struct lpack {
	struct pw_buf buf;
	uint64_t off[NBLOBS + 8];
	uint32_t nr;
};

static void lp_add(struct lpack *p, int type, const void *data, size_t len, int base_of)
{
	p->off[p->nr] = p->buf.len;
	if (base_of >= 0)
		add_entry(&p->buf, PW_OBJ_OFS_DELTA, data, len, p->buf.len - p->off[base_of], NULL);
	else
		add_entry(&p->buf, type, data, len, 0, NULL);
	p->nr++;
}

/* delta: copy all of base (up to 16 MiB), insert `tail` (< 128 bytes) */
static size_t lp_delta(uint8_t *d, size_t base_len, const char *tail, size_t tail_len)
{
	size_t n = 0;

	n += pw_delta_encode_size(d + n, base_len);
	n += pw_delta_encode_size(d + n, base_len + tail_len);
	d[n++] = 0x80 | 0x01 | 0x10 | 0x20 | 0x40;
	d[n++] = 0;
	d[n++] = (uint8_t)(base_len & 0xff);
	d[n++] = (uint8_t)(base_len >> 8);
	d[n++] = (uint8_t)(base_len >> 16);
	d[n++] = (uint8_t)tail_len;
	memcpy(d + n, tail, tail_len);
	return n + tail_len;
}

static void lp_finish(struct lpack *p, const struct pw_hash_algo *algo)
{
	uint8_t hdr[12], sum[PW_MAX_RAWSZ];
	struct pw_hash_ctx h;

	pw_pack_header_encode(hdr, p->nr);
	memcpy(p->buf.data, hdr, 12);
	pw_hash_init(&h, algo);
	pw_hash_update(&h, p->buf.data, p->buf.len);
	CHECK_EQ_INT(pw_hash_final_raw(&h, sum), 0);
	pw_buf_add(&p->buf, sum, algo->rawsz);
}

static const struct pw_oid *g_present; /* the id has_object knows */

static int fake_has(void *ctx, const struct pw_oid *oid)
{
	(void)ctx;
	return g_present && pw_oid_equal(oid, g_present);
}

/* Index p with links reported (strict: checked); resolve's result, and
 * *sc = pw_ipack_self_contained. */
static int lp_index(const struct lpack *p, const struct pw_hash_algo *algo, int threads, int strict,
                    int *sc)
{
	struct pw_ipack_opts opts = {0};
	struct pw_ipack *ip;
	struct pw_error err;
	int rc;

	opts.algo = algo;
	opts.threads = threads;
	opts.report_links = !strict;
	opts.check_links = strict;
	opts.has_object = fake_has;
	CHECK_EQ_INT(pw_ipack_new(&ip, &opts, &err), 0);
	rc = pw_ipack_parse_mem(ip, (uint8_t *)p->buf.data, p->buf.len);
	if (!rc)
		rc = pw_ipack_resolve(ip);
	*sc = pw_ipack_self_contained(ip);
	pw_ipack_free(ip);
	return rc;
}

enum lcase { L_FULL, L_NO_BLOB, L_NO_DELTA_BLOB, L_GITLINK, L_ZERO, L_BAD_COMMIT };

/* blobs, a tree naming them all, a tree delta adding one entry, a commit and
 * a commit delta; `c` removes or changes one thing. */
static void lp_build(struct lpack *p, const struct pw_hash_algo *algo, enum lcase c,
                     struct pw_oid *dropped)
{
	struct pw_buf tree = PW_BUF_INIT, commit = PW_BUF_INIT;
	struct pw_oid blob, tree_oid, extra;
	char name[32], hex[PW_MAX_HEXSZ + 1];
	uint8_t delta[256];
	size_t dl, tl;
	uint32_t tree_at, commit_at;
	int i;

	pw_buf_reset(&p->buf);
	p->nr = 0;
	pw_buf_add(&p->buf, "PACK________", 12);
	for (i = 0; i < NBLOBS; i++) {
		int n = snprintf(name, sizeof(name), "blob %d\n", i);

		CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, name, (size_t)n, &blob), 0);
		if (c == L_NO_BLOB && i == NBLOBS / 2)
			*dropped = blob;
		else
			lp_add(p, PW_OBJ_BLOB, name, (size_t)n, -1);
		snprintf(name, sizeof(name), "%s%05d",
		         i == 7 && c == L_GITLINK ? "160000 " : "100644 ", i);
		pw_buf_add(&tree, name, strlen(name) + 1);
		if (i == 7 && c == L_GITLINK) /* a submodule commit: never in the pack */
			memset(blob.id, 0x42, algo->rawsz);
		if (i == 9 && c == L_ZERO)
			memset(blob.id, 0, algo->rawsz);
		pw_buf_add(&tree, blob.id, algo->rawsz);
	}
	tree_at = p->nr;
	lp_add(p, PW_OBJ_TREE, tree.data, tree.len, -1);
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_TREE, tree.data, tree.len, &tree_oid), 0);
	/* the tree again with one entry more, as a delta: links from a resolver */
	CHECK_EQ_INT(pw_object_hash(algo, PW_OBJ_BLOB, "extra\n", 6, &extra), 0);
	if (c == L_NO_DELTA_BLOB)
		*dropped = extra;
	else
		lp_add(p, PW_OBJ_BLOB, "extra\n", 6, -1);
	{
		char tail[64 + PW_MAX_RAWSZ];

		memcpy(tail, "100644 zzzzz", 13);
		memcpy(tail + 13, extra.id, algo->rawsz);
		tl = 13 + algo->rawsz;
		dl = lp_delta(delta, tree.len, tail, tl);
		lp_add(p, 0, delta, dl, (int)tree_at);
	}
	pw_buf_addf(&commit, "%s %s\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n\nm\n",
	            c == L_BAD_COMMIT ? "tre" : "tree", pw_oid_to_hex(&tree_oid, hex));
	commit_at = p->nr;
	lp_add(p, PW_OBJ_COMMIT, commit.data, commit.len, -1);
	dl = lp_delta(delta, commit.len, "more\n", 5);
	lp_add(p, 0, delta, dl, (int)commit_at);
	lp_finish(p, algo);
	pw_buf_free(&tree);
	pw_buf_free(&commit);
}

static void test_links(const struct pw_hash_algo *algo)
{
	struct lpack p;
	struct pw_oid dropped;
	int threads, sc;

	memset(&p, 0, sizeof(p));
	pw_buf_init(&p.buf, 0);
	for (threads = 1; threads <= 3; threads += 2) {
		g_present = NULL;
		lp_build(&p, algo, L_FULL, &dropped);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 0, &sc), 0);
		CHECK_EQ_INT(sc, 1);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 1, &sc), 0);
		CHECK_EQ_INT(sc, 1);

		/* gitlinks are not links */
		lp_build(&p, algo, L_GITLINK, &dropped);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 0, &sc), 0);
		CHECK_EQ_INT(sc, 1);

		/* one blob missing, named by a whole tree or by a delta tree */
		lp_build(&p, algo, L_NO_BLOB, &dropped);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 0, &sc), 0);
		CHECK_EQ_INT(sc, 0);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 1, &sc), PW_ECORRUPT);
		CHECK_EQ_INT(sc, 0);
		g_present = &dropped; /* in the repository: fine, but not self-contained */
		CHECK_EQ_INT(lp_index(&p, algo, threads, 1, &sc), 0);
		CHECK_EQ_INT(sc, 0);
		g_present = NULL;
		lp_build(&p, algo, L_NO_DELTA_BLOB, &dropped);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 0, &sc), 0);
		CHECK_EQ_INT(sc, 0);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 1, &sc), PW_ECORRUPT);

		/* the all-zero id is a link like any other */
		lp_build(&p, algo, L_ZERO, &dropped);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 0, &sc), 0);
		CHECK_EQ_INT(sc, 0);

		/* an unreadable commit: no error when only reporting, no vouching */
		lp_build(&p, algo, L_BAD_COMMIT, &dropped);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 0, &sc), 0);
		CHECK_EQ_INT(sc, 0);
		CHECK_EQ_INT(lp_index(&p, algo, threads, 1, &sc), PW_ECORRUPT);
	}
	pw_buf_free(&p.buf);
}

/* A header's object count against what the stream can carry (issue 26):
 * refused from the 12 bytes alone, before any object is read. */
static int stream_count(const struct pw_hash_algo *algo, uint32_t count, uint64_t max_input,
                        int as_file, struct pw_error *err)
{
	struct pw_index_pack_args args;
	uint8_t hdr[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2};
	char dir[] = "/tmp/pw-test-ip-XXXXXX", hex[PW_MAX_HEXSZ + 1], path[64];
	int fds[2], kept = 0, rc;

	hdr[8] = (uint8_t)(count >> 24), hdr[9] = (uint8_t)(count >> 16);
	hdr[10] = (uint8_t)(count >> 8), hdr[11] = (uint8_t)count;
	if (!mkdtemp(dir))
		return PW_EIO;
	if (as_file) {
		/* a file of 1000 bytes: its length bounds the count */
		uint8_t body[1000] = {0};
		FILE *f;

		memcpy(body, hdr, 12);
		snprintf(path, sizeof(path), "%s/in", dir);
		f = fopen(path, "wb");
		fwrite(body, 1, sizeof(body), f);
		fclose(f);
		fds[0] = open(path, O_RDONLY);
		fds[1] = -1;
	} else {
		/* a pipe that says nothing more: a read past the header would
		 * wait for ever (the write end stays open) */
		CHECK_EQ_INT(pipe(fds), 0);
		CHECK_EQ_INT((int)write(fds[1], hdr, 12), 12);
	}
	memset(&args, 0, sizeof(args));
	args.opts.algo = algo;
	args.opts.max_input = max_input;
	rc = pw_index_pack_stream(&args, fds[0], dir, NULL, NULL, hex, &kept, err);
	close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	if (as_file)
		unlink(path);
	rmdir(dir);
	return rc;
}

static void test_counts(const struct pw_hash_algo *algo)
{
	struct pw_error err;

	CHECK_EQ_INT(stream_count(algo, 0xffffffffu, 0, 0, &err), PW_ETOOBIG);
	CHECK(strstr(err.msg, "pack header claims 4294967295 objects, more than the 67108864") !=
	      NULL);
	CHECK_EQ_INT(stream_count(algo, PW_PACK_MAX_STREAM_OBJECTS + 1, 0, 0, &err), PW_ETOOBIG);
	/* a size limit: (limit - 12 - trailer) / 9 objects at most */
	CHECK_EQ_INT(stream_count(algo, 1000, 8000, 0, &err), PW_ETOOBIG);
	CHECK(strstr(err.msg, "pack exceeds maximum allowed size (8000 bytes): its header "
	                      "claims 1000 objects") != NULL);
	/* a regular file: its length */
	CHECK_EQ_INT(stream_count(algo, 200, 0, 1, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "the header claims 200 objects, more than its 1000 bytes can hold") !=
	      NULL);
}

int main(void)
{
	test_algo(&pw_hash_sha1);
	test_algo(&pw_hash_sha256);
	test_links(&pw_hash_sha1);
	test_links(&pw_hash_sha256);
	test_counts(&pw_hash_sha1);
	test_counts(&pw_hash_sha256);
	return pw_test_done();
}
