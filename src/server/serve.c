/* Protocol v2 on the server: capability advertisement, then requests read
 * one at a time (each is complete in itself, so --stateless-rpc serves one):
 * ls-refs, fetch (acknowledgments, shallow-info, wanted-refs, packfile) and
 * object-info. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/config.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "server/filter.h"
#include "server/session.h"
#include "server/upload-parts.h"

static const char *const v2_commands[] = {"ls-refs", "fetch", "object-info", NULL};
static const char *const v2_request_caps[] = {
        "agent",         "ls-refs",    "fetch",       "server-option",
        "object-format", "session-id", "object-info", NULL,
};

/* At most this many ref-prefix lines are honoured; past it, all refs (as Git). */
#define MAX_PREFIXES 65536

static int nomem(struct pw_upload_session *s, int rc)
{
	return pw_error_set(&s->err, rc, "%s", pw_strerror(rc));
}

/* packfile-uris is offered when uploadpack.blobPackfileUri is set (Git). */
static int packfile_uris_on(struct pw_upload_session *s)
{
	const char *v;

	return !pw_config_get_string(pw_repo_config(s->repo), "uploadpack.blobpackfileuri", &v,
	                             NULL) &&
	       v;
}

/* lsrefs.unborn: "advertise" (the default) or "allow" honour an unborn
 * request, "ignore" does not; only "advertise" says so in the capability. */
enum { UNBORN_IGNORE, UNBORN_ALLOW, UNBORN_ADVERTISE };

static int unborn_mode(struct pw_upload_session *s, int *mode)
{
	const char *v = NULL;

	*mode = UNBORN_ADVERTISE;
	if (pw_config_get_string(pw_repo_config(s->repo), "lsrefs.unborn", &v, NULL) || !v)
		return 0;
	if (!strcmp(v, "advertise"))
		*mode = UNBORN_ADVERTISE;
	else if (!strcmp(v, "allow"))
		*mode = UNBORN_ALLOW;
	else if (!strcmp(v, "ignore"))
		*mode = UNBORN_IGNORE;
	else
		return pw_srv_fail(s, PW_EINVAL, "invalid value for 'lsrefs.unborn': '%s'", v);
	return 0;
}

static int advertise(struct pw_upload_session *s)
{
	char agent[96], fetch[96], format[48], sid[128];
	const char *lines[8];
	size_t n = 0;
	int rc, unborn;

	if ((rc = unborn_mode(s, &unborn)))
		return rc;

	snprintf(agent, sizeof(agent), "agent=%s", s->agent);
	snprintf(fetch, sizeof(fetch), "fetch=shallow wait-for-done%s%s%s%s",
	         s->allow_filter ? " filter" : "", s->allow_ref_in_want ? " ref-in-want" : "",
	         s->allow_sideband_all ? " sideband-all" : "",
	         packfile_uris_on(s) && !s->compat ? " packfile-uris" : "");
	snprintf(format, sizeof(format), "object-format=%s", s->wire->name);
	snprintf(sid, sizeof(sid), "session-id=%s", s->sid);
	lines[n++] = agent;
	lines[n++] = unborn == UNBORN_ADVERTISE ? "ls-refs=unborn" : "ls-refs";
	lines[n++] = fetch;
	lines[n++] = "server-option";
	lines[n++] = format;
	if (s->advertise_sid)
		lines[n++] = sid;
	lines[n++] = "object-info";
	if ((rc = pw_v2_adv_write(&s->out, lines, n)))
		return nomem(s, rc);
	return pw_srv_flush_out(s);
}

static int is_line(const struct pw_str *l, const char *word)
{
	return l->len == strlen(word) && !memcmp(l->p, word, l->len);
}

static int unexpected(struct pw_upload_session *s, const struct pw_str *l)
{
	char q[256];
	size_t n = l->len < sizeof(q) - 1 ? l->len : sizeof(q) - 1, i;

	for (i = 0; i < n; i++)
		q[i] = ((unsigned char)l->p[i] < 32 || (unsigned char)l->p[i] > 126) ? '?'
		                                                                     : l->p[i];
	q[n] = '\0';
	return pw_srv_fail(s, PW_EPROTO, "unexpected line: '%s'", q);
}

/* ---- ls-refs ------------------------------------------------------------ */

static int prefix_match(const struct pw_v2_request *req, const size_t *pfx, size_t npfx,
                        const char *name)
{
	size_t i, nl = strlen(name);

	if (!npfx)
		return 1;
	for (i = 0; i < npfx; i++) {
		const struct pw_str *p = &req->args[pfx[i]];
		size_t plen = p->len - 11; /* after "ref-prefix " */

		if (plen <= nl && !memcmp(name, p->p + 11, plen))
			return 1;
	}
	return 0;
}

static int ls_refs(struct pw_upload_session *s, const struct pw_v2_request *req)
{
	int peel = 0, symrefs = 0, unborn = 0, unborn_ok, rc;
	size_t *pfx = NULL, npfx = 0, i;
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_buf line = PW_BUF_INIT;

	if ((rc = unborn_mode(s, &unborn_ok)))
		return rc;
	pfx = malloc((req->nargs + 1) * sizeof(*pfx));
	if (!pfx)
		return nomem(s, PW_ENOMEM);
	for (i = 0; i < req->nargs; i++) {
		const struct pw_str *a = &req->args[i];

		if (is_line(a, "peel"))
			peel = 1;
		else if (is_line(a, "symrefs"))
			symrefs = 1;
		else if (is_line(a, "unborn"))
			unborn = unborn_ok != UNBORN_IGNORE;
		else if (a->len >= 11 && !memcmp(a->p, "ref-prefix ", 11))
			/* an empty prefix matches every ref */
			pfx[npfx++] = i;
		else {
			free(pfx);
			return unexpected(s, a);
		}
	}
	if (npfx > MAX_PREFIXES)
		npfx = 0;
	if ((rc = pw_srv_load_refs(s)))
		goto out;
	if (unborn && symrefs && s->head_unborn && s->head_symref &&
	    prefix_match(req, pfx, npfx, "HEAD") &&
	    (rc = pw_srv_line(s, "unborn HEAD symref-target:%s", s->head_symref)))
		goto out;
	for (i = 0; i < s->nr_refs; i++) {
		const struct pw_adv_ref *r = &s->refs[i];

		if (!prefix_match(req, pfx, npfx, r->name))
			continue;
		pw_buf_reset(&line);
		pw_buf_addf(&line, "%s %s", pw_srv_hex(s, &r->oid, hex), r->name);
		if (symrefs && r->symref) {
			char *final = NULL, *full = pw_srv_ref_full_name(s, r->name);
			struct pw_oid o;

			if (!full) {
				rc = s->err.code;
				goto out;
			}
			if (!pw_refs_resolve(s->repo, full, &o, &final) && final)
				pw_buf_addf(&line, " symref-target:%s",
				            s->ns && !strncmp(final, s->ns, s->ns_len)
				                    ? final + s->ns_len
				                    : final);
			else
				pw_buf_addf(&line, " symref-target:%s", r->symref);
			free(final);
			free(full);
		}
		if (peel && r->has_peeled)
			pw_buf_addf(&line, " peeled:%s", pw_srv_hex(s, &r->peeled, hex));
		if ((rc = pw_srv_line(s, "%s", line.data)))
			goto out;
		if (s->out.len > 32768 && (rc = pw_srv_flush_out(s)))
			goto out;
	}
	if ((rc = pw_pkt_flush(&s->out))) {
		rc = nomem(s, rc);
		goto out;
	}
	rc = pw_srv_flush_out(s);
out:
	pw_buf_free(&line);
	free(pfx);
	return rc;
}

/* ---- object-info -------------------------------------------------------- */

static int object_info(struct pw_upload_session *s, const struct pw_v2_request *req)
{
	struct pw_oid_array oids = {0};
	char hex[PW_MAX_HEXSZ + 1];
	int want_size = 0, rc = 0;
	size_t i;

	for (i = 0; i < req->nargs; i++) {
		const struct pw_str *a = &req->args[i];
		struct pw_oid oid;

		if (is_line(a, "size")) {
			want_size = 1;
		} else if (a->len > 4 && !memcmp(a->p, "oid ", 4)) {
			if (a->len - 4 != s->algo->hexsz ||
			    pw_oid_from_hex(&oid, a->p + 4, a->len - 4, s->algo)) {
				rc = pw_srv_fail(s, PW_EPROTO,
				                 "object-info: expected oid, got '%.*s'",
				                 (int)(a->len > 200 ? 200 : a->len), a->p);
				goto out;
			}
			if ((rc = pw_srv__push_oid(s, &oids, &oid)))
				goto out;
		} else {
			rc = unexpected(s, a);
			goto out;
		}
	}
	if (want_size && (rc = pw_srv_line_nolf(s, "size")))
		goto out;
	for (i = 0; i < oids.nr; i++) {
		uint64_t size;
		int type;

		pw_oid_to_hex(&oids.v[i], hex);
		if (!want_size)
			rc = pw_srv_line_nolf(s, "%s", hex);
		else if (pw_odb_read_header(s->odb, &oids.v[i], &type, &size))
			rc = pw_srv_line_nolf(s, "%s ", hex);
		else
			rc = pw_srv_line_nolf(s, "%s %llu", hex, (unsigned long long)size);
		if (rc)
			goto out;
	}
	if ((rc = pw_pkt_flush(&s->out))) {
		rc = nomem(s, rc);
		goto out;
	}
	rc = pw_srv_flush_out(s);
out:
	free(oids.v);
	return rc;
}

/* ---- fetch -------------------------------------------------------------- */

static int section_end(struct pw_upload_session *s, int delim)
{
	int rc = delim ? pw_pkt_delim(&s->out) : pw_pkt_flush(&s->out);

	return rc ? nomem(s, rc) : 0;
}

/* Features not advertised are not arguments we accept (as Git). */
static int check_features(struct pw_upload_session *s, const struct pw_v2_request *req)
{
	size_t i;

	for (i = 0; i < req->nargs; i++) {
		const struct pw_str *l = &req->args[i];

		if ((!s->allow_filter && l->len >= 7 && !memcmp(l->p, "filter ", 7)) ||
		    (!s->allow_ref_in_want && l->len >= 9 && !memcmp(l->p, "want-ref ", 9)) ||
		    (!s->allow_sideband_all && is_line(l, "sideband-all")) ||
		    (!packfile_uris_on(s) && l->len >= 14 && !memcmp(l->p, "packfile-uris ", 14)))
			return unexpected(s, l);
	}
	return 0;
}

/* The protocols of a "packfile-uris" argument, kept for the pack. */
static int keep_uri_protocols(struct pw_upload_session *s, const struct pw_v2_request *req)
{
	size_t i;

	free(s->uri_protocols);
	s->uri_protocols = NULL;
	for (i = 0; i < req->nargs; i++) {
		const struct pw_str *l = &req->args[i];

		if (l->len > 14 && !memcmp(l->p, "packfile-uris ", 14)) {
			free(s->uri_protocols);
			if (!(s->uri_protocols = strndup(l->p + 14, l->len - 14)))
				return nomem(s, PW_ENOMEM);
		}
	}
	return 0;
}

/* want-ref: resolve now (the values go back in wanted-refs) and want them. */
static int resolve_want_refs(struct pw_upload_session *s, struct pw_oid **oids)
{
	struct pw_fetch_args *a = &s->args;
	size_t i;
	int rc;

	if (!a->want_refs.nr)
		return 0;
	if (!(*oids = malloc(a->want_refs.nr * sizeof(**oids))))
		return nomem(s, PW_ENOMEM);
	for (i = 0; i < a->want_refs.nr; i++) {
		const char *name = a->want_refs.v[i];
		char *full = pw_srv_ref_full_name(s, name);

		if (!full)
			return s->err.code;
		if (!pw_refname_is_storable(name) ||
		    pw_refs_resolve(s->repo, full, &(*oids)[i], NULL)) {
			free(full);
			return pw_srv_fail(s, PW_EPROTO, "unknown ref %s", name);
		}
		free(full);
		if ((rc = pw_srv__push_oid(s, &a->wants, &(*oids)[i])))
			return rc;
	}
	return 0;
}

/* In v2 any object we have may be asked for (as Git). */
static int check_wants(struct pw_upload_session *s)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;

	for (i = 0; i < s->args.wants.nr; i++) {
		uint64_t size;
		int type, rc = pw_odb_read_header(s->odb, &s->args.wants.v[i], &type, &size);

		if (rc == PW_ENOTFOUND)
			return pw_srv_fail(s, PW_EPROTO, "upload-pack: not our ref %s",
			                   pw_oid_to_hex(&s->args.wants.v[i], hex));
		if (rc)
			return pw_error_copy(&s->err, pw_odb_error(s->odb));
	}
	return 0;
}

/* Keep only the haves we have, in order. */
static int keep_common_haves(struct pw_upload_session *s)
{
	struct pw_fetch_args *a = &s->args;
	size_t i, ncommon = 0;
	int rc;

	for (i = 0; i < a->haves.nr; i++) {
		if ((rc = pw_srv_got_have(s, &a->haves.v[i])) < 0)
			return rc;
		if (rc)
			a->haves.v[ncommon++] = a->haves.v[i];
	}
	a->haves.nr = ncommon;
	return 0;
}

/* The acknowledgments section (before "done"); *ready says whether the
 * pack follows in this response. */
static int send_acks(struct pw_upload_session *s, int *ready)
{
	struct pw_fetch_args *a = &s->args;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	*ready = 0;
	if ((rc = pw_srv_line(s, "acknowledgments")))
		return rc;
	if (!a->haves.nr && (rc = pw_srv_line(s, "NAK")))
		return rc;
	for (i = 0; i < a->haves.nr; i++)
		if ((rc = pw_srv_line(s, "ACK %s", pw_oid_to_hex(&a->haves.v[i], hex))))
			return rc;
	if (!a->wait_for_done) {
		if ((*ready = pw_srv_ok_to_give_up(s)) < 0)
			return *ready;
		if (*ready && (rc = pw_srv_line(s, "ready")))
			return rc;
	}
	return section_end(s, *ready);
}

static int send_shallow_info(struct pw_upload_session *s)
{
	int rc, deepen_info = pw_srv_compute_shallow(s);

	if (deepen_info < 0)
		return deepen_info;
	if (!deepen_info && !s->args.shallows.nr)
		return 0;
	if ((rc = pw_srv_line(s, "shallow-info")) || (rc = pw_srv_send_shallow_lines(s)))
		return rc;
	return section_end(s, 1);
}

static int send_wanted_refs(struct pw_upload_session *s, const struct pw_oid *oids)
{
	const struct pw_fetch_args *a = &s->args;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	if (!a->want_refs.nr)
		return 0;
	if ((rc = pw_srv_line(s, "wanted-refs")))
		return rc;
	for (i = 0; i < a->want_refs.nr; i++)
		if ((rc = pw_srv_line(s, "%s %s", pw_srv_hex(s, &oids[i], hex), a->want_refs.v[i])))
			return rc;
	return section_end(s, 1);
}

/* The sections after negotiation: shallow-info, wanted-refs, packfile. */
static int send_response(struct pw_upload_session *s, const struct pw_oid *wanted_ref_oids)
{
	int rc;

	if ((rc = send_shallow_info(s)) || (rc = send_wanted_refs(s, wanted_ref_oids)))
		return rc;
	/* with packfile-uris the pack's side writes the header, after the
	 * packfile-uris section it may need */
	if (s->uri_protocols)
		s->packfile_pending = 1;
	else if ((rc = pw_srv_line(s, "packfile")))
		return rc;
	s->sideband = PW_SIDEBAND_64K;
	/* a pack request in v2 always has sideband; thin/ofs/progress as asked */
	rc = pw_srv_send_pack(s);
	if (!rc && !(rc = section_end(s, 0)))
		rc = pw_srv_flush_out(s);
	return rc;
}

static int fetch_with(struct pw_upload_session *s, const struct pw_v2_request *req,
                      struct pw_oid **wanted_ref_oids)
{
	struct pw_fetch_args *a = &s->args;
	int rc, ready;

	if ((rc = check_features(s, req)) || (rc = keep_uri_protocols(s, req)) ||
	    (rc = pw_fetch_args_v2_request(a, req, &s->err)) || (rc = pw_srv_compat_in(s)) ||
	    (rc = pw_srv_check_filter(s)))
		return rc;
	s->sideband_all = a->sideband_all;
	if ((rc = pw_srv_load_refs(s)) || (rc = resolve_want_refs(s, wanted_ref_oids)) ||
	    (rc = check_wants(s)))
		return rc;
	if (!a->wants.nr && !a->wait_for_done)
		return pw_srv_flush_out(s); /* nothing wanted: nothing to say */
	if ((rc = keep_common_haves(s)))
		return rc;
	if (!a->done) {
		if ((rc = send_acks(s, &ready)))
			return rc;
		if (!ready)
			return pw_srv_flush_out(s);
	}
	return send_response(s, *wanted_ref_oids);
}

static int fetch(struct pw_upload_session *s, const struct pw_v2_request *req)
{
	struct pw_oid *wanted_ref_oids = NULL;
	int rc;

	pw_srv_reset_fetch(s);
	rc = fetch_with(s, req, &wanted_ref_oids);
	free(wanted_ref_oids);
	return rc;
}

/* The client's session-id capability, when we advertise ours (as Git). */
static void trace_client_sid(struct pw_upload_session *s, const struct pw_v2_request *req)
{
	char sid[256];
	size_t i;

	if (!s->advertise_sid)
		return;
	for (i = 0; i < req->ncaps; i++) {
		const struct pw_str *c = &req->caps[i];

		if (c->len >= 11 && !memcmp(c->p, "session-id=", 11)) {
			snprintf(sid, sizeof(sid), "%.*s", (int)(c->len - 11), c->p + 11);
			pw_srv_trace(s, "client-sid", sid);
			return;
		}
	}
}

/* ---- the request loop ----------------------------------------------------- */

int pw_srv__serve_v2(struct pw_upload_session *s)
{
	struct pw_v2_request req;
	struct pw_pkt pkt;
	int rc;

	s->v2 = 1;
	if (!s->opts.stateless_rpc || s->opts.advertise_refs) {
		if ((rc = advertise(s)))
			return rc;
		if (s->opts.advertise_refs)
			return 0;
	}
	for (;;) {
		int started = 0;

		pw_v2_request_init(&req);
		for (;;) {
			struct pw_error e;

			rc = pw_pkt_read(&s->rd, &pkt, &e);
			if (rc) {
				rc = pw_error_copy(&s->err, &e);
				goto out;
			}
			pw_srv_trace_pkt(s, 0, &pkt);
			if (pkt.kind == PW_PKT_EOF) {
				if (!started) {
					rc = 1; /* the client hung up between requests: done */
					goto out;
				}
				rc = pw_srv_fail(s, PW_EPROTO,
				                 "the remote end hung up unexpectedly");
				goto out;
			}
			started = 1;
			rc = pw_v2_request_feed(&req, &pkt, &s->err);
			if (rc != PW_EMORE)
				break;
		}
		if (rc)
			goto out;
		if (req.empty) {
			rc = 1;
			goto out;
		}
		if ((rc = pw_v2_request_check(&req, v2_commands, v2_request_caps, &s->err)))
			goto out;
		if ((rc = pw_v2_request_object_format(&req, s->wire, NULL, &s->err)))
			goto out;
		trace_client_sid(s, &req);
		/* refs are read fresh for every request */
		pw_srv_unload_refs(s);
		if (req.command.len == 7 && !memcmp(req.command.p, "ls-refs", 7))
			rc = ls_refs(s, &req);
		else if (req.command.len == 5 && !memcmp(req.command.p, "fetch", 5))
			rc = fetch(s, &req);
		else
			rc = object_info(s, &req);
		pw_v2_request_free(&req);
		if (rc)
			return rc;
		if (s->opts.stateless_rpc)
			return 0;
	}
out:
	pw_v2_request_free(&req);
	return rc == 1 ? 0 : rc;
}
