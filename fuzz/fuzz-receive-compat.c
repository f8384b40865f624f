/* Fuzz the translation of a push received in the other algorithm
 * (pw_rp_compat_import: wire objects -> storage pack, index and side
 * file). Byte 0 bit 0 picks the storage algorithm (sha256 when set; the
 * wire is the other); with bit 1 set every commit of the input is one of
 * the client's shallow commits (a shallow push: the import leaves out
 * those whose parents are missing and what is built on them). The rest is a list of objects, each a
 * type byte (1 commit, 2 tree, 3 blob, 4 tag; anything else ends the list), a big-endian 16-bit
 * length and that many content bytes; they are written as loose objects of the wire algorithm, as
 * if a pushed pack had held them, and imported into a scratch pack directory of a repository with
 * extensions.compatObjectFormat and an empty map. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/odb.h"
#include "packwire/repo.h"
#include "server/compat-receive.h"
#include "util/fs.h"

static char base[64];
static struct pw_rp_compat *compat[2];

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* A repository stored in `storage` with the other as compat algorithm. */
static struct pw_rp_compat *make_repo(int i, const char *storage, const char *wire)
{
	char dir[128], p[192], cfg[256];
	struct pw_repo *repo = NULL;
	struct pw_rp_compat *c = NULL;
	struct pw_error err;

	snprintf(dir, sizeof(dir), "%s/repo%d.git", base, i);
	snprintf(p, sizeof(p), "%s/objects/pack", dir);
	if (pw_fs_mkdir_p(p, &err))
		return NULL;
	snprintf(p, sizeof(p), "%s/refs/heads", dir);
	if (pw_fs_mkdir_p(p, &err))
		return NULL;
	snprintf(p, sizeof(p), "%s/HEAD", dir);
	write_file(p, "ref: refs/heads/main\n");
	snprintf(p, sizeof(p), "%s/config", dir);
	snprintf(cfg, sizeof(cfg),
	         "[core]\n\trepositoryformatversion = 1\n\tbare = true\n[extensions]\n"
	         "\tobjectformat = %s\n\tcompatobjectformat = %s\n",
	         storage, wire);
	write_file(p, cfg);
	/* the handle lives as long as the process */
	if (pw_repo_open_gitdir(&repo, dir, &err) || pw_rp_compat_open(&c, repo, wire, &err))
		return NULL;
	return c;
}

static void cleanup(void)
{
	if (base[0])
		pw_fs_remove_tree(base, 0);
}

static int setup(void)
{
	static int done;

	if (done)
		return compat[0] && compat[1] ? 0 : -1;
	done = 1;
	snprintf(base, sizeof(base), "/tmp/pw-fuzz-rc-XXXXXX");
	if (!mkdtemp(base)) {
		base[0] = '\0';
		return -1;
	}
	atexit(cleanup);
	compat[0] = make_repo(0, "sha1", "sha256");
	compat[1] = make_repo(1, "sha256", "sha1");
	return compat[0] && compat[1] ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int types[5] = {0, PW_OBJ_COMMIT, PW_OBJ_TREE, PW_OBJ_BLOB, PW_OBJ_TAG};
	char wire_dir[128], pack_dir[128], hex[PW_MAX_HEXSZ + 1];
	struct pw_rp_compat *c;
	struct pw_odb *odb = NULL;
	struct pw_error err;
	struct pw_oid shallow[64];
	size_t pos = 1, nshallow = 0;
	uint32_t nr;

	if (!size || setup())
		return 0;
	c = compat[data[0] & 1];
	snprintf(wire_dir, sizeof(wire_dir), "%s/wire", base);
	snprintf(pack_dir, sizeof(pack_dir), "%s/out", base);
	pw_fs_remove_tree(wire_dir, 0);
	pw_fs_remove_tree(pack_dir, 0);
	if (pw_fs_mkdir_p(wire_dir, &err) || pw_fs_mkdir_p(pack_dir, &err) ||
	    pw_odb_open(&odb, wire_dir, pw_rp_compat_wire(c), &err))
		return 0;
	while (pos + 3 <= size && data[pos] >= 1 && data[pos] <= 4) {
		size_t len = (size_t)data[pos + 1] << 8 | data[pos + 2];
		struct pw_oid oid;

		if (pos + 3 + len > size)
			break;
		if (pw_odb_write_loose(odb, types[data[pos]], data + pos + 3, len, &oid))
			break;
		if ((data[0] & 2) && types[data[pos]] == PW_OBJ_COMMIT && nshallow < 64)
			shallow[nshallow++] = oid;
		pos += 3 + len;
	}
	pw_odb_free(odb);
	memset(&err, 0, sizeof(err));
	if (pw_rp_compat_set_shallow(c, shallow, nshallow))
		return 0;
	pw_rp_compat_import(c, wire_dir, pack_dir, NULL, NULL, hex, &nr, &err);
	return 0;
}
