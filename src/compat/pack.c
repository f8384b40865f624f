/* A pack in the compat algorithm: the pack writer (pack-write.c) with a
 * translation of ids through the map and of content through
 * pw_compat_convert. Blobs keep their packed entries, deltas included. */
#include <stdlib.h>
#include <string.h>

#include "compat/map-priv.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"

/* The ids met, both of them in one slot (one cache line), in a
 * direct-mapped table indexed by the storage id's first bytes: the entries
 * of a tree are met again in the next version of that tree, and the base of
 * a delta is translated right after its target. Bounded (4 MiB a thread);
 * a miss costs a map look-up, about an .idx look-up. A slot whose storage
 * id is all zero is free (that id is never cached). */
struct cache_slot {
	uint8_t storage[32], compat[32];
};
#define FRONT_SLOTS 65536
struct cache {
	struct cache_slot *front;
};

static size_t slot_of(const uint8_t *id, size_t mask)
{
	uint64_t h;

	memcpy(&h, id, sizeof(h)); /* ids are uniformly distributed */
	return (size_t)h & mask;
}

/* What one thread of the writer looks ids up in: a complete set of pairs
 * (read-only, shared), or a map handle of its own with a cache of the ids
 * met. */
struct side {
	struct pw_compat_pack *cp;
	const struct pw_compat_pairs *pairs;
	struct pw_compat_map *map;
	int own_map;
	struct cache cache;
};

struct pw_compat_pack {
	const struct pw_hash_algo *storage, *compat;
	struct side side[2];
	int nsides;
};

/* The id without the table: the pairs, or the map. */
static int side_lookup_slow(struct side *sd, const struct pw_oid *s, struct pw_oid *c)
{
	const struct pw_compat_pair *p;

	if (sd->pairs) {
		if (!(p = pw_compat_pairs_by_storage(sd->pairs, s)))
			return PW_ENOTFOUND;
		*c = p->compat;
		return 0;
	}
	return pw_compat_from_storage(sd->map, s, c);
}

static int side_lookup(struct side *sd, const struct pw_oid *s, struct pw_oid *c)
{
	struct cache_slot *f;
	int rc;

	if (pw_oid_is_zero(s)) /* free slots look like it: never cached */
		return side_lookup_slow(sd, s, c);
	if (!sd->cache.front && !(sd->cache.front = calloc(FRONT_SLOTS, sizeof(*f))))
		return PW_ENOMEM;
	f = &sd->cache.front[slot_of(s->id, FRONT_SLOTS - 1)];
	if (!memcmp(f->storage, s->id, 32)) {
		pw_oid_from_raw(c, f->compat, sd->cp->compat);
		return 0;
	}
	if ((rc = side_lookup_slow(sd, s, c)))
		return rc;
	memcpy(f->storage, s->id, 32);
	memcpy(f->compat, c->id, 32);
	return 0;
}

static int lookup_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return side_lookup(data, from, out);
}

static int tr_oid(void *data, const struct pw_oid *in, struct pw_oid *out, struct pw_error *err)
{
	struct side *sd = data;
	char hex[PW_MAX_HEXSZ + 1];
	int rc = side_lookup(sd, in, out);

	if (!rc)
		return 0;
	if (rc == PW_ENOTFOUND)
		return pw_error_set(err, rc, "object %s has no %s id: run 'packwire compat build'",
		                    pw_oid_to_hex(in, hex), sd->cp->compat->name);
	if (rc == PW_ENOMEM)
		return pw_error_set(err, rc, "out of memory");
	return pw_error_copy(err, pw_compat_map_error(sd->map));
}

static int tr_content(void *data, int type, const void *in, size_t len, struct pw_buf *out,
                      struct pw_error *err)
{
	struct side *sd = data;

	return pw_compat_convert(out, type, in, len, sd->cp->storage, sd->cp->compat, lookup_cb, sd,
	                         err);
}

static int new_pack(struct pw_compat_pack **out, const struct pw_hash_algo *storage,
                    const struct pw_hash_algo *compat, struct pw_error *err)
{
	struct pw_compat_pack *cp = calloc(1, sizeof(*cp));

	*out = NULL;
	if (!cp)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	cp->storage = storage;
	cp->compat = compat;
	cp->side[0].cp = cp->side[1].cp = cp;
	*out = cp;
	return 0;
}

int pw_compat_pack_new(struct pw_compat_pack **out, struct pw_compat_map *map,
                       const char *objects_dir, struct pw_error *err)
{
	struct pw_compat_pack *cp;
	int rc;

	if ((rc = new_pack(&cp, pw_compat_map_storage_algo(map), pw_compat_map_compat_algo(map),
	                   err)))
		return rc;
	cp->side[0].map = map;
	cp->nsides = 1;
	/* the second search thread gets its own handle; without one the
	 * writer searches on one thread */
	if (objects_dir &&
	    !pw_compat_map_open(&cp->side[1].map, objects_dir, cp->storage, cp->compat, err)) {
		cp->side[1].own_map = 1;
		cp->nsides = 2;
	}
	pw_error_clear(err);
	*out = cp;
	return 0;
}

int pw_compat_pack__from_pairs(struct pw_compat_pack **out, const struct pw_compat_pairs *pairs,
                               const struct pw_hash_algo *storage,
                               const struct pw_hash_algo *compat, struct pw_error *err)
{
	struct pw_compat_pack *cp;
	int rc;

	if ((rc = new_pack(&cp, storage, compat, err)))
		return rc;
	cp->side[0].pairs = cp->side[1].pairs = pairs;
	cp->nsides = 2;
	*out = cp;
	return 0;
}

void pw_compat_pack_translation(struct pw_compat_pack *cp, struct pw_pack_translate *t)
{
	memset(t, 0, sizeof(*t));
	t->algo = cp->compat;
	t->oid = tr_oid;
	t->content = tr_content;
	t->data = &cp->side[0];
	t->data2 = cp->nsides > 1 ? &cp->side[1] : NULL;
}

void pw_compat_pack_free(struct pw_compat_pack *cp)
{
	if (!cp)
		return;
	for (int i = 0; i < 2; i++) {
		if (cp->side[i].own_map)
			pw_compat_map_free(cp->side[i].map);
		free(cp->side[i].cache.front);
	}
	free(cp);
}

int pw_compat_write_pack(struct pw_odb *odb, struct pw_compat_map *map, const struct pw_oid *oids,
                         size_t nr, pw_compat_out_fn fn, void *ctx, uint8_t *checksum,
                         struct pw_error *err)
{
	struct pw_compat_pack *cp = NULL;
	struct pw_pack_writer *w = NULL;
	struct pw_pack_translate t;
	int rc;

	if (pw_odb_algo(odb) != pw_compat_map_storage_algo(map))
		return pw_error_set(err, PW_EINVAL,
		                    "compat pack: the odb is not the map's storage");
	if ((rc = pw_compat_pack_new(&cp, map, NULL, err)))
		return rc;
	if ((rc = pw_pack_writer_new(&w, odb, NULL))) {
		pw_compat_pack_free(cp);
		return pw_error_set(err, rc, "out of memory");
	}
	pw_compat_pack_translation(cp, &t);
	rc = pw_pack_writer_set_translate(w, &t);
	for (size_t i = 0; i < nr && !rc; i++)
		rc = pw_pack_writer_add(w, &oids[i], PW_OBJ_NONE, NULL, 0);
	if (!rc)
		rc = pw_pack_writer_write(w, fn, ctx, checksum);
	if (rc)
		pw_error_copy(err, pw_pack_writer_error(w));
	pw_pack_writer_free(w);
	pw_compat_pack_free(cp);
	return rc;
}
