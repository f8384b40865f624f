#include <libdeflate.h>
#include <stdlib.h>
#include <string.h>

#include "odb/cache.h"

#define NBUCKETS 4096 /* power of two */

struct ent {
	uint64_t pack_id, offset;
	int type;
	char *data;
	size_t len;
	struct ent *hnext;       /* bucket chain */
	struct ent *prev, *next; /* LRU list, head = most recently used */
};

struct pw_base_cache {
	size_t limit, used;
	struct ent *buckets[NBUCKETS];
	struct ent *head, *tail;
	struct libdeflate_decompressor *dec;
	uint64_t hits, misses;
};

static size_t bucket(uint64_t pack_id, uint64_t offset)
{
	uint64_t h = (offset ^ (pack_id << 40)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 52) & (NBUCKETS - 1);
}

int pw_base_cache_new(struct pw_base_cache **out, size_t limit)
{
	struct pw_base_cache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return PW_ENOMEM;
	c->limit = limit ? limit : PW_BASE_CACHE_DEFAULT_LIMIT;
	c->dec = libdeflate_alloc_decompressor();
	if (!c->dec) {
		free(c);
		return PW_ENOMEM;
	}
	*out = c;
	return 0;
}

static void lru_unlink(struct pw_base_cache *c, struct ent *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct pw_base_cache *c, struct ent *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static void remove_ent(struct pw_base_cache *c, struct ent *e)
{
	struct ent **pp = &c->buckets[bucket(e->pack_id, e->offset)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	lru_unlink(c, e);
	c->used -= e->len;
	free(e->data);
	free(e);
}

void pw_base_cache_free(struct pw_base_cache *c)
{
	if (!c)
		return;
	while (c->head)
		remove_ent(c, c->head);
	if (c->dec)
		libdeflate_free_decompressor(c->dec);
	free(c);
}

static struct ent *find(struct pw_base_cache *c, uint64_t pack_id, uint64_t offset)
{
	struct ent *e = c->buckets[bucket(pack_id, offset)];

	while (e && (e->pack_id != pack_id || e->offset != offset))
		e = e->hnext;
	return e;
}

int pw_base_cache_get(struct pw_base_cache *c, uint64_t pack_id, uint64_t offset,
                      struct pw_base_cache_hit *hit)
{
	struct ent *e = find(c, pack_id, offset);

	if (!e) {
		c->misses++;
		return 0;
	}
	c->hits++;
	if (c->head != e) {
		lru_unlink(c, e);
		lru_push(c, e);
	}
	hit->type = e->type;
	hit->data = (const uint8_t *)e->data;
	hit->len = e->len;
	return 1;
}

int pw_base_cache_put(struct pw_base_cache *c, uint64_t pack_id, uint64_t offset, int type,
                      struct pw_buf *buf)
{
	struct ent *e;
	size_t b;

	/* One object may not take more than a quarter of the cache, or a long
	 * chain of big objects would flush everything else. */
	if (buf->len > c->limit / 4 || !buf->cap)
		return 0;
	if ((e = find(c, pack_id, offset)))
		remove_ent(c, e);
	while (c->tail && c->used + buf->len > c->limit)
		remove_ent(c, c->tail);
	e = malloc(sizeof(*e));
	if (!e)
		return 0;
	e->pack_id = pack_id;
	e->offset = offset;
	e->type = type;
	e->len = buf->len;
	e->data = pw_buf_detach(buf, NULL);
	b = bucket(pack_id, offset);
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	lru_push(c, e);
	c->used += e->len;
	return 1;
}

void pw_base_cache_drop_pack(struct pw_base_cache *c, uint64_t pack_id)
{
	struct ent *e = c ? c->head : NULL;

	while (e) {
		struct ent *next = e->next;

		if (e->pack_id == pack_id)
			remove_ent(c, e);
		e = next;
	}
}

struct libdeflate_decompressor *pw_base_cache_decompressor(struct pw_base_cache *c)
{
	return c->dec;
}

void pw_base_cache_stats(const struct pw_base_cache *c, uint64_t *hits, uint64_t *misses,
                         size_t *bytes)
{
	*hits = c->hits;
	*misses = c->misses;
	*bytes = c->used;
}
