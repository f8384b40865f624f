/* Incoming object checks: see fsck.h for the rules. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "odb/idx.h"
#include "packwire/object.h"
#include "server/fsck.h"

static int bad(struct pw_error *err, const struct pw_oid *oid, const char *type, const char *why)
{
	char hex[PW_MAX_HEXSZ + 1];

	return pw_error_set(err, PW_ECORRUPT, "object %s: %s: %s", pw_oid_to_hex(oid, hex), type,
	                    why);
}

/* "<key><hex>\n" at p: parse the id, return the line length or 0. */
static size_t hex_line(const char *p, const char *end, const char *key,
                       const struct pw_hash_algo *algo, struct pw_oid *out)
{
	size_t kl = strlen(key), n = kl + algo->hexsz + 1;

	if ((size_t)(end - p) < n || memcmp(p, key, kl) || p[n - 1] != '\n')
		return 0;
	if (pw_oid_from_hex(out, p + kl, algo->hexsz, algo))
		return 0;
	return n;
}

/* "Name <email> 1234567890 +0000" up to (not including) the LF at end. */
static const char *check_ident(const char *p, const char *end)
{
	const char *lt = memchr(p, '<', (size_t)(end - p)), *gt, *q;

	if (!lt)
		return "missing email";
	if (lt != p && lt[-1] != ' ')
		return "missing space before email";
	if (memchr(p, '>', (size_t)(lt - p)))
		return "bad name";
	gt = memchr(lt + 1, '>', (size_t)(end - lt - 1));
	if (!gt)
		return "bad email";
	if (memchr(lt + 1, '<', (size_t)(gt - lt - 1)))
		return "bad email";
	q = gt + 1;
	if (q >= end || *q != ' ')
		return "missing space before date";
	q++;
	if (q >= end || *q < '0' || *q > '9')
		return "bad date";
	if (*q == '0' && q + 1 < end && q[1] != ' ')
		return "zero-padded date";
	{
		const char *d = q;

		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q - d > 20)
			return "date overflow";
	}
	if (end - q != 6 || q[0] != ' ' || (q[1] != '+' && q[1] != '-'))
		return "bad time zone";
	for (q += 2; q < end; q++)
		if (*q < '0' || *q > '9')
			return "bad time zone";
	return NULL;
}

static int want_type(struct pw_odb *odb, const struct pw_oid *self, const char *what,
                     const struct pw_oid *oid, int type, struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1], msg[256];
	uint64_t size;
	int t, rc;

	rc = pw_odb_read_header(odb, oid, &t, &size);
	if (rc == PW_ENOTFOUND) {
		snprintf(msg, sizeof(msg), "%s %s is missing", pw_object_type_name(type),
		         pw_oid_to_hex(oid, hex));
		return bad(err, self, what, msg);
	}
	if (rc) {
		pw_error_copy(err, pw_odb_error(odb));
		return rc;
	}
	if (type && t != type) {
		snprintf(msg, sizeof(msg), "%s should be a %s but is a %s", pw_oid_to_hex(oid, hex),
		         pw_object_type_name(type), pw_object_type_name(t));
		return bad(err, self, what, msg);
	}
	return 0;
}

/* Length of the header part (up to the blank line, or everything). */
static size_t header_len(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++)
		if (p[i] == '\n' && p[i + 1] == '\n')
			return i + 1;
	return len;
}

static int ident_line(const char **pp, const char *end, const char *key, const struct pw_oid *oid,
                      const char *type, struct pw_error *err)
{
	const char *p = *pp, *nl, *why;
	size_t kl = strlen(key);
	char msg[64];

	if ((size_t)(end - p) < kl || memcmp(p, key, kl)) {
		snprintf(msg, sizeof(msg), "missing %.*s line", (int)(kl - 1), key);
		return bad(err, oid, type, msg);
	}
	nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl) {
		snprintf(msg, sizeof(msg), "unterminated %.*s line", (int)(kl - 1), key);
		return bad(err, oid, type, msg);
	}
	if ((why = check_ident(p + kl, nl))) {
		snprintf(msg, sizeof(msg), "%.*s: %s", (int)(kl - 1), key, why);
		return bad(err, oid, type, msg);
	}
	*pp = nl + 1;
	return 0;
}

static int check_commit(struct pw_odb *odb, const struct pw_oid *oid, const char *data, size_t len,
                        struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_odb_algo(odb);
	const char *p = data, *end = data + header_len(data, len);
	struct pw_oid x;
	size_t n;
	int rc;

	if (memchr(data, '\0', (size_t)(end - data)))
		return bad(err, oid, "commit", "NUL byte in the header");
	if (!(n = hex_line(p, end, "tree ", algo, &x)))
		return bad(err, oid, "commit", "missing or malformed tree line");
	if ((rc = want_type(odb, oid, "commit", &x, PW_OBJ_TREE, err)))
		return rc;
	p += n;
	while ((n = hex_line(p, end, "parent ", algo, &x))) {
		if ((rc = want_type(odb, oid, "commit", &x, PW_OBJ_COMMIT, err)))
			return rc;
		p += n;
	}
	if ((size_t)(end - p) >= 7 && !memcmp(p, "parent ", 7))
		return bad(err, oid, "commit", "malformed parent line");
	if ((rc = ident_line(&p, end, "author ", oid, "commit", err)))
		return rc;
	return ident_line(&p, end, "committer ", oid, "commit", err);
}

/* Git's tree order: names compare as if directories ended in '/'. */
static int entry_cmp(const char *a, size_t al, unsigned am, const char *b, size_t bl, unsigned bm)
{
	size_t n = al < bl ? al : bl;
	int c = memcmp(a, b, n);
	unsigned ca, cb;

	if (c)
		return c;
	ca = n < al ? (unsigned char)a[n] : (am == 040000 ? '/' : 0);
	cb = n < bl ? (unsigned char)b[n] : (bm == 040000 ? '/' : 0);
	return (int)ca - (int)cb;
}

static int mode_ok(unsigned mode)
{
	return mode == 0100644 || mode == 0100755 || mode == 0120000 || mode == 040000 ||
	       mode == 0160000;
}

static int check_tree(struct pw_odb *odb, const struct pw_oid *oid, const char *data, size_t len,
                      struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_odb_algo(odb);
	const char *prev = NULL;
	size_t prev_len = 0, pos = 0;
	unsigned prev_mode = 0;
	struct pw_error perr;
	int rc;

	for (;;) {
		struct pw_tree_entry e;
		size_t at = pos;
		char msg[128];

		rc = pw_tree_next(data, len, &pos, algo, &e, &perr);
		if (rc < 0)
			return bad(err, oid, "tree", perr.msg);
		if (rc == 0)
			break;
		if (data[at] == '0')
			return bad(err, oid, "tree", "zero-padded file mode");
		if (!mode_ok(e.mode)) {
			snprintf(msg, sizeof(msg), "bad file mode %o", e.mode);
			return bad(err, oid, "tree", msg);
		}
		if (!e.name_len)
			return bad(err, oid, "tree", "empty entry name");
		if (memchr(e.name, '/', e.name_len))
			return bad(err, oid, "tree", "entry name contains '/'");
		if ((e.name_len == 1 && e.name[0] == '.') ||
		    (e.name_len == 2 && !memcmp(e.name, "..", 2)))
			return bad(err, oid, "tree", "entry named '.' or '..'");
		if (e.name_len == 4 && !strncasecmp(e.name, ".git", 4))
			return bad(err, oid, "tree", "entry named '.git'");
		if (prev) {
			int c = entry_cmp(prev, prev_len, prev_mode, e.name, e.name_len, e.mode);

			if (prev_len == e.name_len && !memcmp(prev, e.name, e.name_len))
				return bad(err, oid, "tree", "duplicate entries");
			if (c > 0)
				return bad(err, oid, "tree", "entries not sorted");
		}
		prev = e.name;
		prev_len = e.name_len;
		prev_mode = e.mode;
		if (e.mode != 0160000 &&
		    (rc = want_type(odb, oid, "tree", &e.oid,
		                    e.mode == 040000 ? PW_OBJ_TREE : PW_OBJ_BLOB, err)))
			return rc;
	}
	return 0;
}

static int check_tag(struct pw_odb *odb, const struct pw_oid *oid, const char *data, size_t len,
                     struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_odb_algo(odb);
	const char *p = data, *end = data + header_len(data, len), *nl;
	struct pw_oid x;
	size_t n;
	int type;

	if (memchr(data, '\0', (size_t)(end - data)))
		return bad(err, oid, "tag", "NUL byte in the header");
	if (!(n = hex_line(p, end, "object ", algo, &x)))
		return bad(err, oid, "tag", "missing or malformed object line");
	p += n;
	if ((size_t)(end - p) < 5 || memcmp(p, "type ", 5) ||
	    !(nl = memchr(p, '\n', (size_t)(end - p))))
		return bad(err, oid, "tag", "missing type line");
	type = pw_object_type_from_name(p + 5, (size_t)(nl - p - 5));
	if (type != PW_OBJ_COMMIT && type != PW_OBJ_TREE && type != PW_OBJ_BLOB &&
	    type != PW_OBJ_TAG)
		return bad(err, oid, "tag", "bad type");
	p = nl + 1;
	if ((size_t)(end - p) < 4 || memcmp(p, "tag ", 4) ||
	    !(nl = memchr(p, '\n', (size_t)(end - p))) || nl == p + 4)
		return bad(err, oid, "tag", "missing tag name line");
	p = nl + 1;
	if ((size_t)(end - p) >= 7 && !memcmp(p, "tagger ", 7)) {
		int rc = ident_line(&p, end, "tagger ", oid, "tag", err);

		if (rc)
			return rc;
	}
	return want_type(odb, oid, "tag", &x, type, err);
}

int pw_fsck_object(struct pw_odb *odb, const struct pw_oid *oid, int type, const char *data,
                   size_t len, struct pw_error *err)
{
	switch (type) {
	case PW_OBJ_COMMIT:
		return check_commit(odb, oid, data, len, err);
	case PW_OBJ_TREE:
		return check_tree(odb, oid, data, len, err);
	case PW_OBJ_TAG:
		return check_tag(odb, oid, data, len, err);
	case PW_OBJ_BLOB:
		return 0;
	default:
		return bad(err, oid, "object", "unknown type");
	}
}

int pw_fsck_pack(struct pw_odb *odb, const char *idx_path, struct pw_error *err)
{
	struct pw_idx *idx = NULL;
	struct pw_buf buf = PW_BUF_INIT;
	uint32_t i;
	int rc;

	if ((rc = pw_idx_open(&idx, idx_path, pw_odb_algo(odb), err)))
		return rc;
	for (i = 0; i < idx->nr && !rc; i++) {
		struct pw_oid oid;
		int type;

		pw_idx_nth_oid(idx, i, &oid);
		if ((rc = pw_odb_read(odb, &oid, &type, &buf))) {
			pw_error_copy(err, pw_odb_error(odb));
			break;
		}
		rc = pw_fsck_object(odb, &oid, type, buf.data, buf.len, err);
	}
	pw_buf_free(&buf);
	pw_idx_free(idx);
	return rc;
}
