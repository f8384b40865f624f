/* Submodules across algorithms: a gitlink holds the id of a commit of
 * another repository, so its translation is in that repository's map
 * (technical/hash-function-transition: "the translation table of the
 * submodule can be used to look up the new hash"). This file finds the
 * submodule's repository (named by the caller, in the superproject's
 * config, or, for a server, through the .gitmodules URLs that resolve
 * under its base path) and asks its map. */
#include <stdlib.h>
#include <string.h>

#include "compat/map-priv.h"
#include "compat/submodule.h"
#include "packwire/config.h"
#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/repo.h"
#include "util/fs.h"

/* ---- .gitmodules ------------------------------------------------------ */

void pw_compat__gitmodules_free(struct pw_gitmodules *g)
{
	for (size_t i = 0; g && i < g->nr; i++) {
		free(g->v[i].name);
		free(g->v[i].path);
		free(g->v[i].url);
	}
	if (g) {
		free(g->v);
		g->v = NULL;
		g->nr = 0;
	}
}

/* The submodule named name (len bytes), added when absent and room is left. */
static struct pw_gitmodule *gm_get(struct pw_gitmodules *g, const char *name, size_t len,
                                   size_t *alloc)
{
	struct pw_gitmodule *m;

	for (size_t i = 0; i < g->nr; i++)
		if (strlen(g->v[i].name) == len && !memcmp(g->v[i].name, name, len))
			return &g->v[i];
	if (g->nr == PW_GITMODULES_ENTRIES)
		return NULL;
	if (g->nr == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 8;
		struct pw_gitmodule *nv = realloc(g->v, n * sizeof(*nv));

		if (!nv)
			return NULL;
		g->v = nv;
		*alloc = n;
	}
	m = &g->v[g->nr];
	memset(m, 0, sizeof(*m));
	if (!(m->name = malloc(len + 1)))
		return NULL;
	memcpy(m->name, name, len);
	m->name[len] = '\0';
	g->nr++;
	return m;
}

static int gm_set(char **slot, const char *v)
{
	char *d = strdup(v ? v : "");

	if (!d)
		return PW_ENOMEM;
	free(*slot);
	*slot = d;
	return 0;
}

int pw_compat__gitmodules_parse(struct pw_gitmodules *out, const char *data, size_t len,
                                struct pw_error *err)
{
	struct pw_config *cfg = NULL;
	size_t alloc = 0, keep = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > PW_GITMODULES_MAX)
		return pw_error_set(err, PW_ECORRUPT, ".gitmodules: larger than %zu bytes",
		                    PW_GITMODULES_MAX);
	if ((rc = pw_config_parse(&cfg, data, len, ".gitmodules", err)))
		return rc == PW_ENOMEM ? rc : (err->code = PW_ECORRUPT);
	for (size_t i = 0; i < pw_config_count(cfg) && !rc; i++) {
		const struct pw_config_entry *e = pw_config_at(cfg, i);
		const char *k = e->key, *dot;
		struct pw_gitmodule *m;

		/* submodule.<name>.path / .url (the name may hold dots) */
		if (strncmp(k, "submodule.", 10) || !(dot = strrchr(k + 10, '.')) || dot == k + 10)
			continue;
		if (strcmp(dot, ".path") && strcmp(dot, ".url"))
			continue;
		if (!(m = gm_get(out, k + 10, (size_t)(dot - k - 10), &alloc))) {
			if (out->nr == PW_GITMODULES_ENTRIES)
				continue;
			rc = PW_ENOMEM;
			break;
		}
		rc = gm_set(!strcmp(dot, ".path") ? &m->path : &m->url, e->value);
	}
	pw_config_free(cfg);
	if (rc) {
		pw_compat__gitmodules_free(out);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	/* only the submodules with a path are of use */
	for (size_t i = 0; i < out->nr; i++) {
		if (out->v[i].path && *out->v[i].path) {
			out->v[keep++] = out->v[i];
			continue;
		}
		free(out->v[i].name);
		free(out->v[i].path);
		free(out->v[i].url);
	}
	out->nr = keep;
	return 0;
}

/* ---- URLs --------------------------------------------------------------- */

/* Append the components of p (n bytes) to out ("a/b"), resolving "." and
 * "..": -1 when ".." climbs above what out holds. */
static int add_components(struct pw_buf *out, const char *p, size_t n)
{
	size_t at = 0;

	while (at < n) {
		const char *c = p + at, *sl = memchr(c, '/', n - at);
		size_t cl = sl ? (size_t)(sl - c) : n - at;

		at += cl + (sl ? 1 : 0);
		if (!cl || (cl == 1 && c[0] == '.'))
			continue;
		if (cl == 2 && c[0] == '.' && c[1] == '.') {
			char *last;

			if (!out->len)
				return -1;
			last = memrchr(out->data, '/', out->len);
			pw_buf_setlen(out, last ? (size_t)(last - out->data) : 0);
			continue;
		}
		if ((out->len && pw_buf_addch(out, '/')) || pw_buf_add(out, c, cl))
			return PW_ENOMEM;
	}
	return 0;
}

/* The view's suffix of the last component is not part of a directory:
 * p's length without it. Dropped before the components are resolved, so
 * that "x/..@sha1" is "x/.." (resolved), not a component ".." left after. */
static size_t without_view_suffix(const char *p, size_t n)
{
	static const char *const sfx[] = {"@sha1", "@sha256"};
	size_t end = n, start;

	while (end && p[end - 1] == '/')
		end--;
	for (start = end; start && p[start - 1] != '/'; start--)
		;
	for (size_t i = 0; i < 2; i++) {
		size_t k = strlen(sfx[i]);

		if (end - start > k && !memcmp(p + end - k, sfx[i], k))
			return end - k;
	}
	return n;
}

static int url_path(struct pw_buf *out, const char *p, size_t n, int kind)
{
	int rc;

	if (n && p[0] == '~')
		return PW_SUBURL_NONE; /* a user's home: not under the base */
	rc = add_components(out, p, without_view_suffix(p, n));
	if (rc == PW_ENOMEM)
		return rc;
	/* ".." above the top, or nothing left */
	if (rc || !out->len)
		return PW_SUBURL_NONE;
	if (kind == PW_SUBURL_ABS) {
		if (pw_buf_grow(out, 1))
			return PW_ENOMEM;
		memmove(out->data + 1, out->data, out->len);
		out->data[0] = '/';
		if (pw_buf_setlen(out, out->len + 1))
			return PW_ENOMEM;
	}
	return kind;
}

int pw_compat__submodule_url(struct pw_buf *out, const char *super_rel, const char *url, size_t len)
{
	const char *sep;

	pw_buf_reset(out);
	if (!len || len > PW_SUBMODULE_URL_MAX || memchr(url, '\0', len))
		return PW_SUBURL_NONE;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)url[i] < 0x20 || url[i] == 0x7f)
			return PW_SUBURL_NONE;
	if ((len >= 2 && !memcmp(url, "./", 2)) || (len >= 3 && !memcmp(url, "../", 3)) ||
	    (len == 1 && url[0] == '.') || (len == 2 && !memcmp(url, "..", 2))) {
		int rc;

		if (!super_rel || !*super_rel)
			return PW_SUBURL_NONE;
		if ((rc = add_components(out, super_rel, strlen(super_rel))) == PW_ENOMEM)
			return rc;
		if (rc)
			return PW_SUBURL_NONE;
		return url_path(out, url, len, PW_SUBURL_REL);
	}
	if (len > 7 && !memcmp(url, "file://", 7)) {
		const char *p = memchr(url + 7, '/', len - 7);

		return p ? url_path(out, p, len - (size_t)(p - url), PW_SUBURL_ABS)
		         : PW_SUBURL_NONE;
	}
	if (url[0] == '/')
		return url_path(out, url, len, PW_SUBURL_ABS);
	if ((sep = memmem(url, len, "://", 3))) {
		const char *host = sep + 3, *p = memchr(host, '/', len - (size_t)(host - url));

		if (!p)
			return PW_SUBURL_NONE;
		p++;
		return url_path(out, p, len - (size_t)(p - url), PW_SUBURL_NET);
	}
	/* scp-like host:path (a colon before any slash) */
	sep = memchr(url, ':', len);
	if (sep && sep > url && !memchr(url, '/', (size_t)(sep - url))) {
		const char *p = sep + 1;

		return url_path(out, p, len - (size_t)(p - url), PW_SUBURL_NET);
	}
	return PW_SUBURL_NONE; /* a path relative to the client's directory */
}

/* ---- the resolver --------------------------------------------------------- */

struct named {
	char *path, *repo;
};

/* A repository looked at: usable when map is set. */
struct opened {
	char *arg;  /* as named */
	char *real; /* its git directory, every symlink resolved (NULL: not opened) */
	struct pw_repo *repo;
	struct pw_compat_map *map;
	struct pw_error why; /* when not usable */
	long alias;          /* 1 + the index of the same repository opened before */
};

struct pw_compat_submodules {
	struct named *named;
	size_t nr_named, alloc_named;
	struct opened *open;
	size_t nr_open, alloc_open;
	/* discovery (servers) */
	char *base, *super_rel;
	int (*inside)(const char *base, const char *dir);
	/* the superproject's modules/ (where git submodule keeps the clones
	 * of a work tree's submodules), NULL when not known */
	char *modules;
	/* the superproject, for a .gitmodules the translation cannot read
	 * (opened on first use) */
	char *super_dir;
	int super_tried;
	struct pw_odb *super_odb;
	struct pw_compat_map *super_map;
	const struct pw_hash_algo *super_storage, *super_compat;
	/* the .gitmodules parsed last */
	struct pw_oid gm_oid;
	int gm_valid;
	struct pw_gitmodules gm;
};

int pw_compat_submodules_new(struct pw_compat_submodules **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : PW_ENOMEM;
}

void pw_compat_submodules_free(struct pw_compat_submodules *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_named; i++) {
		free(s->named[i].path);
		free(s->named[i].repo);
	}
	free(s->named);
	for (size_t i = 0; i < s->nr_open; i++) {
		free(s->open[i].arg);
		free(s->open[i].real);
		pw_compat_map_free(s->open[i].map);
		pw_repo_free(s->open[i].repo);
	}
	free(s->open);
	free(s->base);
	free(s->super_rel);
	free(s->modules);
	free(s->super_dir);
	pw_odb_free(s->super_odb);
	pw_compat_map_free(s->super_map);
	pw_compat__gitmodules_free(&s->gm);
	free(s);
}

int pw_compat_submodules_add(struct pw_compat_submodules *s, const char *path, const char *repo,
                             struct pw_error *err)
{
	struct named *n;
	size_t pl;

	if (!path || !repo || !*repo)
		return pw_error_set(err, PW_EINVAL,
		                    "submodule: a path and a repository are needed");
	/* "dir/sub/" names "dir/sub", as a tree path */
	pl = strlen(path);
	while (pl && path[pl - 1] == '/')
		pl--;
	if (!pl)
		return pw_error_set(err, PW_EINVAL, "submodule: empty path for repository '%s'",
		                    repo);
	if (s->nr_named == s->alloc_named) {
		size_t a = s->alloc_named ? 2 * s->alloc_named : 4;
		struct named *nn = realloc(s->named, a * sizeof(*nn));

		if (!nn)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		s->named = nn;
		s->alloc_named = a;
	}
	n = &s->named[s->nr_named];
	n->path = strndup(path, pl);
	n->repo = strdup(repo);
	if (!n->path || !n->repo) {
		free(n->path);
		free(n->repo);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	s->nr_named++;
	return 0;
}

struct config_ctx {
	struct pw_compat_submodules *s;
	const char *dir;
	struct pw_error *err;
};

static int config_cb(const struct pw_config_entry *e, void *data)
{
	static const char pre[] = "compat.submodule.", suf[] = ".repository";
	struct config_ctx *c = data;
	size_t n = strlen(e->key), pl = sizeof(pre) - 1, sl = sizeof(suf) - 1;
	char *path, *repo;
	int rc;

	if (n <= pl + sl || strncmp(e->key, pre, pl) || strcmp(e->key + n - sl, suf))
		return 0;
	if (!e->value || !*e->value)
		return pw_error_set(c->err, PW_EINVAL, "%s: empty repository (%s line %d)", e->key,
		                    e->origin ? e->origin : "config", e->line);
	path = strndup(e->key + pl, n - pl - sl);
	repo = e->value[0] == '/' || !c->dir ? strdup(e->value) : pw_path_join(c->dir, e->value);
	rc = path && repo ? pw_compat_submodules_add(c->s, path, repo, c->err)
	                  : pw_error_set(c->err, PW_ENOMEM, "out of memory");
	free(path);
	free(repo);
	return rc;
}

int pw_compat_submodules_add_config(struct pw_compat_submodules *s, const struct pw_config *cfg,
                                    const char *dir, struct pw_error *err)
{
	struct config_ctx c = {s, dir, err};

	return cfg ? pw_config_foreach(cfg, config_cb, &c) : 0;
}

int pw_compat_submodules_discover(struct pw_compat_submodules *s, const char *base,
                                  const char *super_dir,
                                  int (*inside)(const char *base, const char *dir),
                                  struct pw_error *err)
{
	char *rb = realpath(base, NULL), *rs = super_dir ? realpath(super_dir, NULL) : NULL;
	size_t n;

	if (!rb) {
		free(rs);
		return pw_error_set(err, PW_ENOTFOUND, "submodules: base path '%s' not found",
		                    base);
	}
	free(s->base);
	free(s->super_rel);
	s->base = rb;
	s->super_rel = NULL;
	s->inside = inside;
	n = strlen(rb);
	while (n > 1 && rb[n - 1] == '/')
		n--;
	/* the superproject's place under the base: what relative URLs follow */
	if (rs && !strncmp(rs, rb, n) && rs[n] == '/')
		s->super_rel = strdup(rs + n + 1);
	else if (rs && n == 1 && rs[0] == '/')
		s->super_rel = strdup(rs + 1);
	free(rs);
	return 0;
}

int pw_compat_submodules_set_super(struct pw_compat_submodules *s, const char *objects_dir,
                                   const struct pw_hash_algo *storage,
                                   const struct pw_hash_algo *compat, struct pw_error *err)
{
	pw_odb_free(s->super_odb);
	pw_compat_map_free(s->super_map);
	free(s->super_dir);
	s->super_odb = NULL;
	s->super_map = NULL;
	s->super_tried = 0;
	s->super_storage = storage;
	s->super_compat = compat;
	if (!(s->super_dir = strdup(objects_dir)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

/* The superproject's odb and map, opened on first use (0 when it cannot be). */
static int open_super(struct pw_compat_submodules *s)
{
	struct pw_error e;

	if (!s->super_tried && s->super_dir) {
		s->super_tried = 1;
		if (pw_odb_open(&s->super_odb, s->super_dir, s->super_storage, &e))
			s->super_odb = NULL;
		if (s->super_compat && pw_compat_map_open(&s->super_map, s->super_dir,
		                                          s->super_storage, s->super_compat, &e))
			s->super_map = NULL;
	}
	return s->super_odb != NULL;
}

/* The repository dir, opened once: its index, -1 when no room is left. */
static long open_repo(struct pw_compat_submodules *s, const char *dir)
{
	struct opened *o;
	const struct pw_hash_algo *compat;

	for (size_t i = 0; i < s->nr_open; i++)
		if (!strcmp(s->open[i].arg, dir))
			return s->open[i].alias ? s->open[i].alias - 1 : (long)i;
	if (s->nr_open == PW_SUBMODULE_REPOS_MAX)
		return -1;
	if (s->nr_open == s->alloc_open) {
		size_t a = s->alloc_open ? 2 * s->alloc_open : 4;
		struct opened *no = realloc(s->open, a * sizeof(*no));

		if (!no)
			return -1;
		s->open = no;
		s->alloc_open = a;
	}
	o = &s->open[s->nr_open];
	memset(o, 0, sizeof(*o));
	if (!(o->arg = strdup(dir)))
		return -1;
	s->nr_open++;
	if (pw_repo_open(&o->repo, dir, &o->why))
		return (long)s->nr_open - 1;
	o->real = realpath(pw_repo_git_dir(o->repo), NULL);
	/* the same repository under another name: one handle */
	for (size_t i = 0; o->real && i + 1 < s->nr_open; i++)
		if (s->open[i].real && !strcmp(s->open[i].real, o->real)) {
			pw_repo_free(o->repo);
			o->repo = NULL;
			o->alias = (long)i + 1;
			return (long)i;
		}
	if (!(compat = pw_repo_compat_algo(o->repo))) {
		pw_error_set(&o->why, PW_ENOTFOUND,
		             "it has no compat map (extensions.compatObjectFormat is not set: run "
		             "'packwire compat build --object-format=%s' in it)",
		             pw_repo_algo(o->repo)->id == PW_HASH_SHA1 ? "sha256" : "sha1");
		return (long)s->nr_open - 1;
	}
	pw_compat_map_open(&o->map, pw_repo_objects_dir(o->repo), pw_repo_algo(o->repo), compat,
	                   &o->why);
	return (long)s->nr_open - 1;
}

/* 0 with *out, PW_ENOTFOUND (why in o), or PW_ENOMEM. */
static int ask(struct opened *o, const struct pw_compat_gitlink *g, struct pw_oid *out)
{
	const struct pw_hash_algo *st, *co;
	char hex[PW_MAX_HEXSZ + 1];
	int rc;

	if (!o->map)
		return PW_ENOTFOUND;
	st = pw_compat_map_storage_algo(o->map);
	co = pw_compat_map_compat_algo(o->map);
	if (st->id == g->commit->algo && co == g->to)
		rc = pw_compat_from_storage(o->map, g->commit, out);
	else if (st == g->to && co->id == g->commit->algo)
		rc = pw_compat_to_storage(o->map, g->commit, out);
	else
		rc = PW_EINVAL;
	if (!rc)
		return 0;
	if (rc == PW_ENOMEM)
		return rc;
	pw_oid_to_hex(g->commit, hex);
	if (rc == PW_ENOTFOUND)
		pw_error_set(&o->why, rc,
		             "its compat map does not know the commit (fetch or push it there: "
		             "the map is kept current, or run 'packwire compat build' in it)");
	else if (rc != PW_EINVAL)
		pw_error_copy(&o->why, pw_compat_map_error(o->map));
	return PW_ENOTFOUND;
}

/* Try the repository dir; *own (when not NULL and still -1) gets its index. */
static int try_dir(struct pw_compat_submodules *s, const char *dir,
                   const struct pw_compat_gitlink *g, struct pw_oid *out, long *own)
{
	long i = open_repo(s, dir);

	if (own && *own < 0)
		*own = i;
	return i >= 0 ? ask(&s->open[i], g, out) : PW_ENOTFOUND;
}

/* The .gitmodules of the gitlink's root tree, parsed into s->gm (left
 * empty when there is none or it cannot be read or parsed: discovery
 * then has nothing to follow, which the error says). */
static void load_gitmodules(struct pw_compat_submodules *s, const struct pw_compat_gitlink *g)
{
	struct pw_buf raw = PW_BUF_INIT;
	const char *data = g->gitmodules;
	size_t len = g->gitmodules_len;
	struct pw_error e;

	if (g->gitmodules_oid && s->gm_valid && pw_oid_equal(&s->gm_oid, g->gitmodules_oid))
		return;
	pw_compat__gitmodules_free(&s->gm);
	s->gm_valid = 0;
	if (!data && g->gitmodules_oid && open_super(s)) {
		struct pw_oid st = *g->gitmodules_oid;
		uint64_t size = 0;
		int type = 0;

		if (st.algo != s->super_storage->id &&
		    (!s->super_map || pw_compat_to_storage(s->super_map, g->gitmodules_oid, &st)))
			goto out;
		if (!pw_odb_read_header(s->super_odb, &st, &type, &size) && type == PW_OBJ_BLOB &&
		    size <= PW_GITMODULES_MAX && !pw_odb_read(s->super_odb, &st, &type, &raw)) {
			data = raw.data;
			len = raw.len;
		}
	}
	if (data && pw_compat__gitmodules_parse(&s->gm, data, len, &e))
		memset(&s->gm, 0, sizeof(s->gm));
out:
	if (g->gitmodules_oid) {
		s->gm_oid = *g->gitmodules_oid;
		s->gm_valid = 1;
	}
	pw_buf_free(&raw);
}

/* Try dir and dir.git, each only when it is a directory inside the base. */
static int try_under_base(struct pw_compat_submodules *s, struct pw_buf *dir,
                          const struct pw_compat_gitlink *g, struct pw_oid *out, long *own)
{
	for (int k = 0; k < 2; k++) {
		if (k && pw_buf_adds(dir, ".git"))
			return PW_ENOMEM;
		if (!pw_fs_is_dir(dir->data) || !s->inside(s->base, dir->data))
			continue;
		if (!try_dir(s, dir->data, g, out, own))
			return 0;
	}
	return PW_ENOTFOUND;
}

/* modules/<name> of the superproject, as git submodule clones a work
 * tree's submodule: a name that is empty, absolute or has a ".." component
 * (which git itself refuses) is not followed, nor one that leads out of
 * modules/ through a symbolic link. */
static int try_modules(struct pw_compat_submodules *s, const char *name,
                       const struct pw_compat_gitlink *g, struct pw_oid *out, long *own)
{
	struct pw_buf dir = PW_BUF_INIT;
	const char *c = name;
	int rc = PW_ENOTFOUND;

	if (!*name || *name == '/')
		return PW_ENOTFOUND;
	for (;;) {
		size_t n = strcspn(c, "/\\");

		if (n == 2 && c[0] == '.' && c[1] == '.')
			return PW_ENOTFOUND;
		if (!c[n])
			break;
		c += n + 1;
	}
	if (pw_buf_addf(&dir, "%s/%s", s->modules, name))
		rc = PW_ENOMEM;
	else if (pw_fs_is_dir(dir.data) && pw_fs_path_inside(s->modules, dir.data))
		rc = try_dir(s, dir.data, g, out, own);
	pw_buf_free(&dir);
	return rc;
}

/* The repositories a .gitmodules URL may name under the base. */
static int try_url(struct pw_compat_submodules *s, const char *url,
                   const struct pw_compat_gitlink *g, struct pw_oid *out, long *own)
{
	struct pw_buf p = PW_BUF_INIT, dir = PW_BUF_INIT;
	int kind = pw_compat__submodule_url(&p, s->super_rel, url, strlen(url)), rc = PW_ENOTFOUND;
	size_t at = 0;

	/* a network URL's path may start with the server's own prefix
	 * ("/git/sub.git" under http-backend): up to 3 leading components
	 * are dropped in turn */
	for (int drop = 0; kind > 0 && drop < 4 && rc == PW_ENOTFOUND; drop++) {
		pw_buf_reset(&dir);
		if (drop) {
			const char *sl =
			        kind == PW_SUBURL_NET ? memchr(p.data + at, '/', p.len - at) : NULL;

			if (!sl)
				break;
			at = (size_t)(sl - p.data) + 1;
		}
		if (kind == PW_SUBURL_ABS ? pw_buf_add(&dir, p.data, p.len)
		                          : pw_buf_addf(&dir, "%s/%s", s->base, p.data + at))
			rc = PW_ENOMEM;
		else
			rc = try_under_base(s, &dir, g, out, own);
	}
	if (kind < 0)
		rc = kind;
	pw_buf_free(&p);
	pw_buf_free(&dir);
	return rc;
}

static int not_found(struct pw_compat_submodules *s, const struct pw_compat_gitlink *g,
                     const char *path, long own, const char *own_url, struct pw_error *err)
{
	char hex[PW_MAX_HEXSZ + 1];
	const char *from = pw_hash_by_id(g->commit->algo)->name;
	struct pw_buf tried = PW_BUF_INIT, url = PW_BUF_INIT;

	pw_oid_to_hex(g->commit, hex);
	if (own >= 0)
		return pw_error_set(err, PW_ENOTFOUND,
		                    "gitlink %s (%s submodule commit %s) has no %s id: submodule "
		                    "repository '%s': %s",
		                    path, from, hex, g->to->name, s->open[own].arg,
		                    s->open[own].why.msg[0] ? s->open[own].why.msg : "unusable");
	if (own_url)
		pw_buf_addf(&url,
		            "its URL '%.200s' in .gitmodules names no repository under the base "
		            "path '%.200s'; ",
		            own_url, s->base);
	/* what the repositories tried said (a moved submodule's is among them) */
	for (size_t i = 0, n = 0; i < s->nr_open && n < 3; i++)
		if (!s->open[i].alias)
			pw_buf_addf(&tried, "%s '%s': %s", n++ ? ";" : "; tried", s->open[i].arg,
			            s->open[i].why.msg[0] ? s->open[i].why.msg : "unusable");
	pw_error_set(err, PW_ENOTFOUND,
	             "gitlink %s (%s submodule commit %s) has no %s id: %sno repository that "
	             "maps it is known for the submodule (name it with --submodule=%s=<repository> "
	             "or compat.submodule.%s.repository; its compat map must know the "
	             "commit)%s",
	             path, from, hex, g->to->name, url.len ? url.data : "", path, path,
	             tried.len ? tried.data : "");
	pw_buf_free(&tried);
	pw_buf_free(&url);
	return PW_ENOTFOUND;
}

int pw_compat_submodules_gitlink(void *data, const struct pw_compat_gitlink *g, struct pw_oid *out,
                                 struct pw_error *err)
{
	struct pw_compat_submodules *s = data;
	char *path = strndup(g->path, g->path_len);
	const char *own_url = NULL;
	long own = -1;
	int rc = PW_ENOTFOUND;

	if (!path)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	/* the repository named for the path, then the one its .gitmodules
	 * URL names, then every other one known */
	for (size_t i = 0; i < s->nr_named && rc == PW_ENOTFOUND; i++)
		if (!strcmp(s->named[i].path, path))
			rc = try_dir(s, s->named[i].repo, g, out, &own);
	if (rc == PW_ENOTFOUND && (s->base || s->modules) && g->path_complete) {
		load_gitmodules(s, g);
		for (size_t i = 0; i < s->gm.nr && rc == PW_ENOTFOUND; i++) {
			if (strcmp(s->gm.v[i].path, path))
				continue;
			if (s->modules)
				rc = try_modules(s, s->gm.v[i].name, g, out, &own);
			if (rc == PW_ENOTFOUND && s->base && s->gm.v[i].url) {
				own_url = s->gm.v[i].url;
				rc = try_url(s, own_url, g, out, &own);
			}
		}
	}
	for (size_t i = 0; i < s->nr_named && rc == PW_ENOTFOUND; i++)
		rc = try_dir(s, s->named[i].repo, g, out, NULL);
	for (size_t i = 0; s->base && i < s->gm.nr && rc == PW_ENOTFOUND; i++)
		if (s->gm.v[i].url)
			rc = try_url(s, s->gm.v[i].url, g, out, NULL);
	for (size_t i = 0; i < s->nr_open && rc == PW_ENOTFOUND; i++)
		if (!s->open[i].alias)
			rc = ask(&s->open[i], g, out);
	if (rc == PW_ENOTFOUND)
		rc = not_found(s, g, path, own, own_url, err);
	else if (rc)
		rc = pw_error_set(err, rc, "out of memory");
	free(path);
	return rc;
}

/* ---- the resolver of a repository ------------------------------------------- */

/* The superproject as its URL names it: the work tree of a repository that
 * has one (".../super/.git" -> ".../super"), else its git directory. */
static char *super_path(struct pw_repo *repo)
{
	char *super = strdup(pw_repo_git_dir(repo));
	size_t n = super ? strlen(super) : 0;

	while (n > 1 && super[n - 1] == '/')
		super[--n] = '\0';
	if (n > 5 && !strcmp(super + n - 5, "/.git"))
		super[n - 5] = '\0';
	return super;
}

/* The directory that holds path ("/" for "/x", "." for "x"). */
static char *parent_of(const char *path)
{
	char *parent = strdup(path), *sl;

	if (!parent)
		return NULL;
	sl = strrchr(parent, '/');
	if (sl && sl != parent)
		*sl = '\0';
	else
		strcpy(parent, sl ? "/" : ".");
	return parent;
}

int pw_compat_submodules_for_repo(struct pw_compat_submodules **io, struct pw_repo *repo,
                                  const char *base,
                                  int (*inside)(const char *base, const char *dir),
                                  struct pw_error *err)
{
	struct pw_compat_submodules *s = *io;
	char *super = super_path(repo), *parent = NULL;
	int rc;

	if (!s && pw_compat_submodules_new(&s))
		s = NULL;
	if (!s || !super || (!base && !(base = parent = parent_of(super)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	/* what the caller named comes first (it was added before), then the
	 * config, then the .gitmodules URLs under base */
	if ((rc = pw_compat_submodules_add_config(s, pw_repo_config(repo), pw_repo_git_dir(repo),
	                                          err)) ||
	    (rc = pw_compat_submodules_set_super(s, pw_repo_objects_dir(repo), pw_repo_algo(repo),
	                                         pw_repo_compat_algo(repo), err)) ||
	    (rc = pw_compat_submodules_discover(s, base, super, inside ? inside : pw_fs_path_inside,
	                                        err)))
		goto out;
	free(s->modules);
	if (!(s->modules = pw_path_join(pw_repo_git_dir(repo), "modules"))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	*io = s;
	s = NULL;
out:
	if (s != *io)
		pw_compat_submodules_free(s);
	free(super);
	free(parent);
	return rc;
}
