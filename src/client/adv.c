/* Parsing what an upload-pack server says about its refs: the v0/v1 ref
 * advertisement and the v2 ls-refs response. No I/O: packets in, refs out. */
#include <stdlib.h>
#include <string.h>

#include "packwire/client.h"
#include "proto/quote.h"

#define ADV_MAX_REFS (1u << 22)

void pw_adv_init(struct pw_adv *a)
{
	memset(a, 0, sizeof(*a));
}

void pw_adv_free(struct pw_adv *a)
{
	size_t i;

	for (i = 0; i < a->nr; i++) {
		free(a->refs[i].name);
		free(a->refs[i].symref_target);
	}
	free(a->refs);
	free(a->caps);
	free(a->shallow);
	memset(a, 0, sizeof(*a));
}

const struct pw_remote_ref *pw_adv_find(const struct pw_adv *a, const char *name)
{
	size_t i;

	for (i = 0; i < a->nr; i++)
		if (!strcmp(a->refs[i].name, name))
			return &a->refs[i];
	return NULL;
}

static int bad_line(struct pw_error *err, const char *what, const char *p, size_t n)
{
	char q[PW_QUOTE_MAX];

	return pw_error_set(err, PW_EPROTO, "protocol error: %s: '%s'", what,
	                    pw_proto__quote(q, sizeof(q), p, n));
}

int pw_adv__add_ref(struct pw_adv *a, const char *name, size_t len, struct pw_remote_ref **out,
                    struct pw_error *err)
{
	struct pw_remote_ref *r;

	if (a->nr == a->alloc) {
		size_t n = a->alloc ? a->alloc * 2 : 64;
		void *p = realloc(a->refs, n * sizeof(*a->refs));

		if (!p)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		a->refs = p;
		a->alloc = n;
	}
	r = &a->refs[a->nr];
	memset(r, 0, sizeof(*r));
	r->name = malloc(len + 1);
	if (!r->name)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memcpy(r->name, name, len);
	r->name[len] = 0;
	a->nr++;
	*out = r;
	return 0;
}

static int add_ref(struct pw_adv *a, const char *name, size_t len, struct pw_remote_ref **out,
                   struct pw_error *err)
{
	if (a->nr >= ADV_MAX_REFS)
		return pw_error_set(err, PW_ETOOBIG, "protocol error: too many refs advertised");
	return pw_adv__add_ref(a, name, len, out, err);
}

static int add_shallow(struct pw_adv *a, const struct pw_oid *oid, struct pw_error *err)
{
	if (a->nr_shallow >= ADV_MAX_REFS)
		return pw_error_set(err, PW_ETOOBIG, "protocol error: too many shallow lines");
	if (a->nr_shallow == a->alloc_shallow) {
		size_t n = a->alloc_shallow ? a->alloc_shallow * 2 : 16;
		void *p = realloc(a->shallow, n * sizeof(*a->shallow));

		if (!p)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		a->shallow = p;
		a->alloc_shallow = n;
	}
	a->shallow[a->nr_shallow++] = *oid;
	return 0;
}

/* A ref name from the wire: non-empty, no control bytes or spaces. */
static int name_ok(const char *p, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] <= ' ' || p[i] == 0x7f)
			return 0;
	return 1;
}

/* Learn the algorithm from the first line's capabilities and id length. */
static int learn_algo(struct pw_adv *a, size_t hexlen, const char *line, size_t n,
                      struct pw_error *err)
{
	struct pw_str v;
	int rc;

	if (!pw_caps_get(a->caps, a->caps_len, "object-format", &v)) {
		if (!v.p)
			return bad_line(err, "object-format without a value", line, n);
		if ((rc = pw_object_format_lookup(v.p, v.len, &a->algo, err)))
			return rc;
		a->algo_advertised = 1;
		if (hexlen != a->algo->hexsz)
			return pw_error_set(err, PW_EPROTO,
			                    "protocol error: the server announced object-format "
			                    "%s but sent a %zu-digit id",
			                    a->algo->name, hexlen);
		return 0;
	}
	a->algo = pw_hash_guess_from_hexlen(hexlen);
	if (!a->algo)
		return bad_line(err, "expected an object id", line, n);
	return 0;
}

static int parse_oid(const struct pw_adv *a, const char *p, size_t n, struct pw_oid *oid,
                     const char *line, size_t len, struct pw_error *err)
{
	if (n != a->algo->hexsz || pw_oid_from_hex(oid, p, n, a->algo)) {
		char q[PW_QUOTE_MAX];

		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: expected a %s id, got '%s' (mixed object "
		                    "formats?)",
		                    a->algo->name, pw_proto__quote(q, sizeof(q), line, len));
	}
	return 0;
}

/* symref=HEAD:refs/heads/main capabilities onto the refs. */
static int apply_symrefs(struct pw_adv *a, struct pw_error *err)
{
	struct pw_caps_iter it;
	struct pw_str v;

	pw_caps_iter_init(&it, a->caps, a->caps_len);
	while (pw_caps_next_value(&it, "symref", &v)) {
		const char *colon = v.p ? memchr(v.p, ':', v.len) : NULL;
		size_t i, nl;

		if (!colon)
			continue;
		nl = (size_t)(colon - v.p);
		for (i = 0; i < a->nr; i++) {
			struct pw_remote_ref *r = &a->refs[i];
			size_t tl = v.len - nl - 1;

			if (strlen(r->name) != nl || memcmp(r->name, v.p, nl) || r->symref_target)
				continue;
			r->symref_target = malloc(tl + 1);
			if (!r->symref_target)
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			memcpy(r->symref_target, colon + 1, tl);
			r->symref_target[tl] = 0;
		}
	}
	return 0;
}

int pw_adv_feed_v0(struct pw_adv *a, const struct pw_pkt *pkt_in, struct pw_error *err)
{
	struct pw_pkt pkt = *pkt_in;
	struct pw_str head, caps, msg;
	const char *sp, *name;
	size_t hexlen, nlen;
	struct pw_oid oid;
	int rc;

	if (a->state == PW_ADV_DONE)
		return pw_error_set(err, PW_EINVAL, "advertisement already complete");
	if (pkt.kind == PW_PKT_EOF)
		return pw_error_set(err, PW_EPROTO,
		                    a->state == PW_ADV_FIRST && !a->version
		                            ? "the remote end hung up upon initial contact"
		                            : "the remote end hung up unexpectedly");
	if (pkt.kind == PW_PKT_FLUSH) {
		if (a->state == PW_ADV_FIRST) {
			a->empty = 1;
			if (!a->caps && !(a->caps = calloc(1, 1)))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		a->state = PW_ADV_DONE;
		if (!a->algo)
			a->algo = &pw_hash_sha1;
		return apply_symrefs(a, err);
	}
	if (pkt.kind != PW_PKT_DATA)
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: unexpected control packet in the ref "
		                    "advertisement");
	if (pw_pkt_is_err(&pkt, &msg))
		return pw_error_set(err, PW_EPROTO, "remote error: %.*s", (int)msg.len, msg.p);
	pw_pkt_chomp(&pkt);
	if (a->state == PW_ADV_FIRST && !a->version && pkt.len == 9 &&
	    !memcmp(pkt.data, "version 1", 9)) {
		a->version = 1;
		return PW_EMORE;
	}
	if (a->state == PW_ADV_FIRST && pkt.len == 9 && !memcmp(pkt.data, "version 2", 9))
		return pw_error_set(err, PW_EPROTO, "protocol error: unexpected 'version 2'");
	if (pkt.len >= 8 && !memcmp(pkt.data, "shallow ", 8)) {
		if (a->state == PW_ADV_FIRST)
			return bad_line(err, "shallow line before any ref", pkt.data, pkt.len);
		if ((rc = parse_oid(a, pkt.data + 8, pkt.len - 8, &oid, pkt.data, pkt.len, err)))
			return rc;
		a->state = PW_ADV_SHALLOW;
		return (rc = add_shallow(a, &oid, err)) ? rc : PW_EMORE;
	}
	if (a->state == PW_ADV_SHALLOW)
		return bad_line(err, "ref after shallow lines", pkt.data, pkt.len);
	if (pw_adv_line_split(pkt.data, pkt.len, &head, &caps) && a->state == PW_ADV_FIRST) {
		a->caps = malloc(caps.len + 1);
		if (!a->caps)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		memcpy(a->caps, caps.p, caps.len);
		a->caps[caps.len] = 0;
		a->caps_len = caps.len;
	}
	sp = memchr(head.p, ' ', head.len);
	if (!sp)
		return bad_line(err, "expected '<id> <ref>'", pkt.data, pkt.len);
	hexlen = (size_t)(sp - head.p);
	name = sp + 1;
	nlen = head.len - hexlen - 1;
	if (a->state == PW_ADV_FIRST) {
		if (!a->caps) {
			a->caps = calloc(1, 1);
			if (!a->caps)
				return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		if ((rc = learn_algo(a, hexlen, pkt.data, pkt.len, err)))
			return rc;
	}
	if ((rc = parse_oid(a, head.p, hexlen, &oid, pkt.data, pkt.len, err)))
		return rc;
	if (nlen == 15 && !memcmp(name, "capabilities^{}", 15)) {
		if (a->state != PW_ADV_FIRST || !pw_oid_is_zero(&oid))
			return bad_line(err, "unexpected capabilities^{}", pkt.data, pkt.len);
		a->empty = 1;
		a->state = PW_ADV_REFS;
		return PW_EMORE;
	}
	if (!name_ok(name, nlen))
		return bad_line(err, "bad ref name", pkt.data, pkt.len);
	if (a->empty)
		return bad_line(err, "ref after capabilities^{}", pkt.data, pkt.len);
	if (nlen > 3 && !memcmp(name + nlen - 3, "^{}", 3)) {
		struct pw_remote_ref *prev = a->nr ? &a->refs[a->nr - 1] : NULL;

		if (!prev || strlen(prev->name) != nlen - 3 || memcmp(prev->name, name, nlen - 3))
			return bad_line(err, "peeled value without its ref", pkt.data, pkt.len);
		prev->peeled = oid;
		prev->has_peeled = 1;
	} else {
		struct pw_remote_ref *r;

		if ((rc = add_ref(a, name, nlen, &r, err)))
			return rc;
		r->oid = oid;
	}
	a->state = PW_ADV_REFS;
	return PW_EMORE;
}

/* " symref-target:X" and " peeled:Y" attributes after the name. */
static int ls_refs_attrs(struct pw_adv *a, struct pw_remote_ref *r, const char *p, const char *end,
                         const char *line, size_t len, struct pw_error *err)
{
	while (p < end) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		const char *e = sp ? sp : end;
		size_t n = (size_t)(e - p);
		int rc;

		if (n > 14 && !memcmp(p, "symref-target:", 14)) {
			if (!name_ok(p + 14, n - 14))
				return bad_line(err, "bad symref-target", line, len);
			free(r->symref_target);
			r->symref_target = malloc(n - 14 + 1);
			if (!r->symref_target)
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			memcpy(r->symref_target, p + 14, n - 14);
			r->symref_target[n - 14] = 0;
		} else if (n > 7 && !memcmp(p, "peeled:", 7)) {
			if ((rc = parse_oid(a, p + 7, n - 7, &r->peeled, line, len, err)))
				return rc;
			r->has_peeled = 1;
		} /* unknown attributes are for newer clients */
		p = sp ? sp + 1 : end;
	}
	return 0;
}

int pw_adv_feed_ls_refs(struct pw_adv *a, const struct pw_pkt *pkt_in, struct pw_error *err)
{
	struct pw_pkt pkt = *pkt_in;
	const char *sp, *end, *name, *nend;
	struct pw_remote_ref *r;
	struct pw_str msg;
	struct pw_oid oid;
	int rc, unborn = 0;

	if (!a->algo)
		return pw_error_set(err, PW_EINVAL, "ls-refs: algorithm not set");
	if (pkt.kind == PW_PKT_EOF)
		return pw_error_set(err, PW_EPROTO, "the remote end hung up unexpectedly");
	if (pkt.kind == PW_PKT_FLUSH) {
		a->state = PW_ADV_DONE;
		if (!a->nr)
			a->empty = 1;
		return 0;
	}
	if (pkt.kind != PW_PKT_DATA)
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: unexpected control packet in "
		                    "the ls-refs response");
	if (pw_pkt_is_err(&pkt, &msg))
		return pw_error_set(err, PW_EPROTO, "remote error: %.*s", (int)msg.len, msg.p);
	pw_pkt_chomp(&pkt);
	end = pkt.data + pkt.len;
	sp = memchr(pkt.data, ' ', pkt.len);
	if (!sp)
		return bad_line(err, "invalid ls-refs response", pkt.data, pkt.len);
	if (sp - pkt.data == 6 && !memcmp(pkt.data, "unborn", 6)) {
		unborn = 1;
		pw_oid_zero(&oid, a->algo);
	} else if ((rc = parse_oid(a, pkt.data, (size_t)(sp - pkt.data), &oid, pkt.data, pkt.len,
	                           err))) {
		return rc;
	}
	name = sp + 1;
	nend = memchr(name, ' ', (size_t)(end - name));
	if (!nend)
		nend = end;
	if (!name_ok(name, (size_t)(nend - name)))
		return bad_line(err, "bad ref name", pkt.data, pkt.len);
	if ((rc = add_ref(a, name, (size_t)(nend - name), &r, err)))
		return rc;
	r->oid = oid;
	r->unborn = unborn;
	if (nend < end && (rc = ls_refs_attrs(a, r, nend + 1, end, pkt.data, pkt.len, err)))
		return rc;
	if (unborn && !r->symref_target)
		return bad_line(err, "unborn ref without symref-target", pkt.data, pkt.len);
	a->state = PW_ADV_REFS;
	return PW_EMORE;
}
