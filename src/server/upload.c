/* upload-pack sessions: setup, refs, error reporting, and protocol v0/v1
 * (ref advertisement, want/have negotiation with multi_ack(_detailed) and
 * no-done, shallow lines, then the pack). v2 lives in serve.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/receive.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/version.h"
#include "proto/adv.h"
#include "server/filter.h"
#include "server/paths.h"
#include "server/session.h"
#include "server/upload-parts.h"

void pw_upload_pack_opts_init(struct pw_upload_pack_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->progress_fd = -1;
}

int pw_protocol_version_from_env(const char *v)
{
	int best = 0;

	if (!v)
		return 0;
	while (*v) {
		const char *end = strchr(v, ':');
		size_t len = end ? (size_t)(end - v) : strlen(v);

		/* "version=N": Git takes the highest version it knows */
		if (len == 9 && !memcmp(v, "version=", 8) && v[8] >= '0' && v[8] <= '2' &&
		    v[8] - '0' > best)
			best = v[8] - '0';
		v += len;
		if (*v == ':')
			v++;
	}
	return best;
}

static int read_pkt(struct pw_upload_session *s, struct pw_pkt *pkt)
{
	struct pw_error e;
	int rc = pw_pkt_read(&s->rd, pkt, &e);

	if (rc)
		return pw_error_copy(&s->err, &e);
	pw_srv_trace_pkt(s, 0, pkt);
	return 0;
}

static int config_bool(struct pw_upload_session *s, const char *key)
{
	int v = 0;

	if (pw_config_get_bool(pw_repo_config(s->repo), key, &v, NULL))
		return 0;
	return v;
}

/* GIT_NAMESPACE as a ref prefix (paths.h); an empty namespace is none. */
static int namespace_prefix(struct pw_upload_session *s, const char *ns)
{
	struct pw_buf b = PW_BUF_INIT;
	int rc = pw_srv_namespace_prefix(&b, ns);

	if (!rc && b.len) {
		if (!(s->ns = strdup(b.data)))
			rc = PW_ENOMEM;
		s->ns_len = b.len;
	}
	pw_buf_free(&b);
	return rc;
}

int pw_upload_session_new(struct pw_upload_session **out, struct pw_repo *repo, int in_fd,
                          int out_fd, const struct pw_upload_pack_opts *opts, struct pw_error *err)
{
	struct pw_upload_session *s;
	int rc;

	*out = NULL;
	/* a ref store (a cluster's) brings the refs up to date first */
	if (opts && opts->ref_store && opts->ref_store->prepare &&
	    (rc = opts->ref_store->prepare(opts->ref_store->data, repo, "upload-pack", err)))
		return rc;
	s = calloc(1, sizeof(*s));
	if (!s)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	s->repo = repo;
	s->algo = pw_repo_algo(repo);
	if (opts)
		s->opts = *opts;
	else
		pw_upload_pack_opts_init(&s->opts);
	if ((rc = pw_srv_compat_setup(s, err))) {
		free(s);
		return rc;
	}
	snprintf(s->agent, sizeof(s->agent), "%s",
	         s->opts.agent ? s->opts.agent : "packwire/" PW_VERSION);
	s->in_fd = in_fd;
	s->out_fd = out_fd;
	if (s->opts.ref_namespace && (rc = namespace_prefix(s, s->opts.ref_namespace))) {
		pw_srv_compat_free(s);
		free(s);
		return pw_error_set(err, rc, "out of memory");
	}
	s->opts.ref_namespace = NULL; /* borrowed: s->ns is ours */
	pw_buf_init(&s->out, 0);
	pw_fetch_args_init(&s->args, s->wire);
	pw_graph_init(&s->graph, NULL, &s->err);
	rc = pw_pkt_reader_init(&s->rd, in_fd, PW_PKT_READ_CHOMP);
	if (rc) {
		pw_srv_compat_free(s);
		free(s);
		return pw_error_set(err, rc, "out of memory");
	}
	s->rd_ok = 1;
	if (s->opts.timeout > 0)
		s->rd.timeout_ms = s->opts.timeout > 2000000 ? 2000000000 : s->opts.timeout * 1000;
	s->allow_filter = config_bool(s, "uploadpack.allowFilter");
	s->allow_tip = config_bool(s, "uploadpack.allowTipSHA1InWant");
	s->allow_reachable = config_bool(s, "uploadpack.allowReachableSHA1InWant");
	s->allow_any = s->opts.allow_any_want || config_bool(s, "uploadpack.allowAnySHA1InWant");
	if (s->allow_any)
		s->allow_tip = s->allow_reachable = 1;
	s->allow_ref_in_want = config_bool(s, "uploadpack.allowRefInWant");
	s->allow_sideband_all = config_bool(s, "uploadpack.allowSidebandAll");
	s->advertise_sid = config_bool(s, "transfer.advertiseSID");
	if (s->opts.session_id && *s->opts.session_id && !strpbrk(s->opts.session_id, " \n") &&
	    strlen(s->opts.session_id) < sizeof(s->sid))
		snprintf(s->sid, sizeof(s->sid), "%s", s->opts.session_id);
	else {
		struct timeval tv;

		gettimeofday(&tv, NULL);
		snprintf(s->sid, sizeof(s->sid), "packwire-%lld.%06ld-P%08lx", (long long)tv.tv_sec,
		         (long)tv.tv_usec, (unsigned long)getpid());
	}
	s->opts.session_id = NULL;
	*out = s;
	return 0;
}

void pw_upload_session_free(struct pw_upload_session *s)
{
	if (!s)
		return;
	pw_srv_unload_refs(s);
	pw_fetch_args_free(&s->args);
	free(s->uri_protocols);
	pw_graph_free(&s->graph);
	free(s->have_objs.v);
	free(s->new_shallow.v);
	free(s->unshallow.v);
	free(s->srv_shallow.v);
	pw_oidmap_free(&s->srv_shallow_map);
	free(s->ns);
	if (s->rd_ok)
		pw_pkt_reader_free(&s->rd);
	pw_buf_free(&s->out);
	pw_odb_free(s->odb);
	pw_srv_compat_free(s);
	free(s);
}

const struct pw_error *pw_upload_session_error(const struct pw_upload_session *s)
{
	return &s->err;
}

void pw_upload_session_stats(const struct pw_upload_session *s, struct pw_upload_stats *out)
{
	*out = s->stats;
}

/* ---- v0/v1 -------------------------------------------------------------- */

static int v0_caps(struct pw_upload_session *s, struct pw_buf *caps)
{
	int rc = pw_buf_adds(caps, "multi_ack thin-pack side-band side-band-64k ofs-delta shallow "
	                           "deepen-since deepen-not deepen-relative no-progress "
	                           "include-tag multi_ack_detailed");

	if (!rc && s->allow_tip)
		rc = pw_caps_add(caps, "allow-tip-sha1-in-want", NULL);
	if (!rc && s->allow_reachable)
		rc = pw_caps_add(caps, "allow-reachable-sha1-in-want", NULL);
	if (!rc && (s->opts.stateless_rpc || s->opts.advertise_refs))
		rc = pw_caps_add(caps, "no-done", NULL);
	if (!rc && s->head_symref && !s->head_unborn) {
		rc = pw_buf_adds(caps, " symref=HEAD:");
		if (!rc)
			rc = pw_buf_adds(caps, s->head_symref);
	}
	if (!rc && s->allow_filter)
		rc = pw_caps_add(caps, "filter", NULL);
	if (!rc && s->advertise_sid)
		rc = pw_caps_add(caps, "session-id", s->sid);
	if (!rc)
		rc = pw_caps_add(caps, "object-format", s->wire->name);
	if (!rc)
		rc = pw_caps_add(caps, "agent", s->agent);
	return rc ? pw_srv_oom(s) : 0;
}

static int v0_advertise(struct pw_upload_session *s)
{
	struct pw_buf caps = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	if ((rc = pw_srv_load_refs(s)))
		return rc;
	if (s->opts.version == 1 && (rc = pw_pkt_writes(&s->out, "version 1\n")))
		goto nomem;
	if ((rc = v0_caps(s, &caps)))
		goto out;
	if (!s->nr_refs) {
		/* an empty repository still tells its capabilities (and algorithm) */
		if ((rc = pw_adv__write_no_refs(&s->out, s->wire, caps.data, caps.len)))
			goto nomem;
	}
	for (i = 0; i < s->nr_refs; i++) {
		const struct pw_adv_ref *r = &s->refs[i];

		if ((rc = pw_adv__write_ref(&s->out, pw_srv_hex(s, &r->oid, hex), r->name,
		                            i ? NULL : caps.data, caps.len)))
			goto nomem;
		if (r->has_peeled && (rc = pw_pkt_writef(&s->out, "%s %s^{}\n",
		                                         pw_srv_hex(s, &r->peeled, hex), r->name)))
			goto nomem;
		if (s->out.len > 32768 && (rc = pw_srv_flush_out(s)))
			goto out;
	}
	/* a shallow repository tells where its history ends */
	for (i = 0; i < s->srv_shallow.nr; i++)
		if ((rc = pw_pkt_writef(&s->out, "shallow %s\n",
		                        pw_srv_hex(s, &s->srv_shallow.v[i], hex))))
			goto nomem;
	if ((rc = pw_pkt_flush(&s->out)))
		goto nomem;
	rc = pw_srv_flush_out(s);
	goto out;
nomem:
	rc = pw_error_set(&s->err, rc, "advertisement: %s", pw_strerror(rc));
out:
	pw_buf_free(&caps);
	return rc;
}

/* The client closed its end where a packet was due: an error for the log,
 * nothing to send (nobody reads it; Git dies without a word on stdout). */
static int hung_up(struct pw_upload_session *s)
{
	s->err_sent = 1;
	return pw_srv_fail(s, PW_EPROTO, "the remote end hung up unexpectedly");
}

/* The want section, up to the client's flush. 1 when there are wants,
 * 0 when the client is done without asking for anything. */
static int v0_receive_wants(struct pw_upload_session *s)
{
	struct pw_pkt pkt;
	int rc, sid_seen = 0;

	for (;;) {
		if ((rc = read_pkt(s, &pkt)))
			return rc;
		/* Git's clients end with a flush; a bare hang-up is an error, even
		 * an empty stateless request (git upload-pack dies of it too) */
		if (pkt.kind == PW_PKT_EOF)
			return hung_up(s);
		if (pkt.kind == PW_PKT_FLUSH)
			break;
		if (pkt.kind != PW_PKT_DATA)
			return pw_srv_fail(
			        s, PW_EPROTO,
			        "protocol error: unexpected control packet in want list");
		if ((rc = pw_fetch_args_v0_want_line(&s->args, pkt.data, pkt.len, &s->err)))
			return rc;
		if (!sid_seen && s->advertise_sid && s->args.v0_caps) {
			struct pw_str v;
			char sid[256];

			sid_seen = 1;
			if (!pw_caps_get(s->args.v0_caps, strlen(s->args.v0_caps), "session-id",
			                 &v) &&
			    v.p) {
				snprintf(sid, sizeof(sid), "%.*s", (int)v.len, v.p);
				pw_srv_trace(s, "client-sid", sid);
			}
		}
		if (pkt.len > 7 && !memcmp(pkt.data, "filter ", 7) &&
		    !(s->allow_filter && s->args.v0_caps &&
		      pw_caps_has(s->args.v0_caps, strlen(s->args.v0_caps), "filter")))
			return pw_srv_fail(s, PW_EPROTO,
			                   "git upload-pack: filtering capability not negotiated");
	}
	if ((rc = pw_fetch_args_check(&s->args, &s->err)) || (rc = pw_srv_check_filter(s)))
		return rc;
	return s->args.wants.nr ? 1 : 0;
}

enum { ACK_NONE, ACK_MULTI, ACK_DETAILED };

/* Rounds of haves until "done" (or "ready" with no-done). 1 when a pack is
 * to be sent, 0 when this (stateless) request ends without one. may_end:
 * the request may end here, before any have (a stateless client that
 * deepens asks for the shallow list alone first, as git upload-pack
 * allows). */
static int v0_negotiate(struct pw_upload_session *s, int may_end)
{
	int mode = s->args.multi_ack_detailed ? ACK_DETAILED
	           : s->args.multi_ack        ? ACK_MULTI
	                                      : ACK_NONE;
	int got_common = 0, got_other = 0, sent_ready = 0, rc;
	char last_hex[PW_MAX_HEXSZ + 1] = "";
	struct pw_pkt pkt;

	for (;; may_end = 0) {
		if ((rc = read_pkt(s, &pkt)))
			return rc;
		if (pkt.kind == PW_PKT_EOF && may_end)
			return 0;
		/* a request ends with a flush or "done", stateless or not */
		if (pkt.kind == PW_PKT_EOF)
			return hung_up(s);
		if (pkt.kind == PW_PKT_FLUSH) {
			if (mode == ACK_DETAILED && got_common && !got_other) {
				if ((rc = pw_srv_ok_to_give_up(s)) < 0)
					return rc;
				if (rc) {
					sent_ready = 1;
					if ((rc = pw_srv_line(s, "ACK %s ready", last_hex)))
						return rc;
				}
			}
			if ((!s->have_objs.nr || mode != ACK_NONE) && (rc = pw_srv_line(s, "NAK")))
				return rc;
			if (s->args.no_done && sent_ready) {
				if ((rc = pw_srv_line(s, "ACK %s", last_hex)))
					return rc;
				return pw_srv_flush_out(s) ? s->err.code : 1;
			}
			if ((rc = pw_srv_flush_out(s)))
				return rc;
			if (s->opts.stateless_rpc)
				return 0;
			got_common = got_other = 0;
			continue;
		}
		if (pkt.kind != PW_PKT_DATA)
			return pw_srv_fail(
			        s, PW_EPROTO,
			        "protocol error: unexpected control packet in have list");
		if (pkt.len >= 4 && !memcmp(pkt.data, "have", 4)) {
			size_t before = s->args.haves.nr;
			const struct pw_oid *oid;
			char hex[PW_MAX_HEXSZ + 1];

			if ((rc = pw_fetch_args_v0_have_line(&s->args, pkt.data, pkt.len, &s->err)))
				return rc;
			if (s->args.haves.nr == before)
				continue;
			oid = &s->args.haves.v[s->args.haves.nr - 1];
			pw_oid_to_hex(oid, hex);
			rc = pw_srv_got_have(s, oid);
			if (rc < 0)
				return rc;
			if (!rc) {
				got_other = 1;
				if (mode != ACK_NONE) {
					if ((rc = pw_srv_ok_to_give_up(s)) < 0)
						return rc;
					if (rc && mode == ACK_DETAILED) {
						sent_ready = 1;
						rc = pw_srv_line(s, "ACK %s ready", hex);
					} else if (rc) {
						rc = pw_srv_line(s, "ACK %s continue", hex);
					}
					if (rc)
						return rc;
				}
				continue;
			}
			got_common = 1;
			memcpy(last_hex, hex, sizeof(hex));
			if (mode == ACK_DETAILED)
				rc = pw_srv_line(s, "ACK %s common", hex);
			else if (mode == ACK_MULTI)
				rc = pw_srv_line(s, "ACK %s continue", hex);
			else if (s->have_objs.nr == 1)
				rc = pw_srv_line(s, "ACK %s", hex);
			else
				rc = 0;
			if (rc)
				return rc;
			continue;
		}
		if (pkt.len == 4 && !memcmp(pkt.data, "done", 4)) {
			if (s->have_objs.nr) {
				if (mode != ACK_NONE)
					rc = pw_srv_line(s, "ACK %s", last_hex);
				else
					rc = 0;
			} else {
				rc = pw_srv_line(s, "NAK");
			}
			if (rc || (rc = pw_srv_flush_out(s)))
				return rc;
			return 1;
		}
		{
			char q[128];
			size_t n = pkt.len < sizeof(q) - 1 ? pkt.len : sizeof(q) - 1;

			memcpy(q, pkt.data, n);
			q[n] = '\0';
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)q[i] < 32 || (unsigned char)q[i] > 126)
					q[i] = '?';
			return pw_srv_fail(s, PW_EPROTO,
			                   "git upload-pack: expected SHA1 list, got '%s'", q);
		}
	}
}

static int serve_v0(struct pw_upload_session *s)
{
	int rc, deepened;

	if (!s->opts.stateless_rpc || s->opts.advertise_refs) {
		if ((rc = v0_advertise(s)))
			return rc;
		if (s->opts.advertise_refs)
			return 0;
	} else if ((rc = pw_srv_load_refs(s))) {
		return rc;
	}
	pw_srv_reset_fetch(s);
	rc = v0_receive_wants(s);
	if (rc <= 0)
		return rc;
	if ((rc = pw_srv_compat_in(s)) || (rc = pw_srv_check_wants(s)))
		return rc;
	rc = deepened = pw_srv_compute_shallow(s);
	if (rc < 0)
		return rc;
	if (rc) {
		if ((rc = pw_srv_send_shallow_lines(s)) || (rc = pw_pkt_flush(&s->out)) ||
		    (rc = pw_srv_flush_out(s)))
			return rc < 0 && !s->err.code ? pw_error_set(&s->err, rc, "out of memory")
			                              : rc;
	}
	rc = v0_negotiate(s, deepened && s->opts.stateless_rpc);
	if (rc <= 0)
		return rc;
	if (s->args.side_band_64k)
		s->sideband = PW_SIDEBAND_64K;
	else if (s->args.side_band)
		s->sideband = PW_SIDEBAND_SMALL;
	return pw_srv_send_pack(s);
}

/* Tell the client what went wrong, where the protocol still allows it. */
static void report_error(struct pw_upload_session *s)
{
	char msg[PW_ERROR_MSG_MAX + 16];

	/* a client silent past --timeout is dropped without a word, as Git's
	 * upload-pack dies of its alarm */
	if (s->err_sent || !s->err.code || s->rd.timed_out)
		return;
	s->err_sent = 1;
	pw_buf_reset(&s->out);
	s->out_traced = 0;
	if (s->pack_started && s->sideband) {
		snprintf(msg, sizeof(msg), "fatal: %s\n", s->err.msg);
		if (pw_sideband_write(&s->out, PW_BAND_ERROR, msg, strlen(msg),
		                      pw_sideband_max(s->sideband)))
			return;
	} else if (s->pack_started) {
		return;
	} else if (pw_pkt_write_err(&s->out, "%s", s->err.msg)) {
		return;
	}
	pw_pkt_send(s->out_fd, &s->out, NULL);
}

int pw_upload_session_run(struct pw_upload_session *s)
{
	int rc;

	pw_error_clear(&s->err);
	if ((rc = pw_srv_odb(s)) || (rc = pw_srv_load_repo_shallow(s)))
		return rc;
	s->graph.odb = s->odb;
	s->graph.algo = s->algo;
	if (s->srv_shallow.nr)
		s->graph.grafts = &s->srv_shallow_map;
	{
		char v[8];

		snprintf(v, sizeof(v), "%d", s->opts.version);
		pw_srv_trace(s, "negotiated-version", v);
	}
	if (s->opts.version == 2)
		rc = pw_srv__serve_v2(s);
	else
		rc = serve_v0(s);
	if (rc) {
		if (!s->err.code)
			pw_error_set(&s->err, rc, "%s", pw_strerror(rc));
		report_error(s);
		return s->err.code;
	}
	return 0;
}

int pw_upload_pack(struct pw_repo *repo, int in_fd, int out_fd,
                   const struct pw_upload_pack_opts *opts, struct pw_error *err)
{
	struct pw_upload_session *s;
	int rc = pw_upload_session_new(&s, repo, in_fd, out_fd, opts, err);

	if (rc)
		return rc;
	rc = pw_upload_session_run(s);
	if (rc)
		pw_error_copy(err, &s->err);
	pw_upload_session_free(s);
	return rc;
}
