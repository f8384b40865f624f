/* A cluster node: see packwire/cluster.h and docs/cluster.md.
 *
 * Keys in etcd (all under /packwire/):
 *   node/<node>            the node's peer URL, under the node's lease
 *   repos/<name>           "sha1" / "sha256": the repository is managed
 *   refs/<name>:           the same (in the refs' range, so one read says
 *                          both whether it is managed and what its refs are)
 *   refs/<name>:HEAD       "ref: refs/heads/main" (set by cluster add)
 *   refs/<name>:<refname>  "<algo>:<hex>", e.g. "sha256:5a3c..."
 * A repository name is its path under the base path; it holds no ':'. */
#include "packwire/cluster.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cluster/cluster-priv.h"
#include "cluster/etcd.h"
#include "cluster/state.h"
#include "packwire/client.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/push.h"
#include "packwire/refs.h"
#include "packwire/repo.h"

/* A peer says it reaches etcd when its last answer from etcd is this
 * recent; a node is partitioned when its peers said so for this long (a
 * node whose etcd lost its quorum sees its peers lose it too within a
 * pass: their answers go stale and they say no). */
#define PEER_FRESH_MS   1500
#define PART_CONFIRM_MS 2000
#define PEER_STATUS_MS  1000

struct peers {
	char **url;
	size_t nr;
};

/* The etcd revision last applied to each repository's local refs: an
 * older snapshot is never applied over a newer one. */
struct applied {
	char *name;
	int64_t rev;
	int older; /* syncs in a row that found the record newer than etcd */
	struct applied *next;
};

struct pw_cluster {
	struct pw_cluster_opts o;
	char *node, *advertise, *base_real;
	struct pw_etcd *etcd;
	struct pw_ref_store store;
	pthread_mutex_t lock; /* local ref updates, applied, status */
	pthread_cond_t wake;
	pthread_t thread, watcher;
	int thread_started, watcher_started, stopping;
	/* the watch (atomic): it is up; a ref changed since the last pass; a
	 * pass failed (the watch starts again) */
	int watch_up, dirty, watch_reset;
	int64_t lease;
	struct applied *applied;
	/* status, under lock */
	int synced_once, etcd_up, behind;
	time_t down_since;  /* when etcd last stopped answering */
	char etcd_why[400]; /* what its last failure said */
	int64_t revision;
	/* partitions, under lock: the node list of the last pass that reached
	 * etcd; since when (monotonic ms) every pass that could not reach etcd
	 * found a peer that can; partitioned once that lasted PART_CONFIRM_MS */
	struct peers last_peers;
	int64_t part_since;
	int partitioned;
	char part_peer[256];
	/* counters (atomic) */
	unsigned long long stale_reads, commits, lost, refused, repl_ok, repl_fail, fetch_ok,
	        fetch_fail, etcd_errors, watch_events, watch_starts;
};

static void logf_(struct pw_cluster *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct pw_cluster *c, const char *fmt, ...)
{
	char msg[PW_ERROR_MSG_MAX + 256];
	va_list ap;

	if (!c->o.log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->o.log(c->o.log_ctx, msg);
}

static void count(unsigned long long *n)
{
	__atomic_add_fetch(n, 1, __ATOMIC_RELAXED);
}

/* ---- names and values ---------------------------------------------------- */

int pw_cluster__name_ok(const char *name)
{
	return *name && !strchr(name, ':') && name[0] != '/' && !strstr(name, "..");
}

/* The repository's name: its git dir under the base path ("x.git", or "x"
 * for x/.git). */
static int repo_name(struct pw_cluster *c, struct pw_repo *repo, char *out, size_t cap,
                     struct pw_error *err)
{
	char real[PATH_MAX];
	size_t bl = strlen(c->base_real), n;

	if (!realpath(pw_repo_git_dir(repo), real))
		return pw_error_set(err, PW_EIO, "cannot resolve %s: %s", pw_repo_git_dir(repo),
		                    strerror(errno));
	if (strncmp(real, c->base_real, bl) || real[bl] != '/')
		return pw_error_set(err, PW_EINVAL, "%s is outside the base path %s", real,
		                    c->base_real);
	n = strlen(real + bl + 1);
	if (n >= 5 && !strcmp(real + bl + 1 + n - 5, "/.git"))
		n -= 5;
	if (n >= cap)
		return pw_error_set(err, PW_ETOOBIG, "repository path too long");
	memcpy(out, real + bl + 1, n);
	out[n] = '\0';
	if (!pw_cluster__name_ok(out))
		return pw_error_set(err, PW_EINVAL, "repository name '%s' cannot be in a cluster",
		                    out);
	return 0;
}

void pw_cluster__fmt_value(char *buf, size_t cap, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];
	const struct pw_hash_algo *a = pw_hash_by_id(oid->algo);

	snprintf(buf, cap, "%s:%s", a ? a->name : "?", pw_oid_to_hex(oid, hex));
}

/* "<algo>:<hex>" of algo; PW_EMISMATCH for another algorithm. */
static int parse_value(const char *v, size_t len, const struct pw_hash_algo *algo,
                       struct pw_oid *out)
{
	const char *colon = memchr(v, ':', len);
	const struct pw_hash_algo *a;

	if (!colon)
		return PW_EINVAL;
	a = pw_hash_by_name(v, (size_t)(colon - v));
	if (!a)
		return PW_EINVAL;
	if (a != algo)
		return PW_EMISMATCH;
	return pw_oid_from_hex(out, colon + 1, len - (size_t)(colon - v) - 1, algo);
}

/* ---- peers --------------------------------------------------------------- */

static void peers_free(struct peers *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		free(p->url[i]);
	free(p->url);
	memset(p, 0, sizeof(*p));
}

/* The live nodes other than this one, starting at a place that depends on
 * the repository, so that the copies of different repositories spread. */
static int list_peers(struct pw_cluster *c, const char *name, struct peers *out,
                      struct pw_error *err)
{
	struct pw_etcd_range r;
	char self[512];
	size_t i, k, start = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = pw_etcd_range(c->etcd, KP "node/", 1, 0, &r, err)))
		return rc;
	snprintf(self, sizeof(self), KP "node/%s", c->node);
	if (r.nr && !(out->url = calloc(r.nr, sizeof(char *)))) {
		pw_etcd_range_free(&r);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	for (i = 0; name[i]; i++)
		start = start * 31 + (unsigned char)name[i];
	for (k = 0; k < r.nr; k++) {
		struct pw_etcd_kv *kv = &r.kvs[(start + k) % r.nr];

		if (strcmp(kv->key, self) && kv->value_len &&
		    (!strncmp(kv->value, "http://", 7) || !strncmp(kv->value, "https://", 8)))
			if (!(out->url[out->nr++] = strdup(kv->value))) {
				pw_etcd_range_free(&r);
				peers_free(out);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
	}
	pw_etcd_range_free(&r);
	return 0;
}

/* Fetch objects by id from a peer into the repository at git_dir. */
static int fetch_from_peers(struct pw_cluster *c, const char *git_dir, const char *name,
                            const struct pw_hash_algo *algo, const struct pw_oid *wants, size_t nr,
                            struct pw_error *err)
{
	struct peers p;
	size_t i;
	int rc;

	if ((rc = list_peers(c, name, &p, err)))
		return rc;
	rc = pw_error_set(err, PW_ENOTFOUND, "no live peer to fetch %s's objects from", name);
	for (i = 0; i < p.nr && rc; i++) {
		struct pw_client_opts co;
		struct pw_session *s = NULL;
		struct pw_fetch_request req;
		struct pw_fetch_result res;
		struct pw_repo *repo = NULL;
		char url[PATH_MAX + 4096];

		memset(&co, 0, sizeof(co));
		co.protocol_version = 2;
		co.quiet = 1;
		memset(&req, 0, sizeof(req));
		req.wants = wants;
		req.nr_wants = nr;
		memset(&res, 0, sizeof(res));
		snprintf(url, sizeof(url), "%s/%s", p.url[i], name);
		rc = pw_repo_open_gitdir(&repo, git_dir, err);
		if (!rc)
			rc = pw_session_open(&s, url, &co, err);
		if (!rc)
			rc = pw_session_check_algo(s, algo, err);
		if (!rc)
			rc = pw_session_fetch(s, repo, &req, &res, err);
		pw_fetch_result_free(&res);
		if (s) {
			struct pw_error e2;
			pw_session_close(s, &e2);
		}
		pw_repo_free(repo);
		if (rc) {
			count(&c->fetch_fail);
			logf_(c, "cluster: fetching %s from %s: %s", name, p.url[i], err->msg);
		} else {
			count(&c->fetch_ok);
		}
	}
	peers_free(&p);
	return rc;
}

/* ---- applying etcd's refs locally ---------------------------------------- */

static struct applied *applied_get(struct pw_cluster *c, const char *name, int create)
{
	struct applied *a;

	for (a = c->applied; a; a = a->next)
		if (!strcmp(a->name, name))
			return a;
	if (!create || !(a = calloc(1, sizeof(*a))) || !(a->name = strdup(name))) {
		free(a);
		return NULL;
	}
	a->next = c->applied;
	c->applied = a;
	return a;
}

struct want_ref {
	const char *name;
	struct pw_oid oid;
	int present;
};

struct local_scan {
	struct want_ref *w;
	size_t nr;
	struct pw_ref_tx *tx;
	int rc;
};

static int cmp_want(const void *a, const void *b)
{
	return strcmp(((const struct want_ref *)a)->name, ((const struct want_ref *)b)->name);
}

/* The ref's own value: 0 when it exists and is not a symref. */
static int read_ref(struct pw_repo *repo, const char *name, struct pw_oid *oid)
{
	char *sym = NULL;
	int rc = pw_refs_read(repo, name, oid, &sym);

	if (!rc && sym)
		rc = PW_EINVAL;
	free(sym);
	return rc;
}

/* A local ref that etcd does not have goes. */
static int drop_extra(const struct pw_ref *ref, void *data)
{
	struct local_scan *ls = data;
	struct want_ref key, *hit;

	if (ref->symref_target)
		return 0;
	key.name = ref->name;
	hit = bsearch(&key, ls->w, ls->nr, sizeof(*ls->w), cmp_want);
	if (!hit && !ls->rc)
		ls->rc = pw_ref_tx_delete(ls->tx, ref->name, NULL);
	return 0;
}

/* Make the local refs what etcd says (those whose objects are here), under
 * c->lock; full: also delete local refs etcd does not have. */
static int apply_local(struct pw_cluster *c, struct pw_repo *repo, struct want_ref *w, size_t nr,
                       int full, struct pw_error *err)
{
	struct local_scan ls;
	size_t i;
	int rc;

	(void)c; /* the caller holds c->lock */
	memset(&ls, 0, sizeof(ls));
	if ((rc = pw_ref_tx_new(&ls.tx, repo)))
		return pw_error_set(err, rc, "out of memory");
	for (i = 0; i < nr && !rc; i++) {
		struct pw_oid cur;

		if (!w[i].present)
			continue;
		if (pw_oid_is_zero(&w[i].oid)) {
			if (!read_ref(repo, w[i].name, &cur))
				rc = pw_ref_tx_delete(ls.tx, w[i].name, NULL);
			continue;
		}
		if (!read_ref(repo, w[i].name, &cur) && pw_oid_equal(&cur, &w[i].oid))
			continue;
		rc = pw_ref_tx_update(ls.tx, w[i].name, &w[i].oid, NULL, PW_REF_NO_DEREF);
	}
	if (!rc && full) {
		qsort(w, nr, sizeof(*w), cmp_want);
		ls.w = w;
		ls.nr = nr;
		pw_refs_foreach(repo, "refs/", 0, drop_extra, &ls);
		rc = ls.rc;
	}
	if (!rc)
		rc = pw_ref_tx_commit(ls.tx);
	if (rc)
		pw_error_set(err, rc, "updating the local refs: %s", pw_ref_tx_error(ls.tx)->msg);
	pw_ref_tx_free(ls.tx);
	return rc;
}

/* ---- the state record (cluster/state.h) ------------------------------- */

/* Record w (the refs about to be applied) before the local refs change:
 * all of etcd's at revision when full, else merged in. *skip: the record
 * is of a newer revision (another process applied a newer snapshot): do
 * not apply this one. A record newer than etcd for many syncs in a row is
 * from an etcd that was rebuilt (its revisions restarted): etcd wins. */
static int record_sync(struct pw_cluster *c, struct pw_repo *repo, struct applied *a,
                       const struct want_ref *w, size_t nw, int full, int64_t revision, int *skip,
                       struct pw_error *err)
{
	struct pw_cstate_set *set = calloc(nw + 1, sizeof(*set));
	size_t i, n = 0;
	int rc, mode = full ? (a->older >= 10 ? 2 : 1) : 0;

	*skip = 0;
	if (!set)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (i = 0; i < nw; i++)
		if (w[i].present) {
			set[n].name = w[i].name;
			set[n++].oid = &w[i].oid;
		}
	if (mode == 2)
		logf_(c,
		      "cluster: %s: this node's record is newer than etcd for %d syncs (etcd "
		      "rebuilt?): taking etcd's state",
		      a->name, a->older);
	rc = pw_cstate_store(pw_repo_git_dir(repo), pw_repo_algo(repo), mode, full ? revision : 0,
	                     set, n, skip, err);
	a->older = *skip ? a->older + 1 : 0;
	free(set);
	return rc;
}

/* A push's updates into the record: before the etcd transaction, every
 * new value (pending: a crash before the local update must not bring the
 * old refs back); after it, the outcome (done: taken at revision, the
 * losers back to their old value; groups as etcd answered them). */
static void record_push(struct pw_cluster *c, struct pw_repo *repo, const char *name,
                        const struct pw_store_update *u, size_t n,
                        const struct pw_etcd_group *groups, size_t ng, int64_t revision)
{
	struct pw_cstate_set *set = calloc(n + 1, sizeof(*set));
	struct pw_error e;
	size_t i;

	if (!set)
		return;
	for (i = 0; i < n; i++) {
		set[i].name = u[i].name;
		set[i].oid = !groups || groups[ng == 1 ? 0 : i].succeeded ? &u[i].new_oid
		                                                          : &u[i].old_oid;
	}
	if (pw_cstate_store(pw_repo_git_dir(repo), pw_repo_algo(repo), 0, revision, set, n, NULL,
	                    &e))
		logf_(c, "cluster: %s: %s", name, e.msg);
	free(set);
}

/* etcd does not answer: serve at least the record (what this node last
 * applied or sent to etcd), never older: the refs whose objects are here
 * go back to it (after a restart, or a crash between etcd's commit and
 * the local update). */
static void restore_record(struct pw_cluster *c, struct pw_repo *repo, const char *name)
{
	struct pw_cstate st;
	struct pw_error e;
	struct pw_odb *odb = NULL;
	struct want_ref *w;
	size_t i;
	int all = 1;

	if (pw_cstate_load(pw_repo_git_dir(repo), pw_repo_algo(repo), &st, &e))
		return;
	if (!(w = calloc(st.nr + 1, sizeof(*w))) ||
	    pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), &e)) {
		free(w);
		pw_cstate_free(&st);
		return;
	}
	for (i = 0; i < st.nr; i++) {
		w[i].name = st.refs[i].name;
		w[i].oid = st.refs[i].oid;
		if (!(w[i].present = pw_odb_exists(odb, &w[i].oid)))
			all = 0;
	}
	pthread_mutex_lock(&c->lock);
	if (apply_local(c, repo, w, st.nr, all, &e))
		logf_(c, "cluster: %s: restoring the recorded refs: %s", name, e.msg);
	pthread_mutex_unlock(&c->lock);
	pw_odb_free(odb);
	free(w);
	pw_cstate_free(&st);
}

/*
 * Bring one repository's refs in step with etcd (a linearizable read),
 * fetching missing objects from peers. *managed: the repository is in
 * etcd; *behind: refs whose objects could not be had (left as they were).
 * PW_EIO (err) when etcd did not answer.
 */
static int sync_repo(struct pw_cluster *c, struct pw_repo *repo, const char *name, int *managed,
                     int *behind, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	struct pw_etcd_range r;
	struct want_ref *w = NULL;
	struct pw_oid *missing = NULL;
	struct pw_odb *odb = NULL;
	char prefix[PATH_MAX + 64];
	size_t i, nw = 0, nm = 0, pl;
	int rc;

	*managed = *behind = 0;
	snprintf(prefix, sizeof(prefix), KP "refs/%s:", name);
	pl = strlen(prefix);
	if ((rc = pw_etcd_range(c->etcd, prefix, 1, 0, &r, err))) {
		count(&c->etcd_errors);
		return rc;
	}
	for (i = 0; i < r.nr; i++)
		if (r.kvs[i].key_len == pl)
			*managed = 1;
	if (!*managed) {
		pw_etcd_range_free(&r);
		return 0;
	}
	w = calloc(r.nr, sizeof(*w));
	missing = calloc(r.nr, sizeof(*missing));
	if (!w || !missing) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), algo, err)))
		goto out;
	for (i = 0; i < r.nr; i++) {
		const char *ref = r.kvs[i].key + pl;
		int prc;

		if (strncmp(ref, "refs/", 5) || !pw_refname_is_valid(ref, 0))
			continue; /* the registration, HEAD, or a bad name */
		prc = parse_value(r.kvs[i].value, r.kvs[i].value_len, algo, &w[nw].oid);
		if (prc) {
			logf_(c, "cluster: %s %s: etcd holds '%.80s', not a %s id: not served",
			      name, ref, r.kvs[i].value, algo->name);
			(*behind)++;
			continue;
		}
		w[nw].name = ref;
		w[nw].present = pw_odb_exists(odb, &w[nw].oid);
		if (!w[nw].present)
			missing[nm++] = w[nw].oid;
		nw++;
	}
	if (nm) {
		struct pw_error fe;

		if (!fetch_from_peers(c, pw_repo_git_dir(repo), name, algo, missing, nm, &fe)) {
			pw_odb_free(odb);
			odb = NULL;
			if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), algo, err)))
				goto out;
		}
		for (i = 0; i < nw; i++)
			if (!w[i].present && !(w[i].present = pw_odb_exists(odb, &w[i].oid)))
				(*behind)++;
	}
	pthread_mutex_lock(&c->lock);
	{
		struct applied *a = applied_get(c, name, 1);

		if (a && r.revision >= a->rev) {
			int skip = 0;

			/* the record first: it is never older than the local refs.
			 * A ref we could not complete keeps its old value: we never
			 * advertise what we cannot serve */
			rc = record_sync(c, repo, a, w, nw, !*behind, r.revision, &skip, err);
			if (!rc && !skip)
				rc = apply_local(c, repo, w, nw, !*behind, err);
			if (!rc && !skip)
				a->rev = r.revision;
		}
		if (r.revision > c->revision)
			c->revision = r.revision;
	}
	pthread_mutex_unlock(&c->lock);
out:
	pw_odb_free(odb);
	free(w);
	free(missing);
	pw_etcd_range_free(&r);
	return rc;
}

/* ---- the ref store ------------------------------------------------------- */

static int store_prepare(void *data, struct pw_repo *repo, const char *service,
                         struct pw_error *err)
{
	struct pw_cluster *c = data;
	char name[PATH_MAX];
	int managed, behind, rc, down;

	if ((rc = repo_name(c, repo, name, sizeof(name), err)))
		return rc;
	pthread_mutex_lock(&c->lock);
	/* etcd failed less than a request's timeout ago and has not answered
	 * since: do not wait for it again (the catch-up thread keeps asking) */
	down = !c->etcd_up && c->down_since && time(NULL) - c->down_since < 3;
	if (down)
		rc = pw_error_set(err, PW_EIO, "%s", c->etcd_why);
	pthread_mutex_unlock(&c->lock);
	if (!down)
		rc = sync_repo(c, repo, name, &managed, &behind, err);
	if (rc == PW_EIO || rc == PW_EPROTO) {
		char why[sizeof(c->etcd_why)];

		snprintf(why, sizeof(why), "%.399s", err->msg);
		pthread_mutex_lock(&c->lock);
		c->down_since = time(NULL);
		c->etcd_up = 0;
		snprintf(c->etcd_why, sizeof(c->etcd_why), "%s", why);
		pthread_mutex_unlock(&c->lock);
		if (!strcmp(service, "receive-pack")) {
			count(&c->refused);
			return pw_error_set(err, rc,
			                    "cluster: this node cannot reach etcd, so it refuses "
			                    "pushes until etcd answers again (nothing was written; "
			                    "try again later): %s",
			                    why);
		}
		/* reads go on from the last state we had (docs/cluster.md), at
		 * least the one recorded */
		restore_record(c, repo, name);
		count(&c->stale_reads);
		logf_(c, "cluster: serving %s from this node's last known refs: %s", name,
		      err->msg);
		return 0;
	}
	if (!rc) {
		pthread_mutex_lock(&c->lock);
		c->etcd_up = 1;
		c->down_since = 0;
		pthread_mutex_unlock(&c->lock);
	}
	return rc;
}

/* Copy the objects of new_oids to replicas - 1 peers, through their peer
 * endpoint's receive-pack (objects only). */
static int replicate(struct pw_cluster *c, struct pw_repo *repo, const char *name,
                     const struct pw_oid *oids, size_t nr, struct pw_error *err)
{
	unsigned need = (c->o.replicas ? c->o.replicas : 2) - 1, done = 0;
	struct peers p;
	char **specs = NULL;
	size_t i, k;
	int rc;

	if (!need || !nr)
		return 0;
	if ((rc = list_peers(c, name, &p, err)))
		return rc;
	if (!(specs = calloc(nr, sizeof(char *)))) {
		peers_free(&p);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	for (k = 0; k < nr; k++) {
		char hex[PW_MAX_HEXSZ + 1];

		if (!(specs[k] = malloc(PW_MAX_HEXSZ + strlen(c->node) + 64)))
			goto oom;
		sprintf(specs[k], "+%s:refs/packwire-replica/%s/%zu", pw_oid_to_hex(&oids[k], hex),
		        c->node, k);
	}
	for (i = 0; i < p.nr && done < need; i++) {
		struct pw_push_opts po;
		struct pw_push_result res;
		struct pw_repo *r2 = NULL;
		struct pw_error e;
		char url[PATH_MAX + 4096];

		memset(&po, 0, sizeof(po));
		memset(&res, 0, sizeof(res));
		po.quiet = 1;
		snprintf(url, sizeof(url), "%s/%s", p.url[i], name);
		rc = pw_repo_open_gitdir(&r2, pw_repo_git_dir(repo), &e);
		if (!rc)
			rc = pw_push(r2, url, (const char *const *)specs, nr, &po, &res, &e);
		if (!rc && !pw_push_result_ok(&res))
			rc = pw_error_set(&e, PW_EPROTO, "the peer refused the objects%s%s",
			                  res.unpack_error ? ": " : "",
			                  res.unpack_error ? res.unpack_error : "");
		pw_push_result_free(&res);
		pw_repo_free(r2);
		if (rc) {
			count(&c->repl_fail);
			logf_(c, "cluster: copying %s's new objects to %s: %s", name, p.url[i],
			      e.msg);
		} else {
			count(&c->repl_ok);
			done++;
		}
	}
	rc = 0;
	if (done < need)
		rc = pw_error_set(err, PW_EIO,
		                  "cluster: the push's objects reached %u of the %u other nodes "
		                  "--replicas=%u needs (%zu live peers): nothing was applied",
		                  done, need, need + 1, p.nr);
	for (k = 0; k < nr; k++)
		free(specs[k]);
	free(specs);
	peers_free(&p);
	return rc;
oom:
	for (k = 0; k < nr; k++)
		free(specs[k]);
	free(specs);
	peers_free(&p);
	return pw_error_set(err, PW_ENOMEM, "out of memory");
}

/* A repository not in the cluster's care: its own refs, as Git. */
static int commit_locally(struct pw_repo *repo, struct pw_store_update *u, size_t n)
{
	size_t i;
	int rc;

	for (i = 0; i < n; i++) {
		struct pw_ref_tx *tx = NULL;

		rc = pw_ref_tx_new(&tx, repo);
		if (!rc)
			rc = pw_oid_is_zero(&u[i].new_oid)
			             ? pw_ref_tx_delete(tx, u[i].name, &u[i].old_oid)
			             : pw_ref_tx_update(tx, u[i].name, &u[i].new_oid, &u[i].old_oid,
			                                0);
		if (!rc)
			rc = pw_ref_tx_commit(tx);
		if (rc)
			u[i].error = "failed to update ref";
		pw_ref_tx_free(tx);
	}
	return 0;
}

/* After the transaction: what etcd took is applied here, the rest lost a
 * race. w has room for n. */
static void apply_results(struct pw_cluster *c, struct pw_repo *repo, const char *name,
                          struct pw_store_update *u, size_t n, const struct pw_etcd_group *groups,
                          size_t ng, struct want_ref *w)
{
	struct pw_error e;
	size_t i, nw = 0;

	for (i = 0; i < n; i++) {
		if (!groups[ng == 1 ? 0 : i].succeeded) {
			u[i].error = pw_oid_is_zero(&u[i].new_oid) ? "failed to delete"
			                                           : "failed to update ref";
			count(&c->lost);
			continue;
		}
		count(&c->commits);
		w[nw].name = u[i].name;
		w[nw].oid = u[i].new_oid;
		w[nw].present = 1;
		nw++;
	}
	if (!nw)
		return;
	pthread_mutex_lock(&c->lock);
	if (apply_local(c, repo, w, nw, 0, &e))
		/* committed in etcd: the catch-up applies it later */
		logf_(c, "cluster: %s: %s", name, e.msg);
	pthread_mutex_unlock(&c->lock);
}

/* The transaction's groups: one for an atomic push (the registration
 * once, then every ref's old value), else one per ref (cmps: two per ref);
 * returns how many. */
static size_t make_groups(int atomic, size_t n, struct pw_etcd_cmp *cmps, struct pw_etcd_cmp *acmps,
                          const struct pw_etcd_op *ops, struct pw_etcd_group *groups)
{
	size_t i;

	if (atomic || n == 1) {
		acmps[0] = cmps[0];
		for (i = 0; i < n; i++)
			acmps[i + 1] = cmps[2 * i + 1];
		groups[0].cmps = acmps;
		groups[0].ncmps = n + 1;
		groups[0].ops = ops;
		groups[0].nops = n;
		return 1;
	}
	for (i = 0; i < n; i++) {
		groups[i].cmps = &cmps[2 * i];
		groups[i].ncmps = 2;
		groups[i].ops = &ops[i];
		groups[i].nops = 1;
	}
	return n;
}

static int store_commit(void *data, struct pw_repo *repo, int atomic, struct pw_store_update *u,
                        size_t n, struct pw_error *err)
{
	struct pw_cluster *c = data;
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	char name[PATH_MAX], regkey[PATH_MAX + 64];
	char **keys = NULL, **olds = NULL, **news = NULL;
	struct pw_etcd_cmp *cmps = NULL, *acmps = NULL;
	struct pw_etcd_op *ops = NULL;
	struct pw_etcd_group *groups = NULL;
	struct pw_oid *fresh = NULL;
	struct want_ref *w = NULL;
	size_t i, nf = 0, ng;
	int64_t rev = 0;
	int rc, managed;

	if ((rc = repo_name(c, repo, name, sizeof(name), err)))
		goto fail;
	pthread_mutex_lock(&c->lock);
	managed = applied_get(c, name, 0) != NULL;
	pthread_mutex_unlock(&c->lock);
	if (!managed)
		return commit_locally(repo, u, n);
	if (n + 1 > PW_ETCD_MAX_TXN_OPS) {
		rc = pw_error_set(err, PW_ETOOBIG,
		                  "cluster: a push of %zu refs is more than one etcd transaction "
		                  "takes (%d): push them in smaller groups",
		                  n, PW_ETCD_MAX_TXN_OPS - 1);
		goto fail;
	}
	keys = calloc(n, sizeof(char *));
	olds = calloc(n, sizeof(char *));
	news = calloc(n, sizeof(char *));
	cmps = calloc(2 * n, sizeof(*cmps));
	acmps = calloc(n + 1, sizeof(*acmps));
	ops = calloc(n, sizeof(*ops));
	groups = calloc(n, sizeof(*groups));
	fresh = calloc(n, sizeof(*fresh));
	w = calloc(n, sizeof(*w));
	if (!keys || !olds || !news || !cmps || !acmps || !ops || !groups || !fresh || !w) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	snprintf(regkey, sizeof(regkey), KP "refs/%s:", name);
	for (i = 0; i < n; i++) {
		size_t kl = strlen(regkey) + strlen(u[i].name) + 1;

		if (!(keys[i] = malloc(kl)) || !(olds[i] = malloc(80)) || !(news[i] = malloc(80))) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto fail;
		}
		snprintf(keys[i], kl, "%s%s", regkey, u[i].name);
		pw_cluster__fmt_value(olds[i], 80, &u[i].old_oid);
		pw_cluster__fmt_value(news[i], 80, &u[i].new_oid);
		/* every update also checks that the repository is still ours, of
		 * this algorithm */
		cmps[2 * i].key = regkey;
		cmps[2 * i].value = algo->name;
		cmps[2 * i + 1].key = keys[i];
		cmps[2 * i + 1].value = pw_oid_is_zero(&u[i].old_oid) ? NULL : olds[i];
		ops[i].key = keys[i];
		ops[i].value = pw_oid_is_zero(&u[i].new_oid) ? NULL : news[i];
		if (!pw_oid_is_zero(&u[i].new_oid))
			fresh[nf++] = u[i].new_oid;
	}
	/* 2. the objects reach another node before anything is committed */
	if ((rc = replicate(c, repo, name, fresh, nf, err)))
		goto fail;
	/* 3. one transaction: all or nothing (atomic), or per ref */
	ng = make_groups(atomic, n, cmps, acmps, ops, groups);
	/* the record gets the new values first: if this process dies after
	 * etcd's commit, a restart without etcd must not serve the old refs */
	record_push(c, repo, name, u, n, NULL, 0, 0);
	if ((rc = pw_etcd_txn(c->etcd, groups, ng, &rev, err))) {
		/* the outcome is unknown: the record keeps the new values */
		count(&c->refused);
		count(&c->etcd_errors);
		pw_error_wrap(err, "cluster: the push could not be committed, nothing was applied "
		                   "(pushes are refused while etcd cannot be reached)");
		goto fail;
	}
	/* 4. apply here what etcd took (recorded first) */
	record_push(c, repo, name, u, n, groups, ng, rev);
	apply_results(c, repo, name, u, n, groups, ng, w);
	rc = 0;
	goto out;
fail:
	for (i = 0; i < n; i++)
		u[i].error =
		        rc == PW_ETOOBIG ? "too many refs in one push" : "cluster commit failed";
out:
	for (i = 0; i < n && keys; i++) {
		free(keys[i]);
		free(olds ? olds[i] : NULL);
		free(news ? news[i] : NULL);
	}
	free(keys);
	free(olds);
	free(news);
	free(cmps);
	free(acmps);
	free(ops);
	free(groups);
	free(fresh);
	free(w);
	return rc;
}

const struct pw_ref_store *pw_cluster_store(struct pw_cluster *c)
{
	return &c->store;
}

/* The peer endpoint: objects in, no ref written; the session's checks
 * (connectivity, fsck when configured) ran before this. */
static int peer_commit(void *data, struct pw_repo *repo, int atomic, struct pw_store_update *u,
                       size_t n, struct pw_error *err)
{
	size_t i;

	(void)data, (void)repo, (void)atomic, (void)err;
	for (i = 0; i < n; i++)
		if (strncmp(u[i].name, "refs/packwire-replica/", 22) ||
		    pw_oid_is_zero(&u[i].new_oid))
			u[i].error = "the peer endpoint takes objects only";
	return 0;
}

const struct pw_ref_store *pw_cluster_peer_store(void)
{
	static const struct pw_ref_store peer = {NULL, peer_commit, NULL, 1};
	return &peer;
}

/* ---- background: lease, catch-up ----------------------------------------- */

static int register_node(struct pw_cluster *c, struct pw_error *err)
{
	struct pw_etcd_op op;
	struct pw_etcd_group g;
	char key[512];
	int64_t ttl = 0;
	int rc;

	if (c->lease && !pw_etcd_lease_keepalive(c->etcd, c->lease, &ttl, err) && ttl > 0)
		return 0;
	if ((rc = pw_etcd_lease_grant(c->etcd, c->o.lease_ttl ? c->o.lease_ttl : 5, &c->lease,
	                              err)))
		return rc;
	snprintf(key, sizeof(key), KP "node/%s", c->node);
	memset(&g, 0, sizeof(g));
	op.key = key;
	op.value = c->advertise;
	op.lease = c->lease;
	g.ops = &op;
	g.nops = 1;
	return pw_etcd_txn(c->etcd, &g, 1, NULL, err);
}

/* A repository etcd has and this node does not: make it, empty. */
static int create_repo(struct pw_cluster *c, const char *name, const char *algo_name,
                       struct pw_error *err)
{
	struct pw_repo_init_opts io;
	struct pw_repo *repo = NULL;
	struct pw_etcd_range r;
	char path[PATH_MAX], key[PATH_MAX + 64];
	int rc;

	memset(&io, 0, sizeof(io));
	io.bare = 1;
	io.algo = pw_hash_by_name(algo_name, strlen(algo_name));
	if (!io.algo)
		return pw_error_set(err, PW_EINVAL, "etcd names an unknown algorithm '%s' for %s",
		                    algo_name, name);
	snprintf(path, sizeof(path), "%s/%s", c->base_real, name);
	if ((rc = pw_repo_init_ext(&repo, path, &io, err)))
		return rc;
	snprintf(key, sizeof(key), KP "refs/%s:HEAD", name);
	if (!pw_etcd_range(c->etcd, key, 0, 0, &r, err)) {
		if (r.nr && !strncmp(r.kvs[0].value, "ref: ", 5))
			pw_refs_create_symref(repo, "HEAD", r.kvs[0].value + 5);
		pw_etcd_range_free(&r);
	}
	/* pushes over HTTP as on the node it was added from */
	snprintf(key, sizeof(key), KP "refs/%s:receivepack", name);
	if (!pw_etcd_range(c->etcd, key, 0, 0, &r, err)) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/config", pw_repo_git_dir(repo));
		if (r.nr && !strcmp(r.kvs[0].value, "true") && (f = fopen(path, "a"))) {
			fputs("[http]\n\treceivepack = true\n", f);
			fclose(f);
		}
		pw_etcd_range_free(&r);
	}
	pw_repo_free(repo);
	logf_(c, "cluster: created %s (%s) to catch up", name, algo_name);
	return 0;
}

/* The node list of a pass that reached etcd: whom to ask when etcd stops
 * answering. */
static void remember_peers(struct pw_cluster *c)
{
	struct peers p;
	struct pw_error err;

	if (list_peers(c, "", &p, &err))
		return;
	pthread_mutex_lock(&c->lock);
	peers_free(&c->last_peers);
	c->last_peers = p;
	pthread_mutex_unlock(&c->lock);
}

/* etcd did not answer this node: does it answer one of the others (their
 * peer endpoint's /healthz, pw_cluster_peer_status)? Then this node is
 * partitioned, and says so on /healthz once that has lasted. */
static void check_partition(struct pw_cluster *c)
{
	struct peers p;
	struct pw_error err;
	char url[4200], who[256] = "";
	size_t i;
	int64_t now;

	memset(&p, 0, sizeof(p));
	pthread_mutex_lock(&c->lock);
	if (c->last_peers.nr && (p.url = calloc(c->last_peers.nr, sizeof(char *))))
		for (i = 0; i < c->last_peers.nr; i++)
			if ((p.url[p.nr] = strdup(c->last_peers.url[i])))
				p.nr++;
	pthread_mutex_unlock(&c->lock);
	for (i = 0; i < p.nr && !*who && !c->stopping; i++) {
		long st = 0;

		snprintf(url, sizeof(url), "%s/healthz", p.url[i]);
		if (!pw_etcd_get_status(url, PEER_STATUS_MS, &st, &err) && st == 200)
			snprintf(who, sizeof(who), "%.250s", p.url[i]);
	}
	peers_free(&p);
	now = pw_etcd_now_ms();
	pthread_mutex_lock(&c->lock);
	if (!*who) {
		c->part_since = 0;
		c->partitioned = 0;
	} else {
		if (!c->part_since)
			c->part_since = now;
		snprintf(c->part_peer, sizeof(c->part_peer), "%s", who);
		if (now - c->part_since >= PART_CONFIRM_MS && !c->partitioned) {
			c->partitioned = 1;
			logf_(c, "cluster: partitioned: this node cannot reach etcd, %s can", who);
		}
	}
	pthread_mutex_unlock(&c->lock);
}

/* One pass over every managed repository. */
static void catch_up(struct pw_cluster *c)
{
	struct pw_etcd_range r;
	struct pw_error err;
	size_t i, pl = strlen(KP "repos/");
	int behind = 0, failed = 0;

	if (register_node(c, &err))
		logf_(c, "cluster: registering node %s: %s", c->node, err.msg);
	if (pw_etcd_range(c->etcd, KP "repos/", 1, 0, &r, &err)) {
		pthread_mutex_lock(&c->lock);
		snprintf(c->etcd_why, sizeof(c->etcd_why), "%.399s", err.msg);
		c->down_since = time(NULL);
		c->etcd_up = 0;
		pthread_mutex_unlock(&c->lock);
		count(&c->etcd_errors);
		__atomic_store_n(&c->watch_reset, 1, __ATOMIC_RELAXED);
		check_partition(c);
		return;
	}
	remember_peers(c);
	for (i = 0; i < r.nr && !c->stopping; i++) {
		const char *name = r.kvs[i].key + pl;
		char path[PATH_MAX];
		struct pw_repo *repo = NULL;
		int managed, b = 0;

		if (!pw_cluster__name_ok(name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", c->base_real, name);
		if (access(path, F_OK) && create_repo(c, name, r.kvs[i].value, &err)) {
			logf_(c, "cluster: %s", err.msg);
			failed = 1;
			continue;
		}
		if (pw_repo_open(&repo, path, &err) ||
		    sync_repo(c, repo, name, &managed, &b, &err)) {
			logf_(c, "cluster: catching up %s: %s", name, err.msg);
			failed = 1;
		}
		behind += b;
		pw_repo_free(repo);
	}
	pw_etcd_range_free(&r);
	pthread_mutex_lock(&c->lock);
	c->etcd_up = 1;
	c->down_since = 0;
	c->part_since = 0;
	c->partitioned = 0;
	c->behind = behind + failed;
	if (!failed && !behind)
		c->synced_once = 1;
	pthread_mutex_unlock(&c->lock);
}

/* The watch's messages: a ref changed: wake the catch-up thread. */
static int on_watch(void *ctx, const struct pw_etcd_watch_msg *m)
{
	struct pw_cluster *c = ctx;

	if (m->created)
		__atomic_store_n(&c->watch_up, 1, __ATOMIC_RELAXED);
	if (m->canceled)
		return PW_EPROTO; /* compacted past our start: a full pass, then anew */
	if (!m->nr)
		return 0;
	__atomic_add_fetch(&c->watch_events, m->nr, __ATOMIC_RELAXED);
	pthread_mutex_lock(&c->lock);
	c->dirty = 1;
	pthread_cond_broadcast(&c->wake);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* Watch /packwire/refs/ from the newest revision read; when the stream
 * breaks, the catch-up thread polls every poll_ms until it is back. */
static void *watch_run(void *arg)
{
	struct pw_cluster *c = arg;
	struct pw_error err;
	int64_t from;
	int rc;

	while (!__atomic_load_n(&c->stopping, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&c->lock);
		from = c->revision ? c->revision + 1 : 0;
		pthread_mutex_unlock(&c->lock);
		__atomic_store_n(&c->watch_reset, 0, __ATOMIC_RELAXED);
		count(&c->watch_starts);
		/* a failed pass (or the end) sets watch_reset: the stream stops */
		rc = pw_etcd_watch(c->etcd, KP "refs/", from, on_watch, c, &c->watch_reset, &err);
		__atomic_store_n(&c->watch_up, 0, __ATOMIC_RELAXED);
		if (__atomic_load_n(&c->stopping, __ATOMIC_RELAXED))
			break;
		if (rc)
			logf_(c, "cluster: the watch of etcd ended (polling until it is back): %s",
			      err.msg);
		pthread_mutex_lock(&c->lock);
		c->dirty = 1; /* what the stream missed */
		pthread_cond_broadcast(&c->wake);
		pthread_mutex_unlock(&c->lock);
		/* wait for a pass to reach etcd before watching again */
		for (rc = 0; rc < 40 && !__atomic_load_n(&c->stopping, __ATOMIC_RELAXED); rc++) {
			usleep(50000);
			if (rc >= 10 && !__atomic_load_n(&c->watch_reset, __ATOMIC_RELAXED))
				break;
		}
	}
	return NULL;
}

/* Every poll_ms: the lease; a full pass when the watch is down, when it
 * saw a change, or every full_pass_ms anyway (a watch can hang silently). */
static void *run(void *arg)
{
	struct pw_cluster *c = arg;
	unsigned ms = c->o.poll_ms ? c->o.poll_ms : 500;
	unsigned full_ms = c->o.full_pass_ms ? c->o.full_pass_ms : 10 * ms;
	int64_t last_full = 0;

	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		struct timespec ts;
		int dirty = c->dirty, now = 0;
		struct pw_error err;

		c->dirty = 0;
		pthread_mutex_unlock(&c->lock);
		if (!__atomic_load_n(&c->watch_up, __ATOMIC_RELAXED) || dirty ||
		    pw_etcd_now_ms() - last_full >= full_ms || register_node(c, &err))
			now = 1;
		if (now) {
			last_full = pw_etcd_now_ms();
			catch_up(c);
		}
		pthread_mutex_lock(&c->lock);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += ms / 1000;
		ts.tv_nsec += (long)(ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		if (!c->stopping && !c->dirty)
			pthread_cond_timedwait(&c->wake, &c->lock, &ts);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int pw_cluster_start(struct pw_cluster **out, const struct pw_cluster_opts *opts,
                     struct pw_error *err)
{
	struct pw_cluster *c;
	char real[PATH_MAX];
	int rc;

	*out = NULL;
	if (!opts->etcd || !opts->node || (!opts->advertise && !opts->transient))
		return pw_error_set(err, PW_EINVAL,
		                    "cluster mode needs --cluster=etcd:URL, --node=NAME and "
		                    "--advertise=URL");
	if (!*opts->node || strchr(opts->node, '/'))
		return pw_error_set(err, PW_EINVAL, "invalid node name '%s'", opts->node);
	if (!realpath(opts->base_path ? opts->base_path : ".", real))
		return pw_error_set(err, PW_EIO, "cannot resolve the base path: %s",
		                    strerror(errno));
	if (!(c = calloc(1, sizeof(*c))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	c->o = *opts;
	c->node = strdup(opts->node);
	c->advertise = strdup(opts->advertise ? opts->advertise : "");
	c->base_real = strdup(real);
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->wake, NULL);
	c->store.prepare = store_prepare;
	c->store.commit = store_commit;
	c->store.data = c;
	if (!c->node || !c->advertise || !c->base_real) {
		pw_cluster_stop(c);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	while (strlen(c->advertise) > 1 && c->advertise[strlen(c->advertise) - 1] == '/')
		c->advertise[strlen(c->advertise) - 1] = '\0';
	if ((rc = pw_etcd_new(&c->etcd, opts->etcd, opts->etcd_timeout_ms, err))) {
		pw_cluster_stop(c);
		return rc;
	}
	/* the catch-up thread registers the node first thing: a node that
	 * starts while etcd is away serves its last state, not ready, and
	 * joins when etcd answers */
	if (opts->transient) {
		*out = c;
		return 0;
	}
	if (pthread_create(&c->thread, NULL, run, c)) {
		pw_cluster_stop(c);
		return pw_error_set(err, PW_ERROR, "cannot start the catch-up thread");
	}
	c->thread_started = 1;
	if (!pthread_create(&c->watcher, NULL, watch_run, c))
		c->watcher_started = 1;
	else
		logf_(c, "cluster: cannot start the watch thread: polling every %u ms",
		      opts->poll_ms ? opts->poll_ms : 500);
	*out = c;
	return 0;
}

void pw_cluster_stop(struct pw_cluster *c)
{
	struct applied *a;

	if (!c)
		return;
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		c->stopping = 1;
		__atomic_store_n(&c->watch_reset, 1, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&c->wake);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	if (c->watcher_started)
		pthread_join(c->watcher, NULL);
	peers_free(&c->last_peers);
	while ((a = c->applied)) {
		c->applied = a->next;
		free(a->name);
		free(a);
	}
	pw_etcd_free(c->etcd);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->wake);
	free(c->node);
	free(c->advertise);
	free(c->base_real);
	free(c);
}

int pw_cluster_not_ready(void *ctx, char *why, size_t cap)
{
	struct pw_cluster *c = ctx;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	if (c->partitioned) {
		snprintf(why, cap,
		         "partitioned: this node cannot reach etcd, but its peer %s can "
		         "(serving from another node)",
		         c->part_peer);
		rc = 1;
	} else if (!c->synced_once) {
		snprintf(why, cap, "catching up: not yet in step with etcd");
		rc = 1;
	} else if (c->behind) {
		snprintf(why, cap, "catching up: %d refs lack objects here", c->behind);
		rc = 1;
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int pw_cluster_peer_status(void *ctx, char *why, size_t cap)
{
	struct pw_cluster *c = ctx;
	int up;

	pthread_mutex_lock(&c->lock);
	up = c->etcd_up;
	pthread_mutex_unlock(&c->lock);
	if (up && pw_etcd_now_ms() - pw_etcd_last_ok_ms(c->etcd) < PEER_FRESH_MS)
		return 0;
	snprintf(why, cap, "this node does not reach etcd");
	return 1;
}

int pw_cluster_metrics(void *ctx, struct pw_buf *out)
{
	struct pw_cluster *c = ctx;
	int ready, up, behind, part;
	long long rev;
	char why[64];

	ready = !pw_cluster_not_ready(c, why, sizeof(why));
	pthread_mutex_lock(&c->lock);
	up = c->etcd_up;
	behind = c->behind;
	part = c->partitioned;
	rev = (long long)c->revision;
	pthread_mutex_unlock(&c->lock);
#define GAUGE(n, help, v)                                                                          \
	pw_buf_addf(out,                                                                           \
	            "# HELP packwire_cluster_" n " " help "\n# TYPE packwire_cluster_" n           \
	            " gauge\npackwire_cluster_" n " %lld\n",                                       \
	            (long long)(v))
#define COUNTER(n, help, v)                                                                        \
	pw_buf_addf(out,                                                                           \
	            "# HELP packwire_cluster_" n " " help "\n# TYPE packwire_cluster_" n           \
	            " counter\npackwire_cluster_" n " %llu\n",                                     \
	            __atomic_load_n(&(v), __ATOMIC_RELAXED))
	if (GAUGE("ready", "1 when this node has every object of the refs in etcd.", ready) ||
	    GAUGE("etcd_up",
	          "1 when the last etcd request answered; 0: reads come from this "
	          "node's last known state and pushes are refused.",
	          up) ||
	    GAUGE("partitioned",
	          "1 while this node cannot reach etcd but a peer can (/healthz 503).", part) ||
	    GAUGE("watch_up", "1 while this node watches etcd's refs (else it polls every 0.5 s).",
	          __atomic_load_n(&c->watch_up, __ATOMIC_RELAXED)) ||
	    COUNTER("watch_events_total", "Ref changes the watch of etcd reported.",
	            c->watch_events) ||
	    COUNTER("watch_starts_total",
	            "Watches of etcd started (the first, then after "
	            "each break).",
	            c->watch_starts) ||
	    GAUGE("refs_behind", "Refs in etcd whose objects this node lacks.", behind) ||
	    GAUGE("etcd_revision", "The newest etcd revision this node has read.", rev) ||
	    COUNTER("stale_reads_total",
	            "Fetches served from the last known refs because etcd did not answer.",
	            c->stale_reads) ||
	    COUNTER("ref_updates_total", "Ref updates committed in etcd by this node.",
	            c->commits) ||
	    COUNTER("ref_updates_lost_total",
	            "Ref updates refused by etcd's compare (a lost race: failed to update ref).",
	            c->lost) ||
	    COUNTER("pushes_refused_total", "Pushes refused because etcd could not be reached.",
	            c->refused) ||
	    COUNTER("replications_total", "Copies of a push's objects to a peer.", c->repl_ok) ||
	    COUNTER("replication_failures_total", "Failed copies to a peer.", c->repl_fail) ||
	    COUNTER("peer_fetches_total", "Fetches of missing objects from a peer.", c->fetch_ok) ||
	    COUNTER("peer_fetch_failures_total", "Failed fetches from a peer.", c->fetch_fail) ||
	    COUNTER("etcd_errors_total", "etcd requests that got no usable answer.",
	            c->etcd_errors))
		return PW_ETOOBIG;
#undef GAUGE
#undef COUNTER
	return 0;
}
