/* The cluster state file: see state.h. */
#include "cluster/state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "packwire/fs.h"
#include "packwire/refs.h"
#include "util/fs.h"

#define MAGIC "packwire-cluster-state 1 "

void pw_cstate_free(struct pw_cstate *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		free(s->refs[i].name);
	free(s->refs);
	memset(s, 0, sizeof(*s));
}

static int cmp_ref(const void *a, const void *b)
{
	return strcmp(((const struct pw_cstate_ref *)a)->name,
	              ((const struct pw_cstate_ref *)b)->name);
}

/* "<algo> <revision>\n" after the magic; *used gets the bytes read. */
static int parse_header(const char *p, size_t len, const struct pw_hash_algo *algo, int64_t *rev,
                        size_t *used, struct pw_error *err)
{
	const char *nl = memchr(p, '\n', len < PW_CSTATE_LINE_MAX ? len : PW_CSTATE_LINE_MAX);
	const char *sp;
	const struct pw_hash_algo *a;
	int64_t v = 0;
	const char *d;

	if (!nl)
		return pw_error_set(err, PW_EINVAL, "cluster state: unterminated header");
	sp = memchr(p, ' ', (size_t)(nl - p));
	if (!sp || !(a = pw_hash_by_name(p, (size_t)(sp - p))))
		return pw_error_set(err, PW_EINVAL,
		                    "cluster state: no known algorithm in the header");
	if (a != algo)
		return pw_error_set(err, PW_EMISMATCH, "cluster state: of %s, not %s", a->name,
		                    algo->name);
	if (sp + 1 == nl || nl - sp - 1 > 18)
		return pw_error_set(err, PW_EINVAL, "cluster state: bad revision");
	for (d = sp + 1; d < nl; d++) {
		if (*d < '0' || *d > '9')
			return pw_error_set(err, PW_EINVAL, "cluster state: bad revision");
		v = v * 10 + (*d - '0');
	}
	*rev = v;
	*used = (size_t)(nl - p) + 1;
	return 0;
}

/* One "<hex> <refname>\n" line of at most PW_CSTATE_LINE_MAX bytes. */
static int parse_line(const char *p, size_t len, const struct pw_hash_algo *algo,
                      struct pw_cstate_ref *out, size_t *used, struct pw_error *err)
{
	const char *nl = memchr(p, '\n', len < PW_CSTATE_LINE_MAX ? len : PW_CSTATE_LINE_MAX);
	size_t nlen;

	if (!nl)
		return pw_error_set(err, PW_EINVAL,
		                    "cluster state: a ref line is unterminated or "
		                    "too long");
	if ((size_t)(nl - p) < algo->hexsz + 2 || p[algo->hexsz] != ' ' ||
	    pw_oid_from_hex(&out->oid, p, algo->hexsz, algo))
		return pw_error_set(err, PW_EINVAL, "cluster state: a ref line without a %s id",
		                    algo->name);
	nlen = (size_t)(nl - p) - algo->hexsz - 1;
	if (!(out->name = malloc(nlen + 1)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memcpy(out->name, p + algo->hexsz + 1, nlen);
	out->name[nlen] = '\0';
	if (strlen(out->name) != nlen || strncmp(out->name, "refs/", 5) ||
	    !pw_refname_is_valid(out->name, 0) || pw_oid_is_zero(&out->oid)) {
		free(out->name);
		out->name = NULL;
		return pw_error_set(err, PW_EINVAL, "cluster state: a bad ref line");
	}
	*used = (size_t)(nl - p) + 1;
	return 0;
}

int pw_cstate_parse(const char *text, size_t len, const struct pw_hash_algo *algo,
                    struct pw_cstate *out, struct pw_error *err)
{
	size_t off, used = 0, cap = 0, i, ml = strlen(MAGIC);
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > PW_CSTATE_MAX)
		return pw_error_set(err, PW_ETOOBIG, "cluster state: larger than %u bytes",
		                    PW_CSTATE_MAX);
	if (len < ml || memcmp(text, MAGIC, ml))
		return pw_error_set(err, PW_EINVAL, "cluster state: not a packwire cluster state");
	if ((rc = parse_header(text + ml, len - ml, algo, &out->revision, &used, err)))
		return rc;
	for (off = ml + used; off < len; off += used) {
		if (out->nr == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct pw_cstate_ref *n = realloc(out->refs, nc * sizeof(*n));

			if (!n) {
				pw_cstate_free(out);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			out->refs = n;
			cap = nc;
		}
		if ((rc = parse_line(text + off, len - off, algo, &out->refs[out->nr], &used,
		                     err))) {
			pw_cstate_free(out);
			return rc;
		}
		out->nr++;
	}
	if (out->nr)
		qsort(out->refs, out->nr, sizeof(*out->refs), cmp_ref);
	for (i = 1; i < out->nr; i++)
		if (!strcmp(out->refs[i - 1].name, out->refs[i].name)) {
			pw_cstate_free(out);
			return pw_error_set(err, PW_EINVAL, "cluster state: a ref twice");
		}
	return 0;
}

int pw_cstate_format(const struct pw_cstate *s, const struct pw_hash_algo *algo, struct pw_buf *out)
{
	size_t i;
	int rc = pw_buf_addf(out, MAGIC "%s %lld\n", algo->name, (long long)s->revision);

	for (i = 0; i < s->nr && !rc; i++) {
		char hex[PW_MAX_HEXSZ + 1];

		rc = pw_buf_addf(out, "%s %s\n", pw_oid_to_hex(&s->refs[i].oid, hex),
		                 s->refs[i].name);
	}
	return rc;
}

int pw_cstate_load(const char *git_dir, const struct pw_hash_algo *algo, struct pw_cstate *out,
                   struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	char *path = pw_path_join(git_dir, PW_CSTATE_FILE);
	int rc;

	memset(out, 0, sizeof(*out));
	if (!path)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	rc = pw_fs_read_file(path, &b, PW_CSTATE_MAX, err);
	if (!rc)
		rc = pw_cstate_parse(b.data, b.len, algo, out, err);
	if (rc && rc != PW_ENOTFOUND)
		pw_error_wrap(err, "%s", path);
	pw_buf_free(&b);
	free(path);
	return rc;
}

/* s with the changes of set merged in (s keeps its order; new names are
 * added and s re-sorted). */
static int merge(struct pw_cstate *s, const struct pw_cstate_set *set, size_t n)
{
	size_t i, k;
	struct pw_cstate_ref *grown;

	if (!(grown = realloc(s->refs, (s->nr + n + 1) * sizeof(*grown))))
		return PW_ENOMEM;
	s->refs = grown;
	for (i = 0; i < n; i++) {
		int gone = !set[i].oid || pw_oid_is_zero(set[i].oid);

		for (k = 0; k < s->nr && strcmp(s->refs[k].name, set[i].name); k++)
			;
		if (k < s->nr && gone) {
			free(s->refs[k].name);
			s->refs[k] = s->refs[--s->nr];
		} else if (k < s->nr) {
			s->refs[k].oid = *set[i].oid;
		} else if (!gone) {
			if (!(s->refs[s->nr].name = strdup(set[i].name)))
				return PW_ENOMEM;
			s->refs[s->nr++].oid = *set[i].oid;
		}
	}
	if (s->nr)
		qsort(s->refs, s->nr, sizeof(*s->refs), cmp_ref);
	return 0;
}

/* tmp + rename, under the caller's flock. No fsync: the refs it guards
 * are written without one too (Git's lock files); it covers a process that
 * dies, not a machine that loses power, and an fsync on each push cost
 * 30-60 ms of its median (bench/cluster-push). */
static int write_file(const char *path, const struct pw_buf *b, struct pw_error *err)
{
	size_t pl = strlen(path);
	char *tmp = malloc(pl + 5);
	int fd, rc = 0;

	if (!tmp)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memcpy(tmp, path, pl);
	memcpy(tmp + pl, ".tmp", 5);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0 || pw_fs_write_all(fd, b->data, b->len))
		rc = pw_error_set(err, PW_EIO, "writing %s: %s", tmp, strerror(errno));
	if (fd >= 0 && close(fd) && !rc)
		rc = pw_error_set(err, PW_EIO, "writing %s: %s", tmp, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = pw_error_set(err, PW_EIO, "renaming %s: %s", tmp, strerror(errno));
	if (rc)
		unlink(tmp);
	free(tmp);
	return rc;
}

/* The record with the change applied, into *next. */
static int change(struct pw_cstate *cur, const struct pw_hash_algo *algo, int replace,
                  int64_t revision, const struct pw_cstate_set *set, size_t n, int *skipped,
                  struct pw_error *err)
{
	size_t i;

	if (replace) {
		if (replace == 1 && cur->revision > revision) {
			*skipped = 1;
			return 0;
		}
		pw_cstate_free(cur);
		cur->revision = revision;
	} else if (revision > cur->revision) {
		cur->revision = revision;
	}
	for (i = 0; i < n; i++)
		if (strncmp(set[i].name, "refs/", 5) || !pw_refname_is_valid(set[i].name, 0) ||
		    strlen(set[i].name) + algo->hexsz + 2 > PW_CSTATE_LINE_MAX)
			return pw_error_set(err, PW_EINVAL, "cluster state: cannot record '%.200s'",
			                    set[i].name);
	if (merge(cur, set, n))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

/* The new bytes need no write: the same, or (refs_only: a sync whose refs
 * did not change) the same after the header: a sync does not rewrite (and
 * rename) the record of every repository each time etcd's revision moves;
 * the revision kept is older, which only lets more snapshots through. */
static int same_refs(const struct pw_buf *old, const struct pw_buf *next, int refs_only)
{
	const char *a, *b;

	if (next->len == old->len && !memcmp(next->data, old->data, old->len))
		return 1;
	if (!refs_only || !(a = memchr(old->data, '\n', old->len)) ||
	    !(b = memchr(next->data, '\n', next->len)))
		return 0;
	return old->len - (size_t)(a - old->data) == next->len - (size_t)(b - next->data) &&
	       !memcmp(a, b, old->len - (size_t)(a - old->data));
}

int pw_cstate_store(const char *git_dir, const struct pw_hash_algo *algo, int replace,
                    int64_t revision, const struct pw_cstate_set *set, size_t n, int *skipped,
                    struct pw_error *err)
{
	struct pw_cstate cur;
	struct pw_buf old = PW_BUF_INIT, next = PW_BUF_INIT;
	char *path = pw_path_join(git_dir, PW_CSTATE_FILE);
	char *lpath = pw_path_join(git_dir, PW_CSTATE_FILE ".flock");
	int fd = -1, rc, skip = 0, parsed;

	memset(&cur, 0, sizeof(cur));
	if (!path || !lpath) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0 || flock(fd, LOCK_EX)) {
		rc = pw_error_set(err, PW_EIO, "locking %s: %s", lpath, strerror(errno));
		goto out;
	}
	rc = pw_fs_read_file(path, &old, PW_CSTATE_MAX, err);
	if (!rc)
		rc = pw_cstate_parse(old.data, old.len, algo, &cur, err);
	/* a missing or unreadable record is replaced */
	parsed = !rc;
	if (rc)
		memset(&cur, 0, sizeof(cur));
	rc = change(&cur, algo, replace, revision, set, n, &skip, err);
	if (!rc && !skip) {
		pw_buf_init(&next, PW_CSTATE_MAX);
		if (pw_cstate_format(&cur, algo, &next))
			rc = pw_error_set(err, PW_ETOOBIG, "cluster state: larger than %u bytes",
			                  PW_CSTATE_MAX);
		else if (!same_refs(&old, &next, replace == 1 && parsed))
			rc = write_file(path, &next, err);
	}
out:
	if (skipped)
		*skipped = skip;
	if (fd >= 0)
		close(fd); /* releases the flock */
	pw_cstate_free(&cur);
	pw_buf_free(&old);
	pw_buf_free(&next);
	free(path);
	free(lpath);
	return rc;
}
