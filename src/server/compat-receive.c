/* receive-pack for a client of the other algorithm: see compat-receive.h. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <zlib.h>

#include "compat/map-priv.h"
#include "hash/oidmap.h"
#include "odb/idx.h"
#include "odb/pack.h"
#include "pack/delta-create.h"
#include "pack/idx-write.h"
#include "packwire/compat.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/proto.h"
#include "packwire/repo.h"
#include "server/compat-receive.h"
#include "server/receive-cmds.h"
#include "util/fs.h"

/* compression level of the translated pack: speed first (a repack
 * recompresses it with deltas); libdeflate, not zlib: 5x faster here */
#define IMPORT_ZLIB_LEVEL 1
#define IMPORT_FLUSH      (1u << 20)

struct pw_rp_compat {
	struct pw_repo *repo;
	const struct pw_hash_algo *storage, *wire;
	struct pw_compat_map *map;
	struct pw_odb *odb;          /* the repository's, for thin-pack bases */
	struct pw_compat_xlate *imp; /* the pushed objects, wire -> storage */
	struct pw_buf conv;
	struct pw_oidmap shallow;          /* the client's shallow commits (wire ids) */
	struct pw_oidmap cut;              /* pushed objects left out: built on a shallow root */
	struct pw_compat_submodules *subs; /* borrowed: where gitlinks are mapped */
};

void pw_rp_compat_set_submodules(struct pw_rp_compat *c, struct pw_compat_submodules *subs)
{
	c->subs = subs;
}

static int storage_known(void *data, const struct pw_oid *storage)
{
	struct pw_oid w;

	return !pw_compat_from_storage(data, storage, &w);
}

/* The submodule commits the pushed trees name, mapped through their
 * repositories: their pairs go into the repository's loose-object-idx
 * (storage id first), so that the view translates those trees back. */
static int publish_links(struct pw_rp_compat *c, pw_rp_publish_fn before, void *before_data,
                         struct pw_error *err)
{
	const struct pw_compat_pairs *links = pw_compat__xlate_links(c->imp);
	struct pw_buf add = PW_BUF_INIT;
	int rc = 0;

	if (!links->nr)
		return 0;
	if (pw_compat__links_lines(c->imp, c->storage, storage_known, c->map, &add))
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	if (!rc && add.len)
		rc = pw_compat__loose_idx_publish(pw_repo_objects_dir(c->repo), &add, before,
		                                  before_data, NULL, err);
	/* wire -> storage pairs: the map's are storage -> wire */
	for (size_t i = 0; !rc && i < links->nr; i++)
		if (pw_compat__map_remember(c->map, &links->pairs[i].compat,
		                            &links->pairs[i].storage))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	pw_buf_free(&add);
	return rc;
}

int pw_rp_compat_open(struct pw_rp_compat **out, struct pw_repo *repo, const char *object_format,
                      struct pw_error *err)
{
	const struct pw_hash_algo *storage = pw_repo_algo(repo), *wire, *compat;
	struct pw_rp_compat *c;
	int rc;

	*out = NULL;
	if (!object_format || !*object_format)
		return 0;
	if (!(wire = pw_hash_by_name(object_format, strlen(object_format))))
		return pw_error_set(err, PW_EINVAL, "unknown object format '%s'", object_format);
	if (wire == storage)
		return 0;
	compat = pw_repo_compat_algo(repo);
	if (compat != wire)
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "cannot receive %s objects: the repository is stored in %s and "
		                    "extensions.compatObjectFormat is not %s (run 'packwire compat "
		                    "build --object-format=%s')",
		                    wire->name, storage->name, wire->name, wire->name);
	if (!(c = calloc(1, sizeof(*c))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	c->repo = repo;
	c->storage = storage;
	c->wire = wire;
	pw_buf_init(&c->conv, 0);
	if ((rc = pw_compat_map_open(&c->map, pw_repo_objects_dir(repo), storage, wire, err)) ||
	    (rc = pw_odb_open(&c->odb, pw_repo_objects_dir(repo), storage, err))) {
		pw_rp_compat_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void pw_rp_compat_free(struct pw_rp_compat *c)
{
	if (!c)
		return;
	pw_compat_xlate_free(c->imp);
	pw_odb_free(c->odb);
	pw_compat_map_free(c->map);
	pw_buf_free(&c->conv);
	pw_oidmap_free(&c->shallow);
	pw_oidmap_free(&c->cut);
	free(c);
}

const struct pw_hash_algo *pw_rp_compat_wire(const struct pw_rp_compat *c)
{
	return c->wire;
}

int pw_rp_compat_to_wire(struct pw_rp_compat *c, const struct pw_oid *storage, struct pw_oid *wire)
{
	if (c->imp && !pw_compat_xlate_reverse(c->imp, storage, wire))
		return 0;
	return pw_compat_from_storage(c->map, storage, wire) ? PW_ENOTFOUND : 0;
}

int pw_rp_compat_to_storage(struct pw_rp_compat *c, const struct pw_oid *wire,
                            struct pw_oid *storage)
{
	if (c->imp)
		return pw_compat_xlate_lookup(c->imp, wire, storage) ? PW_ENOTFOUND : 0;
	return pw_compat_to_storage(c->map, wire, storage) ? PW_ENOTFOUND : 0;
}

static int from_storage_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	struct pw_rp_compat *c = data;

	return pw_compat_from_storage(c->map, from, out) ? PW_ENOTFOUND : 0;
}

int pw_rp_compat_read_base(void *ctx, const struct pw_oid *wire, int *type, struct pw_buf *out)
{
	struct pw_rp_compat *c = ctx;
	struct pw_oid st;
	struct pw_error e;

	if (pw_compat_to_storage(c->map, wire, &st) || pw_odb_read(c->odb, &st, type, &c->conv))
		return PW_ENOTFOUND;
	pw_buf_reset(out);
	if (*type == PW_OBJ_BLOB)
		return pw_buf_add(out, c->conv.data, c->conv.len) ? PW_ENOMEM : 0;
	memset(&e, 0, sizeof(e));
	if (pw_compat_convert(out, *type, c->conv.data, c->conv.len, c->storage, c->wire,
	                      from_storage_cb, c, &e))
		return PW_ENOTFOUND;
	return 0;
}

int pw_rp_compat_has_base(void *ctx, const struct pw_oid *wire)
{
	struct pw_rp_compat *c = ctx;
	struct pw_oid st;

	return !pw_compat_to_storage(c->map, wire, &st) && pw_odb_exists(c->odb, &st);
}

/* ---- shallow pushes ------------------------------------------------------- */

int pw_rp_compat_set_shallow(struct pw_rp_compat *c, const struct pw_oid *wire, size_t n)
{
	int created;

	pw_oidmap_free(&c->shallow);
	for (size_t i = 0; i < n; i++)
		if (!pw_oidmap_put(&c->shallow, &wire[i], &created))
			return PW_ENOMEM;
	return 0;
}

int pw_rp_compat_cut_off(const struct pw_rp_compat *c, const struct pw_oid *wire)
{
	return pw_oidmap_get(&c->cut, wire) != NULL;
}

static int known_id(struct pw_rp_compat *c, const struct pw_oid *wire)
{
	struct pw_oid st;

	return !pw_compat_to_storage(c->map, wire, &st);
}

struct cut_commit {
	struct pw_oid oid;
	size_t first, nr; /* its parents in the parents array */
	int state;        /* 0 unseen, 1 on the stack, 2 kept, 3 cut */
	int root;         /* a shallow commit whose parents are missing */
};

/* The tags of what is cut are cut too (tags of tags: until nothing
 * changes). 0 or PW_ENOMEM. */
static int cut_tags(struct pw_rp_compat *c, struct pw_odb *wodb, const struct pw_oid_array *tags,
                    struct pw_buf *buf, struct pw_error *err)
{
	int rc = 0, created, type;

	for (int changed = c->cut.count > 0; changed && !rc;) {
		changed = 0;
		for (size_t i = 0; i < tags->nr && !rc; i++) {
			struct pw_tag_info ti;

			if (pw_oidmap_get(&c->cut, &tags->v[i]) ||
			    pw_odb_read(wodb, &tags->v[i], &type, buf) ||
			    pw_tag_parse(&ti, buf->data, buf->len, c->wire, err))
				continue;
			if (pw_oidmap_get(&c->cut, &ti.object)) {
				if (!pw_oidmap_put(&c->cut, &tags->v[i], &created))
					rc = PW_ENOMEM;
				changed = 1;
			}
		}
	}
	return rc;
}

/* Which pushed objects have no storage id because they are built on one
 * of the client's shallow commits whose parents are neither pushed nor
 * known here (a commit's id needs its parents' ids): those commits, the
 * commits above them and the tags of those, into c->cut. */
static int find_cut(struct pw_rp_compat *c, struct pw_odb *wodb, const struct pw_oid_array *all,
                    struct pw_error *err)
{
	struct cut_commit *v = NULL;
	struct pw_oid_array parents = {0}, tags = {0};
	struct pw_oidmap index = PW_OIDMAP_INIT;
	struct pw_buf buf = PW_BUF_INIT;
	size_t nr = 0, *stack = NULL, *pos = NULL, sp = 0;
	int rc = 0, created, type;
	uint64_t size;

	pw_oidmap_free(&c->cut);
	if (!c->shallow.count)
		return 0;
	if (!(v = calloc(all->nr + 1, sizeof(*v))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (size_t i = 0; i < all->nr && !rc; i++) {
		struct pw_commit_info ci;
		struct pw_oidmap_entry *e;

		if (pw_odb_read_header(wodb, &all->v[i], &type, &size) ||
		    (type != PW_OBJ_COMMIT && type != PW_OBJ_TAG) || known_id(c, &all->v[i]))
			continue;
		if (type == PW_OBJ_TAG) {
			rc = pw_oid_array_push(&tags, &all->v[i]);
			continue;
		}
		if (pw_odb_read(wodb, &all->v[i], &type, &buf) ||
		    pw_commit_parse(&ci, buf.data, buf.len, c->wire, err))
			continue; /* the translation names it */
		v[nr].oid = all->v[i];
		v[nr].first = parents.nr;
		v[nr].nr = ci.nr_parents;
		for (size_t k = 0; k < ci.nr_parents && !rc; k++)
			rc = pw_oid_array_push(&parents, &ci.parents[k]);
		pw_commit_info_free(&ci);
		if (!rc && !(e = pw_oidmap_put(&index, &all->v[i], &created)))
			rc = PW_ENOMEM;
		else if (!rc)
			e->value = (void *)(uintptr_t)(nr + 1);
		nr++;
	}
	/* the roots: a shallow commit with a parent nobody has */
	for (size_t i = 0; i < nr && !rc; i++) {
		if (!pw_oidmap_get(&c->shallow, &v[i].oid))
			continue;
		for (size_t k = 0; k < v[i].nr; k++) {
			const struct pw_oid *p = &parents.v[v[i].first + k];

			if (!pw_oidmap_get(&index, p) && !known_id(c, p))
				v[i].root = 1;
		}
	}
	/* a commit is cut when one of its parents is (depth first, no recursion) */
	if (!rc && (!(stack = malloc((nr + 1) * sizeof(*stack))) ||
	            !(pos = malloc((nr + 1) * sizeof(*pos)))))
		rc = PW_ENOMEM;
	for (size_t i = 0; i < nr && !rc; i++) {
		if (v[i].state)
			continue;
		stack[sp] = i;
		pos[sp++] = 0;
		v[i].state = 1;
		while (sp) {
			size_t j = stack[sp - 1];

			if (pos[sp - 1] < v[j].nr) {
				struct pw_oidmap_entry *e = pw_oidmap_get(
				        &index, &parents.v[v[j].first + pos[sp - 1]++]);
				size_t p = e ? (size_t)(uintptr_t)e->value - 1 : 0;

				if (e && !v[p].state) {
					v[p].state = 1;
					stack[sp] = p;
					pos[sp++] = 0;
				}
				continue;
			}
			sp--;
			v[j].state = v[j].root ? 3 : 2;
			for (size_t k = 0; k < v[j].nr && v[j].state == 2; k++) {
				struct pw_oidmap_entry *e =
				        pw_oidmap_get(&index, &parents.v[v[j].first + k]);

				if (e && v[(size_t)(uintptr_t)e->value - 1].state == 3)
					v[j].state = 3;
			}
			if (v[j].state == 3 && !pw_oidmap_put(&c->cut, &v[j].oid, &created))
				rc = PW_ENOMEM;
		}
	}
	if (!rc)
		rc = cut_tags(c, wodb, &tags, &buf, err);
	if (rc)
		pw_error_set(err, rc, "out of memory");
	else
		pw_error_clear(err);
	free(stack);
	free(pos);
	free(v);
	free(parents.v);
	free(tags.v);
	pw_oidmap_free(&index);
	pw_buf_free(&buf);
	return rc;
}

/* ---- the translated pack ------------------------------------------------- */

struct writer {
	int fd;
	char *tmp_path;
	uint64_t offset;
	struct pw_hash_ctx hash;
	struct pw_buf out, z;
	struct pw_idx_entry *entries;
	uint32_t nr, expect;
	const struct pw_hash_algo *algo;
	struct libdeflate_compressor *comp;
};

static int w_flush(struct writer *w, struct pw_error *err)
{
	if (!w->out.len)
		return 0;
	if (pw_fs_write_all(w->fd, w->out.data, w->out.len))
		return pw_error_set(err, PW_EIO, "unable to write %s: %s", w->tmp_path,
		                    strerror(errno));
	pw_buf_reset(&w->out);
	return 0;
}

static int w_add(struct writer *w, const void *data, size_t len, struct pw_error *err)
{
	pw_hash_update(&w->hash, data, len);
	if (pw_buf_add(&w->out, data, len))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	w->offset += len;
	return w->out.len >= IMPORT_FLUSH ? w_flush(w, err) : 0;
}

/* One entry: header (type, inflated size), the base's id for a REF_DELTA,
 * the zlib stream z. */
static int w_entry(struct writer *w, const struct pw_oid *oid, int type, uint64_t size,
                   const struct pw_oid *base, const void *z, size_t zlen, struct pw_error *err)
{
	struct pw_idx_entry *e;
	uint8_t hdr[16];
	size_t n = 0;
	uLong crc;
	int rc;

	if (w->nr >= w->expect)
		return pw_error_set(err, PW_ERROR, "compat receive: more objects than counted");
	e = &w->entries[w->nr++];
	e->oid = *oid;
	e->offset = w->offset;
	hdr[n] = (uint8_t)(type << 4 | (size & 0x0f));
	size >>= 4;
	while (size) {
		hdr[n++] |= 0x80;
		hdr[n] = size & 0x7f;
		size >>= 7;
	}
	n++;
	crc = crc32(0L, hdr, (uInt)n);
	if (base)
		crc = crc32(crc, base->id, (uInt)w->algo->rawsz);
	crc = crc32_z(crc, (const Bytef *)z, zlen);
	e->crc32 = (uint32_t)crc;
	if ((rc = w_add(w, hdr, n, err)) ||
	    (base && (rc = w_add(w, base->id, w->algo->rawsz, err))) ||
	    (rc = w_add(w, z, zlen, err)))
		return rc;
	return 0;
}

/* Compress data into w->z. */
static int w_deflate(struct writer *w, const void *data, size_t len, struct pw_error *err)
{
	size_t cap, zlen;

	if (!w->comp && !(w->comp = libdeflate_alloc_compressor(IMPORT_ZLIB_LEVEL)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	cap = libdeflate_zlib_compress_bound(w->comp, len);
	pw_buf_reset(&w->z);
	if (pw_buf_grow(&w->z, cap + 1))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	zlen = libdeflate_zlib_compress(w->comp, data, len, w->z.data, cap);
	if (!zlen)
		return pw_error_set(err, PW_ERROR, "deflate failed");
	w->z.len = zlen;
	return 0;
}

static int xlate_cb(void *data, const struct pw_oid *from, struct pw_oid *out);

/* A wire object's content in the storage algorithm (into out). */
static int storage_content(struct pw_rp_compat *c, struct pw_odb *wodb, const struct pw_oid *wire,
                           int *type, struct pw_buf *tmp, struct pw_buf *out, struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1];
	int rc;

	if ((rc = pw_odb_read(wodb, wire, type, tmp))) {
		pw_error_copy(err, pw_odb_error(wodb));
		return pw_error_wrap(err, "reading %s", pw_oid_to_hex(wire, hex));
	}
	pw_buf_reset(out);
	if (*type == PW_OBJ_BLOB)
		return pw_buf_add(out, tmp->data, tmp->len) ? pw_error_set(err, PW_ENOMEM,
		                                                           "out of "
		                                                           "memory")
		                                            : 0;
	return pw_compat_convert(out, *type, tmp->data, tmp->len, c->wire, c->storage, xlate_cb,
	                         c->imp, err);
}

static int collect_cb(const struct pw_oid *oid, void *data)
{
	return pw_oid_array_push(data, oid);
}

static int known_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	struct pw_rp_compat *c = data;
	int rc = pw_compat_to_storage(c->map, from, out);

	return rc == PW_ENOMEM ? rc : rc ? PW_ENOTFOUND : 0;
}

static int xlate_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return pw_compat_xlate_lookup(data, from, out);
}

static int reverse_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return pw_compat_xlate_reverse(data, from, out);
}

static int rename_to(const char *from, const char *dir, const char *hex, const char *ext,
                     struct pw_error *err)
{
	struct pw_buf p = PW_BUF_INIT;
	int rc = 0;

	if (pw_buf_addf(&p, "%s/pack-%s.%s", dir, hex, ext))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (rename(from, p.data))
		rc = pw_error_set(err, PW_EIO, "unable to rename %s to %s: %s", from, p.data,
		                  strerror(errno));
	pw_buf_free(&p);
	return rc;
}

/* One new object into the pack: as a REF_DELTA against base (its wire and
 * storage ids) when there is one (a blob's delta bytes copied as they came,
 * another type's delta computed between the translated contents), else
 * whole. */
static int write_one(struct pw_rp_compat *c, struct writer *w, struct pw_odb *wodb,
                     const struct pw_oid *wo, const struct pw_oid *so, const struct pw_oid *bw,
                     const struct pw_oid *bs, const struct pw_pack_raw_entry *raw,
                     struct pw_buf *bufs, struct pw_error *err)
{
	struct pw_buf *tmp = &bufs[0], *a = &bufs[1], *b = &bufs[2], *delta = &bufs[3];
	uint64_t size;
	int type = 0, btype, rc;

	if (bw && !pw_odb_read_header(wodb, wo, &type, &size) && type == PW_OBJ_BLOB &&
	    raw->len > raw->hdr_len)
		return w_entry(w, so, PW_OBJ_REF_DELTA, raw->size, bs, raw->data + raw->hdr_len,
		               raw->len - raw->hdr_len, err);
	if ((rc = storage_content(c, wodb, wo, &type, tmp, a, err)))
		return rc;
	if (bw && type != PW_OBJ_BLOB && a->len > 64 &&
	    !storage_content(c, wodb, bw, &btype, tmp, b, err) && btype == type &&
	    !pw_delta_create(b->data, b->len, a->data, a->len, a->len / 2, delta)) {
		if ((rc = w_deflate(w, delta->data, delta->len, err)))
			return rc;
		return w_entry(w, so, PW_OBJ_REF_DELTA, delta->len, bs, w->z.data, w->z.len, err);
	}
	if ((rc = w_deflate(w, a->data, a->len, err)))
		return rc;
	return w_entry(w, so, type, a->len, NULL, w->z.data, w->z.len, err);
}

/* The received pack's .idx in wire_dir/pack (malloc'd), or NULL. */
static char *wire_idx(const char *wire_dir)
{
	char *dir = pw_path_join(wire_dir, "pack"), *path = NULL;
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *de;

	while (d && !path && (de = readdir(d))) {
		size_t n = strlen(de->d_name);

		if (n > 9 && !strncmp(de->d_name, "pack-", 5) &&
		    !strcmp(de->d_name + n - 4, ".idx"))
			path = pw_path_join(dir, de->d_name);
	}
	if (d)
		closedir(d);
	free(dir);
	return path;
}

/* Every new object into the pack: those of the received pack in its order
 * (a delta's base comes first there), keeping its deltas where the base is
 * new too; then any other (loose) ones, whole. */
static int write_objects(struct pw_rp_compat *c, struct writer *w, struct pw_odb *wodb,
                         const char *wire_dir, const struct pw_oidmap *isnew,
                         const struct pw_oid_array *all, struct pw_error *err)
{
	struct pw_oidmap written = PW_OIDMAP_INIT;
	struct pw_buf bufs[4] = {PW_BUF_INIT, PW_BUF_INIT, PW_BUF_INIT, PW_BUF_INIT};
	struct pw_pack *pack = NULL;
	struct pw_error e2;
	char *idx = wire_idx(wire_dir);
	int rc = 0, created;

	memset(&e2, 0, sizeof(e2));
	if (idx && !pw_pack_open(&pack, idx, c->wire, &e2) && !pw_pack_revindex(pack, &e2)) {
		for (uint32_t k = 0; k < pack->nr && !rc; k++) {
			struct pw_pack_raw_entry raw, braw;
			struct pw_oid wo, so, bw, bs;
			int has_base = 0;

			pw_idx_nth_oid(pack->idx, pack->rev_pos[k], &wo);
			if (!pw_oidmap_get(isnew, &wo) || pw_oidmap_get(&written, &wo))
				continue;
			if ((rc = pw_pack_entry_raw(pack, pw_pack_pos_offset(pack, k), &raw, err)))
				break;
			if (raw.type == PW_OBJ_OFS_DELTA &&
			    !pw_pack_entry_raw(pack, raw.base_offset, &braw, &e2)) {
				pw_idx_nth_oid(pack->idx, braw.idx_pos, &bw);
				has_base = 1;
			} else if (raw.type == PW_OBJ_REF_DELTA) {
				bw = raw.base_oid;
				has_base = 1;
			}
			if (has_base && (!pw_oidmap_get(isnew, &bw) ||
			                 pw_compat_xlate_lookup(c->imp, &bw, &bs)))
				has_base = 0;
			if (pw_compat_xlate_lookup(c->imp, &wo, &so)) {
				rc = pw_error_set(err, PW_ERROR,
				                  "compat receive: an object was not "
				                  "translated");
				break;
			}
			rc = write_one(c, w, wodb, &wo, &so, has_base ? &bw : NULL,
			               has_base ? &bs : NULL, &raw, bufs, err);
			if (!rc && !pw_oidmap_put(&written, &wo, &created))
				rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	}
	for (size_t i = 0; i < all->nr && !rc; i++) {
		struct pw_oid so;

		if (!pw_oidmap_get(isnew, &all->v[i]) || pw_oidmap_get(&written, &all->v[i]))
			continue;
		if (pw_compat_xlate_lookup(c->imp, &all->v[i], &so)) {
			rc = pw_error_set(err, PW_ERROR,
			                  "compat receive: an object was not translated");
			break;
		}
		rc = write_one(c, w, wodb, &all->v[i], &so, NULL, NULL, NULL, bufs, err);
		if (!rc && !pw_oidmap_put(&written, &all->v[i], &created))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	for (int i = 0; i < 4; i++)
		pw_buf_free(&bufs[i]);
	pw_oidmap_free(&written);
	pw_pack_free(pack);
	free(idx);
	return rc;
}

/* The pushed objects the map does not know (but what a shallow root
 * without parents cuts off) into isnew, *count of them. */
static int find_new(struct pw_rp_compat *c, const struct pw_oid_array *all, struct pw_oidmap *isnew,
                    uint32_t *count, struct pw_error *err)
{
	for (size_t i = 0; i < all->nr; i++) {
		struct pw_oid st;
		int created;

		if (pw_oidmap_get(&c->cut, &all->v[i]))
			continue;
		if (pw_compat_to_storage(c->map, &all->v[i], &st)) {
			if (!pw_oidmap_put(isnew, &all->v[i], &created))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			*count += created;
		}
	}
	return 0;
}

/* Translate every pushed object (c->imp) before a byte is written; commits
 * and tags first: a tree is then reached from its commit, so an error
 * names its path. count objects must come out new. */
static int translate_all(struct pw_rp_compat *c, struct pw_odb *wodb,
                         const struct pw_oid_array *all, uint32_t count, struct pw_error *err)
{
	struct pw_compat_xlate_opts xo = {0};
	int rc;

	xo.from = c->wire;
	xo.to = c->storage;
	xo.odb = wodb;
	xo.known = known_cb;
	xo.known_data = c;
	xo.max_depth = 2 * all->nr + 64;
	if (c->subs) {
		xo.gitlink = pw_compat_submodules_gitlink;
		xo.gitlink_data = c->subs;
	}
	if ((rc = pw_compat_xlate_new(&c->imp, &xo)) ||
	    (rc = pw_compat_xlate_reserve(c->imp, all->nr)))
		return pw_error_set(err, rc, "out of memory");
	rc = pw_compat__xlate_blobs_first(c->imp, err);
	for (int pass = 0; pass < 2 && !rc; pass++)
		for (size_t i = 0; i < all->nr && !rc; i++) {
			uint64_t size;
			int type = 0, first;

			if (pw_oidmap_get(&c->cut, &all->v[i]))
				continue;
			pw_odb_read_header(wodb, &all->v[i], &type, &size);
			first = type == PW_OBJ_COMMIT || type == PW_OBJ_TAG;
			if (first == !pass)
				rc = pw_compat_xlate_object(c->imp, &all->v[i], err);
		}
	if (!rc && pw_compat_xlate_count(c->imp) != count)
		rc = pw_error_set(err, PW_ERROR,
		                  "compat receive: %u objects translated, %u counted",
		                  (unsigned)pw_compat_xlate_count(c->imp), (unsigned)count);
	return rc;
}

/* The translated objects as a pack in a temporary file of pack_dir
 * (w->tmp_path), written, synced and read-only; sum gets its trailer. */
static int write_pack_file(struct pw_rp_compat *c, struct writer *w, struct pw_odb *wodb,
                           const char *wire_dir, const char *pack_dir,
                           const struct pw_oidmap *isnew, const struct pw_oid_array *all,
                           uint32_t count, uint8_t *sum, struct pw_error *err)
{
	uint8_t hdr[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2};
	struct pw_buf tmp = PW_BUF_INIT;
	int rc;

	w->expect = count;
	w->entries = calloc(count, sizeof(*w->entries));
	if (!w->entries || pw_buf_addf(&tmp, "%s/tmp_pack_XXXXXX", pack_dir)) {
		pw_buf_free(&tmp);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	w->tmp_path = pw_buf_detach(&tmp, NULL);
	if ((w->fd = pw_fs_mkstemp_mode(w->tmp_path, 0444)) < 0)
		return pw_error_set(err, PW_EIO, "unable to create %s: %s", w->tmp_path,
		                    strerror(errno));
	pw_hash_init_checksum(&w->hash, c->storage); /* the pack's trailer */
	hdr[8] = (uint8_t)(count >> 24);
	hdr[9] = (uint8_t)(count >> 16);
	hdr[10] = (uint8_t)(count >> 8);
	hdr[11] = (uint8_t)count;
	if ((rc = w_add(w, hdr, sizeof(hdr), err)) ||
	    (rc = write_objects(c, w, wodb, wire_dir, isnew, all, err)))
		return rc;
	if (w->nr != count)
		return pw_error_set(err, PW_ERROR,
		                    "compat receive: %u objects translated, %u counted",
		                    (unsigned)w->nr, (unsigned)count);
	pw_hash_final_checksum(&w->hash, sum);
	if (pw_buf_add(&w->out, sum, c->storage->rawsz))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if ((rc = w_flush(w, err)))
		return rc;
	if (fsync(w->fd))
		return pw_error_set(err, PW_EIO, "unable to write %s: %s", w->tmp_path,
		                    strerror(errno));
	return 0;
}

/* The pack's .idx into a temporary file of pack_dir (its name in idx_tmp,
 * left there on failure for the caller to remove), written, synced and
 * read-only. Two objects with one storage id refuse the push. */
static int write_idx_file(struct pw_rp_compat *c, struct writer *w, uint32_t count,
                          const uint8_t *sum, const char *pack_dir, struct pw_buf *idx_tmp,
                          struct pw_error *err)
{
	struct pw_idx_entry **sorted = calloc(count, sizeof(*sorted));
	int rc = 0, fd = -1;

	if (!sorted)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (uint32_t i = 0; i < count; i++)
		sorted[i] = &w->entries[i];
	qsort(sorted, count, sizeof(*sorted), pw_idx_entry_cmp);
	for (uint32_t i = 1; i < count && !rc; i++)
		if (pw_oid_equal(&sorted[i - 1]->oid, &sorted[i]->oid)) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(err, PW_ECORRUPT,
			                  "two pushed objects translate to the same %s object %s",
			                  c->storage->name, pw_oid_to_hex(&sorted[i]->oid, hex));
		}
	if (!rc && pw_buf_addf(idx_tmp, "%s/tmp_idx_XXXXXX", pack_dir))
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	if (!rc && (fd = pw_fs_mkstemp_mode(idx_tmp->data, 0444)) < 0) {
		rc = pw_error_set(err, PW_EIO, "unable to create %s: %s", idx_tmp->data,
		                  strerror(errno));
		pw_buf_reset(idx_tmp);
	}
	if (!rc)
		rc = pw_idx_write_fd(c->storage, (const struct pw_idx_entry *const *)sorted, count,
		                     sum, NULL, fd, NULL, err);
	if (!rc && (fsync(fd) || close(fd))) {
		fd = -1;
		rc = pw_error_set(err, PW_EIO, "unable to write %s: %s", idx_tmp->data,
		                  strerror(errno));
	} else if (!rc) {
		fd = -1;
	}
	if (fd >= 0)
		close(fd);
	free(sorted);
	return rc;
}

/* The .pack, then the side file (it reads the .idx at its final name,
 * renamed first inside the quarantine), then the .idx in place: a reader
 * never sees an .idx without its pack. */
static int publish(struct pw_rp_compat *c, struct writer *w, struct pw_buf *idx_tmp,
                   const char *pack_dir, const char *hex, pw_rp_publish_fn before,
                   void *before_data, struct pw_buf *idx_path, struct pw_error *err)
{
	int rc;

	if ((rc = rename_to(w->tmp_path, pack_dir, hex, "pack", err)))
		return rc;
	free(w->tmp_path);
	w->tmp_path = NULL;
	if (pw_buf_addf(idx_path, "%s/pack-%s.idx", pack_dir, hex))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (rename(idx_tmp->data, idx_path->data))
		return pw_error_set(err, PW_EIO, "unable to rename %s: %s", idx_tmp->data,
		                    strerror(errno));
	pw_buf_reset(idx_tmp);
	return pw_compat__pack_map_write(idx_path->data, c->storage, reverse_cb, c->imp, before,
	                                 before_data, NULL, err);
}

int pw_rp_compat_import(struct pw_rp_compat *c, const char *wire_dir, const char *pack_dir,
                        pw_rp_publish_fn before, void *before_data, char *hex_out, uint32_t *nr,
                        struct pw_error *err)
{
	struct pw_odb *wodb = NULL;
	struct pw_oid_array all = {0};
	struct pw_oidmap isnew = PW_OIDMAP_INIT;
	struct writer w;
	struct pw_buf idx_tmp = PW_BUF_INIT, idx_path = PW_BUF_INIT;
	uint8_t sum[PW_MAX_RAWSZ];
	uint32_t count = 0;
	int rc;

	memset(&w, 0, sizeof(w));
	w.fd = -1;
	w.algo = c->storage;
	pw_buf_init(&w.out, 0);
	pw_buf_init(&w.z, 0);
	hex_out[0] = '\0';
	*nr = 0;
	pw_compat_xlate_free(c->imp);
	c->imp = NULL;
	if ((rc = pw_odb_open(&wodb, wire_dir, c->wire, err)))
		return rc;
	/* most look-ups of a push miss: no file checks on each */
	pw_compat__map_set_reload(c->map, 0);
	if ((rc = pw_odb_foreach(wodb, collect_cb, &all))) {
		rc = rc == PW_ENOMEM ? pw_error_set(err, rc, "out of memory")
		                     : pw_error_copy(err, pw_odb_error(wodb));
		goto out;
	}
	if ((rc = find_cut(c, wodb, &all, err)) || (rc = find_new(c, &all, &isnew, &count, err)) ||
	    (rc = translate_all(c, wodb, &all, count, err)) ||
	    (rc = publish_links(c, before, before_data, err)) || !count)
		goto out; /* !count: nothing new, the ids are all known */
	if ((rc = write_pack_file(c, &w, wodb, wire_dir, pack_dir, &isnew, &all, count, sum,
	                          err)) ||
	    (rc = write_idx_file(c, &w, count, sum, pack_dir, &idx_tmp, err)))
		goto out;
	for (size_t i = 0; i < c->storage->rawsz; i++)
		snprintf(hex_out + 2 * i, 3, "%02x", sum[i]);
	if ((rc = publish(c, &w, &idx_tmp, pack_dir, hex_out, before, before_data, &idx_path, err)))
		goto out;
	*nr = count;
out:
	if (w.fd >= 0)
		close(w.fd);
	if (w.tmp_path)
		unlink(w.tmp_path);
	if (idx_tmp.len)
		unlink(idx_tmp.data);
	if (rc && hex_out[0]) {
		/* leave nothing half-made behind (the quarantine goes anyway) */
		static const char *const exts[] = {"idx", "compat", "pack"};

		for (size_t k = 0; k < 3; k++) {
			pw_buf_reset(&idx_path);
			if (!pw_buf_addf(&idx_path, "%s/pack-%s.%s", pack_dir, hex_out, exts[k]))
				unlink(idx_path.data);
		}
		hex_out[0] = '\0';
	}
	free(w.tmp_path);
	if (w.comp)
		libdeflate_free_compressor(w.comp);
	free(w.entries);
	pw_buf_free(&w.out);
	pw_buf_free(&w.z);
	pw_buf_free(&idx_tmp);
	pw_buf_free(&idx_path);
	free(all.v);
	pw_oidmap_free(&isnew);
	pw_odb_free(wodb);
	return rc;
}

const char *pw_rp_compat_cmd(struct pw_rp_compat *c, struct pw_receive_cmd *cmd,
                             struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid st;

	if (pw_oid_is_zero(&cmd->old_oid)) {
		pw_oid_zero(&cmd->old_oid, c->storage);
	} else if (pw_rp_compat_to_storage(c, &cmd->old_oid, &st)) {
		pw_error_set(err, PW_ENOTFOUND, "%s: old value %s is not a known %s id", cmd->name,
		             pw_oid_to_hex(&cmd->old_oid, hex), c->wire->name);
		return "stale info";
	} else {
		cmd->old_oid = st;
	}
	if (pw_oid_is_zero(&cmd->new_oid)) {
		pw_oid_zero(&cmd->new_oid, c->storage);
	} else if (pw_rp_compat_to_storage(c, &cmd->new_oid, &st)) {
		pw_error_set(err, PW_ENOTFOUND, "%s: %s object %s was neither pushed nor known",
		             cmd->name, c->wire->name, pw_oid_to_hex(&cmd->new_oid, hex));
		return "missing necessary objects";
	} else {
		cmd->new_oid = st;
	}
	return NULL;
}

/* ---- native pushes into a repository with a compat map ------------------- */

int pw_rp_compat_note_quarantine(struct pw_repo *repo, const char *read_dir, const char *pack_dir,
                                 struct pw_compat_submodules *subs, pw_rp_publish_fn before,
                                 void *before_data, struct pw_error *err)
{
	const struct pw_hash_algo *compat = pw_repo_compat_algo(repo);
	struct pw_compat_map *map = NULL;
	DIR *d;
	struct dirent *de;
	int rc;

	if (!compat || !(d = opendir(pack_dir)))
		return 0;
	if ((rc = pw_compat_map_open(&map, pw_repo_objects_dir(repo), pw_repo_algo(repo), compat,
	                             err))) {
		closedir(d);
		return rc;
	}
	pw_compat_map_set_submodules(map, subs);
	while (!rc && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char *p;

		if (n < 10 || strncmp(de->d_name, "pack-", 5) || strcmp(de->d_name + n - 4, ".idx"))
			continue;
		if (!(p = pw_path_join(pack_dir, de->d_name))) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
		rc = pw_compat__map_add_pack(map, read_dir, p, before, before_data, err);
		free(p);
	}
	closedir(d);
	pw_compat_map_free(map);
	return rc;
}
