/* packwire compat build: translate every object of a repository into the
 * compat algorithm and write the maps. Objects are translated after
 * everything they reference (an explicit stack, never recursion), so each
 * look-up of a reference finds its compat id. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat/map-priv.h"
#include "odb/idx.h"
#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "util/fs.h"

struct builder {
	const char *objects_dir;
	const struct pw_hash_algo *storage, *compat;
	struct pw_odb *odb;
	struct pw_compat_map *old;
	struct pw_compat_xlate *x;
	struct pw_oid *all;
	size_t nr_all, alloc_all;
	struct pw_compat_build_opts *opts;
	struct pw_error *err;
};

static int old_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	int rc = pw_compat_from_storage(data, from, out);

	/* a damaged side file maps nothing: translate again */
	return rc == PW_ENOMEM ? rc : rc ? PW_ENOTFOUND : 0;
}

static int collect_cb(const struct pw_oid *oid, void *data)
{
	struct builder *b = data;

	if (b->nr_all == b->alloc_all) {
		size_t n = b->alloc_all ? b->alloc_all * 2 : 1024;
		struct pw_oid *na = realloc(b->all, n * sizeof(*na));

		if (!na)
			return PW_ENOMEM;
		b->all = na;
		b->alloc_all = n;
	}
	b->all[b->nr_all++] = *oid;
	return 0;
}

static int xlate_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return pw_compat_xlate_lookup(data, from, out);
}

/* Side files whose pack is gone (git repack -d removes only the files it
 * knows) are removed. */
static void remove_orphans(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct pw_buf p = PW_BUF_INIT;

		if (n < 12 || strncmp(de->d_name, "pack-", 5) ||
		    strcmp(de->d_name + n - 7, ".compat"))
			continue;
		if (!pw_buf_addf(&p, "%s/%.*s.idx", dir, (int)(n - 7), de->d_name) &&
		    !pw_fs_exists(p.data) && !pw_buf_setlen(&p, 0) &&
		    !pw_buf_addf(&p, "%s/%s", dir, de->d_name))
			unlink(p.data);
		pw_buf_free(&p);
	}
	if (d)
		closedir(d);
}

/* One side file per pack of our own objects directory. */
static int write_pack_maps(struct builder *b)
{
	char *dir = pw_path_join(b->objects_dir, "pack");
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (!dir)
		return pw_error_set(b->err, PW_ENOMEM, "out of memory");
	if (!(d = opendir(dir))) {
		free(dir);
		return 0;
	}
	while (!rc && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char *idx_path, *map_path;
		struct pw_idx *idx = NULL;
		uint64_t bytes = 0;

		if (n < 10 || strncmp(de->d_name, "pack-", 5) || strcmp(de->d_name + n - 4, ".idx"))
			continue;
		idx_path = pw_path_join(dir, de->d_name);
		map_path = idx_path ? malloc(strlen(idx_path) + 4) : NULL;
		if (!map_path) {
			free(idx_path);
			rc = pw_error_set(b->err, PW_ENOMEM, "out of memory");
			break;
		}
		memcpy(map_path, idx_path, strlen(idx_path) - 3);
		memcpy(map_path + strlen(idx_path) - 3, "compat", 7);
		if ((rc = pw_idx_open(&idx, idx_path, b->storage, b->err))) {
			free(idx_path);
			free(map_path);
			break;
		}
		{
			/* a valid map is kept as it is */
			struct pw_buf cur = PW_BUF_INIT;
			struct pw_error e2;

			if (!pw_fs_read_file(map_path, &cur, 0, &e2) &&
			    !pw_compat_pack_map_check((const uint8_t *)cur.data, cur.len,
			                              b->storage, idx->nr, idx->pack_checksum, 1,
			                              &e2)) {
				pw_buf_free(&cur);
				pw_idx_free(idx);
				free(idx_path);
				free(map_path);
				continue;
			}
			pw_buf_free(&cur);
		}
		pw_idx_free(idx);
		idx = NULL;
		rc = pw_compat__pack_map_write(idx_path, b->storage, xlate_lookup, b->x,
		                               b->opts->before_publish,
		                               b->opts->before_publish_data, &bytes, b->err);
		if (!rc) {
			b->opts->packs_written++;
			b->opts->bytes += bytes;
			if (b->opts->progress)
				rc = b->opts->progress(b->opts->progress_data, "wrote",
				                       b->opts->packs_written, 0);
		}
		pw_idx_free(idx);
		free(idx_path);
		free(map_path);
	}
	closedir(d);
	if (!rc)
		remove_orphans(dir);
	free(dir);
	return rc;
}

static int has_pair(void *data, const struct pw_oid *storage)
{
	return pw_compat_pairs_by_storage(data, storage) != NULL;
}

/* loose-object-idx: the lines already there, then one per loose object of
 * our own directory that has none; rewritten under the lock, renamed. */
static int write_loose_idx(struct builder *b)
{
	struct pw_compat_pairs have = {0};
	struct pw_buf raw = PW_BUF_INIT, add = PW_BUF_INIT;
	char *path = pw_compat_loose_idx_path(b->objects_dir);
	size_t hexsz = b->storage->hexsz;
	int rc;

	if (!path)
		return pw_error_set(b->err, PW_ENOMEM, "out of memory");
	rc = pw_compat_loose_idx_load(&have, b->objects_dir, b->storage, b->compat, &raw, b->err);
	for (int i = 0; !rc && i < 256; i++) {
		char sub[16], hex[PW_MAX_HEXSZ + 1], ch[PW_MAX_HEXSZ + 1];
		char *dpath;
		DIR *d;
		struct dirent *de;

		snprintf(sub, sizeof(sub), "%02x", i);
		if (!(dpath = pw_path_join(b->objects_dir, sub))) {
			rc = pw_error_set(b->err, PW_ENOMEM, "out of memory");
			break;
		}
		d = opendir(dpath);
		free(dpath);
		if (!d)
			continue;
		while (!rc && (de = readdir(d))) {
			struct pw_oid s, c;

			if (strlen(de->d_name) != hexsz - 2)
				continue;
			memcpy(hex, sub, 2);
			memcpy(hex + 2, de->d_name, hexsz - 2);
			hex[hexsz] = '\0';
			if (pw_oid_from_hex(&s, hex, hexsz, b->storage))
				continue;
			if (pw_compat_pairs_by_storage(&have, &s))
				continue;
			if (pw_compat_xlate_lookup(b->x, &s, &c)) {
				rc = pw_error_set(b->err, PW_ENOTFOUND,
				                  "loose object %s was not translated", hex);
				break;
			}
			if (pw_buf_addf(&add, "%s %s\n", hex, pw_oid_to_hex(&c, ch)) ||
			    pw_compat_pairs_add(&have, &s, &c))
				rc = pw_error_set(b->err, PW_ENOMEM, "out of memory");
			else
				b->opts->loose_written++;
		}
		closedir(d);
	}
	/* the submodule commits' pairs, for the view and later updates */
	if (!rc && pw_compat__links_lines(b->x, b->storage, has_pair, &have, &add))
		rc = pw_error_set(b->err, PW_ENOMEM, "out of memory");
	if (!rc && add.len) {
		uint64_t bytes = 0;

		rc = pw_compat__loose_idx_publish(b->objects_dir, &add, b->opts->before_publish,
		                                  b->opts->before_publish_data, &bytes, b->err);
		b->opts->bytes += bytes;
	}
	pw_compat_pairs_free(&have);
	pw_buf_free(&raw);
	pw_buf_free(&add);
	free(path);
	return rc;
}

int pw_compat__loose_idx_publish(const char *objects_dir, const struct pw_buf *add,
                                 void (*before)(void *, const char *, const char *),
                                 void *before_data, uint64_t *bytes, struct pw_error *err)
{
	struct pw_buf raw = PW_BUF_INIT, lockp = PW_BUF_INIT;
	char *path = pw_compat_loose_idx_path(objects_dir);
	int rc = 0, fd = -1;

	if (!path || pw_buf_addf(&lockp, "%s.lock", path)) {
		free(path);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	fd = open(lockp.data, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
	if (fd < 0) {
		rc = pw_error_set(err, errno == EEXIST ? PW_ELOCKED : PW_EIO,
		                  "unable to create '%s': %s", lockp.data, strerror(errno));
		pw_buf_reset(&lockp); /* not ours: never removed */
		goto out;
	}
	/* re-read under the lock: a line appended meanwhile is kept */
	{
		struct pw_error e2;
		int r2 = pw_fs_read_file(path, &raw, PW_COMPAT_LOOSE_IDX_MAX, &e2);

		if (r2 == PW_ENOTFOUND || (!r2 && !raw.len)) {
			pw_buf_reset(&raw);
			r2 = pw_buf_adds(&raw, PW_LOOSE_IDX_HEADER);
		}
		if (!r2 && raw.len && raw.data[raw.len - 1] != '\n')
			r2 = pw_buf_addch(&raw, '\n');
		if (r2) {
			rc = pw_error_set(err, r2, "%s: cannot read", path);
			goto out;
		}
	}
	if (pw_fs_write_all(fd, raw.data, raw.len) || pw_fs_write_all(fd, add->data, add->len) ||
	    fsync(fd)) {
		rc = pw_error_set(err, PW_EIO, "unable to write %s: %s", lockp.data,
		                  strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (before)
		before(before_data, lockp.data, path);
	if (rename(lockp.data, path)) {
		rc = pw_error_set(err, PW_EIO, "unable to rename %s: %s", lockp.data,
		                  strerror(errno));
		goto out;
	}
	pw_buf_reset(&lockp); /* renamed: nothing to remove */
	{
		/* the rename is durable once the directory is synced */
		int dfd = open(objects_dir, O_RDONLY | O_DIRECTORY);

		if (dfd >= 0) {
			(void)fsync(dfd);
			close(dfd);
		}
	}
	if (bytes)
		*bytes = raw.len + add->len;
out:
	if (fd >= 0)
		close(fd);
	if (lockp.len)
		unlink(lockp.data);
	pw_buf_free(&raw);
	pw_buf_free(&lockp);
	free(path);
	return rc;
}

/* Open the odb and the old map, and translate every object (b->x). */
static int translate_all(struct builder *b)
{
	struct pw_compat_xlate_opts xo = {0};
	struct pw_compat_build_opts *opts = b->opts;
	int rc;

	if ((rc = pw_compat_map_open(&b->old, b->objects_dir, b->storage, b->compat, b->err)))
		return rc;
	if ((rc = pw_odb_open(&b->odb, b->objects_dir, b->storage, b->err)))
		return rc;
	rc = pw_odb_foreach(b->odb, collect_cb, b);
	if (rc) {
		if (rc == PW_ENOMEM)
			return pw_error_set(b->err, rc, "out of memory");
		return pw_error_copy(b->err, pw_odb_error(b->odb));
	}
	xo.from = b->storage;
	xo.to = b->compat;
	xo.odb = b->odb;
	xo.known = old_lookup;
	xo.known_data = b->old;
	if (opts->submodules) {
		xo.gitlink = pw_compat_submodules_gitlink;
		xo.gitlink_data = opts->submodules;
	}
	/* a stack deeper than the number of objects means a cycle */
	xo.max_depth = 2 * b->nr_all + 64;
	if ((rc = pw_compat_xlate_new(&b->x, &xo)) ||
	    (rc = pw_compat_xlate_reserve(b->x, b->nr_all)))
		return pw_error_set(b->err, rc,
		                    rc == PW_ENOMEM ? "out of memory"
		                                    : "compat build: bad algorithms");
	/* then the loose commits and tags (what is left unknown): a tree is
	 * reached from its commit, so a gitlink's path is whole and its
	 * .gitmodules URL can be followed */
	if ((rc = pw_compat__xlate_blobs_first(b->x, b->err)) ||
	    (rc = pw_compat__xlate_packed_commits_first(b->x, b->err)) ||
	    (rc = pw_compat__xlate_commits_first(b->x, b->all, b->nr_all, b->err)))
		return rc;
	for (size_t i = 0; i < b->nr_all; i++) {
		if ((rc = pw_compat_xlate_object(b->x, &b->all[i], b->err)))
			return rc;
		if (opts->progress && ((i + 1) % 1024 == 0 || i + 1 == b->nr_all) &&
		    (rc = opts->progress(opts->progress_data, "translated", i + 1, b->nr_all)))
			return rc;
	}
	opts->translated = pw_compat_xlate_count(b->x);
	opts->objects = pw_compat_xlate_known_count(b->x);
	opts->gitlinks = pw_compat__xlate_links(b->x)->nr;
	return 0;
}

static void builder_init(struct builder *b, const char *objects_dir,
                         const struct pw_hash_algo *storage, const struct pw_hash_algo *compat,
                         struct pw_compat_build_opts *opts, struct pw_error *err)
{
	memset(b, 0, sizeof(*b));
	opts->objects = opts->translated = opts->packs_written = opts->loose_written = 0;
	opts->bytes = 0;
	opts->gitlinks = 0;
	b->objects_dir = objects_dir;
	b->storage = storage;
	b->compat = compat;
	b->opts = opts;
	b->err = err;
}

static void builder_free(struct builder *b)
{
	free(b->all);
	pw_compat_xlate_free(b->x);
	pw_odb_free(b->odb);
	pw_compat_map_free(b->old);
}

/* The pairs of loose-object-idx that are no object of the repository:
 * the submodule commits of its gitlinks, recorded when they were mapped (a
 * tree the map knew was not translated again, so its gitlinks were not
 * met). */
static int add_old_links(struct pw_compat_pairs *out, const char *objects_dir,
                         const struct pw_hash_algo *storage, const struct pw_hash_algo *compat,
                         struct pw_error *err)
{
	struct pw_compat_pairs old = {0};
	int rc = pw_compat_loose_idx_load(&old, objects_dir, storage, compat, NULL, err);

	for (size_t i = 0; i < old.nr && !rc; i++)
		if (!pw_compat_pairs_by_storage(out, &old.pairs[i].storage) &&
		    pw_compat_pairs_add(out, &old.pairs[i].storage, &old.pairs[i].compat))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	pw_compat_pairs_free(&old);
	return rc;
}

int pw_compat__translate_objects(struct pw_compat_pairs *out, const char *objects_dir,
                                 const struct pw_hash_algo *storage,
                                 const struct pw_hash_algo *compat,
                                 struct pw_compat_build_opts *opts, struct pw_error *err)
{
	struct pw_compat_build_opts dflt = {0};
	struct builder b;
	int rc;

	builder_init(&b, objects_dir, storage, compat, opts ? opts : &dflt, err);
	if (!(rc = translate_all(&b))) {
		const struct pw_compat_pairs *links = pw_compat__xlate_links(b.x);
		size_t nobj;

		pw_compat__xlate_take_pairs(b.x, out);
		nobj = out->nr;
		/* the gitlinks' pairs last (opts->gitlinks of them) */
		for (size_t i = 0; i < links->nr && !rc; i++)
			if (pw_compat_pairs_add(out, &links->pairs[i].storage,
			                        &links->pairs[i].compat))
				rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		if (!rc)
			rc = add_old_links(out, objects_dir, storage, compat, err);
		b.opts->gitlinks = out->nr - nobj;
	}
	builder_free(&b);
	return rc;
}

int pw_compat_build(const char *objects_dir, const struct pw_hash_algo *storage,
                    const struct pw_hash_algo *compat, struct pw_compat_build_opts *opts,
                    struct pw_error *err)
{
	struct pw_compat_build_opts dflt = {0};
	struct pw_compat_lock *own = NULL;
	struct builder b;
	int rc;

	if (!opts)
		opts = &dflt;
	if (!opts->lock && (rc = pw_compat_lock(&own, objects_dir, err)))
		return rc;
	builder_init(&b, objects_dir, storage, compat, opts, err);
	if (!(rc = translate_all(&b)) && !(rc = write_pack_maps(&b)))
		rc = write_loose_idx(&b);
	builder_free(&b);
	pw_compat_unlock(own);
	return rc;
}
