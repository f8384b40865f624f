/* --force-with-lease and --force-if-includes for send-pack (push.c): which
 * value a remote ref must still have for its update to go on forced, as
 * Git's apply_push_cas and its reflog check decide it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-priv.h"
#include "packwire/client.h"
#include "packwire/config.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/push.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "refs/reflog.h"

struct track_query {
	const char *name;
	char *out;    /* the first positive fetch refspec's mapping */
	int excluded; /* a negative refspec names it */
	int rc;
};

static int track_query_one(const struct pw_config_entry *e, void *data)
{
	struct track_query *q = data;
	struct pw_refspec rs;
	int m;

	if (!e->value || pw_refspec_parse(&rs, e->value, NULL))
		return 0;
	if (rs.negative) {
		if (pw_refspec_match(&rs, q->name, 0, NULL) == 1)
			q->excluded = 1;
	} else if (!q->out && rs.dst) {
		m = pw_refspec_match(&rs, q->name, 0, &q->out);
		if (m < 0)
			q->rc = m;
	}
	pw_refspec_free(&rs);
	return 0;
}

/* The remote-tracking ref of the remote ref `dst` (the remote's fetch
 * refspecs map it) and its value: 0, PW_ENOTFOUND when there is none or it
 * cannot be read, PW_ENOMEM. */
static int tracking_ref(struct pw_repo *repo, const char *remote, const char *dst, char **name,
                        struct pw_oid *oid, struct pw_error *err)
{
	struct track_query q = {dst, NULL, 0, 0};
	char key[512];

	*name = NULL;
	if (!remote || (size_t)snprintf(key, sizeof(key), "remote.%s.fetch", remote) >= sizeof(key))
		return PW_ENOTFOUND;
	pw_config_get_all(pw_repo_config(repo), key, track_query_one, &q);
	if (q.rc) {
		free(q.out);
		return pw_error_set(err, q.rc, "out of memory");
	}
	if (!q.out || q.excluded || pw_refs_resolve(repo, q.out, oid, NULL)) {
		free(q.out);
		return PW_ENOTFOUND;
	}
	*name = q.out;
	return 0;
}

/* ---- --force-if-includes ------------------------------------------------- */

struct includes {
	struct pw_odb *odb;
	struct pw_oid remote; /* the remote's commit */
	int64_t since;        /* the tracking ref's last move */
	struct pw_oid *seen;  /* local commits since then */
	size_t nr, alloc;
};

/* A commit, or what a tag peels to; 0 when oid is neither. */
static int as_commit(struct pw_odb *odb, const struct pw_oid *oid, struct pw_oid *out)
{
	struct pw_error e;
	int type = 0;

	return pw_odb_peel(odb, oid, out, &type, &e) >= 0 && type == PW_OBJ_COMMIT;
}

static int latest_time(const struct pw_reflog_entry *e, void *data)
{
	*(int64_t *)data = e->timestamp;
	return 1;
}

/* Newest first: an entry at the remote's commit settles it; else collect
 * the commits down to the first entry older than the tracking ref's move. */
static int includes_entry(const struct pw_reflog_entry *e, void *data)
{
	struct includes *in = data;
	struct pw_oid c;

	if (pw_oid_equal(&e->new_oid, &in->remote))
		return 1;
	if (as_commit(in->odb, &e->new_oid, &c)) {
		if (in->nr == in->alloc) {
			size_t a = in->alloc ? in->alloc * 2 : 16;
			struct pw_oid *v = realloc(in->seen, a * sizeof(*v));

			if (!v)
				return PW_ENOMEM;
			in->seen = v;
			in->alloc = a;
		}
		in->seen[in->nr++] = c;
	}
	return e->timestamp < in->since ? 2 : 0;
}

/* Has the remote's value `remote` been integrated locally: is it in the
 * reflog of the local ref named as the remote ref (Git 2.39 looks there),
 * or an ancestor of a commit that reflog held since the tracking ref last
 * moved? 1, 0, or an error. */
static int includes_remote(struct pw_repo *repo, const char *local, const char *tracking,
                           const struct pw_oid *remote, struct pw_error *err)
{
	struct includes in;
	size_t i;
	int rc;

	memset(&in, 0, sizeof(in));
	if (strncmp(local, "refs/", 5))
		return 1; /* no local ref to ask (Git's get_local_ref) */
	if ((rc = pw_odb_open(&in.odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err)))
		return rc;
	if (!as_commit(in.odb, remote, &in.remote)) {
		rc = 0;
		goto out;
	}
	if ((rc = pw_reflog_foreach_reverse(repo, tracking, latest_time, &in.since, err)) < 0)
		goto out;
	rc = pw_reflog_foreach_reverse(repo, local, includes_entry, &in, err);
	if (rc == PW_ENOMEM)
		rc = pw_error_set(err, rc, "out of memory");
	if (rc == 1 || rc < 0)
		goto out; /* found in the reflog, or an error */
	rc = 0;
	for (i = 0; i < in.nr && !rc; i++)
		rc = pw_odb_is_ancestor(in.odb, &in.remote, &in.seen[i], err);
out:
	free(in.seen);
	pw_odb_free(in.odb);
	return rc;
}

/* ---- the lease of one ref ------------------------------------------------ */

int pw_push__lease(struct pw_repo *repo, const struct pw_push_opts *o, const char *remote,
                   struct pw_push_ref *r, enum pw_push_status *verdict, struct pw_error *err)
{
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	int use_tracking = o->lease_all, rc;
	char *tracking = NULL;
	size_t i;

	*verdict = PW_PUSH_PENDING;
	for (i = 0; i < o->nr_leases; i++)
		if (o->leases[i].ref && pw_refname_dwim_match(o->leases[i].ref, r->dst))
			break;
	if (i == o->nr_leases && !o->lease_all)
		return 0;
	r->lease = 1;
	pw_oid_zero(&r->lease_expect, algo);
	if (i < o->nr_leases) {
		use_tracking = o->leases[i].use_tracking;
		if (!use_tracking && !pw_oid_is_zero(&o->leases[i].expect))
			r->lease_expect = o->leases[i].expect;
	}
	if (use_tracking) {
		rc = tracking_ref(repo, remote, r->dst, &tracking, &r->lease_expect, err);
		if (rc == PW_ENOTFOUND)
			pw_oid_zero(&r->lease_expect, algo); /* no tracking ref: no ref expected */
		else if (rc)
			return rc;
	}
	rc = 0;
	if (!pw_oid_equal(&r->old_oid, &r->lease_expect))
		*verdict = PW_PUSH_REJECT_STALE;
	else if (tracking && o->force_if_includes &&
	         (rc = includes_remote(repo, r->dst, tracking, &r->old_oid, err)) == 0)
		*verdict = PW_PUSH_REJECT_REMOTE_UPDATED;
	free(tracking);
	return rc < 0 ? rc : 1;
}
