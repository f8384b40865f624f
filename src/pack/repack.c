/* packwire repack -a -d [-b]: one pack of everything reachable.
 *
 * Order (what makes it crash-safe): the old packs are listed first; the new
 * pack and its .idx are written to temporary files and renamed in (pack
 * first), then the .bitmap; then the caller's before_delete hook writes
 * what else describes the new pack (the compat map's side file); only then
 * are the old packs deleted (.bitmap and .idx before the .pack, so that no
 * .idx is left without its pack) and the loose objects that the new pack
 * holds. A kill at any step leaves every reachable object in a pack with
 * its .idx, or still loose, and (with the hook) every side file whole. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "odb/odb-priv.h"
#include "odb/pack.h"
#include "packwire/config.h"
#include "packwire/refs.h"
#include "packwire/repack.h"
#include "packwire/revision.h"
#include "packwire/revlist.h"
#include "util/fs.h"

void pw_repack_opts_init(struct pw_repack_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->write_bitmap = -1;
	opts->window = opts->depth = opts->threads = -2;
}

/* A pack of objects/pack: its path without ".pack" and whether it is kept. */
struct old_pack {
	char *base;
	int keep;
	struct pw_pack *pack; /* kept packs: opened to skip their objects */
};

struct repack {
	struct pw_repo *repo;
	const struct pw_repack_opts *opts;
	struct pw_error *err;
	const struct pw_hash_algo *algo;
	struct pw_odb *odb;
	char *pack_dir;
	struct old_pack *old;
	size_t nold, aold;
	struct pw_pack *newpack;
	struct pw_pack_writer *w;
	struct pw_revlist *rl; /* the walk: its commits serve the bitmap */
	int pack_kept;         /* copy objects of kept packs too (needed for a bitmap) */
	uint64_t counted;
};

static void warn(struct repack *r, const char *fmt, const char *arg)
{
	char msg[PW_ERROR_MSG_MAX + 256];

	if (!r->opts->warning)
		return;
	snprintf(msg, sizeof(msg), fmt, arg);
	r->opts->warning(r->opts->data, msg);
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

static char *with_ext(const char *base, const char *ext)
{
	size_t n = strlen(base), k = strlen(ext);
	char *p = malloc(n + k + 1);

	if (p) {
		memcpy(p, base, n);
		memcpy(p + n, ext, k + 1);
	}
	return p;
}

/* The packs present before we start. */
static int list_packs(struct repack *r)
{
	DIR *d = opendir(r->pack_dir);
	struct dirent *de;
	int rc = 0;

	if (!d)
		return errno == ENOENT ? 0
		                       : pw_error_set(r->err, PW_EIO, "cannot open %s: %s",
		                                      r->pack_dir, strerror(errno));
	while (!rc && (de = readdir(d))) {
		struct old_pack *op;
		char *name, *keep, *idx;
		size_t n = strlen(de->d_name);

		if (strncmp(de->d_name, "pack-", 5) || !has_suffix(de->d_name, ".pack"))
			continue;
		if (r->nold == r->aold) {
			size_t na = r->aold ? r->aold * 2 : 16;
			struct old_pack *no = realloc(r->old, na * sizeof(*no));

			if (!no) {
				rc = PW_ENOMEM;
				break;
			}
			r->old = no;
			r->aold = na;
		}
		if (!(name = pw_path_join(r->pack_dir, de->d_name))) {
			rc = PW_ENOMEM;
			break;
		}
		name[strlen(name) - 5] = '\0';
		(void)n;
		op = &r->old[r->nold++];
		memset(op, 0, sizeof(*op));
		op->base = name;
		keep = with_ext(name, ".keep");
		idx = with_ext(name, ".idx");
		if (!keep || !idx) {
			free(keep);
			free(idx);
			rc = PW_ENOMEM;
			break;
		}
		op->keep = pw_fs_exists(keep);
		if (op->keep && !pw_fs_exists(idx))
			op->keep = 0; /* not a usable pack: nothing to skip */
		if (op->keep) {
			struct pw_error e = {0};

			if (pw_pack_open(&op->pack, idx, r->algo, &e))
				rc = pw_error_copy(r->err, &e);
		}
		free(keep);
		free(idx);
	}
	closedir(d);
	return rc == PW_ENOMEM ? pw_error_set(r->err, rc, "repack: out of memory") : rc;
}

static int in_kept_pack(struct repack *r, const struct pw_oid *oid)
{
	size_t i;
	uint64_t off;

	for (i = 0; i < r->nold; i++)
		if (r->old[i].pack && pw_pack_find(r->old[i].pack, oid->id, &off))
			return 1;
	return 0;
}

static int collect(const struct pw_revlist_obj *o, void *data)
{
	struct repack *r = data;

	if (!r->pack_kept && in_kept_pack(r, &o->oid))
		return 0;
	if (r->opts->progress && ++r->counted % 1024 == 0)
		r->opts->progress(r->opts->data, "Enumerating objects", r->counted, 0, 0);
	return pw_pack_writer_add(r->w, &o->oid, o->type, o->path,
	                          o->type == PW_OBJ_TAG ? 0 : o->path_len);
}

/* Every id a reflog under dir names ("<old> <new> ..." lines) as a tip, so
 * that what `git reflog` shows stays (as git repack's --reflog). Ids whose
 * object is gone (expired history) are skipped. */
static int add_reflogs(struct repack *r, struct pw_revlist *rl, const char *dir, int depth)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > 32 || !(d = opendir(dir)))
		return 0;
	while (!rc && (de = readdir(d))) {
		struct pw_buf buf = PW_BUF_INIT;
		struct pw_error e = {0};
		char *path;
		size_t pos = 0, hexsz = r->algo->hexsz;

		if (de->d_name[0] == '.')
			continue;
		if (!(path = pw_path_join(dir, de->d_name)))
			return pw_error_set(r->err, PW_ENOMEM, "repack: out of memory");
		if (pw_fs_is_dir(path)) {
			rc = add_reflogs(r, rl, path, depth + 1);
		} else if (!pw_fs_read_file(path, &buf, (size_t)1 << 30, &e)) {
			while (!rc && pos + 2 * hexsz + 1 <= buf.len) {
				const char *line = buf.data + pos,
				           *nl = memchr(line, '\n', buf.len - pos);
				struct pw_oid oid;
				int k;

				for (k = 0; k < 2 && !rc; k++)
					if (!pw_oid_from_hex(&oid, line + k * (hexsz + 1), hexsz,
					                     r->algo) &&
					    !pw_oid_is_zero(&oid) &&
					    pw_odb_exists(r->odb, &oid) > 0)
						rc = pw_revlist_add(rl, &oid, NULL, 0);
				pos = nl ? (size_t)(nl - buf.data) + 1 : buf.len;
			}
		}
		pw_buf_free(&buf);
		free(path);
	}
	closedir(d);
	return rc;
}

struct prefer {
	struct pw_repo *repo;
	struct pw_oid *oids;
	size_t n, alloc;
};

static int prefer_ref(const struct pw_ref *ref, void *data)
{
	struct prefer *p = data;

	if (p->n == p->alloc) {
		size_t na = p->alloc ? p->alloc * 2 : 16;
		struct pw_oid *no = realloc(p->oids, na * sizeof(*no));

		if (!no)
			return PW_ENOMEM;
		p->oids = no;
		p->alloc = na;
	}
	p->oids[p->n++] = ref->oid;
	return 0;
}

static int prefer_prefix(const struct pw_config_entry *e, void *data)
{
	struct prefer *p = data;
	int rc;

	if (!e->value || !*e->value)
		return 0;
	rc = pw_refs_foreach(p->repo, e->value, 0, prefer_ref, p);
	return rc == PW_ENOMEM ? rc : 0;
}

/* The tips of the refs pack.preferBitmapTips names (prefixes), as Git: the
 * bitmap writer prefers them in their windows. */
static int preferred_tips(struct repack *r, struct pw_oid **tips, size_t *ntips)
{
	const struct pw_config *cfg = pw_repo_config(r->repo);
	struct prefer p = {r->repo, NULL, 0, 0};
	int rc = cfg ? pw_config_get_all(cfg, "pack.preferbitmaptips", prefer_prefix, &p) : 0;

	*tips = p.oids;
	*ntips = p.n;
	return rc == PW_ENOMEM ? pw_error_set(r->err, rc, "repack: out of memory") : 0;
}

static int walked_commit(void *data, const struct pw_oid *oid, struct pw_commit_info *out)
{
	return pw_revlist_commit_info(data, oid, out);
}

/* Walk everything reachable into the writer. The walk is kept: the bitmap
 * takes the commits it parsed from it instead of reading them again. */
static int enumerate(struct repack *r)
{
	struct pw_revlist *rl = NULL;
	struct pw_revs *revs = NULL;
	size_t hint = pw_odb_packed_count(r->odb);
	int rc;

	if (pw_revlist_new(&rl, r->odb, PW_REVLIST_OBJECTS) ||
	    pw_revs_new(&revs, r->repo, r->odb) || pw_revlist_reserve(rl, hint) ||
	    pw_pack_writer_reserve(r->w, hint)) {
		rc = pw_error_set(r->err, PW_ENOMEM, "repack: out of memory");
		goto out;
	}
	if ((rc = pw_revs_add_all(revs, rl))) {
		pw_error_copy(r->err, pw_revs_error(revs));
		goto out;
	}
	{
		char *logs = pw_path_join(pw_repo_git_dir(r->repo), "logs");

		rc = logs ? add_reflogs(r, rl, logs, 0) : PW_ENOMEM;
		free(logs);
		if (rc) {
			if (rc == PW_ENOMEM)
				pw_error_set(r->err, rc, "repack: out of memory");
			else
				pw_error_copy(r->err, pw_revlist_error(rl));
			goto out;
		}
	}
	if ((rc = pw_revlist_run(rl, collect, r))) {
		const char *msg = pw_revlist_error(rl)->msg;

		if (*msg)
			pw_error_copy(r->err, pw_revlist_error(rl));
		else
			pw_error_copy(r->err, pw_pack_writer_error(r->w));
		goto out;
	}
	if (r->opts->progress)
		r->opts->progress(r->opts->data, "Enumerating objects", r->counted, 0, 1);
	r->rl = rl;
	rl = NULL;
	pw_pack_writer_set_commit_info(r->w, walked_commit, r->rl);
out:
	pw_revlist_free(rl);
	pw_revs_free(revs);
	return rc;
}

static int unlink_if(const char *base, const char *ext)
{
	char *p = with_ext(base, ext);
	int ok;

	if (!p)
		return -1;
	ok = !unlink(p) || errno == ENOENT;
	free(p);
	return ok ? 0 : -1;
}

static void step(struct repack *r, const char *what, const char *arg)
{
	char msg[4200];

	if (!r->opts->step)
		return;
	snprintf(msg, sizeof(msg), "%s%s%s", what, arg ? " " : "", arg ? arg : "");
	r->opts->step(r->opts->data, msg);
}

static void delete_old_packs(struct repack *r, const char *new_hex, struct pw_repack_result *res)
{
	static const char *const exts[] = {".bitmap", ".rev",    ".promisor", ".mtimes",
	                                   ".idx",    ".compat", ".pack"};
	size_t i, k;

	for (i = 0; i < r->nold; i++) {
		const char *name = strrchr(r->old[i].base, '/');

		if (r->old[i].keep)
			continue;
		/* the same objects packed the same way give the same name */
		if (name && !strncmp(name + 1, "pack-", 5) && !strcmp(name + 6, new_hex))
			continue;
		for (k = 0; k < sizeof(exts) / sizeof(exts[0]); k++)
			if (unlink_if(r->old[i].base, exts[k]))
				warn(r, "cannot delete the old pack %s", r->old[i].base);
		res->packs_deleted++;
		step(r, "deleted", r->old[i].base);
	}
}

/* Loose objects that the new pack (or a kept pack) holds: delete them, and
 * the fan-out directories left empty. */
static void prune_packed(struct repack *r, struct pw_repack_result *res)
{
	const char *objdir = pw_repo_objects_dir(r->repo);
	char path[4096];
	int fan;

	for (fan = 0; fan < 256; fan++) {
		DIR *d;
		struct dirent *de;
		size_t n = (size_t)snprintf(path, sizeof(path), "%s/%02x", objdir, fan);

		if (n >= sizeof(path) - PW_MAX_HEXSZ - 2 || !(d = opendir(path)))
			continue;
		while ((de = readdir(d))) {
			char hex[PW_MAX_HEXSZ + 1];
			struct pw_oid oid;
			uint64_t off;

			if (strlen(de->d_name) != r->algo->hexsz - 2)
				continue;
			snprintf(hex, 3, "%02x", fan);
			memcpy(hex + 2, de->d_name, r->algo->hexsz - 2);
			if (pw_oid_from_hex(&oid, hex, r->algo->hexsz, r->algo))
				continue;
			if (!pw_pack_find(r->newpack, oid.id, &off) && !in_kept_pack(r, &oid))
				continue;
			snprintf(path + n, sizeof(path) - n, "/%s", de->d_name);
			if (!unlink(path))
				res->loose_deleted++;
			path[n] = '\0';
		}
		closedir(d);
		rmdir(path); /* fails while not empty */
	}
}

static int run(struct repack *r, struct pw_repack_result *res)
{
	const struct pw_config *cfg = pw_repo_config(r->repo);
	struct pw_pack_write_opts wo;
	struct pw_oid *tips = NULL;
	size_t ntips = 0;
	char *base = NULL, *idx = NULL;
	int rc, bitmap = r->opts->write_bitmap, quiet = 0, v;

	if (bitmap < 0 && cfg && !pw_config_get_bool(cfg, "repack.writebitmaps", &v, NULL))
		bitmap = v;
	/* as Git: kept objects are packed again for a bitmap asked for; without
	 * a word either way a bare repository gets one when it can, quietly */
	r->pack_kept = bitmap > 0;
	if (bitmap < 0) {
		bitmap = pw_repo_is_bare(r->repo);
		quiet = 1;
	}
	if ((rc = pw_fs_mkdir_p(r->pack_dir, r->err)) || (rc = list_packs(r)))
		return rc;
	pw_pack_write_opts_init(&wo);
	pw_pack_write_opts_from_config(&wo, cfg);
	if (r->opts->window != -2)
		wo.window = r->opts->window;
	if (r->opts->depth != -2)
		wo.depth = r->opts->depth;
	if (r->opts->threads != -2)
		wo.threads = r->opts->threads;
	wo.ofs_delta = 1;
	wo.objects_dir = pw_repo_objects_dir(r->repo);
	wo.progress = r->opts->progress;
	wo.progress_data = r->opts->data;
	if (pw_pack_writer_new(&r->w, r->odb, &wo))
		return pw_error_set(r->err, PW_ENOMEM, "repack: out of memory");
	if ((rc = pw_pack_writer_add_tag_refs(r->w, r->repo))) {
		pw_error_copy(r->err, pw_pack_writer_error(r->w));
		goto out;
	}
	if ((rc = enumerate(r)))
		goto out;
	if (!pw_pack_writer_count(r->w)) {
		rc = 0; /* nothing to pack: leave everything as it is */
		goto out;
	}
	if (!(base = pw_path_join(r->pack_dir, "pack"))) {
		rc = pw_error_set(r->err, PW_ENOMEM, "repack: out of memory");
		goto out;
	}
	if ((rc = pw_pack_writer_write_files(r->w, base, 2, res->hex))) {
		pw_error_copy(r->err, pw_pack_writer_error(r->w));
		goto out;
	}
	res->objects = (uint32_t)pw_pack_writer_count(r->w);
	if (bitmap) {
		if ((rc = preferred_tips(r, &tips, &ntips)))
			goto out;
		rc = pw_pack_writer_write_bitmap_file(r->w, base, tips, ntips);
		if (rc == PW_ENOTFOUND || rc == PW_ECORRUPT) {
			if (!quiet)
				warn(r, "disabling bitmap writing: %s",
				     pw_pack_writer_error(r->w)->msg);
		} else if (rc) {
			pw_error_copy(r->err, pw_pack_writer_error(r->w));
			goto out;
		}
		res->bitmap = !rc;
		rc = 0;
	}
	step(r, "pack written", NULL);
	{
		char name[PW_MAX_HEXSZ + 16];

		snprintf(name, sizeof(name), "pack-%s.idx", res->hex);
		if (!(idx = pw_path_join(r->pack_dir, name))) {
			rc = pw_error_set(r->err, PW_ENOMEM, "repack: out of memory");
			goto out;
		}
	}
	/* the new pack's side files (the compat map) before anything goes */
	if (r->opts->before_delete && r->opts->before_delete(r->opts->data, idx))
		goto out; /* the old packs stay: the hook said why */
	if (!r->opts->delete_old)
		goto out;
	{
		struct pw_error e = {0};

		/* the new pack must open before anything old goes */
		if ((rc = pw_pack_open(&r->newpack, idx, r->algo, &e))) {
			pw_error_copy(r->err, &e);
			goto out;
		}
	}
	step(r, "ready to delete", NULL);
	delete_old_packs(r, res->hex, res);
	prune_packed(r, res);
	step(r, "pruned loose", NULL);
out:
	free(tips);
	free(base);
	free(idx);
	return rc;
}

int pw_repack(struct pw_repo *repo, const struct pw_repack_opts *opts,
              struct pw_repack_result *result, struct pw_error *err)
{
	struct pw_repack_opts defaults;
	struct pw_repack_result local;
	struct repack r;
	size_t i;
	int rc;

	if (!opts) {
		pw_repack_opts_init(&defaults);
		opts = &defaults;
	}
	if (!result)
		result = &local;
	memset(result, 0, sizeof(*result));
	memset(&r, 0, sizeof(r));
	r.repo = repo;
	r.opts = opts;
	r.err = err;
	r.algo = pw_repo_algo(repo);
	if (!(r.pack_dir = pw_path_join(pw_repo_objects_dir(repo), "pack")))
		return pw_error_set(err, PW_ENOMEM, "repack: out of memory");
	if ((rc = pw_odb_open(&r.odb, pw_repo_objects_dir(repo), r.algo, err)) == 0)
		rc = run(&r, result);
	pw_pack_writer_free(r.w);
	pw_revlist_free(r.rl);
	pw_odb_free(r.odb);
	pw_pack_free(r.newpack);
	for (i = 0; i < r.nold; i++) {
		free(r.old[i].base);
		pw_pack_free(r.old[i].pack);
	}
	free(r.old);
	free(r.pack_dir);
	return rc;
}
