/* Sessions through a remote helper that cannot connect (it offers "fetch"):
 * "list" gives the refs (":object-format" first when asked), "fetch" lines
 * make the helper store the objects in $GIT_DIR itself. Dispatched from
 * session.c and fetch.c by one line each. A "push" helper likewise reads
 * the objects from $GIT_DIR itself: push.c lists with "list for-push",
 * decides as for any server, and hands the batch to pw_client__helper_push. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client-priv.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/proto.h"
#include "packwire/push.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "transport/helper.h"

/* Send cmd ("list\n" or "list for-push\n") and read the answer into adv;
 * ids are of dflt unless ":object-format" (asked for when the helper has the
 * capability) says otherwise. */
static int helper_list(struct pw_helper *h, const char *cmd, const struct pw_hash_algo *dflt,
                       struct pw_adv *adv, struct pw_error *err)
{
	struct pw_helper_list_line l;
	struct pw_remote_ref *r = NULL;
	const struct pw_hash_algo *algo = dflt;
	size_t i, j;
	int rc, first = 1, advertised = 0;

	if ((h->caps & PW_HELPER_OBJECT_FORMAT) &&
	    (rc = pw_helper_option(h, "object-format", "true", err)) < 0)
		return rc;
	if ((rc = pw_helper_write(h, cmd, strlen(cmd), err)))
		return rc;
	pw_adv_free(adv);
	pw_adv_init(adv);
	for (;;) {
		if ((rc = pw_helper_read_line(h, err)))
			return rc;
		if (!h->line.len)
			break;
		if ((rc = pw_helper_parse_list_line(h->line.data, h->line.len, algo, &l, err)))
			return rc;
		if (l.kind == PW_HLIST_KEYWORD) {
			if (l.name_len == 13 && !memcmp(l.name, "object-format", 13)) {
				if (!first)
					return pw_error_set(
					        err, PW_EPROTO,
					        "remote helper '%s': :object-format after "
					        "the first ref",
					        h->name);
				if ((rc = pw_object_format_lookup(l.value, l.value_len, &algo,
				                                  err)))
					return rc;
				advertised = 1;
			}
			continue;
		}
		first = 0;
		if (l.kind == PW_HLIST_UNKNOWN)
			continue;
		/* "<oid> refs/tags/x^{}": the tag's peeled value, not a ref */
		if (l.kind == PW_HLIST_REF && l.name_len > 3 &&
		    !memcmp(l.name + l.name_len - 3, "^{}", 3)) {
			r = adv->nr ? &adv->refs[adv->nr - 1] : NULL;
			if (r && strlen(r->name) == l.name_len - 3 &&
			    !memcmp(r->name, l.name, l.name_len - 3)) {
				r->peeled = l.oid;
				r->has_peeled = 1;
			}
			continue;
		}
		if (adv->nr >= PW_HELPER_MAX_REFS)
			return pw_error_set(err, PW_ETOOBIG,
			                    "remote helper '%s' listed more than %d refs", h->name,
			                    PW_HELPER_MAX_REFS);
		if ((rc = pw_adv__add_ref(adv, l.name, l.name_len, &r, err)))
			return rc;
		if (l.kind == PW_HLIST_REF) {
			r->oid = l.oid;
		} else if (!(r->symref_target = strndup(l.value, l.value_len))) {
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	}
	/* a symref has its target's value (unborn when the target is absent) */
	for (i = 0; i < adv->nr; i++) {
		r = &adv->refs[i];
		if (!r->symref_target)
			continue;
		r->unborn = 1;
		r->oid = *algo->zero_oid;
		for (j = 0; j < adv->nr; j++)
			if (!adv->refs[j].symref_target &&
			    !strcmp(adv->refs[j].name, r->symref_target)) {
				r->oid = adv->refs[j].oid;
				r->unborn = 0;
			}
	}
	adv->algo = algo;
	adv->algo_advertised = advertised;
	adv->empty = adv->nr == 0;
	return 0;
}

int pw_client__helper_open(struct pw_session *s, struct pw_helper *h, struct pw_error *err)
{
	int rc;

	if (!h)
		return pw_error_set(err, PW_EPROTO, "remote helper: no connection");
	s->helper = h;
	s->version = 0;
	s->algo = &pw_hash_sha1;
	if (!(h->caps & PW_HELPER_FETCH))
		return pw_error_set(
		        err, PW_EUNSUPPORTED,
		        "remote helper '%s' offers no connect, stateless-connect or fetch "
		        "(import/export helpers are not supported)",
		        h->name);
	if ((rc = helper_list(h, "list\n", &pw_hash_sha1, &s->adv, err)))
		return rc;
	s->algo = s->adv.algo;
	s->algo_advertised = s->adv.algo_advertised;
	s->listed = 1;
	if (!s->caps_joined && !(s->caps_joined = strdup("")))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

int pw_client__helper_fetch(struct pw_session *s, struct pw_repo *repo,
                            const struct pw_fetch_request *req, struct pw_fetch_result *res,
                            struct pw_error *err)
{
	struct pw_helper *h = s->helper;
	struct pw_buf cmd = PW_BUF_INIT;
	struct pw_odb *odb = NULL;
	char hex[PW_MAX_HEXSZ + 1], num[32];
	size_t i, j;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = pw_session_check_algo(s, pw_repo_algo(repo), err)))
		return rc;
	if (!req->nr_wants)
		return 0;
	if (req->depth) {
		snprintf(num, sizeof(num), "%u", req->depth);
		if ((rc = pw_helper_option(h, "depth", num, err)) < 0)
			return rc;
		if (rc)
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "remote helper '%s' does not support depth", h->name);
	}
	if (req->filter && (rc = pw_helper_option(h, "filter", req->filter, err)) != 0)
		return rc < 0 ? rc
		              : pw_error_set(err, PW_EUNSUPPORTED,
		                             "remote helper '%s' does not support filters",
		                             h->name);
	if ((req->include_tag && (rc = pw_helper_option(h, "followtags", "true", err)) < 0) ||
	    (req->no_haves && (rc = pw_helper_option(h, "cloning", "true", err)) < 0) ||
	    (rc = pw_helper_option(h, "progress", s->opts.progress ? "true" : "false", err)) < 0)
		return rc;
	for (i = 0; i < req->nr_wants; i++) {
		const char *name = NULL;

		for (j = 0; j < s->adv.nr && !name; j++)
			if (!s->adv.refs[j].symref_target &&
			    pw_oid_equal(&s->adv.refs[j].oid, &req->wants[i]))
				name = s->adv.refs[j].name;
		pw_oid_to_hex(&req->wants[i], hex);
		if (pw_buf_addf(&cmd, "fetch %s %s\n", hex, name ? name : hex)) {
			pw_buf_free(&cmd);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	}
	rc = pw_buf_addch(&cmd, '\n') ? pw_error_set(err, PW_ENOMEM, "out of memory")
	                              : pw_helper_write(h, cmd.data, cmd.len, err);
	pw_buf_free(&cmd);
	if (rc)
		return rc;
	for (;;) {
		if ((rc = pw_helper_read_line(h, err)))
			return rc;
		if (!h->line.len)
			break;
		if (!strncmp(h->line.data, "lock ", 5)) {
			/* the pack is kept until the refs are written in Git; we
			 * write them right after, so the keep file goes now */
			if (strstr(h->line.data + 5, "/objects/pack/") && h->line.len > 10 &&
			    !strcmp(h->line.data + h->line.len - 5, ".keep"))
				unlink(h->line.data + 5);
		} else if (strcmp(h->line.data, "connectivity-ok")) {
			return pw_error_set(
			        err, PW_EPROTO,
			        "remote helper '%s': unexpected answer to fetch: %.200s", h->name,
			        h->line.data);
		}
	}
	/* what the helper stored must be there */
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err)))
		return rc;
	for (i = 0; i < req->nr_wants; i++)
		if (pw_odb_exists(odb, &req->wants[i]) != 1) {
			rc = pw_error_set(err, PW_EPROTO, "remote helper '%s' did not fetch %s",
			                  h->name, pw_oid_to_hex(&req->wants[i], hex));
			break;
		}
	pw_odb_free(odb);
	return rc;
}

int pw_client__helper_close(struct pw_session *s, struct pw_error *err)
{
	int status = 0;

	(void)err;
	/* an empty line ends the session; then the helper exits */
	pw_helper_write(s->helper, "\n", 1, NULL);
	pw_helper_finish(s->helper, &status, NULL);
	pw_helper_free(s->helper);
	s->helper = NULL;
	return 0;
}

/* ---- push through the helper's "push" command ---------------------------- */

void pw_client__helper_end(struct pw_helper *h)
{
	if (!h)
		return;
	pw_helper_write(h, "\n", 1, NULL);
	pw_helper_finish(h, NULL, NULL);
	pw_helper_free(h);
}

int pw_client__helper_push_list(struct pw_helper *h, const struct pw_hash_algo *local,
                                struct pw_adv *adv, struct pw_error *err)
{
	int rc;

	if (!(h->caps & PW_HELPER_PUSH))
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "remote helper '%s' can neither connect nor push", h->name);
	if ((rc = helper_list(h, "list for-push\n", local, adv, err)))
		return rc;
	/* the helper is asked for each of these, not told by capabilities;
	 * push.c compares adv->algo with the repository's */
	free(adv->caps);
	if (!(adv->caps = strdup("delete-refs atomic push-options")))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	adv->caps_len = strlen(adv->caps);
	adv->algo_advertised = 0;
	return 0;
}

static struct pw_push_ref *find_ref(struct pw_push_result *res, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < res->nr; i++)
		if (strlen(res->refs[i].dst) == len && !memcmp(res->refs[i].dst, name, len))
			return &res->refs[i];
	return NULL;
}

/* Git's meanings of an answer's <why>. */
static void push_status(struct pw_push_ref *r, int ok, const char *msg, size_t len)
{
	static const struct {
		const char *why;
		enum pw_push_status st;
	} known[] = {
	        {"up to date", PW_PUSH_UPTODATE},
	        {"non-fast forward", PW_PUSH_REJECT_NONFF},
	        {"non-fast-forward", PW_PUSH_REJECT_NONFF},
	        {"already exists", PW_PUSH_REJECT_EXISTS},
	        {"fetch first", PW_PUSH_REJECT_FETCH_FIRST},
	};
	size_t i;

	r->status = ok ? PW_PUSH_OK : PW_PUSH_REMOTE_REJECT;
	free(r->remote_msg);
	r->remote_msg = NULL;
	if (!msg)
		return;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].why) == len && !memcmp(msg, known[i].why, len)) {
			r->status = known[i].st;
			return;
		}
	if (len == 13 && !memcmp(msg, "forced update", 13)) {
		r->forced_update = 1;
		return;
	}
	if (!ok)
		r->remote_msg = strndup(msg, len);
}

/* The helper's refspecs map a pushed ref to its private copy (Git updates it
 * unless the helper says no-private-update). */
static void update_private(struct pw_helper *h, struct pw_repo *repo, const struct pw_push_ref *r)
{
	struct pw_ref_tx *tx = NULL;
	size_t i;

	if (h->caps & PW_HELPER_NO_PRIVATE_UPDATE)
		return;
	for (i = 0; i < h->nr_refspecs; i++) {
		struct pw_refspec rs;
		char *mapped = NULL;
		int m;

		if (pw_refspec_parse(&rs, h->refspecs[i], NULL))
			continue;
		m = rs.dst ? pw_refspec_match(&rs, r->dst, 0, &mapped) : 0;
		pw_refspec_free(&rs);
		if (m != 1 || !mapped) {
			free(mapped);
			continue;
		}
		if (pw_refname_is_storable(mapped) && !pw_ref_tx_new(&tx, repo)) {
			if (r->is_delete)
				pw_ref_tx_delete(tx, mapped, NULL);
			else
				pw_ref_tx_update(tx, mapped, &r->new_oid, NULL, 0);
			pw_ref_tx_commit(tx);
			pw_ref_tx_free(tx);
			tx = NULL;
		}
		free(mapped);
		return;
	}
}

/* An option the push needs: "unsupported" is Git's fatal error. */
static int push_option(struct pw_helper *h, const char *name, const char *value, const char *what,
                       struct pw_error *err)
{
	int rc = pw_helper_option(h, name, value, err);

	if (rc > 0)
		return pw_error_set(err, PW_EUNSUPPORTED, "helper %s does not support %s", h->name,
		                    what);
	return rc;
}

int pw_client__helper_push(struct pw_helper *h, struct pw_repo *repo, const struct pw_push_opts *o,
                           struct pw_push_result *res, struct pw_error *err)
{
	struct pw_buf cmd = PW_BUF_INIT;
	struct pw_helper_push_line pl;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0;

	for (i = 0; i < res->nr && !rc; i++) {
		struct pw_push_ref *r = &res->refs[i];
		const char *src = r->is_delete ? "" : r->src;

		if (r->status != PW_PUSH_PENDING)
			continue;
		if (!r->is_delete &&
		    (!src || (strcmp(src, "HEAD") && !pw_refname_is_storable(src))))
			src = pw_oid_to_hex(&r->new_oid, hex);
		if (pw_buf_addf(&cmd, "push %s%s:%s\n", r->force ? "+" : "", src, r->dst))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (rc || !cmd.len)
		goto out;
	/* options go before the batch that they change */
	if ((o->dry_run && (rc = push_option(h, "dry-run", "true", "dry-run", err))) ||
	    (o->atomic && (rc = push_option(h, "atomic", "true", "--atomic", err))) ||
	    (o->force && (rc = pw_helper_option(h, "force", "true", err)) < 0))
		goto out;
	rc = 0;
	for (i = 0; i < o->nr_push_options && !rc; i++)
		rc = push_option(h, "push-option", o->push_options[i], "'push-option'", err);
	if (rc || (rc = pw_buf_addch(&cmd, '\n') ? pw_error_set(err, PW_ENOMEM, "out of memory")
	                                         : pw_helper_write(h, cmd.data, cmd.len, err)))
		goto out;
	res->sent = 1;
	for (;;) {
		struct pw_push_ref *r;

		if ((rc = pw_helper_read_line(h, err)))
			goto out;
		if (!h->line.len)
			break;
		if (!strncmp(h->line.data, "option ", 7))
			continue; /* refname/old-oid/new-oid details of the last status */
		if ((rc = pw_helper_parse_push_line(h->line.data, h->line.len, &pl, NULL))) {
			rc = pw_error_set(err, rc,
			                  "remote helper '%s': unexpected push status '%.200s'",
			                  h->name, h->line.data);
			goto out;
		}
		if (!(r = find_ref(res, pl.ref, pl.ref_len)))
			continue; /* Git warns and goes on */
		push_status(r, pl.ok, pl.msg, pl.msg_len);
	}
	for (i = 0; i < res->nr; i++) {
		struct pw_push_ref *r = &res->refs[i];

		if (r->status == PW_PUSH_PENDING)
			r->status = PW_PUSH_NO_REPORT;
		else if (r->status == PW_PUSH_OK && !o->dry_run)
			update_private(h, repo, r);
	}
out:
	pw_buf_free(&cmd);
	return rc;
}
