/* fetch into an existing repository: map the server's refs through the
 * refspecs, fetch what is missing, decide fast-forward / forced / rejected,
 * prune, and write every ref in one transaction plus FETCH_HEAD. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client-priv.h"
#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "util/fs.h"

struct fstate {
	struct pw_repo *repo;
	const struct pw_fetch_opts *o;
	struct pw_fetch_report *rep;
	struct pw_refspec *specs;
	size_t nr_specs;
	const char *remote_name;   /* NULL when a URL was given */
	char *merge_ref;           /* branch.<cur>.merge */
	size_t nr_named;           /* report entries the refspecs named */
	size_t nr_cli_specs;       /* specs[0..n) came from the command line */
	size_t opp_start, opp_end; /* entries in [start, end): tracking refs updated on the side */
	struct pw_error *err;
};

void pw_fetch_report_free(struct pw_fetch_report *rep)
{
	size_t i;

	for (i = 0; i < rep->nr; i++) {
		free(rep->v[i].remote_name);
		free(rep->v[i].local_name);
	}
	free(rep->v);
	free(rep->url);
	memset(rep, 0, sizeof(*rep));
}

static struct pw_ref_update *add_update(struct fstate *f, const char *remote, const char *local)
{
	struct pw_fetch_report *rep = f->rep;
	struct pw_ref_update *u;
	size_t i;

	if (local)
		for (i = 0; i < rep->nr; i++)
			if (rep->v[i].local_name && !strcmp(rep->v[i].local_name, local))
				return NULL; /* first mapping wins */
	if (rep->nr == rep->alloc) {
		size_t a = rep->alloc ? rep->alloc * 2 : 32;
		void *p = realloc(rep->v, a * sizeof(*rep->v));

		if (!p)
			return NULL;
		rep->v = p;
		rep->alloc = a;
	}
	u = &rep->v[rep->nr];
	memset(u, 0, sizeof(*u));
	u->remote_name = strdup(remote);
	u->local_name = local ? strdup(local) : NULL;
	if (!u->remote_name || (local && !u->local_name)) {
		free(u->remote_name);
		free(u->local_name);
		return NULL;
	}
	rep->nr++;
	return u;
}

static int add_spec(struct fstate *f, const char *spec)
{
	void *p = realloc(f->specs, (f->nr_specs + 1) * sizeof(*f->specs));
	int rc;

	if (!p)
		return pw_error_set(f->err, PW_ENOMEM, "out of memory");
	f->specs = p;
	if ((rc = pw_refspec_parse(&f->specs[f->nr_specs], spec, f->err)))
		return rc;
	f->nr_specs++;
	return 0;
}

static int cfg_spec(const struct pw_config_entry *e, void *data)
{
	return e->value ? add_spec(data, e->value) : 0;
}

static int excluded(struct fstate *f, const char *name)
{
	size_t i;

	for (i = 0; i < f->nr_specs; i++)
		if (f->specs[i].negative && pw_refspec_match(&f->specs[i], name, 0, NULL) == 1)
			return 1;
	return 0;
}

/* A local destination "x" without refs/ becomes refs/heads/x, as Git does for
 * a branch source. */
static char *full_dst(const char *dst, const char *src)
{
	char buf[1024];

	if (!strncmp(dst, "refs/", 5) || !strcmp(dst, "HEAD"))
		return strdup(dst);
	snprintf(buf, sizeof(buf), "%s/%s",
	         !strncmp(src, "refs/tags/", 10) ? "refs/tags" : "refs/heads", dst);
	return strdup(buf);
}

static int map_refs(struct fstate *f, const struct pw_adv *adv)
{
	size_t i, k;

	for (k = 0; k < f->nr_specs; k++) {
		const struct pw_refspec *r = &f->specs[k];

		if (r->negative)
			continue;
		for (i = 0; i < adv->nr; i++) {
			const struct pw_remote_ref *rr = &adv->refs[i];
			struct pw_ref_update *u;
			char *dst = NULL;
			int m;

			if (rr->unborn || excluded(f, rr->name))
				continue;
			if (r->glob) {
				m = pw_refspec_match(r, rr->name, 0, &dst);
			} else {
				m = !strcmp(r->src, rr->name) ||
				    (strncmp(r->src, "refs/", 5) &&
				     pw_refname_dwim_match(r->src, rr->name));
				if (m && r->dst)
					dst = full_dst(r->dst, rr->name);
			}
			if (m < 0)
				return pw_error_set(f->err, PW_ENOMEM, "out of memory");
			if (!m)
				continue;
			u = add_update(f, rr->name, dst);
			free(dst);
			if (u) {
				u->new_oid = rr->oid;
				u->status = u->local_name ? PW_UPD_UPTODATE : PW_UPD_FETCH_HEAD;
				/* force flag rides in for_merge's neighbour: keep the spec */
				u->for_merge = r->force ? 2 : 0;
			}
			if (!r->glob)
				break; /* a plain source names one ref */
		}
	}
	return 0;
}

/* A ref named on the command line must exist (as git: a configured refspec
 * that matches nothing is fine); an object id is asked for as such. */
static int check_named(struct fstate *f, const struct pw_adv *adv)
{
	const struct pw_hash_algo *algo = pw_repo_algo(f->repo);
	size_t i, k;

	for (k = 0; k < f->nr_cli_specs; k++) {
		const struct pw_refspec *r = &f->specs[k];
		struct pw_oid oid;
		int found = 0;

		if (r->negative || r->glob ||
		    (strlen(r->src) == algo->hexsz &&
		     !pw_oid_from_hex(&oid, r->src, strlen(r->src), algo)))
			continue;
		for (i = 0; i < adv->nr && !found; i++)
			found = !adv->refs[i].unborn &&
			        (!strcmp(r->src, adv->refs[i].name) ||
			         (strncmp(r->src, "refs/", 5) &&
			          pw_refname_dwim_match(r->src, adv->refs[i].name)));
		if (!found)
			return pw_error_set(f->err, PW_ENOTFOUND, "couldn't find remote ref %s",
			                    r->src);
	}
	return 0;
}

static int write_fetch_head(struct fstate *f)
{
	struct pw_buf b = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1];
	char *path, *url = strdup(f->rep->url);
	size_t i, ul;
	int pass, rc = 0;

	if (!url)
		return pw_error_set(f->err, PW_ENOMEM, "out of memory");
	/* as Git notes it: no trailing slashes or ".git" */
	ul = strlen(url);
	while (ul > 1 && url[ul - 1] == '/')
		url[--ul] = 0;
	if (ul > 4 && !strcmp(url + ul - 4, ".git"))
		url[ul - 4] = 0;

	for (pass = 0; pass < 2 && !rc; pass++)
		for (i = 0; i < f->rep->nr && !rc; i++) {
			const struct pw_ref_update *u = &f->rep->v[i];
			const char *n = u->remote_name, *kind = "";

			if (u->status == PW_UPD_DELETED || u->for_merge != (pass == 0) ||
			    (i >= f->opp_start && i < f->opp_end))
				continue;
			if (!strncmp(n, "refs/heads/", 11)) {
				kind = "branch ";
				n += 11;
			} else if (!strncmp(n, "refs/tags/", 10)) {
				kind = "tag ";
				n += 10;
			} else if (!strncmp(n, "refs/remotes/", 13)) {
				kind = "remote-tracking branch ";
				n += 13;
			}
			if (!strcmp(n, "HEAD"))
				rc = pw_buf_addf(&b, "%s\t%s\t%s\n",
				                 pw_oid_to_hex(&u->new_oid, hex),
				                 u->for_merge ? "" : "not-for-merge", url);
			else
				rc = pw_buf_addf(&b, "%s\t%s\t%s'%s' of %s\n",
				                 pw_oid_to_hex(&u->new_oid, hex),
				                 u->for_merge ? "" : "not-for-merge", kind, n, url);
		}
	free(url);
	if (rc) {
		pw_buf_free(&b);
		return pw_error_set(f->err, PW_ENOMEM, "out of memory");
	}
	path = pw_path_join(pw_repo_git_dir(f->repo), "FETCH_HEAD");
	if (!path) {
		pw_buf_free(&b);
		return pw_error_set(f->err, PW_ENOMEM, "out of memory");
	}
	rc = pw_fs_write_atomic(path, b.data, b.len, f->err);
	free(path);
	pw_buf_free(&b);
	return rc;
}

struct prune_ctx {
	struct fstate *f;
	const struct pw_adv *adv;
	int rc;
};

static int prune_one(const struct pw_ref *ref, void *data)
{
	struct prune_ctx *p = data;
	struct fstate *f = p->f;
	size_t k;

	if (ref->symref_target)
		return 0;
	for (k = 0; k < f->nr_specs; k++) {
		const struct pw_refspec *r = &f->specs[k];
		char *src = NULL;
		int m;

		if (r->negative || !r->dst)
			continue;
		m = pw_refspec_match(r, ref->name, 1, &src);
		if (m < 0)
			return p->rc = PW_ENOMEM;
		if (!m) {
			continue;
		}
		if (src && !pw_adv_find(p->adv, src) && !excluded(f, src)) {
			struct pw_ref_update *u = add_update(f, "(none)", ref->name);

			if (u) {
				u->old_oid = ref->oid;
				pw_oid_zero(&u->new_oid, pw_repo_algo(f->repo));
				u->status = PW_UPD_DELETED;
			}
		}
		free(src);
		break;
	}
	return 0;
}

/* "git fetch origin main" also moves refs/remotes/origin/main: a ref named on
 * the command line is mapped through the remote's configured refspecs too,
 * and those tracking refs are updated (not written to FETCH_HEAD). */
static int add_opportunistic(struct fstate *f)
{
	const struct pw_config *cfg = pw_repo_config(f->repo);
	struct pw_refspec *saved = f->specs;
	size_t saved_nr = f->nr_specs, i, k, nr = f->nr_named;
	char key[1024];
	int rc;

	f->opp_start = f->rep->nr;
	f->specs = NULL;
	f->nr_specs = 0;
	snprintf(key, sizeof(key), "remote.%s.fetch", f->remote_name);
	rc = pw_config_get_all(cfg, key, cfg_spec, f);
	if (rc == PW_ENOTFOUND)
		rc = 0;
	for (i = 0; i < nr && !rc; i++) {
		struct pw_ref_update *n;
		const char *remote = f->rep->v[i].remote_name;
		struct pw_oid oid = f->rep->v[i].new_oid, cur;

		for (k = 0; k < f->nr_specs && !rc; k++) {
			const struct pw_refspec *r = &f->specs[k];
			char *dst = NULL, *sym = NULL;
			int m;

			if (r->negative || !r->dst || excluded(f, remote))
				continue;
			if (r->glob)
				m = pw_refspec_match(r, remote, 0, &dst);
			else if ((m = !strcmp(r->src, remote)))
				dst = full_dst(r->dst, remote);
			if (m < 0 || (m && !dst)) {
				rc = pw_error_set(f->err, PW_ENOMEM, "out of memory");
				break;
			}
			if (!m)
				continue;
			n = add_update(f, remote, dst);
			if (n) {
				n->new_oid = oid;
				n->for_merge = r->force ? 2 : 0;
				pw_oid_zero(&n->old_oid, pw_repo_algo(f->repo));
				if (!pw_refs_read(f->repo, dst, &cur, &sym) && !sym)
					n->old_oid = cur;
				free(sym);
			}
			free(dst);
			break;
		}
	}
	for (k = 0; k < f->nr_specs; k++)
		pw_refspec_free(&f->specs[k]);
	free(f->specs);
	f->specs = saved;
	f->nr_specs = saved_nr;
	f->opp_end = f->rep->nr;
	return rc;
}

static int cmp_oid(const void *a, const void *b)
{
	return pw_oid_cmp(a, b);
}

/* Packs from a promisor remote get a .promisor file beside them: it tells
 * git fsck and git's lazy fetches that objects they refer to may be missing
 * on purpose (body: the refs fetched, informational). */
int pw_fetch__mark_promisor(const struct pw_fetch_result *res, const char *body, size_t len,
                            struct pw_error *err)
{
	char path[sizeof(res->pack_path) + 16];
	size_t n = strlen(res->pack_path);

	if (!res->pack_path[0] || n < 5 || strcmp(res->pack_path + n - 5, ".pack"))
		return 0;
	snprintf(path, sizeof(path), "%.*s.promisor", (int)(n - 5), res->pack_path);
	return pw_fs_write_atomic(path, body, len, err);
}

/* Which remote: the one named, else the current branch's, else "origin"; a
 * name without remote.<name>.url is taken as a URL. Also notes
 * branch.<cur>.merge. Sets rep->url. */
static int pick_remote(struct fstate *f, const char **url)
{
	const struct pw_config *cfg = pw_repo_config(f->repo);
	const char *name = f->o->remote;
	char key[1024], *cur = NULL;
	struct pw_oid tmp;

	*url = NULL;
	if (pw_refs_resolve(f->repo, "HEAD", &tmp, &cur) == 0 || cur) {
		if (cur && !strncmp(cur, "refs/heads/", 11)) {
			const char *v;

			snprintf(key, sizeof(key), "branch.%s.remote", cur + 11);
			if (!name && !pw_config_get_string(cfg, key, &v, NULL) && v)
				name = v;
			snprintf(key, sizeof(key), "branch.%s.merge", cur + 11);
			if (!pw_config_get_string(cfg, key, &v, NULL) && v)
				f->merge_ref = strdup(v);
		}
	}
	free(cur);
	if (!name)
		name = "origin";
	snprintf(key, sizeof(key), "remote.%s.url", name);
	if (!pw_config_get_string(cfg, key, url, NULL) && *url) {
		f->remote_name = name;
	} else if (f->o->remote) {
		*url = f->o->remote;
	} else {
		return pw_error_set(f->err, PW_ENOTFOUND,
		                    "No remote repository specified.  Please, specify either a URL "
		                    "or a remote name from which new revisions should be fetched.");
	}
	f->rep->url = strdup(*url);
	return f->rep->url ? 0 : pw_error_set(f->err, PW_ENOMEM, "out of memory");
}

/* The refspecs: the command line's, else the remote's, else HEAD; plus
 * --tags. *follow_tags: may tags be followed (as git: only when something
 * is stored into a ref; "git fetch origin main" writes FETCH_HEAD alone). */
static int collect_specs(struct fstate *f, int *follow_tags)
{
	const struct pw_fetch_opts *o = f->o;
	char key[1024];
	size_t i;
	int rc;

	if (o->refspecs && o->refspecs[0]) {
		for (i = 0; o->refspecs[i]; i++)
			if ((rc = add_spec(f, o->refspecs[i])))
				return rc;
		f->nr_cli_specs = f->nr_specs;
	} else if (f->remote_name) {
		snprintf(key, sizeof(key), "remote.%s.fetch", f->remote_name);
		rc = pw_config_get_all(pw_repo_config(f->repo), key, cfg_spec, f);
		if (rc && rc != PW_ENOTFOUND)
			return rc;
	}
	if (!f->nr_specs && (rc = add_spec(f, "HEAD")))
		return rc;
	if (o->tags && (rc = add_spec(f, "+refs/tags/*:refs/tags/*")))
		return rc;
	*follow_tags = 0;
	for (i = 0; i < f->nr_specs; i++)
		if (!f->specs[i].negative && f->specs[i].dst)
			*follow_tags = !o->tags && !o->no_tags;
	return 0;
}

/* Ask the server for the refs the refspecs can match (v2 ls-refs prefixes). */
static int list_remote_refs(struct fstate *f, struct pw_session *s, int follow_tags,
                            const struct pw_adv **adv)
{
	const char **prefixes = calloc(f->nr_specs * 6 + 3, sizeof(*prefixes));
	char(*bufs)[1024] = calloc(64, sizeof(*bufs));
	size_t i, np = 0;
	int rc;

	if (!prefixes || !bufs) {
		free(prefixes);
		free(bufs);
		return pw_error_set(f->err, PW_ENOMEM, "out of memory");
	}
	for (i = 0; i < f->nr_specs; i++) {
		const struct pw_refspec *r = &f->specs[i];

		if (r->negative || np >= 60)
			continue;
		if (r->glob) {
			size_t n = (size_t)(strchr(r->src, '*') - r->src);

			snprintf(bufs[np], sizeof(bufs[np]), "%.*s", (int)n, r->src);
			prefixes[np] = bufs[np];
			np++;
		} else {
			prefixes[np++] = r->src;
			if (strncmp(r->src, "refs/", 5)) {
				snprintf(bufs[np], sizeof(bufs[np]), "refs/%s", r->src);
				prefixes[np] = bufs[np];
				np++;
				snprintf(bufs[np], sizeof(bufs[np]), "refs/tags/%s", r->src);
				prefixes[np] = bufs[np];
				np++;
				snprintf(bufs[np], sizeof(bufs[np]), "refs/heads/%s", r->src);
				prefixes[np] = bufs[np];
				np++;
			}
		}
	}
	if (follow_tags)
		prefixes[np++] = "refs/tags/";
	rc = pw_session_list_refs(s, prefixes, PW_LSREFS_PEEL | PW_LSREFS_SYMREFS, adv, f->err);
	free(prefixes);
	free(bufs);
	return rc;
}

/* The current values of the local refs, and what to ask for: the mapped
 * refs we lack (all of them when deepening) and annotated tags of commits
 * we already have (include-tag only brings tags of what the pack carries).
 * *wants is sorted and unique. */
static int collect_wants(struct fstate *f, const struct pw_adv *adv, struct pw_odb *odb,
                         int follow_tags, struct pw_oid **wants, size_t *nr)
{
	struct pw_fetch_report *rep = f->rep;
	struct pw_repo *repo = f->repo;
	size_t i, nw = 0;

	*wants = calloc(rep->nr + adv->nr + 1, sizeof(**wants));
	if (!*wants)
		return pw_error_set(f->err, PW_ENOMEM, "out of memory");
	for (i = 0; i < rep->nr; i++) {
		struct pw_ref_update *u = &rep->v[i];
		struct pw_oid cur;
		char *sym = NULL;

		pw_oid_zero(&u->old_oid, pw_repo_algo(repo));
		if (u->local_name && !pw_refs_read(repo, u->local_name, &cur, &sym) && !sym)
			u->old_oid = cur;
		free(sym);
		/* deepening asks again for what we have: the server cuts anew */
		if (f->o->depth || f->o->deepen_since ||
		    (f->o->deepen_not && f->o->deepen_not[0]) || !pw_odb_exists(odb, &u->new_oid))
			(*wants)[nw++] = u->new_oid;
	}
	for (i = 0; follow_tags && i < adv->nr; i++) {
		const struct pw_remote_ref *r = &adv->refs[i];
		struct pw_oid cur;
		char *sym = NULL;

		if (strncmp(r->name, "refs/tags/", 10) || !r->has_peeled || excluded(f, r->name) ||
		    pw_odb_exists(odb, &r->oid) || !pw_odb_exists(odb, &r->peeled))
			continue;
		if (!pw_refs_read(repo, r->name, &cur, &sym)) {
			free(sym);
			continue; /* never clobber tags we have when following */
		}
		(*wants)[nw++] = r->oid;
	}
	if (nw) {
		size_t k, j;

		qsort(*wants, nw, sizeof(**wants), cmp_oid);
		for (k = 0, j = 0; k < nw; k++)
			if (!j || !pw_oid_equal(&(*wants)[j - 1], &(*wants)[k]))
				(*wants)[j++] = (*wants)[k];
		nw = j;
	}
	*nr = nw;
	return 0;
}

/* A promisor remote (partial clone) is fetched with its filter, as git
 * does. 1 when the remote is one (*filter may be set), else 0. */
static int promisor_filter(const struct fstate *f, const char **filter)
{
	const struct pw_config *cfg = pw_repo_config(f->repo);
	const char *spec;
	char key[1024];
	int promisor = 0;

	if (!f->remote_name)
		return 0;
	snprintf(key, sizeof(key), "remote.%s.promisor", f->remote_name);
	if (pw_config_get_bool(cfg, key, &promisor, NULL) || !promisor)
		return 0;
	snprintf(key, sizeof(key), "remote.%s.partialclonefilter", f->remote_name);
	if (!pw_config_get_string(cfg, key, &spec, NULL) && spec && *spec)
		*filter = spec;
	return 1;
}

/* Tags that came along (auto-follow): the server's tags whose objects we
 * now have, and that we do not have yet. */
static int add_followed_tags(struct fstate *f, const struct pw_adv *adv, struct pw_odb **odb)
{
	struct pw_repo *repo = f->repo;
	size_t i;
	int rc;

	/* the odb opened before the pack arrived does not see it */
	pw_odb_free(*odb);
	*odb = NULL;
	if ((rc = pw_odb_open(odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), f->err)))
		return rc;
	for (i = 0; i < adv->nr; i++) {
		const struct pw_remote_ref *r = &adv->refs[i];
		struct pw_ref_update *u;
		struct pw_oid cur;
		char *sym = NULL;

		if (strncmp(r->name, "refs/tags/", 10) || excluded(f, r->name))
			continue;
		if (!pw_refs_read(repo, r->name, &cur, &sym)) {
			free(sym);
			continue; /* never clobber tags we have when following */
		}
		if (!pw_odb_exists(*odb, &r->oid) ||
		    (r->has_peeled && !pw_odb_exists(*odb, &r->peeled)))
			continue;
		u = add_update(f, r->name, r->name);
		if (u) {
			u->new_oid = r->oid;
			pw_oid_zero(&u->old_oid, pw_repo_algo(repo));
		}
	}
	return 0;
}

/* The status of every update (new, fast-forward, forced, rejected, ...)
 * and which ones are for-merge: the branch's upstream, or everything named
 * on the command line. */
static int decide_updates(struct fstate *f)
{
	struct pw_fetch_report *rep = f->rep;
	const struct pw_fetch_opts *o = f->o;
	size_t i;

	for (i = 0; i < rep->nr; i++) {
		struct pw_ref_update *u = &rep->v[i];
		int force = u->for_merge == 2;
		int is_tag = !strncmp(u->local_name ? u->local_name : "", "refs/tags/", 10);

		u->for_merge = 0;
		if (!u->local_name) {
			u->status = PW_UPD_FETCH_HEAD;
			continue;
		}
		if (pw_oid_is_zero(&u->old_oid))
			u->status = PW_UPD_NEW;
		else if (pw_oid_equal(&u->old_oid, &u->new_oid))
			u->status = PW_UPD_UPTODATE;
		else if (is_tag)
			u->status = force ? PW_UPD_TAG_FORCED : PW_UPD_CLOBBER;
		else {
			int anc = pw_commit_is_ancestor(f->repo, &u->old_oid, &u->new_oid, f->err);

			if (anc < 0)
				return anc;
			u->status = anc ? PW_UPD_FF : force ? PW_UPD_FORCED : PW_UPD_REJECTED;
		}
		if (u->status == PW_UPD_REJECTED || u->status == PW_UPD_CLOBBER)
			rep->rejected++;
	}
	for (i = 0; i < rep->nr; i++) {
		struct pw_ref_update *u = &rep->v[i];

		if (o->refspecs && o->refspecs[0])
			u->for_merge = i < f->nr_named;
		else if (f->merge_ref && !strcmp(u->remote_name, f->merge_ref))
			u->for_merge = 1;
		else if (!f->remote_name && !strcmp(u->remote_name, "HEAD"))
			u->for_merge = 1;
	}
	return 0;
}

/* Every accepted update (and prune) in one transaction. */
static int write_updates(struct fstate *f)
{
	struct pw_fetch_report *rep = f->rep;
	struct pw_ref_tx *tx = NULL;
	size_t i;
	int rc, tx_pending = 0;

	if ((rc = pw_ref_tx_new(&tx, f->repo)))
		return rc;
	for (i = 0; i < rep->nr && !rc; i++) {
		struct pw_ref_update *u = &rep->v[i];

		switch (u->status) {
		case PW_UPD_NEW:
		case PW_UPD_FF:
		case PW_UPD_FORCED:
		case PW_UPD_TAG_FORCED:
			rc = pw_ref_tx_update(tx, u->local_name, &u->new_oid, &u->old_oid, 0);
			tx_pending = 1;
			break;
		case PW_UPD_DELETED:
			rc = pw_ref_tx_delete(tx, u->local_name, &u->old_oid);
			tx_pending = 1;
			break;
		default:
			break;
		}
	}
	if (!rc && tx_pending)
		rc = pw_ref_tx_commit(tx);
	if (rc)
		pw_error_copy(f->err, pw_ref_tx_error(tx));
	pw_ref_tx_free(tx);
	return rc;
}

int pw_fetch(struct pw_repo *repo, const struct pw_fetch_opts *o, struct pw_fetch_report *rep,
             struct pw_error *err)
{
	const char *url = NULL;
	struct pw_session *s = NULL;
	struct pw_fetch_request req = {0};
	struct pw_fetch_result res = {0};
	struct pw_odb *odb = NULL;
	const struct pw_adv *adv;
	struct pw_oid *wants = NULL;
	struct fstate f;
	size_t i, nw = 0;
	int rc, follow_tags = 0, promisor;

	memset(rep, 0, sizeof(*rep));
	memset(&f, 0, sizeof(f));
	f.repo = repo;
	f.o = o;
	f.rep = rep;
	f.err = err;
	if ((rc = pick_remote(&f, &url)) || (rc = collect_specs(&f, &follow_tags)))
		goto out;
	/* connect and check the object format before touching anything */
	{
		struct pw_client_opts co = o->client;

		if (!co.remote_name)
			co.remote_name = f.remote_name; /* a remote helper's first argument */
		if ((rc = pw_session_open(&s, url, &co, err)))
			goto out;
	}
	rep->version = pw_session_version(s);
	rep->algo = pw_session_algo(s);
	if ((rc = pw_session_check_algo(s, pw_repo_algo(repo), err)) ||
	    (rc = list_remote_refs(&f, s, follow_tags, &adv)))
		goto out;
	if ((rc = map_refs(&f, adv)) || (rc = check_named(&f, adv)))
		goto out;
	f.nr_named = rep->nr;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err)) ||
	    (rc = collect_wants(&f, adv, odb, follow_tags, &wants, &nw)))
		goto out;
	req.wants = wants;
	req.nr_wants = nw;
	req.depth = o->depth;
	req.deepen_since = o->deepen_since;
	req.deepen_not = o->deepen_not;
	while (o->deepen_not && o->deepen_not[req.nr_deepen_not])
		req.nr_deepen_not++;
	req.include_tag = follow_tags;
	promisor = promisor_filter(&f, &req.filter);
	if (nw && (rc = pw_session_fetch(s, repo, &req, &res, err)))
		goto out;
	if (promisor && (rc = pw_fetch__mark_promisor(&res, "", 0, err)))
		goto rollback;
	if (follow_tags && (rc = add_followed_tags(&f, adv, &odb)))
		goto rollback;
	if (o->refspecs && o->refspecs[0] && f.remote_name && (rc = add_opportunistic(&f)))
		goto rollback;
	if ((rc = decide_updates(&f)))
		goto rollback;
	if (o->prune) {
		struct prune_ctx p = {&f, adv, 0};

		pw_refs_foreach(repo, NULL, 0, prune_one, &p);
		if (p.rc) {
			rc = pw_error_set(err, p.rc, "out of memory");
			goto rollback;
		}
	}
	if ((rc = write_updates(&f)))
		goto rollback;
	if ((rc = pw_fetch_result_write_shallow(repo, &res, err)))
		goto out;
	rc = write_fetch_head(&f);
	goto out;
rollback:
	pw_fetch_result_rollback(&res);
out:
	pw_fetch_result_free(&res);
	pw_odb_free(odb);
	free(wants);
	pw_session_close(s, NULL);
	for (i = 0; i < f.nr_specs; i++)
		pw_refspec_free(&f.specs[i]);
	free(f.specs);
	free(f.merge_ref);
	return rc;
}
