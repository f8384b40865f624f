/* Incoming object checks: see fsck.h for the rules. */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "odb/fsck.h"
#include "odb/idx.h"
#include "packwire/fs.h"
#include "packwire/object.h"

enum sev { SEV_IGNORE = 1, SEV_INFO, SEV_WARN, SEV_ERROR, SEV_FATAL };

/* Git's message ids (fsck.c) for the problems we detect, with their
 * default severities. */
#define MSG_IDS(X)                                                                                 \
	X(BAD_DATE, "badDate", SEV_ERROR)                                                          \
	X(BAD_DATE_OVERFLOW, "badDateOverflow", SEV_ERROR)                                         \
	X(BAD_EMAIL, "badEmail", SEV_ERROR)                                                        \
	X(BAD_NAME, "badName", SEV_ERROR)                                                          \
	X(BAD_OBJECT_SHA1, "badObjectSha1", SEV_ERROR)                                             \
	X(BAD_PARENT_SHA1, "badParentSha1", SEV_ERROR)                                             \
	X(BAD_TIMEZONE, "badTimezone", SEV_ERROR)                                                  \
	X(BAD_TREE, "badTree", SEV_ERROR)                                                          \
	X(BAD_TREE_SHA1, "badTreeSha1", SEV_ERROR)                                                 \
	X(BAD_TYPE, "badType", SEV_ERROR)                                                          \
	X(DUPLICATE_ENTRIES, "duplicateEntries", SEV_ERROR)                                        \
	X(MISSING_AUTHOR, "missingAuthor", SEV_ERROR)                                              \
	X(MISSING_COMMITTER, "missingCommitter", SEV_ERROR)                                        \
	X(MISSING_EMAIL, "missingEmail", SEV_ERROR)                                                \
	X(MISSING_OBJECT, "missingObject", SEV_ERROR)                                              \
	X(MISSING_SPACE_BEFORE_DATE, "missingSpaceBeforeDate", SEV_ERROR)                          \
	X(MISSING_SPACE_BEFORE_EMAIL, "missingSpaceBeforeEmail", SEV_ERROR)                        \
	X(MISSING_TAG_ENTRY, "missingTagEntry", SEV_ERROR)                                         \
	X(MISSING_TREE, "missingTree", SEV_ERROR)                                                  \
	X(MISSING_TYPE_ENTRY, "missingTypeEntry", SEV_ERROR)                                       \
	X(TREE_NOT_SORTED, "treeNotSorted", SEV_ERROR)                                             \
	X(UNKNOWN_TYPE, "unknownType", SEV_ERROR)                                                  \
	X(ZERO_PADDED_DATE, "zeroPaddedDate", SEV_ERROR)                                           \
	X(NUL_IN_HEADER, "nulInHeader", SEV_FATAL)                                                 \
	X(UNTERMINATED_HEADER, "unterminatedHeader", SEV_FATAL)                                    \
	X(EMPTY_NAME, "emptyName", SEV_WARN)                                                       \
	X(FULL_PATHNAME, "fullPathname", SEV_WARN)                                                 \
	X(HAS_DOT, "hasDot", SEV_WARN)                                                             \
	X(HAS_DOTDOT, "hasDotdot", SEV_WARN)                                                       \
	X(HAS_DOTGIT, "hasDotgit", SEV_WARN)                                                       \
	X(ZERO_PADDED_FILEMODE, "zeroPaddedFilemode", SEV_WARN)                                    \
	X(BAD_FILEMODE, "badFilemode", SEV_INFO)

#define X_ENUM(id, name, sev) MSG_##id,
enum msg_id { MSG_IDS(X_ENUM) NR_MSG };
#define X_INFO(id, name, sev) {name, sev},
static const struct {
	const char *name;
	enum sev sev;
} msg_info[NR_MSG] = {MSG_IDS(X_INFO)};

/* Git's other ids: accepted in configuration, never reported by us. */
static const char *const other_ids[] = {"badRefName",
                                        "badTagName",
                                        "badTagObject",
                                        "gitattributesBlob",
                                        "gitattributesLarge",
                                        "gitattributesLineLength",
                                        "gitattributesMissing",
                                        "gitmodulesBlob",
                                        "gitmodulesLarge",
                                        "gitmodulesMissing",
                                        "gitmodulesName",
                                        "gitmodulesParse",
                                        "gitmodulesPath",
                                        "gitmodulesSymlink",
                                        "gitmodulesUpdate",
                                        "gitmodulesUrl",
                                        "missingNameBeforeEmail",
                                        "missingTag",
                                        "missingTaggerEntry",
                                        "missingType",
                                        "multipleAuthors",
                                        "nulInCommit",
                                        "nullSha1",
                                        "extraHeaderEntry"};

void pw_fsck_opts_init(struct pw_fsck_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->strict = 1;
}

void pw_fsck_opts_free(struct pw_fsck_opts *o)
{
	free(o->severity);
	pw_oidmap_free(&o->skip);
	pw_oidmap_free(&o->shallow);
	memset(o, 0, sizeof(*o));
}

static int parse_sev(const char *v)
{
	if (!strcasecmp(v, "error"))
		return SEV_ERROR;
	if (!strcasecmp(v, "warn"))
		return SEV_WARN;
	if (!strcasecmp(v, "ignore"))
		return SEV_IGNORE;
	return 0;
}

int pw_fsck_opts_set(struct pw_fsck_opts *o, const char *id, const char *severity,
                     struct pw_error *err)
{
	size_t i;
	int sev;

	for (i = 0; i < NR_MSG; i++)
		if (!strcasecmp(id, msg_info[i].name))
			break;
	if (i == NR_MSG) {
		size_t k;

		for (k = 0; k < sizeof(other_ids) / sizeof(other_ids[0]); k++)
			if (!strcasecmp(id, other_ids[k]))
				break;
		if (k == sizeof(other_ids) / sizeof(other_ids[0]))
			return pw_error_set(err, PW_ENOTFOUND, "skipping unknown msg id '%s'", id);
	}
	if (!severity || !(sev = parse_sev(severity)))
		return pw_error_set(err, PW_EINVAL, "Unhandled message type: %s",
		                    severity ? severity : "(none)");
	if (i == NR_MSG)
		return 0;
	if (msg_info[i].sev == SEV_FATAL && sev != SEV_ERROR)
		return pw_error_set(err, PW_EINVAL, "Cannot demote %s to %s", id, severity);
	if (!o->severity && !(o->severity = calloc(NR_MSG, 1)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	o->severity[i] = (unsigned char)sev;
	return 0;
}

int pw_fsck_opts_skiplist(struct pw_fsck_opts *o, const char *path, const struct pw_hash_algo *algo,
                          struct pw_error *err)
{
	struct pw_buf file = PW_BUF_INIT;
	struct pw_error e;
	char *line, *next;
	int rc, created;

	if ((rc = pw_fs_read_file(path, &file, 1u << 30, &e)))
		return pw_error_set(err, rc, "could not open object name list: %s", path);
	for (line = file.data; line && *line; line = next) {
		struct pw_oid oid;
		char *hash, *end;

		if ((next = strchr(line, '\n')))
			*next++ = '\0';
		if ((hash = strchr(line, '#')))
			*hash = '\0';
		end = line + strlen(line);
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			*--end = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (!*line)
			continue;
		if (strlen(line) != algo->hexsz || pw_oid_from_hex(&oid, line, algo->hexsz, algo)) {
			rc = pw_error_set(err, PW_EINVAL, "invalid object name: %.200s", line);
			break;
		}
		if (!pw_oidmap_put(&o->skip, &oid, &created)) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
	}
	pw_buf_free(&file);
	return rc;
}

/* Report one problem: 0 when it is only a warning (or ignored, or the object
 * is on the skip list), PW_ECORRUPT when it fails the object. */
static int report(const struct pw_fsck_opts *o, struct pw_error *err, const struct pw_oid *oid,
                  enum msg_id id, const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int report(const struct pw_fsck_opts *o, struct pw_error *err, const struct pw_oid *oid,
                  enum msg_id id, const char *fmt, ...)
{
	char hex[PW_MAX_HEXSZ + 1], text[512], line[700];
	enum sev sev = msg_info[id].sev;
	va_list ap;

	if (o && o->severity && o->severity[id])
		sev = (enum sev)o->severity[id];
	else if ((!o || o->strict) && sev == SEV_WARN)
		sev = SEV_ERROR;
	if (sev == SEV_IGNORE || (o && pw_oidmap_get(&o->skip, oid)))
		return 0;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	pw_oid_to_hex(oid, hex);
	if (sev == SEV_INFO || sev == SEV_WARN) {
		if (o && o->warn) {
			snprintf(line, sizeof(line), "object %s: %s: %s", hex, msg_info[id].name,
			         text);
			o->warn(o->ctx, line);
		}
		return 0;
	}
	return pw_error_set(err, PW_ECORRUPT, "object %s: %s: %s", hex, msg_info[id].name, text);
}

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

/* "Name <email> 1234567890 +0000" up to (not including) the LF at end:
 * the problem's id and Git's text, or -1. */
static int check_ident(const char *p, const char *end, const char **text)
{
	const char *lt = memchr(p, '<', (size_t)(end - p)), *gt, *q;

	if (!lt)
		return *text = "invalid author/committer line - missing email", MSG_MISSING_EMAIL;
	if (lt != p && lt[-1] != ' ')
		return *text = "invalid author/committer line - missing space before email",
		       MSG_MISSING_SPACE_BEFORE_EMAIL;
	if (memchr(p, '>', (size_t)(lt - p)))
		return *text = "invalid author/committer line - bad name", MSG_BAD_NAME;
	gt = memchr(lt + 1, '>', (size_t)(end - lt - 1));
	if (!gt || memchr(lt + 1, '<', (size_t)(gt - lt - 1)))
		return *text = "invalid author/committer line - bad email", MSG_BAD_EMAIL;
	q = gt + 1;
	if (q >= end || *q != ' ')
		return *text = "invalid author/committer line - missing space before date",
		       MSG_MISSING_SPACE_BEFORE_DATE;
	q++;
	if (q >= end || *q < '0' || *q > '9')
		return *text = "invalid author/committer line - bad date", MSG_BAD_DATE;
	if (*q == '0' && q + 1 < end && q[1] != ' ')
		return *text = "invalid author/committer line - zero-padded date",
		       MSG_ZERO_PADDED_DATE;
	{
		const char *d = q;

		while (q < end && *q >= '0' && *q <= '9')
			q++;
		if (q - d > 20)
			return *text = "invalid author/committer line - date causes integer "
			               "overflow",
			       MSG_BAD_DATE_OVERFLOW;
	}
	if (end - q != 6 || q[0] != ' ' || (q[1] != '+' && q[1] != '-'))
		return *text = "invalid author/committer line - bad time zone", MSG_BAD_TIMEZONE;
	for (q += 2; q < end; q++)
		if (*q < '0' || *q > '9')
			return *text = "invalid author/committer line - bad time zone",
			       MSG_BAD_TIMEZONE;
	return -1;
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

/* Length of the header part (up to the blank line, or everything); checks
 * it as Git's verify_headers does: no NUL, and it ends with a LF. */
static int headers(const struct pw_fsck_opts *o, const struct pw_oid *oid, const char *p,
                   size_t len, size_t *hlen, struct pw_error *err)
{
	size_t i;

	for (i = 0; i < len; i++) {
		if (!p[i])
			return report(o, err, oid, MSG_NUL_IN_HEADER,
			              "unterminated header: NUL at offset %zu", i);
		if (p[i] == '\n' && i + 1 < len && p[i + 1] == '\n') {
			*hlen = i + 1;
			return 0;
		}
	}
	*hlen = len;
	if (len && p[len - 1] == '\n')
		return 0;
	return report(o, err, oid, MSG_UNTERMINATED_HEADER, "unterminated header");
}

/* 1: problem reported as a warning, stop checking this object; 0: fine;
 * negative: fail. */
static int ident_line(const struct pw_fsck_opts *o, const char **pp, const char *end,
                      const char *key, enum msg_id missing, const struct pw_oid *oid,
                      struct pw_error *err)
{
	const char *p = *pp, *nl, *text;
	size_t kl = strlen(key);
	int id, rc;

	if ((size_t)(end - p) < kl || memcmp(p, key, kl) ||
	    !(nl = memchr(p, '\n', (size_t)(end - p)))) {
		rc = report(o, err, oid, missing, "invalid format - expected '%.*s' line",
		            (int)(kl - 1), key);
		return rc ? rc : 1;
	}
	if ((id = check_ident(p + kl, nl, &text)) >= 0) {
		rc = report(o, err, oid, (enum msg_id)id, "%s", text);
		return rc ? rc : 1;
	}
	*pp = nl + 1;
	return 0;
}

static int check_commit(struct pw_odb *odb, const struct pw_oid *oid, const char *data, size_t len,
                        const struct pw_fsck_opts *o, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_odb_algo(odb);
	const char *p = data, *end;
	struct pw_oid x;
	size_t n, hlen;
	int rc;

	if ((rc = headers(o, oid, data, len, &hlen, err)) || hlen != len || !len ||
	    data[len - 1] != '\n' || 1) {
		if (rc)
			return rc;
	}
	end = data + hlen;
	if ((size_t)(end - p) < 5 || memcmp(p, "tree ", 5))
		return report(o, err, oid, MSG_MISSING_TREE,
		              "invalid format - expected 'tree' line");
	if (!(n = hex_line(p, end, "tree ", algo, &x)))
		return report(o, err, oid, MSG_BAD_TREE_SHA1,
		              "invalid 'tree' line format - bad sha1");
	if ((rc = want_type(odb, oid, "commit", &x, PW_OBJ_TREE, err)))
		return rc;
	p += n;
	while ((n = hex_line(p, end, "parent ", algo, &x))) {
		if (!(o && pw_oidmap_get(&o->shallow, oid)) &&
		    (rc = want_type(odb, oid, "commit", &x, PW_OBJ_COMMIT, err)))
			return rc;
		p += n;
	}
	if ((size_t)(end - p) >= 7 && !memcmp(p, "parent ", 7))
		return report(o, err, oid, MSG_BAD_PARENT_SHA1,
		              "invalid 'parent' line format - bad sha1");
	if ((rc = ident_line(o, &p, end, "author ", MSG_MISSING_AUTHOR, oid, err)))
		return rc < 0 ? rc : 0;
	rc = ident_line(o, &p, end, "committer ", MSG_MISSING_COMMITTER, oid, err);
	return rc < 0 ? rc : 0;
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

/* Like Git, a tree's problems are collected over all its entries and
 * reported once each, the worst first. */
static int check_tree(struct pw_odb *odb, const struct pw_oid *oid, const char *data, size_t len,
                      const struct pw_fsck_opts *o, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_odb_algo(odb);
	const char *prev = NULL;
	size_t prev_len = 0, pos = 0;
	unsigned prev_mode = 0;
	int full = 0, dot = 0, dotdot = 0, dotgit = 0, empty = 0, zero = 0, badmode = 0;
	int dup = 0, unsorted = 0;
	struct pw_error perr;
	int rc;

	for (;;) {
		struct pw_tree_entry e;
		size_t at = pos;

		rc = pw_tree_next(data, len, &pos, algo, &e, &perr);
		if (rc < 0)
			return report(o, err, oid, MSG_BAD_TREE, "cannot be parsed as a tree: %s",
			              perr.msg);
		if (rc == 0)
			break;
		if (data[at] == '0')
			zero = 1;
		else if (!mode_ok(e.mode))
			badmode = 1;
		if (!e.name_len)
			empty = 1;
		if (memchr(e.name, '/', e.name_len))
			full = 1;
		if (e.name_len == 1 && e.name[0] == '.')
			dot = 1;
		if (e.name_len == 2 && !memcmp(e.name, "..", 2))
			dotdot = 1;
		if (e.name_len == 4 && !strncasecmp(e.name, ".git", 4))
			dotgit = 1;
		if (prev) {
			int c = entry_cmp(prev, prev_len, prev_mode, e.name, e.name_len, e.mode);

			if (prev_len == e.name_len && !memcmp(prev, e.name, e.name_len))
				dup = 1;
			else if (c > 0)
				unsorted = 1;
		}
		prev = e.name;
		prev_len = e.name_len;
		prev_mode = e.mode;
		if (e.mode != 0160000 &&
		    (rc = want_type(odb, oid, "tree", &e.oid,
		                    e.mode == 040000 ? PW_OBJ_TREE : PW_OBJ_BLOB, err)))
			return rc;
	}
	rc = 0;
	if (!rc && full)
		rc = report(o, err, oid, MSG_FULL_PATHNAME, "contains full pathnames");
	if (!rc && dot)
		rc = report(o, err, oid, MSG_HAS_DOT, "contains '.'");
	if (!rc && dotdot)
		rc = report(o, err, oid, MSG_HAS_DOTDOT, "contains '..'");
	if (!rc && dotgit)
		rc = report(o, err, oid, MSG_HAS_DOTGIT, "contains '.git'");
	if (!rc && empty)
		rc = report(o, err, oid, MSG_EMPTY_NAME, "contains empty pathname");
	if (!rc && badmode)
		rc = report(o, err, oid, MSG_BAD_FILEMODE, "contains bad file modes");
	if (!rc && zero)
		rc = report(o, err, oid, MSG_ZERO_PADDED_FILEMODE,
		            "contains zero-padded file modes");
	if (!rc && dup)
		rc = report(o, err, oid, MSG_DUPLICATE_ENTRIES, "contains duplicate file entries");
	if (!rc && unsorted)
		rc = report(o, err, oid, MSG_TREE_NOT_SORTED, "not properly sorted");
	return rc;
}

static int check_tag(struct pw_odb *odb, const struct pw_oid *oid, const char *data, size_t len,
                     const struct pw_fsck_opts *o, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_odb_algo(odb);
	const char *p = data, *end, *nl;
	struct pw_oid x;
	size_t n, hlen;
	int type, rc;

	if ((rc = headers(o, oid, data, len, &hlen, err)))
		return rc;
	end = data + hlen;
	if ((size_t)(end - p) < 7 || memcmp(p, "object ", 7))
		return report(o, err, oid, MSG_MISSING_OBJECT,
		              "invalid format - expected 'object' line");
	if (!(n = hex_line(p, end, "object ", algo, &x)))
		return report(o, err, oid, MSG_BAD_OBJECT_SHA1,
		              "invalid 'object' line format - bad sha1");
	p += n;
	if ((size_t)(end - p) < 5 || memcmp(p, "type ", 5) ||
	    !(nl = memchr(p, '\n', (size_t)(end - p))))
		return report(o, err, oid, MSG_MISSING_TYPE_ENTRY,
		              "invalid format - expected 'type' line");
	type = pw_object_type_from_name(p + 5, (size_t)(nl - p - 5));
	if (type != PW_OBJ_COMMIT && type != PW_OBJ_TREE && type != PW_OBJ_BLOB &&
	    type != PW_OBJ_TAG)
		return report(o, err, oid, MSG_BAD_TYPE, "invalid 'type' value");
	p = nl + 1;
	if ((size_t)(end - p) < 4 || memcmp(p, "tag ", 4) ||
	    !(nl = memchr(p, '\n', (size_t)(end - p))) || nl == p + 4)
		return report(o, err, oid, MSG_MISSING_TAG_ENTRY,
		              "invalid format - expected 'tag' line");
	p = nl + 1;
	if ((size_t)(end - p) >= 7 && !memcmp(p, "tagger ", 7)) {
		rc = ident_line(o, &p, end, "tagger ", MSG_MISSING_AUTHOR, oid, err);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return want_type(odb, oid, "tag", &x, type, err);
}

int pw_fsck_object(struct pw_odb *odb, const struct pw_oid *oid, int type, const char *data,
                   size_t len, const struct pw_fsck_opts *opts, struct pw_error *err)
{
	switch (type) {
	case PW_OBJ_COMMIT:
		return check_commit(odb, oid, data, len, opts, err);
	case PW_OBJ_TREE:
		return check_tree(odb, oid, data, len, opts, err);
	case PW_OBJ_TAG:
		return check_tag(odb, oid, data, len, opts, err);
	case PW_OBJ_BLOB:
		return 0;
	default:
		return report(opts, err, oid, MSG_UNKNOWN_TYPE, "unknown type");
	}
}

int pw_fsck_pack(struct pw_odb *odb, const char *idx_path, const struct pw_fsck_opts *opts,
                 struct pw_error *err)
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
		rc = pw_fsck_object(odb, &oid, type, buf.data, buf.len, opts, err);
	}
	pw_buf_free(&buf);
	pw_idx_free(idx);
	return rc;
}
