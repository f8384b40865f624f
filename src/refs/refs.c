/* The files ref backend: loose refs under $GIT_DIR/refs, packed-refs, and
 * symrefs. packed-refs is cached per repo handle and re-read when its stat
 * data changes. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "refs/refs-priv.h"
#include "repo/repo-priv.h"
#include "util/fs.h"

#define PACKED_MAX (1u << 30)
#define LOOSE_MAX  4096

/* ---- names ------------------------------------------------------------ */

int pw_refname_is_valid(const char *name, unsigned flags)
{
	return pw_repo__refname_ok(name, !!(flags & PW_REFNAME_ALLOW_ONELEVEL));
}

int pw_refname_is_storable(const char *name)
{
	const char *p;

	if (!strncmp(name, "refs/", 5))
		return pw_refname_is_valid(name, 0);
	for (p = name; *p; p++)
		if (!((*p >= 'A' && *p <= 'Z') || *p == '_'))
			return 0;
	return p != name;
}

/* ---- packed-refs ------------------------------------------------------- */

static int cmp_packed(const void *a, const void *b)
{
	return strcmp(((const struct pw_packed_ref *)a)->name,
	              ((const struct pw_packed_ref *)b)->name);
}

void pw_packed__free(struct pw_packed *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nr; i++)
		free(p->v[i].name);
	free(p->v);
	free(p);
}

static void free_cache(void *cache)
{
	pw_packed__free(cache);
}

static char *git_path(struct pw_repo *repo, const char *name)
{
	return pw_path_join(pw_repo_git_dir(repo), name);
}

/* Parse packed-refs text. Lines with invalid names are dropped (as refused). */
int pw_packed__parse(struct pw_packed **out, const char *data, size_t len,
                     const struct pw_hash_algo *algo, const char *path, struct pw_error *err)
{
	struct pw_packed *p = calloc(1, sizeof(*p));
	size_t pos = 0, alloc = 0;
	int lineno = 0, last_valid = 0, prev_ref = 0, sorted = 1;

	*out = NULL;
	if (!p)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	while (pos < len) {
		const char *line = data + pos, *nl = memchr(line, '\n', len - pos);
		size_t ll = nl ? (size_t)(nl - line) : len - pos;

		pos += ll + (nl ? 1 : 0);
		lineno++;
		if (ll && line[ll - 1] == '\r')
			ll--;
		if (lineno == 1 && ll >= 17 && !memcmp(line, "# pack-refs with:", 17)) {
			char traits[256];
			size_t tl = ll - 17 < sizeof(traits) - 3 ? ll - 17 : sizeof(traits) - 3;

			traits[0] = ' ';
			memcpy(traits + 1, line + 17, tl);
			traits[tl + 1] = ' ';
			traits[tl + 2] = '\0';
			p->peeled = strstr(traits, " peeled ") != NULL;
			p->fully_peeled = strstr(traits, " fully-peeled ") != NULL;
			p->sorted = strstr(traits, " sorted ") != NULL;
			continue;
		}
		if (ll && line[0] == '^') {
			if (!prev_ref)
				goto bad;
			if (ll != algo->hexsz + 1)
				goto bad;
			if (last_valid) {
				if (pw_oid_from_hex(&p->v[p->nr - 1].peeled, line + 1, ll - 1,
				                    algo))
					goto bad;
				p->v[p->nr - 1].has_peeled = 1;
			}
			continue;
		}
		if (ll < algo->hexsz + 2 || line[algo->hexsz] != ' ')
			goto bad;
		{
			struct pw_oid oid;
			char *name;

			if (pw_oid_from_hex(&oid, line, algo->hexsz, algo))
				goto bad;
			prev_ref = 1;
			name = strndup(line + algo->hexsz + 1, ll - algo->hexsz - 1);
			if (!name) {
				pw_packed__free(p);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			if (strlen(name) != ll - algo->hexsz - 1 || !pw_refname_is_storable(name)) {
				free(name);
				last_valid = 0;
				continue;
			}
			if (p->nr == alloc) {
				size_t n = alloc ? alloc * 2 : 64;
				struct pw_packed_ref *v = realloc(p->v, n * sizeof(*v));

				if (!v) {
					free(name);
					pw_packed__free(p);
					return pw_error_set(err, PW_ENOMEM, "out of memory");
				}
				p->v = v;
				alloc = n;
			}
			memset(&p->v[p->nr], 0, sizeof(p->v[0]));
			p->v[p->nr].name = name;
			p->v[p->nr].oid = oid;
			if (p->nr && strcmp(p->v[p->nr - 1].name, name) >= 0)
				sorted = 0;
			p->nr++;
			last_valid = 1;
		}
	}
	if (!sorted)
		qsort(p->v, p->nr, sizeof(p->v[0]), cmp_packed);
	*out = p;
	return 0;
bad:
	pw_packed__free(p);
	return pw_error_set(err, PW_ECORRUPT, "unexpected line %d in %s", lineno, path);
}

/* The current packed-refs of repo (cached; never NULL on success). */
static int packed_get(struct pw_repo *repo, struct pw_packed **out)
{
	struct pw_repo_slot *slot = pw_repo__refs_slot(repo);
	struct pw_packed *cur = slot->data, *p;
	struct pw_buf b = PW_BUF_INIT;
	struct stat st;
	char *path = git_path(repo, "packed-refs");
	int rc, exists;

	if (!path)
		return pw_error_set(pw_repo_error(repo), PW_ENOMEM, "out of memory");
	exists = !stat(path, &st);
	if (cur && cur->exists == exists &&
	    (!exists ||
	     (cur->ino == st.st_ino && cur->size == st.st_size &&
	      cur->mtime_sec == st.st_mtim.tv_sec && cur->mtime_nsec == st.st_mtim.tv_nsec))) {
		free(path);
		*out = cur;
		return 0;
	}
	if (exists) {
		rc = pw_fs_read_file(path, &b, PACKED_MAX, pw_repo_error(repo));
		if (rc == PW_ENOTFOUND) {
			exists = 0;
			rc = 0;
		}
	} else {
		rc = 0;
	}
	if (!rc)
		rc = pw_packed__parse(&p, b.data, b.len, pw_repo_algo(repo), path,
		                      pw_repo_error(repo));
	pw_buf_free(&b);
	free(path);
	if (rc)
		return rc;
	p->exists = exists;
	if (exists) {
		p->ino = st.st_ino;
		p->size = st.st_size;
		p->mtime_sec = st.st_mtim.tv_sec;
		p->mtime_nsec = st.st_mtim.tv_nsec;
	}
	pw_packed__free(cur);
	slot->data = p;
	slot->free_fn = free_cache;
	*out = p;
	return 0;
}

static void packed_invalidate(struct pw_repo *repo)
{
	struct pw_repo_slot *slot = pw_repo__refs_slot(repo);

	pw_packed__free(slot->data);
	slot->data = NULL;
}

static struct pw_packed_ref *packed_find(struct pw_packed *p, const char *name)
{
	size_t lo = 0, hi = p->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->v[mid].name, name);

		if (!c)
			return &p->v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* ---- loose refs -------------------------------------------------------- */

/* Read a loose ref file: 0 (oid or symref set), PW_ENOTFOUND, PW_ECORRUPT. */
static int loose_read(struct pw_repo *repo, const char *name, struct pw_oid *oid, char **symref)
{
	char *path = git_path(repo, name);
	struct pw_buf b = PW_BUF_INIT;
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	struct stat st;
	int rc;

	*symref = NULL;
	if (!path)
		return pw_error_set(pw_repo_error(repo), PW_ENOMEM, "out of memory");
	if (stat(path, &st) || S_ISDIR(st.st_mode)) {
		free(path);
		return PW_ENOTFOUND;
	}
	rc = pw_fs_read_file(path, &b, LOOSE_MAX, pw_repo_error(repo));
	if (rc) {
		free(path);
		pw_buf_free(&b);
		return rc;
	}
	while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r' ||
	                 b.data[b.len - 1] == ' ' || b.data[b.len - 1] == '\t'))
		b.data[--b.len] = '\0';
	if (b.len > 4 && !memcmp(b.data, "ref:", 4)) {
		const char *t = b.data + 4;

		while (*t == ' ' || *t == '\t')
			t++;
		if (strlen(t) != b.len - (size_t)(t - b.data) || !pw_refname_is_storable(t)) {
			rc = pw_error_set(pw_repo_error(repo), PW_ECORRUPT,
			                  "ref %s: invalid symref target in %s", name, path);
		} else if (!(*symref = strdup(t))) {
			rc = pw_error_set(pw_repo_error(repo), PW_ENOMEM, "out of memory");
		} else {
			pw_oid_zero(oid, algo);
		}
	} else if (b.len < algo->hexsz || pw_oid_from_hex(oid, b.data, algo->hexsz, algo) ||
	           (b.len > algo->hexsz && b.data[algo->hexsz] != ' ' &&
	            b.data[algo->hexsz] != '\t')) {
		rc = pw_error_set(pw_repo_error(repo), PW_ECORRUPT,
		                  "ref %s: not a valid %s object id in %s", name, algo->name, path);
	}
	free(path);
	pw_buf_free(&b);
	return rc;
}

int pw_refs_read(struct pw_repo *repo, const char *name, struct pw_oid *oid, char **symref)
{
	struct pw_packed *p;
	struct pw_packed_ref *r;
	int rc;

	*symref = NULL;
	pw_oid_zero(oid, pw_repo_algo(repo));
	if (!pw_refname_is_storable(name))
		return pw_error_set(pw_repo_error(repo), PW_EINVAL, "invalid ref name '%s'", name);
	rc = loose_read(repo, name, oid, symref);
	if (rc != PW_ENOTFOUND)
		return rc;
	if ((rc = packed_get(repo, &p)))
		return rc;
	if ((r = packed_find(p, name))) {
		*oid = r->oid;
		return 0;
	}
	return pw_error_set(pw_repo_error(repo), PW_ENOTFOUND, "ref '%s' not found", name);
}

int pw_refs_resolve(struct pw_repo *repo, const char *name, struct pw_oid *oid, char **final_name)
{
	char *cur = strdup(name), *target = NULL;
	int depth, rc = 0;

	if (final_name)
		*final_name = NULL;
	if (!cur)
		return pw_error_set(pw_repo_error(repo), PW_ENOMEM, "out of memory");
	for (depth = 0;; depth++) {
		rc = pw_refs_read(repo, cur, oid, &target);
		if (rc || !target)
			break;
		if (depth >= PW_REFS_MAX_DEPTH) {
			free(target);
			rc = pw_error_set(pw_repo_error(repo), PW_ECORRUPT,
			                  "ref '%s': symbolic refs nested too deeply", name);
			break;
		}
		free(cur);
		cur = target;
		target = NULL;
	}
	if (final_name && (!rc || rc == PW_ENOTFOUND))
		*final_name = cur;
	else
		free(cur);
	return rc;
}

/* ---- enumeration ------------------------------------------------------- */

struct namelist {
	char **v;
	size_t nr, alloc;
};

static int names_add(struct namelist *l, const char *name, size_t len)
{
	if (l->nr == l->alloc) {
		size_t n = l->alloc ? l->alloc * 2 : 64;
		char **v = realloc(l->v, n * sizeof(*v));

		if (!v)
			return PW_ENOMEM;
		l->v = v;
		l->alloc = n;
	}
	if (!(l->v[l->nr] = strndup(name, len)))
		return PW_ENOMEM;
	l->nr++;
	return 0;
}

static void names_free(struct namelist *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->v[i]);
	free(l->v);
}

/* Recursively collect loose ref names below refs/ (path buffer reused). */
static int walk_loose(struct pw_buf *path, size_t root_len, struct namelist *out, int depth)
{
	DIR *d;
	struct dirent *de;
	size_t base = path->len;
	int rc = 0;

	if (depth > 64)
		return 0;
	if (!(d = opendir(path->data)))
		return 0;
	while ((de = readdir(d))) {
		struct stat st;
		const char *n = de->d_name;
		size_t nl = strlen(n);

		if (n[0] == '.')
			continue;
		if (nl >= 5 && !strcmp(n + nl - 5, ".lock"))
			continue;
		pw_buf_setlen(path, base);
		if ((rc = pw_buf_addch(path, '/')) || (rc = pw_buf_add(path, n, nl)))
			break;
		if (stat(path->data, &st))
			continue;
		if (S_ISDIR(st.st_mode)) {
			if ((rc = walk_loose(path, root_len, out, depth + 1)))
				break;
		} else if (S_ISREG(st.st_mode)) {
			const char *name = path->data + root_len;

			if (pw_refname_is_valid(name, 0) &&
			    (rc = names_add(out, name, path->len - root_len)))
				break;
		}
	}
	closedir(d);
	pw_buf_setlen(path, base);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted loose ref names under refs/. */
static int loose_names(struct pw_repo *repo, struct namelist *out)
{
	struct pw_buf path = PW_BUF_INIT;
	const char *gd = pw_repo_git_dir(repo);
	int rc;

	if ((rc = pw_buf_adds(&path, gd)) ||
	    (rc = pw_buf_adds(&path, gd[strlen(gd) - 1] == '/' ? "refs" : "/refs")))
		goto out;
	rc = walk_loose(&path, path.len - 4, out, 0);
	if (!rc && out->nr > 1)
		qsort(out->v, out->nr, sizeof(out->v[0]), cmp_str);
out:
	pw_buf_free(&path);
	return rc ? pw_error_set(pw_repo_error(repo), rc, "out of memory listing refs") : 0;
}

int pw_refs__all_names(struct pw_repo *repo, char ***names, size_t *nr)
{
	struct namelist loose = {0}, all = {0};
	struct pw_packed *p;
	size_t i = 0, j = 0;
	int rc;

	*names = NULL;
	*nr = 0;
	if ((rc = loose_names(repo, &loose)))
		return rc;
	if ((rc = packed_get(repo, &p))) {
		names_free(&loose);
		return rc;
	}
	while (!rc && (i < loose.nr || j < p->nr)) {
		int c = i >= loose.nr ? 1 : j >= p->nr ? -1 : strcmp(loose.v[i], p->v[j].name);

		if (c <= 0) {
			rc = names_add(&all, loose.v[i], strlen(loose.v[i]));
			i++;
			if (!c)
				j++;
		} else {
			rc = names_add(&all, p->v[j].name, strlen(p->v[j].name));
			j++;
		}
	}
	names_free(&loose);
	if (rc) {
		names_free(&all);
		return pw_error_set(pw_repo_error(repo), PW_ENOMEM, "out of memory");
	}
	*names = all.v;
	*nr = all.nr;
	return 0;
}

void pw_refs__free_names(char **names, size_t nr)
{
	struct namelist l = {names, nr, nr};

	names_free(&l);
}

/* Fill ref for one name; 1 = skip (broken), 0 = ok, < 0 error. */
static int describe(struct pw_repo *repo, const char *name, unsigned flags, struct pw_ref *ref,
                    char **target_out)
{
	struct pw_packed *p;
	struct pw_packed_ref *pr;
	char *target = NULL;
	int rc;

	memset(ref, 0, sizeof(*ref));
	ref->name = name;
	rc = loose_read(repo, name, &ref->oid, &target);
	if (rc == PW_ENOTFOUND) {
		if ((rc = packed_get(repo, &p)))
			return rc;
		if (!(pr = packed_find(p, name)))
			return 1;
		ref->oid = pr->oid;
		ref->peeled = pr->peeled;
		ref->has_peeled = pr->has_peeled;
		ref->peel_known = pr->has_peeled || p->fully_peeled ||
		                  (p->peeled && !strncmp(name, "refs/tags/", 10));
		return 0;
	}
	if (rc == PW_ENOMEM)
		return rc;
	if (rc)
		return 1; /* unreadable loose ref: skipped, as Git ignores broken refs */
	if (target) {
		*target_out = target;
		ref->symref_target = target;
		rc = pw_refs_resolve(repo, target, &ref->oid, NULL);
		if (rc == PW_ENOMEM)
			return rc;
		if (rc) {
			pw_oid_zero(&ref->oid, pw_repo_algo(repo));
			return (flags & PW_REFS_INCLUDE_BROKEN) ? 0 : 1;
		}
	}
	return 0;
}

int pw_refs_foreach(struct pw_repo *repo, const char *prefix, unsigned flags,
                    int (*fn)(const struct pw_ref *ref, void *data), void *data)
{
	char **names;
	size_t nr, i, plen;
	int rc;
	struct pw_ref ref;

	if (!prefix)
		prefix = "refs/";
	plen = strlen(prefix);
	if (flags & PW_REFS_INCLUDE_HEAD) {
		char *target = NULL;

		rc = describe(repo, "HEAD", flags, &ref, &target);
		if (rc == 1)
			rc = 0;
		else if (!rc)
			rc = fn(&ref, data);
		free(target);
		if (rc)
			return rc;
	}
	if ((rc = pw_refs__all_names(repo, &names, &nr)))
		return rc;
	for (i = 0; i < nr; i++) {
		char *target = NULL;

		if (strncmp(names[i], prefix, plen))
			continue;
		rc = describe(repo, names[i], flags, &ref, &target);
		if (rc == 1) {
			rc = 0;
			free(target);
			continue;
		}
		if (!rc)
			rc = fn(&ref, data);
		free(target);
		if (rc)
			break;
	}
	pw_refs__free_names(names, nr);
	return rc;
}

int pw_refs_create_symref(struct pw_repo *repo, const char *name, const char *target)
{
	struct pw_lock lk;
	struct pw_buf b = PW_BUF_INIT;
	char *path;
	int rc;

	if (!pw_refname_is_storable(name))
		return pw_error_set(pw_repo_error(repo), PW_EINVAL, "invalid ref name '%s'", name);
	if (!pw_refname_is_storable(target))
		return pw_error_set(pw_repo_error(repo), PW_EINVAL,
		                    "refusing to point %s outside refs/: '%s'", name, target);
	if (!(path = git_path(repo, name)) || pw_buf_addf(&b, "ref: %s\n", target)) {
		free(path);
		pw_buf_free(&b);
		return pw_error_set(pw_repo_error(repo), PW_ENOMEM, "out of memory");
	}
	{
		char *slash = strrchr(path, '/');

		*slash = '\0';
		rc = pw_fs_mkdir_p(path, pw_repo_error(repo));
		*slash = '/';
	}
	if (!rc && !(rc = pw_lock_acquire(&lk, path, pw_repo_error(repo)))) {
		if ((rc = pw_lock_write(&lk, b.data, b.len, pw_repo_error(repo))))
			pw_lock_rollback(&lk);
		else
			rc = pw_lock_commit(&lk, pw_repo_error(repo));
	}
	if (rc)
		pw_error_wrap(pw_repo_error(repo), "cannot write symref %s", name);
	free(path);
	pw_buf_free(&b);
	return rc;
}

/* ---- for tx.c ---------------------------------------------------------- */

int pw_refs__packed(struct pw_repo *repo, struct pw_packed **out)
{
	return packed_get(repo, out);
}

void pw_refs__packed_invalidate(struct pw_repo *repo)
{
	packed_invalidate(repo);
}

struct pw_packed_ref *pw_refs__packed_find(struct pw_packed *p, const char *name)
{
	return packed_find(p, name);
}

int pw_refs__loose_read(struct pw_repo *repo, const char *name, struct pw_oid *oid, char **symref)
{
	return loose_read(repo, name, oid, symref);
}
