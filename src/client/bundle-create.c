/* bundle create: the refs the arguments name, the commits they select
 * (rev-list arguments, --since, --max-count), the boundary commits as
 * prerequisites, and a thin pack of what lies between, as Git writes it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-priv.h"
#include "packwire/bitmap.h"
#include "packwire/bundle.h"
#include "packwire/config.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"
#include "packwire/pkt.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revision.h"
#include "packwire/revlist.h"

struct oids {
	struct pw_oid *v;
	size_t nr, alloc;
};

static int oids_push(struct oids *o, const struct pw_oid *oid)
{
	if (o->nr == o->alloc) {
		size_t a = o->alloc ? o->alloc * 2 : 256;
		void *p = realloc(o->v, a * sizeof(*o->v));

		if (!p)
			return PW_ENOMEM;
		o->v = p;
		o->alloc = a;
	}
	o->v[o->nr++] = *oid;
	return 0;
}

static int cmp_oid(const void *a, const void *b)
{
	return pw_oid_cmp(a, b);
}

static int oids_has(const struct oids *sorted, const struct pw_oid *oid)
{
	return sorted->nr && bsearch(oid, sorted->v, sorted->nr, sizeof(*oid), cmp_oid);
}

struct create {
	struct pw_repo *repo;
	struct pw_odb *odb;
	const struct pw_bundle_create_opts *o;
	struct pw_bundle_header h;
	char **shown; /* each ref as the arguments named it, for warnings */
	struct pw_error *err;
};

static int add_ref(struct create *c, const char *name, const char *shown, const struct pw_oid *oid)
{
	size_t i;

	for (i = 0; i < c->h.nr_refs; i++)
		if (!strcmp(c->h.refs[i].name, name))
			return 0;
	if (c->h.nr_refs == c->h.alloc_refs) {
		size_t a = c->h.alloc_refs ? c->h.alloc_refs * 2 : 16;
		void *p = realloc(c->h.refs, a * sizeof(*c->h.refs));
		void *q = p ? realloc(c->shown, a * sizeof(*c->shown)) : NULL;

		if (p)
			c->h.refs = p;
		if (!q)
			return pw_error_set(c->err, PW_ENOMEM, "out of memory");
		c->shown = q;
		c->h.alloc_refs = a;
	}
	c->shown[c->h.nr_refs] = NULL;
	if (!(c->h.refs[c->h.nr_refs].name = strdup(name)) ||
	    !(c->shown[c->h.nr_refs] = strdup(shown))) {
		free(c->h.refs[c->h.nr_refs].name);
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	}
	c->h.refs[c->h.nr_refs++].oid = *oid;
	return 0;
}

static int all_ref(const struct pw_ref *ref, void *data)
{
	return add_ref(data, ref->name, ref->name, &ref->oid);
}

/* A positive argument that names a ref (Git's dwim) puts that ref into the
 * bundle; ids and expressions (X~1) select history only. */
static int note_ref(struct create *c, const char *arg, int positive)
{
	const char *dots = strstr(arg, "..");
	char name[4096];
	struct pw_oid oid;
	char *full = NULL;
	int rc;

	if (arg[0] == '^') {
		positive = !positive;
		arg++;
	}
	if (dots) {
		const char *right = dots[2] == '.' ? dots + 3 : dots + 2;

		snprintf(name, sizeof(name), "%s", *right ? right : "HEAD");
		positive = 1;
	} else {
		snprintf(name, sizeof(name), "%s", arg);
	}
	if (!positive || (strpbrk(name, "~^:@") && strcmp(name, "@")))
		return 0;
	if (pw_refs_dwim(c->repo, name, &oid, &full, NULL))
		return 0;
	rc = add_ref(c, full, name, &oid);
	free(full);
	return rc;
}

static int list_commit(const struct pw_revlist_obj *obj, void *data)
{
	if (obj->type != PW_OBJ_COMMIT)
		return 0;
	return oids_push(data, &obj->oid);
}

static int add_all_refs(struct create *c)
{
	struct pw_oid head;
	int rc;

	if ((rc = pw_refs_foreach(c->repo, NULL, 0, all_ref, c)))
		return rc;
	if (!pw_refs_resolve(c->repo, "HEAD", &head, NULL))
		return add_ref(c, "HEAD", "HEAD", &head);
	return 0;
}

/* The commits the arguments select, in walk order (newest first). */
static int select_commits(struct create *c, struct oids *out)
{
	const struct pw_bundle_create_opts *o = c->o;
	struct pw_revlist *rl = NULL;
	struct pw_revs *revs = NULL;
	size_t i;
	int rc = 0, not = 0;

	if (pw_revlist_new(&rl, c->odb, 0) || pw_revs_new(&revs, c->repo, c->odb)) {
		rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (o->report.warning)
		pw_revs_set_warn(revs, o->report.warning, o->report.data);
	for (i = 0; i < o->nr_args && !rc; i++) {
		const char *a = o->args[i];

		if (!strcmp(a, "--all")) {
			if ((rc = pw_revs_add_all(revs, rl)))
				pw_error_copy(c->err, pw_revs_error(revs));
			else if (!not )
				rc = add_all_refs(c);
			continue;
		}
		if (!strcmp(a, "--not"))
			not = !not ;
		if ((rc = pw_revs_add(revs, rl, a))) {
			pw_error_copy(c->err, pw_revs_error(revs));
			break;
		}
		if (strcmp(a, "--not"))
			rc = note_ref(c, a, !not );
	}
	if (!rc && (rc = pw_revlist_run(rl, list_commit, out)))
		pw_error_copy(c->err, pw_revlist_error(rl));
out:
	pw_revs_free(revs);
	pw_revlist_free(rl);
	return rc;
}

/* The subject line of a commit, for a prerequisite's comment. */
static void subject(const char *data, size_t len, char *out, size_t max)
{
	const char *p = data, *end = data + len, *body = NULL;
	size_t n = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if (!nl)
			break;
		if (nl == p) {
			body = nl + 1;
			break;
		}
		p = nl + 1;
	}
	if (body) {
		while (body < end && *body == '\n')
			body++;
		while (body + n < end && body[n] != '\n' && n < max - 1)
			n++;
		memcpy(out, body, n);
	}
	out[n] = 0;
}

static int push_prereq(struct create *c, const struct pw_oid *oid)
{
	struct pw_buf buf = PW_BUF_INIT;
	char subj[1024];
	int type;

	subj[0] = 0;
	if (!pw_odb_read(c->odb, oid, &type, &buf))
		subject(buf.data, buf.len, subj, sizeof(subj));
	pw_buf_free(&buf);
	if (c->h.nr_prereqs == c->h.alloc_prereqs) {
		size_t a = c->h.alloc_prereqs ? c->h.alloc_prereqs * 2 : 16;
		void *p = realloc(c->h.prereqs, a * sizeof(*c->h.prereqs));

		if (!p)
			return PW_ENOMEM;
		c->h.prereqs = p;
		c->h.alloc_prereqs = a;
	}
	if (!(c->h.prereqs[c->h.nr_prereqs].name = strdup(subj)))
		return PW_ENOMEM;
	c->h.prereqs[c->h.nr_prereqs++].oid = *oid;
	return 0;
}

/* --since and --max-count, then the boundary: parents of selected commits
 * that are not selected themselves become the prerequisites, in the order
 * git rev-list --boundary finds them (walk order, then parent order). */
static int boundary(struct create *c, struct oids *commits)
{
	const struct pw_bundle_create_opts *o = c->o;
	const struct pw_hash_algo *algo = pw_repo_algo(c->repo);
	struct pw_buf buf = PW_BUF_INIT;
	struct oids sel = {0}, walk = {0}, parents = {0}, seen = {0};
	size_t i, k;
	int rc = 0;

	for (i = 0; i < commits->nr && !rc; i++) {
		struct pw_commit_info ci;
		int type;

		if (o->max_count >= 0 && walk.nr >= (size_t)o->max_count)
			break;
		if (pw_odb_read(c->odb, &commits->v[i], &type, &buf) ||
		    pw_commit_parse(&ci, buf.data, buf.len, algo, c->err)) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(c->err, PW_ECORRUPT, "bad commit %s",
			                  pw_oid_to_hex(&commits->v[i], hex));
			break;
		}
		if (!o->since || ci.commit_time >= o->since) {
			rc = oids_push(&walk, &commits->v[i]);
			for (k = 0; !rc && k < ci.nr_parents; k++)
				rc = oids_push(&parents, &ci.parents[k]);
		}
		pw_commit_info_free(&ci);
	}
	if (!rc && walk.nr) {
		sel.v = malloc(walk.nr * sizeof(*sel.v));
		if (!sel.v)
			rc = PW_ENOMEM;
		else {
			memcpy(sel.v, walk.v, walk.nr * sizeof(*sel.v));
			sel.nr = sel.alloc = walk.nr;
			qsort(sel.v, sel.nr, sizeof(*sel.v), cmp_oid);
		}
	}
	for (i = 0; !rc && i < parents.nr; i++) {
		size_t j;

		if (oids_has(&sel, &parents.v[i]))
			continue;
		for (j = 0; j < seen.nr && !pw_oid_equal(&seen.v[j], &parents.v[i]); j++)
			;
		if (j < seen.nr)
			continue;
		if (!(rc = oids_push(&seen, &parents.v[i])))
			rc = push_prereq(c, &parents.v[i]);
	}
	if (rc == PW_ENOMEM)
		pw_error_set(c->err, rc, "out of memory");
	free(commits->v);
	*commits = sel; /* sorted: the selected set */
	free(walk.v);
	free(parents.v);
	free(seen.v);
	pw_buf_free(&buf);
	return rc;
}

/* Refs whose commit was left out by --since or --max-count go, with Git's
 * warning. */
static int drop_excluded_refs(struct create *c, const struct oids *sel)
{
	const struct pw_bundle_create_opts *o = c->o;
	size_t i, k = 0;

	for (i = 0; i < c->h.nr_refs; i++) {
		struct pw_oid peeled;
		int type = 0;
		struct pw_error e = {0};

		if (pw_odb_peel(c->odb, &c->h.refs[i].oid, &peeled, &type, &e) < 0)
			return pw_error_copy(c->err, &e);
		if (type == PW_OBJ_COMMIT && !oids_has(sel, &peeled)) {
			if (o->report.warning) {
				char msg[4200];

				snprintf(msg, sizeof(msg),
				         "ref '%s' is excluded by the rev-list options",
				         c->shown[i]);
				o->report.warning(o->report.data, msg);
			}
			free(c->h.refs[i].name);
			free(c->shown[i]);
			continue;
		}
		c->shown[k] = c->shown[i];
		c->h.refs[k++] = c->h.refs[i];
	}
	c->h.nr_refs = k;
	return 0;
}

struct collect {
	struct pw_pack_writer *w;
	const struct pw_bundle_create_opts *o;
	uint64_t n;
};

static int collect_obj(const struct pw_revlist_obj *obj, void *data)
{
	struct collect *cl = data;
	int rc;

	if (obj->excluded)
		return pw_pack_writer_add_base(cl->w, &obj->oid, obj->type, obj->path,
		                               obj->path_len);
	rc = pw_pack_writer_add(cl->w, &obj->oid, obj->type, obj->path,
	                        obj->type == PW_OBJ_TAG ? 0 : obj->path_len);
	if (!rc && cl->o->progress && cl->o->report.progress && ++cl->n % 1024 == 0)
		cl->o->report.progress(cl->o->report.data, "Enumerating objects", cl->n, 0, 0);
	return rc;
}

struct fd_out {
	int fd;
	uint64_t sent;
};

static int out_fd(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	struct fd_out *f = ctx;

	f->sent += len;
	return pw_write_full(f->fd, data, len, err);
}

/* With a reachability bitmap, as upload-pack: the objects from the bitmap
 * and the pack copied from the bitmapped pack's entries. PW_ENOTFOUND when
 * the bitmap cannot answer and nothing was written (walk instead). */
static int write_pack_bitmap(struct create *c, int fd)
{
	const struct pw_bundle_create_opts *o = c->o;
	const struct pw_config *cfg = pw_repo_config(c->repo);
	struct pw_bitmap_walk *bw = NULL;
	struct pw_bitmap_write_opts wo;
	struct pw_error e = {0};
	struct fd_out f = {fd, 0};
	size_t i;
	int rc = 0, use = 1;

	if (cfg && !pw_config_get_bool(cfg, "pack.usebitmaps", &use, NULL) && !use)
		return PW_ENOTFOUND;
	if (pw_bitmap_walk_new(&bw, c->odb, &e))
		return PW_ENOTFOUND;
	for (i = 0; !rc && i < c->h.nr_refs; i++)
		rc = pw_bitmap_walk_add(bw, &c->h.refs[i].oid, 0);
	for (i = 0; !rc && i < c->h.nr_prereqs; i++)
		rc = pw_bitmap_walk_add(bw, &c->h.prereqs[i].oid, 1);
	if (!rc)
		rc = pw_bitmap_walk_run(bw);
	if (rc) {
		if (rc == PW_ENOMEM)
			pw_error_copy(c->err, pw_bitmap_walk_error(bw));
		pw_bitmap_walk_free(bw);
		return rc == PW_ENOMEM ? rc : PW_ENOTFOUND;
	}
	if (o->progress && o->report.progress)
		o->report.progress(o->report.data, "Enumerating objects", pw_bitmap_walk_count(bw),
		                   0, 1);
	memset(&wo, 0, sizeof(wo));
	wo.ofs_delta = 1;
	wo.thin = 1;
	if (o->progress) {
		wo.progress = o->report.progress;
		wo.progress_data = o->report.data;
	}
	rc = pw_bitmap_walk_write(bw, &wo, out_fd, &f, NULL, NULL);
	if (rc && rc != PW_ENOMEM && !f.sent)
		rc = PW_ENOTFOUND; /* the checks before writing failed: walk instead */
	else if (rc)
		pw_error_copy(c->err, pw_bitmap_walk_error(bw));
	pw_bitmap_walk_free(bw);
	return rc;
}

static int write_pack(struct create *c, int fd)
{
	const struct pw_bundle_create_opts *o = c->o;
	struct pw_pack_write_opts wo;
	struct pw_pack_writer *w = NULL;
	struct pw_revlist *rl = NULL;
	struct collect cl = {0};
	size_t i;
	int rc = 0;

	if ((rc = write_pack_bitmap(c, fd)) != PW_ENOTFOUND)
		return rc;
	rc = 0;
	pw_pack_write_opts_init(&wo);
	pw_pack_write_opts_from_config(&wo, pw_repo_config(c->repo));
	wo.thin = 1;
	wo.objects_dir = pw_repo_objects_dir(c->repo);
	if (o->progress) {
		wo.progress = o->report.progress;
		wo.progress_data = o->report.data;
	}
	if (pw_pack_writer_new(&w, c->odb, &wo) ||
	    pw_revlist_new(&rl, c->odb, PW_REVLIST_OBJECTS | PW_REVLIST_EDGES)) {
		rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	for (i = 0; !rc && i < c->h.nr_refs; i++)
		rc = pw_revlist_add(rl, &c->h.refs[i].oid, NULL, 0);
	for (i = 0; !rc && i < c->h.nr_prereqs; i++)
		rc = pw_revlist_add(rl, &c->h.prereqs[i].oid, NULL, 1);
	cl.w = w;
	cl.o = o;
	if (!rc)
		rc = pw_revlist_run(rl, collect_obj, &cl);
	if (rc) {
		pw_error_copy(c->err, pw_revlist_error(rl));
		goto out;
	}
	if (o->progress && o->report.progress && cl.n)
		o->report.progress(o->report.data, "Enumerating objects", cl.n, 0, 1);
	if ((rc = pw_pack_writer_write_fd(w, fd, NULL)))
		pw_error_copy(c->err, pw_pack_writer_error(w));
out:
	pw_revlist_free(rl);
	pw_pack_writer_free(w);
	return rc;
}

int pw_bundle_create(struct pw_repo *repo, const struct pw_bundle_create_opts *o, int fd,
                     struct pw_error *err)
{
	struct create c;
	struct oids commits = {0};
	struct pw_buf hdr = PW_BUF_INIT;
	size_t i;
	int rc;

	memset(&c, 0, sizeof(c));
	c.repo = repo;
	c.o = o;
	c.err = err;
	pw_bundle_header_init(&c.h);
	c.h.algo = pw_repo_algo(repo);
	c.h.version = o->version ? o->version : c.h.algo == &pw_hash_sha1 ? 2 : 3;
	if (c.h.version != 2 && c.h.version != 3)
		return pw_error_set(err, PW_EINVAL, "unsupported bundle version %d", c.h.version);
	if (c.h.version == 2 && c.h.algo != &pw_hash_sha1)
		return pw_error_set(err, PW_EINVAL,
		                    "cannot write bundle version 2 with algorithm %s",
		                    c.h.algo->name);
	if ((rc = pw_odb_open(&c.odb, pw_repo_objects_dir(repo), c.h.algo, err)))
		return rc;
	if ((rc = select_commits(&c, &commits)) || (rc = boundary(&c, &commits)) ||
	    (rc = drop_excluded_refs(&c, &commits)))
		goto out;
	if (!c.h.nr_refs) {
		rc = pw_error_set(err, PW_EINVAL, "Refusing to create empty bundle.");
		goto out;
	}
	if ((rc = pw_bundle_header_write(&c.h, &hdr, err)) ||
	    (rc = pw_write_full(fd, hdr.data, hdr.len, err)))
		goto out;
	rc = write_pack(&c, fd);
out:
	free(commits.v);
	pw_buf_free(&hdr);
	for (i = 0; i < c.h.nr_refs; i++)
		free(c.shown[i]);
	free(c.shown);
	pw_bundle_header_free(&c.h);
	pw_odb_free(c.odb);
	return rc;
}
