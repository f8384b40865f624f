/* Object enumeration with a reachability bitmap, and the pack written from
 * it.
 *
 * A tip whose commit has a stored bitmap contributes that bitmap; any other
 * tip is walked (commits, tags, trees) until the walk meets objects already
 * in the set, which are reachability-closed. Commits without a bitmap are
 * walked newest first, and trees only once no commit is left: a walk that
 * followed parents depth-first would go down an old side branch, far from
 * any bitmap, before it met the bitmap of a commit a few steps away. Exclusions are resolved first,
 * so the walk of the tips also stops at what the receiver has. Objects
 * outside the bitmapped pack (pushed since the last repack) are walked
 * through the odb and kept in a small side list. The pack is then the
 * bitmapped pack's entries in pack order, copied, followed by those extra
 * objects, whole. */
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pack/bitmap.h"
#include "pack/delta-create.h"
#include "odb/commit-queue.h"
#include "odb/entry.h"
#include "odb/odb-priv.h"
#include "odb/pack.h"
#include "packwire/object.h"
#include "hash/oidmap.h"
#include "util/bigmem.h"

/* An object outside the bitmapped pack (loose, or in a newer pack), reached
 * by the walk: from the excluded side, the included side or both. */
enum { X_HAVE = 1, X_WANT = 2 };
struct xobj {
	struct pw_oid oid;
	uint8_t side;
	uint8_t type;
};

#define MAX_EXTRAS_BASE 4096
/* Delta bases kept while reading trees and re-encoding deltas. Walking
 * newer to older, the next tree's chain passes through the last one read,
 * so a small cache answers it; a larger one only costs fresh pages (a
 * fetch of 100 commits of v2.0.0: 16 MiB 3,600 page faults, 1 MiB 2,400,
 * the same deltas applied). */
#define CACHE_LIMIT ((size_t)1 << 20)

struct pw_bitmap_walk {
	struct pw_odb *odb;
	struct pw_pack *pack; /* borrowed from the odb */
	struct pw_bitmap *bm;
	struct pw_base_cache *cache; /* our own, smaller than the odb's */
	uint32_t *htab;              /* see build_hash */
	size_t lookups;              /* by binary search, before htab (find_raw) */
	uint32_t *memo;              /* see find_raw: MEMO_SLOTS idx positions + 1 */
	size_t hmask;
	struct pw_bitset result, haves, tmp;
	struct pw_oid *tips;
	uint8_t *exclude;
	size_t ntips, atips;
	uint32_t *stack; /* pack positions; nr + k for extras[k] */
	size_t nstack, astack;
	struct pw_commit_queue queue; /* pack positions of commits to walk, by date */
	/* the set being filled and the one that stops the walk (drain's) */
	struct pw_bitset *into;
	const struct pw_bitset *stop;
	struct xobj *extras;
	size_t nextras, aextras;
	struct pw_oidmap extra_map; /* oid -> index + 1 */
	struct pw_buf buf;
	struct pw_error err;
	int ran;
};

static int nomem(struct pw_bitmap_walk *w)
{
	return pw_error_set(&w->err, PW_ENOMEM, "bitmap walk: out of memory");
}

const struct pw_error *pw_bitmap_walk_error(const struct pw_bitmap_walk *w)
{
	return &w->err;
}

void pw_bitmap_walk_free(struct pw_bitmap_walk *w)
{
	if (!w)
		return;
	pw_bitmap_free(w->bm);
	free(w->htab);
	free(w->memo);
	pw_base_cache_free(w->cache);
	pw_bitset_free(&w->result);
	pw_bitset_free(&w->haves);
	pw_bitset_free(&w->tmp);
	free(w->tips);
	free(w->exclude);
	free(w->stack);
	pw_commit_queue_free(&w->queue);
	free(w->extras);
	pw_oidmap_free(&w->extra_map);
	pw_buf_free(&w->buf);
	free(w);
}

static int setup(struct pw_bitmap_walk *w, struct pw_pack *pack, struct pw_bitmap *bm)
{
	uint32_t i, nr = pack->nr;
	int rc;

	if ((rc = pw_pack_revindex(pack, &w->err)))
		return rc;
	for (i = 0; i < bm->nr_entries; i++)
		if (pw_bitmap_type(bm, w->pack->pack_pos[bm->entries[i].idx_pos]) != PW_OBJ_COMMIT)
			return pw_error_set(&w->err, PW_ECORRUPT,
			                    "bitmap: entry %u does not name a commit", i);
	if (pw_bitset_init(&w->result, nr) || pw_bitset_init(&w->haves, nr) ||
	    pw_bitset_init(&w->tmp, nr))
		return nomem(w);
	return 0;
}

int pw_bitmap_walk_new(struct pw_bitmap_walk **out, struct pw_odb *odb, struct pw_error *err)
{
	struct pw_bitmap_walk *w;
	size_t n, count = pw_odb_pack_count(odb);
	int rc = PW_ENOTFOUND;

	*out = NULL;
	pw_error_set(err, PW_ENOTFOUND, "no pack has a bitmap");
	if (!(w = calloc(1, sizeof(*w))))
		return pw_error_set(err, PW_ENOMEM, "bitmap walk: out of memory");
	w->odb = odb;
	w->buf = (struct pw_buf)PW_BUF_INIT;
	if (pw_base_cache_new(&w->cache, CACHE_LIMIT)) {
		free(w);
		return pw_error_set(err, PW_ENOMEM, "bitmap walk: out of memory");
	}
	for (n = 0; n < count; n++) {
		struct pw_pack *pack;
		struct pw_bitmap *bm;
		struct pw_error e = {0};

		if (pw_odb_pack(odb, n, &pack))
			continue;
		rc = pw_bitmap_open(&bm, pack, &e);
		if (rc == PW_ENOTFOUND)
			continue;
		if (rc) {
			pw_error_copy(err, &e);
			continue;
		}
		w->pack = pack;
		w->bm = bm;
		if ((rc = setup(w, pack, bm))) {
			pw_error_copy(err, &w->err);
			pw_bitmap_walk_free(w);
			return rc == PW_ENOMEM ? rc : PW_ENOTFOUND;
		}
		pw_error_clear(err);
		*out = w;
		return 0;
	}
	pw_bitmap_walk_free(w);
	return PW_ENOTFOUND;
}

int pw_bitmap_walk_add(struct pw_bitmap_walk *w, const struct pw_oid *oid, int exclude)
{
	if (w->ntips == w->atips) {
		size_t na = w->atips ? w->atips * 2 : 16;
		struct pw_oid *nt = realloc(w->tips, na * sizeof(*nt));
		uint8_t *ne;

		if (!nt)
			return nomem(w);
		w->tips = nt;
		if (!(ne = realloc(w->exclude, na)))
			return nomem(w);
		w->exclude = ne;
		w->atips = na;
	}
	w->tips[w->ntips] = *oid;
	w->exclude[w->ntips++] = !!exclude;
	return 0;
}

/* The idx as a hash table (open addressing, idx position + 1 per slot):
 * walking trees looks up every entry, and a probe or two beats a binary
 * search over the whole idx. Built once a walk has made HASH_AFTER lookups;
 * -1 (and binary search stays) when its memory cannot be had. */
static int build_hash(struct pw_bitmap_walk *w)
{
	const struct pw_idx *idx = w->pack->idx;
	size_t cap = 1024, i;

	while (cap < (size_t)idx->nr * 2)
		cap *= 2;
	if (!(w->htab = calloc(cap, sizeof(*w->htab))))
		return -1;
	w->hmask = cap - 1;
	for (i = 0; i < idx->nr; i++) {
		size_t h = pw_get_be32(pw_idx_nth_raw(idx, (uint32_t)i) + 4) & w->hmask;

		while (w->htab[h])
			h = (h + 1) & w->hmask;
		w->htab[h] = (uint32_t)i + 1;
	}
	return 0;
}

/* Tree entries looked up by binary search before the hash table is built: a
 * small fetch walks a few hundred trees, and the table would cost a pass over
 * the whole idx (its pages stay resident) and 8 bytes an object. Only
 * lookups the memo did not answer count. */
#define HASH_AFTER 32768
/* The trees of neighbouring commits share most entries: the last idx
 * position found for each of MEMO_SLOTS buckets (direct mapped, checked
 * against the idx name, so a collision only costs a search) answers most
 * lookups of a fetch's walk without a binary search or the table. */
#define MEMO_SLOTS 16384

static int idx_search(struct pw_bitmap_walk *w, const uint8_t *raw, uint32_t *ipos)
{
	const struct pw_idx *idx = w->pack->idx;
	size_t slot = (pw_get_be32(raw + 4) ^ pw_get_be32(raw + 8)) & (MEMO_SLOTS - 1);

	if (!w->memo && !(w->memo = calloc(MEMO_SLOTS, sizeof(*w->memo))))
		return pw_idx_find(idx, raw, ipos);
	if (w->memo[slot] &&
	    !memcmp(pw_idx_nth_raw(idx, w->memo[slot] - 1), raw, w->pack->algo->rawsz)) {
		*ipos = w->memo[slot] - 1;
		return 1;
	}
	w->lookups++;
	if (!pw_idx_find(idx, raw, ipos))
		return 0;
	w->memo[slot] = *ipos + 1;
	return 1;
}

/* find_pos for a raw id of the pack's algorithm: the memo and binary search
 * for the first HASH_AFTER searches, then the hash table. */
static int find_raw(struct pw_bitmap_walk *w, const uint8_t *raw, uint32_t *pos)
{
	const struct pw_idx *idx = w->pack->idx;
	size_t rawsz = w->pack->algo->rawsz, h;
	uint64_t key = pw_get_be64(raw);
	uint32_t ipos;

	/* (a table that cannot be had is tried again HASH_AFTER searches later) */
	if (!w->htab && (w->lookups % HASH_AFTER != HASH_AFTER - 1 || build_hash(w))) {
		if (!idx_search(w, raw, &ipos))
			return 0;
		*pos = w->pack->pack_pos[ipos];
		return 1;
	}
	for (h = pw_get_be32(raw + 4) & w->hmask; w->htab[h]; h = (h + 1) & w->hmask) {
		const uint8_t *name = pw_idx_nth_raw(idx, w->htab[h] - 1);

		if (pw_get_be64(name) == key && !memcmp(name + 8, raw + 8, rawsz - 8)) {
			*pos = w->pack->pack_pos[w->htab[h] - 1];
			return 1;
		}
	}
	return 0;
}

/* The next entry of the tree in w->buf: 1 with its mode and raw id, 0 at
 * the end, PW_ECORRUPT. (Lighter than pw_tree_next: no id copy.) */
static int tree_entry(struct pw_bitmap_walk *w, size_t *off, unsigned *mode, const uint8_t **raw)
{
	const uint8_t *p = (const uint8_t *)w->buf.data, *nul;
	size_t len = w->buf.len, i = *off, rawsz = w->pack->algo->rawsz;
	unsigned m = 0;

	if (i >= len)
		return 0;
	for (; i < len && p[i] != ' '; i++) {
		if (p[i] < '0' || p[i] > '7' || m > 0777777)
			goto bad;
		m = m * 8 + (unsigned)(p[i] - '0');
	}
	if (i == *off || i >= len)
		goto bad;
	i++;
	if (!(nul = memchr(p + i, 0, len - i)) || nul == p + i)
		goto bad;
	i = (size_t)(nul - p) + 1;
	if (len - i < rawsz)
		goto bad;
	*mode = m;
	*raw = p + i;
	*off = i + rawsz;
	return 1;
bad:
	return pw_error_set(&w->err, PW_ECORRUPT, "bitmap walk: malformed tree entry");
}

/* Pack position of an object of the bitmapped pack: 1, or 0 when absent. */
static int find_pos(const struct pw_bitmap_walk *w, const struct pw_oid *oid, uint32_t *pos)
{
	uint32_t ipos;

	if (oid->algo != w->pack->algo->id || !pw_idx_find(w->pack->idx, oid->id, &ipos))
		return 0;
	*pos = w->pack->pack_pos[ipos];
	return 1;
}

static int push(struct pw_bitmap_walk *w, uint32_t pos)
{
	if (w->nstack == w->astack) {
		size_t na = w->astack ? w->astack * 2 : 256;
		uint32_t *ns = realloc(w->stack, na * sizeof(*ns));

		if (!ns)
			return nomem(w);
		w->stack = ns;
		w->astack = na;
	}
	w->stack[w->nstack++] = pos;
	return 0;
}

/* The extras entry of an object outside the pack (created on first use). */
static int extra_index(struct pw_bitmap_walk *w, const struct pw_oid *oid, size_t *k)
{
	struct pw_oidmap_entry *e;
	int created;

	if (!(e = pw_oidmap_put(&w->extra_map, oid, &created)))
		return nomem(w);
	if (created) {
		if (w->nextras == w->aextras) {
			size_t na = w->aextras ? w->aextras * 2 : 64;
			struct xobj *nx = realloc(w->extras, na * sizeof(*nx));

			if (!nx)
				return nomem(w);
			w->extras = nx;
			w->aextras = na;
		}
		/* they go out whole, without deltas: when there are many, the
		 * bitmap is too old to be worth it and the walk does better */
		if (w->nextras >= MAX_EXTRAS_BASE + w->pack->nr / 16)
			return pw_error_set(&w->err, PW_ENOTFOUND,
			                    "bitmap walk: too many objects outside the bitmapped "
			                    "pack");
		w->extras[w->nextras].oid = *oid;
		w->extras[w->nextras].side = 0;
		w->extras[w->nextras].type = PW_OBJ_NONE;
		e->value = (void *)(uintptr_t)(w->nextras + 1);
		w->nextras++;
	}
	*k = (size_t)(uintptr_t)e->value - 1;
	return 0;
}

static int push_oid(struct pw_bitmap_walk *w, const struct pw_oid *oid)
{
	uint32_t pos;
	size_t k;
	int rc;

	if (find_pos(w, oid, &pos))
		return push(w, pos);
	if ((rc = extra_index(w, oid, &k)))
		return rc;
	return push(w, w->pack->nr + (uint32_t)k);
}

static int read_at(struct pw_bitmap_walk *w, uint32_t pos, int want_type);

/* A commit of the pack that the walk reached: its bitmap goes into the set
 * at once; without one it waits in the queue, by its committer time. */
static int queue_commit(struct pw_bitmap_walk *w, uint32_t pos)
{
	struct pw_commit_info ci;
	uint32_t entry;
	int64_t time;
	int rc;

	if (pw_bitset_get(w->into, pos) || (w->stop && pw_bitset_get(w->stop, pos)))
		return 0;
	if (pw_bitmap_find(w->bm, w->pack->rev_pos[pos], &entry))
		return pw_bitmap_get(w->bm, entry, w->into, &w->tmp, &w->err);
	if ((rc = read_at(w, pos, PW_OBJ_COMMIT)))
		return rc;
	if ((rc = pw_commit_parse(&ci, (const char *)w->buf.data, w->buf.len, w->pack->algo,
	                          &w->err)))
		return rc;
	time = ci.commit_time;
	pw_commit_info_free(&ci);
	return pw_commit_queue_push(&w->queue, pos, time) ? nomem(w) : 0;
}

/* Queue what the commit or tag in w->buf points to. */
static int push_links(struct pw_bitmap_walk *w, int type)
{
	const struct pw_hash_algo *algo = w->pack->algo;
	int rc;

	if (type == PW_OBJ_TAG) {
		struct pw_tag_info ti;

		if ((rc = pw_tag_parse(&ti, (const char *)w->buf.data, w->buf.len, algo, &w->err)))
			return rc;
		return push_oid(w, &ti.object);
	} else {
		struct pw_commit_info ci;
		size_t j;

		if ((rc = pw_commit_parse(&ci, (const char *)w->buf.data, w->buf.len, algo,
		                          &w->err)))
			return rc;
		/* the tree waits on the stack until no commit is left */
		rc = push_oid(w, &ci.tree);
		for (j = 0; !rc && j < ci.nr_parents; j++) {
			uint32_t pos;

			if (find_pos(w, &ci.parents[j], &pos) &&
			    pw_bitmap_type(w->bm, pos) == PW_OBJ_COMMIT)
				rc = queue_commit(w, pos);
			else
				rc = push_oid(w, &ci.parents[j]);
		}
		pw_commit_info_free(&ci);
		return rc;
	}
}

static int read_at(struct pw_bitmap_walk *w, uint32_t pos, int want_type)
{
	int type, rc;

	pw_buf_reset(&w->buf);
	rc = pw_pack_read(w->pack, pw_pack_pos_offset(w->pack, pos), w->cache, &type, &w->buf,
	                  &w->err);
	if (rc)
		return rc;
	if (type != want_type)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "bitmap: object at pack position %u is a %s, not a %s", pos,
		                    pw_object_type_name(type), pw_object_type_name(want_type));
	return 0;
}

/* An object outside the pack: read it from the odb and queue what it
 * references. `side` is X_WANT when walking the tips (stopping at X_HAVE). */
static int drain_extra(struct pw_bitmap_walk *w, size_t k, int side)
{
	const struct pw_hash_algo *algo = w->pack->algo;
	struct pw_oid oid;
	int type, rc;

	if (w->extras[k].side & (side | X_HAVE))
		return 0;
	w->extras[k].side |= (uint8_t)side;
	oid = w->extras[k].oid;
	pw_buf_reset(&w->buf);
	if (pw_odb_read(w->odb, &oid, &type, &w->buf)) {
		pw_error_copy(&w->err, pw_odb_error(w->odb));
		return w->err.code ? w->err.code : PW_ENOTFOUND;
	}
	w->extras[k].type = (uint8_t)type;
	switch (type) {
	case PW_OBJ_COMMIT:
	case PW_OBJ_TAG:
		return push_links(w, type);
	case PW_OBJ_TREE: {
		struct pw_tree_entry te;
		size_t off = 0;

		/* the buffer is reused by the next read: queue everything first */
		while ((rc = pw_tree_next((const char *)w->buf.data, w->buf.len, &off, algo, &te,
		                          &w->err)) == 1)
			if ((te.mode & 0170000) != 0160000 && (rc = push_oid(w, &te.oid)))
				return rc;
		return rc < 0 ? rc : 0;
	}
	case PW_OBJ_BLOB:
		return 0;
	default:
		return pw_error_set(&w->err, PW_ECORRUPT, "bitmap walk: object of type %d", type);
	}
}

/* Add everything reachable from the queued positions to `into`, stopping at
 * objects already in `into` or in `stop` (both closed under reachability). */
static int drain(struct pw_bitmap_walk *w, struct pw_bitset *into, const struct pw_bitset *stop)
{
	const struct pw_hash_algo *algo = w->pack->algo;
	int rc;

	w->into = into;
	w->stop = stop;
	for (;;) {
		uint32_t pos;
		int type;

		if (w->queue.nr) {
			/* the newest commit waiting */
			pos = (uint32_t)pw_commit_queue_pop(&w->queue, NULL);
			if (pw_bitset_get(into, pos) || (stop && pw_bitset_get(stop, pos)))
				continue;
			pw_bitset_set(into, pos);
			if ((rc = read_at(w, pos, PW_OBJ_COMMIT)) ||
			    (rc = push_links(w, PW_OBJ_COMMIT)))
				return rc;
			continue;
		}
		if (!w->nstack)
			break;
		pos = w->stack[--w->nstack];
		if (pos >= w->pack->nr) {
			if ((rc = drain_extra(w, pos - w->pack->nr, stop ? X_WANT : X_HAVE)))
				return rc;
			continue;
		}
		type = pw_bitmap_type(w->bm, pos);
		if (pw_bitset_get(into, pos) || (stop && pw_bitset_get(stop, pos)))
			continue;
		switch (type) {
		case PW_OBJ_COMMIT:
			if ((rc = queue_commit(w, pos)))
				return rc;
			break;
		case PW_OBJ_TAG:
			pw_bitset_set(into, pos);
			if ((rc = read_at(w, pos, type)) || (rc = push_links(w, type)))
				return rc;
			break;
		case PW_OBJ_TREE: {
			const uint8_t *raw = NULL;
			unsigned mode = 0;
			size_t off = 0;

			pw_bitset_set(into, pos);
			if ((rc = read_at(w, pos, type)))
				return rc;
			while ((rc = tree_entry(w, &off, &mode, &raw)) == 1) {
				uint32_t p;

				if ((mode & 0170000) == 0160000) /* submodule commit */
					continue;
				if (!find_raw(w, raw, &p)) {
					struct pw_oid oid;

					pw_oid_from_raw(&oid, raw, algo);
					if ((rc = push_oid(w, &oid)))
						return rc;
					continue;
				}
				if ((mode & 0170000) == 0040000) {
					if ((rc = push(w, p)))
						return rc;
				} else if (!(stop && pw_bitset_get(stop, p))) {
					pw_bitset_set(into, p);
				}
			}
			if (rc < 0)
				return rc;
			break;
		}
		case PW_OBJ_BLOB:
			pw_bitset_set(into, pos);
			break;
		default:
			return pw_error_set(&w->err, PW_ECORRUPT,
			                    "bitmap: no type for pack position %u", pos);
		}
	}
	return 0;
}

int pw_bitmap_walk_run(struct pw_bitmap_walk *w)
{
	size_t i, k;
	int pass, rc;

	if (w->ran)
		return pw_error_set(&w->err, PW_EINVAL, "bitmap walk: run twice");
	w->ran = 1;
	/* exclusions first: the tips' walk stops at them */
	for (pass = 1; pass >= 0; pass--) {
		for (i = 0; i < w->ntips; i++) {
			if (w->exclude[i] != pass)
				continue;
			w->nstack = 0;
			if ((rc = push_oid(w, &w->tips[i])))
				return rc;
			if ((rc = drain(w, pass ? &w->haves : &w->result, pass ? NULL : &w->haves)))
				return rc;
		}
	}
	for (k = 0; k < w->result.nwords; k++)
		w->result.w[k] &= ~w->haves.w[k];
	return 0;
}

static int extra_sent(const struct xobj *x)
{
	return (x->side & (X_WANT | X_HAVE)) == X_WANT;
}

static int is_sent(const struct pw_bitmap_walk *w, const struct pw_oid *oid)
{
	const struct pw_oidmap_entry *e;
	uint32_t pos;

	if (find_pos(w, oid, &pos))
		return pw_bitset_get(&w->result, pos);
	e = pw_oidmap_get(&w->extra_map, oid);
	return e && extra_sent(&w->extras[(size_t)(uintptr_t)e->value - 1]);
}

int pw_bitmap_walk_include_tag(struct pw_bitmap_walk *w, const struct pw_oid *tag,
                               const struct pw_oid *peeled)
{
	struct pw_oid cur = *tag;
	int rc, type;

	if (!is_sent(w, peeled) || is_sent(w, tag))
		return 0;
	for (;;) {
		struct pw_tag_info ti;
		uint32_t pos;
		size_t k;

		if (find_pos(w, &cur, &pos)) {
			if (pw_bitmap_type(w->bm, pos) != PW_OBJ_TAG ||
			    pw_bitset_get(&w->haves, pos))
				return 0;
			pw_bitset_set(&w->result, pos);
			if ((rc = read_at(w, pos, PW_OBJ_TAG)))
				return rc;
		} else {
			if ((rc = extra_index(w, &cur, &k)))
				return rc;
			if (w->extras[k].side & X_HAVE)
				return 0;
			pw_buf_reset(&w->buf);
			if (pw_odb_read(w->odb, &cur, &type, &w->buf)) {
				pw_error_copy(&w->err, pw_odb_error(w->odb));
				return w->err.code ? w->err.code : PW_ENOTFOUND;
			}
			if (type != PW_OBJ_TAG)
				return 0;
			w->extras[k].side |= X_WANT;
			w->extras[k].type = PW_OBJ_TAG;
		}
		if ((rc = pw_tag_parse(&ti, (const char *)w->buf.data, w->buf.len, w->pack->algo,
		                       &w->err)))
			return rc;
		cur = ti.object;
	}
}

void pw_bitmap_walk_drop_blobs(struct pw_bitmap_walk *w)
{
	const struct pw_bitset *blobs = &w->bm->types[2];
	size_t i;
	uint32_t pos;

	for (i = 0; i < w->result.nwords; i++)
		w->result.w[i] &= ~blobs->w[i];
	for (i = 0; i < w->nextras; i++)
		if (w->extras[i].type == PW_OBJ_BLOB)
			w->extras[i].side &= (uint8_t)~X_WANT;
	/* blobs asked for by name stay */
	for (i = 0; i < w->ntips; i++) {
		const struct pw_oidmap_entry *e;

		if (w->exclude[i])
			continue;
		if (find_pos(w, &w->tips[i], &pos)) {
			if (pw_bitset_get(blobs, pos) && !pw_bitset_get(&w->haves, pos))
				pw_bitset_set(&w->result, pos);
		} else if ((e = pw_oidmap_get(&w->extra_map, &w->tips[i]))) {
			struct xobj *x = &w->extras[(size_t)(uintptr_t)e->value - 1];

			if (x->type == PW_OBJ_BLOB && !(x->side & X_HAVE))
				x->side |= X_WANT;
		}
	}
}

int pw_bitmap_walk_drop_large_blobs(struct pw_bitmap_walk *w, uint64_t limit)
{
	const struct pw_bitset *blobs = &w->bm->types[2];
	struct pw_oidmap tips = PW_OIDMAP_INIT;
	size_t i;
	int rc = 0, created, type;

	/* blobs asked for by name stay */
	for (i = 0; i < w->ntips; i++)
		if (!w->exclude[i] && !pw_oidmap_put(&tips, &w->tips[i], &created)) {
			pw_oidmap_free(&tips);
			return nomem(w);
		}
	for (i = 0; i < w->result.nwords && !rc; i++) {
		uint64_t word = w->result.w[i] & blobs->w[i];

		while (word) {
			uint32_t pos = (uint32_t)(i * 64 + (size_t)__builtin_ctzll(word));
			struct pw_oid oid;
			uint64_t size;

			word &= word - 1;
			if ((rc = pw_pack_read_header(w->pack, pw_pack_pos_offset(w->pack, pos),
			                              &type, &size, &w->err)))
				break;
			if (size < limit)
				continue;
			pw_idx_nth_oid(w->pack->idx, w->pack->rev_pos[pos], &oid);
			if (!pw_oidmap_get(&tips, &oid))
				w->result.w[i] &= ~((uint64_t)1 << (pos % 64));
		}
	}
	for (i = 0; i < w->nextras && !rc; i++) {
		struct xobj *x = &w->extras[i];
		uint64_t size;

		if (x->type != PW_OBJ_BLOB || !extra_sent(x) || pw_oidmap_get(&tips, &x->oid))
			continue;
		if (pw_odb_read_header(w->odb, &x->oid, &type, &size)) {
			rc = pw_error_copy(&w->err, pw_odb_error(w->odb));
			break;
		}
		if (size >= limit)
			x->side &= (uint8_t)~X_WANT;
	}
	pw_oidmap_free(&tips);
	return rc;
}

static uint32_t extras_sent(const struct pw_bitmap_walk *w)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < w->nextras; i++)
		n += (uint32_t)extra_sent(&w->extras[i]);
	return n;
}

uint32_t pw_bitmap_walk_count(const struct pw_bitmap_walk *w)
{
	return pw_bitset_count(&w->result) + extras_sent(w);
}

/* ---- writing ---------------------------------------------------------------- */

#define OUTBUF_SIZE (128 * 1024)
/* how far the copy moves on before the pack's pages behind it are released */
#define RELEASE_STEP ((uint64_t)1 << 20)

enum { E_COPY, E_OFS, E_REF, E_WHOLE };

struct out {
	struct pw_bitmap_walk *w;
	pw_pack_out_fn fn;
	void *ctx;
	uint8_t *buf;
	size_t len;
	uint64_t pos;
	struct pw_hash_ctx hash;
};

static int out_flush(struct out *o)
{
	int rc;

	if (!o->len)
		return 0;
	pw_hash_update(&o->hash, o->buf, o->len);
	rc = o->fn(o->ctx, o->buf, o->len, &o->w->err);
	o->len = 0;
	return rc;
}

static int out_add(struct out *o, const void *data, size_t len)
{
	const uint8_t *p = data;
	int rc;

	o->pos += len;
	while (len) {
		size_t n = OUTBUF_SIZE - o->len;

		if (n > len)
			n = len;
		memcpy(o->buf + o->len, p, n);
		o->len += n;
		p += n;
		len -= n;
		if (o->len == OUTBUF_SIZE && (rc = out_flush(o)))
			return rc;
	}
	return 0;
}

/* How the entry at pack position `pos` goes out; *base = base position for
 * E_OFS and E_REF (UINT32_MAX for a thin base). */
static int plan_entry(struct pw_bitmap_walk *w, const struct pw_bitmap_write_opts *opts,
                      uint32_t pos, struct pw_pack_entry_hdr *h, int *kind, uint32_t *base)
{
	struct pw_pack *pack = w->pack;
	uint64_t off = pw_pack_pos_offset(pack, pos), end = pw_pack_pos_offset(pack, pos + 1);
	int rc;

	if (end <= off || end > pack->size)
		return pw_error_set(&w->err, PW_ECORRUPT, "bitmap: bad entry extent at %llu",
		                    (unsigned long long)off);
	if ((rc = pw_pack_entry_hdr_decode(pack->data + off, (size_t)(end - off), pack->algo->rawsz,
	                                   off, h, &w->err)))
		return rc == PW_EMORE ? pw_error_set(&w->err, PW_ECORRUPT,
		                                     "bitmap: truncated entry at %llu",
		                                     (unsigned long long)off)
		                      : rc;
	*base = UINT32_MAX;
	if (h->type == PW_OBJ_OFS_DELTA || h->type == PW_OBJ_REF_DELTA) {
		uint32_t b;
		int found;

		if (h->type == PW_OBJ_OFS_DELTA) {
			found = pw_pack_pos_at_offset(pack, off - h->base_ofs, &b);
			if (!found)
				return pw_error_set(&w->err, PW_ECORRUPT,
				                    "bitmap: delta at %llu has no base entry",
				                    (unsigned long long)off);
		} else {
			uint32_t ipos;

			found = pw_idx_find(pack->idx, h->base_raw, &ipos);
			if (found)
				b = w->pack->pack_pos[ipos];
		}
		if (found && pw_bitset_get(&w->result, b)) {
			*base = b;
			*kind = h->type == PW_OBJ_OFS_DELTA && opts->ofs_delta ? E_OFS : E_REF;
		} else if (found && opts->thin && pw_bitset_get(&w->haves, b)) {
			*base = b;
			*kind = E_REF;
		} else {
			*kind = E_WHOLE;
		}
	} else {
		*kind = E_COPY;
	}
	return 0;
}

static int check_crc(struct pw_bitmap_walk *w, uint32_t pos)
{
	struct pw_pack *pack = w->pack;
	uint64_t off = pw_pack_pos_offset(pack, pos), end = pw_pack_pos_offset(pack, pos + 1);
	int has_crc;
	uint32_t want = pw_idx_nth_crc(pack->idx, pack->rev_pos[pos], &has_crc);

	if (!has_crc)
		return 0; /* idx v1: the client's index-pack checks the data */
	if (libdeflate_crc32(0, pack->data + off, (size_t)(end - off)) != want)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "bitmap: %s: CRC mismatch for the entry at %llu", pack->name,
		                    (unsigned long long)off);
	return 0;
}

static int deflate_out(struct out *o, struct libdeflate_compressor **comp, int type);

/* Where each sent entry of the pack starts in the output, kept for the
 * entries of the result only (a fetch sends a few hundred of a pack's
 * 100,000s): slot = the number of result entries before it, counted
 * from per-word totals. */
struct newoff {
	const struct pw_bitset *result;
	uint32_t *before; /* result entries in the words before each word */
	uint64_t *at;
};

static int newoff_init(struct newoff *n, const struct pw_bitset *result)
{
	size_t i;
	uint32_t sum = 0;

	n->result = result;
	n->before = malloc((result->nwords + 1) * sizeof(*n->before));
	if (!n->before)
		return PW_ENOMEM;
	for (i = 0; i < result->nwords; i++) {
		n->before[i] = sum;
		sum += (uint32_t)__builtin_popcountll(result->w[i]);
	}
	n->at = malloc(((size_t)sum + 1) * sizeof(*n->at));
	return n->at ? 0 : PW_ENOMEM;
}

static void newoff_free(struct newoff *n)
{
	free(n->before);
	free(n->at);
}

/* The slot of pos, which is in the result. */
static uint64_t *newoff_of(const struct newoff *n, uint32_t pos)
{
	uint64_t below = n->result->w[pos / 64] & ((UINT64_C(1) << (pos % 64)) - 1);

	return &n->at[n->before[pos / 64] + (uint32_t)__builtin_popcountll(below)];
}

static int write_whole(struct out *o, struct libdeflate_compressor **comp, uint32_t pos)
{
	struct pw_bitmap_walk *w = o->w;
	int type, rc;

	pw_buf_reset(&w->buf);
	if ((rc = pw_pack_read(w->pack, pw_pack_pos_offset(w->pack, pos), w->cache, &type, &w->buf,
	                       &w->err)))
		return rc;
	return deflate_out(o, comp, type);
}

static int write_extra(struct out *o, struct libdeflate_compressor **comp, const struct pw_oid *oid)
{
	struct pw_bitmap_walk *w = o->w;
	int type;

	pw_buf_reset(&w->buf);
	if (pw_odb_read(w->odb, oid, &type, &w->buf)) {
		pw_error_copy(&w->err, pw_odb_error(w->odb));
		return w->err.code ? w->err.code : PW_ENOTFOUND;
	}
	return deflate_out(o, comp, type);
}

/* Objects up to this size are compressed by zlib with a window of the
 * same size (24 KiB of state): libdeflate's compressor takes 672 KiB,
 * and a fetch that sends one new tag whole paid for its pages. */
#define SMALL_DEFLATE 4096

static size_t deflate_small(const void *data, size_t len, uint8_t *z, size_t cap)
{
	z_stream s;
	size_t n = 0;

	memset(&s, 0, sizeof(s));
	if (deflateInit2(&s, 6, Z_DEFLATED, 12, 4, Z_DEFAULT_STRATEGY) != Z_OK)
		return 0;
	s.next_in = (Bytef *)(uintptr_t)data;
	s.avail_in = (uInt)len;
	s.next_out = z;
	s.avail_out = (uInt)cap;
	if (deflate(&s, Z_FINISH) == Z_STREAM_END)
		n = s.total_out;
	deflateEnd(&s);
	return n;
}

/* Compress data after the entry header hdr. */
static int deflate_entry(struct out *o, struct libdeflate_compressor **comp, const uint8_t *hdr,
                         size_t hlen, const void *data, size_t len)
{
	struct pw_bitmap_walk *w = o->w;
	uint8_t *z;
	size_t cap, zlen;
	int rc;

	if (len <= SMALL_DEFLATE) {
		cap = compressBound((uLong)len);
	} else {
		if (!*comp && !(*comp = libdeflate_alloc_compressor(6)))
			return nomem(w);
		cap = libdeflate_zlib_compress_bound(*comp, len);
	}
	if (!(z = malloc(cap)))
		return nomem(w);
	zlen = len <= SMALL_DEFLATE ? deflate_small(data, len, z, cap)
	                            : libdeflate_zlib_compress(*comp, data, len, z, cap);
	if (!zlen) {
		free(z);
		return pw_error_set(&w->err, PW_ERROR, "bitmap: deflate failed");
	}
	rc = out_add(o, hdr, hlen);
	if (!rc)
		rc = out_add(o, z, zlen);
	free(z);
	return rc;
}

/* Write w->buf as a whole object of `type`. */
static int deflate_out(struct out *o, struct libdeflate_compressor **comp, int type)
{
	uint8_t hdr[16];
	size_t hlen = pw_pack_entry_hdr_encode(hdr, type, o->w->buf.len);

	return deflate_entry(o, comp, hdr, hlen, o->w->buf.data, o->w->buf.len);
}

/* A stored delta whose base is not sent: follow the chain down to a base
 * that is (or that the receiver has, for thin packs) and encode the object
 * against it. The new chain is never deeper than the stored one. 1 when
 * written, 0 when there is no such base or no worthwhile delta. */
static int write_rebased(struct out *o, struct libdeflate_compressor **comp,
                         const struct pw_bitmap_write_opts *opts, uint32_t pos,
                         const struct newoff *newoff, struct pw_pack_write_stats *st)
{
	struct pw_bitmap_walk *w = o->w;
	struct pw_pack *pack = w->pack;
	struct pw_buf base = PW_BUF_INIT, delta = PW_BUF_INIT;
	uint32_t cur = pos, b = 0;
	uint8_t hdr[16 + PW_MAX_RAWSZ];
	size_t hlen;
	int depth, type, btype, rc, found = 0;

	for (depth = 0; depth < PW_PACK_MAX_DELTA_DEPTH && !found; depth++) {
		uint64_t off = pw_pack_pos_offset(pack, cur);
		struct pw_pack_entry_hdr h;
		uint32_t ipos;

		if (pw_pack_entry_hdr_decode(pack->data + off,
		                             (size_t)(pw_pack_pos_offset(pack, cur + 1) - off),
		                             pack->algo->rawsz, off, &h, &w->err))
			return 0;
		if (h.type == PW_OBJ_OFS_DELTA) {
			if (!pw_pack_pos_at_offset(pack, off - h.base_ofs, &b))
				return 0;
		} else if (h.type == PW_OBJ_REF_DELTA) {
			if (!pw_idx_find(pack->idx, h.base_raw, &ipos))
				return 0;
			b = w->pack->pack_pos[ipos];
		} else {
			return 0;
		}
		if (pw_bitset_get(&w->result, b) || (opts->thin && pw_bitset_get(&w->haves, b)))
			found = 1;
		cur = b;
	}
	if (!found)
		return 0;
	rc = pw_pack_read(pack, pw_pack_pos_offset(pack, b), w->cache, &btype, &base, &w->err);
	pw_buf_reset(&w->buf);
	if (!rc)
		rc = pw_pack_read(pack, pw_pack_pos_offset(pack, pos), w->cache, &type, &w->buf,
		                  &w->err);
	if (rc || btype != type || w->buf.len < 64) {
		pw_buf_free(&base);
		return rc;
	}
	rc = pw_delta_create(base.data, base.len, w->buf.data, w->buf.len, w->buf.len / 2, &delta);
	pw_buf_free(&base);
	if (rc == PW_ETOOBIG) {
		pw_buf_free(&delta);
		return 0;
	}
	if (rc) {
		pw_buf_free(&delta);
		return pw_error_set(&w->err, rc, "bitmap: delta: %s", pw_strerror(rc));
	}
	if (pw_bitset_get(&w->result, b) && b < pos && opts->ofs_delta) {
		hlen = pw_pack_entry_hdr_encode(hdr, PW_OBJ_OFS_DELTA, delta.len);
		hlen += pw_pack_ofs_encode(hdr + hlen,
		                           *newoff_of(newoff, pos) - *newoff_of(newoff, b));
	} else {
		hlen = pw_pack_entry_hdr_encode(hdr, PW_OBJ_REF_DELTA, delta.len);
		memcpy(hdr + hlen, pw_idx_nth_raw(pack->idx, pack->rev_pos[b]), pack->algo->rawsz);
		hlen += pack->algo->rawsz;
		if (!pw_bitset_get(&w->result, b))
			st->thin_deltas++;
	}
	rc = deflate_entry(o, comp, hdr, hlen, delta.data, delta.len);
	pw_buf_free(&delta);
	if (rc)
		return rc;
	st->deltas++;
	return 1;
}

/* Check everything that will be copied before the first byte goes out. */
static int check_reused(struct pw_bitmap_walk *w, const struct pw_bitmap_write_opts *opts)
{
	uint64_t released = 0;
	size_t i;
	int rc;

	for (i = 0; i < w->result.nwords; i++) {
		uint64_t word = w->result.w[i];

		while (word) {
			uint32_t pos = (uint32_t)(i * 64 + (size_t)__builtin_ctzll(word)), base;
			uint64_t off = pw_pack_pos_offset(w->pack, pos);
			struct pw_pack_entry_hdr h;
			int kind;

			word &= word - 1;
			if ((rc = plan_entry(w, opts, pos, &h, &kind, &base)))
				return rc;
			if (kind != E_WHOLE && (rc = check_crc(w, pos)))
				return rc;
			if (off - released >= RELEASE_STEP) {
				pw_pack_release(w->pack, released, off);
				released = off;
			}
		}
	}
	return 0;
}

/* A reused delta under a new header: "hdr" then the stored delta data. */
static int write_rehdr(struct out *o, const uint8_t *eh, size_t ehl, uint64_t off, uint64_t end,
                       const struct pw_pack_entry_hdr *h)
{
	const struct pw_pack *pack = o->w->pack;
	int rc = out_add(o, eh, ehl);

	if (!rc)
		rc = out_add(o, pack->data + off + h->hdr_len, (size_t)(end - off - h->hdr_len));
	return rc;
}

/* Entry pos of the bitmapped pack: copied, re-headed or written whole. */
static int write_entry(struct out *o, struct libdeflate_compressor **comp,
                       const struct pw_bitmap_write_opts *opts, uint32_t pos,
                       const struct newoff *newoff, struct pw_pack_write_stats *st)
{
	struct pw_bitmap_walk *w = o->w;
	const struct pw_pack *pack = w->pack;
	uint64_t off = pw_pack_pos_offset(pack, pos), end = pw_pack_pos_offset(pack, pos + 1);
	struct pw_pack_entry_hdr h;
	uint8_t eh[16 + PW_MAX_RAWSZ];
	size_t ehl;
	uint32_t base;
	int kind, rc;

	*newoff_of(newoff, pos) = o->pos;
	if ((rc = plan_entry(w, opts, pos, &h, &kind, &base)))
		return rc;
	switch (kind) {
	case E_COPY:
		st->reused++;
		return out_add(o, pack->data + off, (size_t)(end - off));
	case E_OFS:
		st->reused++;
		st->reused_deltas++;
		st->deltas++;
		if (o->pos - *newoff_of(newoff, base) == h.base_ofs)
			return out_add(o, pack->data + off, (size_t)(end - off));
		ehl = pw_pack_entry_hdr_encode(eh, PW_OBJ_OFS_DELTA, h.size);
		ehl += pw_pack_ofs_encode(eh + ehl, o->pos - *newoff_of(newoff, base));
		return write_rehdr(o, eh, ehl, off, end, &h);
	case E_REF:
		ehl = pw_pack_entry_hdr_encode(eh, PW_OBJ_REF_DELTA, h.size);
		memcpy(eh + ehl, pw_idx_nth_raw(pack->idx, pack->rev_pos[base]), pack->algo->rawsz);
		ehl += pack->algo->rawsz;
		st->reused++;
		st->reused_deltas++;
		st->deltas++;
		if (!pw_bitset_get(&w->result, base))
			st->thin_deltas++;
		return write_rehdr(o, eh, ehl, off, end, &h);
	default:
		rc = write_rebased(o, comp, opts, pos, newoff, st);
		if (rc == 0)
			return write_whole(o, comp, pos);
		return rc == 1 ? 0 : rc;
	}
}

static void write_progress(const struct pw_bitmap_write_opts *opts, uint32_t *done, uint32_t total)
{
	if (opts->progress && (++*done % 4096 == 0 || *done == total))
		opts->progress(opts->progress_data, "Writing objects", *done, total,
		               *done == total);
}

/* The objects of the result: the bitmapped pack's in pack order, then those
 * from outside it, whole. */
static int write_entries(struct out *o, struct libdeflate_compressor **comp,
                         const struct pw_bitmap_write_opts *opts, const struct newoff *newoff,
                         struct pw_pack_write_stats *st)
{
	struct pw_bitmap_walk *w = o->w;
	uint32_t total = pw_bitmap_walk_count(w), done = 0;
	uint64_t released = 0;
	size_t i;
	int rc;

	for (i = 0; i < w->result.nwords; i++) {
		uint64_t word = w->result.w[i];

		while (word) {
			uint32_t pos = (uint32_t)(i * 64 + (size_t)__builtin_ctzll(word));
			uint64_t off = pw_pack_pos_offset(w->pack, pos);

			word &= word - 1;
			if ((rc = write_entry(o, comp, opts, pos, newoff, st)))
				return rc;
			write_progress(opts, &done, total);
			/* the pack is read front to back: what lies behind is
			 * done with (a delta base read later maps it back) */
			if (off - released >= RELEASE_STEP) {
				pw_pack_release(w->pack, released, off);
				released = off;
			}
		}
	}
	for (i = 0; i < w->nextras; i++) {
		if (!extra_sent(&w->extras[i]))
			continue;
		if ((rc = write_extra(o, comp, &w->extras[i].oid)))
			return rc;
		write_progress(opts, &done, total);
	}
	return 0;
}

/* The pack file itself is the answer when the result is every object of the
 * pack and nothing else, and every entry can go out as it is stored: OFS
 * deltas only to a client that takes them, REF delta bases inside the pack.
 * 1 when so (st counts the deltas), 0 when not. One pass over the entry
 * headers, in pack order. */
static int whole_pack_fits(struct pw_bitmap_walk *w, const struct pw_bitmap_write_opts *opts,
                           struct pw_pack_write_stats *st)
{
	struct pw_pack *pack = w->pack;
	uint64_t released = 0;
	uint32_t pos;

	if (pw_bitset_count(&w->result) != pack->nr || extras_sent(w))
		return 0;
	for (pos = 0; pos < pack->nr; pos++) {
		uint64_t off = pw_pack_pos_offset(pack, pos),
		         end = pw_pack_pos_offset(pack, pos + 1);
		struct pw_pack_entry_hdr h;
		uint32_t ipos;

		/* a header on every page: let go of the pages behind, or the
		 * whole pack stays mapped in until the copy passes it */
		if (off - released >= RELEASE_STEP) {
			pw_pack_release(pack, released, off);
			released = off;
		}

		if (end <= off || end > pack->size ||
		    pw_pack_entry_hdr_decode(pack->data + off, (size_t)(end - off),
		                             pack->algo->rawsz, off, &h, &w->err))
			return 0; /* the entry by entry path says what is wrong */
		if (h.type == PW_OBJ_OFS_DELTA && !opts->ofs_delta)
			return 0;
		if (h.type == PW_OBJ_REF_DELTA && !pw_idx_find(pack->idx, h.base_raw, &ipos))
			return 0;
		if (h.type == PW_OBJ_OFS_DELTA || h.type == PW_OBJ_REF_DELTA)
			st->deltas++;
	}
	st->reused = pack->nr;
	st->reused_deltas = st->deltas;
	return 1;
}

/* Send the pack file as it is, a chunk at a time; progress by the entries
 * each chunk ends after. */
static int write_whole_pack(struct pw_bitmap_walk *w, const struct pw_bitmap_write_opts *opts,
                            pw_pack_out_fn fn, void *ctx, uint8_t *checksum)
{
	struct pw_pack *pack = w->pack;
	const uint64_t step = RELEASE_STEP / 8;
	uint64_t off = 0;
	uint32_t done = 0;
	int rc;

	while (off < pack->size) {
		uint64_t n = pack->size - off < step ? pack->size - off : step;

		if ((rc = fn(ctx, pack->data + off, (size_t)n, &w->err)))
			return rc;
		off += n;
		if (off % RELEASE_STEP == 0)
			pw_pack_release(pack, off - RELEASE_STEP, off);
		while (done < pack->nr && pw_pack_pos_offset(pack, done + 1) <= off)
			done++;
		if (opts->progress && (done == pack->nr || off % RELEASE_STEP == 0))
			opts->progress(opts->progress_data, "Writing objects", done, pack->nr,
			               done == pack->nr);
	}
	if (checksum)
		memcpy(checksum, pack->data + pack->size - pack->algo->rawsz, pack->algo->rawsz);
	return 0;
}

int pw_bitmap_walk_write(struct pw_bitmap_walk *w, const struct pw_bitmap_write_opts *opts,
                         pw_pack_out_fn fn, void *ctx, uint8_t *checksum,
                         struct pw_pack_write_stats *stats)
{
	struct pw_pack *pack = w->pack;
	struct pw_pack_write_stats st;
	struct libdeflate_compressor *comp = NULL;
	struct out o;
	struct newoff newoff = {NULL, NULL, NULL};
	uint32_t total = pw_bitmap_walk_count(w);
	uint8_t hdr[PW_PACK_HEADER_SIZE], trailer[PW_MAX_RAWSZ];
	int rc;

	memset(&st, 0, sizeof(st));
	memset(&o, 0, sizeof(o));
	if (opts->trust_reused && whole_pack_fits(w, opts, &st)) {
		if ((rc = write_whole_pack(w, opts, fn, ctx, checksum)))
			return rc;
		st.written = total;
		st.bytes = pack->size;
		if (stats)
			*stats = st;
		return 0;
	}
	memset(&st, 0, sizeof(st));
	if (!opts->trust_reused && (rc = check_reused(w, opts)))
		return rc;
	if (newoff_init(&newoff, &w->result) || !(o.buf = malloc(OUTBUF_SIZE))) {
		newoff_free(&newoff);
		return nomem(w);
	}
	o.w = w;
	o.fn = fn;
	o.ctx = ctx;
	pw_hash_init_checksum(&o.hash, pack->algo); /* the pack's trailer */
	pw_pack_header_encode(hdr, total);
	if ((rc = out_add(&o, hdr, sizeof(hdr))) ||
	    (rc = write_entries(&o, &comp, opts, &newoff, &st)) || (rc = out_flush(&o)))
		goto out;
	pw_hash_final_checksum(&o.hash, trailer);
	if ((rc = fn(ctx, trailer, pack->algo->rawsz, &w->err)))
		goto out;
	o.pos += pack->algo->rawsz;
	if (checksum)
		memcpy(checksum, trailer, pack->algo->rawsz);
	st.written = total;
	st.bytes = o.pos;
	if (stats)
		*stats = st;
out:
	libdeflate_free_compressor(comp);
	newoff_free(&newoff);
	free(o.buf);
	return rc;
}
