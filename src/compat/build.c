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

struct frame {
	struct pw_oid oid;
	int expanded;
};

struct builder {
	const char *objects_dir;
	const struct pw_hash_algo *storage, *compat;
	struct pw_odb *odb;
	struct pw_compat_map *old;
	struct pw_compat_pairs done;
	struct pw_oid *all;
	size_t nr_all, alloc_all;
	struct frame *stack;
	size_t sp, alloc_stack;
	struct pw_oid *deps;
	size_t nr_deps, alloc_deps;
	struct pw_compat_build_opts *opts;
	struct pw_error *err;
};

static int known(struct builder *b, const struct pw_oid *s, struct pw_oid *c)
{
	const struct pw_compat_pair *p = pw_compat_pairs_by_storage(&b->done, s);
	struct pw_oid tmp;
	int rc;

	if (p) {
		if (c)
			*c = p->compat;
		return 1;
	}
	if (!b->old)
		return 0;
	rc = pw_compat_from_storage(b->old, s, &tmp);
	if (rc)
		return 0;
	if (pw_compat_pairs_add(&b->done, s, &tmp))
		return PW_ENOMEM;
	if (c)
		*c = tmp;
	return 1;
}

static int lookup_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	int k = known(data, from, out);

	return k == 1 ? 0 : k < 0 ? k : PW_ENOTFOUND;
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

static int dep_cb(void *data, const struct pw_oid *oid)
{
	struct builder *b = data;
	int k = known(b, oid, NULL);

	if (k < 0)
		return k;
	if (k)
		return 0;
	if (b->nr_deps == b->alloc_deps) {
		size_t n = b->alloc_deps ? b->alloc_deps * 2 : 64;
		struct pw_oid *nd = realloc(b->deps, n * sizeof(*nd));

		if (!nd)
			return PW_ENOMEM;
		b->deps = nd;
		b->alloc_deps = n;
	}
	b->deps[b->nr_deps++] = *oid;
	return 0;
}

static int push(struct builder *b, const struct pw_oid *oid)
{
	if (b->sp == b->alloc_stack) {
		size_t n = b->alloc_stack ? b->alloc_stack * 2 : 256;
		struct frame *ns = realloc(b->stack, n * sizeof(*ns));

		if (!ns)
			return PW_ENOMEM;
		b->stack = ns;
		b->alloc_stack = n;
	}
	b->stack[b->sp].oid = *oid;
	b->stack[b->sp].expanded = 0;
	b->sp++;
	return 0;
}

static int record(struct builder *b, const struct pw_oid *s, int type, const void *data, size_t len)
{
	struct pw_oid c;

	pw_object_hash(b->compat, type, data, len, &c);
	if (pw_compat_pairs_add(&b->done, s, &c))
		return pw_error_set(b->err, PW_ENOMEM, "out of memory");
	b->opts->translated++;
	return 0;
}

/* Translate root and whatever it needs that has no compat id yet. */
static int translate_from(struct builder *b, const struct pw_oid *root, struct pw_buf *content,
                          struct pw_buf *conv)
{
	char hex[PW_MAX_HEXSZ + 1], hex2[PW_MAX_HEXSZ + 1];
	int rc;

	b->sp = 0;
	if ((rc = push(b, root)))
		return pw_error_set(b->err, rc, "out of memory");
	while (b->sp) {
		struct frame *f = &b->stack[b->sp - 1];
		struct pw_oid oid = f->oid;
		int type, k = known(b, &oid, NULL);

		if (k < 0)
			return pw_error_set(b->err, k, "out of memory");
		if (k) {
			b->sp--;
			continue;
		}
		rc = pw_odb_read(b->odb, &oid, &type, content);
		if (rc) {
			pw_oid_to_hex(&oid, hex);
			if (rc == PW_ENOTFOUND && b->sp > 1)
				return pw_error_set(b->err, rc,
				                    "object %s (referenced by %s) is missing", hex,
				                    pw_oid_to_hex(&b->stack[b->sp - 2].oid, hex2));
			pw_error_copy(b->err, pw_odb_error(b->odb));
			return pw_error_wrap(b->err, "reading %s", hex);
		}
		if (type == PW_OBJ_BLOB) {
			if ((rc = record(b, &oid, type, content->data, content->len)))
				return rc;
			b->sp--;
			continue;
		}
		if (!f->expanded) {
			f->expanded = 1;
			b->nr_deps = 0;
			rc = pw_compat_references(type, content->data, content->len, b->storage,
			                          dep_cb, b, b->err);
			if (rc) {
				if (rc == PW_ENOMEM)
					return pw_error_set(b->err, rc, "out of memory");
				return pw_error_wrap(b->err, "%s", pw_oid_to_hex(&oid, hex));
			}
			if (b->nr_deps) {
				/* a stack deeper than the number of objects means a cycle */
				if (b->sp + b->nr_deps > 2 * b->nr_all + 64)
					return pw_error_set(b->err, PW_ECORRUPT,
					                    "object %s: references form a cycle",
					                    pw_oid_to_hex(&oid, hex));
				for (size_t i = b->nr_deps; i-- > 0;)
					if ((rc = push(b, &b->deps[i])))
						return pw_error_set(b->err, rc, "out of memory");
				continue;
			}
		}
		pw_buf_reset(conv);
		rc = pw_compat_convert(conv, type, content->data, content->len, b->storage,
		                       b->compat, lookup_cb, b, b->err);
		if (rc)
			return pw_error_wrap(b->err, "%s %s", pw_object_type_name(type),
			                     pw_oid_to_hex(&oid, hex));
		if ((rc = record(b, &oid, type, conv->data, conv->len)))
			return rc;
		b->sp--;
	}
	return 0;
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
	struct pw_buf file = PW_BUF_INIT;
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
		uint8_t *ids;

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
		ids = malloc((size_t)idx->nr * b->compat->rawsz + 1);
		if (!ids)
			rc = pw_error_set(b->err, PW_ENOMEM, "out of memory");
		for (uint32_t i = 0; !rc && i < idx->nr; i++) {
			struct pw_oid s;
			const struct pw_compat_pair *p;
			char hex[PW_MAX_HEXSZ + 1];

			pw_idx_nth_oid(idx, i, &s);
			if (!(p = pw_compat_pairs_by_storage(&b->done, &s)))
				rc = pw_error_set(b->err, PW_ENOTFOUND,
				                  "%s: object %s was not translated", idx_path,
				                  pw_oid_to_hex(&s, hex));
			else
				memcpy(ids + (size_t)i * b->compat->rawsz, p->compat.id,
				       b->compat->rawsz);
		}
		pw_buf_reset(&file);
		if (!rc)
			rc = pw_compat_pack_map_encode(&file, b->storage, idx->pack_checksum, ids,
			                               idx->nr, b->err);
		if (!rc)
			rc = pw_compat_write_durable(map_path, file.data, file.len,
			                             b->opts->before_publish,
			                             b->opts->before_publish_data, b->err);
		if (!rc) {
			b->opts->packs_written++;
			b->opts->bytes += file.len;
			if (b->opts->progress)
				rc = b->opts->progress(b->opts->progress_data, "wrote",
				                       b->opts->packs_written, 0);
		}
		free(ids);
		pw_idx_free(idx);
		free(idx_path);
		free(map_path);
	}
	closedir(d);
	if (!rc)
		remove_orphans(dir);
	free(dir);
	pw_buf_free(&file);
	return rc;
}

/* loose-object-idx: the lines already there, then one per loose object of
 * our own directory that has none; rewritten under the lock, renamed. */
static int write_loose_idx(struct builder *b)
{
	struct pw_compat_pairs have = {0};
	struct pw_buf raw = PW_BUF_INIT, add = PW_BUF_INIT, lockp = PW_BUF_INIT;
	char *path = pw_compat_loose_idx_path(b->objects_dir);
	size_t hexsz = b->storage->hexsz;
	int rc, fd = -1;

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
			const struct pw_compat_pair *p;
			struct pw_oid s;

			if (strlen(de->d_name) != hexsz - 2)
				continue;
			memcpy(hex, sub, 2);
			memcpy(hex + 2, de->d_name, hexsz - 2);
			hex[hexsz] = '\0';
			if (pw_oid_from_hex(&s, hex, hexsz, b->storage))
				continue;
			if (pw_compat_pairs_by_storage(&have, &s))
				continue;
			if (!(p = pw_compat_pairs_by_storage(&b->done, &s))) {
				rc = pw_error_set(b->err, PW_ENOTFOUND,
				                  "loose object %s was not translated", hex);
				break;
			}
			if (pw_buf_addf(&add, "%s %s\n", hex, pw_oid_to_hex(&p->compat, ch)) ||
			    pw_compat_pairs_add(&have, &s, &p->compat))
				rc = pw_error_set(b->err, PW_ENOMEM, "out of memory");
			else
				b->opts->loose_written++;
		}
		closedir(d);
	}
	if (rc || !add.len)
		goto out;
	if (pw_buf_addf(&lockp, "%s.lock", path)) {
		rc = pw_error_set(b->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	fd = open(lockp.data, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
	if (fd < 0) {
		rc = pw_error_set(b->err, errno == EEXIST ? PW_ELOCKED : PW_EIO,
		                  "unable to create '%s': %s", lockp.data, strerror(errno));
		goto out;
	}
	/* re-read under the lock: a line appended meanwhile is kept */
	pw_buf_reset(&raw);
	{
		struct pw_error e2;
		int r2 = pw_fs_read_file(path, &raw, PW_COMPAT_LOOSE_IDX_MAX, &e2);

		if (r2 == PW_ENOTFOUND || (!r2 && !raw.len))
			r2 = pw_buf_adds(&raw, PW_LOOSE_IDX_HEADER);
		if (!r2 && raw.len && raw.data[raw.len - 1] != '\n')
			r2 = pw_buf_addch(&raw, '\n');
		if (r2) {
			rc = pw_error_set(b->err, r2, "%s: cannot read", path);
			goto out;
		}
	}
	if (pw_fs_write_all(fd, raw.data, raw.len) || pw_fs_write_all(fd, add.data, add.len) ||
	    fsync(fd)) {
		rc = pw_error_set(b->err, PW_EIO, "unable to write %s: %s", lockp.data,
		                  strerror(errno));
		goto out;
	}
	close(fd);
	fd = -1;
	if (b->opts->before_publish)
		b->opts->before_publish(b->opts->before_publish_data, lockp.data, path);
	if (rename(lockp.data, path)) {
		rc = pw_error_set(b->err, PW_EIO, "unable to rename %s: %s", lockp.data,
		                  strerror(errno));
		goto out;
	}
	b->opts->bytes += raw.len + add.len;
out:
	if (fd >= 0)
		close(fd);
	if (rc && lockp.len && fd != -2)
		unlink(lockp.data);
	pw_compat_pairs_free(&have);
	pw_buf_free(&raw);
	pw_buf_free(&add);
	pw_buf_free(&lockp);
	free(path);
	return rc;
}

/* Open the odb and the old map, and translate every object into b->done. */
static int translate_all(struct builder *b)
{
	struct pw_buf content = PW_BUF_INIT, conv = PW_BUF_INIT;
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
	if (pw_oidmap_reserve(&b->done.by_storage, b->nr_all) ||
	    pw_oidmap_reserve(&b->done.by_compat, b->nr_all))
		return pw_error_set(b->err, PW_ENOMEM, "out of memory");
	for (size_t i = 0; i < b->nr_all; i++) {
		if ((rc = translate_from(b, &b->all[i], &content, &conv)))
			break;
		if (opts->progress && ((i + 1) % 1024 == 0 || i + 1 == b->nr_all) &&
		    (rc = opts->progress(opts->progress_data, "translated", i + 1, b->nr_all)))
			break;
	}
	pw_buf_free(&content);
	pw_buf_free(&conv);
	opts->objects = b->done.nr;
	return rc;
}

static void builder_free(struct builder *b)
{
	free(b->all);
	free(b->stack);
	free(b->deps);
	pw_compat_pairs_free(&b->done);
	pw_odb_free(b->odb);
	pw_compat_map_free(b->old);
}

static void builder_init(struct builder *b, const char *objects_dir,
                         const struct pw_hash_algo *storage, const struct pw_hash_algo *compat,
                         struct pw_compat_build_opts *opts, struct pw_error *err)
{
	memset(b, 0, sizeof(*b));
	opts->objects = opts->translated = opts->packs_written = opts->loose_written = 0;
	opts->bytes = 0;
	b->objects_dir = objects_dir;
	b->storage = storage;
	b->compat = compat;
	b->opts = opts;
	b->err = err;
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
	rc = translate_all(&b);
	if (!rc) {
		*out = b.done;
		memset(&b.done, 0, sizeof(b.done));
	}
	builder_free(&b);
	return rc;
}

int pw_compat_build(const char *objects_dir, const struct pw_hash_algo *storage,
                    const struct pw_hash_algo *compat, struct pw_compat_build_opts *opts,
                    struct pw_error *err)
{
	struct pw_compat_build_opts dflt = {0};
	struct builder b;
	int rc;

	builder_init(&b, objects_dir, storage, compat, opts ? opts : &dflt, err);
	if (!(rc = translate_all(&b)) && !(rc = write_pack_maps(&b)))
		rc = write_loose_idx(&b);
	builder_free(&b);
	return rc;
}
