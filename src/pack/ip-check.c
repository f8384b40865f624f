#include <stdlib.h>
#include <string.h>

#include "pack/ip-check.h"
#include "packwire/object.h"

static int cmp_raw32(const void *a, const void *b)
{
	return memcmp(a, b, 32);
}
static int cmp_raw20(const void *a, const void *b)
{
	return memcmp(a, b, 20);
}

/* Sort and drop repeats: most links point at the same few objects again. */
static void compact(struct ip_links *l)
{
	size_t i, n = 0;

	if (!l->nr)
		return;
	qsort(l->raw, l->nr, l->rawsz, l->rawsz == 20 ? cmp_raw20 : cmp_raw32);
	for (i = 0; i < l->nr; i++)
		if (!n || memcmp(l->raw + (n - 1) * l->rawsz, l->raw + i * l->rawsz, l->rawsz))
			memmove(l->raw + n++ * l->rawsz, l->raw + i * l->rawsz, l->rawsz);
	l->nr = n;
	l->compacted = n;
}

static int add_link(struct ip_links *l, const uint8_t *raw, size_t rawsz)
{
	if (l->rawsz && l->rawsz != rawsz)
		return PW_EINVAL;
	l->rawsz = rawsz;
	if (l->nr == l->alloc) {
		size_t floor = l->compacted * 2 > 65536 ? l->compacted * 2 : 65536;

		if (l->nr >= floor) {
			compact(l);
			if (l->nr < l->alloc)
				goto add;
		}
		{
			size_t n = l->alloc ? l->alloc * 2 : 4096;
			uint8_t *p = realloc(l->raw, n * rawsz);

			if (!p)
				return PW_ENOMEM;
			l->raw = p;
			l->alloc = n;
		}
	}
add:
	memcpy(l->raw + l->nr++ * rawsz, raw, rawsz);
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

int pw_ip_links_merge(struct ip_links *dst, struct ip_links *src)
{
	size_t i;
	int rc;

	if (!dst->nr && !dst->raw) {
		*dst = *src;
		memset(src, 0, sizeof(*src));
		return 0;
	}
	for (i = 0; i < src->nr; i++)
		if ((rc = add_link(dst, src->raw + i * src->rawsz, src->rawsz)))
			return rc;
	pw_ip_links_free(src);
	return 0;
}

int pw_ip_links_verify(struct ip_links *l, int (*in_pack)(void *ctx, const struct pw_oid *oid),
                       void *pack_ctx, int (*has_object)(void *ctx, const struct pw_oid *oid),
                       void *odb_ctx, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_hash_by_rawsz(l->rawsz);
	size_t i;

	if (!l->nr || !algo)
		return 0;
	compact(l);
	for (i = 0; i < l->nr; i++) {
		struct pw_oid oid;
		char hex[PW_MAX_HEXSZ + 1];

		pw_oid_from_raw(&oid, l->raw + i * l->rawsz, algo);
		if (in_pack(pack_ctx, &oid) || (has_object && has_object(odb_ctx, &oid)))
			continue;
		return pw_error_set(err, PW_ECORRUPT,
		                    "object %s is referenced by an object in the pack but is "
		                    "neither in the pack nor in the repository (pack not "
		                    "self-contained and connected)",
		                    pw_oid_to_hex(&oid, hex));
	}
	return 0;
}

void pw_ip_links_free(struct ip_links *l)
{
	free(l->raw);
	memset(l, 0, sizeof(*l));
}
