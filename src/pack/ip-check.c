#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pack/ip-check.h"
#include "packwire/object.h"

/* Links buffered per thread before they go into the shared set. */
#define BATCH 2048

static int is_zero(const uint8_t *raw, size_t rawsz)
{
	size_t i;

	for (i = 0; i < rawsz; i++)
		if (raw[i])
			return 0;
	return 1;
}

/* Slot of an id: the id's first 8 bytes (uniform for real ids) mixed with
 * the set's seed, so that a sender cannot aim many ids at one slot. */
static size_t slot_of(const struct ip_linkset *s, const uint8_t *raw)
{
	uint64_t h;

	memcpy(&h, raw, sizeof(h));
	h = (h ^ s->seed) * 0x9e3779b97f4a7c15ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (size_t)(h >> s->shift);
}

/* Insert without growing; the set has room. */
static void put(struct ip_linkset *s, const uint8_t *raw)
{
	size_t mask = s->cap - 1, i = slot_of(s, raw), rawsz = s->rawsz;

	for (;; i = (i + 1) & mask) {
		uint8_t *slot = s->slots + i * rawsz;
		uint64_t a, b;

		memcpy(&a, slot, sizeof(a));
		memcpy(&b, raw, sizeof(b));
		if (a == b && !memcmp(slot, raw, rawsz))
			return;
		if (!a && is_zero(slot, rawsz)) {
			memcpy(slot, raw, rawsz);
			s->nr++;
			return;
		}
	}
}

static int grow(struct ip_linkset *s)
{
	size_t ncap = s->cap ? s->cap * 2 : 4096, oldcap = s->cap, i;
	uint8_t *old = s->slots;
	unsigned bits = 0;

	while (((size_t)1 << bits) < ncap)
		bits++;
	s->slots = calloc(ncap, s->rawsz);
	if (!s->slots) {
		s->slots = old;
		return PW_ENOMEM;
	}
	s->cap = ncap;
	s->shift = 64 - bits;
	s->nr = 0;
	for (i = 0; i < oldcap; i++)
		if (!is_zero(old + i * s->rawsz, s->rawsz))
			put(s, old + i * s->rawsz);
	free(old);
	return 0;
}

int pw_ip_linkset_init(struct ip_linkset *s, size_t rawsz)
{
	memset(s, 0, sizeof(*s));
	s->rawsz = rawsz;
	if (getentropy(&s->seed, sizeof(s->seed)))
		s->seed = (uint64_t)(uintptr_t)s ^ ((uint64_t)time(NULL) << 20);
	return pthread_mutex_init(&s->lock, NULL) ? PW_ENOMEM : 0;
}

void pw_ip_linkset_free(struct ip_linkset *s)
{
	free(s->slots);
	s->slots = NULL;
	s->cap = s->nr = 0;
	pthread_mutex_destroy(&s->lock);
}

void pw_ip_links_init(struct ip_links *l, struct ip_linkset *set)
{
	memset(l, 0, sizeof(*l));
	l->set = set;
	l->rawsz = set->rawsz;
}

int pw_ip_links_flush(struct ip_links *l)
{
	struct ip_linkset *s = l->set;
	size_t i;
	int rc = 0;

	if (l->failed)
		return PW_ENOMEM;
	if (!l->nr)
		return 0;
	pthread_mutex_lock(&s->lock);
	for (i = 0; i < l->nr; i++) {
		const uint8_t *raw = l->raw + i * l->rawsz;

		if (is_zero(raw, l->rawsz)) {
			s->has_zero = 1;
			continue;
		}
		/* at most 3/4 full: probes stay short */
		if ((s->nr + 1) * 4 > s->cap * 3 && (rc = grow(s)))
			break;
		put(s, raw);
	}
	pthread_mutex_unlock(&s->lock);
	l->nr = 0;
	if (rc)
		l->failed = 1;
	return rc;
}

void pw_ip_links_free(struct ip_links *l)
{
	free(l->raw);
	l->raw = NULL;
	l->nr = l->alloc = 0;
}

static int add_link(struct ip_links *l, const uint8_t *raw, size_t rawsz)
{
	if (!l->set || l->rawsz != rawsz)
		return PW_EINVAL;
	if (!l->raw) {
		l->raw = malloc(BATCH * rawsz);
		if (!l->raw)
			return PW_ENOMEM;
		l->alloc = BATCH;
	}
	/* a tree often names the same id as the entry before it in the
	 * previous tree; repeats next to each other are cheap to drop here */
	if (l->nr && !memcmp(l->raw + (l->nr - 1) * rawsz, raw, rawsz))
		return 0;
	memcpy(l->raw + l->nr++ * rawsz, raw, rawsz);
	if (l->nr == l->alloc)
		return pw_ip_links_flush(l);
	return 0;
}

static int hex_line(const char *p, const char *end, const char *key,
                    const struct pw_hash_algo *algo, struct pw_oid *out)
{
	size_t kl = strlen(key);

	if ((size_t)(end - p) < kl + algo->hexsz + 1 || memcmp(p, key, kl) ||
	    p[kl + algo->hexsz] != '\n')
		return -1;
	return pw_oid_from_hex(out, p + kl, algo->hexsz, algo) ? -1 : 0;
}

static int bad(struct pw_error *err, const struct pw_oid *oid, const char *type, const char *why)
{
	char hex[PW_MAX_HEXSZ + 1];

	return pw_error_set(err, PW_ECORRUPT, "%s %s is malformed: %s", type,
	                    pw_oid_to_hex(oid, hex), why);
}

static int check_commit(struct ip_links *l, const struct pw_hash_algo *algo, const char *p,
                        size_t len, const struct pw_oid *oid, int collect, struct pw_error *err)
{
	const char *end = p + len;
	struct pw_oid x;

	if (hex_line(p, end, "tree ", algo, &x))
		return bad(err, oid, "commit", "no valid tree line");
	if (collect && add_link(l, x.id, algo->rawsz))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	p += 5 + algo->hexsz + 1;
	while (!hex_line(p, end, "parent ", algo, &x)) {
		if (collect && add_link(l, x.id, algo->rawsz))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		p += 7 + algo->hexsz + 1;
	}
	if ((size_t)(end - p) < 7 || memcmp(p, "author ", 7))
		return bad(err, oid, "commit", "no author line");
	p = memchr(p, '\n', (size_t)(end - p));
	if (!p || (size_t)(end - p - 1) < 10 || memcmp(p + 1, "committer ", 10))
		return bad(err, oid, "commit", "no committer line");
	return 0;
}

static int check_tree(struct ip_links *l, const struct pw_hash_algo *algo, const char *p,
                      size_t len, const struct pw_oid *oid, int collect, struct pw_error *err)
{
	const char *end = p + len;

	while (p < end) {
		unsigned mode = 0;
		const char *name, *nul;

		if (*p == ' ')
			return bad(err, oid, "tree", "entry without a mode");
		while (p < end && *p != ' ') {
			if (*p < '0' || *p > '7' || mode > 01000000)
				return bad(err, oid, "tree", "bad entry mode");
			mode = mode * 8 + (unsigned)(*p++ - '0');
		}
		if (p >= end)
			return bad(err, oid, "tree", "truncated entry");
		name = ++p;
		nul = memchr(p, '\0', (size_t)(end - p));
		if (!nul || nul == name)
			return bad(err, oid, "tree", "entry with an empty or unterminated name");
		if (memchr(name, '/', (size_t)(nul - name)))
			return bad(err, oid, "tree", "entry name contains '/'");
		if ((size_t)(end - nul - 1) < algo->rawsz)
			return bad(err, oid, "tree", "truncated entry id");
		if (collect && mode != 0160000 &&
		    add_link(l, (const uint8_t *)nul + 1, algo->rawsz))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		p = nul + 1 + algo->rawsz;
	}
	return 0;
}

static int check_tag(struct ip_links *l, const struct pw_hash_algo *algo, const char *p, size_t len,
                     const struct pw_oid *oid, int collect, struct pw_error *err)
{
	const char *end = p + len, *nl;
	struct pw_oid x;

	if (hex_line(p, end, "object ", algo, &x))
		return bad(err, oid, "tag", "no valid object line");
	p += 7 + algo->hexsz + 1;
	if ((size_t)(end - p) < 5 || memcmp(p, "type ", 5) ||
	    !(nl = memchr(p, '\n', (size_t)(end - p))) ||
	    !pw_object_type_from_name(p + 5, (size_t)(nl - p - 5)))
		return bad(err, oid, "tag", "no valid type line");
	p = nl + 1;
	if ((size_t)(end - p) < 4 || memcmp(p, "tag ", 4) || !memchr(p, '\n', (size_t)(end - p)))
		return bad(err, oid, "tag", "no tag name line");
	if (collect && add_link(l, x.id, algo->rawsz))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

int pw_ip_check_object(struct ip_links *links, const struct pw_hash_algo *algo, int type,
                       const char *data, size_t len, const struct pw_oid *oid, int collect,
                       struct pw_error *err)
{
	switch (type) {
	case PW_OBJ_COMMIT:
		return check_commit(links, algo, data, len, oid, collect, err);
	case PW_OBJ_TREE:
		return check_tree(links, algo, data, len, oid, collect, err);
	case PW_OBJ_TAG:
		return check_tag(links, algo, data, len, oid, collect, err);
	default:
		return 0;
	}
}

int pw_ip_linkset_verify(struct ip_linkset *s, int (*in_pack)(void *ctx, const struct pw_oid *oid),
                         void *pack_ctx, int (*has_object)(void *ctx, const struct pw_oid *oid),
                         void *odb_ctx, int strict, int *self_contained, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_hash_by_rawsz(s->rawsz);
	size_t i, n = s->cap + (s->has_zero ? 1 : 0);
	int all_in = 1;

	*self_contained = 0;
	if (!algo)
		return pw_error_set(err, PW_EINVAL, "link set without a hash algorithm");
	for (i = 0; i < n; i++) {
		struct pw_oid oid;
		char hex[PW_MAX_HEXSZ + 1];

		if (i < s->cap) {
			if (is_zero(s->slots + i * s->rawsz, s->rawsz))
				continue;
			pw_oid_from_raw(&oid, s->slots + i * s->rawsz, algo);
		} else {
			oid = *algo->zero_oid;
		}
		if (in_pack(pack_ctx, &oid))
			continue;
		all_in = 0;
		if (!strict)
			return 0;
		if (has_object && has_object(odb_ctx, &oid))
			continue;
		return pw_error_set(err, PW_ECORRUPT,
		                    "object %s is referenced by an object in the pack but is "
		                    "neither in the pack nor in the repository (pack not "
		                    "self-contained and connected)",
		                    pw_oid_to_hex(&oid, hex));
	}
	*self_contained = all_in;
	return 0;
}
