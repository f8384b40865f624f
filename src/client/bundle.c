/* Bundle headers (pure parser and writer) and bundle files: open (header
 * only), check the algorithm and prerequisites, unbundle the pack. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/bundle-priv.h"
#include "client/client-priv.h"
#include "packwire/bundle.h"
#include "packwire/fs.h"
#include "packwire/index-pack.h"
#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"

#define SIG_V2  "# v2 git bundle\n"
#define SIG_V3  "# v3 git bundle\n"
#define SIG_LEN 16

void pw_bundle_header_init(struct pw_bundle_header *h)
{
	memset(h, 0, sizeof(*h));
}

static void free_list(struct pw_bundle_ref *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(v[i].name);
	free(v);
}

void pw_bundle_header_free(struct pw_bundle_header *h)
{
	if (!h)
		return;
	free_list(h->prereqs, h->nr_prereqs);
	free_list(h->refs, h->nr_refs);
	free(h->filter);
	pw_bundle_header_init(h);
}

int pw_bundle_has_signature(const uint8_t *in, size_t len)
{
	return len >= SIG_LEN && (!memcmp(in, SIG_V2, SIG_LEN) || !memcmp(in, SIG_V3, SIG_LEN));
}

/* Could in[0..len) still become a signature line? */
static int sig_prefix(const uint8_t *in, size_t len)
{
	size_t n = len < SIG_LEN ? len : SIG_LEN;

	return !memcmp(in, SIG_V2, n) || !memcmp(in, SIG_V3, n);
}

/* A printable excerpt of a bad line for a message. */
static int bad_line(struct pw_error *err, size_t lineno, const char *p, size_t n, const char *why)
{
	char show[81];
	size_t i, k = 0;

	for (i = 0; i < n && k < sizeof(show) - 1; i++)
		show[k++] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
	show[k] = 0;
	return pw_error_set(err, PW_EPROTO, "bundle header line %zu: %s: '%s%s'", lineno, why, show,
	                    n > k ? "..." : "");
}

static int push_ref(struct pw_bundle_ref **v, size_t *nr, size_t *alloc, const struct pw_oid *oid,
                    const char *name, size_t nlen)
{
	if (*nr == *alloc) {
		size_t a = *alloc ? *alloc * 2 : 16;
		void *p = realloc(*v, a * sizeof(**v));

		if (!p)
			return PW_ENOMEM;
		*v = p;
		*alloc = a;
	}
	(*v)[*nr].name = malloc(nlen + 1);
	if (!(*v)[*nr].name)
		return PW_ENOMEM;
	memcpy((*v)[*nr].name, name, nlen);
	(*v)[*nr].name[nlen] = 0;
	(*v)[*nr].oid = *oid;
	(*nr)++;
	return 0;
}

/* The hex id at the start of p (up to a space or the end): its length. */
static size_t hex_run(const char *p, size_t n)
{
	size_t i = 0;

	while (i < n && pw_hexval((unsigned char)p[i]) >= 0)
		i++;
	return i;
}

static int parse_cap(struct pw_bundle_header *h, const char *p, size_t n, size_t lineno,
                     struct pw_error *err)
{
	const char *eq = memchr(p, '=', n);
	size_t klen = eq ? (size_t)(eq - p) : n, i;
	const char *v = eq ? eq + 1 : NULL;
	size_t vlen = eq ? n - klen - 1 : 0;

	if (!klen)
		return bad_line(err, lineno, p - 1, n + 1, "empty capability");
	for (i = 0; i < klen; i++) {
		char c = p[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-'))
			return bad_line(err, lineno, p - 1, n + 1, "malformed capability");
	}
	if (klen == 13 && !memcmp(p, "object-format", 13)) {
		const struct pw_hash_algo *a = v ? pw_hash_by_name(v, vlen) : NULL;

		if (!a)
			return pw_error_set(err, PW_EPROTO,
			                    "unrecognized bundle hash algorithm: %.*s",
			                    (int)(vlen > 64 ? 64 : vlen), v ? v : "");
		if (h->algo_from_caps && h->algo != a)
			return bad_line(err, lineno, p - 1, n + 1, "conflicting object-format");
		h->algo = a;
		h->algo_from_caps = 1;
		return 0;
	}
	if (klen == 6 && !memcmp(p, "filter", 6) && v) {
		struct pw_filter f;
		int rc;

		if (h->filter)
			return bad_line(err, lineno, p - 1, n + 1, "second filter");
		if ((rc = pw_filter_parse(&f, v, vlen, err)))
			return pw_error_set(err, PW_EPROTO, "bundle filter '%.*s': %s",
			                    (int)(vlen > 64 ? 64 : vlen), v,
			                    err ? err->msg : "invalid");
		pw_filter_free(&f);
		h->filter = malloc(vlen + 1);
		if (!h->filter)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		memcpy(h->filter, v, vlen);
		h->filter[vlen] = 0;
		return 0;
	}
	return pw_error_set(err, PW_EPROTO, "unknown capability '%.*s'", (int)(n > 80 ? 80 : n), p);
}

/* Git's words for a line that is no prerequisite or reference:
 * "unrecognized header: <line> (<length without the '-'>)". */
static int unrecognized(struct pw_error *err, size_t lineno, const char *p, size_t n,
                        const char *hint)
{
	char show[201];
	size_t i, k = 0, len = n;

	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t' || p[len - 1] == '\r'))
		len--;
	for (i = 0; i < len && k < sizeof(show) - 1; i++)
		show[k++] = (p[i] >= 0x20 && p[i] < 0x7f) ? p[i] : '?';
	show[k] = 0;
	return pw_error_set(err, PW_EPROTO,
	                    "bundle header line %zu: unrecognized header: %s%s (%zu)%s", lineno,
	                    show, len > k ? "..." : "", len - (n && p[0] == '-'), hint);
}

/* "-<oid>[ <comment>]" or "<oid> <refname>". */
static int parse_item(struct pw_bundle_header *h, const char *p, size_t n, size_t lineno,
                      struct pw_error *err)
{
	int prereq = n && p[0] == '-';
	const char *q = p + prereq;
	size_t qn = n - prereq, hl = hex_run(q, qn), rest;
	const struct pw_hash_algo *a;
	struct pw_oid oid;

	/* a v2 bundle is SHA-1 by definition: Git reads 40 digits and wants
	 * a space after them */
	if (h->version == 2 && !h->algo)
		h->algo = &pw_hash_sha1;
	if (h->version == 2 && hl != 40)
		return unrecognized(err, lineno, p, n,
		                    hl == 64 ? "; a v2 bundle holds SHA-1 ids only (SHA-256 "
		                               "needs v3 with @object-format=sha256)"
		                             : "");
	if (hl != 40 && hl != 64)
		return unrecognized(err, lineno, p, n, "");
	if (hl < qn && q[hl] != ' ')
		return unrecognized(err, lineno, p, n, "");
	if (!h->algo) {
		/* v3 without @object-format: the spec's one place where the
		 * algorithm is guessed from the id length */
		h->algo = pw_hash_guess_from_hexlen(hl);
		if (!h->algo)
			return unrecognized(err, lineno, p, n, "");
	}
	a = h->algo;
	if (hl != a->hexsz) {
		if (h->algo_from_caps)
			return pw_error_set(err, PW_EPROTO,
			                    "bundle header line %zu: a %zu-digit id in a %s bundle",
			                    lineno, hl, a->name);
		return pw_error_set(err, PW_EPROTO,
		                    "bundle header line %zu: ids of mixed lengths (%zu and %zu hex "
		                    "digits)",
		                    lineno, (size_t)a->hexsz, hl);
	}
	if (pw_oid_from_hex(&oid, q, hl, a))
		return bad_line(err, lineno, p, n, "bad object id");
	rest = hl < qn ? qn - hl - 1 : 0;
	if (prereq) {
		if (h->nr_refs)
			return bad_line(err, lineno, p, n, "prerequisite after a reference");
		if (push_ref(&h->prereqs, &h->nr_prereqs, &h->alloc_prereqs, &oid, q + hl + !!rest,
		             rest))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		return 0;
	}
	if (!rest)
		return bad_line(err, lineno, p, n, "reference without a name");
	if (push_ref(&h->refs, &h->nr_refs, &h->alloc_refs, &oid, q + hl + 1, rest))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

/* Where an incremental parse stands: lines done and bytes consumed. */
struct hdr_state {
	size_t lineno, ncaps;
	uint64_t total; /* header bytes consumed by earlier calls */
};

/* Parse the complete lines of in[0..len), the bytes that follow what earlier
 * calls consumed: *used gets the bytes consumed (whole lines). 0 when the
 * blank line that ends the header was among them, PW_EMORE when the rest is
 * an unfinished line, else an error. Each byte is looked at once, however
 * the header arrives. */
static int parse_lines(struct pw_bundle_header *h, struct hdr_state *st, const uint8_t *in,
                       size_t len, size_t *used, struct pw_error *err)
{
	size_t pos = 0;
	int rc;

	*used = 0;
	for (;;) {
		const uint8_t *nl;
		const char *p = (const char *)in + pos;
		size_t avail = len - pos, n;

		if (st->total + pos > PW_BUNDLE_MAX_HEADER)
			return pw_error_set(err, PW_ETOOBIG, "bundle header longer than %u bytes",
			                    PW_BUNDLE_MAX_HEADER);
		nl = memchr(in + pos, '\n',
		            avail > PW_BUNDLE_MAX_LINE ? PW_BUNDLE_MAX_LINE : avail);
		if (!nl) {
			*used = pos;
			if (avail >= PW_BUNDLE_MAX_LINE)
				return pw_error_set(err, PW_ETOOBIG,
				                    "bundle header line %zu longer than %d bytes",
				                    st->lineno + 1, PW_BUNDLE_MAX_LINE);
			if (!st->lineno && !sig_prefix(in, avail))
				return pw_error_set(err, PW_EPROTO, "not a v2 or v3 bundle");
			return PW_EMORE;
		}
		n = (size_t)(nl - (in + pos));
		st->lineno++;
		if (memchr(p, 0, n))
			return bad_line(err, st->lineno, p, n, "NUL byte in header");
		if (st->lineno == 1) {
			if (!pw_bundle_has_signature((const uint8_t *)p, avail))
				return pw_error_set(err, PW_EPROTO, "not a v2 or v3 bundle");
			h->version = p[3] == '3' ? 3 : 2;
		} else if (!n) {
			pos += 1;
			break;
		} else if (p[0] == '@' && h->version == 3) {
			if (h->nr_prereqs || h->nr_refs)
				return bad_line(err, st->lineno, p, n, "capability after the ids");
			if (++st->ncaps > PW_BUNDLE_MAX_CAPS)
				return pw_error_set(err, PW_ETOOBIG,
				                    "more than %d bundle capabilities",
				                    PW_BUNDLE_MAX_CAPS);
			if ((rc = parse_cap(h, p + 1, n - 1, st->lineno, err)))
				return rc;
		} else {
			if (h->nr_prereqs + h->nr_refs >= PW_BUNDLE_MAX_ITEMS)
				return pw_error_set(err, PW_ETOOBIG,
				                    "more than %d prerequisites and references",
				                    PW_BUNDLE_MAX_ITEMS);
			if ((rc = parse_item(h, p, n, st->lineno, err)))
				return rc;
		}
		pos += n + 1;
	}
	if (!h->algo)
		h->algo = &pw_hash_sha1; /* no ids at all: nothing depends on it */
	*used = pos;
	return 0;
}

int pw_bundle_header_parse(struct pw_bundle_header *h, const uint8_t *in, size_t len, size_t *used,
                           struct pw_error *err)
{
	struct hdr_state st = {0, 0, 0};
	size_t n;
	int rc;

	pw_bundle_header_free(h);
	*used = 0;
	rc = parse_lines(h, &st, in, len, &n, err);
	if (!rc)
		*used = n;
	return rc;
}

int pw_bundle_header_write(const struct pw_bundle_header *h, struct pw_buf *out,
                           struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	if (h->version != 2 && h->version != 3)
		return pw_error_set(err, PW_EINVAL, "unsupported bundle version %d", h->version);
	if (h->version == 2 && h->algo != &pw_hash_sha1)
		return pw_error_set(err, PW_EINVAL,
		                    "cannot write bundle version 2 with algorithm %s",
		                    h->algo->name);
	rc = pw_buf_adds(out, h->version == 3 ? SIG_V3 : SIG_V2);
	if (!rc && h->version == 3)
		rc = pw_buf_addf(out, "@object-format=%s\n", h->algo->name);
	if (!rc && h->version == 3 && h->filter)
		rc = pw_buf_addf(out, "@filter=%s\n", h->filter);
	for (i = 0; !rc && i < h->nr_prereqs; i++)
		rc = pw_buf_addf(out, "-%s%s%s\n", pw_oid_to_hex(&h->prereqs[i].oid, hex),
		                 *h->prereqs[i].name ? " " : "", h->prereqs[i].name);
	for (i = 0; !rc && i < h->nr_refs; i++)
		rc = pw_buf_addf(out, "%s %s\n", pw_oid_to_hex(&h->refs[i].oid, hex),
		                 h->refs[i].name);
	if (!rc)
		rc = pw_buf_addch(out, '\n');
	return rc ? pw_error_set(err, rc, "out of memory") : 0;
}

/* ---- bundle files ------------------------------------------------------- */

struct pw_bundle {
	char *path;
	int fd;
	int own_fd;
	int consumed; /* the pack was read */
	struct pw_bundle_header h;
};

const struct pw_bundle_header *pw_bundle_get_header(const struct pw_bundle *b)
{
	return &b->h;
}

const char *pw_bundle_path(const struct pw_bundle *b)
{
	return b->path;
}

void pw_bundle_free(struct pw_bundle *b)
{
	if (!b)
		return;
	if (b->own_fd && b->fd >= 0)
		close(b->fd);
	pw_bundle_header_free(&b->h);
	free(b->path);
	free(b);
}

/* Read the header without reading past it: a seekable file is read in
 * blocks and the position set back to the pack; a pipe one byte at a time.
 * The lines are parsed as they complete and dropped from the buffer, so the
 * work is linear in the header's size and the buffer holds one line and a
 * block. */
static int read_header(struct pw_bundle *b, struct pw_error *err)
{
	struct pw_buf buf = PW_BUF_INIT;
	struct hdr_state st = {0, 0, 0};
	off_t start = lseek(b->fd, 0, SEEK_CUR);
	size_t chunk = start >= 0 ? 65536 : 1, used = 0;
	int rc = PW_EMORE;

	pw_bundle_header_free(&b->h);
	while (rc == PW_EMORE) {
		ssize_t n;

		if (pw_buf_grow(&buf, chunk)) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
		n = read(b->fd, buf.data + buf.len, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = pw_error_set(err, PW_EIO, "could not read '%s': %s", b->path,
			                  strerror(errno));
			break;
		}
		if (n == 0) {
			rc = pw_error_set(err, PW_EPROTO, "'%s': the bundle header ends early",
			                  b->path);
			break;
		}
		pw_buf_setlen(&buf, buf.len + (size_t)n);
		/* a pipe: only a newline can complete a line, only "\n\n" the header */
		if (chunk == 1 && buf.data[buf.len - 1] != '\n' && buf.len > 1)
			continue;
		rc = parse_lines(&b->h, &st, (const uint8_t *)buf.data, buf.len, &used, err);
		if (rc == PW_EPROTO && !b->h.version && buf.len >= 1 &&
		    !pw_bundle_has_signature((uint8_t *)buf.data, buf.len) &&
		    (buf.len >= SIG_LEN || memchr(buf.data, '\n', buf.len)))
			rc = pw_error_set(err, PW_EPROTO,
			                  "'%s' does not look like a v2 or v3 bundle file",
			                  b->path);
		else if (rc == PW_EPROTO || rc == PW_ETOOBIG)
			pw_error_wrap(err, "bundle '%s'", b->path);
		/* what was parsed is gone: the buffer keeps the unfinished line */
		st.total += used;
		memmove(buf.data, buf.data + used, buf.len - used);
		pw_buf_setlen(&buf, buf.len - used);
	}
	if (!rc && start >= 0 && lseek(b->fd, start + (off_t)st.total, SEEK_SET) < 0)
		rc = pw_error_set(err, PW_EIO, "could not seek in '%s': %s", b->path,
		                  strerror(errno));
	pw_buf_free(&buf);
	return rc;
}

int pw_bundle_open(struct pw_bundle **out, const char *path, struct pw_error *err)
{
	struct pw_bundle *b = calloc(1, sizeof(*b));
	int rc;

	*out = NULL;
	if (!b || !(b->path = strdup(path))) {
		free(b);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (!strcmp(path, "-")) {
		b->fd = 0;
	} else {
		b->fd = open(path, O_RDONLY | O_CLOEXEC);
		b->own_fd = 1;
		if (b->fd < 0) {
			rc = pw_error_set(err, PW_ENOTFOUND, "could not open '%s'", path);
			pw_bundle_free(b);
			return rc;
		}
	}
	if ((rc = read_header(b, err))) {
		pw_bundle_free(b);
		return rc;
	}
	*out = b;
	return 0;
}

int pw_bundle_check_algo(const struct pw_bundle *b, const struct pw_hash_algo *local,
                         struct pw_error *err)
{
	if (b->h.algo == local)
		return 0;
	return pw_error_set(err, PW_EMISMATCH,
	                    "bundle '%s' uses %s, but the repository uses %s: a %s repository "
	                    "cannot read it",
	                    b->path, b->h.algo->name, local->name, local->name);
}

int pw_bundle_missing_prereqs(const struct pw_bundle *b, struct pw_repo *repo,
                              struct pw_oid **missing, size_t *nr, struct pw_error *err)
{
	struct pw_odb *odb = NULL;
	size_t i;
	int rc;

	*missing = NULL;
	*nr = 0;
	if ((rc = pw_bundle_check_algo(b, pw_repo_algo(repo), err)))
		return rc;
	if (!b->h.nr_prereqs)
		return 0;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), b->h.algo, err)))
		return rc;
	for (i = 0; i < b->h.nr_prereqs; i++) {
		int type = 0;
		uint64_t size;

		if (!pw_odb_read_header(odb, &b->h.prereqs[i].oid, &type, &size) &&
		    type == PW_OBJ_COMMIT)
			continue;
		if (!*missing && !(*missing = calloc(b->h.nr_prereqs, sizeof(**missing)))) {
			pw_odb_free(odb);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		(*missing)[(*nr)++] = b->h.prereqs[i].oid;
	}
	pw_odb_free(odb);
	return 0;
}

/* "Repository lacks these prerequisite commits:" with the ids, as Git. */
static int prereq_error(const struct pw_oid *missing, size_t nr, struct pw_error *err)
{
	char msg[PW_ERROR_MSG_MAX];
	char hex[PW_MAX_HEXSZ + 1];
	size_t i, off;

	off = (size_t)snprintf(msg, sizeof(msg), "Repository lacks these prerequisite commits:");
	for (i = 0; i < nr && off < sizeof(msg) - PW_MAX_HEXSZ - 16; i++)
		off += (size_t)snprintf(msg + off, sizeof(msg) - off, "\n%s",
		                        pw_oid_to_hex(&missing[i], hex));
	if (i < nr)
		snprintf(msg + off, sizeof(msg) - off, "\n(and %zu more)", nr - i);
	return pw_error_set(err, PW_ENOTFOUND, "%s", msg);
}

static int ip_read(void *ctx, const struct pw_oid *oid, int *type, struct pw_buf *out)
{
	return pw_odb_read(ctx, oid, type, out) ? PW_ENOTFOUND : 0;
}

static int ip_has(void *ctx, const struct pw_oid *oid)
{
	return pw_odb_exists(ctx, oid);
}

struct progress {
	const struct pw_bundle_read_opts *o;
	uint64_t total;
	int last_phase;
	unsigned last_pct;
};

static void ip_progress(void *ctx, int phase, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	unsigned pct = total ? (unsigned)(done * 100 / total) : 100;

	if (phase == PW_IPACK_RECEIVING)
		p->total = total;
	if (!p->o || !p->o->progress || !p->o->report.progress || !total)
		return;
	if (phase == p->last_phase && pct == p->last_pct && done != total)
		return;
	p->last_phase = phase;
	p->last_pct = pct;
	p->o->report.progress(p->o->report.data,
	                      phase == PW_IPACK_RECEIVING ? "Receiving objects"
	                                                  : "Resolving deltas",
	                      done, total, done == total);
}

static int nop_obj(const struct pw_revlist_obj *obj, void *data)
{
	(void)obj;
	(void)data;
	return 0;
}

static int exclude_ref(const struct pw_ref *ref, void *data)
{
	pw_revlist_add(data, &ref->oid, NULL, 1);
	return 0;
}

/* Everything the bundle's refs reach is here now, short of what the
 * prerequisites and the repository's refs reach. */
static int check_connected(struct pw_bundle *b, struct pw_repo *repo, struct pw_error *err)
{
	struct pw_odb *odb = NULL;
	struct pw_revlist *rl = NULL;
	size_t i;
	int rc;

	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), b->h.algo, err)))
		return rc;
	if ((rc = pw_revlist_new(&rl, odb, PW_REVLIST_OBJECTS))) {
		pw_odb_free(odb);
		return pw_error_set(err, rc, "out of memory");
	}
	for (i = 0; !rc && i < b->h.nr_refs; i++)
		rc = pw_revlist_add(rl, &b->h.refs[i].oid, NULL, 0);
	for (i = 0; !rc && i < b->h.nr_prereqs; i++)
		rc = pw_revlist_add(rl, &b->h.prereqs[i].oid, NULL, 1);
	if (!rc)
		pw_refs_foreach(repo, NULL, 0, exclude_ref, rl);
	if (!rc)
		rc = pw_revlist_run(rl, nop_obj, NULL);
	if (rc)
		pw_error_set(err, rc, "bundle '%s' is incomplete: %s", b->path,
		             pw_revlist_error(rl)->msg);
	pw_revlist_free(rl);
	pw_odb_free(odb);
	return rc;
}

static int check_tips(struct pw_bundle *b, struct pw_repo *repo, struct pw_error *err)
{
	struct pw_odb *odb = NULL;
	size_t i;
	int rc;

	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), b->h.algo, err)))
		return rc;
	for (i = 0; !rc && i < b->h.nr_refs; i++)
		if (!pw_odb_exists(odb, &b->h.refs[i].oid)) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(err, PW_ENOTFOUND,
			                  "bundle '%s' is incomplete: bad object %s", b->path,
			                  pw_oid_to_hex(&b->h.refs[i].oid, hex));
		}
	pw_odb_free(odb);
	return rc;
}

int pw_bundle_unbundle(struct pw_bundle *b, struct pw_repo *repo,
                       const struct pw_bundle_read_opts *opts, struct pw_fetch_result *res,
                       struct pw_error *err)
{
	struct pw_index_pack_args args;
	struct progress prog = {0};
	struct pw_oid *missing = NULL;
	struct pw_odb *odb = NULL;
	char hex[PW_MAX_HEXSZ + 1];
	char *pack_dir = NULL;
	size_t nr = 0;
	int rc, kept = 0;

	memset(res, 0, sizeof(*res));
	if (b->consumed)
		return pw_error_set(err, PW_EINVAL, "bundle '%s': its pack was read already",
		                    b->path);
	/* the header, the algorithm and the prerequisites, before any pack byte */
	if ((rc = pw_bundle_missing_prereqs(b, repo, &missing, &nr, err)))
		return rc;
	if (nr) {
		rc = prereq_error(missing, nr, err);
		free(missing);
		return rc;
	}
	pack_dir = pw_path_join(pw_repo_objects_dir(repo), "pack");
	if (!pack_dir)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if ((rc = pw_fs_mkdir_p(pack_dir, err)) ||
	    (rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), b->h.algo, err)))
		goto out;
	memset(&args, 0, sizeof(args));
	args.opts.algo = b->h.algo;
	/* Git writes thin packs against the prerequisites (checked above) and
	 * completes them with index-pack --fix-thin: so do we */
	args.opts.fix_thin = b->h.nr_prereqs > 0;
	args.opts.read_object = ip_read;
	args.opts.has_object = ip_has;
	args.opts.odb_ctx = odb;
	args.opts.progress = ip_progress;
	args.opts.progress_ctx = &prog;
	prog.o = opts;
	args.idx_version = 2;
	b->consumed = 1;
	rc = pw_index_pack_stream(&args, b->fd, pack_dir, NULL, NULL, hex, &kept, err);
	if (opts && opts->progress && opts->report.progress && prog.last_phase)
		opts->report.progress(opts->report.data, NULL, 0, 0, 1);
	if (rc) {
		pw_error_wrap(err, "bundle '%s': index-pack failed", b->path);
		goto out;
	}
	res->got_pack = 1;
	res->nr_objects = (uint32_t)prog.total;
	snprintf(res->pack_path, sizeof(res->pack_path), "%s/pack-%s.pack", pack_dir, hex);
	snprintf(res->idx_path, sizeof(res->idx_path), "%s/pack-%s.idx", pack_dir, hex);
	pw_odb_free(odb);
	odb = NULL;
	/* a filtered bundle (@filter) is a promisor pack, incomplete on purpose:
	 * only its tips must be there */
	if (b->h.filter)
		rc = pw_fetch__mark_promisor(res, "", 0, err);
	if (!rc)
		rc = b->h.filter ? check_tips(b, repo, err) : check_connected(b, repo, err);
	if (rc) {
		pw_fetch_result_rollback(res);
		goto out;
	}
out:
	pw_odb_free(odb);
	free(pack_dir);
	return rc;
}

/* ---- as a remote (pw_session) ------------------------------------------- */

int pw_bundle_remote__probe(const char *url)
{
	uint8_t sig[SIG_LEN];
	struct stat st;
	int fd;
	ssize_t n;

	if (!url || stat(url, &st) || !S_ISREG(st.st_mode))
		return 0;
	fd = open(url, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, sig, sizeof(sig));
	close(fd);
	return n == (ssize_t)sizeof(sig) && pw_bundle_has_signature(sig, sizeof(sig));
}

int pw_bundle_remote__open(struct pw_session **out, const char *url,
                           const struct pw_client_opts *opts, struct pw_error *err)
{
	struct pw_session *s;
	const struct pw_bundle_header *h;
	size_t i;
	int rc;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (opts)
		s->opts = *opts;
	pw_adv_init(&s->adv);
	pw_v2_caps_init(&s->caps2);
	s->rd.fd = -1;
	if ((rc = pw_bundle_open(&s->bundle, url, err)))
		goto fail;
	h = pw_bundle_get_header(s->bundle);
	s->algo = h->algo;
	s->algo_advertised = h->algo_from_caps;
	s->adv.algo = h->algo;
	s->adv.algo_advertised = h->algo_from_caps;
	s->adv.state = PW_ADV_DONE;
	if (h->nr_refs && !(s->adv.refs = calloc(h->nr_refs, sizeof(*s->adv.refs)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	s->adv.alloc = h->nr_refs;
	for (i = 0; i < h->nr_refs; i++) {
		struct pw_remote_ref *r = &s->adv.refs[s->adv.nr];

		/* Git's bundle transport lists them last to first */
		const struct pw_bundle_ref *br = &h->refs[h->nr_refs - 1 - i];

		if (!(r->name = strdup(br->name))) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto fail;
		}
		r->oid = br->oid;
		s->adv.nr++;
	}
	s->adv.empty = !h->nr_refs;
	s->listed = 1;
	*out = s;
	return 0;
fail:
	pw_session_close(s, NULL);
	return rc;
}

int pw_bundle_remote__check_algo(struct pw_session *s, const struct pw_hash_algo *local,
                                 struct pw_error *err)
{
	return pw_bundle_check_algo(s->bundle, local, err);
}

int pw_bundle_remote__fetch(struct pw_session *s, struct pw_repo *repo,
                            const struct pw_fetch_request *req, struct pw_fetch_result *res,
                            struct pw_error *err)
{
	struct pw_bundle_read_opts ro;
	struct pw_odb *odb = NULL;
	size_t i;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = pw_bundle_check_algo(s->bundle, pw_repo_algo(repo), err)))
		return rc;
	if (!req->nr_wants)
		return 0;
	memset(&ro, 0, sizeof(ro));
	ro.progress = s->opts.progress;
	ro.report = s->opts.report;
	if ((rc = pw_bundle_unbundle(s->bundle, repo, &ro, res, err)))
		return rc;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err)))
		goto rollback;
	for (i = 0; i < req->nr_wants; i++)
		if (!pw_odb_exists(odb, &req->wants[i])) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(err, PW_EPROTO, "bundle '%s' does not hold %s it lists",
			                  pw_bundle_path(s->bundle),
			                  pw_oid_to_hex(&req->wants[i], hex));
			goto rollback;
		}
	pw_odb_free(odb);
	return 0;
rollback:
	pw_odb_free(odb);
	pw_fetch_result_rollback(res);
	return rc;
}

void pw_bundle_remote__free(struct pw_bundle *b)
{
	pw_bundle_free(b);
}
