/* send-pack: see packwire/push.h. The steps follow Git's send-pack: read the
 * advertisement, check the object format before anything is sent, match
 * refspecs, refuse what would lose history, send commands, push options and
 * a thin pack, read the report (inside side-band-64k when offered), then
 * update remote-tracking refs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/client.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/push.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revision.h"
#include "packwire/revlist.h"
#include "packwire/transport.h"
#include "packwire/version.h"
#include "client/client-priv.h"
#include "client/dav.h"
#include "client/dumb.h"
#include "transport/transport-priv.h"

struct ps {
	struct pw_repo *repo;
	const struct pw_hash_algo *algo;
	const struct pw_push_opts *o;
	struct pw_error *err;
	struct pw_push_result *res;
	size_t alloc;
	struct pw_conn *conn;
	struct pw_pkt_reader rd;
	int rd_init;
	struct pw_adv adv;
	struct pw_odb *odb;
	struct pw_dav *dav; /* a dumb HTTP server: WebDAV (dav-push.c) */
	int server_report, server_report_v2, server_sideband, server_delete, server_atomic;
	int server_options, server_ofs;
	int sideband;
	struct pw_push_ref *hint; /* the ref of the last "ok"/"ng" report line */
	int new_report;           /* 1: its next "option" starts a report; 2: in one */
	struct pw_helper *helper; /* a "push" helper instead of receive-pack */
	char *nonce;              /* the server's push-cert nonce, when one is sent */
	struct pw_oid *commons;   /* push.negotiate: commits the server has */
	size_t nr_commons;
};

void pw_push_result_free(struct pw_push_result *res)
{
	size_t i, j;

	for (i = 0; i < res->nr; i++) {
		free(res->refs[i].src);
		free(res->refs[i].dst);
		free(res->refs[i].remote_msg);
		free(res->refs[i].tracking);
		for (j = 0; j < res->refs[i].nr_reports; j++)
			free(res->refs[i].reports[j].ref_name);
		free(res->refs[i].reports);
	}
	free(res->refs);
	free(res->url);
	free(res->remote_name);
	free(res->unpack_error);
	memset(res, 0, sizeof(*res));
}

int pw_push_result_ok(const struct pw_push_result *res)
{
	size_t i;

	if (res->unpack_error)
		return 0;
	for (i = 0; i < res->nr; i++)
		if (res->refs[i].status != PW_PUSH_OK && res->refs[i].status != PW_PUSH_UPTODATE)
			return 0;
	return 1;
}

static const char *cfg(struct ps *s, const char *key)
{
	const char *v = NULL;

	if (pw_config_get_string(pw_repo_config(s->repo), key, &v, NULL))
		return NULL;
	return v;
}

static const char *cfgf(struct ps *s, char *buf, size_t n, const char *fmt, const char *a)
{
	snprintf(buf, n, fmt, a);
	return cfg(s, buf);
}

/* "refs/heads/x" of HEAD, or NULL when detached or unborn-less. */
static char *current_branch(struct pw_repo *repo)
{
	struct pw_oid o;
	char *sym = NULL;

	if (pw_refs_read(repo, "HEAD", &o, &sym) || !sym)
		return NULL;
	if (strncmp(sym, "refs/heads/", 11)) {
		free(sym);
		return NULL;
	}
	return sym;
}

/* ---- the list of updates ------------------------------------------------- */

static struct pw_push_ref *find_update(struct ps *s, const char *dst)
{
	size_t i;

	for (i = 0; i < s->res->nr; i++)
		if (!strcmp(s->res->refs[i].dst, dst))
			return &s->res->refs[i];
	return NULL;
}

static int add_update(struct ps *s, const char *src, const struct pw_oid *new_oid, const char *dst,
                      int force, int is_delete)
{
	struct pw_push_ref *r = find_update(s, dst);

	if (r) {
		if (r->is_delete == is_delete && (is_delete || pw_oid_equal(&r->new_oid, new_oid)))
			return 0;
		return pw_error_set(s->err, PW_EINVAL, "multiple updates for ref '%s' not allowed",
		                    dst);
	}
	if (s->res->nr == s->alloc) {
		size_t n = s->alloc ? s->alloc * 2 : 16;
		struct pw_push_ref *v = realloc(s->res->refs, n * sizeof(*v));

		if (!v)
			return pw_error_set(s->err, PW_ENOMEM, "out of memory");
		s->res->refs = v;
		s->alloc = n;
	}
	r = &s->res->refs[s->res->nr];
	memset(r, 0, sizeof(*r));
	r->src = src ? strdup(src) : NULL;
	r->dst = strdup(dst);
	if ((src && !r->src) || !r->dst) {
		free(r->src);
		free(r->dst);
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	}
	if (is_delete)
		pw_oid_zero(&r->new_oid, s->algo);
	else
		r->new_oid = *new_oid;
	r->force = force;
	r->is_delete = is_delete;
	s->res->nr++;
	return 0;
}

/* A local name in Git's order: HEAD, full names, refs/X, tags, heads,
 * remotes; else a full hex id. *full: the ref name (NULL for an id). */
static int resolve_src(struct ps *s, const char *src, char **full, struct pw_oid *oid)
{
	int rc = pw_refs_dwim(s->repo, src, oid, full, NULL);

	if (rc != PW_ENOTFOUND)
		return rc;
	if (strlen(src) == s->algo->hexsz && !pw_oid_from_hex(oid, src, s->algo->hexsz, s->algo) &&
	    pw_odb_exists(s->odb, oid))
		return 0;
	/* any revision, as git push takes it ("HEAD~2:refs/heads/x"); git
	 * passes such sources on to a push helper as they were written */
	if (strpbrk(src, "~^@")) {
		struct pw_revs *revs = NULL;

		rc = pw_revs_new(&revs, s->repo, s->odb);
		if (!rc)
			rc = pw_revs_resolve(revs, src, oid);
		pw_revs_free(revs);
		if (!rc)
			return 0;
	}
	return pw_error_set(s->err, PW_ENOTFOUND, "src refspec %s does not match any", src);
}

static char *resolve_dst(struct ps *s, const char *dst, const char *src_full)
{
	char name[4096];

	if (!strncmp(dst, "refs/", 5))
		return strdup(dst);
	snprintf(name, sizeof(name), "refs/heads/%s", dst);
	if (pw_adv_find(&s->adv, name))
		return strdup(name);
	snprintf(name, sizeof(name), "refs/tags/%s", dst);
	if (pw_adv_find(&s->adv, name))
		return strdup(name);
	if (src_full && !strncmp(src_full, "refs/tags/", 10))
		snprintf(name, sizeof(name), "refs/tags/%s", dst);
	else
		snprintf(name, sizeof(name), "refs/heads/%s", dst);
	return strdup(name);
}

struct glob_ctx {
	struct ps *s;
	const char *src_pre, *src_suf, *dst_pre, *dst_suf;
	int force, rc;
};

static int glob_one(const struct pw_ref *ref, void *data)
{
	struct glob_ctx *g = data;
	size_t n = strlen(ref->name), pl = strlen(g->src_pre), sl = strlen(g->src_suf);
	char dst[4096];

	if (n < pl + sl || strncmp(ref->name, g->src_pre, pl) ||
	    strcmp(ref->name + n - sl, g->src_suf))
		return 0;
	snprintf(dst, sizeof(dst), "%s%.*s%s", g->dst_pre, (int)(n - pl - sl), ref->name + pl,
	         g->dst_suf);
	return add_update(g->s, ref->name, &ref->oid, dst, g->force, 0);
}

/* One refspec: [+]src[:dst], ":dst" deletes, one '*' on both sides globs. */
static int add_refspec(struct ps *s, const char *spec, int force)
{
	char *copy, *src, *dst, *colon, *full = NULL, *d = NULL;
	struct pw_oid oid;
	int rc = 0;

	if (*spec == '+') {
		force = 1;
		spec++;
	}
	copy = strdup(spec);
	if (!copy)
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	src = copy;
	colon = strchr(copy, ':');
	dst = colon ? colon + 1 : NULL;
	if (colon)
		*colon = '\0';
	if (s->o->delete_refs) {
		if (dst || !*src) {
			rc = pw_error_set(s->err, PW_EINVAL,
			                  "--delete only accepts plain target ref names");
			goto out;
		}
		d = resolve_dst(s, src, NULL);
		rc = d ? add_update(s, NULL, NULL, d, force, 1) : PW_ENOMEM;
		goto out;
	}
	if (!*src) {
		if (!dst || !*dst) {
			rc = pw_error_set(s->err, PW_EINVAL, "invalid refspec '%s'", spec);
			goto out;
		}
		d = resolve_dst(s, dst, NULL);
		rc = d ? add_update(s, NULL, NULL, d, force, 1) : PW_ENOMEM;
		goto out;
	}
	if (strchr(src, '*')) {
		struct glob_ctx g = {s, src, NULL, NULL, NULL, force, 0};
		char *ds = dst ? strchr(dst, '*') : NULL, *ss = strchr(src, '*');

		if (!dst || !ds || strchr(ds + 1, '*') || strchr(ss + 1, '*')) {
			rc = pw_error_set(s->err, PW_EINVAL, "invalid refspec '%s'", spec);
			goto out;
		}
		*ss = '\0';
		*ds = '\0';
		g.src_pre = src;
		g.src_suf = ss + 1;
		g.dst_pre = dst;
		g.dst_suf = ds + 1;
		rc = pw_refs_foreach(s->repo, "refs/", 0, glob_one, &g);
		goto out;
	}
	if ((rc = resolve_src(s, src, &full, &oid)))
		goto out;
	if (dst && *dst) {
		d = resolve_dst(s, dst, full);
	} else if (full && !strcmp(full, "HEAD")) {
		d = current_branch(s->repo);
		if (!d) {
			rc = pw_error_set(s->err, PW_EINVAL,
			                  "you are not on a branch: say where HEAD should go "
			                  "(HEAD:<name>)");
			goto out;
		}
	} else if (full) {
		d = strdup(full);
	} else {
		rc = pw_error_set(s->err, PW_EINVAL,
		                  "the destination of '%s' must be given ('%s:refs/heads/<name>')",
		                  src, src);
		goto out;
	}
	/* a source that is no ref (an id, "main~1") is shown as written */
	rc = d ? add_update(s, full ? full : src, &oid, d, force, 0) : PW_ENOMEM;
out:
	free(copy);
	free(full);
	free(d);
	return rc;
}

struct all_ctx {
	struct ps *s;
	int force;
};

static int all_one(const struct pw_ref *ref, void *data)
{
	struct all_ctx *a = data;

	if (pw_oid_is_zero(&ref->oid))
		return 0;
	return add_update(a->s, ref->name, &ref->oid, ref->name, a->force, 0);
}

struct cfg_list {
	struct ps *s;
	int rc;
	int n;
};

static int cfg_push_one(const struct pw_config_entry *e, void *data)
{
	struct cfg_list *l = data;

	l->n++;
	if (!e->value)
		return 0;
	return (l->rc = add_refspec(l->s, e->value, 0));
}

/* No refspec given: remote.<name>.push, else push.default (simple). */
static int default_updates(struct ps *s)
{
	const char *mode = cfg(s, "push.default");
	char key[512], *branch;
	const char *merge, *bremote;
	struct pw_oid oid;
	int rc;

	if (s->res->remote_name) {
		struct cfg_list l = {s, 0, 0};

		snprintf(key, sizeof(key), "remote.%s.push", s->res->remote_name);
		pw_config_get_all(pw_repo_config(s->repo), key, cfg_push_one, &l);
		if (l.n)
			return l.rc;
	}
	if (mode && !strcmp(mode, "nothing"))
		return pw_error_set(s->err, PW_EINVAL,
		                    "You didn't specify any refspecs to push, and push.default is "
		                    "\"nothing\".");
	if (mode && !strcmp(mode, "matching")) {
		size_t i;

		for (i = 0; i < s->adv.nr; i++) {
			const char *n = s->adv.refs[i].name;

			if (strncmp(n, "refs/heads/", 11) ||
			    pw_refs_resolve(s->repo, n, &oid, NULL))
				continue;
			if ((rc = add_update(s, n, &oid, n, 0, 0)))
				return rc;
		}
		return 0;
	}
	branch = current_branch(s->repo);
	if (!branch)
		return pw_error_set(s->err, PW_EINVAL,
		                    "You are not currently on a branch.\nTo push the history "
		                    "leading to the current (detached HEAD)\nstate now, use\n\n    "
		                    "git push %s HEAD:<name-of-remote-branch>\n",
		                    s->res->remote_name ? s->res->remote_name : s->res->url);
	if (pw_refs_resolve(s->repo, branch, &oid, NULL)) {
		rc = pw_error_set(s->err, PW_ENOTFOUND, "src refspec %s does not match any",
		                  branch + 11);
		free(branch);
		return rc;
	}
	/* simple/upstream: the upstream when it is on this remote; simple and
	 * current: the same name. Like Git, simple wants an upstream when
	 * pushing back to the remote the branch comes from. */
	merge = cfgf(s, key, sizeof(key), "branch.%s.merge", branch + 11);
	{
		char key2[512];
		int central;

		bremote = cfgf(s, key2, sizeof(key2), "branch.%s.remote", branch + 11);
		central = s->res->remote_name &&
		          !strcmp(bremote ? bremote : "origin", s->res->remote_name);
		if (merge && bremote && central && (!mode || strcmp(mode, "current")))
			rc = add_update(s, branch, &oid, merge, 0, 0);
		else if (central && (!mode || !strcmp(mode, "simple") || !strcmp(mode, "upstream")))
			rc = pw_error_set(
			        s->err, PW_EINVAL,
			        "The current branch %s has no upstream branch.\nSet one "
			        "(git branch --set-upstream-to=%s/%s) or name what to push "
			        "(packwire push %s %s).",
			        branch + 11, s->res->remote_name, branch + 11, s->res->remote_name,
			        branch + 11);
		else
			rc = add_update(s, branch, &oid, branch, 0, 0);
	}
	free(branch);
	return rc;
}

static int mirror_deletes(struct ps *s)
{
	size_t i;
	struct pw_oid oid;
	int rc;

	for (i = 0; i < s->adv.nr; i++) {
		const char *n = s->adv.refs[i].name;

		if (strncmp(n, "refs/", 5) || find_update(s, n))
			continue;
		if (!pw_refs_resolve(s->repo, n, &oid, NULL))
			continue;
		if ((rc = add_update(s, NULL, NULL, n, 1, 1)))
			return rc;
	}
	return 0;
}

static int build_updates(struct ps *s, const char *const *refspecs, size_t nr)
{
	size_t i;
	int rc = 0;

	if (s->o->mirror) {
		struct all_ctx a = {s, 1};

		if (nr)
			return pw_error_set(s->err, PW_EINVAL,
			                    "--mirror can't be combined with refspecs");
		if ((rc = pw_refs_foreach(s->repo, "refs/", 0, all_one, &a)))
			return rc;
		return mirror_deletes(s);
	}
	if (s->o->all) {
		struct all_ctx a = {s, s->o->force};

		if (nr)
			return pw_error_set(s->err, PW_EINVAL,
			                    "--all can't be combined with refspecs");
		if ((rc = pw_refs_foreach(s->repo, "refs/heads/", 0, all_one, &a)))
			return rc;
	}
	if (s->o->delete_refs && !nr)
		return pw_error_set(s->err, PW_EINVAL,
		                    "--delete doesn't make sense without any refs");
	for (i = 0; i < nr && !rc; i++)
		rc = add_refspec(s, refspecs[i], s->o->force);
	if (rc)
		return rc;
	if (s->o->tags) {
		struct all_ctx a = {s, s->o->force};

		if ((rc = pw_refs_foreach(s->repo, "refs/tags/", 0, all_one, &a)))
			return rc;
	}
	if (!nr && !s->o->all && !s->o->tags)
		rc = default_updates(s);
	return rc;
}

/* Git's order: refs the server has, in its order, then new ones as matched. */
struct order {
	size_t key, idx;
	struct pw_push_ref r;
};

static int order_cmp(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int sort_updates(struct ps *s)
{
	struct order *o;
	size_t i, j;

	if (s->res->nr < 2)
		return 0;
	o = malloc(s->res->nr * sizeof(*o));
	if (!o)
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	for (i = 0; i < s->res->nr; i++) {
		o[i].idx = i;
		o[i].r = s->res->refs[i];
		o[i].key = s->adv.nr;
		for (j = 0; j < s->adv.nr; j++)
			if (!strcmp(s->adv.refs[j].name, o[i].r.dst)) {
				o[i].key = j;
				break;
			}
	}
	qsort(o, s->res->nr, sizeof(*o), order_cmp);
	for (i = 0; i < s->res->nr; i++)
		s->res->refs[i] = o[i].r;
	free(o);
	return 0;
}

/* ---- deciding ------------------------------------------------------------ */

static int is_rejection(enum pw_push_status st)
{
	return st == PW_PUSH_REJECT_NONFF || st == PW_PUSH_REJECT_FETCH_FIRST ||
	       st == PW_PUSH_REJECT_EXISTS || st == PW_PUSH_REJECT_NODELETE ||
	       st == PW_PUSH_NO_SUCH_REF || st == PW_PUSH_REJECT_STALE ||
	       st == PW_PUSH_REJECT_REMOTE_UPDATED;
}

/* Git's set_ref_status_for_push: what would keep this update from going
 * out, and whether force (--force, "+", a lease that holds) overrides it. */
static int decide_one(struct ps *s, struct pw_push_ref *r, const struct pw_remote_ref *rr)
{
	enum pw_push_status reject = PW_PUSH_PENDING;
	int force = r->force, rc;

	if (r->is_delete && !rr) {
		r->status = PW_PUSH_NO_SUCH_REF;
		return 0;
	}
	if (!r->is_delete && pw_oid_equal(&r->old_oid, &r->new_oid)) {
		r->status = PW_PUSH_UPTODATE;
		return 0;
	}
	/* a lease that holds forces the update; one that does not rejects it */
	rc = pw_push__lease(s->repo, s->o, s->res->remote_name, r, &reject, s->err);
	if (rc < 0)
		return rc;
	if (rc && !reject)
		force = 1;
	if (!reject && !r->is_delete && !pw_oid_is_zero(&r->old_oid)) {
		if (!strncmp(r->dst, "refs/tags/", 10)) {
			reject = PW_PUSH_REJECT_EXISTS;
		} else if (!pw_odb_exists(s->odb, &r->old_oid)) {
			reject = PW_PUSH_REJECT_FETCH_FIRST;
		} else {
			struct pw_error e;
			int anc = pw_commit_is_ancestor(s->repo, &r->old_oid, &r->new_oid, &e);

			if (anc < 0)
				return pw_error_set(s->err, anc, "%s", e.msg);
			if (!anc)
				reject = PW_PUSH_REJECT_NONFF;
		}
	}
	if (!force)
		r->status = reject;
	else if (reject)
		r->forced_update = 1;
	/* send-pack's own check, after the rules above */
	if (r->is_delete && r->status == PW_PUSH_PENDING && !s->server_delete)
		r->status = PW_PUSH_REJECT_NODELETE;
	return 0;
}

static int decide(struct ps *s)
{
	size_t i;
	int any_reject = 0, rc;

	for (i = 0; i < s->res->nr; i++) {
		struct pw_push_ref *r = &s->res->refs[i];
		const struct pw_remote_ref *rr = pw_adv_find(&s->adv, r->dst);

		if (rr)
			r->old_oid = rr->oid;
		else
			pw_oid_zero(&r->old_oid, s->algo);
		if ((rc = decide_one(s, r, rr)))
			return rc;
		if (is_rejection(r->status))
			any_reject = 1;
	}
	if (!any_reject || !s->o->atomic)
		return 0;
	for (i = 0; i < s->res->nr; i++)
		if (s->res->refs[i].status == PW_PUSH_PENDING)
			s->res->refs[i].status = PW_PUSH_ATOMIC_FAILED;
	/* send-pack names the first ref it would have had to leave out (a
	 * helper, smart HTTP included, says nothing) */
	for (i = 0; !s->helper && !s->dav && !s->conn->stateless && i < s->res->nr; i++) {
		enum pw_push_status st = s->res->refs[i].status;

		if (st == PW_PUSH_REJECT_NONFF || st == PW_PUSH_REJECT_FETCH_FIRST ||
		    st == PW_PUSH_REJECT_EXISTS || st == PW_PUSH_REJECT_STALE ||
		    st == PW_PUSH_REJECT_REMOTE_UPDATED) {
			s->res->atomic_failed_by = i + 1;
			if (s->o->atomic_failed)
				s->o->atomic_failed(s->o->report.data, &s->res->refs[i]);
			break;
		}
	}
	return 0;
}

/* ---- sending ------------------------------------------------------------- */

static int send_out(struct ps *s, struct pw_buf *b)
{
	pw_client__trace_buf(s->o->trace_packet, s->o->trace_packet_ctx, b);
	return pw_pkt_send(s->conn->out_fd, b, s->err);
}

/* A packet from the server, traced (GIT_TRACE_PACKET). */
static int read_pkt(struct ps *s, struct pw_pkt *pkt)
{
	int rc = pw_pkt_read(&s->rd, pkt, s->err);

	if (!rc)
		pw_client__trace_pkt(s->o->trace_packet, s->o->trace_packet_ctx, 0, pkt);
	return rc;
}

struct pack_ctx {
	struct pw_pack_writer *w;
	const struct pw_push_opts *o;
	pw_progress_fn progress; /* NULL: none wanted */
	uint64_t n;              /* objects to send, for the progress */
	int rc;
};

static int pack_obj(const struct pw_revlist_obj *obj, void *data)
{
	struct pack_ctx *p = data;
	const char *path = obj->type == PW_OBJ_COMMIT || obj->type == PW_OBJ_TAG ? NULL : obj->path;
	size_t pl = path ? obj->path_len : 0;

	if (obj->excluded)
		return pw_pack_writer_add_base(p->w, &obj->oid, obj->type, path, pl);
	if (p->progress && ++p->n % 1024 == 0)
		p->progress(p->o->report.data, "Enumerating objects", p->n, 0, 0);
	return pw_pack_writer_add(p->w, &obj->oid, obj->type, path, pl);
}

static int pack_out(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	return pw_write_full(*(int *)ctx, data, len, err);
}

static int send_pack_data(struct ps *s)
{
	struct pw_pack_write_opts po;
	struct pw_pack_writer *w = NULL;
	struct pw_revlist *rl = NULL;
	struct pack_ctx pc;
	size_t i;
	int rc, fd = s->conn->out_fd;

	if ((rc = pw_revlist_new(&rl, s->odb, PW_REVLIST_OBJECTS | PW_REVLIST_EDGES)))
		return pw_error_set(s->err, rc, "out of memory");
	for (i = 0; i < s->res->nr && !rc; i++) {
		struct pw_push_ref *r = &s->res->refs[i];

		if (r->status == PW_PUSH_PENDING && !r->is_delete)
			if ((rc = pw_revlist_add(rl, &r->new_oid, NULL, 0)))
				pw_error_copy(s->err, pw_revlist_error(rl));
	}
	for (i = 0; i < s->adv.nr && !rc; i++)
		if (!pw_oid_is_zero(&s->adv.refs[i].oid) &&
		    pw_odb_exists(s->odb, &s->adv.refs[i].oid))
			pw_revlist_add(rl, &s->adv.refs[i].oid, NULL, 1);
	for (i = 0; i < s->nr_commons && !rc; i++)
		if (pw_odb_exists(s->odb, &s->commons[i]))
			pw_revlist_add(rl, &s->commons[i], NULL, 1);
	if (rc)
		goto out;
	pw_pack_write_opts_init(&po);
	pw_pack_write_opts_from_config(&po, pw_repo_config(s->repo));
	po.thin = 1;
	po.ofs_delta = s->server_ofs;
	po.objects_dir = pw_repo_objects_dir(s->repo);
	po.progress = s->o->progress ? s->o->report.progress : NULL;
	po.progress_data = s->o->report.data;
	if ((rc = pw_pack_writer_new(&w, s->odb, &po))) {
		rc = pw_error_set(s->err, rc, "out of memory");
		goto out;
	}
	pc.w = w;
	pc.o = s->o;
	pc.progress = po.progress;
	pc.n = 0;
	pc.rc = 0;
	if ((rc = pw_revlist_run(rl, pack_obj, &pc))) {
		if (pw_revlist_error(rl)->code)
			pw_error_copy(s->err, pw_revlist_error(rl));
		else
			pw_error_copy(s->err, pw_pack_writer_error(w));
		goto out;
	}
	if (pc.progress)
		pc.progress(s->o->report.data, "Enumerating objects", pw_pack_writer_count(w), 0,
		            1);
	if ((rc = pw_pack_writer_write(w, pack_out, &fd, NULL))) {
		if (!s->err->msg[0])
			pw_error_copy(s->err, pw_pack_writer_error(w));
	} else if (s->o->local_pack_done) {
		struct pw_pack_write_stats st;

		pw_pack_writer_stats(w, &st);
		s->o->local_pack_done(s->o->report.data, &st);
	}
out:
	pw_pack_writer_free(w);
	pw_revlist_free(rl);
	return rc;
}

/* The URL without its user information, as the certificate's "pushee". */
static int add_pushee(struct pw_buf *b, const char *url)
{
	const char *scheme = strstr(url, "://"), *host, *at, *slash;

	if (!scheme)
		return pw_buf_addf(b, "pushee %s\n", url);
	host = scheme + 3;
	slash = strchr(host, '/');
	at = memchr(host, '@', slash ? (size_t)(slash - host) : strlen(host));
	if (!at)
		return pw_buf_addf(b, "pushee %s\n", url);
	return pw_buf_addf(b, "pushee %.*s%s\n", (int)(host - url), url, at + 1);
}

/* A signed push: the certificate (the commands, signed) in place of the
 * command lines, "push-cert" with the capabilities first. *sent = 0 when
 * no ref is to be updated (nothing is sent, as Git). */
static int add_push_cert(struct ps *s, struct pw_buf *b, const char *caps, int *sent)
{
	struct pw_buf cert = PW_BUF_INIT;
	char o[PW_MAX_HEXSZ + 1], n[PW_MAX_HEXSZ + 1];
	const char *p, *end;
	size_t i;
	int rc = 0;

	*sent = 0;
	rc |= pw_buf_addf(&cert, "certificate version 0.1\npusher %s\n", s->o->cert_pusher);
	if (s->res->url && *s->res->url)
		rc |= add_pushee(&cert, s->res->url);
	rc |= pw_buf_addf(&cert, "nonce %s\n", s->nonce);
	for (i = 0; i < s->o->nr_push_options; i++)
		rc |= pw_buf_addf(&cert, "push-option %s\n", s->o->push_options[i]);
	rc |= pw_buf_adds(&cert, "\n");
	for (i = 0; i < s->res->nr; i++) {
		struct pw_push_ref *r = &s->res->refs[i];

		if (r->status != PW_PUSH_PENDING)
			continue;
		rc |= pw_buf_addf(&cert, "%s %s %s\n", pw_oid_to_hex(&r->old_oid, o),
		                  pw_oid_to_hex(&r->new_oid, n), r->dst);
		*sent = 1;
	}
	if (rc) {
		rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (!*sent)
		goto out;
	if ((rc = s->o->sign(s->o->sign_ctx, cert.data, cert.len, &cert, s->err)))
		goto out;
	rc = pw_pkt_writef(b, "push-cert%c%s", '\0', caps);
	for (p = cert.data, end = cert.data + cert.len; !rc && p < end;) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

		rc = len > PW_PKT_DATA_MAX ? PW_ETOOBIG : pw_pkt_write(b, p, len);
		p += len;
	}
	if (!rc)
		rc = pw_pkt_writef(b, "push-cert-end\n");
	if (rc)
		rc = pw_error_set(s->err, rc, "cannot build the push certificate: %s",
		                  rc == PW_ETOOBIG ? "a line is too long" : pw_strerror(rc));
out:
	pw_buf_free(&cert);
	return rc;
}

static int send_request(struct ps *s)
{
	struct pw_buf b = PW_BUF_INIT, caps = PW_BUF_INIT;
	char o[PW_MAX_HEXSZ + 1], n[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0, first = 1, need_pack = 0;

	if (s->server_report_v2)
		rc |= pw_buf_adds(&caps, " report-status-v2");
	else if (s->server_report)
		rc |= pw_buf_adds(&caps, " report-status");
	if (s->server_sideband)
		rc |= pw_buf_adds(&caps, " side-band-64k");
	if (s->o->quiet || !s->o->progress)
		rc |= pw_buf_adds(&caps, " quiet");
	if (s->o->atomic)
		rc |= pw_buf_adds(&caps, " atomic");
	if (s->o->nr_push_options)
		rc |= pw_buf_adds(&caps, " push-options");
	if (s->adv.algo_advertised)
		rc |= pw_buf_addf(&caps, " object-format=%s", s->algo->name);
	rc |= pw_buf_adds(&caps, " agent=packwire/" PW_VERSION);
	if (rc) {
		rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (s->nonce && !s->o->dry_run) {
		int sent;

		if ((rc = add_push_cert(s, &b, caps.data, &sent)))
			goto out;
		first = !sent;
	}
	for (i = 0; i < s->res->nr && !rc; i++) {
		struct pw_push_ref *r = &s->res->refs[i];

		if (r->status != PW_PUSH_PENDING)
			continue;
		if (s->o->dry_run) {
			r->status = PW_PUSH_OK;
			continue;
		}
		if (s->nonce) { /* in the certificate */
			if (!r->is_delete)
				need_pack = 1;
			continue;
		}
		pw_oid_to_hex(&r->old_oid, o);
		pw_oid_to_hex(&r->new_oid, n);
		if (first)
			rc = pw_pkt_writef(&b, "%s %s %s%c%s", o, n, r->dst, '\0', caps.data);
		else
			rc = pw_pkt_writef(&b, "%s %s %s\n", o, n, r->dst);
		first = 0;
		if (!r->is_delete)
			need_pack = 1;
	}
	if (!rc)
		rc = pw_pkt_flush(&b);
	if (!rc && !first && s->o->nr_push_options) {
		for (i = 0; i < s->o->nr_push_options && !rc; i++)
			rc = pw_pkt_writef(&b, "%s\n", s->o->push_options[i]);
		if (!rc)
			rc = pw_pkt_flush(&b);
	}
	if (rc) {
		rc = pw_error_set(s->err, rc, "cannot build the push request");
		goto out;
	}
	if ((rc = send_out(s, &b)))
		goto out;
	s->res->sent = !first;
	if (need_pack)
		rc = send_pack_data(s);
out:
	if (s->conn->stateless) {
		/* one POST: the commands and the pack */
		struct pw_error e;
		int rc2 = pw_conn_end_request(s->conn, rc ? &e : s->err);

		if (!rc)
			rc = rc2;
	}
	pw_conn_close_write(s->conn);
	pw_buf_free(&b);
	pw_buf_free(&caps);
	return rc;
}

/* ---- the report ---------------------------------------------------------- */

/* "option <key> [<value>]" after an "ok" (report-status-v2): each "ok"
 * starts a report of its ref, which the options fill in; as Git, unknown
 * keys and options without an "ok" before them are ignored. */
static int report_option(struct ps *s, const char *p, size_t len)
{
	struct pw_push_report *rep, *v;
	const char *val = memchr(p, ' ', len);
	size_t klen = val ? (size_t)(val - p) : len, vlen = val ? len - klen - 1 : 0;
	struct pw_oid oid;

	if (!s->hint || !s->new_report)
		return 0;
	/* a server repeating "ok" lines does not make us hold without end */
	if (s->new_report == 1 && s->hint->nr_reports >= 1024)
		return pw_error_set(s->err, PW_EPROTO,
		                    "protocol error: more than 1024 reports for '%.200s'",
		                    s->hint->dst);
	if (s->new_report == 1) {
		v = realloc(s->hint->reports, (s->hint->nr_reports + 1) * sizeof(*v));
		if (!v)
			return pw_error_set(s->err, PW_ENOMEM, "out of memory");
		s->hint->reports = v;
		memset(&v[s->hint->nr_reports++], 0, sizeof(*v));
		s->new_report = 2;
	}
	rep = &s->hint->reports[s->hint->nr_reports - 1];
	if (val)
		val++;
	if (klen == 7 && !memcmp(p, "refname", 7) && val) {
		free(rep->ref_name);
		if (!(rep->ref_name = strndup(val, vlen)))
			return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	} else if (klen == 7 && (!memcmp(p, "old-oid", 7) || !memcmp(p, "new-oid", 7)) && val &&
	           !pw_oid_from_hex(&oid, val, vlen, s->algo)) {
		if (p[0] == 'o')
			rep->old_oid = oid;
		else
			rep->new_oid = oid;
	} else if (klen == 13 && !memcmp(p, "forced-update", 13)) {
		rep->forced_update = 1;
	}
	return 0;
}

static int report_line(struct ps *s, const char *p, size_t len)
{
	struct pw_push_ref *r;
	char name[4096];
	const char *sp;

	if (len && p[len - 1] == '\n')
		len--;
	if (len >= 7 && !memcmp(p, "unpack ", 7)) {
		if (!(len == 9 && !memcmp(p + 7, "ok", 2))) {
			free(s->res->unpack_error);
			s->res->unpack_error = strndup(p + 7, len - 7);
		}
		return 0;
	}
	if (len >= 7 && !memcmp(p, "option ", 7))
		return report_option(s, p + 7, len - 7);
	s->hint = NULL;
	s->new_report = 0;
	if (len < 4 || (memcmp(p, "ok ", 3) && memcmp(p, "ng ", 3)))
		return pw_error_set(s->err, PW_EPROTO,
		                    "protocol error: unexpected report line '%.*s'",
		                    (int)(len > 200 ? 200 : len), p);
	sp = p[0] == 'n' ? memchr(p + 3, ' ', len - 3) : NULL;
	snprintf(name, sizeof(name), "%.*s", (int)((sp ? (size_t)(sp - p) : len) - 3), p + 3);
	r = find_update(s, name);
	if (!r)
		return 0; /* Git warns and goes on */
	s->hint = r;
	if (p[0] == 'o') {
		r->status = PW_PUSH_OK;
		s->new_report = 1;
	} else {
		r->status = PW_PUSH_REMOTE_REJECT;
		free(r->remote_msg);
		r->remote_msg = sp ? strndup(sp + 1, len - (size_t)(sp + 1 - p)) : NULL;
	}
	return 0;
}

int pw_client__push_report_line(struct pw_push_result *res, const struct pw_hash_algo *algo,
                                struct pw_push_report_state *st, const char *line, size_t len,
                                struct pw_error *err)
{
	struct ps s;
	int rc;

	memset(&s, 0, sizeof(s));
	s.algo = algo;
	s.err = err;
	s.res = res;
	s.hint = st->hint;
	s.new_report = st->new_report;
	rc = report_line(&s, line, len);
	st->hint = s.hint;
	st->new_report = s.new_report;
	return rc;
}

static int read_report(struct ps *s)
{
	struct pw_buf band1 = PW_BUF_INIT;
	const struct pw_report *rep = &s->o->report;
	struct pw_pkt pkt;
	int rc = 0;

	/* band payloads keep their LF: the caller needs the line ends */
	s->rd.flags &= ~(unsigned)PW_PKT_READ_CHOMP;
	for (;;) {
		if ((rc = read_pkt(s, &pkt)))
			break;
		if (pkt.kind == PW_PKT_EOF) {
			if (!s->sideband)
				rc = pw_error_set(s->err, PW_EPROTO,
				                  "the remote end hung up before its report");
			break;
		}
		if (pkt.kind == PW_PKT_FLUSH) {
			if (!s->sideband)
				break;
			break;
		}
		if (pkt.kind != PW_PKT_DATA)
			continue;
		if (s->sideband) {
			struct pw_str payload;
			int band;

			if ((rc = pw_sideband_demux(&pkt, &band, &payload, s->err)))
				break;
			if (band == PW_BAND_DATA) {
				if (pw_buf_add(&band1, payload.p, payload.len)) {
					rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
					break;
				}
			} else if (band == PW_BAND_PROGRESS) {
				if (rep->remote)
					rep->remote(rep->data, payload.p, payload.len);
			} else {
				rc = pw_error_set(
				        s->err, PW_ERROR, "remote error: %.*s",
				        (int)(payload.len && payload.p[payload.len - 1] == '\n'
				                      ? payload.len - 1
				                      : payload.len),
				        payload.p);
				break;
			}
		} else {
			struct pw_str m;

			if (pw_pkt_is_err(&pkt, &m)) {
				rc = pw_error_set(s->err, PW_ERROR, "remote error: %.*s",
				                  (int)m.len, m.p);
				break;
			}
			if ((rc = report_line(s, pkt.data, pkt.len)))
				break;
		}
	}
	if (rep->remote)
		rep->remote(rep->data, NULL, 0);
	if (!rc && s->sideband) {
		size_t pos = 0, used;

		while (pos < band1.len) {
			struct pw_error e;

			if (pw_pkt_decode((const uint8_t *)band1.data + pos, band1.len - pos, &pkt,
			                  &used, &e)) {
				rc = pw_error_set(s->err, PW_EPROTO,
				                  "protocol error: bad report: %s", e.msg);
				break;
			}
			pos += used;
			if (pkt.kind == PW_PKT_FLUSH)
				break;
			if (pkt.kind == PW_PKT_DATA && (rc = report_line(s, pkt.data, pkt.len)))
				break;
		}
	}
	pw_buf_free(&band1);
	return rc;
}

/* ---- tracking refs ------------------------------------------------------- */

struct track_ctx {
	struct ps *s;
	struct pw_push_ref *r;
};

static int track_one(const struct pw_config_entry *e, void *data)
{
	struct track_ctx *t = data;
	const char *v = e->value, *colon, *star, *dstar;
	char pre[1024], suf[1024], dpre[1024], dsuf[1024], mapped[4096];
	const char *name = t->r->dst;
	size_t nl = strlen(name);
	struct pw_ref_tx *tx = NULL;

	if (!v)
		return 0;
	if (*v == '+')
		v++;
	colon = strchr(v, ':');
	if (!colon)
		return 0;
	star = memchr(v, '*', (size_t)(colon - v));
	dstar = strchr(colon + 1, '*');
	if (!star || !dstar) {
		if ((size_t)(colon - v) != nl || memcmp(v, name, nl))
			return 0;
		snprintf(mapped, sizeof(mapped), "%s", colon + 1);
	} else {
		snprintf(pre, sizeof(pre), "%.*s", (int)(star - v), v);
		snprintf(suf, sizeof(suf), "%.*s", (int)(colon - star - 1), star + 1);
		snprintf(dpre, sizeof(dpre), "%.*s", (int)(dstar - colon - 1), colon + 1);
		snprintf(dsuf, sizeof(dsuf), "%s", dstar + 1);
		if (nl < strlen(pre) + strlen(suf) || strncmp(name, pre, strlen(pre)) ||
		    strcmp(name + nl - strlen(suf), suf))
			return 0;
		snprintf(mapped, sizeof(mapped), "%s%.*s%s", dpre,
		         (int)(nl - strlen(pre) - strlen(suf)), name + strlen(pre), dsuf);
	}
	if (!pw_refname_is_storable(mapped))
		return 0;
	free(t->r->tracking);
	t->r->tracking = strdup(mapped); /* only to be shown: may stay NULL */
	if (pw_ref_tx_new(&tx, t->s->repo))
		return 0;
	if (t->r->is_delete)
		pw_ref_tx_delete(tx, mapped, NULL);
	else
		pw_ref_tx_update(tx, mapped, &t->r->new_oid, NULL, 0);
	if (pw_ref_tx_commit(tx) && t->s->o->report.warning) {
		struct pw_buf msg = PW_BUF_INIT;

		if (!pw_buf_addf(&msg, "could not update %s: %s", mapped, pw_ref_tx_error(tx)->msg))
			t->s->o->report.warning(t->s->o->report.data, msg.data);
		pw_buf_free(&msg);
	}
	pw_ref_tx_free(tx);
	return 0;
}

static void update_tracking(struct ps *s)
{
	char key[512];
	size_t i;

	if (!s->res->remote_name || s->o->dry_run)
		return;
	snprintf(key, sizeof(key), "remote.%s.fetch", s->res->remote_name);
	for (i = 0; i < s->res->nr; i++) {
		struct pw_push_ref *r = &s->res->refs[i];
		struct track_ctx t = {s, r};

		if (r->status != PW_PUSH_OK && r->status != PW_PUSH_UPTODATE)
			continue;
		pw_config_get_all(pw_repo_config(s->repo), key, track_one, &t);
	}
}

/* ---- the whole push ------------------------------------------------------ */

static int resolve_remote(struct ps *s, const char *remote)
{
	char key[512];
	const char *url;
	char *branch;

	if (!remote) {
		branch = current_branch(s->repo);
		if (branch) {
			remote = cfgf(s, key, sizeof(key), "branch.%s.pushRemote", branch + 11);
			if (!remote)
				remote = cfg(s, "remote.pushDefault");
			if (!remote)
				remote = cfgf(s, key, sizeof(key), "branch.%s.remote", branch + 11);
			free(branch);
		}
		if (!remote)
			remote = cfg(s, "remote.pushDefault");
		if (!remote)
			remote = "origin";
	}
	if (!strchr(remote, '/') && !strchr(remote, ':') && strcmp(remote, ".") &&
	    strcmp(remote, "..")) {
		url = cfgf(s, key, sizeof(key), "remote.%s.pushurl", remote);
		if (!url)
			url = cfgf(s, key, sizeof(key), "remote.%s.url", remote);
		if (url) {
			s->res->remote_name = strdup(remote);
			s->res->url = strdup(url);
			return s->res->remote_name && s->res->url ? 0 : PW_ENOMEM;
		}
		if (access(remote, F_OK))
			return pw_error_set(s->err, PW_ENOTFOUND,
			                    "'%s' does not appear to be a git repository", remote);
	}
	s->res->url = strdup(remote);
	return s->res->url ? 0 : PW_ENOMEM;
}

static int read_advertisement(struct ps *s)
{
	struct pw_pkt pkt;
	int rc;

	for (;;) {
		if ((rc = read_pkt(s, &pkt)))
			return rc;
		if (pkt.kind == PW_PKT_EOF)
			return pw_error_set(s->err, PW_EPROTO,
			                    "Could not read from remote repository (the remote end "
			                    "hung up before its ref advertisement)");
		rc = pw_adv_feed_v0(&s->adv, &pkt, s->err);
		if (rc == 0)
			return 0;
		if (rc != PW_EMORE)
			return rc;
	}
}

/* Start receive-pack on the remote and read its advertisement. */
static int connect_remote(struct ps *s)
{
	const struct pw_push_opts *opts = s->o;
	struct pw_transport_opts to;
	char key[512];
	int rc;

	memset(&to, 0, sizeof(to));
	to.service = "git-receive-pack";
	to.command = opts->receive_pack;
	if (!to.command && s->res->remote_name)
		to.command =
		        cfgf(s, key, sizeof(key), "remote.%s.receivepack", s->res->remote_name);
	to.protocol_version = 0;
	to.quiet = opts->quiet;
	to.ssh = opts->ssh;
	to.git_proxy = opts->git_proxy;
	to.git_proxy_config = pw_repo_config(s->repo);
	to.http_env = opts->http_env;
	to.protocol = opts->protocol;
	to.git_dir = pw_repo_git_dir(s->repo);
	to.remote_name = s->res->remote_name;
	if ((rc = pw_transport_connect(&s->conn, s->res->url, &to, s->err)))
		return rc;
	if (s->conn->in_fd < 0 && pw_dumb_is(s->conn))
		return pw_dav_open(&s->dav, s->conn, s->algo, &s->adv, s->err);
	if (s->conn->in_fd < 0) {
		s->helper = pw_transport__take_helper(s->conn);
		if (!s->helper)
			return pw_error_set(s->err, PW_EUNSUPPORTED,
			                    "remote helper for '%s' cannot push", s->res->url);
		return pw_client__helper_push_list(s->helper, s->repo, s->algo, &s->adv, s->err);
	}
	if ((rc = pw_pkt_reader_init(&s->rd, s->conn->in_fd, PW_PKT_READ_CHOMP | PW_PKT_READ_ERR)))
		return pw_error_set(s->err, rc, "out of memory");
	s->rd_init = 1;
	return read_advertisement(s);
}

/* The seed patch's rule: the server must support our algorithm (no
 * object-format capability means sha1 only) before anything is sent; a
 * refusal ends the session with a flush. */
static int check_algo(struct ps *s)
{
	struct pw_buf b = PW_BUF_INIT;

	if (s->adv.algo_advertised
	            ? pw_object_format_caps_supports(s->adv.caps, s->adv.caps_len, s->algo)
	            : !((s->adv.algo && s->adv.algo != s->algo) ||
	                (!s->adv.algo && s->algo != &pw_hash_sha1)))
		return 0;
	if (!s->conn->stateless && !pw_pkt_flush(&b))
		pw_write_full(s->conn->out_fd, b.data, b.len, NULL);
	pw_buf_free(&b);
	return pw_error_set(s->err, PW_EUNSUPPORTED,
	                    "the receiving end does not support this repository's hash "
	                    "algorithm");
}

/* The server's capabilities, and whether the options asked for are there. */
static int read_caps(struct ps *s)
{
	const char *caps = s->adv.caps;
	size_t clen = s->adv.caps_len;

	s->server_report = pw_caps_has(caps, clen, "report-status");
	s->server_report_v2 = pw_caps_has(caps, clen, "report-status-v2");
	s->server_sideband = pw_caps_has(caps, clen, "side-band-64k");
	s->server_delete = pw_caps_has(caps, clen, "delete-refs");
	s->server_atomic = pw_caps_has(caps, clen, "atomic");
	s->server_options = pw_caps_has(caps, clen, "push-options");
	s->server_ofs = pw_caps_has(caps, clen, "ofs-delta");
	s->sideband = s->server_sideband;
	if (s->dav)
		s->server_delete = 1; /* DELETE */
	if (s->o->atomic && !s->server_atomic)
		return pw_error_set(s->err, PW_EUNSUPPORTED,
		                    "the receiving end does not support --atomic push");
	if (s->o->nr_push_options && !s->server_options)
		return pw_error_set(s->err, PW_EUNSUPPORTED,
		                    "the receiving end does not support push options");
	if (s->o->push_cert) {
		struct pw_str v = {0};
		size_t i;

		if (pw_caps_get(caps, clen, "push-cert", &v) || !v.p) {
			if (s->o->push_cert == 2)
				return pw_error_set(
				        s->err, PW_EUNSUPPORTED,
				        "the receiving end does not support --signed push");
			if (s->o->report.warning)
				s->o->report.warning(
				        s->o->report.data,
				        "not sending a push certificate since the "
				        "receiving end does not support --signed push");
			return 0;
		}
		/* it goes into a line of the certificate: printable, no spaces */
		for (i = 0; i < v.len; i++)
			if (v.p[i] <= ' ' || v.p[i] > '~')
				return pw_error_set(
				        s->err, PW_EPROTO,
				        "the receiving end asked to sign an invalid nonce "
				        "<%.*s>",
				        (int)(v.len > 64 ? 64 : v.len), v.p);
		if (!s->o->sign || !s->o->cert_pusher)
			return pw_error_set(s->err, PW_EINVAL,
			                    "a signed push needs a signer and a pusher");
		if (!(s->nonce = strndup(v.p, v.len)))
			return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	}
	return 0;
}

/* push.negotiate: what of the pushed history does the server have (its
 * upload-pack says, through a v2 fetch with wait-for-done)? A failure is
 * told and the push goes on without. */
static void negotiate(struct ps *s)
{
	struct pw_client_opts co;
	struct pw_session *ss = NULL;
	struct pw_oid *tips;
	struct pw_error e = {0};
	size_t i, nr = 0;
	int rc;

	if (!(tips = calloc(s->res->nr ? s->res->nr : 1, sizeof(*tips))))
		return;
	for (i = 0; i < s->res->nr; i++)
		if (s->res->refs[i].status == PW_PUSH_PENDING && !s->res->refs[i].is_delete)
			tips[nr++] = s->res->refs[i].new_oid;
	memset(&co, 0, sizeof(co));
	co.protocol_version = s->o->negotiate_protocol;
	co.quiet = 1;
	co.ssh = s->o->ssh;
	co.git_proxy = s->o->git_proxy;
	co.config = pw_repo_config(s->repo);
	co.http_env = s->o->http_env;
	co.protocol = s->o->protocol;
	co.git_dir = pw_repo_git_dir(s->repo);
	co.trace_packet = s->o->trace_packet;
	co.trace_packet_ctx = s->o->trace_packet_ctx;
	rc = nr ? pw_session_open(&ss, s->res->url, &co, &e) : 0;
	if (!rc && nr)
		rc = pw_session_negotiate(ss, s->repo, tips, nr, &s->commons, &s->nr_commons, &e);
	pw_session_close(ss, NULL);
	free(tips);
	if (rc && s->o->report.warning) {
		s->o->report.warning(s->o->report.data, e.msg);
		s->o->report.warning(s->o->report.data,
		                     "push negotiation failed; proceeding anyway with push");
	}
}

/* Send the commands and the pack, read the report; every ref gets its
 * outcome. */
static int exchange(struct ps *s)
{
	struct pw_push_result *res = s->res;
	struct pw_error e2;
	size_t i;
	int rc, rc2;

	if (s->dav) {
		/* WebDAV: no commands and no report; dav-push.c sets the outcomes */
		if (!(rc = pw_dav_push(s->dav, s->repo, s->odb, s->o, res, s->err)))
			update_tracking(s);
		return rc;
	}

	rc = send_request(s);
	if (rc && !res->sent)
		return rc;
	/* even when sending the pack failed, the server may say why */
	e2 = *s->err;
	rc2 = read_report(s);
	if (rc2 && rc)
		*s->err = e2;
	else if (rc2)
		rc = rc2;
	else if (rc && res->unpack_error)
		rc = 0;
	if (!s->server_report)
		for (i = 0; i < res->nr; i++)
			if (res->refs[i].status == PW_PUSH_PENDING)
				res->refs[i].status = PW_PUSH_OK;
	for (i = 0; i < res->nr; i++)
		if (res->refs[i].status == PW_PUSH_PENDING)
			res->refs[i].status = PW_PUSH_NO_REPORT;
	if (!rc)
		update_tracking(s);
	return rc;
}

int pw_push(struct pw_repo *repo, const char *remote, const char *const *refspecs,
            size_t nr_refspecs, const struct pw_push_opts *opts, struct pw_push_result *res,
            struct pw_error *err)
{
	struct ps s;
	size_t i;
	int rc, any = 0;

	memset(res, 0, sizeof(*res));
	memset(&s, 0, sizeof(s));
	s.repo = repo;
	s.algo = pw_repo_algo(repo);
	s.o = opts;
	s.err = err;
	s.res = res;
	pw_adv_init(&s.adv);
	if ((rc = resolve_remote(&s, remote)))
		goto out;
	if ((rc = pw_odb_open(&s.odb, pw_repo_objects_dir(repo), s.algo, err)))
		goto out;
	if ((rc = connect_remote(&s)) || (rc = check_algo(&s)))
		goto out;
	if ((rc = read_caps(&s)) || (rc = build_updates(&s, refspecs, nr_refspecs)) ||
	    (rc = sort_updates(&s)) || (rc = decide(&s)))
		goto polite;
	if (!opts->no_verify && (rc = pw_push__pre_push(repo, opts, res, err)))
		goto polite;
	if (s.helper) {
		if (!(rc = pw_client__helper_push(s.helper, repo, opts, res, err)) &&
		    !opts->dry_run)
			update_tracking(&s);
		goto out;
	}
	for (i = 0; i < res->nr; i++)
		if (res->refs[i].status == PW_PUSH_PENDING)
			any = 1;
	if (!any || opts->dry_run) {
		if (opts->dry_run)
			for (i = 0; i < res->nr; i++)
				if (res->refs[i].status == PW_PUSH_PENDING)
					res->refs[i].status = PW_PUSH_OK;
		goto polite;
	}
	if (opts->negotiate)
		negotiate(&s);
	rc = exchange(&s);
	goto out;
polite:
	/* an atomic push that failed here ends without a flush, as send-pack
	 * ends it (the server then says the remote end hung up) */
	if (s.conn && s.conn->out_fd >= 0 && !s.conn->stateless && !res->atomic_failed_by) {
		struct pw_buf b = PW_BUF_INIT;
		struct pw_error e;

		if (!pw_pkt_flush(&b))
			pw_write_full(s.conn->out_fd, b.data, b.len, &e);
		pw_buf_free(&b);
		pw_conn_close_write(s.conn);
	}
	if (!rc)
		update_tracking(&s);
out:
	if (s.rd_init)
		pw_pkt_reader_free(&s.rd);
	pw_client__helper_end(s.helper);
	pw_dav_free(s.dav);
	if (s.conn) {
		struct pw_error e;
		int status = 0;

		pw_conn_finish(s.conn, &status, &e);
		pw_conn_free(s.conn);
	}
	pw_adv_free(&s.adv);
	free(s.nonce);
	free(s.commons);
	if (s.odb)
		pw_odb_free(s.odb);
	return rc;
}
