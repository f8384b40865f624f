/* Revision arguments: "X", "^X", "A..B", "--not", "--all", and the suffixes
 * ~N, ^N and ^{} / ^{commit} / ^{tree} on a ref name or full object id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/object.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revision.h"

struct pw_revs {
	struct pw_repo *repo;
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	int not_flag; /* after --not: tips become exclusions and back */
	struct pw_oid *tips;
	unsigned char *exclude;
	size_t ntips, atips;
	pw_revs_warn_fn warn;
	void *warn_data;
	struct pw_error err;
};

int pw_revs_new(struct pw_revs **out, struct pw_repo *repo, struct pw_odb *odb)
{
	struct pw_revs *r = calloc(1, sizeof(*r));

	*out = r;
	if (!r)
		return PW_ENOMEM;
	r->repo = repo;
	r->odb = odb;
	r->algo = pw_repo_algo(repo);
	return 0;
}

void pw_revs_free(struct pw_revs *r)
{
	if (!r)
		return;
	free(r->tips);
	free(r->exclude);
	free(r);
}

const struct pw_error *pw_revs_error(const struct pw_revs *r)
{
	return &r->err;
}

void pw_revs_set_warn(struct pw_revs *r, pw_revs_warn_fn fn, void *data)
{
	r->warn = fn;
	r->warn_data = data;
}

size_t pw_revs_count(const struct pw_revs *r)
{
	return r->ntips;
}

const struct pw_oid *pw_revs_get(const struct pw_revs *r, size_t i, int *exclude)
{
	if (exclude)
		*exclude = r->exclude[i];
	return &r->tips[i];
}

static int read_obj(struct pw_revs *r, const struct pw_oid *oid, int *type, struct pw_buf *buf)
{
	char hex[PW_MAX_HEXSZ + 1];
	int rc = pw_odb_read(r->odb, oid, type, buf);

	if (rc == PW_ENOTFOUND)
		return pw_error_set(&r->err, rc, "bad object %s", pw_oid_to_hex(oid, hex));
	if (rc)
		pw_error_copy(&r->err, pw_odb_error(r->odb));
	return rc;
}

/* Peel to an object of type `want` (0 = anything not a tag): tags are
 * followed, and a commit gives its tree for ^{tree}. */
static int peel(struct pw_revs *r, struct pw_oid *oid, int want, const char *arg)
{
	struct pw_buf buf = PW_BUF_INIT;
	int type, rc = 0;

	if (want == PW_OBJ_TAG) {
		if ((rc = read_obj(r, oid, &type, &buf)))
			goto out;
	} else if ((rc = pw_odb_peel(r->odb, oid, oid, &type, &r->err)) < 0) {
		goto out;
	}
	rc = 0;
	if (want == PW_OBJ_TREE && type == PW_OBJ_COMMIT) {
		struct pw_commit_info ci;

		if ((rc = read_obj(r, oid, &type, &buf)))
			goto out;
		if ((rc = pw_commit_parse(&ci, buf.data, buf.len, r->algo, &r->err)))
			goto out;
		*oid = ci.tree;
		pw_commit_info_free(&ci);
		type = PW_OBJ_TREE;
	}
	if (want && type != want)
		rc = pw_error_set(&r->err, PW_EINVAL, "'%s': not a %s", arg,
		                  pw_object_type_name(want));
out:
	pw_buf_free(&buf);
	return rc;
}

static int nth_parent(struct pw_revs *r, struct pw_oid *oid, unsigned long n, const char *arg)
{
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_commit_info ci;
	int type, rc;

	if ((rc = peel(r, oid, PW_OBJ_COMMIT, arg)))
		return rc;
	if (!n)
		return 0;
	if ((rc = read_obj(r, oid, &type, &buf)))
		return rc;
	if ((rc = pw_commit_parse(&ci, buf.data, buf.len, r->algo, &r->err)) == 0) {
		if (n > ci.nr_parents)
			rc = pw_error_set(&r->err, PW_ENOTFOUND,
			                  "ambiguous argument '%s': unknown revision", arg);
		else
			*oid = ci.parents[n - 1];
		pw_commit_info_free(&ci);
	}
	pw_buf_free(&buf);
	return rc;
}

/* The name before any suffix: a full hex id, else a ref in Git's order. */
static int resolve_base(struct pw_revs *r, const char *name, struct pw_oid *oid)
{
	size_t len = strlen(name);
	unsigned found = 0;
	int rc;

	if (len == r->algo->hexsz && !pw_oid_from_hex(oid, name, len, r->algo))
		return 0;
	rc = pw_refs_dwim(r->repo, name, oid, NULL, &found);
	if (found > 1 && r->warn) {
		char msg[PW_ERROR_MSG_MAX];

		snprintf(msg, sizeof(msg), "refname '%s' is ambiguous.", name);
		r->warn(r->warn_data, msg);
	}
	return rc;
}

/* "^{type}" at p (just after the '^'); *next gets the rest. */
static int apply_peel(struct pw_revs *r, const char *arg, const char *p, const char **next,
                      struct pw_oid *oid)
{
	const char *close = strchr(p, '}');
	int want = 0;

	if (!close)
		return pw_error_set(&r->err, PW_EINVAL, "bad revision '%s'", arg);
	if (close != p + 1) {
		want = pw_object_type_from_name(p + 1, (size_t)(close - p - 1));
		if (!want)
			return pw_error_set(&r->err, PW_EINVAL, "bad revision '%s'", arg);
	}
	*next = close + 1;
	return peel(r, oid, want, arg);
}

int pw_revs_resolve(struct pw_revs *r, const char *arg, struct pw_oid *oid)
{
	size_t len = strlen(arg), base_len = 0;
	const char *p;
	char *base;
	int rc;

	/* the name ends at the first ~ or ^ (ref names cannot contain them) */
	while (base_len < len && arg[base_len] != '~' && arg[base_len] != '^')
		base_len++;
	if (!(base = strndup(arg, base_len)))
		return pw_error_set(&r->err, PW_ENOMEM, "out of memory");
	rc = resolve_base(r, *base ? base : "HEAD", oid);
	free(base);
	if (rc == PW_ENOMEM)
		return pw_error_set(&r->err, rc, "out of memory");
	if (rc)
		return pw_error_set(&r->err, PW_ENOTFOUND,
		                    "ambiguous argument '%s': unknown revision or path not in the "
		                    "working tree.",
		                    arg);
	for (p = arg + base_len; *p;) {
		char op = *p++;
		unsigned long n = 1;
		char *end;

		if (op == '^' && *p == '{') {
			if ((rc = apply_peel(r, arg, p, &p, oid)))
				return rc;
			continue;
		}
		if (*p >= '0' && *p <= '9') {
			n = strtoul(p, &end, 10);
			p = end;
		}
		if (op == '^') {
			if ((rc = nth_parent(r, oid, n, arg)))
				return rc;
		} else {
			while (n--)
				if ((rc = nth_parent(r, oid, 1, arg)))
					return rc;
		}
	}
	return 0;
}

static int record(struct pw_revs *r, const struct pw_oid *oid, int exclude)
{
	if (r->ntips == r->atips) {
		size_t na = r->atips ? r->atips * 2 : 16;
		struct pw_oid *nt = realloc(r->tips, na * sizeof(*nt));
		unsigned char *ne;

		if (!nt)
			return pw_error_set(&r->err, PW_ENOMEM, "out of memory");
		r->tips = nt;
		if (!(ne = realloc(r->exclude, na)))
			return pw_error_set(&r->err, PW_ENOMEM, "out of memory");
		r->exclude = ne;
		r->atips = na;
	}
	r->tips[r->ntips] = *oid;
	r->exclude[r->ntips++] = (unsigned char)!!exclude;
	return 0;
}

static int add_oid(struct pw_revs *r, struct pw_revlist *rl, const struct pw_oid *oid,
                   const char *name, int exclude)
{
	int rc = pw_revlist_add(rl, oid, name, exclude);

	if (rc) {
		pw_error_copy(&r->err, pw_revlist_error(rl));
		return rc;
	}
	return record(r, oid, exclude);
}

static int add_one(struct pw_revs *r, struct pw_revlist *rl, const char *arg, int exclude)
{
	struct pw_oid oid;
	int rc = pw_revs_resolve(r, arg, &oid);

	return rc ? rc : add_oid(r, rl, &oid, arg, exclude);
}

struct all_ctx {
	struct pw_revs *r;
	struct pw_revlist *rl;
};

static int add_ref(const struct pw_ref *ref, void *data)
{
	struct all_ctx *c = data;

	if (pw_oid_is_zero(&ref->oid))
		return 0;
	return add_oid(c->r, c->rl, &ref->oid, ref->name, c->r->not_flag);
}

int pw_revs_add_all(struct pw_revs *r, struct pw_revlist *rl)
{
	struct all_ctx c = {r, rl};
	int rc;

	pw_error_clear(&r->err);
	rc = pw_refs_foreach(r->repo, NULL, PW_REFS_INCLUDE_HEAD, add_ref, &c);
	if (rc < 0 && !r->err.code)
		pw_error_copy(&r->err, pw_repo_error(r->repo));
	return rc;
}

int pw_revs_add(struct pw_revs *r, struct pw_revlist *rl, const char *arg)
{
	const char *dots;

	if (!strcmp(arg, "--not")) {
		r->not_flag = !r->not_flag;
		return 0;
	}
	if (!strcmp(arg, "--all"))
		return pw_revs_add_all(r, rl);
	dots = strstr(arg, "..");
	if (dots && dots[2] != '.') {
		char *left = strndup(arg, (size_t)(dots - arg));
		int rc;

		if (!left)
			return pw_error_set(&r->err, PW_ENOMEM, "out of memory");
		rc = add_one(r, rl, *left ? left : "HEAD", !r->not_flag);
		free(left);
		if (!rc)
			rc = add_one(r, rl, dots[2] ? dots + 2 : "HEAD", r->not_flag);
		return rc;
	}
	if (arg[0] == '^')
		return add_one(r, rl, arg + 1, !r->not_flag);
	return add_one(r, rl, arg, r->not_flag);
}
