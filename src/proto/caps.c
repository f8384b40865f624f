/* Capability lists (v0/v1 and v2 advertisements) and object-format rules. */
#include <stdlib.h>
#include <string.h>

#include "packwire/proto.h"
#include "proto/lines.h"
#include "proto/quote.h"

/* ---- v0/v1 -------------------------------------------------------------- */

static int is_sep(char c)
{
	return c == ' ' || c == '\n';
}

void pw_caps_iter_init(struct pw_caps_iter *it, const char *caps, size_t len)
{
	it->p = caps;
	it->end = caps ? caps + len : caps;
}

int pw_caps_next(struct pw_caps_iter *it, struct pw_str *key, struct pw_str *val)
{
	const char *tok, *eq;

	while (it->p < it->end && is_sep(*it->p))
		it->p++;
	if (it->p >= it->end)
		return 0;
	tok = it->p;
	while (it->p < it->end && !is_sep(*it->p))
		it->p++;
	eq = memchr(tok, '=', (size_t)(it->p - tok));
	key->p = tok;
	key->len = (size_t)((eq ? eq : it->p) - tok);
	if (eq) {
		val->p = eq + 1;
		val->len = (size_t)(it->p - eq - 1);
	} else {
		val->p = NULL;
		val->len = 0;
	}
	return 1;
}

static int str_is(struct pw_str s, const char *key)
{
	size_t n = strlen(key);

	return s.len == n && !memcmp(s.p, key, n);
}

int pw_caps_next_value(struct pw_caps_iter *it, const char *key, struct pw_str *val)
{
	struct pw_str k, v;

	while (pw_caps_next(it, &k, &v)) {
		if (str_is(k, key)) {
			if (val)
				*val = v;
			return 1;
		}
	}
	return 0;
}

int pw_caps_get(const char *caps, size_t len, const char *key, struct pw_str *val)
{
	struct pw_caps_iter it;

	pw_caps_iter_init(&it, caps, len);
	return pw_caps_next_value(&it, key, val) ? 0 : PW_ENOTFOUND;
}

int pw_caps_has(const char *caps, size_t len, const char *key)
{
	return pw_caps_get(caps, len, key, NULL) == 0;
}

int pw_caps_add(struct pw_buf *out, const char *key, const char *value)
{
	size_t start = out->len;
	int rc = 0;

	if (out->len && out->data[out->len - 1] != '\0')
		rc = pw_buf_addch(out, ' ');
	if (!rc)
		rc = pw_buf_adds(out, key);
	if (!rc && value) {
		rc = pw_buf_addch(out, '=');
		if (!rc)
			rc = pw_buf_adds(out, value);
	}
	if (rc)
		pw_buf_setlen(out, start);
	return rc;
}

int pw_adv_line_split(const char *line, size_t len, struct pw_str *head, struct pw_str *caps)
{
	const char *nul = memchr(line, '\0', len);

	if (len && line[len - 1] == '\n')
		len--;
	if (!nul || nul >= line + len) {
		head->p = line;
		head->len = len;
		caps->p = line + len;
		caps->len = 0;
		return 0;
	}
	head->p = line;
	head->len = (size_t)(nul - line);
	caps->p = nul + 1;
	caps->len = len - head->len - 1;
	return 1;
}

/* ---- v2 advertisement --------------------------------------------------- */

void pw_v2_split(struct pw_str line, struct pw_str *key, struct pw_str *val)
{
	const char *eq = line.len ? memchr(line.p, '=', line.len) : NULL;

	key->p = line.p;
	key->len = eq ? (size_t)(eq - line.p) : line.len;
	if (eq) {
		val->p = eq + 1;
		val->len = line.len - key->len - 1;
	} else {
		val->p = NULL;
		val->len = 0;
	}
}

enum { V2C_VERSION = 0, V2C_LINES, V2C_DONE, V2C_FAILED };

void pw_v2_caps_init(struct pw_v2_caps *c)
{
	memset(c, 0, sizeof(*c));
	pw_buf_init(&c->store_, 0);
}

void pw_v2_caps_free(struct pw_v2_caps *c)
{
	free(c->lines);
	free(c->off_);
	free(c->len_);
	pw_buf_free(&c->store_);
	pw_v2_caps_init(c);
}

int pw_v2_caps_feed(struct pw_v2_caps *c, const struct pw_pkt *pkt, struct pw_error *err)
{
	struct pw_pkt p = *pkt;
	char q[PW_QUOTE_MAX];
	int rc;

	if (c->state_ == V2C_DONE || c->state_ == V2C_FAILED)
		return pw_error_set(err, PW_EINVAL, "capability advertisement already complete");
	pw_pkt_chomp(&p);
	if (c->state_ == V2C_VERSION) {
		if (p.kind != PW_PKT_DATA || p.len != 9 || memcmp(p.data, "version 2", 9)) {
			c->state_ = V2C_FAILED;
			return pw_error_set(
			        err, PW_EPROTO, "protocol error: expected 'version 2', got '%s'",
			        p.kind == PW_PKT_DATA ? pw_proto__quote(q, sizeof(q), p.data, p.len)
			        : p.kind == PW_PKT_FLUSH ? "0000"
			        : p.kind == PW_PKT_DELIM ? "0001"
			                                 : "0002");
		}
		c->state_ = V2C_LINES;
		return PW_EMORE;
	}
	switch (p.kind) {
	case PW_PKT_FLUSH:
		rc = pw_proto__lines_views(&c->store_, c->off_, c->len_, c->nr, &c->lines);
		c->state_ = rc ? V2C_FAILED : V2C_DONE;
		return rc;
	case PW_PKT_DATA:
		break;
	default:
		c->state_ = V2C_FAILED;
		return pw_error_set(
		        err, PW_EPROTO,
		        "protocol error: unexpected %s packet in capability advertisement",
		        p.kind == PW_PKT_DELIM ? "delim" : "response-end");
	}
	if (!p.len) {
		c->state_ = V2C_FAILED;
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: empty line in capability advertisement");
	}
	rc = pw_proto__lines_add(&c->store_, &c->off_, &c->len_, &c->alloc_, c->nr, p.data, p.len,
	                         PW_V2_CAPS_MAX);
	if (rc) {
		c->state_ = V2C_FAILED;
		return rc == PW_ETOOBIG ? pw_error_set(err, rc,
		                                       "protocol error: capability advertisement "
		                                       "longer than %u lines",
		                                       PW_V2_CAPS_MAX)
		                        : pw_error_set(err, rc, "%s", pw_strerror(rc));
	}
	c->nr++;
	return PW_EMORE;
}

int pw_v2_caps_parse(struct pw_v2_caps *c, const uint8_t *in, size_t len, size_t *used,
                     struct pw_error *err)
{
	size_t off = 0;

	*used = 0;
	for (;;) {
		struct pw_pkt pkt;
		size_t n;
		int rc = pw_pkt_decode(in + off, len - off, &pkt, &n, err);

		if (rc)
			return rc;
		off += n;
		rc = pw_v2_caps_feed(c, &pkt, err);
		if (rc != PW_EMORE) {
			if (!rc)
				*used = off;
			return rc;
		}
	}
}

int pw_v2_caps_get(const struct pw_v2_caps *c, const char *key, struct pw_str *val)
{
	size_t i;

	if (c->state_ != V2C_DONE)
		return PW_ENOTFOUND;
	for (i = 0; i < c->nr; i++) {
		struct pw_str k, v;

		pw_v2_split(c->lines[i], &k, &v);
		if (str_is(k, key)) {
			if (val)
				*val = v;
			return 0;
		}
	}
	return PW_ENOTFOUND;
}

int pw_v2_caps_has(const struct pw_v2_caps *c, const char *key)
{
	return pw_v2_caps_get(c, key, NULL) == 0;
}

int pw_v2_caps_has_feature(const struct pw_v2_caps *c, const char *key, const char *feature)
{
	struct pw_str v;

	if (pw_v2_caps_get(c, key, &v) || !v.p)
		return 0;
	return pw_caps_has(v.p, v.len, feature);
}

int pw_v2_adv_write(struct pw_buf *out, const char *const *lines, size_t n)
{
	size_t start = out->len, i;
	int rc = pw_pkt_writes(out, "version 2\n");

	for (i = 0; !rc && i < n; i++)
		rc = pw_pkt_writef(out, "%s\n", lines[i]);
	if (!rc)
		rc = pw_pkt_flush(out);
	if (rc)
		pw_buf_setlen(out, start);
	return rc;
}

/* ---- object-format ------------------------------------------------------ */

int pw_object_format_lookup(const char *name, size_t len, const struct pw_hash_algo **out,
                            struct pw_error *err)
{
	const struct pw_hash_algo *a = pw_hash_by_name(name, len);
	char q[PW_QUOTE_MAX];

	if (!a)
		return pw_error_set(err, PW_EPROTO, "unknown object format '%s'",
		                    pw_proto__quote(q, sizeof(q), name, len));
	if (out)
		*out = a;
	return 0;
}

int pw_object_format_server_check(const struct pw_hash_algo *server, const struct pw_str *requested,
                                  const struct pw_hash_algo **client, struct pw_error *err)
{
	const struct pw_hash_algo *c = &pw_hash_sha1; /* absent means sha1 */

	if (requested) {
		int rc = pw_object_format_lookup(requested->p ? requested->p : "", requested->len,
		                                 &c, err);

		if (rc)
			return rc;
	}
	if (c->id != server->id)
		return pw_error_set(err, PW_EMISMATCH,
		                    "mismatched object format: server %s; client %s", server->name,
		                    c->name);
	if (client)
		*client = c;
	return 0;
}

int pw_object_format_from_caps(const char *caps, size_t len, const struct pw_hash_algo **out,
                               struct pw_error *err)
{
	struct pw_str v;

	if (pw_caps_get(caps, len, "object-format", &v)) {
		*out = &pw_hash_sha1;
		return 0;
	}
	return pw_object_format_lookup(v.p ? v.p : "", v.len, out, err);
}

int pw_object_format_caps_supports(const char *caps, size_t len, const struct pw_hash_algo *algo)
{
	struct pw_caps_iter it;
	struct pw_str v;
	int any = 0;

	pw_caps_iter_init(&it, caps, len);
	while (pw_caps_next_value(&it, "object-format", &v)) {
		any = 1;
		if (v.p && v.len == strlen(algo->name) && !memcmp(v.p, algo->name, v.len))
			return 1;
	}
	return !any && algo->id == PW_HASH_SHA1;
}

int pw_object_format_client_check(const struct pw_hash_algo *local, const struct pw_str *advertised,
                                  struct pw_error *err)
{
	const struct pw_hash_algo *remote;
	char q[PW_QUOTE_MAX];

	if (!advertised) {
		if (local->id != PW_HASH_SHA1)
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "the server does not support algorithm '%s'",
			                    local->name);
		return 0;
	}
	remote = pw_hash_by_name(advertised->p ? advertised->p : "", advertised->len);
	if (!remote || remote->id != local->id)
		return pw_error_set(err, PW_EMISMATCH,
		                    "mismatched algorithms: client %s; server %s", local->name,
		                    pw_proto__quote(q, sizeof(q), advertised->p, advertised->len));
	return 0;
}
