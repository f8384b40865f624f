/* Argument lines of a fetch request, v0/v1 (want section and negotiation)
 * and v2 ("command=fetch" arguments), parsed for the session's algorithm. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/hash.h"
#include "packwire/proto.h"
#include "proto/quote.h"

void pw_fetch_args_init(struct pw_fetch_args *a, const struct pw_hash_algo *algo)
{
	memset(a, 0, sizeof(*a));
	a->algo = algo;
}

static void str_array_free(struct pw_str_array *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void pw_fetch_args_free(struct pw_fetch_args *a)
{
	const struct pw_hash_algo *algo = a->algo;

	free(a->wants.v);
	free(a->haves.v);
	free(a->shallows.v);
	str_array_free(&a->want_refs);
	str_array_free(&a->deepen_not);
	pw_filter_free(&a->filter);
	free(a->v0_caps);
	pw_fetch_args_init(a, algo);
}

int pw_oid_array_push(struct pw_oid_array *arr, const struct pw_oid *oid)
{
	if (arr->nr == arr->alloc) {
		size_t na = arr->alloc ? arr->alloc * 2 : 32;
		struct pw_oid *nv = realloc(arr->v, na * sizeof(*nv));

		if (!nv)
			return PW_ENOMEM;
		arr->v = nv;
		arr->alloc = na;
	}
	arr->v[arr->nr++] = *oid;
	return 0;
}

static int oid_push(struct pw_oid_array *arr, const struct pw_oid *oid)
{
	return arr->nr >= PW_FETCH_MAX_IDS ? PW_ETOOBIG : pw_oid_array_push(arr, oid);
}

static int str_push(struct pw_str_array *arr, const char *p, size_t len)
{
	char *s;

	if (arr->nr >= PW_FETCH_MAX_IDS)
		return PW_ETOOBIG;
	if (arr->nr == arr->alloc) {
		size_t na = arr->alloc ? arr->alloc * 2 : 8;
		char **nv = realloc(arr->v, na * sizeof(*nv));

		if (!nv)
			return PW_ENOMEM;
		arr->v = nv;
		arr->alloc = na;
	}
	s = malloc(len + 1);
	if (!s)
		return PW_ENOMEM;
	memcpy(s, p, len);
	s[len] = '\0';
	arr->v[arr->nr++] = s;
	return 0;
}

static int limit_error(int rc, struct pw_error *err)
{
	if (rc == PW_ETOOBIG)
		return pw_error_set(err, rc,
		                    "protocol error: too many ids in fetch request (max %u)",
		                    PW_FETCH_MAX_IDS);
	return pw_error_set(err, rc, "%s", pw_strerror(rc));
}

/* Does line start with keyword `kw` followed by a space? Sets *rest after it. */
static int has_arg(const char *line, size_t len, const char *kw, const char **rest, size_t *rlen)
{
	size_t n = strlen(kw);

	if (len <= n || memcmp(line, kw, n) || line[n] != ' ')
		return 0;
	*rest = line + n + 1;
	*rlen = len - n - 1;
	return 1;
}

static int is_word(const char *line, size_t len, const char *kw)
{
	return strlen(kw) == len && !memcmp(line, kw, len);
}

/*
 * "<kw> <oid>" exactly, or with caps_ok "<kw> <oid> <caps>". On success *oid
 * and, when caps follow, the caps view (else clen 0).
 */
static int parse_id_line(const struct pw_fetch_args *a, const char *line, size_t len,
                         const char *kw, int caps_ok, struct pw_oid *oid, const char **caps,
                         size_t *clen, struct pw_error *err)
{
	const char *rest;
	size_t rlen, hexsz = a->algo->hexsz;
	char q[PW_QUOTE_MAX];

	if (!has_arg(line, len, kw, &rest, &rlen) || rlen < hexsz ||
	    pw_oid_from_hex(oid, rest, rlen, a->algo) ||
	    (rlen > hexsz && (!caps_ok || rest[hexsz] != ' ')))
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: expected '%s <%s id>', got '%s'", kw,
		                    a->algo->name, pw_proto__quote(q, sizeof(q), line, len));
	if (caps) {
		*caps = rlen > hexsz ? rest + hexsz + 1 : rest + rlen;
		*clen = rlen > hexsz ? rlen - hexsz - 1 : 0;
	}
	return 0;
}

/* Strict decimal: digits only, no sign, no overflow past max. */
static int parse_u64(const char *p, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!len)
		return -1;
	for (i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		if (v > (max - (uint64_t)(p[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	*out = v;
	return 0;
}

void pw_filter_free(struct pw_filter *f)
{
	size_t i;

	for (i = 0; i < f->nr_sub; i++)
		pw_filter_free(&f->sub[i]);
	free(f->sub);
	free(f->sparse_oid);
	memset(f, 0, sizeof(*f));
}

const char *pw_filter_config_name(enum pw_filter_kind kind)
{
	switch (kind) {
	case PW_FILTER_BLOB_NONE:
		return "blob:none";
	case PW_FILTER_BLOB_LIMIT:
		return "blob:limit";
	case PW_FILTER_TREE_DEPTH:
		return "tree";
	case PW_FILTER_SPARSE_OID:
		return "sparse:oid";
	case PW_FILTER_COMBINE:
		return "combine";
	default:
		return "";
	}
}

static int filter_parse(struct pw_filter *out, const char *spec, size_t len, int nesting,
                        struct pw_error *err);

/* combine:<sub>+<sub>...: each sub-spec may not hold a reserved character
 * unescaped, and is %-decoded before it is parsed (Git's rules). */
static int parse_combine(struct pw_filter *out, const char *p, size_t len, int nesting,
                         struct pw_error *err)
{
	static const char reserved[] = "~`!@#$^&*()[]{}\\;'\",<>?";
	size_t start = 0, i;

	if (!len)
		return pw_error_set(err, PW_EINVAL, "expected something after combine:");
	if (nesting >= PW_FILTER_MAX_NESTING)
		return pw_error_set(err, PW_EINVAL,
		                    "invalid filter-spec: combine: nested too deep");
	out->kind = PW_FILTER_COMBINE;
	while (start <= len) {
		const char *e = memchr(p + start, '+', len - start);
		size_t sl = e ? (size_t)(e - (p + start)) : len - start, n = 0;
		const char *sub = p + start;
		struct pw_filter *nv;
		char *dec;
		int rc;

		for (i = 0; i < sl; i++)
			if ((unsigned char)sub[i] <= ' ' || strchr(reserved, sub[i]))
				return pw_error_set(err, PW_EINVAL,
				                    "must escape char in sub-filter-spec: '%c'",
				                    sub[i]);
		if (!(dec = malloc(sl + 1)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		for (i = 0; i < sl; i++) {
			if (sub[i] == '%' && i + 2 < sl && pw_hexval(sub[i + 1]) >= 0 &&
			    pw_hexval(sub[i + 2]) >= 0) {
				dec[n++] =
				        (char)(pw_hexval(sub[i + 1]) * 16 + pw_hexval(sub[i + 2]));
				i += 2;
			} else {
				dec[n++] = sub[i];
			}
		}
		dec[n] = '\0';
		nv = realloc(out->sub, (out->nr_sub + 1) * sizeof(*nv));
		if (!nv) {
			free(dec);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		out->sub = nv;
		memset(&out->sub[out->nr_sub], 0, sizeof(*nv));
		out->nr_sub++;
		rc = filter_parse(&out->sub[out->nr_sub - 1], dec, n, nesting + 1, err);
		free(dec);
		if (rc)
			return rc;
		if (!e)
			break;
		start += sl + 1;
	}
	return 0;
}

int pw_filter_parse(struct pw_filter *out, const char *spec, size_t len, struct pw_error *err)
{
	int rc;

	memset(out, 0, sizeof(*out));
	rc = filter_parse(out, spec, len, 0, err);
	if (rc) /* a combine: that failed part-way holds its first sub-filters */
		pw_filter_free(out);
	return rc;
}

static int filter_parse(struct pw_filter *out, const char *spec, size_t len, int nesting,
                        struct pw_error *err)
{
	char q[PW_QUOTE_MAX];
	uint64_t v;

	out->kind = PW_FILTER_NONE;
	out->value = 0;
	if (len >= 8 && !memcmp(spec, "combine:", 8))
		return parse_combine(out, spec + 8, len - 8, nesting, err);
	if (len > 11 && !memcmp(spec, "sparse:oid=", 11) && !memchr(spec, '\0', len)) {
		if (!(out->sparse_oid = malloc(len - 11 + 1)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		memcpy(out->sparse_oid, spec + 11, len - 11);
		out->sparse_oid[len - 11] = '\0';
		out->kind = PW_FILTER_SPARSE_OID;
		return 0;
	}
	if (is_word(spec, len, "blob:none")) {
		out->kind = PW_FILTER_BLOB_NONE;
		return 0;
	}
	if (len > 11 && !memcmp(spec, "blob:limit=", 11)) {
		const char *n = spec + 11;
		size_t nlen = len - 11;
		uint64_t mult = 1;

		switch (n[nlen - 1]) {
		case 'k':
		case 'K':
			mult = 1024;
			break;
		case 'm':
		case 'M':
			mult = 1024 * 1024;
			break;
		case 'g':
		case 'G':
			mult = 1024 * 1024 * 1024;
			break;
		}
		if (mult > 1)
			nlen--;
		if (!parse_u64(n, nlen, UINT64_MAX / mult, &v)) {
			out->kind = PW_FILTER_BLOB_LIMIT;
			out->value = v * mult;
			return 0;
		}
	} else if (len > 5 && !memcmp(spec, "tree:", 5)) {
		if (!parse_u64(spec + 5, len - 5, UINT32_MAX, &v)) {
			out->kind = PW_FILTER_TREE_DEPTH;
			out->value = v;
			return 0;
		}
	} else if ((len >= 7 && !memcmp(spec, "sparse:", 7)) ||
	           (len >= 12 && !memcmp(spec, "object:type=", 12))) {
		return pw_error_set(err, PW_EUNSUPPORTED, "unsupported filter-spec '%s'",
		                    pw_proto__quote(q, sizeof(q), spec, len));
	}
	return pw_error_set(err, PW_EINVAL, "invalid filter-spec '%s'",
	                    pw_proto__quote(q, sizeof(q), spec, len));
}

static int set_filter(struct pw_fetch_args *a, const char *spec, size_t len, struct pw_error *err)
{
	int rc;

	if (a->has_filter)
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: multiple filter-specs cannot be combined");
	rc = pw_filter_parse(&a->filter, spec, len, err);
	if (rc)
		return rc;
	a->has_filter = 1;
	return 0;
}

/* The lines v0 and v2 share: shallow, deepen, deepen-since, deepen-not,
 * filter. Returns 1 when the line was not one of them. */
static int common_line(struct pw_fetch_args *a, const char *line, size_t len, struct pw_error *err)
{
	char q[PW_QUOTE_MAX];
	const char *rest;
	size_t rlen;
	struct pw_oid oid;
	uint64_t v;
	int rc;

	if (has_arg(line, len, "shallow", &rest, &rlen)) {
		rc = parse_id_line(a, line, len, "shallow", 0, &oid, NULL, NULL, err);
		if (rc)
			return rc;
		rc = oid_push(&a->shallows, &oid);
		return rc ? limit_error(rc, err) : 0;
	}
	if (has_arg(line, len, "deepen", &rest, &rlen)) {
		if (parse_u64(rest, rlen, 0x7fffffff, &v) || !v)
			return pw_error_set(err, PW_EPROTO, "protocol error: invalid deepen: '%s'",
			                    pw_proto__quote(q, sizeof(q), line, len));
		a->depth = (unsigned)v;
		return 0;
	}
	if (has_arg(line, len, "deepen-since", &rest, &rlen)) {
		if (parse_u64(rest, rlen, UINT64_MAX, &v) || !v)
			return pw_error_set(err, PW_EPROTO,
			                    "protocol error: invalid deepen-since: '%s'",
			                    pw_proto__quote(q, sizeof(q), line, len));
		a->deepen_since = v;
		return 0;
	}
	if (has_arg(line, len, "deepen-not", &rest, &rlen)) {
		if (!rlen || memchr(rest, '\0', rlen))
			return pw_error_set(err, PW_EPROTO,
			                    "protocol error: invalid deepen-not: '%s'",
			                    pw_proto__quote(q, sizeof(q), line, len));
		rc = str_push(&a->deepen_not, rest, rlen);
		return rc ? limit_error(rc, err) : 0;
	}
	if (has_arg(line, len, "filter", &rest, &rlen))
		return set_filter(a, rest, rlen, err);
	return 1;
}

static int chomp(const char *line, size_t len)
{
	return len && line[len - 1] == '\n';
}

int pw_fetch_args_v2_line(struct pw_fetch_args *a, const char *line, size_t len,
                          struct pw_error *err)
{
	static const struct {
		const char *word;
		size_t bit;
	} flags[] = {
	        {"thin-pack", 0}, {"ofs-delta", 1},       {"no-progress", 2},  {"include-tag", 3},
	        {"done", 4},      {"deepen-relative", 5}, {"sideband-all", 6}, {"wait-for-done", 7},
	};
	char q[PW_QUOTE_MAX];
	const char *rest;
	size_t rlen, i;
	struct pw_oid oid;
	int rc;

	if (chomp(line, len))
		len--;
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		if (!is_word(line, len, flags[i].word))
			continue;
		switch (flags[i].bit) {
		case 0:
			a->thin_pack = 1;
			break;
		case 1:
			a->ofs_delta = 1;
			break;
		case 2:
			a->no_progress = 1;
			break;
		case 3:
			a->include_tag = 1;
			break;
		case 4:
			a->done = 1;
			break;
		case 5:
			a->deepen_relative = 1;
			break;
		case 6:
			a->sideband_all = 1;
			break;
		case 7:
			a->wait_for_done = 1;
			break;
		}
		return 0;
	}
	if (has_arg(line, len, "want", &rest, &rlen) || is_word(line, len, "want")) {
		rc = parse_id_line(a, line, len, "want", 0, &oid, NULL, NULL, err);
		if (!rc && (rc = oid_push(&a->wants, &oid)))
			return limit_error(rc, err);
		return rc;
	}
	if (has_arg(line, len, "have", &rest, &rlen) || is_word(line, len, "have")) {
		rc = parse_id_line(a, line, len, "have", 0, &oid, NULL, NULL, err);
		if (!rc && (rc = oid_push(&a->haves, &oid)))
			return limit_error(rc, err);
		return rc;
	}
	if (has_arg(line, len, "want-ref", &rest, &rlen)) {
		if (!rlen || memchr(rest, '\0', rlen) || memchr(rest, ' ', rlen))
			return pw_error_set(err, PW_EPROTO,
			                    "protocol error: invalid want-ref: '%s'",
			                    pw_proto__quote(q, sizeof(q), line, len));
		rc = str_push(&a->want_refs, rest, rlen);
		return rc ? limit_error(rc, err) : 0;
	}
	if (has_arg(line, len, "packfile-uris", &rest, &rlen)) {
		a->packfile_uris = 1; /* we never send URIs; the request is still valid */
		return 0;
	}
	if (is_word(line, len, "shallow"))
		return parse_id_line(a, line, len, "shallow", 0, &oid, NULL, NULL, err);
	rc = common_line(a, line, len, err);
	if (rc <= 0)
		return rc;
	return pw_error_set(err, PW_EPROTO, "unexpected line: '%s'",
	                    pw_proto__quote(q, sizeof(q), line, len));
}

int pw_fetch_args_check(const struct pw_fetch_args *a, struct pw_error *err)
{
	if (a->depth && (a->deepen_since || a->deepen_not.nr))
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: deepen and deepen-since (or deepen-not) "
		                    "cannot be used together");
	return 0;
}

int pw_fetch_args_v2_request(struct pw_fetch_args *a, const struct pw_v2_request *req,
                             struct pw_error *err)
{
	size_t i;

	for (i = 0; i < req->nargs; i++) {
		int rc = pw_fetch_args_v2_line(a, req->args[i].p, req->args[i].len, err);

		if (rc)
			return rc;
	}
	return pw_fetch_args_check(a, err);
}

static void v0_caps_flags(struct pw_fetch_args *a, const char *caps, size_t len)
{
	a->multi_ack |= pw_caps_has(caps, len, "multi_ack");
	a->multi_ack_detailed |= pw_caps_has(caps, len, "multi_ack_detailed");
	a->side_band |= pw_caps_has(caps, len, "side-band");
	a->side_band_64k |= pw_caps_has(caps, len, "side-band-64k");
	a->thin_pack |= pw_caps_has(caps, len, "thin-pack");
	a->ofs_delta |= pw_caps_has(caps, len, "ofs-delta");
	a->no_progress |= pw_caps_has(caps, len, "no-progress");
	a->include_tag |= pw_caps_has(caps, len, "include-tag");
	a->no_done |= pw_caps_has(caps, len, "no-done");
	a->deepen_relative |= pw_caps_has(caps, len, "deepen-relative");
	a->allow_tip_sha1 |= pw_caps_has(caps, len, "allow-tip-sha1-in-want");
	a->allow_reachable_sha1 |= pw_caps_has(caps, len, "allow-reachable-sha1-in-want");
}

int pw_fetch_args_v0_want_line(struct pw_fetch_args *a, const char *line, size_t len,
                               struct pw_error *err)
{
	char q[PW_QUOTE_MAX];
	const char *rest, *caps;
	size_t rlen, clen;
	struct pw_oid oid;
	int rc;

	if (chomp(line, len))
		len--;
	if (has_arg(line, len, "want", &rest, &rlen) || is_word(line, len, "want")) {
		rc = parse_id_line(a, line, len, "want", 1, &oid, &caps, &clen, err);
		if (rc)
			return rc;
		rc = oid_push(&a->wants, &oid);
		if (rc)
			return limit_error(rc, err);
		if (clen) {
			v0_caps_flags(a, caps, clen);
			if (!a->v0_caps) {
				a->v0_caps = malloc(clen + 1);
				if (!a->v0_caps)
					return pw_error_set(err, PW_ENOMEM, "out of memory");
				memcpy(a->v0_caps, caps, clen);
				a->v0_caps[clen] = '\0';
			}
		}
		return 0;
	}
	if (is_word(line, len, "shallow"))
		return parse_id_line(a, line, len, "shallow", 0, &oid, NULL, NULL, err);
	rc = common_line(a, line, len, err);
	if (rc <= 0)
		return rc;
	return pw_error_set(err, PW_EPROTO, "protocol error: expected 'want <%s id>', got '%s'",
	                    a->algo->name, pw_proto__quote(q, sizeof(q), line, len));
}

int pw_fetch_args_v0_have_line(struct pw_fetch_args *a, const char *line, size_t len,
                               struct pw_error *err)
{
	char q[PW_QUOTE_MAX];
	struct pw_oid oid;
	int rc;

	if (chomp(line, len))
		len--;
	if (is_word(line, len, "done")) {
		a->done = 1;
		return 0;
	}
	if (len >= 4 && !memcmp(line, "have", 4)) {
		rc = parse_id_line(a, line, len, "have", 0, &oid, NULL, NULL, err);
		if (!rc && (rc = oid_push(&a->haves, &oid)))
			return limit_error(rc, err);
		return rc;
	}
	return pw_error_set(err, PW_EPROTO,
	                    "protocol error: expected 'have <%s id>' or 'done', got '%s'",
	                    a->algo->name, pw_proto__quote(q, sizeof(q), line, len));
}
