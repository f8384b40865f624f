/* Sessions through a remote helper that cannot connect (it offers "fetch"):
 * "list" gives the refs (":object-format" first when asked), "fetch" lines
 * make the helper store the objects in $GIT_DIR itself. Dispatched from
 * session.c and fetch.c by one line each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client-priv.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/proto.h"
#include "packwire/repo.h"
#include "transport/helper.h"

int pw_client__helper_open(struct pw_session *s, struct pw_helper *h, struct pw_error *err)
{
	struct pw_helper_list_line l;
	struct pw_remote_ref *r = NULL;
	size_t i, j;
	int rc, first = 1;

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
	if ((h->caps & PW_HELPER_OBJECT_FORMAT) &&
	    (rc = pw_helper_option(h, "object-format", "true", err)) < 0)
		return rc;
	if ((rc = pw_helper_write(h, "list\n", 5, err)))
		return rc;
	pw_adv_free(&s->adv);
	pw_adv_init(&s->adv);
	for (;;) {
		if ((rc = pw_helper_read_line(h, err)))
			return rc;
		if (!h->line.len)
			break;
		if ((rc = pw_helper_parse_list_line(h->line.data, h->line.len, s->algo, &l, err)))
			return rc;
		if (l.kind == PW_HLIST_KEYWORD) {
			if (l.name_len == 13 && !memcmp(l.name, "object-format", 13)) {
				if (!first)
					return pw_error_set(
					        err, PW_EPROTO,
					        "remote helper '%s': :object-format after "
					        "the first ref",
					        h->name);
				if ((rc = pw_object_format_lookup(l.value, l.value_len, &s->algo,
				                                  err)))
					return rc;
				s->algo_advertised = 1;
			}
			continue;
		}
		first = 0;
		if (l.kind == PW_HLIST_UNKNOWN)
			continue;
		/* "<oid> refs/tags/x^{}": the tag's peeled value, not a ref */
		if (l.kind == PW_HLIST_REF && l.name_len > 3 &&
		    !memcmp(l.name + l.name_len - 3, "^{}", 3)) {
			r = s->adv.nr ? &s->adv.refs[s->adv.nr - 1] : NULL;
			if (r && strlen(r->name) == l.name_len - 3 &&
			    !memcmp(r->name, l.name, l.name_len - 3)) {
				r->peeled = l.oid;
				r->has_peeled = 1;
			}
			continue;
		}
		if ((rc = pw_adv__add_ref(&s->adv, l.name, l.name_len, &r, err)))
			return rc;
		if (l.kind == PW_HLIST_REF) {
			r->oid = l.oid;
		} else if (!(r->symref_target = strndup(l.value, l.value_len))) {
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	}
	/* a symref has its target's value (unborn when the target is absent) */
	for (i = 0; i < s->adv.nr; i++) {
		r = &s->adv.refs[i];
		if (!r->symref_target)
			continue;
		r->unborn = 1;
		r->oid = *s->algo->zero_oid;
		for (j = 0; j < s->adv.nr; j++)
			if (!s->adv.refs[j].symref_target &&
			    !strcmp(s->adv.refs[j].name, r->symref_target)) {
				r->oid = s->adv.refs[j].oid;
				r->unborn = 0;
			}
	}
	s->adv.algo = s->algo;
	s->adv.algo_advertised = s->algo_advertised;
	s->adv.empty = s->adv.nr == 0;
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
