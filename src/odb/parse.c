/* Parsing commits, trees and tags for traversal. Every read is bounded by the
 * buffer's length; nothing relies on a terminating NUL. */
#include <stdlib.h>
#include <string.h>

#include "packwire/odb.h"

/* The line starting at p (up to, not including, '\n'); NULL at the end or
 * when the line is not terminated. */
static const char *line_end(const char *p, const char *end)
{
	const char *nl = p < end ? memchr(p, '\n', (size_t)(end - p)) : NULL;

	return nl;
}

static int starts(const char *p, const char *end, const char *key)
{
	size_t n = strlen(key);

	return (size_t)(end - p) >= n && !memcmp(p, key, n);
}

/* "<key><hex>\n" at *pp: parse the id and advance past the newline. */
static int hex_line(const char **pp, const char *end, const char *key,
                    const struct pw_hash_algo *algo, struct pw_oid *out)
{
	const char *p = *pp + strlen(key), *nl = line_end(*pp, end);

	if (!nl || (size_t)(nl - p) != algo->hexsz || pw_oid_from_hex(out, p, algo->hexsz, algo))
		return -1;
	*pp = nl + 1;
	return 0;
}

int pw_commit_parse(struct pw_commit_info *out, const char *data, size_t len,
                    const struct pw_hash_algo *algo, struct pw_error *err)
{
	const char *p = data, *end = data + len;

	memset(out, 0, sizeof(*out));
	if (!starts(p, end, "tree ") || hex_line(&p, end, "tree ", algo, &out->tree))
		return pw_error_set(err, PW_ECORRUPT, "commit: bad or missing tree line");
	while (starts(p, end, "parent ")) {
		struct pw_oid *np;

		if ((out->nr_parents & (out->nr_parents - 1)) == 0) {
			size_t n = out->nr_parents ? out->nr_parents * 2 : 1;

			np = realloc(out->parents, n * sizeof(*np));
			if (!np) {
				pw_commit_info_free(out);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			out->parents = np;
		}
		if (hex_line(&p, end, "parent ", algo, &out->parents[out->nr_parents])) {
			pw_commit_info_free(out);
			return pw_error_set(err, PW_ECORRUPT, "commit: bad parent line");
		}
		out->nr_parents++;
	}
	/* The committer line: "committer <name> <<email>> <time> <tz>". */
	while (p < end && *p != '\n') {
		const char *nl = line_end(p, end);

		if (!nl)
			break;
		if (starts(p, nl, "committer ")) {
			const char *gt = NULL, *q;
			int64_t t = 0;

			for (q = p; q < nl; q++)
				if (*q == '>')
					gt = q;
			if (gt) {
				q = gt + 1;
				while (q < nl && *q == ' ')
					q++;
				while (q < nl && *q >= '0' && *q <= '9' && t < INT64_MAX / 10 - 10)
					t = t * 10 + (*q++ - '0');
				out->commit_time = t;
			}
			return 0;
		}
		p = nl + 1;
	}
	return 0;
}

void pw_commit_info_free(struct pw_commit_info *c)
{
	free(c->parents);
	c->parents = NULL;
	c->nr_parents = 0;
}

int pw_tree_next(const char *data, size_t len, size_t *pos, const struct pw_hash_algo *algo,
                 struct pw_tree_entry *out, struct pw_error *err)
{
	size_t i = *pos, mode_start = i;
	unsigned mode = 0;
	const char *nul;

	if (i >= len)
		return 0;
	while (i < len && data[i] >= '0' && data[i] <= '7' && i - mode_start < 7)
		mode = mode * 8 + (unsigned)(data[i++] - '0');
	if (i == mode_start || i >= len || data[i] != ' ')
		return pw_error_set(err, PW_ECORRUPT, "tree: bad mode at byte %zu", mode_start);
	i++;
	nul = memchr(data + i, '\0', len - i);
	if (!nul || nul == data + i)
		return pw_error_set(err, PW_ECORRUPT, "tree: bad entry name at byte %zu", i);
	out->mode = mode;
	out->name = data + i;
	out->name_len = (size_t)(nul - (data + i));
	i = (size_t)(nul - data) + 1;
	if (len - i < algo->rawsz)
		return pw_error_set(err, PW_ECORRUPT, "tree: truncated entry at byte %zu", i);
	pw_oid_from_raw(&out->oid, (const uint8_t *)data + i, algo);
	*pos = i + algo->rawsz;
	return 1;
}

int pw_tag_parse(struct pw_tag_info *out, const char *data, size_t len,
                 const struct pw_hash_algo *algo, struct pw_error *err)
{
	const char *p = data, *end = data + len, *nl;

	memset(out, 0, sizeof(*out));
	if (!starts(p, end, "object ") || hex_line(&p, end, "object ", algo, &out->object))
		return pw_error_set(err, PW_ECORRUPT, "tag: bad or missing object line");
	if (!starts(p, end, "type ") || !(nl = line_end(p, end)))
		return pw_error_set(err, PW_ECORRUPT, "tag: missing type line");
	out->type = pw_object_type_from_name(p + 5, (size_t)(nl - p - 5));
	if (!out->type)
		return pw_error_set(err, PW_ECORRUPT, "tag: unknown type '%.*s'",
		                    (int)(nl - p - 5 > 32 ? 32 : nl - p - 5), p + 5);
	p = nl + 1;
	if (!starts(p, end, "tag ") || !(nl = line_end(p, end)))
		return pw_error_set(err, PW_ECORRUPT, "tag: missing tag line");
	out->name = p + 4;
	out->name_len = (size_t)(nl - p - 4);
	return 0;
}
