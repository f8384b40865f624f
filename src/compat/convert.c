/* Translate an object's content from one hash algorithm to the other, the
 * way Git 2.55 does (technical/hash-function-transition: "Object format",
 * "Signed Commits", "Signed Tags", "Mergetag embedding"), so that the id
 * computed from the result is bit-identical to Git's. */
#include <string.h>

#include "packwire/compat.h"
#include "packwire/object.h"

#define GITLINK_MODE 0160000u

static const char *sig_header(const struct pw_hash_algo *algo)
{
	return algo->id == PW_HASH_SHA256 ? "gpgsig-sha256" : "gpgsig";
}

static int map_id(pw_compat_lookup_fn lookup, void *ldata, const struct pw_oid *from,
                  const struct pw_hash_algo *to, struct pw_oid *out, const char *what,
                  struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1];
	int rc = lookup(ldata, from, out);

	if (!rc && out->algo != to->id)
		rc = PW_ERROR;
	if (!rc)
		return 0;
	pw_oid_to_hex(from, hex);
	if (rc == PW_ENOTFOUND)
		return pw_error_set(err, rc, "unable to map %s %s to %s: no %s id known", what, hex,
		                    to->name, to->name);
	return pw_error_set(err, rc, "unable to map %s %s to %s", what, hex, to->name);
}

/* ---- trees ---------------------------------------------------------- */

/* One entry at data[*pos]: mode digits, ' ', non-empty name, NUL, raw id. */
static int tree_entry(const char *data, size_t len, size_t *pos, const struct pw_hash_algo *algo,
                      unsigned *mode, size_t *name_at, size_t *name_len, struct pw_error *err)
{
	size_t i = *pos, start = i;
	const char *nul;

	*mode = 0;
	while (i < len && data[i] >= '0' && data[i] <= '7' && i - start < 7)
		*mode = *mode * 8 + (unsigned)(data[i++] - '0');
	if (i == start || i >= len || data[i] != ' ')
		return pw_error_set(err, PW_ECORRUPT, "tree: bad mode at byte %zu", start);
	i++;
	nul = memchr(data + i, '\0', len - i);
	if (!nul || nul == data + i)
		return pw_error_set(err, PW_ECORRUPT, "tree: bad entry name at byte %zu", i);
	*name_at = i;
	*name_len = (size_t)(nul - (data + i));
	i = (size_t)(nul - data) + 1;
	if (len - i < algo->rawsz)
		return pw_error_set(err, PW_ECORRUPT, "tree: truncated entry at byte %zu", i);
	*pos = i;
	return 0;
}

static int convert_tree(struct pw_buf *out, const char *data, size_t len,
                        const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                        pw_compat_lookup_fn lookup, void *ldata, struct pw_error *err)
{
	/* an entry takes at least "0 x\0" and an id: the output's size is
	 * bounded by the input's plus the ids' growth, so grow once and write
	 * in place (a tree is translated for every pack that sends it) */
	size_t most = to->rawsz > from->rawsz
	                      ? len + (len / (from->rawsz + 4) + 1) * (to->rawsz - from->rawsz)
	                      : len;
	size_t pos = 0, at = out->len;
	char *dst;

	if (pw_buf_grow(out, most))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	dst = out->data;
	while (pos < len) {
		size_t start = pos, name_at, name_len;
		unsigned mode;
		struct pw_oid oid, mapped;
		char hex[PW_MAX_HEXSZ + 1];
		int rc;

		if ((rc = tree_entry(data, len, &pos, from, &mode, &name_at, &name_len, err)))
			return rc;
		pw_oid_from_raw(&oid, (const uint8_t *)data + pos, from);
		rc = lookup(ldata, &oid, &mapped);
		if (!rc && mapped.algo != to->id)
			rc = PW_ERROR;
		if (rc) {
			pw_oid_to_hex(&oid, hex);
			return pw_error_set(err, rc, "%s '%.*s' (%s): no %s id known%s",
			                    mode == GITLINK_MODE ? "gitlink" : "tree entry",
			                    (int)(name_len > 4096 ? 4096 : name_len),
			                    data + name_at, hex, to->name,
			                    mode == GITLINK_MODE ? " (is the submodule mapped?)"
			                                         : "");
		}
		memcpy(dst + at, data + start, pos - start);
		at += pos - start;
		memcpy(dst + at, mapped.id, to->rawsz);
		at += to->rawsz;
		pos += from->rawsz;
	}
	return pw_buf_setlen(out, at) ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
}

/* ---- signatures (gpg-interface: parse_signed_buffer and friends) ---- */

static const char *const sig_starts[] = {
        "-----BEGIN PGP SIGNATURE-----",
        "-----BEGIN PGP MESSAGE-----",
        "-----BEGIN SIGNED MESSAGE-----",
        "-----BEGIN SSH SIGNATURE-----",
};

static int starts_sig(const char *p, size_t avail)
{
	for (size_t i = 0; i < sizeof(sig_starts) / sizeof(sig_starts[0]); i++) {
		size_t n = strlen(sig_starts[i]);

		if (avail >= n && !memcmp(p, sig_starts[i], n))
			return 1;
	}
	return 0;
}

/* Where the last line starting a signature begins (len when none). */
static size_t signed_payload_len(const char *buf, size_t len)
{
	size_t at = 0, match = len;

	while (at < len) {
		const char *eol;

		if (starts_sig(buf + at, len - at))
			match = at;
		eol = memchr(buf + at, '\n', len - at);
		at = eol ? (size_t)(eol - buf) + 1 : len;
	}
	return match;
}

/* Split buf into the payload (without any gpgsig* header) and the signature
 * of the header named for algo (its lines without the header name or the
 * continuation space). */
static int split_header_sig(const char *buf, size_t len, struct pw_buf *payload, struct pw_buf *sig,
                            const struct pw_hash_algo *algo)
{
	const char *hdr = sig_header(algo);
	size_t hlen = strlen(hdr);
	const char *line = buf, *tail = buf + len;
	int in_sig = 0, other = 0;

	while (line < tail) {
		const char *s = NULL, *next = memchr(line, '\n', (size_t)(tail - line));
		size_t avail = (size_t)(tail - line);

		next = next ? next + 1 : tail;
		if (in_sig && line[0] == ' ') {
			s = line + 1;
		} else if (avail > hlen && !memcmp(line, hdr, hlen) && line[hlen] == ' ') {
			s = line + hlen + 1;
			other = 0;
		} else if (avail >= 6 && !memcmp(line, "gpgsig", 6)) {
			other = 1;
		} else if (other && line[0] != ' ') {
			other = 0;
		}
		if (s) {
			if (pw_buf_add(sig, s, (size_t)(next - s)))
				return PW_ENOMEM;
			in_sig = 1;
		} else {
			if (line[0] == '\n')
				next = tail; /* the message: all of the rest */
			if (!other && pw_buf_add(payload, line, (size_t)(next - line)))
				return PW_ENOMEM;
			in_sig = 0;
		}
		line = next;
	}
	return 0;
}

/* Insert sig as header `hdr` at the end of out's header (before the first
 * blank line, or at the end), one continuation line per signature line. */
static int add_header_sig(struct pw_buf *out, size_t out_start, const struct pw_buf *sig,
                          const char *hdr)
{
	struct pw_buf ins = PW_BUF_INIT;
	const char *o = out->data + out_start, *eoh = NULL;
	size_t olen = out->len - out_start, at, slen;
	int rc = 0;

	/* Git works on C strings here: both scans stop at a NUL */
	for (size_t i = 0; i + 1 < olen && o[i]; i++)
		if (o[i] == '\n' && o[i + 1] == '\n') {
			eoh = o + i;
			break;
		}
	at = eoh ? (size_t)(eoh - o) + 1 : olen;
	slen = strnlen(sig->data, sig->len);
	for (size_t c = 0; c < slen && !rc;) {
		const char *bol = sig->data + c, *eol = memchr(bol, '\n', slen - c);
		size_t n = eol ? (size_t)(eol - bol) + 1 : slen - c;

		if (!c)
			rc = pw_buf_adds(&ins, hdr);
		if (!rc)
			rc = pw_buf_addch(&ins, ' ');
		if (!rc)
			rc = pw_buf_add(&ins, bol, n);
		c += n;
	}
	if (!rc && ins.len) {
		size_t tail = olen - at;

		rc = pw_buf_grow(out, ins.len);
		if (!rc) {
			char *base = out->data + out_start;

			memmove(base + at + ins.len, base + at, tail);
			memcpy(base + at, ins.data, ins.len);
			rc = pw_buf_setlen(out, out->len + ins.len);
		}
	}
	pw_buf_free(&ins);
	return rc ? PW_ENOMEM : 0;
}

/* ---- tags ----------------------------------------------------------- */

static int convert_tag(struct pw_buf *out, const char *buf, size_t len,
                       const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                       pw_compat_lookup_fn lookup, void *ldata, struct pw_error *err)
{
	struct pw_buf payload = PW_BUF_INIT, oursig = PW_BUF_INIT, othersig = PW_BUF_INIT;
	size_t line_len = from->hexsz + 7, plen, start = out->len;
	struct pw_oid oid, mapped;
	char hex[PW_MAX_HEXSZ + 1];
	int rc;

	if (line_len >= len || memcmp(buf, "object ", 7) || buf[line_len] != '\n')
		return pw_error_set(err, PW_ECORRUPT, "tag: bad or missing object line");
	if (pw_oid_from_hex(&oid, buf + 7, from->hexsz, from))
		return pw_error_set(err, PW_ECORRUPT, "tag: bad object id");
	if ((rc = map_id(lookup, ldata, &oid, to, &mapped, "tagged object", err)))
		return rc;
	buf += line_len + 1;
	len -= line_len + 1;

	plen = signed_payload_len(buf, len);
	rc = pw_buf_add(&oursig, buf + plen, len - plen);
	if (!rc)
		rc = split_header_sig(buf, plen, &payload, &othersig, to);
	if (!rc)
		rc = pw_buf_addf(out, "object %s\n", pw_oid_to_hex(&mapped, hex));
	if (!rc)
		rc = pw_buf_add(out, payload.data, payload.len);
	if (!rc && oursig.len)
		rc = add_header_sig(out, start, &oursig, sig_header(from));
	if (!rc)
		rc = pw_buf_add(out, othersig.data, othersig.len);
	pw_buf_free(&payload);
	pw_buf_free(&oursig);
	pw_buf_free(&othersig);
	return rc ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
}

/* ---- commits -------------------------------------------------------- */

static int id_line(const char *p, const char *eol, size_t skip, const struct pw_hash_algo *algo,
                   struct pw_oid *oid)
{
	return (size_t)(eol - p) != skip + algo->hexsz ||
	       pw_oid_from_hex(oid, p + skip, algo->hexsz, algo);
}

static int convert_commit(struct pw_buf *out, const char *buf, size_t len,
                          const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                          pw_compat_lookup_fn lookup, void *ldata, struct pw_error *err)
{
	const char *p = buf, *tail = buf + len;
	char hex[PW_MAX_HEXSZ + 1];

	while (p < tail && *p != '\n') {
		const char *eol = memchr(p, '\n', (size_t)(tail - p));
		struct pw_oid oid, mapped;
		int rc;

		if (!eol)
			return pw_error_set(err, PW_ECORRUPT,
			                    "commit: header line without newline");
		if (p + 5 < eol && !memcmp(p, "tree ", 5)) {
			if (id_line(p, eol, 5, from, &oid))
				return pw_error_set(err, PW_ECORRUPT, "commit: bad tree line");
			if ((rc = map_id(lookup, ldata, &oid, to, &mapped, "tree", err)))
				return rc;
			if (pw_buf_addf(out, "tree %s\n", pw_oid_to_hex(&mapped, hex)))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
		} else if (p + 7 < eol && !memcmp(p, "parent ", 7)) {
			if (id_line(p, eol, 7, from, &oid))
				return pw_error_set(err, PW_ECORRUPT, "commit: bad parent line");
			if ((rc = map_id(lookup, ldata, &oid, to, &mapped, "parent", err)))
				return rc;
			if (pw_buf_addf(out, "parent %s\n", pw_oid_to_hex(&mapped, hex)))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
		} else if (p + 9 < eol && !memcmp(p, "mergetag ", 9)) {
			struct pw_buf tag = PW_BUF_INIT, conv = PW_BUF_INIT;

			/* the embedded tag: this line's value, then every
			 * continuation line without its leading space */
			rc = pw_buf_add(&tag, p + 9, (size_t)(eol - p - 9) + 1);
			p = eol + 1;
			while (!rc && p < tail && *p == ' ') {
				eol = memchr(p, '\n', (size_t)(tail - p));
				if (!eol) {
					pw_buf_free(&tag);
					return pw_error_set(err, PW_ECORRUPT,
					                    "commit: bad mergetag continuation");
				}
				rc = pw_buf_add(&tag, p + 1, (size_t)(eol - p));
				p = eol + 1;
			}
			if (rc) {
				pw_buf_free(&tag);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			rc = convert_tag(&conv, tag.data, tag.len, from, to, lookup, ldata, err);
			pw_buf_free(&tag);
			if (rc) {
				pw_buf_free(&conv);
				return pw_error_wrap(err, "mergetag");
			}
			/* "mergetag" + each line prefixed by a space; the last
			 * line completed with a newline */
			rc = pw_buf_adds(out, "mergetag");
			for (size_t c = 0; !rc && c < conv.len;) {
				const char *bol = conv.data + c;
				const char *nl = memchr(bol, '\n', conv.len - c);
				size_t n = nl ? (size_t)(nl - bol) + 1 : conv.len - c;

				rc = pw_buf_addch(out, ' ');
				if (!rc)
					rc = pw_buf_add(out, bol, n);
				c += n;
			}
			if (!rc && out->len && out->data[out->len - 1] != '\n')
				rc = pw_buf_addch(out, '\n');
			pw_buf_free(&conv);
			if (rc)
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			continue;
		} else if (pw_buf_add(out, p, (size_t)(eol - p) + 1)) {
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		p = eol + 1;
	}
	if (pw_buf_add(out, p, (size_t)(tail - p)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

int pw_compat_convert(struct pw_buf *out, int type, const void *data, size_t len,
                      const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                      pw_compat_lookup_fn lookup, void *lookup_data, struct pw_error *err)
{
	const char *buf = data;

	if (!from || !to || !lookup)
		return pw_error_set(err, PW_EINVAL, "compat: missing algorithm or look-up");
	switch (type) {
	case PW_OBJ_BLOB:
		return pw_buf_add(out, data, len) ? pw_error_set(err, PW_ENOMEM, "out of memory")
		                                  : 0;
	case PW_OBJ_TREE:
		return convert_tree(out, buf, len, from, to, lookup, lookup_data, err);
	case PW_OBJ_COMMIT:
		return convert_commit(out, buf, len, from, to, lookup, lookup_data, err);
	case PW_OBJ_TAG:
		return convert_tag(out, buf, len, from, to, lookup, lookup_data, err);
	default:
		return pw_error_set(err, PW_EINVAL, "compat: cannot translate an object of type %d",
		                    type);
	}
}

/* ---- references ----------------------------------------------------- */

struct refs_ctx {
	int (*fn)(void *, const struct pw_oid *);
	void *data;
	int stopped;
};

/* A look-up that reports each id and answers with a dummy of the other
 * algorithm: running the translation then visits every reference. */
static int refs_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	struct refs_ctx *c = data;
	int rc = c->fn(c->data, from);

	if (rc) {
		c->stopped = rc;
		return rc;
	}
	pw_oid_zero(out, from->algo == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1);
	return 0;
}

int pw_compat_references(int type, const void *data, size_t len, const struct pw_hash_algo *algo,
                         int (*fn)(void *fn_data, const struct pw_oid *oid), void *fn_data,
                         struct pw_error *err)
{
	const struct pw_hash_algo *other =
	        algo->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
	struct refs_ctx c = {fn, fn_data, 0};
	const char *buf = data;
	size_t pos = 0;
	int rc = 0;

	switch (type) {
	case PW_OBJ_BLOB:
		return 0;
	case PW_OBJ_TREE:
		while (pos < len && !rc) {
			size_t name_at, name_len;
			unsigned mode;
			struct pw_oid oid;

			if ((rc = tree_entry(buf, len, &pos, algo, &mode, &name_at, &name_len,
			                     err)))
				return rc;
			pw_oid_from_raw(&oid, (const uint8_t *)buf + pos, algo);
			pos += algo->rawsz;
			if (mode != GITLINK_MODE)
				rc = fn(fn_data, &oid);
		}
		return rc;
	case PW_OBJ_COMMIT:
	case PW_OBJ_TAG: {
		struct pw_buf scratch = PW_BUF_INIT;

		rc = pw_compat_convert(&scratch, type, data, len, algo, other, refs_lookup, &c,
		                       err);
		pw_buf_free(&scratch);
		return c.stopped ? c.stopped : rc;
	}
	default:
		return pw_error_set(err, PW_EINVAL, "compat: no references for type %d", type);
	}
}
