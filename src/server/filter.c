/* Partial-clone filters on the serving side: which filters the repository
 * allows (uploadpackfilter.allow, uploadpackfilter.<filter>.allow,
 * uploadpackfilter.tree.maxDepth), the sparse:oid pattern blobs, and the
 * per-object decision for every kind, combine: included (an object is sent
 * only when every sub-filter keeps it). */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/config.h"
#include "packwire/object.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "server/filter.h"

/* ---- configuration ---------------------------------------------------------- */

struct allow_ctx {
	const char *name; /* pw_filter_config_name */
	char allow_key[96], depth_key[96];
	int fallback, item, item_set, bad;
	uint64_t max_depth;
	int has_max_depth;
};

static int allow_cb(const struct pw_config_entry *e, void *data)
{
	struct allow_ctx *c = data;
	int b;

	if (!strcmp(e->key, "uploadpackfilter.allow")) {
		if (!pw_config_parse_bool(e->value, &b))
			c->fallback = b;
	} else if (!strcmp(e->key, c->allow_key)) {
		if (!pw_config_parse_bool(e->value, &b)) {
			c->item = b;
			c->item_set = 1;
		}
	} else if (c->depth_key[0] && !strcmp(e->key, c->depth_key)) {
		int64_t v;

		if (!e->value || pw_config_parse_int64(e->value, &v) || v < 0) {
			c->bad = 1;
			return 0;
		}
		c->item = 1; /* a maximum depth allows tree: filters */
		c->item_set = 1;
		c->max_depth = (uint64_t)v;
		c->has_max_depth = 1;
	}
	return 0;
}

static int check_one(struct pw_upload_session *s, const struct pw_filter *f, int nesting)
{
	struct allow_ctx c;
	size_t i;
	int rc;

	memset(&c, 0, sizeof(c));
	c.name = pw_filter_config_name(f->kind);
	c.fallback = 1;
	snprintf(c.allow_key, sizeof(c.allow_key), "uploadpackfilter.%s.allow", c.name);
	if (f->kind == PW_FILTER_TREE_DEPTH)
		snprintf(c.depth_key, sizeof(c.depth_key), "uploadpackfilter.tree.maxdepth");
	pw_config_foreach(pw_repo_config(s->repo), allow_cb, &c);
	if (c.bad)
		return pw_srv_fail(s, PW_EINVAL, "unable to parse uploadpackfilter.tree.maxdepth");
	if (!(c.item_set ? c.item : c.fallback))
		return pw_srv_fail(s, PW_EPROTO, "filter '%s' not supported", c.name);
	if (f->kind == PW_FILTER_TREE_DEPTH && c.has_max_depth && f->value > c.max_depth)
		return pw_srv_fail(s, PW_EPROTO, "tree filter allows max depth %llu, but got %llu",
		                   (unsigned long long)c.max_depth, (unsigned long long)f->value);
	for (i = 0; f->kind == PW_FILTER_COMBINE && i < f->nr_sub; i++)
		if ((rc = check_one(s, &f->sub[i], nesting + 1)))
			return rc;
	return 0;
}

int pw_srv_check_filter(struct pw_upload_session *s)
{
	if (!s->args.has_filter)
		return 0;
	return check_one(s, &s->args.filter, 0);
}

/* ---- sparse:oid ------------------------------------------------------------- */

/* the largest pattern blob read (16 MiB) */
#define PW_SRV_SPARSE_MAX (16 << 20)

struct sparse_pat {
	char *pat;
	unsigned negative : 1, dir_only : 1, basename : 1;
};

struct pw_srv_sparse {
	const struct pw_filter *filter; /* the sparse:oid filter it belongs to */
	struct sparse_pat *v;
	size_t nr;
};

/* Walk "a/b/c" down from tree `tree`. 0 with *out, PW_ENOTFOUND, or errors. */
static int tree_path(struct pw_upload_session *s, struct pw_oid tree, const char *path,
                     struct pw_oid *out)
{
	struct pw_buf b = PW_BUF_INIT;
	int rc = 0;

	while (*path) {
		const char *slash = strchr(path, '/');
		size_t n = slash ? (size_t)(slash - path) : strlen(path), pos = 0;
		struct pw_tree_entry e;
		int type, found = 0;

		pw_buf_reset(&b);
		if ((rc = pw_odb_read(s->odb, &tree, &type, &b)) || type != PW_OBJ_TREE) {
			rc = PW_ENOTFOUND;
			break;
		}
		while ((rc = pw_tree_next(b.data, b.len, &pos, s->algo, &e, NULL)) == 1)
			if (e.name_len == n && !memcmp(e.name, path, n)) {
				found = 1;
				break;
			}
		if (!found) {
			rc = PW_ENOTFOUND;
			break;
		}
		rc = 0;
		tree = e.oid;
		path += n;
		while (*path == '/')
			path++;
	}
	pw_buf_free(&b);
	if (!rc)
		*out = tree;
	return rc;
}

/* The object a sparse:oid value names: a full id, a ref, or <rev>:<path>. */
static int resolve_blobish(struct pw_upload_session *s, const char *name, struct pw_oid *out)
{
	const char *colon = strchr(name, ':');
	char *rev;
	struct pw_oid oid, peeled;
	int rc, type;

	rev = colon ? strndup(name, (size_t)(colon - name)) : strdup(name);
	if (!rev)
		return pw_srv_oom(s);
	if (strlen(rev) == s->algo->hexsz && !pw_oid_from_hex(&oid, rev, strlen(rev), s->algo))
		rc = 0;
	else
		rc = *rev ? pw_refs_dwim(s->repo, rev, &oid, NULL, NULL) : PW_ENOTFOUND;
	free(rev);
	if (rc)
		return PW_ENOTFOUND;
	if (!colon) {
		*out = oid;
		return 0;
	}
	if (pw_odb_peel(s->odb, &oid, &peeled, &type, NULL) < 0)
		return PW_ENOTFOUND;
	if (type == PW_OBJ_COMMIT) {
		struct pw_buf b = PW_BUF_INIT;
		struct pw_commit_info ci;

		rc = pw_odb_read(s->odb, &peeled, &type, &b);
		if (!rc)
			rc = pw_commit_parse(&ci, b.data, b.len, s->algo, NULL);
		pw_buf_free(&b);
		if (rc)
			return PW_ENOTFOUND;
		peeled = ci.tree;
		pw_commit_info_free(&ci);
	}
	return tree_path(s, peeled, colon + 1, out);
}

static int add_pattern(struct pw_upload_session *s, struct pw_srv_sparse *sp, const char *line,
                       size_t len)
{
	struct sparse_pat *nv, *p;

	while (len && (line[len - 1] == ' ' || line[len - 1] == '\r'))
		len--;
	if (!len || line[0] == '#')
		return 0;
	if (!(nv = realloc(sp->v, (sp->nr + 1) * sizeof(*nv))))
		return pw_srv_oom(s);
	sp->v = nv;
	p = &sp->v[sp->nr];
	memset(p, 0, sizeof(*p));
	if (line[0] == '!') {
		p->negative = 1;
		line++;
		len--;
	} else if (line[0] == '\\') {
		line++;
		len--;
	}
	if (len && line[len - 1] == '/') {
		p->dir_only = 1;
		len--;
	}
	if (!len)
		return 0;
	p->basename = !memchr(line, '/', len);
	if (line[0] == '/') {
		line++;
		len--;
	}
	if (!(p->pat = strndup(line, len)))
		return pw_srv_oom(s);
	sp->nr++;
	return 0;
}

static int sparse_load(struct pw_upload_session *s, const struct pw_filter *f,
                       struct pw_srv_sparse *sp)
{
	struct pw_buf b = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid oid;
	const char *p, *end;
	int rc, type;

	sp->filter = f;
	if (resolve_blobish(s, f->sparse_oid, &oid))
		return pw_srv_fail(s, PW_ENOTFOUND, "unable to access sparse blob in '%s'",
		                   f->sparse_oid);
	{
		uint64_t size;

		/* the client picks the blob: a pattern file, not any object */
		if (!pw_odb_read_header(s->odb, &oid, &type, &size) && size > PW_SRV_SPARSE_MAX)
			return pw_srv_fail(
			        s, PW_ETOOBIG,
			        "unable to parse sparse filter data in %s (larger than %d bytes)",
			        pw_oid_to_hex(&oid, hex), PW_SRV_SPARSE_MAX);
	}
	rc = pw_odb_read(s->odb, &oid, &type, &b);
	if (rc || type != PW_OBJ_BLOB) {
		pw_buf_free(&b);
		return pw_srv_fail(s, PW_EINVAL, "unable to parse sparse filter data in %s",
		                   pw_oid_to_hex(&oid, hex));
	}
	for (p = b.data, end = p + b.len; p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if ((rc = add_pattern(s, sp, p, len)))
			break;
		p += len + 1;
	}
	pw_buf_free(&b);
	return rc;
}

/* 1 matched, 0 excluded by a negative pattern, -1 undecided (the last
 * pattern that matches decides, as in .gitignore). */
static int sparse_match(const struct pw_srv_sparse *sp, const char *path, int is_dir)
{
	const char *base = strrchr(path, '/');
	size_t i;

	base = base ? base + 1 : path;
	for (i = sp->nr; i-- > 0;) {
		const struct sparse_pat *p = &sp->v[i];

		if (p->dir_only && !is_dir)
			continue;
		if (p->basename ? fnmatch(p->pat, base, 0) : fnmatch(p->pat, path, FNM_PATHNAME))
			continue;
		return p->negative ? 0 : 1;
	}
	return -1;
}

/* A blob is kept when its path, or else the nearest directory above it
 * that any pattern decides, matches. */
static int sparse_keeps(const struct pw_srv_sparse *sp, const char *path, size_t len)
{
	char buf[4096];
	int m, is_dir = 0;

	if (len >= sizeof(buf))
		return 1;
	memcpy(buf, path, len);
	buf[len] = '\0';
	for (;;) {
		char *slash;

		if ((m = sparse_match(sp, buf, is_dir)) >= 0)
			return m;
		if (!(slash = strrchr(buf, '/')))
			return 0;
		*slash = '\0';
		is_dir = 1;
	}
}

static void sparse_free(struct pw_srv_sparse *sp)
{
	size_t i;

	for (i = 0; i < sp->nr; i++)
		free(sp->v[i].pat);
	free(sp->v);
}

/* ---- the decision ---------------------------------------------------------- */

static int collect_sparse(struct pw_upload_session *s, struct pw_srv_filter *sf,
                          const struct pw_filter *f)
{
	size_t i;
	int rc;

	if (f->kind == PW_FILTER_SPARSE_OID) {
		struct pw_srv_sparse *nv = realloc(sf->sparse, (sf->nr_sparse + 1) * sizeof(*nv));

		if (!nv)
			return pw_srv_oom(s);
		sf->sparse = nv;
		memset(&sf->sparse[sf->nr_sparse], 0, sizeof(*nv));
		sf->nr_sparse++;
		return sparse_load(s, f, &sf->sparse[sf->nr_sparse - 1]);
	}
	for (i = 0; f->kind == PW_FILTER_COMBINE && i < f->nr_sub; i++)
		if ((rc = collect_sparse(s, sf, &f->sub[i])))
			return rc;
	return 0;
}

int pw_srv_filter_init(struct pw_srv_filter *sf, struct pw_upload_session *s)
{
	memset(sf, 0, sizeof(*sf));
	sf->s = s;
	if (!s->args.has_filter)
		return 0;
	return collect_sparse(s, sf, &s->args.filter);
}

void pw_srv_filter_free(struct pw_srv_filter *sf)
{
	size_t i;

	for (i = 0; i < sf->nr_sparse; i++)
		sparse_free(&sf->sparse[i]);
	free(sf->sparse);
	memset(sf, 0, sizeof(*sf));
}

static size_t path_depth(const char *path, size_t len)
{
	size_t d = 1, i;

	if (!len)
		return 0;
	for (i = 0; i < len; i++)
		d += path[i] == '/';
	return d;
}

static int keeps(const struct pw_srv_filter *sf, const struct pw_filter *f,
                 const struct pw_oid *oid, int type, const char *path, size_t path_len)
{
	uint64_t size;
	size_t i;
	int t;

	switch (f->kind) {
	case PW_FILTER_BLOB_NONE:
		return type != PW_OBJ_BLOB;
	case PW_FILTER_BLOB_LIMIT:
		if (type != PW_OBJ_BLOB)
			return 1;
		if (pw_odb_read_header(sf->s->odb, oid, &t, &size))
			return 1; /* let the writer report it */
		return size < f->value;
	case PW_FILTER_TREE_DEPTH:
		return path_depth(path ? path : "", path ? path_len : 0) < f->value;
	case PW_FILTER_SPARSE_OID:
		if (type != PW_OBJ_BLOB || !path)
			return 1;
		for (i = 0; i < sf->nr_sparse; i++)
			if (sf->sparse[i].filter == f)
				return sparse_keeps(&sf->sparse[i], path, path_len);
		return 1;
	case PW_FILTER_COMBINE:
		for (i = 0; i < f->nr_sub; i++)
			if (!keeps(sf, &f->sub[i], oid, type, path, path_len))
				return 0;
		return 1;
	default:
		return 1;
	}
}

int pw_srv_filter_keeps(const struct pw_srv_filter *sf, const struct pw_oid *oid, int type,
                        const char *path, size_t path_len)
{
	const struct pw_fetch_args *a = &sf->s->args;

	if (!a->has_filter || type == PW_OBJ_COMMIT || type == PW_OBJ_TAG)
		return 1;
	return keeps(sf, &a->filter, oid, type, path, path_len);
}
