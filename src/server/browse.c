/* The browse pages of `packwire serve` (browse.h). Everything a repository
 * holds (directory and ref names, messages, authors, the description) goes
 * out through pw_browse_escape and reads as text; every loop has a bound
 * (directory entries, refs, objects read, bytes shown), so a huge or
 * hostile repository costs a page of bounded work. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hash/oidmap.h"
#include "odb/commit-queue.h"
#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/odb.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/version.h"
#include "refs/hide.h"
#include "server/browse.h"
#include "server/paths.h"

#define ABBREV 12 /* hex digits of an abbreviated id */

int pw_browse_is_page(const char *path)
{
	size_t n = path ? strlen(path) : 0;

	return n && path[0] == '/' && path[n - 1] == '/';
}

/* ---- text --------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at p (n bytes left) and its code
 * point, or 0 when the bytes there are not one (overlong forms, surrogates
 * and values past U+10FFFF included). */
static size_t utf8_seq(const unsigned char *p, size_t n, uint32_t *cp)
{
	uint32_t c;
	size_t len, i;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, c = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, c = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, c = p[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Characters that would let text change how other text looks: the
 * bidirectional embeddings, overrides and isolates ("Trojan Source"). */
static int is_bidi_control(uint32_t c)
{
	return (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x200e ||
	       c == 0x200f || c == 0x061c;
}

int pw_browse_escape(struct pw_buf *out, const char *s, size_t len, size_t shown)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, lim = len < shown ? len : shown;
	int rc = 0;

	while (i < lim && !rc) {
		uint32_t c;
		size_t n = utf8_seq(p + i, len - i, &c);

		if (!n) {
			rc = pw_buf_adds(out, "\xef\xbf\xbd"); /* U+FFFD */
			i++;
			continue;
		}
		if (i + n > lim)
			break; /* a character cut by the bound: not half of it */
		i += n;
		switch (c) {
		case '&':
			rc = pw_buf_adds(out, "&amp;");
			break;
		case '<':
			rc = pw_buf_adds(out, "&lt;");
			break;
		case '>':
			rc = pw_buf_adds(out, "&gt;");
			break;
		case '"':
			rc = pw_buf_adds(out, "&quot;");
			break;
		case '\'':
			rc = pw_buf_adds(out, "&#39;");
			break;
		default:
			if (c < 0x20 || c == 0x7f) {
				/* U+2400 + c, U+2421 for DEL: visible, one character */
				uint32_t pic = c == 0x7f ? 0x2421 : 0x2400 + c;
				char u[3] = {(char)(0xe0 | pic >> 12),
				             (char)(0x80 | (pic >> 6 & 0x3f)),
				             (char)(0x80 | (pic & 0x3f))};

				rc = pw_buf_add(out, u, 3);
			} else if ((c >= 0x80 && c < 0xa0) || is_bidi_control(c)) {
				rc = pw_buf_adds(out, "\xef\xbf\xbd");
			} else {
				rc = pw_buf_add(out, p + i - n, n);
			}
		}
	}
	if (!rc && i < len)
		rc = pw_buf_adds(out, "\xe2\x80\xa6"); /* U+2026 */
	return rc;
}

/* A path as a URL path: bytes other than unreserved ones and '/' as %XX
 * (the server decodes them back). */
static int add_url_path(struct pw_buf *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (; *s && !rc; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~' || c == '/')
			rc = pw_buf_addch(out, (char)c);
		else
			rc = pw_buf_addf(out, "%%%c%c", hex[c >> 4], hex[c & 15]);
	}
	return rc;
}

/* ---- commits ------------------------------------------------------------ */

static int64_t parse_digits(const char *p, const char *end, const char **next)
{
	int64_t v = 0;

	while (p < end && *p >= '0' && *p <= '9') {
		int d = *p++ - '0';

		/* saturate: shown as a bad date */
		v = v > (INT64_MAX - d) / 10 ? INT64_MAX : v * 10 + d;
	}
	*next = p;
	return v;
}

/* "Name <email> 1700000000 +0100" (after "author "): the name (up to the
 * first '<'), the time and the offset (after the last '>'); what does not
 * parse is left unset. */
static void parse_ident(const char *p, const char *end, const char **name, size_t *name_len,
                        int64_t *t, int *tz, int *has_time)
{
	const char *lt = memchr(p, '<', (size_t)(end - p)), *gt = NULL, *q;
	const char *ne = lt ? lt : end;

	while (ne > p && ne[-1] == ' ')
		ne--;
	*name = p;
	*name_len = (size_t)(ne - p);
	for (q = end; lt && q > lt; q--)
		if (q[-1] == '>') {
			gt = q - 1;
			break;
		}
	if (!gt)
		return;
	q = gt + 1;
	while (q < end && *q == ' ')
		q++;
	if (q == end || *q < '0' || *q > '9')
		return;
	*t = parse_digits(q, end, &q);
	*has_time = 1;
	*tz = 0;
	while (q < end && *q == ' ')
		q++;
	if (end - q >= 5 && (*q == '+' || *q == '-') && q[1] >= '0' && q[1] <= '9' && q[2] >= '0' &&
	    q[2] <= '9' && q[3] >= '0' && q[3] <= '5' && q[4] >= '0' && q[4] <= '9') {
		int m = ((q[1] - '0') * 10 + (q[2] - '0')) * 60 + (q[3] - '0') * 10 + (q[4] - '0');

		if (m < 24 * 60)
			*tz = *q == '-' ? -m : m;
	}
}

void pw_browse_commit_parse(struct pw_browse_commit *out, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	memset(out, 0, sizeof(*out));
	out->author = out->subject = data;
	/* the header: lines up to the first empty one */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if (le == p) {
			p++;
			break;
		}
		if (le - p > 7 && !memcmp(p, "author ", 7)) {
			parse_ident(p + 7, le, &out->author, &out->author_len, &out->author_time,
			            &out->author_tz, &out->has_time);
		} else if (le - p > 10 && !memcmp(p, "committer ", 10)) {
			const char *n;
			size_t nl2;
			int64_t t = 0;
			int tz = 0, has = 0;

			parse_ident(p + 10, le, &n, &nl2, &t, &tz, &has);
			if (has)
				out->commit_time = t;
		}
		p = nl ? nl + 1 : end;
	}
	/* the subject: the first line of the message that is not blank */
	while (p < end && (*p == '\n' || *p == '\r' || *p == ' '))
		p++;
	out->subject = p;
	{
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		out->subject_len = (size_t)((nl ? nl : end) - p);
	}
}

void pw_browse_format_date(char out[64], int64_t t, int tz_minutes)
{
	struct tm tm;
	time_t when;
	int a = tz_minutes < 0 ? -tz_minutes : tz_minutes;

	/* years 1 to 9999 */
	if (t > 253402300799LL - 24 * 3600 || t < 0) {
		strcpy(out, "(bad date)");
		return;
	}
	when = (time_t)(t + (int64_t)tz_minutes * 60);
	if (!gmtime_r(&when, &tm)) {
		strcpy(out, "(bad date)");
		return;
	}
	snprintf(out, 64, "%04d-%02d-%02d %02d:%02d %c%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1,
	         tm.tm_mday, tm.tm_hour, tm.tm_min, tz_minutes < 0 ? '-' : '+', a / 60 % 100,
	         a % 60);
}

#define PEEL_MAX 8 /* annotated tags followed for a row */

/* Read a commit (annotated tags followed first when peel, at most
 * PEEL_MAX) of at most PW_BROWSE_MAX_OBJECT bytes into buf, every tag on
 * the way bounded the same; its id in *commit. 0, or non-zero when it is
 * missing, too large or no commit (*type then says what it is, when
 * known). */
static int read_commit(struct pw_odb *odb, const struct pw_oid *oid, int peel,
                       struct pw_oid *commit, int *type, struct pw_buf *buf)
{
	struct pw_tag_info ti;
	struct pw_error e;
	uint64_t size;
	int t = PW_OBJ_NONE, depth;

	*commit = *oid;
	*type = PW_OBJ_NONE;
	for (depth = 0;; depth++) {
		if (pw_odb_read_header(odb, commit, &t, &size))
			return -1;
		*type = t;
		if (t != PW_OBJ_TAG || !peel)
			break;
		if (depth >= PEEL_MAX || size > PW_BROWSE_MAX_OBJECT ||
		    pw_odb_read(odb, commit, &t, buf) || t != PW_OBJ_TAG ||
		    pw_tag_parse(&ti, buf->data, buf->len, pw_odb_algo(odb), &e))
			return -1;
		*commit = ti.object;
	}
	if (t != PW_OBJ_COMMIT || size > PW_BROWSE_MAX_OBJECT)
		return -1;
	return pw_odb_read(odb, commit, &t, buf) || t != PW_OBJ_COMMIT ? -1 : 0;
}

/* ---- the page frame ------------------------------------------------------ */

static const char style[] =
        "body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1f2328;background:#fff}"
        "header{background:#24292f;color:#fff;padding:.7em 1.5em}"
        "header a{color:#fff;text-decoration:none;font-weight:600}"
        "header .path{color:#d0d7de}"
        "main{padding:1em 1.5em 2em;max-width:72em}"
        "h1{font-size:1.5em;margin:.3em 0;word-break:break-all}"
        "h2{font-size:1.1em;margin:1.6em 0 .4em;border-bottom:1px solid #d0d7de;"
        "padding-bottom:.2em}"
        "p.desc{color:#57606a;margin:.2em 0 1em}"
        "table{border-collapse:collapse;width:100%}"
        "th,td{text-align:left;padding:.25em .8em .25em 0;vertical-align:top}"
        "thead th{color:#57606a;font-weight:600;border-bottom:1px solid #d0d7de}"
        "tbody tr:nth-child(even){background:#f6f8fa}"
        "table.facts{width:auto}table.facts th{color:#57606a;font-weight:normal}"
        "code,.id{font-family:ui-monospace,monospace;font-size:.92em}"
        ".id{color:#0550ae}.date{white-space:nowrap;color:#57606a}"
        ".name{word-break:break-all}.head{color:#1a7f37;font-weight:600}"
        ".note{color:#57606a;font-style:italic}"
        "footer{color:#8c959f;font-size:.85em;padding:0 1.5em 1.5em}";

static int page_begin(struct pw_buf *o, const char *title, size_t title_len, const char *rel)
{
	int rc = pw_buf_adds(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	                        "<meta name=\"viewport\" content=\"width=device-width, "
	                        "initial-scale=1\"><title>");

	rc = rc ? rc : pw_browse_escape(o, title, title_len, PW_BROWSE_SHOW_NAME);
	rc = rc ? rc : pw_buf_addf(o, "</title><style>%s</style></head>\n<body><header>", style);
	rc = rc ? rc : pw_buf_adds(o, "<a href=\"/\">Repositories</a>");
	if (!rc && rel && *rel) {
		rc = pw_buf_adds(o, " <span class=\"path\">/ ");
		rc = rc ? rc : pw_browse_escape(o, rel, strlen(rel), PW_BROWSE_SHOW_NAME);
		rc = rc ? rc : pw_buf_adds(o, "</span>");
	}
	return rc ? rc : pw_buf_adds(o, "</header>\n<main>\n");
}

static int page_end(struct pw_buf *o)
{
	return pw_buf_adds(o,
	                   "</main>\n<footer>packwire " PW_VERSION "</footer>\n</body></html>\n");
}

static int page_fail(int rc, struct pw_error *err)
{
	if (rc == PW_ETOOBIG)
		return pw_error_set(err, rc, "the page is larger than %u bytes",
		                    PW_BROWSE_MAX_PAGE);
	return pw_error_set(err, rc ? rc : PW_ENOMEM, "out of memory");
}

/* ---- a repository's facts ------------------------------------------------ */

static int exported(const struct pw_http_request *req, struct pw_repo *repo)
{
	char *ok;
	int rc;

	if (req->export_all)
		return 1;
	if (asprintf(&ok, "%s/git-daemon-export-ok", pw_repo_git_dir(repo)) < 0)
		return 0;
	rc = access(ok, F_OK) == 0;
	free(ok);
	return rc;
}

/* The first line of the description file, "" for Git's template text. */
static void description(struct pw_repo *repo, char *out, size_t cap)
{
	char *path;
	FILE *f;
	size_t n = 0;

	out[0] = 0;
	if (asprintf(&path, "%s/description", pw_repo_git_dir(repo)) < 0)
		return;
	f = fopen(path, "r");
	free(path);
	if (!f)
		return;
	n = fread(out, 1, cap - 1, f);
	fclose(f);
	out[n] = 0;
	out[strcspn(out, "\n")] = 0;
	if (!strncmp(out, "Unnamed repository;", 19))
		out[0] = 0;
}

struct tips {
	struct pw_odb *odb;
	const struct pw_hide_refs *hide;
	struct pw_buf buf;
	unsigned read;
	int64_t newest;
};

static int tip_time(const struct pw_ref *ref, void *data)
{
	struct tips *t = data;
	struct pw_commit_info ci;
	struct pw_oid c;
	struct pw_error e;
	int type;

	if (pw_hide_refs_match(t->hide, ref->name, ref->name))
		return 0;
	if (t->read++ >= PW_BROWSE_TIP_REFS)
		return 1;
	if (read_commit(t->odb, &ref->oid, 0, &c, &type, &t->buf) ||
	    pw_commit_parse(&ci, t->buf.data, t->buf.len, pw_odb_algo(t->odb), &e))
		return 0;
	if (ci.commit_time > t->newest)
		t->newest = ci.commit_time;
	pw_commit_info_free(&ci);
	return 0;
}

/* ---- the list of repositories -------------------------------------------- */

struct scan {
	const char *root;
	char **v;
	size_t nr, alloc, seen;
	int truncated;
};

static int is_repository(const char *path)
{
	char *dotgit;
	int r;

	if (pw_repo_is_git_dir(path))
		return 1;
	if (asprintf(&dotgit, "%s/.git", path) < 0)
		return 0;
	r = pw_repo_is_git_dir(dotgit);
	free(dotgit);
	return r;
}

static int scan_add(struct scan *sc, const char *rel)
{
	if (sc->nr == sc->alloc) {
		size_t n = sc->alloc ? 2 * sc->alloc : 32;
		char **v = realloc(sc->v, n * sizeof(*v));

		if (!v)
			return PW_ENOMEM;
		sc->v = v;
		sc->alloc = n;
	}
	if (!(sc->v[sc->nr] = strdup(rel)))
		return PW_ENOMEM;
	sc->nr++;
	return 0;
}

/* The repositories in root/rel (rel "" for root), depth levels down. */
static int scan_dir(struct scan *sc, const char *rel, int depth)
{
	char *dir;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (asprintf(&dir, "%s%s%s", sc->root, *rel ? "/" : "", rel) < 0)
		return PW_ENOMEM;
	d = opendir(dir);
	free(dir);
	if (!d)
		return 0;
	while (!rc && (e = readdir(d))) {
		char *child_rel, *child;
		struct stat st;

		if (sc->seen++ >= PW_BROWSE_MAX_SCAN || sc->nr >= PW_BROWSE_MAX_REPOS) {
			sc->truncated = 1;
			break;
		}
		if (e->d_name[0] == '.')
			continue;
		if (asprintf(&child_rel, "%s%s%s", rel, *rel ? "/" : "", e->d_name) < 0) {
			rc = PW_ENOMEM;
			break;
		}
		if (asprintf(&child, "%s/%s", sc->root, child_rel) < 0) {
			free(child_rel);
			rc = PW_ENOMEM;
			break;
		}
		/* a symlink may lead anywhere: listed only when it stays under
		 * the root (the servers' rule, paths.h) */
		if (!lstat(child, &st) &&
		    (S_ISDIR(st.st_mode) ||
		     (S_ISLNK(st.st_mode) && !stat(child, &st) && S_ISDIR(st.st_mode) &&
		      pw_srv_path_inside(sc->root, child)))) {
			if (is_repository(child))
				rc = scan_add(sc, child_rel);
			else if (depth < PW_BROWSE_MAX_DEPTH)
				rc = scan_dir(sc, child_rel, depth + 1);
		}
		free(child);
		free(child_rel);
	}
	closedir(d);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_row(struct pw_buf *o, const struct pw_http_request *req, const char *root,
                    const char *rel)
{
	struct pw_repo *repo = NULL;
	struct pw_odb *odb = NULL;
	struct pw_hide_refs hide = PW_HIDE_REFS_INIT;
	struct pw_error e;
	struct tips t;
	char *path, desc[PW_BROWSE_SHOW_TEXT * 2 + 1], date[64] = "";
	int rc;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return PW_ENOMEM;
	rc = pw_repo_open_exact(&repo, path, &e);
	free(path);
	if (rc || !exported(req, repo) || !pw_srv_path_inside(root, pw_repo_git_dir(repo))) {
		pw_repo_free(repo);
		return 0; /* not one to list (broken, not exported, outside) */
	}
	description(repo, desc, sizeof(desc));
	memset(&t, 0, sizeof(t));
	pw_buf_init(&t.buf, 0);
	if (!pw_hide_refs_load(&hide, pw_repo_config(repo), "uploadpack", &e) &&
	    !pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), &e)) {
		t.odb = odb;
		t.hide = &hide;
		pw_refs_foreach(repo, "refs/heads/", 0, tip_time, &t);
		if (t.newest)
			pw_browse_format_date(date, t.newest, 0);
	}
	pw_buf_free(&t.buf);
	pw_odb_free(odb);
	pw_hide_refs_free(&hide);

	rc = pw_buf_adds(o, "<tr><td class=\"name\"><a href=\"/");
	rc = rc ? rc : add_url_path(o, rel);
	rc = rc ? rc : pw_buf_adds(o, "/\">");
	rc = rc ? rc : pw_browse_escape(o, rel, strlen(rel), PW_BROWSE_SHOW_NAME);
	rc = rc ? rc : pw_buf_adds(o, "</a></td><td class=\"desc\">");
	rc = rc ? rc : pw_browse_escape(o, desc, strlen(desc), PW_BROWSE_SHOW_TEXT);
	rc = rc ? rc
	        : pw_buf_addf(o,
	                      "</td><td class=\"format\">%s</td><td class=\"date\">%s</td></tr>\n",
	                      pw_repo_algo(repo)->name, *date ? date : "&mdash;");
	pw_repo_free(repo);
	return rc;
}

static int list_page(struct pw_buf *o, const struct pw_http_request *req, const char *root,
                     const char *rel, struct pw_error *err)
{
	struct scan sc;
	size_t i;
	int rc;

	memset(&sc, 0, sizeof(sc));
	sc.root = root;
	rc = scan_dir(&sc, rel, 0);
	if (!rc)
		qsort(sc.v, sc.nr, sizeof(*sc.v), cmp_str);
	rc = rc ? rc
	        : page_begin(o, *rel ? rel : "Repositories", strlen(*rel ? rel : "Repositories"),
	                     rel);
	rc = rc ? rc : pw_buf_adds(o, "<h1>Repositories</h1>\n");
	if (!rc && !sc.nr)
		rc = pw_buf_adds(o, "<p class=\"note\">No repository here.</p>\n");
	if (!rc && sc.nr)
		rc = pw_buf_adds(o, "<table class=\"repos\"><thead><tr><th>Name</th><th>Description"
		                    "</th><th>Object format</th><th>Last change</th></tr></thead>"
		                    "<tbody>\n");
	for (i = 0; !rc && i < sc.nr; i++)
		rc = list_row(o, req, root, sc.v[i]);
	if (!rc && sc.nr)
		rc = pw_buf_adds(o, "</tbody></table>\n");
	if (!rc && sc.truncated)
		rc = pw_buf_addf(o,
		                 "<p class=\"note\">The list stops here: at most %u repositories "
		                 "and %u directory entries are looked at.</p>\n",
		                 PW_BROWSE_MAX_REPOS, PW_BROWSE_MAX_SCAN);
	rc = rc ? rc : page_end(o);
	for (i = 0; i < sc.nr; i++)
		free(sc.v[i]);
	free(sc.v);
	return rc ? page_fail(rc, err) : 0;
}

/* ---- one repository ------------------------------------------------------ */

struct row {
	char *name;                /* ref name shown (refs/heads/ or refs/tags/ stripped) */
	struct pw_oid oid;         /* the commit (tags peeled), or the object */
	int type;                  /* its type; PW_OBJ_NONE when unreadable */
	struct pw_browse_commit c; /* pointers into text */
	char *text;                /* the commit's bytes (bounded) */
	size_t text_len;
	int64_t when; /* for ordering: the committer's time */
};

struct refs_read {
	struct pw_odb *odb;
	const struct pw_hide_refs *hide;
	const char *prefix;
	struct row *v;
	size_t nr, total;
	int peel, failed;
	struct pw_buf buf;
};

static void row_free(struct row *r)
{
	free(r->name);
	free(r->text);
}

static int collect_ref(const struct pw_ref *ref, void *data)
{
	struct refs_read *rr = data;
	struct row *r;

	if (pw_hide_refs_match(rr->hide, ref->name, ref->name))
		return 0;
	if (rr->total++ >= PW_BROWSE_MAX_REFS)
		return 0; /* counted, not read */
	r = &rr->v[rr->nr];
	memset(r, 0, sizeof(*r));
	if (!(r->name = strdup(ref->name + strlen(rr->prefix)))) {
		rr->failed = 1;
		return 1;
	}
	rr->nr++;
	if (!read_commit(rr->odb, &ref->oid, rr->peel, &r->oid, &r->type, &rr->buf)) {
		/* the part a row shows: the header and the first lines */
		size_t keep = rr->buf.len < 8192 ? rr->buf.len : 8192;

		if (!(r->text = malloc(keep + 1))) {
			rr->failed = 1;
			return 1;
		}
		memcpy(r->text, rr->buf.data, keep);
		r->text[keep] = 0;
		r->text_len = keep;
		pw_browse_commit_parse(&r->c, r->text, keep);
		r->when = r->c.commit_time;
	} else if (r->type == PW_OBJ_NONE) {
		r->oid = ref->oid;
	}
	return 0;
}

static int cmp_row(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->when != y->when)
		return x->when < y->when ? 1 : -1;
	return strcmp(x->name, y->name);
}

static int add_abbrev(struct pw_buf *o, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];

	pw_oid_to_hex(oid, hex);
	hex[ABBREV] = 0;
	return pw_buf_addf(o, "<td class=\"id\">%s</td>", hex);
}

/* The subject and date cells of a row (its commit, or why there is none). */
static int add_commit_cells(struct pw_buf *o, const struct row *r)
{
	char date[64];
	int rc;

	if (!r->text)
		return pw_buf_addf(o, "<td class=\"note\">%s</td><td></td>",
		                   r->type == PW_OBJ_NONE     ? "(object missing)"
		                   : r->type == PW_OBJ_COMMIT ? "(commit too large to show)"
		                   : r->type == PW_OBJ_TREE   ? "(a tree)"
		                   : r->type == PW_OBJ_BLOB   ? "(a blob)"
		                   : r->type == PW_OBJ_TAG ? "(a tag too large or too deep to show)"
		                                           : "(not a commit)");
	rc = pw_buf_adds(o, "<td class=\"subject\">");
	rc = rc ? rc : pw_browse_escape(o, r->c.subject, r->c.subject_len, PW_BROWSE_SHOW_TEXT);
	if (!rc && r->c.has_time)
		pw_browse_format_date(date, r->c.author_time, r->c.author_tz);
	return rc ? rc
	          : pw_buf_addf(o, "</td><td class=\"date\">%s</td>", r->c.has_time ? date : "");
}

static int refs_section(struct pw_buf *o, struct pw_repo *repo, struct pw_odb *odb,
                        const struct pw_hide_refs *hide, const char *prefix, const char *title,
                        const char *head)
{
	struct refs_read rr;
	size_t i, shown;
	int rc;

	memset(&rr, 0, sizeof(rr));
	rr.odb = odb;
	rr.hide = hide;
	rr.prefix = prefix;
	rr.peel = !strcmp(prefix, "refs/tags/");
	pw_buf_init(&rr.buf, 0);
	if (!(rr.v = calloc(PW_BROWSE_MAX_REFS, sizeof(*rr.v))))
		return PW_ENOMEM;
	pw_refs_foreach(repo, prefix, 0, collect_ref, &rr);
	pw_buf_free(&rr.buf);
	rc = rr.failed ? PW_ENOMEM : 0;
	qsort(rr.v, rr.nr, sizeof(*rr.v), cmp_row);
	shown = rr.nr < PW_BROWSE_SHOW_REFS ? rr.nr : PW_BROWSE_SHOW_REFS;
	rc = rc ? rc : pw_buf_addf(o, "<h2>%s (%zu)</h2>\n", title, rr.total);
	if (!rc && !rr.total)
		rc = pw_buf_adds(o, "<p class=\"note\">None.</p>\n");
	if (!rc && shown)
		rc = pw_buf_adds(o, "<table class=\"refs\"><thead><tr><th>Name</th><th>Commit</th>"
		                    "<th>Subject</th><th>Date</th></tr></thead><tbody>\n");
	for (i = 0; !rc && i < shown; i++) {
		const struct row *r = &rr.v[i];
		int is_head = head && !strcmp(r->name, head);

		rc = pw_buf_addf(o, "<tr><td class=\"name%s\">", is_head ? " head" : "");
		rc = rc ? rc : pw_browse_escape(o, r->name, strlen(r->name), PW_BROWSE_SHOW_NAME);
		rc = rc ? rc : pw_buf_adds(o, "</td>");
		rc = rc ? rc : add_abbrev(o, &r->oid);
		rc = rc ? rc : add_commit_cells(o, r);
		rc = rc ? rc : pw_buf_adds(o, "</tr>\n");
	}
	if (!rc && shown)
		rc = pw_buf_adds(o, "</tbody></table>\n");
	if (!rc && rr.total > shown)
		rc = pw_buf_addf(o,
		                 "<p class=\"note\">%zu more not shown (the %zu newest of %s%zu "
		                 "are).</p>\n",
		                 rr.total - shown, shown, rr.total > rr.nr ? "the first " : "",
		                 rr.nr);
	for (i = 0; i < rr.nr; i++)
		row_free(&rr.v[i]);
	free(rr.v);
	return rc;
}

/* The log of HEAD: newest commit first (by committer time, as git log),
 * from at most PW_BROWSE_LOG_READ commits read. */
struct walk_item {
	struct row r;
	struct pw_oid *parents;
	size_t nr_parents;
};

struct walk {
	struct pw_odb *odb;
	struct pw_oidmap seen;
	struct walk_item *items; /* each commit read, once */
	size_t nr_items;
	struct pw_commit_queue q; /* indexes into items, newest first */
	unsigned read;
	struct pw_buf buf;
};

static int walk_push(struct walk *w, const struct pw_oid *oid)
{
	struct walk_item *it;
	struct pw_commit_info ci;
	struct pw_error e;
	int created, type;

	if (w->read >= PW_BROWSE_LOG_READ)
		return 0;
	if (!pw_oidmap_put(&w->seen, oid, &created))
		return PW_ENOMEM;
	if (!created)
		return 0;
	w->read++;
	it = &w->items[w->nr_items];
	memset(it, 0, sizeof(*it));
	if (read_commit(w->odb, oid, 0, &it->r.oid, &type, &w->buf) ||
	    pw_commit_parse(&ci, w->buf.data, w->buf.len, pw_odb_algo(w->odb), &e))
		return 0; /* a missing commit (shallow) ends its line */
	it->parents = ci.parents;
	it->nr_parents = ci.nr_parents;
	ci.parents = NULL;
	pw_commit_info_free(&ci);
	{
		size_t keep = w->buf.len < 8192 ? w->buf.len : 8192;

		if (!(it->r.text = malloc(keep + 1))) {
			free(it->parents);
			return PW_ENOMEM;
		}
		memcpy(it->r.text, w->buf.data, keep);
		it->r.text[keep] = 0;
		it->r.text_len = keep;
		pw_browse_commit_parse(&it->r.c, it->r.text, keep);
		it->r.when = it->r.c.commit_time;
		it->r.type = PW_OBJ_COMMIT;
	}
	/* room for PW_BROWSE_LOG_READ was reserved: this cannot fail */
	pw_commit_queue_push(&w->q, w->nr_items++, it->r.when);
	return 0;
}

static void walk_pop(struct walk *w, struct walk_item *out)
{
	*out = w->items[pw_commit_queue_pop(&w->q, NULL)];
}

static int log_section(struct pw_buf *o, struct pw_odb *odb, const struct pw_oid *head,
                       const char *branch)
{
	struct walk w;
	unsigned shown = 0;
	size_t i;
	int rc;

	memset(&w, 0, sizeof(w));
	w.odb = odb;
	pw_buf_init(&w.buf, 0);
	if (!(w.items = calloc(PW_BROWSE_LOG_READ, sizeof(*w.items))) ||
	    pw_commit_queue_reserve(&w.q, PW_BROWSE_LOG_READ)) {
		free(w.items);
		pw_commit_queue_free(&w.q);
		return PW_ENOMEM;
	}
	rc = pw_buf_adds(o, "<h2>Latest commits");
	if (!rc && branch) {
		rc = pw_buf_adds(o, " on ");
		rc = rc ? rc : pw_browse_escape(o, branch, strlen(branch), PW_BROWSE_SHOW_NAME);
	}
	rc = rc ? rc : pw_buf_adds(o, "</h2>\n");
	rc = rc ? rc : walk_push(&w, head);
	if (!rc && !w.q.nr)
		rc = pw_buf_adds(o, "<p class=\"note\">No commit to show.</p>\n");
	if (!rc && w.q.nr)
		rc = pw_buf_adds(o,
		                 "<table class=\"log\"><thead><tr><th>Commit</th><th>Subject</th>"
		                 "<th>Author</th><th>Date</th></tr></thead><tbody>\n");
	while (!rc && w.q.nr && shown < PW_BROWSE_LOG) {
		struct walk_item it;
		char date[64] = "";

		walk_pop(&w, &it);
		shown++;
		for (i = 0; !rc && i < it.nr_parents; i++)
			rc = walk_push(&w, &it.parents[i]);
		if (it.r.c.has_time)
			pw_browse_format_date(date, it.r.c.author_time, it.r.c.author_tz);
		rc = rc ? rc : pw_buf_adds(o, "<tr class=\"commit\">");
		rc = rc ? rc : add_abbrev(o, &it.r.oid);
		rc = rc ? rc : pw_buf_adds(o, "<td class=\"subject\">");
		rc = rc ? rc
		        : pw_browse_escape(o, it.r.c.subject, it.r.c.subject_len,
		                           PW_BROWSE_SHOW_TEXT);
		rc = rc ? rc : pw_buf_adds(o, "</td><td class=\"author\">");
		rc = rc ? rc
		        : pw_browse_escape(o, it.r.c.author, it.r.c.author_len,
		                           PW_BROWSE_SHOW_TEXT);
		rc = rc ? rc : pw_buf_addf(o, "</td><td class=\"date\">%s</td></tr>\n", date);
		free(it.parents);
		row_free(&it.r);
	}
	if (!rc && shown)
		rc = pw_buf_adds(o, "</tbody></table>\n");
	for (i = 0; i < w.q.nr; i++) { /* the items still queued: the others are freed */
		struct walk_item *it = &w.items[w.q.v[i].item];

		free(it->parents);
		row_free(&it->r);
	}
	free(w.items);
	pw_commit_queue_free(&w.q);
	pw_oidmap_free(&w.seen);
	pw_buf_free(&w.buf);
	return rc;
}

static int clone_line(struct pw_buf *o, const char *label, const char *base, const char *rel)
{
	struct pw_buf url = PW_BUF_INIT;
	int rc;

	rc = pw_buf_adds(&url, base);
	rc = rc ? rc : pw_buf_addch(&url, '/');
	rc = rc ? rc : add_url_path(&url, rel);
	rc = rc ? rc : pw_buf_addf(o, "<tr><th>Clone (%s)</th><td><code>git clone ", label);
	rc = rc ? rc : pw_browse_escape(o, url.data, url.len, 4 * PW_BROWSE_SHOW_NAME);
	rc = rc ? rc : pw_buf_adds(o, "</code></td></tr>\n");
	pw_buf_free(&url);
	return rc;
}

static int repo_page(struct pw_buf *o, const struct pw_http_request *req, struct pw_repo *repo,
                     const char *rel, struct pw_error *err)
{
	struct pw_hide_refs hide = PW_HIDE_REFS_INIT;
	struct pw_odb *odb = NULL;
	struct pw_oid head_oid;
	char *symref = NULL, desc[PW_BROWSE_SHOW_TEXT * 2 + 1];
	const char *branch = NULL;
	int rc, head_ok = 0;

	if ((rc = pw_hide_refs_load(&hide, pw_repo_config(repo), "uploadpack", err)))
		return rc;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err))) {
		pw_hide_refs_free(&hide);
		return rc;
	}
	description(repo, desc, sizeof(desc));
	/* HEAD's branch, unless hideRefs hides HEAD or the branch */
	if (!pw_hide_refs_match(&hide, "HEAD", "HEAD") &&
	    !pw_refs_read(repo, "HEAD", &head_oid, &symref)) {
		if (symref && !pw_hide_refs_match(&hide, symref, symref)) {
			branch = !strncmp(symref, "refs/heads/", 11) ? symref + 11 : symref;
			head_ok = !pw_refs_resolve(repo, symref, &head_oid, NULL);
		} else if (!symref) {
			head_ok = 1; /* a detached HEAD */
		}
	}

	rc = page_begin(o, rel, strlen(rel), rel);
	rc = rc ? rc : pw_buf_adds(o, "<h1>");
	rc = rc ? rc : pw_browse_escape(o, rel, strlen(rel), PW_BROWSE_SHOW_NAME);
	rc = rc ? rc : pw_buf_adds(o, "</h1>\n");
	if (!rc && *desc) {
		rc = pw_buf_adds(o, "<p class=\"desc\">");
		rc = rc ? rc : pw_browse_escape(o, desc, strlen(desc), PW_BROWSE_SHOW_TEXT);
		rc = rc ? rc : pw_buf_adds(o, "</p>\n");
	}
	rc = rc ? rc
	        : pw_buf_addf(o,
	                      "<table class=\"facts\"><tr><th>Object format</th>"
	                      "<td class=\"format\">%s</td></tr>\n<tr><th>HEAD</th>"
	                      "<td class=\"headref\">",
	                      pw_repo_algo(repo)->name);
	if (!rc && branch)
		rc = pw_browse_escape(o, branch, strlen(branch), PW_BROWSE_SHOW_NAME);
	else if (!rc)
		rc = pw_buf_adds(o, head_ok ? "(detached)" : "(none)");
	rc = rc ? rc : pw_buf_adds(o, "</td></tr>\n");
	if (!rc && req->clone_url)
		rc = clone_line(o, "HTTP", req->clone_url, rel);
	if (!rc && req->daemon_url)
		rc = clone_line(o, "git", req->daemon_url, rel);
	rc = rc ? rc : pw_buf_adds(o, "</table>\n");
	rc = rc ? rc
	        : refs_section(o, repo, odb, &hide, "refs/heads/", "Branches",
	                       branch && symref && !strncmp(symref, "refs/heads/", 11) ? branch
	                                                                               : NULL);
	rc = rc ? rc : refs_section(o, repo, odb, &hide, "refs/tags/", "Tags", NULL);
	if (!rc && head_ok)
		rc = log_section(o, odb, &head_oid, branch);
	rc = rc ? rc : page_end(o);
	free(symref);
	pw_odb_free(odb);
	pw_hide_refs_free(&hide);
	return rc ? page_fail(rc, err) : 0;
}

/* ---- the entry point ---------------------------------------------------- */

/* Is root/rel inside a repository (one of its parents is one)? */
static int inside_repository(const char *root, const char *rel)
{
	char *path;
	size_t i;
	int found = 0;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return 1;
	for (i = strlen(root) + 1; path[i] && !found; i++)
		if (path[i] == '/') {
			path[i] = 0;
			found = is_repository(path);
			path[i] = '/';
		}
	free(path);
	return found;
}

int pw_browse_page(struct pw_buf *out, const struct pw_http_request *req, struct pw_error *err)
{
	const char *root = req->project_root, *pi = req->path_info;
	struct pw_repo *repo = NULL;
	struct pw_error e;
	struct stat st;
	char *rel = NULL, *path = NULL;
	size_t n;
	int rc;

	if (!root || !*root || !pw_browse_is_page(pi))
		return pw_error_set(err, PW_ENOTFOUND, "no browse page for '%s'", pi ? pi : "");
	if (pw_srv_path_is_aliased(pi))
		return pw_error_set(err, PW_ENOTFOUND, "'%s': aliased", pi);
	/* "/a/b/" -> "a/b"; "/" -> "" */
	n = strlen(pi);
	if (!(rel = strndup(pi + 1, n - 1)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	while (*rel && rel[strlen(rel) - 1] == '/')
		rel[strlen(rel) - 1] = 0;
	if (asprintf(&path, "%s%s%s", root, *rel ? "/" : "", rel) < 0) {
		free(rel);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (stat(path, &st) || !S_ISDIR(st.st_mode) || !pw_srv_path_inside(root, path)) {
		rc = pw_error_set(err, PW_ENOTFOUND, "'%s': no such directory under the base path",
		                  pi);
	} else if (*rel && !pw_repo_open_exact(&repo, path, &e)) {
		/* the daemon's rule for where a repository really is */
		if (!pw_srv_path_inside(root, pw_repo_git_dir(repo)))
			rc = pw_error_set(err, PW_ENOTFOUND, "'%s': resolves outside the base path",
			                  pi);
		else if (!exported(req, repo))
			rc = pw_error_set(err, PW_ENOTFOUND, "Repository not exported: '%s'", pi);
		else
			rc = repo_page(out, req, repo, rel, err);
		pw_repo_free(repo);
	} else if (*rel && is_repository(path)) {
		rc = pw_error_set(err, PW_ENOTFOUND, "'%s': the repository does not open", pi);
	} else if (inside_repository(root, rel)) {
		rc = pw_error_set(err, PW_ENOTFOUND, "'%s': a directory inside a repository", pi);
	} else {
		rc = list_page(out, req, root, rel, err);
	}
	free(path);
	free(rel);
	return rc;
}
