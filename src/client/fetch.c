/* The fetch exchange: wants and haves (v2 rounds or v0 multi_ack_detailed),
 * shallow lines, then the pack, demultiplexed from the side-band on a thread
 * and indexed (fix-thin) into objects/pack as it arrives. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "client/bundle-priv.h"
#include "client/client-priv.h"
#include "client/dumb.h"
#include "client/fetch-fsck.h"
#include "odb/idx.h"
#include "pack/index-pack.h"
#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/compat.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "packwire/version.h"
#include "proto/quote.h"
#include "util/date.h"
#include "util/fs.h"

#define INITIAL_FLUSH  16
#define PIPESAFE_FLUSH 32
#define MAX_IN_VAIN    256
/* a --shallow-exclude name goes into one pkt-line */
#define PW_DEEPEN_NOT_MAX 4096

struct neg {
	struct pw_session *s;
	const struct pw_fetch_request *req;
	const struct pw_hash_algo *algo;
	struct pw_have_walk *walk;
	struct pw_oid *common;
	size_t nr_common, alloc_common;
	struct pw_oid *old_shallow;
	size_t nr_old_shallow;
	/* a deepen of any kind (depth, since, not): the server sends a
	 * shallow list; since is the request's date, read */
	int deepen;
	int64_t since;
	/* shallow-info from the server */
	struct pw_oid *sh_add, *sh_del;
	size_t nr_add, nr_del, alloc_add, alloc_del;
	int got_shallow_info;
	enum pw_sideband_mode sideband;
	int ready, got_ack, in_vain, exhausted;
	struct pw_fetch_result *res;
	/* the received pack: its name, and whether it needs nothing from outside */
	char pack_hex[PW_MAX_HEXSZ + 1];
	int self_contained;
};

static int oid_push(struct pw_oid **v, size_t *nr, size_t *alloc, const struct pw_oid *oid)
{
	if (*nr >= PW_FETCH_MAX_IDS)
		return PW_ETOOBIG;
	if (*nr == *alloc) {
		size_t a = *alloc ? *alloc * 2 : 16;
		void *p = realloc(*v, a * sizeof(**v));

		if (!p)
			return PW_ENOMEM;
		*v = p;
		*alloc = a;
	}
	(*v)[(*nr)++] = *oid;
	return 0;
}

static int quoted_err(struct pw_error *err, const char *what, const char *p, size_t n)
{
	char q[PW_QUOTE_MAX];

	return pw_error_set(err, PW_EPROTO, "protocol error: %s '%s'", what,
	                    pw_proto__quote(q, sizeof(q), p, n));
}

/* "<prefix><oid>[ <rest>]": 0 with *rest after the id (NULL at end). */
static int line_oid(struct neg *n, const struct pw_pkt *pkt, size_t skip, struct pw_oid *oid,
                    const char **rest)
{
	size_t hex = n->algo->hexsz;

	if (pkt->len < skip + hex || pw_oid_from_hex(oid, pkt->data + skip, hex, n->algo))
		return -1;
	if (pkt->len == skip + hex) {
		*rest = NULL;
		return 0;
	}
	if (pkt->data[skip + hex] != ' ')
		return -1;
	*rest = pkt->data + skip + hex + 1;
	return 0;
}

static int read_line(struct neg *n, struct pw_pkt *pkt, struct pw_error *err)
{
	struct pw_str msg;
	int rc = pw_client__read(n->s, pkt, err);

	if (rc)
		return rc;
	if (pkt->kind == PW_PKT_EOF)
		return pw_error_set(err, PW_EPROTO, "the remote end hung up unexpectedly");
	if (pkt->kind == PW_PKT_DATA) {
		if (pw_pkt_is_err(pkt, &msg))
			return pw_error_set(err, PW_EPROTO, "remote error: %.*s", (int)msg.len,
			                    msg.p);
		pw_pkt_chomp(pkt);
	}
	return 0;
}

/* shallow / unshallow lines (v0 after deepen, v2 shallow-info section). */
static int shallow_line(struct neg *n, const struct pw_pkt *pkt, struct pw_error *err)
{
	struct pw_oid oid;
	const char *rest;
	int rc;

	if (pkt->len > 8 && !memcmp(pkt->data, "shallow ", 8) &&
	    !line_oid(n, pkt, 8, &oid, &rest) && !rest)
		rc = oid_push(&n->sh_add, &n->nr_add, &n->alloc_add, &oid);
	else if (pkt->len > 10 && !memcmp(pkt->data, "unshallow ", 10) &&
	         !line_oid(n, pkt, 10, &oid, &rest) && !rest)
		rc = oid_push(&n->sh_del, &n->nr_del, &n->alloc_del, &oid);
	else
		return quoted_err(err, "expected shallow/unshallow, got", pkt->data, pkt->len);
	n->got_shallow_info = 1;
	return rc ? pw_error_set(err, rc, "too many shallow lines") : 0;
}

/* An acknowledgment: ACK <oid> [common|ready|continue] or NAK. *done is set
 * for NAK and for a bare ACK (v0 end of negotiation). */
static int ack_line(struct neg *n, const struct pw_pkt *pkt, int *done, struct pw_error *err)
{
	struct pw_oid oid;
	const char *rest;

	*done = 0;
	if (pkt->len == 3 && !memcmp(pkt->data, "NAK", 3)) {
		*done = 1;
		return 0;
	}
	if (pkt->len == 5 && !memcmp(pkt->data, "ready", 5)) {
		n->ready = 1;
		return 0;
	}
	if (pkt->len < 4 || memcmp(pkt->data, "ACK ", 4) || line_oid(n, pkt, 4, &oid, &rest))
		return quoted_err(err, "expected ACK/NAK, got", pkt->data, pkt->len);
	if (!rest && n->s->version != 2) {
		*done = 1;
		return 0;
	}
	if (rest) {
		size_t rl = pkt->len - (size_t)(rest - pkt->data);

		if (rl == 5 && !memcmp(rest, "ready", 5))
			n->ready = 1;
		else if (!((rl == 6 && !memcmp(rest, "common", 6)) ||
		           (rl == 8 && !memcmp(rest, "continue", 8))))
			return quoted_err(err, "unexpected acknowledgment", pkt->data, pkt->len);
	}
	if (n->walk)
		pw_have_walk_mark_common(n->walk, &oid);
	n->got_ack = 1;
	n->in_vain = 0;
	if (oid_push(&n->common, &n->nr_common, &n->alloc_common, &oid))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

static int next_flush(int count)
{
	return count < PIPESAFE_FLUSH ? count * 2 : count + PIPESAFE_FLUSH;
}

/* Append up to count new haves; sets exhausted when the walk ends. */
static int add_haves(struct neg *n, int count, int *added)
{
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid oid;
	int rc = 0;

	*added = 0;
	while (*added < count && !n->exhausted) {
		if (!n->walk || !pw_have_walk_next(n->walk, &oid)) {
			n->exhausted = 1;
			break;
		}
		if ((rc = pw_pkt_writef(&n->s->out, "have %s\n", pw_oid_to_hex(&oid, hex))))
			return rc;
		(*added)++;
		n->in_vain++;
		n->res->haves_sent++;
	}
	return 0;
}

static int write_shallow_args(struct neg *n)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < n->nr_old_shallow; i++)
		rc = pw_pkt_writef(&n->s->out, "shallow %s\n",
		                   pw_oid_to_hex(&n->old_shallow[i], hex));
	if (!rc && n->req->depth)
		rc = pw_pkt_writef(&n->s->out, "deepen %u\n", n->req->depth);
	if (!rc && n->req->deepen_since)
		rc = pw_pkt_writef(&n->s->out, "deepen-since %lld\n", (long long)n->since);
	for (i = 0; !rc && i < n->req->nr_deepen_not; i++)
		rc = pw_pkt_writef(&n->s->out, "deepen-not %s\n", n->req->deepen_not[i]);
	return rc;
}

static int write_wants(struct neg *n, const char *first_caps)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < n->req->nr_wants; i++) {
		pw_oid_to_hex(&n->req->wants[i], hex);
		if (!i && first_caps)
			rc = pw_pkt_writef(&n->s->out, "want %s %s\n", hex, first_caps);
		else
			rc = pw_pkt_writef(&n->s->out, "want %s\n", hex);
	}
	return rc;
}

static int give_up(struct neg *n)
{
	return n->exhausted || (n->got_ack && n->in_vain >= MAX_IN_VAIN);
}

/* ---- protocol v2 -------------------------------------------------------- */

/* A warning for the caller, unless it asked for quiet. */
static void warn(const struct pw_session *s, const char *msg)
{
	if (!s->opts.quiet && s->opts.report.warning)
		s->opts.report.warning(s->opts.report.data, msg);
}

static int v2_negotiate(struct neg *n, struct pw_error *err)
{
	struct pw_session *s = n->s;
	int count = INITIAL_FLUSH, rc;

	if (n->deepen && !pw_v2_caps_has_feature(&s->caps2, "fetch", "shallow"))
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "Server does not support shallow requests");
	for (;;) {
		int added = 0, done = 0;
		size_t i;
		struct pw_pkt pkt;

		if ((rc = pw_client__v2_command(s, "fetch", err)))
			return rc;
		rc = pw_pkt_writes(&s->out, "thin-pack\n");
		if (!rc && !s->opts.progress)
			rc = pw_pkt_writes(&s->out, "no-progress\n");
		if (!rc && n->req->include_tag)
			rc = pw_pkt_writes(&s->out, "include-tag\n");
		if (!rc)
			rc = pw_pkt_writes(&s->out, "ofs-delta\n");
		if (!rc)
			rc = write_shallow_args(n);
		if (!rc && n->req->filter) {
			if (pw_v2_caps_has_feature(&s->caps2, "fetch", "filter"))
				rc = pw_pkt_writef(&s->out, "filter %s\n", n->req->filter);
			else
				warn(s, "filtering not recognized by server, ignoring");
		}
		if (!rc)
			rc = write_wants(n, NULL);
		for (i = 0; !rc && i < n->nr_common; i++) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_pkt_writef(&s->out, "have %s\n", pw_oid_to_hex(&n->common[i], hex));
		}
		if (!rc && !n->req->no_haves)
			rc = add_haves(n, count, &added);
		if (n->req->no_haves)
			n->exhausted = 1;
		if (!rc && (give_up(n) && !added)) {
			done = 1;
			rc = pw_pkt_writes(&s->out, "done\n");
		}
		if (!rc)
			rc = pw_pkt_flush(&s->out);
		if (rc)
			return pw_error_set(err, rc, "out of memory");
		if ((rc = pw_client__send(s, err)))
			return rc;
		n->res->rounds++;
		if (done)
			return 0;
		/* acknowledgments section */
		if ((rc = read_line(n, &pkt, err)))
			return rc;
		if (pkt.kind != PW_PKT_DATA || pkt.len != 15 ||
		    memcmp(pkt.data, "acknowledgments", 15))
			return quoted_err(err, "expected 'acknowledgments', got",
			                  pkt.data ? pkt.data : "(control packet)",
			                  pkt.data ? pkt.len : 16);
		for (;;) {
			int end;

			if ((rc = read_line(n, &pkt, err)))
				return rc;
			if (pkt.kind == PW_PKT_FLUSH)
				break;
			if (pkt.kind == PW_PKT_DELIM) {
				if (!n->ready)
					return pw_error_set(err, PW_EPROTO,
					                    "protocol error: expected flush after "
					                    "acknowledgments without 'ready'");
				return 0;
			}
			if (pkt.kind != PW_PKT_DATA)
				return pw_error_set(err, PW_EPROTO,
				                    "protocol error: unexpected packet in "
				                    "acknowledgments");
			if ((rc = ack_line(n, &pkt, &end, err)))
				return rc;
		}
		if (n->ready)
			return pw_error_set(err, PW_EPROTO,
			                    "protocol error: expected packfile after 'ready'");
		if ((rc = pw_client__response_end(s, "acknowledgments", err)))
			return rc;
		count = next_flush(count);
	}
}

/* After negotiation: sections up to "packfile". */
static int v2_sections(struct neg *n, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc;

	for (;;) {
		int section;

		if ((rc = read_line(n, &pkt, err)))
			return rc;
		if (pkt.kind != PW_PKT_DATA)
			return pw_error_set(err, PW_EPROTO,
			                    "protocol error: expected a section header, got a "
			                    "control packet");
		if (pkt.len == 8 && !memcmp(pkt.data, "packfile", 8)) {
			n->sideband = PW_SIDEBAND_64K;
			return 0;
		}
		if (pkt.len == 12 && !memcmp(pkt.data, "shallow-info", 12))
			section = 1;
		else if ((pkt.len == 11 && !memcmp(pkt.data, "wanted-refs", 11)) ||
		         (pkt.len == 13 && !memcmp(pkt.data, "packfile-uris", 13)))
			section = 2;
		else if (pkt.len == 15 && !memcmp(pkt.data, "acknowledgments", 15))
			section = 3;
		else
			return quoted_err(err, "expected 'packfile', got", pkt.data, pkt.len);
		for (;;) {
			int end;

			if ((rc = read_line(n, &pkt, err)))
				return rc;
			if (pkt.kind == PW_PKT_DELIM)
				break;
			if (pkt.kind != PW_PKT_DATA)
				return pw_error_set(err, PW_EPROTO,
				                    "protocol error: the server ended the response "
				                    "without a pack");
			if (section == 1 && (rc = shallow_line(n, &pkt, err)))
				return rc;
			if (section == 3 && (rc = ack_line(n, &pkt, &end, err)))
				return rc;
		}
	}
}

/* ---- protocol v0/v1 ----------------------------------------------------- */

static int v0_caps(struct neg *n, struct pw_buf *caps, struct pw_error *err)
{
	const char *sc = n->s->adv.caps ? n->s->adv.caps : "";
	size_t sl = n->s->adv.caps_len;
	int rc = 0;

#define HAS(k) pw_caps_has(sc, sl, k)
	if (HAS("multi_ack_detailed"))
		rc = pw_caps_add(caps, "multi_ack_detailed", NULL);
	else if (HAS("multi_ack"))
		rc = pw_caps_add(caps, "multi_ack", NULL);
	if (!rc && HAS("side-band-64k")) {
		rc = pw_caps_add(caps, "side-band-64k", NULL);
		n->sideband = PW_SIDEBAND_64K;
	} else if (!rc && HAS("side-band")) {
		rc = pw_caps_add(caps, "side-band", NULL);
		n->sideband = PW_SIDEBAND_SMALL;
	}
	if (!rc && HAS("thin-pack"))
		rc = pw_caps_add(caps, "thin-pack", NULL);
	if (!rc && !n->s->opts.progress && HAS("no-progress"))
		rc = pw_caps_add(caps, "no-progress", NULL);
	if (!rc && n->req->include_tag && HAS("include-tag"))
		rc = pw_caps_add(caps, "include-tag", NULL);
	if (!rc && HAS("ofs-delta"))
		rc = pw_caps_add(caps, "ofs-delta", NULL);
	if (!rc && (n->req->depth || n->nr_old_shallow)) {
		if (!HAS("shallow"))
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "Server does not support shallow clients");
		rc = pw_caps_add(caps, "shallow", NULL);
	}
	/* git's words when the server cannot cut the history that way */
	if (!rc && n->req->deepen_since) {
		if (!HAS("deepen-since"))
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "Server does not support --shallow-since");
		rc = pw_caps_add(caps, "deepen-since", NULL);
	}
	if (!rc && n->req->nr_deepen_not) {
		if (!HAS("deepen-not"))
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "Server does not support --shallow-exclude");
		rc = pw_caps_add(caps, "deepen-not", NULL);
	}
	if (!rc && n->req->filter) {
		if (HAS("filter"))
			rc = pw_caps_add(caps, "filter", NULL);
		else
			warn(n->s, "filtering not recognized by server, ignoring");
	}
	if (!rc)
		rc = pw_caps_add(caps, "agent", "packwire/" PW_VERSION);
#undef HAS
	return rc ? pw_error_set(err, rc, "out of memory") : 0;
}

static int v0_negotiate(struct neg *n, struct pw_error *err)
{
	struct pw_session *s = n->s;
	struct pw_buf caps = PW_BUF_INIT;
	struct pw_pkt pkt;
	int rc, count = INITIAL_FLUSH, end;
	int multi_ack = pw_caps_has(s->adv.caps, s->adv.caps_len, "multi_ack_detailed") ||
	                pw_caps_has(s->adv.caps, s->adv.caps_len, "multi_ack");

	if ((rc = v0_caps(n, &caps, err)))
		goto out;
	pw_buf_reset(&s->out);
	rc = write_wants(n, caps.data);
	if (!rc)
		rc = write_shallow_args(n);
	if (!rc && n->req->filter && pw_caps_has(s->adv.caps, s->adv.caps_len, "filter"))
		rc = pw_pkt_writef(&s->out, "filter %s\n", n->req->filter);
	if (!rc)
		rc = pw_pkt_flush(&s->out);
	if (rc) {
		rc = pw_error_set(err, rc, "out of memory");
		goto out;
	}
	if ((rc = pw_client__send(s, err)))
		goto out;
	if (n->deepen) {
		for (;;) {
			if ((rc = read_line(n, &pkt, err)))
				goto out;
			if (pkt.kind == PW_PKT_FLUSH)
				break;
			if (pkt.kind != PW_PKT_DATA) {
				rc = pw_error_set(err, PW_EPROTO,
				                  "protocol error: bad shallow list");
				goto out;
			}
			if ((rc = shallow_line(n, &pkt, err)))
				goto out;
		}
	}
	if (n->req->no_haves || !multi_ack)
		n->exhausted = 1;
	while (!n->ready && !give_up(n)) {
		int added;

		pw_buf_reset(&s->out);
		if ((rc = add_haves(n, count, &added)) || (added && (rc = pw_pkt_flush(&s->out)))) {
			rc = pw_error_set(err, rc, "out of memory");
			goto out;
		}
		if (!added)
			break;
		if ((rc = pw_client__send(s, err)))
			goto out;
		n->res->rounds++;
		do {
			if ((rc = read_line(n, &pkt, err)))
				goto out;
			if (pkt.kind != PW_PKT_DATA) {
				rc = pw_error_set(err, PW_EPROTO,
				                  "protocol error: expected ACK/NAK");
				goto out;
			}
			if ((rc = ack_line(n, &pkt, &end, err)))
				goto out;
		} while (!end);
		count = next_flush(count);
	}
	pw_buf_reset(&s->out);
	if ((rc = pw_pkt_writes(&s->out, "done\n"))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto out;
	}
	if ((rc = pw_client__send(s, err)))
		goto out;
	n->res->rounds++;
	/* the final ACK <oid> or NAK (multi_ack may repeat common ACKs first) */
	do {
		if ((rc = read_line(n, &pkt, err)))
			goto out;
		if (pkt.kind != PW_PKT_DATA) {
			rc = pw_error_set(err, PW_EPROTO, "protocol error: expected ACK/NAK");
			goto out;
		}
		if ((rc = ack_line(n, &pkt, &end, err)))
			goto out;
	} while (!end);
out:
	pw_buf_free(&caps);
	return rc;
}

/* Stateless v0/v1 (smart HTTP), as Git's fetch-pack with stateless_rpc:
 * every request repeats the wants (and shallow/deepen/filter) and every
 * have the server acknowledged as common; a depth makes every response
 * start with the shallow list; "no-done" spares the last request once the
 * server said ready. */
static int v0_stateless_read_shallow(struct neg *n, int keep, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc;

	if (!n->deepen)
		return 0;
	for (;;) {
		if ((rc = read_line(n, &pkt, err)))
			return rc;
		if (pkt.kind == PW_PKT_FLUSH)
			return 0;
		if (pkt.kind != PW_PKT_DATA)
			return pw_error_set(err, PW_EPROTO, "protocol error: bad shallow list");
		if (keep && (rc = shallow_line(n, &pkt, err)))
			return rc;
	}
}

/* ACK/NAK lines up to NAK or a final ACK; ACK common for a new commit is
 * replayed in every later request (state). */
static int v0_stateless_acks(struct neg *n, struct pw_buf *state, int *final, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc, end;

	*final = 0;
	do {
		size_t before = n->nr_common;

		if ((rc = read_line(n, &pkt, err)))
			return rc;
		if (pkt.kind != PW_PKT_DATA)
			return pw_error_set(err, PW_EPROTO, "protocol error: expected ACK/NAK");
		if ((rc = ack_line(n, &pkt, &end, err)))
			return rc;
		if (end && pkt.len > 3 && !memcmp(pkt.data, "ACK ", 4))
			*final = 1;
		if (n->nr_common > before) {
			char hex[PW_MAX_HEXSZ + 1];
			const struct pw_oid *oid = &n->common[n->nr_common - 1];
			size_t i;

			for (i = 0; i < before; i++)
				if (pw_oid_equal(&n->common[i], oid))
					break;
			if (i == before &&
			    pw_pkt_writef(state, "have %s\n", pw_oid_to_hex(oid, hex)))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			if (i < before)
				n->nr_common--;
		}
	} while (!end);
	return 0;
}

static int v0_negotiate_stateless(struct neg *n, struct pw_error *err)
{
	struct pw_session *s = n->s;
	struct pw_buf caps = PW_BUF_INIT, state = PW_BUF_INIT;
	int rc, count = INITIAL_FLUSH, final = 0, sent_rounds = 0;
	const char *sc = s->adv.caps ? s->adv.caps : "";
	int no_done = pw_caps_has(sc, s->adv.caps_len, "no-done");

	if (!pw_caps_has(sc, s->adv.caps_len, "multi_ack_detailed"))
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "the server does not offer multi_ack_detailed, which stateless "
		                    "(HTTP) fetches need");
	if ((rc = v0_caps(n, &caps, err)))
		goto out;
	if (no_done && (rc = pw_caps_add(&caps, "no-done", NULL))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto out;
	}
	{
		struct pw_buf *save = &s->out;

		pw_buf_reset(save);
		rc = write_wants(n, caps.data);
		if (!rc)
			rc = write_shallow_args(n);
		if (!rc && n->req->filter && pw_caps_has(sc, s->adv.caps_len, "filter"))
			rc = pw_pkt_writef(save, "filter %s\n", n->req->filter);
		if (!rc)
			rc = pw_pkt_flush(save);
		if (!rc)
			rc = pw_buf_add(&state, save->data, save->len);
		if (rc) {
			rc = pw_error_set(err, rc, "out of memory");
			goto out;
		}
	}
	if (n->deepen) {
		/* the shallow list alone first, as Git does: upload-pack ends that
		 * answer after the list's flush (no NAK) */
		if ((rc = pw_client__send(s, err)) || (rc = v0_stateless_read_shallow(n, 1, err)))
			goto out;
		n->res->rounds++;
	}
	if (n->req->no_haves)
		n->exhausted = 1;
	while (!n->ready && !final && !give_up(n)) {
		int added;

		pw_buf_reset(&s->out);
		if ((rc = pw_buf_add(&s->out, state.data, state.len)) ||
		    (rc = add_haves(n, count, &added)) || (added && (rc = pw_pkt_flush(&s->out)))) {
			rc = pw_error_set(err, rc, "out of memory");
			goto out;
		}
		if (!added)
			break;
		if ((rc = pw_client__send(s, err)))
			goto out;
		n->res->rounds++;
		sent_rounds++;
		if ((rc = v0_stateless_read_shallow(n, 0, err)) ||
		    (rc = v0_stateless_acks(n, &state, &final, err)))
			goto out;
		count = count < 16384 ? count * 2 : count * 11 / 10;
	}
	if (n->ready && no_done) {
		/* the server goes on with its final ACK and the pack */
		if (!final && (rc = v0_stateless_acks(n, &state, &final, err)))
			goto out;
		goto out;
	}
	pw_buf_reset(&s->out);
	if ((rc = pw_buf_add(&s->out, state.data, state.len)) ||
	    (rc = pw_pkt_writes(&s->out, "done\n"))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto out;
	}
	if ((rc = pw_client__send(s, err)))
		goto out;
	n->res->rounds++;
	if ((rc = v0_stateless_read_shallow(n, 0, err)) ||
	    (rc = v0_stateless_acks(n, &state, &final, err)))
		goto out;
out:
	(void)sent_rounds;
	pw_buf_free(&caps);
	pw_buf_free(&state);
	return rc;
}

/* ---- receiving the pack ------------------------------------------------- */

struct demux {
	struct pw_session *s;
	enum pw_sideband_mode sideband;
	int out_fd;
	struct pw_error err;
	int rc;
	int write_failed; /* index-pack stopped reading (its own error says why) */
};

static void *demux_main(void *arg)
{
	struct demux *d = arg;
	struct pw_session *s = d->s;
	const struct pw_report *rep = &s->opts.report;
	struct pw_pkt pkt;
	int rc = 0;

	if (d->sideband == PW_SIDEBAND_NONE) {
		const uint8_t *p;
		size_t len;
		char buf[65536];

		pw_pkt_reader_pending(&s->rd, &p, &len);
		if (len && (rc = pw_write_full(d->out_fd, p, len, &d->err)))
			d->write_failed = 1;
		while (!rc) {
			ssize_t r = read(s->rd.fd, buf, sizeof(buf));

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0) {
				rc = pw_error_set(&d->err, PW_EIO, "read error: %s",
				                  strerror(errno));
				break;
			}
			if (!r)
				break;
			if ((rc = pw_write_full(d->out_fd, buf, (size_t)r, &d->err)))
				d->write_failed = 1;
		}
		goto out;
	}
	for (;;) {
		struct pw_str payload;
		int band;

		if ((rc = pw_pkt_read(&s->rd, &pkt, &d->err)))
			break;
		if (pkt.kind == PW_PKT_FLUSH) {
			pw_client__trace_pkt(s->opts.trace_packet, s->opts.trace_packet_ctx, 0,
			                     &pkt);
			break;
		}
		if (pkt.kind == PW_PKT_EOF) {
			rc = pw_error_set(&d->err, PW_EPROTO,
			                  "the remote end hung up unexpectedly");
			break;
		}
		if (pkt.kind != PW_PKT_DATA) {
			rc = pw_error_set(&d->err, PW_EPROTO,
			                  "protocol error: unexpected control packet in the pack "
			                  "stream");
			break;
		}
		if (pkt.len > pw_sideband_max(d->sideband) - 4) {
			rc = pw_error_set(
			        &d->err, PW_EPROTO,
			        "protocol error: side-band packet of %zu bytes is too long",
			        pkt.len);
			break;
		}
		if ((rc = pw_sideband_demux(&pkt, &band, &payload, &d->err)))
			break;
		if (band == PW_BAND_DATA) {
			if ((rc = pw_write_full(d->out_fd, payload.p, payload.len, &d->err))) {
				d->write_failed = 1;
				break;
			}
		} else if (band == PW_BAND_PROGRESS) {
			if (rep->remote)
				rep->remote(rep->data, payload.p, payload.len);
		} else {
			size_t l = payload.len;

			while (l && (payload.p[l - 1] == '\n' || payload.p[l - 1] == '\r'))
				l--;
			rc = pw_error_set(&d->err, PW_EPROTO, "remote error: %.*s", (int)l,
			                  payload.p);
			break;
		}
	}
out:
	if (rep->remote)
		rep->remote(rep->data, NULL, 0);
	close(d->out_fd);
	d->out_fd = -1;
	d->rc = rc;
	return NULL;
}

static int ip_read(void *ctx, const struct pw_oid *oid, int *type, struct pw_buf *out)
{
	return pw_odb_read(ctx, oid, type, out) ? PW_ENOTFOUND : 0;
}

static int ip_has(void *ctx, const struct pw_oid *oid)
{
	return pw_odb_exists(ctx, oid);
}

struct progress {
	uint64_t received; /* objects in the pack */
	pw_progress_fn fn; /* NULL: not wanted */
	void *data;
	int last_phase;
	unsigned last_pct;
	uint64_t last_done;
};

/* index-pack's counts, passed on when the percentage moves */
static void ip_progress(void *ctx, int phase, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	const char *title = phase == PW_IPACK_RECEIVING ? "Receiving objects" : "Resolving deltas";
	unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
	int same = phase == p->last_phase;

	if (phase == PW_IPACK_RECEIVING)
		p->received = total;
	if (!p->fn || !total)
		return;
	if (same && pct == p->last_pct && done != total)
		return;
	/* the resolving threads and the final tally may both report the last
	 * count: it is passed on once */
	if (same && done == total && p->last_done == done)
		return;
	p->last_phase = phase;
	p->last_pct = pct;
	p->last_done = done;
	p->fn(p->data, title, done, total, done == total);
}

/* "\nname\n" for every file in dir. */
static int list_packs(const char *dir, struct pw_buf *out)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int rc = pw_buf_addch(out, '\n');

	if (!d)
		return PW_EIO;
	while (!rc && (e = readdir(d)))
		rc = pw_buf_addf(out, "%s\n", e->d_name);
	closedir(d);
	return rc;
}

/* Must the new history be checked for completeness? Not when it is cut on
 * purpose (depth, filter, shallow repository). */
static int need_connectivity(const struct neg *n)
{
	return !n->deepen && !n->req->filter && !n->nr_old_shallow;
}

/* fetch.maxPackSize, else transfer.maxPackSize: the most bytes a received
 * pack may have (0: no limit, as Git). It also bounds the object count the
 * pack header may claim, checked before any object is read. */
static uint64_t max_pack_size(struct pw_repo *repo)
{
	const struct pw_config *cfg = pw_repo_config(repo);
	int64_t v;

	if (!pw_config_get_int64(cfg, "fetch.maxpacksize", &v, NULL) ||
	    !pw_config_get_int64(cfg, "transfer.maxpacksize", &v, NULL))
		return v > 0 ? (uint64_t)v : 0;
	return 0;
}

static int receive_pack(struct neg *n, struct pw_repo *repo, struct pw_odb *odb,
                        struct pw_error *err)
{
	struct pw_index_pack_args args;
	struct progress prog = {0};
	struct demux d;
	pthread_t tid;
	char hex[PW_MAX_HEXSZ + 1];
	char *pack_dir = pw_path_join(pw_repo_objects_dir(repo), "pack");
	struct pw_buf before = PW_BUF_INIT;
	int pfd[2], rc, kept = 0;

	if (!pack_dir)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if ((rc = pw_fs_mkdir_p(pack_dir, err))) {
		free(pack_dir);
		return rc;
	}
	if ((rc = list_packs(pack_dir, &before))) {
		rc = pw_error_set(err, rc, "cannot read %s", pack_dir);
		free(pack_dir);
		pw_buf_free(&before);
		return rc;
	}
	/* close-on-exec: a child another thread starts meanwhile must not hold
	 * the write end (index-pack would wait for its exit to see the end) */
	if (pipe2(pfd, O_CLOEXEC)) {
		pw_buf_free(&before);
		free(pack_dir);
		return pw_error_set(err, PW_EIO, "pipe: %s", strerror(errno));
	}
	memset(&d, 0, sizeof(d));
	d.s = n->s;
	d.sideband = n->sideband;
	d.out_fd = pfd[1];
	if (pthread_create(&tid, NULL, demux_main, &d)) {
		close(pfd[0]);
		close(pfd[1]);
		pw_buf_free(&before);
		free(pack_dir);
		return pw_error_set(err, PW_EIO, "cannot start the side-band thread");
	}
	memset(&args, 0, sizeof(args));
	args.opts.algo = n->algo;
	args.opts.fix_thin = 1;
	args.opts.read_object = ip_read;
	args.opts.has_object = ip_has;
	args.opts.odb_ctx = odb;
	if (n->s->opts.progress) {
		prog.fn = n->s->opts.report.progress;
		prog.data = n->s->opts.report.data;
	}
	args.opts.progress = ip_progress;
	args.opts.progress_ctx = &prog;
	args.idx_version = 2;
	args.opts.max_input = max_pack_size(repo);
	/* links are collected only when the connectivity walk they may spare
	 * would run at all */
	args.opts.report_links = need_connectivity(n);
	args.self_contained = &n->self_contained;
	rc = pw_index_pack_stream(&args, pfd[0], pack_dir, NULL, NULL, hex, &kept, err);
	if (prog.fn && prog.last_phase)
		prog.fn(prog.data, NULL, 0, 0, 1); /* the meters are over */
	close(pfd[0]);
	pthread_join(tid, NULL);
	if (d.rc && rc && d.write_failed) {
		/* index-pack stopped reading: its error is the story (a pack
		 * refused at its header, say) */
		n->s->failed = 1;
		pw_error_wrap(err, "index-pack failed");
	} else if (d.rc) {
		/* the stream's own story explains a broken pack best */
		n->s->failed = 1;
		if (!rc) {
			/* a complete pack arrived; still the stream went wrong */
			snprintf(n->res->pack_path, sizeof(n->res->pack_path), "%s/pack-%s.pack",
			         pack_dir, hex);
			snprintf(n->res->idx_path, sizeof(n->res->idx_path), "%s/pack-%s.idx",
			         pack_dir, hex);
			pw_fetch_result_rollback(n->res);
		}
		rc = pw_error_copy(err, &d.err);
	} else if (rc) {
		n->s->failed = 1;
		pw_error_wrap(err, "index-pack failed");
	}
	if (!rc) {
		char name[PW_MAX_HEXSZ + 16];

		n->res->got_pack = 1;
		n->res->nr_objects = (uint32_t)prog.received;
		memcpy(n->pack_hex, hex, sizeof(hex));
		snprintf(name, sizeof(name), "\npack-%s.pack\n", hex);
		/* a pack we already had is not ours to remove on rollback */
		if (!strstr(before.data, name)) {
			snprintf(n->res->pack_path, sizeof(n->res->pack_path), "%s/pack-%s.pack",
			         pack_dir, hex);
			snprintf(n->res->idx_path, sizeof(n->res->idx_path), "%s/pack-%s.idx",
			         pack_dir, hex);
		}
	}
	pw_buf_free(&before);
	free(pack_dir);
	return rc;
}

/* A repository with a compat map (extensions.compatObjectFormat) gets the
 * entries of the new pack: its side file, written crash-safely, gitlinks
 * mapped through the submodules' maps (pw_compat_submodules_for_repo).
 * Failing to is not the fetch's failure (compat build catches up later). */
static void note_compat(const struct pw_session *s, struct pw_repo *repo,
                        const struct pw_fetch_result *res)
{
	struct pw_error e;
	char msg[1200];

	if (!pw_repo_compat_algo(repo) || !res->idx_path[0])
		return;
	memset(&e, 0, sizeof(e));
	if (!pw_compat_note_pack_repo(repo, res->idx_path, &e))
		return;
	snprintf(msg, sizeof(msg), "compat map not updated (run 'packwire compat build'): %s",
	         e.msg);
	warn(s, msg);
}

void pw_fetch_result_rollback(struct pw_fetch_result *res)
{
	if (res->idx_path[0]) {
		size_t n = strlen(res->idx_path);
		char map[sizeof(res->idx_path) + 4];

		/* the compat side file, if one was written */
		if (n > 4 && n + 4 <= sizeof(map) && !strcmp(res->idx_path + n - 4, ".idx")) {
			memcpy(map, res->idx_path, n - 3);
			memcpy(map + n - 3, "compat", 7);
			unlink(map);
		}
		unlink(res->idx_path);
	}
	if (res->pack_path[0])
		unlink(res->pack_path);
	res->idx_path[0] = res->pack_path[0] = 0;
	res->got_pack = 0;
}

void pw_fetch_result_free(struct pw_fetch_result *res)
{
	free(res->shallow);
	res->shallow = NULL;
	res->nr_shallow = 0;
}

static int cmp_oid(const void *a, const void *b)
{
	return pw_oid_cmp(a, b);
}

static int in_list(const struct pw_oid *v, size_t nr, const struct pw_oid *oid)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (pw_oid_equal(&v[i], oid))
			return 1;
	return 0;
}

static int shallow_result(struct neg *n, struct pw_error *err)
{
	struct pw_fetch_result *res = n->res;
	size_t i, alloc = 0, k;

	if (!n->got_shallow_info)
		return 0;
	for (i = 0; i < n->nr_old_shallow + n->nr_add; i++) {
		const struct pw_oid *o = i < n->nr_old_shallow ? &n->old_shallow[i]
		                                               : &n->sh_add[i - n->nr_old_shallow];

		if (in_list(n->sh_del, n->nr_del, o))
			continue;
		if (oid_push(&res->shallow, &res->nr_shallow, &alloc, o))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (res->nr_shallow)
		qsort(res->shallow, res->nr_shallow, sizeof(*res->shallow), cmp_oid);
	for (i = 0, k = 0; i < res->nr_shallow; i++)
		if (!k || !pw_oid_equal(&res->shallow[k - 1], &res->shallow[i]))
			res->shallow[k++] = res->shallow[i];
	res->nr_shallow = k;
	res->shallow_changed = 1;
	return 0;
}

int pw_fetch_result_write_shallow(struct pw_repo *repo, const struct pw_fetch_result *res,
                                  struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1];
	char *path;
	size_t i;
	int rc = 0;

	if (!res->shallow_changed)
		return 0;
	path = pw_path_join(pw_repo_git_dir(repo), "shallow");
	if (!path)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (i = 0; !rc && i < res->nr_shallow; i++)
		rc = pw_buf_addf(&b, "%s\n", pw_oid_to_hex(&res->shallow[i], hex));
	if (rc)
		rc = pw_error_set(err, rc, "out of memory");
	else if (!res->nr_shallow)
		unlink(path);
	else
		rc = pw_fs_write_atomic(path, b.data, b.len, err);
	pw_buf_free(&b);
	free(path);
	return rc;
}

static int count_obj(const struct pw_revlist_obj *obj, void *data)
{
	(void)obj;
	(void)data;
	return 0;
}

static int exclude_ref(const struct pw_ref *ref, void *data)
{
	pw_revlist_add(data, &ref->oid, NULL, 1);
	return 0;
}

/* Wants the walk can skip: those in the received pack when index-pack found
 * that everything its objects refer to is in it too (then all they reach is
 * there). On any doubt, 0: the walk checks. */
static int want_in_pack(struct neg *n, const struct pw_oid *oid, struct pw_idx **ix,
                        struct pw_repo *repo)
{
	uint32_t pos;

	if (!n->self_contained || !n->pack_hex[0])
		return 0;
	if (!*ix) {
		struct pw_error e;
		char path[4200];

		memset(&e, 0, sizeof(e));
		snprintf(path, sizeof(path), "%s/pack/pack-%s.idx", pw_repo_objects_dir(repo),
		         n->pack_hex);
		if (pw_idx_open(ix, path, n->algo, &e)) {
			n->self_contained = 0;
			return 0;
		}
	}
	return pw_idx_find(*ix, oid->id, &pos) == 1;
}

/* Everything the new refs reach is here (Git's check_connected), walking
 * from the wants the received pack does not vouch for. */
static int check_connected(struct neg *n, struct pw_repo *repo, struct pw_odb *odb,
                           const struct pw_fetch_request *req, struct pw_error *err)
{
	struct pw_revlist *rl = NULL;
	struct pw_idx *ix = NULL;
	size_t i;
	int rc;

	for (i = 0; i < req->nr_wants; i++)
		if (!want_in_pack(n, &req->wants[i], &ix, repo))
			break;
	pw_idx_free(ix);
	ix = NULL;
	if (i == req->nr_wants)
		return 0;
	if ((rc = pw_revlist_new(&rl, odb, PW_REVLIST_OBJECTS)))
		return pw_error_set(err, rc, "out of memory");
	for (i = 0; i < req->nr_wants; i++) {
		if (want_in_pack(n, &req->wants[i], &ix, repo))
			continue;
		if ((rc = pw_revlist_add(rl, &req->wants[i], NULL, 0)))
			goto fail;
	}
	pw_idx_free(ix);
	ix = NULL;
	pw_refs_foreach(repo, NULL, 0, exclude_ref, rl);
	if ((rc = pw_revlist_run(rl, count_obj, NULL)))
		goto fail;
	pw_revlist_free(rl);
	return 0;
fail:
	pw_idx_free(ix);
	pw_error_set(err, rc, "remote did not send all necessary objects (%s)",
	             pw_revlist_error(rl)->msg);
	pw_revlist_free(rl);
	return rc;
}

int pw_session_negotiate(struct pw_session *s, struct pw_repo *repo, const struct pw_oid *tips,
                         size_t nr_tips, struct pw_oid **common, size_t *nr_common,
                         struct pw_error *err)
{
	struct pw_fetch_request req;
	struct pw_fetch_result res;
	struct pw_odb *odb = NULL;
	struct neg n;
	int rc, count = INITIAL_FLUSH, last = 0;

	*common = NULL;
	*nr_common = 0;
	if (s->version != 2 || !s->conn)
		return pw_error_set(err, PW_EUNSUPPORTED, "--negotiate-only requires protocol v2");
	if (!pw_v2_caps_has_feature(&s->caps2, "fetch", "wait-for-done"))
		return pw_error_set(err, PW_EUNSUPPORTED, "server does not support wait-for-done");
	memset(&req, 0, sizeof(req));
	memset(&res, 0, sizeof(res));
	memset(&n, 0, sizeof(n));
	n.s = s;
	n.req = &req;
	n.res = &res;
	n.algo = pw_repo_algo(repo);
	if ((rc = pw_session_check_algo(s, n.algo, err)))
		return rc;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), n.algo, err)))
		return rc;
	if ((rc = pw_have_walk_new_tips(&n.walk, odb, tips, nr_tips, err)))
		goto out;
	while (!last) {
		struct pw_pkt pkt;
		int added = 0, end;

		if ((rc = pw_client__v2_command(s, "fetch", err)))
			goto fail;
		rc = pw_pkt_writes(&s->out, "wait-for-done\n");
		if (!rc)
			rc = add_haves(&n, count, &added);
		if (!rc && !added) {
			/* nothing more to offer: a request without haves would
			 * be a request for a pack to Git's upload-pack */
			pw_buf_reset(&s->out);
			break;
		}
		if (n.got_ack && n.in_vain >= MAX_IN_VAIN)
			last = 1;
		if (!rc)
			rc = pw_pkt_flush(&s->out);
		if (rc) {
			rc = pw_error_set(err, rc, "out of memory");
			goto fail;
		}
		if ((rc = pw_client__send(s, err)))
			goto fail;
		if ((rc = read_line(&n, &pkt, err)))
			goto fail;
		if (pkt.kind != PW_PKT_DATA || pkt.len != 15 ||
		    memcmp(pkt.data, "acknowledgments", 15)) {
			rc = quoted_err(err, "expected 'acknowledgments', got",
			                pkt.data ? pkt.data : "(control packet)",
			                pkt.data ? pkt.len : 16);
			goto fail;
		}
		for (;;) {
			if ((rc = read_line(&n, &pkt, err)))
				goto fail;
			if (pkt.kind == PW_PKT_FLUSH)
				break;
			if (pkt.kind != PW_PKT_DATA) {
				/* wait-for-done: no packfile section may follow */
				rc = pw_error_set(err, PW_EPROTO,
				                  "protocol error: unexpected packet in "
				                  "acknowledgments");
				goto fail;
			}
			if ((rc = ack_line(&n, &pkt, &end, err)))
				goto fail;
		}
		if (n.ready)
			last = 1;
		if ((rc = pw_client__response_end(s, "acknowledgments", err)))
			goto fail;
		count = next_flush(count);
	}
	*common = n.common;
	*nr_common = n.nr_common;
	n.common = NULL;
	goto out;
fail:
	s->failed = 1;
out:
	pw_have_walk_free(n.walk);
	pw_odb_free(odb);
	free(n.common);
	return rc;
}

int pw_session_fetch(struct pw_session *s, struct pw_repo *repo, const struct pw_fetch_request *req,
                     struct pw_fetch_result *res, struct pw_error *err)
{
	struct pw_odb *odb = NULL, *odb2 = NULL;
	struct pw_fetch_fsck fsck;
	struct neg n;
	size_t i;
	int rc;

	for (i = 0; i < req->nr_deepen_not; i++)
		if (!*req->deepen_not[i] || strlen(req->deepen_not[i]) > PW_DEEPEN_NOT_MAX ||
		    strchr(req->deepen_not[i], '\n')) {
			memset(res, 0, sizeof(*res));
			return pw_error_set(
			        err, PW_EINVAL,
			        "--shallow-exclude=%.200s: not a ref name (empty, longer "
			        "than %d bytes or with a newline)",
			        req->deepen_not[i], PW_DEEPEN_NOT_MAX);
		}
	if ((req->deepen_since || req->nr_deepen_not) && (s->bundle || s->dumb)) {
		memset(res, 0, sizeof(*res));
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    s->dumb ? "dumb http transport does not support shallow "
		                              "capabilities"
		                            : "--shallow-since and --shallow-exclude cannot cut "
		                              "the history a bundle holds");
	}
	if (s->bundle || s->dumb || s->helper) {
		if (s->bundle)
			rc = pw_bundle_remote__fetch(s, repo, req, res, err);
		else if (s->dumb)
			rc = pw_dumb_fetch(s->dumb, repo, req, res, err);
		else
			rc = pw_client__helper_fetch(s, repo, req, res, err);
		if (!rc)
			note_compat(s, repo, res);
		return rc;
	}
	memset(res, 0, sizeof(*res));
	memset(&n, 0, sizeof(n));
	n.s = s;
	n.req = req;
	n.res = res;
	n.algo = pw_repo_algo(repo);
	n.deepen = req->depth || req->deepen_since || req->nr_deepen_not;
	if (req->deepen_since &&
	    (rc = pw_date_parse(req->deepen_since, (int64_t)time(NULL), &n.since, err)))
		return rc;
	if ((rc = pw_session_check_algo(s, n.algo, err)))
		return rc;
	if (!req->nr_wants)
		return 0;
	if ((rc = pw_fetch__fsck_setup(&fsck, repo, &s->opts.report, err)) ||
	    (rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), n.algo, err))) {
		pw_fetch__fsck_free(&fsck);
		return rc;
	}
	if ((rc = pw_shallow_read(repo, &n.old_shallow, &n.nr_old_shallow, err)))
		goto out;
	if (!req->no_haves && (rc = pw_have_walk_new(&n.walk, odb, repo, err)))
		goto out;
	if (s->version == 2) {
		if ((rc = v2_negotiate(&n, err)) || (rc = v2_sections(&n, err)))
			goto fail_stream;
	} else if ((s->fetched = 1) && (rc = s->conn->stateless ? v0_negotiate_stateless(&n, err)
	                                                        : v0_negotiate(&n, err))) {
		goto fail_stream;
	}
	if ((rc = receive_pack(&n, repo, odb, err)))
		goto out;
	if ((rc = pw_client__response_end(s, "the pack", err))) {
		s->failed = 1;
		goto rollback;
	}
	if ((rc = pw_fetch__fsck_check(&fsck, repo, res, req->no_haves, err)))
		goto rollback;
	/* the negotiation's walk and the odb that fed index-pack (with the
	 * bases of a thin pack in its cache) are done: give their memory back
	 * before the connectivity walk fills a cache of its own */
	pw_have_walk_free(n.walk);
	n.walk = NULL;
	pw_odb_free(odb);
	odb = NULL;
	if ((rc = shallow_result(&n, err)))
		goto rollback;
	/* what we asked for must be here now */
	if ((rc = pw_odb_open(&odb2, pw_repo_objects_dir(repo), n.algo, err)))
		goto rollback;
	for (i = 0; i < req->nr_wants; i++)
		if (!pw_odb_exists(odb2, &req->wants[i])) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(
			        err, PW_EPROTO,
			        "remote did not send all necessary objects (%s is missing)",
			        pw_oid_to_hex(&req->wants[i], hex));
			goto rollback;
		}
	if (need_connectivity(&n) && (rc = check_connected(&n, repo, odb2, req, err)))
		goto rollback;
	note_compat(s, repo, res);
	goto out;
fail_stream:
	s->failed = 1;
	goto out;
rollback:
	pw_fetch_result_rollback(res);
	pw_fetch_result_free(res);
out:
	pw_fetch__fsck_free(&fsck);
	pw_odb_free(odb2);
	pw_have_walk_free(n.walk);
	pw_odb_free(odb);
	free(n.common);
	free(n.old_shallow);
	free(n.sh_add);
	free(n.sh_del);
	return rc;
}
