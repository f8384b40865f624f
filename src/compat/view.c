/* The stored view: every object reachable from the refs as one pack of the
 * compat algorithm, with its .idx and reachability bitmap, so that serving
 * the view is native serving over that pack (docs/compat-map.md, "The
 * stored view"). Layout, under <objects>/compat-view/:
 *
 *   current                 "<algo> <pack-hex> g-XXXXXX\n": the generation in use
 *   g-XXXXXX/pack/          pack-<pack-hex>.pack, .idx, .bitmap
 *
 * A rewrite builds a new generation in a new g-XXXXXX/ (mkdtemp: never the
 * directory of another generation), fsyncs it and only then publishes
 * `current` (temporary file, fsync, rename): a crash at any point leaves the
 * old generation in use, and the next rewrite removes what it left. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat/map-priv.h"
#include "packwire/bitmap.h"
#include "packwire/fs.h"
#include "packwire/index-pack.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "util/fs.h"

#define VIEW_DIR    "compat-view"
#define CURRENT_MAX 256

int pw_compat_view_parse_current(const char *data, size_t len, const struct pw_hash_algo *compat,
                                 char *hex, char *gen, struct pw_error *err)
{
	size_t nl = strlen(compat->name), hx = compat->hexsz, g = nl + 1 + hx + 1;

	if (len != g + PW_COMPAT_VIEW_GEN_LEN + 1 || memcmp(data, compat->name, nl) ||
	    data[nl] != ' ' || data[g - 1] != ' ' || memcmp(data + g, "g-", 2) ||
	    data[len - 1] != '\n')
		return pw_error_set(err, PW_ECORRUPT,
		                    "compat-view/current: not '%s <pack> g-<generation>'",
		                    compat->name);
	for (size_t i = 0; i < hx; i++) {
		char ch = data[nl + 1 + i];

		if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f')))
			return pw_error_set(err, PW_ECORRUPT, "compat-view/current: bad pack name");
		hex[i] = ch;
	}
	hex[hx] = 0;
	for (size_t i = 0; i < PW_COMPAT_VIEW_GEN_LEN; i++) {
		char ch = data[g + i];

		if (i >= 2 && !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
		                (ch >= 'A' && ch <= 'Z')))
			return pw_error_set(err, PW_ECORRUPT,
			                    "compat-view/current: bad generation name");
		gen[i] = ch;
	}
	gen[PW_COMPAT_VIEW_GEN_LEN] = 0;
	return 0;
}

/* The generation `current` names: its directory (malloc'd) and pack name. */
static int current_dir(const char *objects_dir, const struct pw_hash_algo *compat, char **dir,
                       char *hex, struct pw_error *err)
{
	struct pw_buf path = PW_BUF_INIT, data = PW_BUF_INIT;
	char gen[PW_COMPAT_VIEW_GEN_LEN + 1];
	int rc;

	*dir = NULL;
	if (pw_buf_addf(&path, "%s/" VIEW_DIR "/current", objects_dir))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	rc = pw_fs_read_file(path.data, &data, CURRENT_MAX, err);
	if (rc == PW_ENOTFOUND)
		pw_error_clear(err);
	else if (!rc)
		rc = pw_compat_view_parse_current(data.data, data.len, compat, hex, gen, err);
	pw_buf_reset(&path);
	if (!rc && pw_buf_addf(&path, "%s/" VIEW_DIR "/%s", objects_dir, gen))
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	if (!rc)
		*dir = pw_buf_detach(&path, NULL);
	pw_buf_free(&path);
	pw_buf_free(&data);
	return rc;
}

int pw_compat_view_open(struct pw_odb **out, const char *objects_dir,
                        const struct pw_hash_algo *compat, struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1], *dir;
	int rc;

	*out = NULL;
	if ((rc = current_dir(objects_dir, compat, &dir, hex, err)))
		return rc;
	rc = pw_odb_open(out, dir, compat, err);
	free(dir);
	return rc;
}

/* ---- writing a generation ------------------------------------------------ */

struct vw {
	struct pw_repo *repo;
	const char *objects_dir;
	const struct pw_hash_algo *storage, *compat;
	struct pw_compat_map *map;
	struct pw_odb *odb;
	struct pw_revlist *rl;
	struct pw_pack_writer *w;
	struct pw_compat_view_opts *opts;
	struct pw_error *err;
	struct pw_oid *tips; /* in compat */
	size_t ntips, alloc_tips;
	char *tmpdir;
	char hex[PW_MAX_HEXSZ + 1];
	int empty;
};

static int nomem(struct vw *v)
{
	return pw_error_set(v->err, PW_ENOMEM, "out of memory");
}

static int add_tip(struct vw *v, const struct pw_oid *oid)
{
	struct pw_oid c;
	char hex[PW_MAX_HEXSZ + 1];
	int rc;

	if (pw_oid_is_zero(oid))
		return 0;
	if ((rc = pw_compat_from_storage(v->map, oid, &c)))
		return rc == PW_ENOTFOUND
		               ? pw_error_set(v->err, rc,
		                              "object %s has no %s id: run 'packwire compat build'",
		                              pw_oid_to_hex(oid, hex), v->compat->name)
		               : pw_error_copy(v->err, pw_compat_map_error(v->map));
	if (pw_revlist_add(v->rl, oid, NULL, 0))
		return pw_error_copy(v->err, pw_revlist_error(v->rl));
	if (v->ntips == v->alloc_tips) {
		size_t n = v->alloc_tips ? 2 * v->alloc_tips : 64;
		struct pw_oid *t = realloc(v->tips, n * sizeof(*t));

		if (!t)
			return nomem(v);
		v->tips = t;
		v->alloc_tips = n;
	}
	v->tips[v->ntips++] = c;
	return 0;
}

static int ref_cb(const struct pw_ref *ref, void *data)
{
	return add_tip(data, &ref->oid);
}

static int add_walked(const struct pw_revlist_obj *o, void *data)
{
	struct vw *v = data;

	if (pw_pack_writer_add(v->w, &o->oid, o->type, o->path,
	                       o->type == PW_OBJ_TAG ? 0 : o->path_len))
		return pw_error_copy(v->err, pw_pack_writer_error(v->w));
	return 0;
}

static int fsync_path(const char *path, int dir, struct pw_error *err)
{
	int fd = open(path, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);

	if (fd < 0 || fsync(fd)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		return pw_error_set(err, PW_EIO, "unable to sync %s: %s", path, strerror(e));
	}
	close(fd);
	return 0;
}

/* The new generation's files and directories, durably. */
static int sync_generation(struct vw *v)
{
	static const char *const exts[] = {"pack", "idx", "bitmap"};
	struct pw_buf p = PW_BUF_INIT;
	int rc = 0;

	for (size_t i = 0; !rc && i < 3; i++) {
		pw_buf_reset(&p);
		if (pw_buf_addf(&p, "%s/pack/pack-%s.%s", v->tmpdir, v->hex, exts[i]))
			rc = nomem(v);
		else
			rc = fsync_path(p.data, 0, v->err);
	}
	pw_buf_reset(&p);
	if (!rc && pw_buf_addf(&p, "%s/pack", v->tmpdir))
		rc = nomem(v);
	if (!rc && !(rc = fsync_path(p.data, 1, v->err)))
		rc = fsync_path(v->tmpdir, 1, v->err);
	pw_buf_free(&p);
	return rc;
}

/* The walk of every ref (and HEAD) into the translating pack writer. */
static int walk_refs(struct vw *v)
{
	struct pw_oid head;
	int rc;

	if ((rc = pw_revlist_new(&v->rl, v->odb, PW_REVLIST_OBJECTS)))
		return nomem(v);
	rc = pw_refs_foreach(v->repo, NULL, 0, ref_cb, v);
	if (!rc && !pw_refs_resolve(v->repo, "HEAD", &head, NULL))
		rc = add_tip(v, &head);
	if (rc) {
		if (!v->err->code)
			pw_error_copy(v->err, pw_repo_error(v->repo));
		return rc;
	}
	if ((rc = pw_revlist_run(v->rl, add_walked, v)) && !v->err->code)
		pw_error_copy(v->err, pw_revlist_error(v->rl));
	return rc;
}

static int write_pack(struct vw *v, struct pw_compat_pack *cp)
{
	struct pw_pack_write_opts po;
	struct pw_pack_translate t;
	struct pw_pack_write_stats st;
	struct pw_odb *vodb = NULL;
	struct pw_buf base = PW_BUF_INIT;
	int rc;

	pw_pack_write_opts_init(&po);
	pw_pack_write_opts_from_config(&po, pw_repo_config(v->repo));
	po.objects_dir = v->objects_dir;
	po.progress = v->opts->progress;
	po.progress_data = v->opts->progress_data;
	if ((rc = pw_pack_writer_new(&v->w, v->odb, &po)))
		return nomem(v);
	pw_compat_pack_translation(cp, &t);
	if ((rc = pw_pack_writer_set_translate(v->w, &t)))
		return pw_error_copy(v->err, pw_pack_writer_error(v->w));
	if ((rc = walk_refs(v)))
		return rc;
	if (!v->ntips) {
		v->empty = 1; /* no refs: nothing to store */
		return PW_ENOTFOUND;
	}
	if (pw_buf_addf(&base, "%s/pack/pack", v->tmpdir))
		return nomem(v);
	rc = pw_pack_writer_write_files(v->w, base.data, 2, v->hex);
	if (!rc) {
		pw_pack_writer_stats(v->w, &st);
		v->opts->objects = st.written;
		v->opts->bytes = st.bytes;
		rc = pw_odb_open(&vodb, v->tmpdir, v->compat, v->err);
	}
	if (!rc && v->ntips)
		rc = pw_pack_writer_write_bitmap_file_odb(v->w, base.data, v->tips, v->ntips, vodb);
	if (rc && !v->err->code)
		pw_error_copy(v->err, pw_pack_writer_error(v->w));
	pw_odb_free(vodb);
	pw_buf_free(&base);
	return rc;
}

/* Remove every generation but `keep` (and leftovers of killed writers, and
 * the temporary files of `current`). */
static void remove_others(const char *view_dir, const char *keep)
{
	DIR *d = opendir(view_dir);
	struct dirent *de;
	struct pw_buf p = PW_BUF_INIT;

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, "current") || (keep && !strcmp(de->d_name, keep)))
			continue;
		pw_buf_reset(&p);
		if (!pw_buf_addf(&p, "%s/%s", view_dir, de->d_name))
			pw_fs_remove_tree(p.data, 0);
	}
	if (d)
		closedir(d);
	pw_buf_free(&p);
}

/* `current` names the new generation, then the others are removed. */
static int publish(struct vw *v, const char *view_dir)
{
	struct pw_buf cur = PW_BUF_INIT, line = PW_BUF_INIT;
	const char *gen = strrchr(v->tmpdir, '/') + 1;
	int rc = 0;

	if (pw_buf_addf(&cur, "%s/current", view_dir) ||
	    pw_buf_addf(&line, "%s %s %s\n", v->compat->name, v->hex, gen)) {
		rc = nomem(v);
		goto out;
	}
	if ((rc = fsync_path(view_dir, 1, v->err)))
		goto out;
	rc = pw_compat_write_durable(cur.data, line.data, line.len, v->opts->before_publish,
	                             v->opts->before_publish_data, v->err);
	if (!rc)
		remove_others(view_dir, gen);
out:
	pw_buf_free(&cur);
	pw_buf_free(&line);
	return rc;
}

int pw_compat_view_write(struct pw_repo *repo, const struct pw_hash_algo *compat,
                         struct pw_compat_view_opts *opts, struct pw_error *err)
{
	struct vw v;
	struct pw_compat_pack *cp = NULL;
	struct pw_compat_lock *own = NULL;
	struct pw_buf view_dir = PW_BUF_INIT, tmp = PW_BUF_INIT;
	int rc;

	memset(&v, 0, sizeof(v));
	v.repo = repo;
	v.objects_dir = pw_repo_objects_dir(repo);
	v.storage = pw_repo_algo(repo);
	v.compat = compat;
	v.opts = opts;
	v.err = err;
	opts->objects = opts->bytes = 0;
	opts->name[0] = 0;
	if (pw_buf_addf(&view_dir, "%s/" VIEW_DIR, v.objects_dir) ||
	    pw_buf_addf(&tmp, "%s/g-XXXXXX", view_dir.data)) {
		rc = nomem(&v);
		goto out;
	}
	if (!opts->lock && (rc = pw_compat_lock(&own, v.objects_dir, err)))
		goto out;
	if ((rc = pw_compat_map_open(&v.map, v.objects_dir, v.storage, compat, err)) ||
	    (rc = pw_odb_open(&v.odb, v.objects_dir, v.storage, err)) ||
	    (rc = pw_compat_pack_new(&cp, v.map, v.objects_dir, err)))
		goto out;
	if ((rc = pw_fs_mkdir_p(view_dir.data, err)))
		goto out;
	if (!mkdtemp(tmp.data)) {
		rc = pw_error_set(err, PW_EIO, "cannot create %s: %s", tmp.data, strerror(errno));
		goto out;
	}
	v.tmpdir = tmp.data;
	(void)chmod(v.tmpdir, 0755); /* mkdtemp's 0700, as the other directories */
	{
		struct pw_buf pd = PW_BUF_INIT;

		rc = pw_buf_addf(&pd, "%s/pack", v.tmpdir) ? nomem(&v)
		                                           : pw_fs_mkdir_p(pd.data, err);
		pw_buf_free(&pd);
	}
	if (!rc && !(rc = write_pack(&v, cp)) && !(rc = sync_generation(&v)))
		rc = publish(&v, view_dir.data);
	if (rc && pw_fs_is_dir(v.tmpdir))
		pw_fs_remove_tree(v.tmpdir, 0);
	if (rc && v.empty)
		rc = 0; /* opts->name stays empty */
	if (!rc && !v.empty)
		memcpy(opts->name, v.hex, sizeof(v.hex));
out:
	pw_revlist_free(v.rl);
	pw_pack_writer_free(v.w);
	pw_compat_pack_free(cp);
	pw_compat_map_free(v.map);
	pw_odb_free(v.odb);
	free(v.tips);
	pw_buf_free(&view_dir);
	pw_buf_free(&tmp);
	pw_compat_unlock(own);
	return rc;
}

int pw_compat_view_exists(const char *objects_dir)
{
	struct pw_buf p = PW_BUF_INIT;
	int yes = 0;

	if (!pw_buf_addf(&p, "%s/" VIEW_DIR "/current", objects_dir))
		yes = pw_fs_exists(p.data);
	pw_buf_free(&p);
	return yes;
}

int pw_compat_view_remove(const char *objects_dir, struct pw_compat_lock *lock,
                          struct pw_error *err)
{
	struct pw_compat_lock *own = NULL;
	struct pw_buf p = PW_BUF_INIT;
	int rc;

	if (pw_buf_addf(&p, "%s/" VIEW_DIR, objects_dir))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (!lock && (rc = pw_compat_lock(&own, objects_dir, err))) {
		pw_buf_free(&p);
		return rc;
	}
	pw_fs_remove_tree(p.data, 0);
	pw_buf_free(&p);
	pw_compat_unlock(own);
	return 0;
}

/* ---- verify ----------------------------------------------------------------- */

struct vcheck {
	struct pw_compat_map *map;
	uint64_t objects, stale;
	struct pw_oid first_stale;
	struct pw_error *err;
};

/* Each object of the view maps to a storage object whose compat id it is. */
static int check_one(const struct pw_oid *oid, void *data)
{
	struct vcheck *c = data;
	struct pw_oid s, back;
	int rc = pw_compat_to_storage(c->map, oid, &s);

	if (!rc)
		rc = pw_compat_from_storage(c->map, &s, &back);
	if (rc && rc != PW_ENOTFOUND)
		return pw_error_copy(c->err, pw_compat_map_error(c->map));
	c->objects++;
	if (rc || !pw_oid_equal(&back, oid)) {
		if (!c->stale++)
			c->first_stale = *oid;
	}
	return 0;
}

int pw_compat_view_verify(const char *objects_dir, struct pw_compat_map *map, uint64_t *objects,
                          char *name, struct pw_error *err)
{
	const struct pw_hash_algo *compat = pw_compat_map_compat_algo(map);
	struct vcheck c = {map, 0, 0, {0}, err};
	struct pw_ipack *ip = NULL;
	struct pw_odb *vodb = NULL;
	struct pw_buf idx = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1], *dir = NULL, *pack_path = NULL;
	int rc;

	*objects = 0;
	if ((rc = current_dir(objects_dir, compat, &dir, hex, err)))
		return rc;
	if (pw_buf_addf(&idx, "%s/pack/pack-%s.idx", dir, hex)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	/* the pack and its .idx: every object hashed, both checksums */
	if ((rc = pw_verify_pack(idx.data, compat, 0, &ip, &pack_path, err))) {
		pw_error_wrap(err, "stored view");
		goto out;
	}
	if ((rc = pw_odb_open(&vodb, dir, compat, err)))
		goto out;
	{
		/* its bitmap loads (checksum, every stored bitmap in bounds) */
		struct pw_bitmap_walk *bw = NULL;

		rc = pw_bitmap_walk_new(&bw, vodb, err);
		pw_bitmap_walk_free(bw);
		if (rc) {
			pw_error_wrap(err, "stored view pack-%s: bitmap", hex);
			goto out;
		}
	}
	if ((rc = pw_odb_foreach(vodb, check_one, &c)))
		goto out;
	if (c.stale) {
		char sh[PW_MAX_HEXSZ + 1];

		rc = pw_error_set(err, PW_ECORRUPT,
		                  "stored view pack-%s: %llu of its %llu objects do not match the "
		                  "map (first %s): stale, run 'packwire compat build'",
		                  hex, (unsigned long long)c.stale, (unsigned long long)c.objects,
		                  pw_oid_to_hex(&c.first_stale, sh));
		goto out;
	}
	*objects = c.objects;
	if (name)
		memcpy(name, hex, compat->hexsz + 1);
out:
	pw_ipack_free(ip);
	free(pack_path);
	pw_odb_free(vodb);
	pw_buf_free(&idx);
	free(dir);
	return rc;
}
