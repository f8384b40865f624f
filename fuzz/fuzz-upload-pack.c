/* Fuzz whole upload-pack sessions against a small fixed repository (built
 * once, for each algorithm, in a temporary directory at the first input).
 *
 * First byte: bit 0 algorithm (0 sha1, 1 sha256); bits 1-2 protocol version
 * (0, 1, 2, 2); bit 3 --stateless-rpc; bit 4 allow filters/any want;
 * bit 6 "text mode". In text mode the rest is lines turned into pkt-lines
 * ("0000" a flush, "0001" a delim), with $C, $P, $B, $T replaced by the hex
 * ids of the tip commit, its parent, a blob and a tag, so seeds can ask for
 * real objects in both algorithms. Otherwise the rest is fed as raw bytes. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/server.h"

struct fixture {
	struct pw_repo *repo[2]; /* plain, permissive */
	char commit[PW_MAX_HEXSZ + 1], parent[PW_MAX_HEXSZ + 1];
	char blob[PW_MAX_HEXSZ + 1], tag[PW_MAX_HEXSZ + 1];
};

static struct fixture fx[2];
static int ready = -1;
static char root[64];

static int write_obj(struct pw_odb *odb, int type, const struct pw_buf *b, struct pw_oid *out)
{
	return pw_odb_write_loose(odb, type, b->data, b->len, out);
}

static int build(struct fixture *f, const struct pw_hash_algo *algo, const char *dir,
                 int permissive)
{
	struct pw_repo_init_opts o;
	struct pw_repo *repo;
	struct pw_odb *odb;
	struct pw_error err;
	struct pw_buf b = PW_BUF_INIT;
	struct pw_oid blob, tree, c1, c2, tag;
	struct pw_ref_tx *tx;
	char hex[PW_MAX_HEXSZ + 1], path[256];
	const char *id = "A U Thor <a@example.com> 1700000000 +0000";
	int rc;

	memset(&o, 0, sizeof(o));
	o.bare = 1;
	o.algo = algo;
	o.initial_branch = "main";
	if (pw_repo_init_ext(&repo, dir, &o, &err))
		return -1;
	if (permissive) {
		snprintf(path, sizeof(path), "%s/config", dir);
		FILE *cf = fopen(path, "a");

		if (cf) {
			fputs("[uploadpack]\n\tallowFilter = true\n\tallowAnySHA1InWant = true\n"
			      "\tallowRefInWant = true\n\tallowSidebandAll = true\n",
			      cf);
			fclose(cf);
		}
		pw_repo_free(repo);
		if (pw_repo_open_gitdir(&repo, dir, &err))
			return -1;
	}
	if (pw_odb_open(&odb, pw_repo_objects_dir(repo), algo, &err))
		return -1;
	pw_buf_adds(&b, "hello\n");
	rc = write_obj(odb, PW_OBJ_BLOB, &b, &blob);
	pw_buf_reset(&b);
	pw_buf_adds(&b, "100644 a.txt");
	pw_buf_addch(&b, '\0');
	pw_buf_add(&b, blob.id, algo->rawsz);
	rc |= write_obj(odb, PW_OBJ_TREE, &b, &tree);
	pw_buf_reset(&b);
	pw_buf_addf(&b, "tree %s\nauthor %s\ncommitter %s\n\nfirst\n", pw_oid_to_hex(&tree, hex),
	            id, id);
	rc |= write_obj(odb, PW_OBJ_COMMIT, &b, &c1);
	pw_buf_reset(&b);
	pw_buf_addf(&b, "tree %s\n", pw_oid_to_hex(&tree, hex));
	pw_buf_addf(&b, "parent %s\nauthor %s\ncommitter %s\n\nsecond\n", pw_oid_to_hex(&c1, hex),
	            id, id);
	rc |= write_obj(odb, PW_OBJ_COMMIT, &b, &c2);
	pw_buf_reset(&b);
	pw_buf_addf(&b, "object %s\ntype commit\ntag v1\ntagger %s\n\nrelease\n",
	            pw_oid_to_hex(&c1, hex), id);
	rc |= write_obj(odb, PW_OBJ_TAG, &b, &tag);
	pw_buf_free(&b);
	pw_odb_free(odb);
	if (rc || pw_ref_tx_new(&tx, repo))
		return -1;
	rc = pw_ref_tx_update(tx, "refs/heads/main", &c2, NULL, 0);
	rc |= pw_ref_tx_update(tx, "refs/tags/v1", &tag, NULL, 0);
	if (!rc)
		rc = pw_ref_tx_commit(tx);
	pw_ref_tx_free(tx);
	if (rc)
		return -1;
	f->repo[permissive] = repo;
	pw_oid_to_hex(&c2, f->commit);
	pw_oid_to_hex(&c1, f->parent);
	pw_oid_to_hex(&blob, f->blob);
	pw_oid_to_hex(&tag, f->tag);
	return 0;
}

static int setup(void)
{
	char dir[128];
	int a, p;

	snprintf(root, sizeof(root), "/tmp/pw-fuzz-upload-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	for (a = 0; a < 2; a++)
		for (p = 0; p < 2; p++) {
			snprintf(dir, sizeof(dir), "%s/r%d%d.git", root, a, p);
			if (build(&fx[a], a ? &pw_hash_sha256 : &pw_hash_sha1, dir, p))
				return -1;
		}
	return 0;
}

static void cleanup(void)
{
	char cmd[128];
	int a, p;

	for (a = 0; a < 2; a++)
		for (p = 0; p < 2; p++)
			pw_repo_free(fx[a].repo[p]);
	if (root[0] && !strncmp(root, "/tmp/pw-fuzz-upload-", 20)) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd)) {
			/* nothing to do: a leftover temporary directory */
		}
	}
}

/* Text mode: lines to pkt-lines with id substitution. */
static void text_to_pkts(const struct fixture *f, const uint8_t *in, size_t len, struct pw_buf *out)
{
	struct pw_buf line = PW_BUF_INIT;
	size_t i = 0;

	while (i < len) {
		size_t j = i;

		pw_buf_reset(&line);
		while (j < len && in[j] != '\n') {
			if (in[j] == '$' && j + 1 < len && strchr("CPBT", in[j + 1]) && in[j + 1]) {
				char k = (char)in[j + 1];

				pw_buf_adds(&line, k == 'C'   ? f->commit
				                   : k == 'P' ? f->parent
				                   : k == 'B' ? f->blob
				                              : f->tag);
				j += 2;
				continue;
			}
			pw_buf_addch(&line, (char)in[j++]);
		}
		if (line.len == 4 && !memcmp(line.data, "0000", 4))
			pw_pkt_flush(out);
		else if (line.len == 4 && !memcmp(line.data, "0001", 4))
			pw_pkt_delim(out);
		else if (line.len + 1 <= PW_PKT_DATA_MAX) {
			pw_buf_addch(&line, '\n');
			pw_pkt_write(out, line.data, line.len);
		}
		i = j + 1;
	}
	pw_buf_free(&line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int versions[4] = {0, 1, 2, 2};
	struct pw_upload_pack_opts opts;
	struct pw_buf in = PW_BUF_INIT;
	struct pw_error err;
	const struct fixture *f;
	FILE *tmp;
	int out_fd, flags;

	if (ready < 0) {
		ready = setup() == 0;
		if (!ready)
			fprintf(stderr,
			        "fuzz-upload-pack: could not build the fixture repositories\n");
		atexit(cleanup);
	}
	if (!ready || !size)
		return 0;
	flags = data[0];
	f = &fx[flags & 1];
	if (flags & 0x40)
		text_to_pkts(f, data + 1, size - 1, &in);
	else
		pw_buf_add(&in, data + 1, size - 1);

	tmp = tmpfile();
	/* PW_FUZZ_OUT=file keeps the responses, to look at what seeds do */
	out_fd = getenv("PW_FUZZ_OUT")
	                 ? open(getenv("PW_FUZZ_OUT"), O_WRONLY | O_CREAT | O_APPEND, 0644)
	                 : open("/dev/null", O_WRONLY);
	if (!tmp || out_fd < 0 || (in.len && fwrite(in.data, 1, in.len, tmp) != in.len) ||
	    fflush(tmp) || fseek(tmp, 0, SEEK_SET)) {
		if (tmp)
			fclose(tmp);
		if (out_fd >= 0)
			close(out_fd);
		pw_buf_free(&in);
		return 0;
	}
	pw_upload_pack_opts_init(&opts);
	opts.version = versions[(flags >> 1) & 3];
	opts.stateless_rpc = !!(flags & 8);
	if (pw_upload_pack(f->repo[(flags >> 4) & 1], fileno(tmp), out_fd, &opts, &err) &&
	    getenv("PW_FUZZ_VERBOSE"))
		fprintf(stderr, "session error: %s\n", err.msg);
	fclose(tmp);
	close(out_fd);
	pw_buf_free(&in);
	return 0;
}
