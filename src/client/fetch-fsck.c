/* fetch.fsckObjects: see fetch-fsck.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/fetch-fsck.h"
#include "packwire/idx.h"
#include "packwire/config.h"
#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/repo.h"

int pw_fetch__fsck_severity_ok(const char *value)
{
	return value &&
	       (!strcmp(value, "error") || !strcmp(value, "warn") || !strcmp(value, "ignore"));
}

static void warn(const struct pw_report *r, const char *fmt, const char *arg)
{
	char msg[512];

	if (!r || !r->warning)
		return;
	snprintf(msg, sizeof(msg), fmt, arg);
	r->warning(r->data, msg);
}

/* Keep the first problem index-pack would meet at its start. */
static int defer(struct pw_fetch_fsck *f, const char *msg, struct pw_error *err)
{
	if (f->deferred)
		return 0;
	if (!(f->deferred = strdup(msg)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

struct setup_ctx {
	struct pw_fetch_fsck *f;
	struct pw_repo *repo;
	struct pw_error *err;
};

/* fetch.fsck.skipList: a path relative to where Git runs index-pack (the
 * top of the work tree, or the git directory of a bare repository). */
static int skiplist(struct setup_ctx *c, const struct pw_config_entry *e)
{
	const char *base =
	        pw_repo_work_tree(c->repo) ? pw_repo_work_tree(c->repo) : pw_repo_git_dir(c->repo);
	struct pw_error e2;
	char *path;
	int rc;

	memset(&e2, 0, sizeof(e2));
	path = e->value[0] == '/' ? strdup(e->value) : pw_path_join(base, e->value);
	if (!path)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	rc = pw_fsck_opts_skiplist(&c->f->opts, path, pw_repo_algo(c->repo), &e2);
	free(path);
	if (rc == PW_ENOMEM)
		return pw_error_set(c->err, rc, "out of memory");
	if (rc && rc != PW_EINVAL) /* named as configured */
		snprintf(e2.msg, sizeof(e2.msg), "could not open object name list: %s", e->value);
	return rc ? defer(c->f, e2.msg, c->err) : 0;
}

static int setup_one(const struct pw_config_entry *e, void *data)
{
	struct setup_ctx *c = data;
	struct pw_fsck_opts probe;
	struct pw_error e2;
	const char *id;
	int rc;

	if (strncmp(e->key, "fetch.fsck.", 11))
		return 0;
	id = e->key + 11;
	if (!e->value)
		return pw_error_set(c->err, PW_EINVAL, "missing value for '%s'", e->key);
	if (!strcmp(id, "skiplist"))
		return skiplist(c, e);
	/* an id Git does not know is skipped whatever its value */
	memset(&e2, 0, sizeof(e2));
	pw_fsck_opts_init(&probe);
	rc = pw_fsck_opts_set(&probe, id, "error", &e2);
	pw_fsck_opts_free(&probe);
	if (rc == PW_ENOTFOUND) {
		warn(c->f->report, "Skipping unknown msg id '%s'", id);
		return 0;
	}
	if (rc)
		return pw_error_set(c->err, rc, "%s", e2.msg);
	if (!pw_fetch__fsck_severity_ok(e->value))
		return pw_error_set(c->err, PW_EINVAL, "Unknown fsck message type: '%s'", e->value);
	rc = pw_fsck_opts_set(&c->f->opts, id, e->value, &e2);
	if (rc == PW_ENOMEM)
		return pw_error_set(c->err, rc, "out of memory");
	/* a fatal id demoted: index-pack's "Cannot demote" */
	return rc ? defer(c->f, e2.msg, c->err) : 0;
}

int pw_fetch__fsck_setup(struct pw_fetch_fsck *f, struct pw_repo *repo,
                         const struct pw_report *report, struct pw_error *err)
{
	const struct pw_config *cfg = pw_repo_config(repo);
	struct setup_ctx c = {f, repo, err};
	int rc, fetch = 0, transfer = 0, have_fetch;

	memset(f, 0, sizeof(*f));
	pw_fsck_opts_init(&f->opts);
	f->report = report;
	/* index-pack --strict: warnings fail the pack, infos are warnings */
	f->opts.strict = 1;
	if (report && report->warning) {
		f->opts.warn = report->warning;
		f->opts.ctx = report->data;
	}
	/* both are read (a bad value of either is fatal, as in Git); the
	 * fetch.* one wins */
	rc = pw_config_get_bool(cfg, "fetch.fsckObjects", &fetch, err);
	if (rc && rc != PW_ENOTFOUND)
		return rc;
	have_fetch = !rc;
	rc = pw_config_get_bool(cfg, "transfer.fsckObjects", &transfer, err);
	if (rc && rc != PW_ENOTFOUND)
		return rc;
	f->on = have_fetch ? fetch : !rc ? transfer : 0;
	rc = pw_config_foreach(cfg, setup_one, &c);
	return rc;
}

/* transfer.unpackLimit wins over fetch.unpackLimit; Git's default is 100. */
static int64_t unpack_limit(struct pw_repo *repo)
{
	const struct pw_config *cfg = pw_repo_config(repo);
	int64_t v;

	if (!pw_config_get_int64(cfg, "transfer.unpackLimit", &v, NULL) && v >= 0)
		return v;
	if (!pw_config_get_int64(cfg, "fetch.unpackLimit", &v, NULL) && v >= 0)
		return v;
	return 100;
}

/* Git's last line: fetch-pack reads index-pack's output only when it
 * asked index-pack to keep the pack. */
static int fail(struct pw_repo *repo, const struct pw_fetch_result *res, int cloning,
                const char *first, struct pw_error *err)
{
	int64_t limit = unpack_limit(repo);
	int keep = cloning || (limit > 0 && (int64_t)res->nr_objects >= limit);

	return pw_error_set(err, PW_ECORRUPT, "%s\nfatal: %s", first,
	                    keep ? "fetch-pack: invalid index-pack output" : "index-pack failed");
}

struct at {
	uint64_t offset;
	uint32_t n;
};

static int at_cmp(const void *a, const void *b)
{
	const struct at *x = a, *y = b;

	return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The pack's entries in pack order, as index-pack meets them (so the
 * first bad object named is the one Git names). */
static int pack_order(const struct pw_idx *idx, struct at **out, struct pw_error *err)
{
	uint32_t i, nr = pw_idx_count(idx);
	struct at *v = calloc(nr ? nr : 1, sizeof(*v));
	int rc;

	if (!v)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (i = 0; i < nr; i++) {
		v[i].n = i;
		if ((rc = pw_idx_nth_offset(idx, i, &v[i].offset, err))) {
			free(v);
			return rc;
		}
	}
	qsort(v, nr, sizeof(*v), at_cmp);
	*out = v;
	return 0;
}

/* Every commit, tree and tag of the pack; blobs are not read (their
 * contents are not checked). */
static int check_pack(struct pw_fetch_fsck *f, struct pw_odb *odb, const char *idx_path,
                      struct pw_error *err)
{
	struct pw_idx *idx = NULL;
	struct pw_buf buf = PW_BUF_INIT;
	struct at *order = NULL;
	uint32_t i;
	int rc;

	if ((rc = pw_idx_open(&idx, idx_path, pw_odb_algo(odb), err)))
		return rc;
	if ((rc = pack_order(idx, &order, err))) {
		pw_idx_free(idx);
		return rc;
	}
	for (i = 0; i < pw_idx_count(idx) && !rc; i++) {
		struct pw_oid oid;
		uint64_t size;
		int type;

		pw_idx_nth_oid(idx, order[i].n, &oid);
		if ((rc = pw_odb_read_header(odb, &oid, &type, &size)) ||
		    (type != PW_OBJ_BLOB && (rc = pw_odb_read(odb, &oid, &type, &buf)))) {
			pw_error_copy(err, pw_odb_error(odb));
			break;
		}
		if (type != PW_OBJ_BLOB)
			rc = pw_fsck_object(odb, &oid, type, buf.data, buf.len, &f->opts, err);
	}
	free(order);
	pw_buf_free(&buf);
	pw_idx_free(idx);
	return rc;
}

int pw_fetch__fsck_check(struct pw_fetch_fsck *f, struct pw_repo *repo,
                         const struct pw_fetch_result *res, int cloning, struct pw_error *err)
{
	struct pw_odb *odb = NULL;
	struct pw_error e;
	int rc;

	if (!f->on || !res->idx_path[0])
		return 0;
	if (f->deferred)
		return fail(repo, res, cloning, f->deferred, err);
	memset(&e, 0, sizeof(e));
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), &e)))
		return pw_error_copy(err, &e);
	rc = check_pack(f, odb, res->idx_path, &e);
	pw_odb_free(odb);
	if (rc != PW_ECORRUPT)
		return rc ? pw_error_copy(err, &e) : 0;
	if (f->report && f->report->error)
		f->report->error(f->report->data, e.msg);
	return fail(repo, res, cloning, "fsck error in packed object", err);
}

void pw_fetch__fsck_free(struct pw_fetch_fsck *f)
{
	pw_fsck_opts_free(&f->opts);
	free(f->deferred);
	f->deferred = NULL;
}
