/* clone: create the repository, learn the object format from the server and
 * rewrite the repository format before any object arrives, fetch, write the
 * refs and config Git writes, check out. A failed clone leaves nothing. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-priv.h"
#include "hash/oidmap.h"
#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "util/fs.h"

static int dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int empty = 1;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

struct mapped {
	char *name; /* local ref */
	struct pw_oid oid;
	int is_tag;
};

struct clone_state {
	const struct pw_clone_opts *o;
	struct pw_repo *repo;
	struct pw_session *s;
	const struct pw_adv *adv;
	struct mapped *m;
	size_t nr, alloc;
	size_t *slots, cap; /* names of m hashed: index + 1, 0 = free */
	const char *origin;
	struct pw_error *err;
	int config_from_repo; /* o->client.config is the repository's: re-read it */
};

static size_t name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return (size_t)h;
}

/* The slot of name in c->slots: where it is, or the free one it would take. */
static size_t *name_slot(struct clone_state *c, const char *name)
{
	size_t i = name_hash(name) & (c->cap - 1);

	while (c->slots[i] && strcmp(c->m[c->slots[i] - 1].name, name))
		i = (i + 1) & (c->cap - 1);
	return &c->slots[i];
}

/* Room in the name table for one more (kept at most half full). */
static int grow_names(struct clone_state *c)
{
	size_t cap = c->cap ? c->cap * 2 : 256, i, *old = c->slots, old_cap = c->cap;

	if (c->nr + 1 <= c->cap / 2)
		return 0;
	if (!(c->slots = calloc(cap, sizeof(*c->slots)))) {
		c->slots = old;
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	}
	c->cap = cap;
	for (i = 0; i < old_cap; i++)
		if (old[i])
			*name_slot(c, c->m[old[i] - 1].name) = old[i];
	free(old);
	return 0;
}

/* A local ref to write, once per name (the first mapping wins): a hash of
 * the names, as a clone may map millions of refs. */
static int add_mapped(struct clone_state *c, const char *name, const struct pw_oid *oid, int is_tag)
{
	size_t *slot;
	int rc;

	if ((rc = grow_names(c)))
		return rc;
	slot = name_slot(c, name);
	if (*slot)
		return 0;
	if (c->nr == c->alloc) {
		size_t a = c->alloc ? c->alloc * 2 : 64;
		void *p = realloc(c->m, a * sizeof(*c->m));

		if (!p)
			return pw_error_set(c->err, PW_ENOMEM, "out of memory");
		c->m = p;
		c->alloc = a;
	}
	c->m[c->nr].name = strdup(name);
	if (!c->m[c->nr].name)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	c->m[c->nr].oid = *oid;
	c->m[c->nr].is_tag = is_tag;
	c->nr++;
	*slot = c->nr;
	return 0;
}

static int set_config(struct clone_state *c, const char *key, const char *value, int add)
{
	char *path = pw_path_join(pw_repo_git_dir(c->repo), "config");
	int rc;

	if (!path)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	rc = add ? pw_config_add_in_file(path, key, value, c->err)
	         : pw_config_set_in_file(path, key, value, c->err);
	free(path);
	return rc;
}

static int set_configf(struct clone_state *c, const char *value, int add, const char *fmt,
                       const char *a)
{
	char key[1024];

	if (snprintf(key, sizeof(key), fmt, a) >= (int)sizeof(key))
		return pw_error_set(c->err, PW_EINVAL, "name too long");
	return set_config(c, key, value, add);
}

/* The remote's default branch: HEAD's symref, else a branch with HEAD's id
 * (master first, as Git guesses). NULL when there is none. */
static const struct pw_remote_ref *remote_head(const struct pw_adv *adv, const char **branch)
{
	const struct pw_remote_ref *head = pw_adv_find(adv, "HEAD"), *r;
	size_t i;

	*branch = NULL;
	if (!head)
		return NULL;
	if (head->symref_target) {
		*branch = head->symref_target;
		return head;
	}
	r = pw_adv_find(adv, "refs/heads/master");
	if (r && pw_oid_equal(&r->oid, &head->oid)) {
		*branch = r->name;
		return head;
	}
	for (i = 0; i < adv->nr; i++)
		if (!strncmp(adv->refs[i].name, "refs/heads/", 11) &&
		    pw_oid_equal(&adv->refs[i].oid, &head->oid)) {
			*branch = adv->refs[i].name;
			break;
		}
	return head;
}

/* cwd: the caller's logical working directory ($PWD), or NULL */
static int absolute_url(const char *url, const char *cwd, char **out, struct pw_error *err)
{
	char buf[PATH_MAX];
	struct pw_url u;
	int rc;

	*out = NULL;
	if ((rc = pw_url_parse(&u, url, err)))
		return rc;
	if (u.scheme != PW_URL_LOCAL) {
		pw_url_free(&u);
		*out = strdup(url);
		return *out ? 0 : pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	pw_url_free(&u);
	if (!realpath(url, buf))
		return pw_error_set(err, PW_ENOTFOUND, "repository '%s' does not exist", url);
	/* stored as git does: the path as given, made absolute but not
	 * normalized ("/x/../srv" stays), so "From <url>" lines match */
	if (url[0] != '/') {
		const char *pwd = cwd;
		struct stat a, b;

		/* cwd ($PWD) keeps the symbolic links the user sees, when it is "." */
		if (!pwd || pwd[0] != '/' || stat(pwd, &a) || stat(".", &b) ||
		    a.st_dev != b.st_dev || a.st_ino != b.st_ino || strlen(pwd) >= sizeof(buf))
			pwd = getcwd(buf, sizeof(buf));
		else
			pwd = strcpy(buf, pwd);
		if (!pwd)
			return pw_error_set(err, PW_EIO, "cannot get the current directory: %s",
			                    strerror(errno));
		size_t n = strlen(buf) + strlen(url) + 2;

		if (!(*out = malloc(n)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		snprintf(*out, n, "%s%s%s", buf, buf[strlen(buf) - 1] == '/' ? "" : "/", url);
		return 0;
	}
	*out = strdup(url);
	return *out ? 0 : pw_error_set(err, PW_ENOMEM, "out of memory");
}

/* The .promisor file of a partial clone's pack lists the refs it was
 * fetched for. */
static int mark_promisor(struct clone_state *c, const struct pw_fetch_result *res)
{
	struct pw_buf body = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0;

	for (i = 0; i < c->nr && !rc; i++)
		if (pw_buf_adds(&body, pw_oid_to_hex(&c->m[i].oid, hex)) ||
		    pw_buf_addch(&body, ' ') || pw_buf_adds(&body, c->m[i].name) ||
		    pw_buf_addch(&body, '\n'))
			rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
	if (!rc)
		rc = pw_fetch__mark_promisor(res, body.data, body.len, c->err);
	pw_buf_free(&body);
	return rc;
}

/* A partial clone's checkout needs the blobs of one tree: fetch them in a
 * second request, as git does lazily from the promisor remote. */
static int fetch_checkout_blobs(struct clone_state *c, const char *url, const struct pw_oid *commit)
{
	struct pw_fetch_request req = {0};
	struct pw_fetch_result res = {0};
	struct pw_oid *missing = NULL;
	size_t nr = 0, saved_nr = c->nr;
	int rc;

	if ((rc = pw_checkout__missing_blobs(c->repo, commit, &missing, &nr, c->err)) || !nr)
		goto out;
	pw_session_close(c->s, NULL);
	c->s = NULL;
	c->adv = NULL; /* belonged to that session */
	{
		/* the repository's config was reloaded since (clone wrote it) */
		struct pw_client_opts co = c->o->client;

		if (c->config_from_repo)
			co.config = pw_repo_config(c->repo);
		if ((rc = pw_session_open(&c->s, url, &co, c->err)))
			goto out;
	}
	req.wants = missing;
	req.nr_wants = nr;
	req.no_haves = 1;
	if ((rc = pw_session_fetch(c->s, c->repo, &req, &res, c->err)))
		goto out;
	c->nr = 0; /* no refs behind this pack */
	rc = mark_promisor(c, &res);
	c->nr = saved_nr;
	if (rc)
		pw_fetch_result_rollback(&res);
out:
	pw_fetch_result_free(&res);
	free(missing);
	return rc;
}

/* What the clone is going to do, decided from the remote's refs. */
struct clone_plan {
	const struct pw_remote_ref *head;         /* the remote's HEAD, or NULL */
	const char *head_branch;                  /* the branch HEAD points at */
	const struct pw_remote_ref *checkout_ref; /* what to check out / point HEAD at */
	const char *branch_ref;                   /* its name */
	int single_branch;
};

/* Which branch to check out and point HEAD at: -b, else the remote's HEAD. */
static int plan_branch(struct clone_state *c, struct clone_plan *p)
{
	const struct pw_clone_opts *o = c->o;
	char buf[1024];

	/* any deepen makes a clone single-branch by default, as git clone */
	p->single_branch = o->single_branch < 0 ? (o->depth > 0 || o->deepen_since ||
	                                           (o->deepen_not && o->deepen_not[0]))
	                                        : o->single_branch;
	if (o->mirror)
		p->single_branch = 0;
	p->head = remote_head(c->adv, &p->head_branch);
	if (o->branch) {
		const struct pw_remote_ref *r;

		snprintf(buf, sizeof(buf), "refs/heads/%s", o->branch);
		r = pw_adv_find(c->adv, buf);
		if (!r) {
			snprintf(buf, sizeof(buf), "refs/tags/%s", o->branch);
			r = pw_adv_find(c->adv, buf);
		}
		if (!r || r->unborn)
			return pw_error_set(c->err, PW_ENOTFOUND,
			                    "Remote branch %s not found in upstream %s", o->branch,
			                    c->origin);
		p->checkout_ref = r;
		p->branch_ref = r->name;
	} else if (p->head && !p->head->unborn) {
		p->checkout_ref = p->head;
		p->branch_ref = p->head_branch;
	}
	return 0;
}

/* The remote's section (url, fetch refspec, mirror, promisor) and the
 * server's object format, before any object arrives (after the remote
 * section, where git clone puts it too). */
static int write_remote_config(struct clone_state *c, const char *url, const struct clone_plan *p,
                               const struct pw_hash_algo *algo)
{
	const struct pw_clone_opts *o = c->o;
	const char *branch_ref = p->branch_ref;
	char buf[1024];
	int rc;

	if ((rc = set_configf(c, url, 0, "remote.%s.url", c->origin)))
		return rc;
	if (o->mirror) {
		if ((rc = set_configf(c, "+refs/*:refs/*", 0, "remote.%s.fetch", c->origin)) ||
		    (rc = set_configf(c, "true", 0, "remote.%s.mirror", c->origin)))
			return rc;
	} else if (!o->bare) {
		if (p->single_branch && branch_ref && !strncmp(branch_ref, "refs/heads/", 11))
			snprintf(buf, sizeof(buf), "+%s:refs/remotes/%s/%s", branch_ref, c->origin,
			         branch_ref + 11);
		else if (p->single_branch && branch_ref)
			snprintf(buf, sizeof(buf), "+%s:%s", branch_ref, branch_ref);
		else
			snprintf(buf, sizeof(buf), "+refs/heads/*:refs/remotes/%s/*", c->origin);
		if ((rc = set_configf(c, buf, 0, "remote.%s.fetch", c->origin)))
			return rc;
	}
	if (algo != pw_repo_algo(c->repo) &&
	    (rc = pw_repo_set_object_format(c->repo, algo, c->err)))
		return rc;
	if (o->filter) {
		/* remote.<name>.promisor is a repository extension: format 1, as git */
		if ((rc = set_config(c, "core.repositoryformatversion", "1", 0)) ||
		    (rc = set_configf(c, "true", 0, "remote.%s.promisor", c->origin)) ||
		    (rc = set_configf(c, o->filter, 0, "remote.%s.partialclonefilter", c->origin)))
			return rc;
	}
	return 0;
}

/* Map the remote's refs to ours (c->m): everything for a mirror, branches
 * to refs/remotes/<origin>/ (or refs/heads/ when bare), and tags. */
static int map_remote_refs(struct clone_state *c, const struct clone_plan *p)
{
	const struct pw_clone_opts *o = c->o;
	char buf[1024];
	size_t i;
	int rc;

	for (i = 0; i < c->adv->nr; i++) {
		const struct pw_remote_ref *r = &c->adv->refs[i];
		int is_head = !strncmp(r->name, "refs/heads/", 11);
		int is_tag = !strncmp(r->name, "refs/tags/", 10);
		int other = p->single_branch && (!p->branch_ref || strcmp(r->name, p->branch_ref));

		if (r->unborn || !strcmp(r->name, "HEAD") || strncmp(r->name, "refs/", 5))
			continue;
		if (o->mirror) {
			if ((rc = add_mapped(c, r->name, &r->oid, 0)))
				return rc;
		} else if (is_head) {
			if (other)
				continue;
			if (o->bare)
				snprintf(buf, sizeof(buf), "%s", r->name);
			else
				snprintf(buf, sizeof(buf), "refs/remotes/%s/%s", c->origin,
				         r->name + 11);
			if ((rc = add_mapped(c, buf, &r->oid, 0)))
				return rc;
		} else if (is_tag) {
			if (other)
				continue; /* followed below when their objects arrive */
			if ((rc = add_mapped(c, r->name, &r->oid, 1)))
				return rc;
		}
	}
	return 0;
}

/* Fetch what the mapped refs point at (nothing to negotiate), mark a
 * partial clone's pack, store the shallow list. */
static int fetch_mapped(struct clone_state *c, struct pw_clone_info *info,
                        struct pw_fetch_result *res)
{
	const struct pw_clone_opts *o = c->o;
	struct pw_fetch_request req = {0};
	struct pw_oid *wants = calloc(c->nr + 1, sizeof(*wants));
	struct pw_oidmap seen = PW_OIDMAP_INIT;
	size_t i, nw = 0;
	int rc = 0;

	if (!wants)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	/* each id once, in the order of the refs */
	for (i = 0; i < c->nr; i++) {
		int created;

		if (!pw_oidmap_put(&seen, &c->m[i].oid, &created)) {
			pw_oidmap_free(&seen);
			free(wants);
			return pw_error_set(c->err, PW_ENOMEM, "out of memory");
		}
		if (created)
			wants[nw++] = c->m[i].oid;
	}
	pw_oidmap_free(&seen);
	req.wants = wants;
	req.nr_wants = nw;
	req.depth = o->depth;
	req.deepen_since = o->deepen_since;
	req.deepen_not = o->deepen_not;
	while (o->deepen_not && o->deepen_not[req.nr_deepen_not])
		req.nr_deepen_not++;
	req.filter = o->filter;
	req.include_tag = 1;
	req.no_haves = 1;
	if (nw)
		rc = pw_session_fetch(c->s, c->repo, &req, res, c->err);
	if (!rc)
		info->nr_objects = res->nr_objects;
	if (!rc && o->filter)
		rc = mark_promisor(c, res);
	if (!rc)
		rc = pw_fetch_result_write_shallow(c->repo, res, c->err);
	free(wants);
	return rc;
}

/* Tags that came along with a single branch: those whose objects arrived. */
static int add_arrived_tags(struct clone_state *c)
{
	struct pw_odb *odb = NULL;
	size_t i;
	int rc;

	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(c->repo), pw_repo_algo(c->repo), c->err)))
		return rc;
	for (i = 0; i < c->adv->nr && !rc; i++) {
		const struct pw_remote_ref *r = &c->adv->refs[i];

		if (strncmp(r->name, "refs/tags/", 10) || r->unborn || !pw_odb_exists(odb, &r->oid))
			continue;
		rc = add_mapped(c, r->name, &r->oid, 1);
	}
	pw_odb_free(odb);
	return rc;
}

/* The mapped refs into packed-refs (as git clone writes them), then the
 * checked-out branch (or a detached HEAD at a tag). */
static int write_refs(struct clone_state *c, const struct clone_plan *p)
{
	const struct pw_remote_ref *checkout_ref = p->checkout_ref;
	const char *branch_ref = p->branch_ref;
	struct pw_ref_tx *tx = NULL;
	size_t i;
	int rc;

	if ((rc = pw_ref_tx_new(&tx, c->repo)))
		return rc;
	for (i = 0; i < c->nr && !rc; i++)
		rc = pw_ref_tx_update(tx, c->m[i].name, &c->m[i].oid, NULL, 0);
	if (!rc)
		rc = pw_ref_tx_commit_initial(tx);
	if (rc)
		pw_error_copy(c->err, pw_ref_tx_error(tx));
	pw_ref_tx_free(tx);
	tx = NULL;
	if (rc || (rc = pw_ref_tx_new(&tx, c->repo)))
		return rc;
	if (!rc && checkout_ref && !c->o->bare && branch_ref &&
	    !strncmp(branch_ref, "refs/heads/", 11))
		rc = pw_ref_tx_update(tx, branch_ref, &checkout_ref->oid, NULL, 0);
	/* a detached remote HEAD that no branch matches: detached here too */
	if (!rc && checkout_ref && !branch_ref && checkout_ref == p->head)
		rc = pw_ref_tx_update(tx, "HEAD", &checkout_ref->oid, NULL, PW_REF_NO_DEREF);
	if (!rc && checkout_ref && branch_ref && strncmp(branch_ref, "refs/heads/", 11))
		rc = pw_ref_tx_update(tx, "HEAD",
		                      checkout_ref->has_peeled ? &checkout_ref->peeled
		                                               : &checkout_ref->oid,
		                      NULL, PW_REF_NO_DEREF);
	if (!rc)
		rc = pw_ref_tx_commit(tx);
	if (rc)
		pw_error_copy(c->err, pw_ref_tx_error(tx));
	pw_ref_tx_free(tx);
	return rc;
}

/* HEAD, refs/remotes/<origin>/HEAD and the branch's upstream config. */
static int write_head(struct clone_state *c, const struct clone_plan *p)
{
	const struct pw_clone_opts *o = c->o;
	const struct pw_remote_ref *head = p->head;
	const char *branch_ref = p->branch_ref, *head_branch = p->head_branch, *target = NULL;
	int rc;

	if (branch_ref && !strncmp(branch_ref, "refs/heads/", 11))
		target = branch_ref;
	else if (!branch_ref && head && head->unborn && head->symref_target)
		target = head->symref_target;
	if (target && (rc = pw_refs_create_symref(c->repo, "HEAD", target)))
		return rc;
	if (!o->bare && head && head_branch && !head->unborn &&
	    !strncmp(head_branch, "refs/heads/", 11)) {
		char name[1024], tgt[1024];

		snprintf(name, sizeof(name), "refs/remotes/%s/HEAD", c->origin);
		snprintf(tgt, sizeof(tgt), "refs/remotes/%s/%s", c->origin, head_branch + 11);
		if (!p->single_branch || (branch_ref && !strcmp(branch_ref, head_branch)))
			if ((rc = pw_refs_create_symref(c->repo, name, tgt)))
				return rc;
	}
	if (!o->bare && branch_ref && !strncmp(branch_ref, "refs/heads/", 11)) {
		if ((rc = set_configf(c, c->origin, 0, "branch.%s.remote", branch_ref + 11)) ||
		    (rc = set_configf(c, branch_ref, 0, "branch.%s.merge", branch_ref + 11)))
			return rc;
	}
	return 0;
}

static int do_clone(struct clone_state *c, const char *url, struct pw_clone_info *info)
{
	const struct pw_clone_opts *o = c->o;
	const char *prefixes[] = {"HEAD", "refs/heads/", "refs/tags/", NULL};
	struct pw_fetch_result res = {0};
	struct clone_plan p = {0};
	int rc;

	if ((rc = pw_session_open(&c->s, url, &o->client, c->err)))
		return rc;
	info->version = pw_session_version(c->s);
	info->algo = pw_session_algo(c->s);
	if ((rc = pw_session_list_refs(c->s, o->mirror ? NULL : prefixes,
	                               PW_LSREFS_SYMREFS | PW_LSREFS_PEEL | PW_LSREFS_UNBORN,
	                               &c->adv, c->err)))
		return rc;
	if ((rc = plan_branch(c, &p)) || (rc = write_remote_config(c, url, &p, info->algo)) ||
	    (rc = map_remote_refs(c, &p)))
		return rc;
	info->empty = c->adv->nr == 0 || (c->adv->empty && !c->nr) || !c->nr;
	if ((rc = fetch_mapped(c, info, &res)))
		goto out;
	if (p.single_branch && !o->mirror && (rc = add_arrived_tags(c)))
		goto out;
	if ((rc = write_refs(c, &p)))
		goto out;
	info->nr_refs = c->nr;
	if ((rc = write_head(c, &p)))
		goto out;
	/* work tree */
	if (!o->bare && !o->no_checkout && p.checkout_ref) {
		struct pw_oid commit = p.checkout_ref->oid;

		if (!strncmp(p.checkout_ref->name, "refs/tags/", 10) && p.checkout_ref->has_peeled)
			commit = p.checkout_ref->peeled;
		if (o->filter && (rc = fetch_checkout_blobs(c, url, &commit)))
			goto out;
		rc = pw_checkout_fresh(c->repo, &commit, c->err);
	}
out:
	pw_fetch_result_free(&res);
	return rc;
}

int pw_clone(const struct pw_clone_opts *o, struct pw_clone_info *info, struct pw_error *err)
{
	struct clone_state c;
	struct pw_repo_init_opts iopts = {0};
	struct stat st;
	char *url = NULL;
	int rc, existed, closerc;
	size_t i;

	memset(&c, 0, sizeof(c));
	memset(info, 0, sizeof(*info));
	c.o = o;
	c.err = err;
	c.origin = o->origin ? o->origin : "origin";
	existed = !stat(o->dir, &st);
	if (existed && (!S_ISDIR(st.st_mode) || !dir_is_empty(o->dir)))
		return pw_error_set(err, PW_EEXISTS,
		                    "destination path '%s' already exists and is not an empty "
		                    "directory.",
		                    o->dir);
	if ((rc = absolute_url(o->url, o->cwd, &url, err)))
		return rc;
	iopts.bare = o->bare || o->mirror;
	iopts.initial_branch = o->initial_branch;
	iopts.config = o->config;
	if ((rc = pw_repo_init_ext(&c.repo, o->dir, &iopts, err)))
		goto cleanup;
	{
		/* http.* and credential.* of the new repository (with every layer) */
		struct pw_clone_opts o2 = *o;
		/* a copy: the handle is reopened when the format is rewritten */
		char *git_dir = o2.client.git_dir ? NULL : strdup(pw_repo_git_dir(c.repo));

		if (!o2.client.config) {
			o2.client.config = pw_repo_config(c.repo);
			c.config_from_repo = 1;
		}
		if (git_dir)
			o2.client.git_dir = git_dir;
		if (!o2.client.remote_name)
			o2.client.remote_name = c.origin;
		c.o = &o2;
		rc = do_clone(&c, url, info);
		c.o = o;
		free(git_dir);
	}
	closerc = pw_session_close(c.s, NULL);
	(void)closerc;
	c.s = NULL;
cleanup:
	for (i = 0; i < c.nr; i++)
		free(c.m[i].name);
	free(c.m);
	free(c.slots);
	pw_repo_free(c.repo);
	free(url);
	if (rc)
		pw_fs_remove_tree(o->dir, existed);
	return rc;
}
