/* The persistent map between the storage and compat ids of a repository's
 * objects: objects/loose-object-idx (Git's format) for loose objects and one
 * pack-<hash>.compat side file per pack (docs/compat-map.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat/map-priv.h"
#include "odb/idx.h"
#include "packwire/fs.h"
#include "util/fs.h"

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static const struct pw_hash_algo *other_algo(const struct pw_hash_algo *a)
{
	return a->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
}

/* ---- pack side files ------------------------------------------------ */

uint64_t pw_compat_pack_map_size(const struct pw_hash_algo *storage, uint64_t nr)
{
	const struct pw_hash_algo *compat = other_algo(storage);

	return PW_COMPAT_HDR_FIXED + storage->rawsz + nr * compat->rawsz + 256 * 4 + nr * 4 +
	       storage->rawsz;
}

int pw_compat_pack_map_check(const uint8_t *data, size_t len, const struct pw_hash_algo *storage,
                             uint32_t nr, const uint8_t *pack_checksum, int full,
                             struct pw_error *err)
{
	const struct pw_hash_algo *compat;
	const uint8_t *ids, *fanout, *sorted;
	uint32_t prev = 0, count;

	if (!storage)
		return pw_error_set(err, PW_EINVAL, "compat map: no storage algorithm");
	compat = other_algo(storage);
	if (len < PW_COMPAT_HDR_FIXED || memcmp(data, PW_COMPAT_MAGIC, 4))
		return pw_error_set(err, PW_ECORRUPT, "compat map: bad signature");
	if (get_be32(data + 4) != PW_COMPAT_VERSION)
		return pw_error_set(err, PW_EUNSUPPORTED, "compat map: unsupported version %u",
		                    (unsigned)get_be32(data + 4));
	if (get_be32(data + 8) != storage->format_id || get_be32(data + 12) != compat->format_id)
		return pw_error_set(err, PW_EMISMATCH, "compat map: not a %s->%s map",
		                    storage->name, compat->name);
	count = get_be32(data + 16);
	if (count != nr)
		return pw_error_set(err, PW_EMISMATCH,
		                    "compat map: %u objects, but the pack has %u (stale map?)",
		                    (unsigned)count, (unsigned)nr);
	if ((uint64_t)len != pw_compat_pack_map_size(storage, nr))
		return pw_error_set(err, PW_ECORRUPT, "compat map: size %zu, expected %llu", len,
		                    (unsigned long long)pw_compat_pack_map_size(storage, nr));
	if (pack_checksum && memcmp(data + PW_COMPAT_HDR_FIXED, pack_checksum, storage->rawsz))
		return pw_error_set(err, PW_EMISMATCH, "compat map: made for another pack");
	ids = data + PW_COMPAT_HDR_FIXED + storage->rawsz;
	fanout = ids + (size_t)nr * compat->rawsz;
	sorted = fanout + 256 * 4;
	for (int i = 0; i < 256; i++) {
		uint32_t v = get_be32(fanout + 4 * i);

		if (v < prev || v > nr)
			return pw_error_set(err, PW_ECORRUPT, "compat map: bad fan-out table");
		prev = v;
	}
	if (prev != nr)
		return pw_error_set(err, PW_ECORRUPT, "compat map: bad fan-out table");
	if (!full)
		return 0;
	for (uint32_t k = 0; k < nr; k++) {
		uint32_t pos = get_be32(sorted + 4 * (size_t)k);
		const uint8_t *id;

		if (pos >= nr)
			return pw_error_set(err, PW_ECORRUPT,
			                    "compat map: position %u out of range", (unsigned)pos);
		id = ids + (size_t)pos * compat->rawsz;
		if (k &&
		    memcmp(ids + (size_t)get_be32(sorted + 4 * (size_t)(k - 1)) * compat->rawsz, id,
		           compat->rawsz) >= 0)
			return pw_error_set(err, PW_ECORRUPT, "compat map: table not sorted at %u",
			                    (unsigned)k);
		if (k >= get_be32(fanout + 4 * (size_t)id[0]) ||
		    (id[0] && k < get_be32(fanout + 4 * (size_t)(id[0] - 1))))
			return pw_error_set(err, PW_ECORRUPT, "compat map: fan-out disagrees at %u",
			                    (unsigned)k);
	}
	{
		struct pw_hash_ctx h;
		uint8_t sum[PW_MAX_RAWSZ];
		size_t body = len - storage->rawsz;

		pw_hash_init_checksum(&h, storage); /* the trailer: not an object id */
		pw_hash_update(&h, data, body);
		pw_hash_final_checksum(&h, sum);
		if (memcmp(sum, data + body, storage->rawsz))
			return pw_error_set(err, PW_ECORRUPT,
			                    "compat map: trailer checksum mismatch");
	}
	return 0;
}

/* Sort by merge sort (stable, no global state: qsort's comparator cannot
 * take a context portably and the library must be thread-safe). */
static void sort_positions(uint32_t *pos, uint32_t *tmp, uint32_t n, const uint8_t *ids,
                           size_t rawsz)
{
	for (uint32_t w = 1; w < n; w *= 2) {
		for (uint32_t lo = 0; lo < n; lo += 2 * w) {
			uint32_t mid = lo + w < n ? lo + w : n,
			         hi = lo + 2 * w < n ? lo + 2 * w : n;
			uint32_t i = lo, j = mid, k = lo;

			while (i < mid && j < hi)
				tmp[k++] = memcmp(ids + (size_t)pos[j] * rawsz,
				                  ids + (size_t)pos[i] * rawsz, rawsz) < 0
				                   ? pos[j++]
				                   : pos[i++];
			while (i < mid)
				tmp[k++] = pos[i++];
			while (j < hi)
				tmp[k++] = pos[j++];
		}
		memcpy(pos, tmp, (size_t)n * sizeof(*pos));
	}
}

int pw_compat_pack_map_encode(struct pw_buf *out, const struct pw_hash_algo *storage,
                              const uint8_t *pack_checksum, const uint8_t *ids, uint32_t nr,
                              struct pw_error *err)
{
	const struct pw_hash_algo *compat = other_algo(storage);
	uint32_t *pos = NULL, *tmp = NULL, fan[256] = {0};
	uint8_t hdr[PW_COMPAT_HDR_FIXED], b4[4], sum[PW_MAX_RAWSZ];
	struct pw_hash_ctx h;
	int rc = 0;

	pos = malloc(((size_t)nr + 1) * sizeof(*pos));
	tmp = malloc(((size_t)nr + 1) * sizeof(*tmp));
	if (!pos || !tmp || pw_buf_grow(out, (size_t)pw_compat_pack_map_size(storage, nr))) {
		free(pos);
		free(tmp);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < nr; i++) {
		pos[i] = i;
		fan[ids[(size_t)i * compat->rawsz]]++;
	}
	sort_positions(pos, tmp, nr, ids, compat->rawsz);
	memcpy(hdr, PW_COMPAT_MAGIC, 4);
	put_be32(hdr + 4, PW_COMPAT_VERSION);
	put_be32(hdr + 8, storage->format_id);
	put_be32(hdr + 12, compat->format_id);
	put_be32(hdr + 16, nr);
	rc = pw_buf_add(out, hdr, sizeof(hdr));
	rc = rc ? rc : pw_buf_add(out, pack_checksum, storage->rawsz);
	rc = rc ? rc : pw_buf_add(out, ids, (size_t)nr * compat->rawsz);
	for (uint32_t i = 0, acc = 0; i < 256 && !rc; i++) {
		acc += fan[i];
		put_be32(b4, acc);
		rc = pw_buf_add(out, b4, 4);
	}
	for (uint32_t k = 0; k < nr && !rc; k++) {
		put_be32(b4, pos[k]);
		rc = pw_buf_add(out, b4, 4);
	}
	free(pos);
	free(tmp);
	if (rc)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	pw_hash_init_checksum(&h, storage); /* the trailer: not an object id */
	pw_hash_update(&h, out->data, out->len);
	pw_hash_final_checksum(&h, sum);
	if (pw_buf_add(out, sum, storage->rawsz))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

/* Write data to path durably: a temporary file beside it, fsync, rename,
 * fsync of the directory. A crash leaves the old file or the new one. */
int pw_compat_write_durable(const char *path, const void *data, size_t len,
                            void (*before)(void *, const char *, const char *), void *before_data,
                            struct pw_error *err)
{
	struct pw_buf tmp = PW_BUF_INIT;
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (pw_buf_addf(&tmp, "%.*s/tmp_compat_XXXXXX", slash ? (int)(slash - path) : 1,
	                slash ? path : "."))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	fd = pw_fs_mkstemp_mode(tmp.data, 0444);
	if (fd < 0) {
		rc = pw_error_set(err, PW_EIO, "unable to create temporary file %s: %s", tmp.data,
		                  strerror(errno));
		pw_buf_free(&tmp);
		return rc;
	}
	if (pw_fs_write_all(fd, data, len) || fsync(fd)) {
		rc = pw_error_set(err, PW_EIO, "unable to write %s: %s", tmp.data, strerror(errno));
		close(fd);
		unlink(tmp.data);
		pw_buf_free(&tmp);
		return rc;
	}
	if (close(fd)) {
		rc = pw_error_set(err, PW_EIO, "unable to write %s: %s", tmp.data, strerror(errno));
		unlink(tmp.data);
		pw_buf_free(&tmp);
		return rc;
	}
	if (before)
		before(before_data, tmp.data, path);
	if (rename(tmp.data, path)) {
		rc = pw_error_set(err, PW_EIO, "unable to rename %s to %s: %s", tmp.data, path,
		                  strerror(errno));
		unlink(tmp.data);
	} else {
		/* the rename itself is durable once the directory is synced */
		tmp.len = slash ? (size_t)(slash - path) : 0;
		if (slash && !pw_buf_setlen(&tmp, tmp.len)) {
			memcpy(tmp.data, path, tmp.len);
			int dfd = open(tmp.data, O_RDONLY | O_DIRECTORY);

			if (dfd >= 0) {
				(void)fsync(dfd);
				close(dfd);
			}
		}
	}
	pw_buf_free(&tmp);
	return rc;
}

/* ---- loose-object-idx ----------------------------------------------- */

int pw_compat_loose_idx_parse(const char *data, size_t len, const struct pw_hash_algo *storage,
                              const struct pw_hash_algo *compat,
                              int (*fn)(void *fn_data, const struct pw_oid *storage,
                                        const struct pw_oid *compat),
                              void *fn_data, struct pw_error *err)
{
	static const char header[] = PW_LOOSE_IDX_HEADER;
	size_t hl = sizeof(header) - 1, at, line = 1;

	if (!storage || !compat || storage == compat)
		return pw_error_set(err, PW_EINVAL, "loose-object-idx: bad algorithms");
	if (len < hl || memcmp(data, header, hl))
		return pw_error_set(err, PW_ECORRUPT, "loose-object-idx: bad header line");
	at = hl;
	while (at < len) {
		const char *p = data + at, *nl = memchr(p, '\n', len - at);
		size_t n = nl ? (size_t)(nl - p) : len - at;
		struct pw_oid s, c;
		int rc;

		line++;
		if (n != storage->hexsz + 1 + compat->hexsz || p[storage->hexsz] != ' ' ||
		    pw_oid_from_hex(&s, p, storage->hexsz, storage) ||
		    pw_oid_from_hex(&c, p + storage->hexsz + 1, compat->hexsz, compat))
			return pw_error_set(err, PW_ECORRUPT, "loose-object-idx: bad line %zu",
			                    line);
		if (fn && (rc = fn(fn_data, &s, &c)))
			return rc;
		at += n + (nl ? 1 : 0);
	}
	return 0;
}

/* ---- the map handle ------------------------------------------------- */

struct pack_map {
	char *idx_path, *map_path;
	int state; /* 0 not opened, 1 usable, -1 no usable map */
	struct pw_idx *idx;
	uint8_t *data;
	size_t size;
	const uint8_t *ids, *fanout, *sorted;
	uint32_t nr;
};

/* What the files looked like when the handle read them: a miss reloads
 * only when they changed (new packs, side files or loose entries). */
struct files_stamp {
	struct timespec pack_dir, loose;
	off_t loose_size;
	int loose_exists;
};

struct pw_compat_map {
	char *objects_dir;
	const struct pw_hash_algo *storage, *compat;
	struct pw_compat_pairs loose;
	struct pw_compat_pairs extra; /* remembered by this handle, not read */
	struct pack_map *packs;
	size_t nr_packs;
	struct files_stamp stamp;
	int no_reload;                     /* misses are expected (a push being translated) */
	struct pw_compat_submodules *subs; /* borrowed: gitlinks of the updates */
	struct pw_error err;
};

void pw_compat_pairs_free(struct pw_compat_pairs *p)
{
	pw_oidmap_free(&p->by_storage);
	pw_oidmap_free(&p->by_compat);
	free(p->pairs);
	memset(p, 0, sizeof(*p));
}

int pw_compat_pairs_add(struct pw_compat_pairs *p, const struct pw_oid *s, const struct pw_oid *c)
{
	struct pw_oidmap_entry *e;
	int created;

	if (p->nr == p->alloc) {
		size_t n = p->alloc ? p->alloc * 2 : 64;
		struct pw_compat_pair *np = realloc(p->pairs, n * sizeof(*np));

		if (!np)
			return PW_ENOMEM;
		p->pairs = np;
		p->alloc = n;
	}
	if (!(e = pw_oidmap_put(&p->by_storage, s, &created)))
		return PW_ENOMEM;
	if (!created)
		return 0; /* first entry wins */
	e->value = (void *)(uintptr_t)p->nr;
	if (!(e = pw_oidmap_put(&p->by_compat, c, &created)))
		return PW_ENOMEM;
	if (created)
		e->value = (void *)(uintptr_t)p->nr;
	p->pairs[p->nr].storage = *s;
	p->pairs[p->nr].compat = *c;
	p->nr++;
	return 0;
}

const struct pw_compat_pair *pw_compat_pairs_by_storage(const struct pw_compat_pairs *p,
                                                        const struct pw_oid *s)
{
	struct pw_oidmap_entry *e = pw_oidmap_get(&p->by_storage, s);

	return e ? &p->pairs[(uintptr_t)e->value] : NULL;
}

const struct pw_compat_pair *pw_compat_pairs_by_compat(const struct pw_compat_pairs *p,
                                                       const struct pw_oid *c)
{
	struct pw_oidmap_entry *e = pw_oidmap_get(&p->by_compat, c);

	return e ? &p->pairs[(uintptr_t)e->value] : NULL;
}

static int add_pair_cb(void *data, const struct pw_oid *s, const struct pw_oid *c)
{
	return pw_compat_pairs_add(data, s, c);
}

char *pw_compat_loose_idx_path(const char *objects_dir)
{
	return pw_path_join(objects_dir, "loose-object-idx");
}

int pw_compat_loose_idx_load(struct pw_compat_pairs *pairs, const char *objects_dir,
                             const struct pw_hash_algo *storage, const struct pw_hash_algo *compat,
                             struct pw_buf *raw, struct pw_error *err)
{
	char *path = pw_compat_loose_idx_path(objects_dir);
	struct pw_buf b = PW_BUF_INIT;
	int rc;

	if (!path)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	rc = pw_fs_read_file(path, &b, PW_COMPAT_LOOSE_IDX_MAX, err);
	if (rc == PW_ENOTFOUND) {
		rc = 0;
	} else if (!rc) {
		rc = pw_compat_loose_idx_parse(b.data, b.len, storage, compat, add_pair_cb, pairs,
		                               err);
		if (rc == PW_ENOMEM)
			rc = pw_error_set(err, rc, "out of memory");
		else if (rc)
			pw_error_wrap(err, "%s", path);
	}
	if (!rc && raw) {
		pw_buf_free(raw);
		*raw = b;
	} else {
		pw_buf_free(&b);
	}
	free(path);
	return rc;
}

static int list_packs(struct pw_compat_map *m)
{
	char *dir = pw_path_join(m->objects_dir, "pack");
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (!dir)
		return pw_error_set(&m->err, PW_ENOMEM, "out of memory");
	d = opendir(dir);
	if (!d) {
		free(dir);
		return 0;
	}
	while ((de = readdir(d)) && !rc) {
		size_t n = strlen(de->d_name);
		struct pack_map *pm;

		if (n < 10 || strncmp(de->d_name, "pack-", 5) || strcmp(de->d_name + n - 4, ".idx"))
			continue;
		pm = realloc(m->packs, (m->nr_packs + 1) * sizeof(*pm));
		if (!pm) {
			rc = PW_ENOMEM;
			break;
		}
		m->packs = pm;
		pm = &m->packs[m->nr_packs];
		memset(pm, 0, sizeof(*pm));
		pm->idx_path = pw_path_join(dir, de->d_name);
		pm->map_path = pm->idx_path ? strdup(pm->idx_path) : NULL;
		if (!pm->idx_path || !pm->map_path) {
			free(pm->idx_path);
			free(pm->map_path);
			rc = PW_ENOMEM;
			break;
		}
		/* ".idx" -> ".compat" */
		{
			size_t l = strlen(pm->map_path);
			char *mp = realloc(pm->map_path, l + 4);

			if (!mp) {
				free(pm->idx_path);
				free(pm->map_path);
				rc = PW_ENOMEM;
				break;
			}
			memcpy(mp + l - 3, "compat", 7);
			pm->map_path = mp;
		}
		m->nr_packs++;
	}
	closedir(d);
	free(dir);
	return rc ? pw_error_set(&m->err, rc, "out of memory") : 0;
}

static void take_stamp(const struct pw_compat_map *m, struct files_stamp *st)
{
	char *pack = pw_path_join(m->objects_dir, "pack");
	char *loose = pw_compat_loose_idx_path(m->objects_dir);
	struct stat sb;

	memset(st, 0, sizeof(*st));
	if (pack && !stat(pack, &sb))
		st->pack_dir = sb.st_mtim;
	if (loose && !stat(loose, &sb)) {
		st->loose = sb.st_mtim;
		st->loose_size = sb.st_size;
		st->loose_exists = 1;
	}
	free(pack);
	free(loose);
}

int pw_compat_map_open(struct pw_compat_map **out, const char *objects_dir,
                       const struct pw_hash_algo *storage, const struct pw_hash_algo *compat,
                       struct pw_error *err)
{
	struct pw_compat_map *m;
	int rc;

	*out = NULL;
	if (!storage || !compat || storage->id == compat->id)
		return pw_error_set(err, PW_EINVAL,
		                    "compat map: the compat algorithm must differ from the storage "
		                    "algorithm");
	if (!(m = calloc(1, sizeof(*m))) || !(m->objects_dir = strdup(objects_dir))) {
		free(m);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	m->storage = storage;
	m->compat = compat;
	take_stamp(m, &m->stamp);
	if ((rc = pw_compat_loose_idx_load(&m->loose, objects_dir, storage, compat, NULL, err)) ||
	    (rc = list_packs(m))) {
		if (rc && m->err.code)
			pw_error_copy(err, &m->err);
		pw_compat_map_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

static void pack_map_close(struct pack_map *pm)
{
	if (pm->data)
		munmap(pm->data, pm->size);
	pw_idx_free(pm->idx);
	pm->data = NULL;
	pm->idx = NULL;
}

static void drop_files(struct pw_compat_map *m)
{
	for (size_t i = 0; i < m->nr_packs; i++) {
		pack_map_close(&m->packs[i]);
		free(m->packs[i].idx_path);
		free(m->packs[i].map_path);
	}
	free(m->packs);
	m->packs = NULL;
	m->nr_packs = 0;
	pw_compat_pairs_free(&m->loose);
}

void pw_compat_map_free(struct pw_compat_map *m)
{
	if (!m)
		return;
	drop_files(m);
	pw_compat_pairs_free(&m->extra);
	free(m->objects_dir);
	free(m);
}

int pw_compat_map_reload(struct pw_compat_map *m)
{
	int rc;

	drop_files(m);
	take_stamp(m, &m->stamp);
	if ((rc = pw_compat_loose_idx_load(&m->loose, m->objects_dir, m->storage, m->compat, NULL,
	                                   &m->err)) ||
	    (rc = list_packs(m)))
		return rc;
	return 0;
}

/* After a miss: reload when the files changed since they were read
 * (1 = reloaded, look again; 0 = nothing new; < 0 error). */
static int reload_if_changed(struct pw_compat_map *m)
{
	struct files_stamp now;
	int rc;

	if (m->no_reload)
		return 0;
	take_stamp(m, &now);
	if (!memcmp(&now.pack_dir, &m->stamp.pack_dir, sizeof(now.pack_dir)) &&
	    now.loose_exists == m->stamp.loose_exists && now.loose_size == m->stamp.loose_size &&
	    !memcmp(&now.loose, &m->stamp.loose, sizeof(now.loose)))
		return 0;
	rc = pw_compat_map_reload(m);
	return rc ? rc : 1;
}

int pw_compat__map_remember(struct pw_compat_map *m, const struct pw_oid *s, const struct pw_oid *c)
{
	return pw_compat_pairs_add(&m->extra, s, c);
}

void pw_compat__map_set_reload(struct pw_compat_map *m, int on)
{
	m->no_reload = !on;
}

const char *pw_compat__map_dir(const struct pw_compat_map *m)
{
	return m->objects_dir;
}

void pw_compat_map_set_submodules(struct pw_compat_map *m, struct pw_compat_submodules *s)
{
	m->subs = s;
}

struct pw_compat_submodules *pw_compat__map_submodules(const struct pw_compat_map *m)
{
	return m->subs;
}

const struct pw_error *pw_compat_map_error(const struct pw_compat_map *m)
{
	return &m->err;
}

const struct pw_hash_algo *pw_compat_map_storage_algo(const struct pw_compat_map *m)
{
	return m->storage;
}

const struct pw_hash_algo *pw_compat_map_compat_algo(const struct pw_compat_map *m)
{
	return m->compat;
}

/* Map a side file and check it against its idx (cheap checks only). */
static int pack_map_load(struct pw_compat_map *m, struct pack_map *pm)
{
	struct stat st;
	int fd, rc;
	void *p;

	if (pm->state)
		return pm->state > 0 ? 0 : PW_ENOTFOUND;
	pm->state = -1;
	fd = open(pm->map_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PW_ENOTFOUND;
	if (fstat(fd, &st) || st.st_size <= 0) {
		close(fd);
		return PW_ENOTFOUND;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return pw_error_set(&m->err, PW_EIO, "%s: cannot map: %s", pm->map_path,
		                    strerror(errno));
	pm->data = p;
	pm->size = (size_t)st.st_size;
	if ((rc = pw_idx_open(&pm->idx, pm->idx_path, m->storage, &m->err)) ||
	    (rc = pw_compat_pack_map_check(pm->data, pm->size, m->storage, pm->idx->nr,
	                                   pm->idx->pack_checksum, 0, &m->err))) {
		pw_error_wrap(&m->err, "%s", pm->map_path);
		pack_map_close(pm);
		return rc == PW_ENOMEM ? rc : PW_ENOTFOUND; /* a stale map maps nothing */
	}
	pm->nr = pm->idx->nr;
	pm->ids = pm->data + PW_COMPAT_HDR_FIXED + m->storage->rawsz;
	pm->fanout = pm->ids + (size_t)pm->nr * m->compat->rawsz;
	pm->sorted = pm->fanout + 256 * 4;
	pm->state = 1;
	return 0;
}

static int from_storage_once(struct pw_compat_map *m, const struct pw_oid *s, struct pw_oid *c)
{
	const struct pw_compat_pair *pr;

	if ((pr = pw_compat_pairs_by_storage(&m->loose, s)) ||
	    (pr = pw_compat_pairs_by_storage(&m->extra, s))) {
		*c = pr->compat;
		return 0;
	}
	for (size_t i = 0; i < m->nr_packs; i++) {
		struct pack_map *pm = &m->packs[i];
		uint32_t pos;
		int rc = pack_map_load(m, pm);

		if (rc == PW_ENOTFOUND)
			continue;
		if (rc)
			return rc;
		if (pw_idx_find(pm->idx, s->id, &pos)) {
			pw_oid_from_raw(c, pm->ids + (size_t)pos * m->compat->rawsz, m->compat);
			return 0;
		}
	}
	return PW_ENOTFOUND;
}

static int to_storage_once(struct pw_compat_map *m, const struct pw_oid *c, struct pw_oid *s)
{
	const struct pw_compat_pair *pr;
	size_t rawsz = m->compat->rawsz;

	if ((pr = pw_compat_pairs_by_compat(&m->loose, c)) ||
	    (pr = pw_compat_pairs_by_compat(&m->extra, c))) {
		*s = pr->storage;
		return 0;
	}
	for (size_t i = 0; i < m->nr_packs; i++) {
		struct pack_map *pm = &m->packs[i];
		uint32_t lo, hi;
		int rc = pack_map_load(m, pm);

		if (rc == PW_ENOTFOUND)
			continue;
		if (rc)
			return rc;
		lo = c->id[0] ? get_be32(pm->fanout + 4 * (size_t)(c->id[0] - 1)) : 0;
		hi = get_be32(pm->fanout + 4 * (size_t)c->id[0]);
		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2,
			         pos = get_be32(pm->sorted + 4 * (size_t)mid);
			int cmp;

			if (pos >= pm->nr)
				return pw_error_set(&m->err, PW_ECORRUPT,
				                    "%s: position %u out of range", pm->map_path,
				                    (unsigned)pos);
			cmp = memcmp(pm->ids + (size_t)pos * rawsz, c->id, rawsz);
			if (!cmp) {
				pw_idx_nth_oid(pm->idx, pos, s);
				return 0;
			}
			if (cmp < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return PW_ENOTFOUND;
}

int pw_compat_from_storage(struct pw_compat_map *m, const struct pw_oid *s, struct pw_oid *c)
{
	int rc;

	if (s->algo != m->storage->id)
		return pw_error_set(&m->err, PW_EINVAL, "compat map: id of the wrong algorithm");
	rc = from_storage_once(m, s, c);
	if (rc == PW_ENOTFOUND) {
		int r = reload_if_changed(m);

		if (r == 1)
			rc = from_storage_once(m, s, c);
		else if (r < 0)
			rc = r;
	}
	return rc;
}

int pw_compat_to_storage(struct pw_compat_map *m, const struct pw_oid *c, struct pw_oid *s)
{
	int rc;

	if (c->algo != m->compat->id)
		return pw_error_set(&m->err, PW_EINVAL, "compat map: id of the wrong algorithm");
	rc = to_storage_once(m, c, s);
	if (rc == PW_ENOTFOUND) {
		int r = reload_if_changed(m);

		if (r == 1)
			rc = to_storage_once(m, c, s);
		else if (r < 0)
			rc = r;
	}
	return rc;
}

int pw_compat_map_add_loose(struct pw_compat_map *m, const struct pw_oid *s, const struct pw_oid *c)
{
	char sh[PW_MAX_HEXSZ + 1], ch[PW_MAX_HEXSZ + 1];
	char *path = pw_compat_loose_idx_path(m->objects_dir);
	struct pw_buf line = PW_BUF_INIT, lock = PW_BUF_INIT;
	struct stat st;
	int lfd = -1, fd = -1, rc = 0;

	if (s->algo != m->storage->id || c->algo != m->compat->id) {
		free(path);
		return pw_error_set(&m->err, PW_EINVAL, "compat map: ids of the wrong algorithms");
	}
	if (!path || pw_buf_addf(&lock, "%s.lock", path)) {
		free(path);
		return pw_error_set(&m->err, PW_ENOMEM, "out of memory");
	}
	lfd = open(lock.data, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
	if (lfd < 0) {
		rc = pw_error_set(&m->err, errno == EEXIST ? PW_ELOCKED : PW_EIO,
		                  "unable to create '%s': %s", lock.data, strerror(errno));
		goto out;
	}
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0 || fstat(fd, &st)) {
		rc = pw_error_set(&m->err, PW_EIO, "unable to open %s: %s", path, strerror(errno));
		goto out;
	}
	if ((!st.st_size && pw_buf_adds(&line, PW_LOOSE_IDX_HEADER)) ||
	    pw_buf_addf(&line, "%s %s\n", pw_oid_to_hex(s, sh), pw_oid_to_hex(c, ch))) {
		rc = pw_error_set(&m->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (pw_fs_write_all(fd, line.data, line.len) || fsync(fd)) {
		rc = pw_error_set(&m->err, PW_EIO, "unable to append to %s: %s", path,
		                  strerror(errno));
		goto out;
	}
	if (pw_compat_pairs_add(&m->loose, s, c))
		rc = pw_error_set(&m->err, PW_ENOMEM, "out of memory");
out:
	if (fd >= 0)
		close(fd);
	if (lfd >= 0) {
		close(lfd);
		unlink(lock.data);
	}
	pw_buf_free(&line);
	pw_buf_free(&lock);
	free(path);
	return rc;
}

int pw_compat_pack_map_verify(const char *map_path, const char *idx_path,
                              const struct pw_hash_algo *storage, struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_idx *idx = NULL;
	int rc;

	if ((rc = pw_idx_open(&idx, idx_path, storage, err)))
		return rc;
	rc = pw_fs_read_file(map_path, &b, 0, err);
	if (!rc)
		rc = pw_compat_pack_map_check((const uint8_t *)b.data, b.len, storage, idx->nr,
		                              idx->pack_checksum, 1, err);
	if (rc)
		pw_error_wrap(err, "%s", map_path);
	pw_buf_free(&b);
	pw_idx_free(idx);
	return rc;
}
