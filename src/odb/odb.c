#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odb/loose.h"
#include "odb/odb-priv.h"
#include "odb/pack.h"
#include "packwire/odb.h"
#include "util/fs.h"

#define MAX_ALTERNATE_DEPTH 5

/* What config_algo returns for an objectFormat we do not know. */
static const struct pw_hash_algo unknown_algo = {.name = "unknown"};

/* A pack as the odb knows it: the idx is opened when the directory is
 * scanned, the .pack only when an object in it is wanted (as Git does), so a
 * damaged pack costs nothing until it is used and then says why. */
struct odb_pack {
	char *idx_path;
	struct pw_idx *idx;   /* until the pack is open; then pack->idx */
	struct pw_pack *pack; /* NULL until opened */
	int failed;           /* the .pack did not open: fail_err says why */
	struct pw_error fail_err;
};

struct pw_odb {
	const struct pw_hash_algo *algo;
	struct pw_error err;
	char **dirs; /* objects directories: ours first, then alternates */
	size_t nr_dirs;
	struct odb_pack **packs; /* most recently used first */
	size_t nr_packs, alloc_packs;
	struct pw_base_cache *cache;
	int verify;
	struct pw_buf scratch;
	/* problems met while scanning (bad idx files), one per line */
	struct pw_buf warnings;
};

const struct pw_hash_algo *pw_odb_algo(const struct pw_odb *odb)
{
	return odb->algo;
}

const struct pw_error *pw_odb_error(const struct pw_odb *odb)
{
	return &odb->err;
}

const char *pw_odb_warnings(const struct pw_odb *odb)
{
	return odb->warnings.data;
}

void pw_odb_set_verify(struct pw_odb *odb, int on)
{
	odb->verify = on;
}

struct pw_base_cache *pw_odb_cache(struct pw_odb *odb)
{
	return odb->cache;
}

static void warn(struct pw_odb *odb, const char *msg)
{
	pw_buf_adds(&odb->warnings, msg);
	pw_buf_addch(&odb->warnings, '\n');
}

static int has_pack(const struct pw_odb *odb, const char *idx_path)
{
	size_t i;

	for (i = 0; i < odb->nr_packs; i++)
		if (!strcmp(odb->packs[i]->idx_path, idx_path))
			return 1;
	return 0;
}

static int add_pack(struct pw_odb *odb, const char *idx_path)
{
	struct odb_pack *e;
	struct pw_error err = {0};
	int rc;

	if (has_pack(odb, idx_path))
		return 0;
	e = calloc(1, sizeof(*e));
	if (!e || !(e->idx_path = strdup(idx_path))) {
		free(e);
		return pw_error_set(&odb->err, PW_ENOMEM, "out of memory");
	}
	rc = pw_idx_open(&e->idx, idx_path, odb->algo, &err);
	if (rc) {
		/* Like Git: a broken idx is reported and its pack left out. */
		warn(odb, err.msg);
		free(e->idx_path);
		free(e);
		return rc == PW_ENOMEM ? pw_error_copy(&odb->err, &err) : 0;
	}
	if (odb->nr_packs == odb->alloc_packs) {
		size_t n = odb->alloc_packs ? odb->alloc_packs * 2 : 8;
		struct odb_pack **np = realloc(odb->packs, n * sizeof(*np));

		if (!np) {
			pw_idx_free(e->idx);
			free(e->idx_path);
			free(e);
			return pw_error_set(&odb->err, PW_ENOMEM, "out of memory");
		}
		odb->packs = np;
		odb->alloc_packs = n;
	}
	/* Newly found packs go first: they are the likeliest to be wanted. */
	memmove(odb->packs + 1, odb->packs, odb->nr_packs * sizeof(*odb->packs));
	odb->packs[0] = e;
	odb->nr_packs++;
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !memcmp(s + a - b, suffix, b);
}

static int scan_packs(struct pw_odb *odb, const char *objects_dir)
{
	struct pw_buf path = PW_BUF_INIT, pack = PW_BUF_INIT;
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (pw_buf_addf(&path, "%s/pack", objects_dir))
		return pw_error_set(&odb->err, PW_ENOMEM, "out of memory");
	d = opendir(path.data);
	if (!d) {
		pw_buf_free(&path);
		return 0; /* no packs yet */
	}
	while (!rc && (de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);

		if (!ends_with(n, ".idx") || !strncmp(n, "tmp_", 4) || strstr(n, ".tmp"))
			continue;
		pw_buf_reset(&pack);
		if (pw_buf_addf(&pack, "%s/%.*s.pack", path.data, (int)(len - 4), n)) {
			rc = pw_error_set(&odb->err, PW_ENOMEM, "out of memory");
			break;
		}
		if (access(pack.data, F_OK))
			continue; /* an idx without its pack is not usable (yet) */
		memcpy(pack.data + pack.len - 5, ".idx", 5);
		rc = add_pack(odb, pack.data);
	}
	closedir(d);
	pw_buf_free(&path);
	pw_buf_free(&pack);
	return rc;
}

/* The object format a repository's config declares ("sha1" when none);
 * NULL when there is no config to read. */
static const struct pw_hash_algo *config_algo(const char *config_path)
{
	struct pw_buf cfg = PW_BUF_INIT;
	const struct pw_hash_algo *algo = &pw_hash_sha1;
	int in_ext = 0;
	char *line, *save = NULL;

	if (pw_fs_read_file(config_path, &cfg, 1 << 20, NULL)) {
		pw_buf_free(&cfg);
		return NULL;
	}
	for (line = strtok_r(cfg.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *v, *e;

		while (isspace((unsigned char)*p))
			p++;
		if (*p == '[') {
			in_ext = !strncasecmp(p, "[extensions]", 12);
			continue;
		}
		if (!in_ext || strncasecmp(p, "objectformat", 12))
			continue;
		v = p + 12;
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v != '=')
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		e = v + strlen(v);
		while (e > v && isspace((unsigned char)e[-1]))
			e--;
		algo = pw_hash_by_name(v, (size_t)(e - v));
		if (!algo)
			algo = &unknown_algo;
	}
	pw_buf_free(&cfg);
	return algo;
}

static int has_dir(const struct pw_odb *odb, const char *real)
{
	size_t i;

	for (i = 0; i < odb->nr_dirs; i++)
		if (!strcmp(odb->dirs[i], real))
			return 1;
	return 0;
}

static int add_dir(struct pw_odb *odb, const char *dir, int depth);

static int read_alternates(struct pw_odb *odb, const char *objects_dir, int depth)
{
	struct pw_buf file = PW_BUF_INIT, path = PW_BUF_INIT;
	char *line, *save = NULL;
	int rc = 0;

	if (pw_buf_addf(&path, "%s/info/alternates", objects_dir))
		return pw_error_set(&odb->err, PW_ENOMEM, "out of memory");
	rc = pw_fs_read_file(path.data, &file, 1 << 20, &odb->err);
	if (rc == PW_ENOTFOUND)
		rc = 0;
	if (rc || !file.len)
		goto done;
	if (depth >= MAX_ALTERNATE_DEPTH) {
		rc = pw_error_set(&odb->err, PW_EINVAL, "%s: alternates nested more than %d deep",
		                  path.data, MAX_ALTERNATE_DEPTH);
		goto done;
	}
	for (line = strtok_r(file.data, "\n", &save); line && !rc;
	     line = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(line);

		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		pw_buf_reset(&path);
		if (line[0] == '/')
			rc = pw_buf_adds(&path, line);
		else
			rc = pw_buf_addf(&path, "%s/%s", objects_dir, line);
		if (rc) {
			rc = pw_error_set(&odb->err, rc, "out of memory");
			break;
		}
		rc = add_dir(odb, path.data, depth + 1);
	}
done:
	pw_buf_free(&file);
	pw_buf_free(&path);
	return rc;
}

static int add_dir(struct pw_odb *odb, const char *dir, int depth)
{
	char real[PATH_MAX], *copy, **nd;
	int rc;

	if (!realpath(dir, real)) {
		if (!depth)
			return pw_error_set(&odb->err, PW_ENOTFOUND,
			                    "object directory %s does not exist", dir);
		{
			char msg[PATH_MAX + 64];

			snprintf(msg, sizeof(msg), "alternate object directory %s does not exist",
			         dir);
			warn(odb, msg);
		}
		return 0;
	}
	if (has_dir(odb, real))
		return 0;
	if (depth) {
		/* An alternate's repository must use our object format. */
		char cfg[PATH_MAX + 16];
		const struct pw_hash_algo *a;

		snprintf(cfg, sizeof(cfg), "%s/../config", real);
		a = config_algo(cfg);
		if (a && a != odb->algo)
			return pw_error_set(&odb->err, PW_EMISMATCH,
			                    "alternate object directory %s holds %s objects, but "
			                    "this repository uses %s",
			                    real, a->name, odb->algo->name);
	}
	nd = realloc(odb->dirs, (odb->nr_dirs + 1) * sizeof(*nd));
	if (!nd || !(copy = strdup(real))) {
		if (nd)
			odb->dirs = nd;
		return pw_error_set(&odb->err, PW_ENOMEM, "out of memory");
	}
	odb->dirs = nd;
	odb->dirs[odb->nr_dirs++] = copy;
	if ((rc = scan_packs(odb, copy)))
		return rc;
	return read_alternates(odb, copy, depth);
}

int pw_odb_open(struct pw_odb **out, const char *objects_dir, const struct pw_hash_algo *algo,
                struct pw_error *err)
{
	struct pw_odb *odb = calloc(1, sizeof(*odb));
	int rc;

	*out = NULL;
	if (!odb)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	odb->algo = algo;
	pw_buf_init(&odb->scratch, 0);
	pw_buf_init(&odb->warnings, 1 << 20);
	if ((rc = pw_base_cache_new(&odb->cache, 0))) {
		pw_odb_free(odb);
		return pw_error_set(err, rc, "out of memory");
	}
	if ((rc = add_dir(odb, objects_dir, 0))) {
		pw_error_copy(err, &odb->err);
		pw_odb_free(odb);
		return rc;
	}
	*out = odb;
	return 0;
}

void pw_odb_free(struct pw_odb *odb)
{
	size_t i;

	if (!odb)
		return;
	for (i = 0; i < odb->nr_packs; i++) {
		struct odb_pack *e = odb->packs[i];

		pw_pack_free(e->pack);
		pw_idx_free(e->idx);
		free(e->idx_path);
		free(e);
	}
	free(odb->packs);
	for (i = 0; i < odb->nr_dirs; i++)
		free(odb->dirs[i]);
	free(odb->dirs);
	pw_base_cache_free(odb->cache);
	pw_buf_free(&odb->scratch);
	pw_buf_free(&odb->warnings);
	free(odb);
}

int pw_odb_refresh(struct pw_odb *odb)
{
	size_t i;
	int rc;

	for (i = 0; i < odb->nr_dirs; i++)
		if ((rc = scan_packs(odb, odb->dirs[i])))
			return rc;
	return 0;
}

static const struct pw_idx *entry_idx(const struct odb_pack *e)
{
	return e->pack ? e->pack->idx : e->idx;
}

/* Make sure the pack of entry e is open: 0, or its error (again) in odb->err. */
static int open_entry(struct pw_odb *odb, struct odb_pack *e)
{
	int rc;

	if (e->pack)
		return 0;
	if (e->failed)
		return pw_error_copy(&odb->err, &e->fail_err);
	rc = pw_pack_open_idx(&e->pack, e->idx, e->idx_path, &e->fail_err);
	if (rc) {
		e->failed = 1;
		return pw_error_copy(&odb->err, &e->fail_err);
	}
	e->idx = NULL; /* owned by the pack now */
	return 0;
}

size_t pw_odb_pack_count(const struct pw_odb *odb)
{
	return odb->nr_packs;
}

size_t pw_odb_packed_count(struct pw_odb *odb)
{
	size_t i, n = 0;

	for (i = 0; i < odb->nr_packs; i++) {
		struct pw_pack *p;

		if (!pw_odb_pack(odb, i, &p))
			n += p->nr;
	}
	return n;
}

int pw_odb_pack(struct pw_odb *odb, size_t n, struct pw_pack **out)
{
	int rc;

	*out = NULL;
	if (n >= odb->nr_packs)
		return pw_error_set(&odb->err, PW_EINVAL, "no pack number %zu", n);
	if ((rc = open_entry(odb, odb->packs[n])))
		return rc;
	*out = odb->packs[n]->pack;
	return 0;
}

static int check_oid(struct pw_odb *odb, const struct pw_oid *oid)
{
	if (oid->algo != odb->algo->id)
		return pw_error_set(&odb->err, PW_EINVAL,
		                    "object id of another hash algorithm given to a %s object "
		                    "database",
		                    odb->algo->name);
	return 0;
}

static int not_found(struct pw_odb *odb, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];

	return pw_error_set(&odb->err, PW_ENOTFOUND, "object %s not found",
	                    pw_oid_to_hex(oid, hex));
}

/* Find the pack holding oid; 1 with *pack and *offset, 0 when in no pack, or a
 * negative error (a pack that lists it cannot be opened). */
static int find_packed(struct pw_odb *odb, const struct pw_oid *oid, struct pw_pack **pack,
                       uint64_t *offset)
{
	int first_err = 0;
	size_t i;

	for (i = 0; i < odb->nr_packs; i++) {
		struct odb_pack *e = odb->packs[i];
		uint32_t pos;
		int rc;

		if (!pw_idx_find(entry_idx(e), oid->id, &pos))
			continue;
		if ((rc = open_entry(odb, e))) {
			if (!first_err)
				first_err = rc;
			continue;
		}
		if ((rc = pw_idx_nth_offset(e->pack->idx, pos, offset, &odb->err)))
			return rc;
		if (i) {
			memmove(odb->packs + 1, odb->packs, i * sizeof(*odb->packs));
			odb->packs[0] = e;
		}
		*pack = e->pack;
		return 1;
	}
	return first_err;
}

int pw_odb_locate(struct pw_odb *odb, const struct pw_oid *oid, struct pw_odb_loc *loc)
{
	size_t i;
	int rc;

	memset(loc, 0, sizeof(*loc));
	if ((rc = check_oid(odb, oid)))
		return rc;
	rc = find_packed(odb, oid, &loc->pack, &loc->offset);
	if (rc == 1) {
		loc->kind = PW_ODB_LOC_PACK;
		return 0;
	}
	for (i = 0; i < odb->nr_dirs; i++)
		if (pw_loose_exists(odb->dirs[i], oid)) {
			loc->kind = PW_ODB_LOC_LOOSE;
			loc->loose_dir = odb->dirs[i];
			return 0;
		}
	/* the empty tree exists in every repository, as in Git (reads of it
	 * are answered by pw_odb_read without a file) */
	if (rc >= 0 && pw_oid_equal(oid, odb->algo->empty_tree)) {
		loc->kind = PW_ODB_LOC_LOOSE;
		return 0;
	}
	return rc < 0 ? rc : not_found(odb, oid);
}

static int verify(struct pw_odb *odb, const struct pw_oid *oid, int type, const struct pw_buf *b)
{
	struct pw_oid got;
	char hex[PW_MAX_HEXSZ + 1], ghex[PW_MAX_HEXSZ + 1];

	if (pw_object_hash(odb->algo, type, b->data, b->len, &got))
		return pw_hash_collision_error(&odb->err, &got);
	if (pw_oid_equal(&got, oid))
		return 0;
	return pw_error_set(&odb->err, PW_ECORRUPT,
	                    "object %s is corrupt: its content hashes to %s",
	                    pw_oid_to_hex(oid, hex), pw_oid_to_hex(&got, ghex));
}

int pw_odb_read(struct pw_odb *odb, const struct pw_oid *oid, int *type, struct pw_buf *out)
{
	struct pw_pack *pack;
	uint64_t offset, size;
	size_t i;
	int rc;

	if ((rc = check_oid(odb, oid)))
		return rc;
	rc = find_packed(odb, oid, &pack, &offset);
	if (rc == 1) {
		rc = pw_pack_read(pack, offset, odb->cache, type, out, &odb->err);
		if (!rc && odb->verify)
			rc = verify(odb, oid, *type, out);
		return rc;
	}
	for (i = 0; i < odb->nr_dirs; i++) {
		int lrc = pw_loose_read(odb->dirs[i], oid, type, &size, out, &odb->scratch,
		                        &odb->err);

		if (lrc == PW_ENOTFOUND)
			continue;
		if (!lrc && odb->verify)
			lrc = verify(odb, oid, *type, out);
		return lrc;
	}
	if (rc >= 0 && pw_oid_equal(oid, odb->algo->empty_tree)) {
		*type = PW_OBJ_TREE; /* as pw_odb_locate: Git's store always has it */
		pw_buf_reset(out);
		return 0;
	}
	return rc < 0 ? rc : not_found(odb, oid);
}

int pw_odb_read_header(struct pw_odb *odb, const struct pw_oid *oid, int *type, uint64_t *size)
{
	struct pw_pack *pack;
	uint64_t offset;
	size_t i;
	int rc;

	if ((rc = check_oid(odb, oid)))
		return rc;
	rc = find_packed(odb, oid, &pack, &offset);
	if (rc == 1)
		return pw_pack_read_header(pack, offset, type, size, &odb->err);
	for (i = 0; i < odb->nr_dirs; i++) {
		int lrc = pw_loose_read(odb->dirs[i], oid, type, size, NULL, &odb->scratch,
		                        &odb->err);

		if (lrc != PW_ENOTFOUND)
			return lrc;
	}
	if (rc >= 0 && pw_oid_equal(oid, odb->algo->empty_tree)) {
		*type = PW_OBJ_TREE; /* as in pw_odb_read */
		*size = 0;
		return 0;
	}
	return rc < 0 ? rc : not_found(odb, oid);
}

int pw_odb_exists(struct pw_odb *odb, const struct pw_oid *oid)
{
	struct pw_odb_loc loc;

	return pw_odb_locate(odb, oid, &loc) == 0;
}

int pw_odb_write_loose(struct pw_odb *odb, int type, const void *data, size_t len,
                       struct pw_oid *out)
{
	if (pw_object_hash(odb->algo, type, data, len, out))
		return pw_hash_collision_error(&odb->err, out);
	/* the empty tree "exists" without a file: Git writes one all the same */
	if (pw_odb_exists(odb, out) && !pw_oid_equal(out, odb->algo->empty_tree))
		return 0;
	return pw_loose_write(odb->dirs[0], odb->algo, type, data, len, out, &odb->err);
}

static int foreach_loose(struct pw_odb *odb, const char *dir,
                         int (*fn)(const struct pw_oid *oid, void *data), void *data)
{
	size_t hexsz = odb->algo->hexsz;
	char path[PATH_MAX], hex[PW_MAX_HEXSZ + 1];
	int i, rc = 0;

	for (i = 0; i < 256 && !rc; i++) {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "%s/%02x", dir, i);
		d = opendir(path);
		if (!d)
			continue;
		while (!rc && (de = readdir(d))) {
			struct pw_oid oid;

			if (strlen(de->d_name) != hexsz - 2)
				continue;
			snprintf(hex, 3, "%02x", i);
			memcpy(hex + 2, de->d_name, hexsz - 2);
			if (pw_oid_from_hex(&oid, hex, hexsz, odb->algo))
				continue;
			rc = fn(&oid, data);
		}
		closedir(d);
	}
	return rc;
}

int pw_odb_foreach(struct pw_odb *odb, int (*fn)(const struct pw_oid *oid, void *data), void *data)
{
	const struct pw_idx **idxs;
	size_t i, nr = odb->nr_packs;
	int rc = 0;

	/* fn may read objects, which reorders the pack list: walk a copy. */
	idxs = malloc((nr ? nr : 1) * sizeof(*idxs));
	if (!idxs)
		return pw_error_set(&odb->err, PW_ENOMEM, "out of memory");
	for (i = 0; i < nr; i++)
		idxs[i] = entry_idx(odb->packs[i]);
	for (i = 0; i < nr && !rc; i++) {
		const struct pw_idx *idx = idxs[i];
		uint32_t n;

		for (n = 0; n < idx->nr && !rc; n++) {
			struct pw_oid oid;

			pw_idx_nth_oid(idx, n, &oid);
			rc = fn(&oid, data);
		}
	}
	free(idxs);
	for (i = 0; i < odb->nr_dirs && !rc; i++)
		rc = foreach_loose(odb, odb->dirs[i], fn, data);
	return rc;
}
