/* A remote helper (gitremote-helpers(7)) over packwire's client, so that
 * stock git can use packwire as its git-remote-http(s): commands come on
 * in_fd, answers go to out_fd; stateless-connect bridges Git's v2 requests
 * to POSTs, fetch and push run packwire's own client on $GIT_DIR
 * (packwire/helper-serve.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/client.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/helper-serve.h"
#include "packwire/helper.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/push.h"
#include "packwire/repo.h"
#include "packwire/transport.h"

struct rh {
	const struct pw_helper_serve_opts *o;
	struct pw_error *err; /* the error that ends the helper */
	const char *url;
	int verbosity, progress, followtags, dry_run, atomic, object_format, cloning;
	int push_cert; /* "option pushcert": 0 false, 1 if-asked, 2 true */
	unsigned depth;
	char *filter;
	char *deepen_since; /* "option deepen-since" */
	char **deepen_not;  /* "option deepen-not", each; NULL-terminated */
	size_t nr_deepen_not;
	const char **push_options;
	size_t nr_push_options;
	/* "option cas <ref>:<oid>" (--force-with-lease), checked against the
	 * refs of "list for-push" (kept in pushrefs, "<oid> <name>\n" lines) */
	char **cas;
	size_t nr_cas;
	struct pw_buf pushrefs;
	char **stale; /* refs left out of the push: their lease failed */
	size_t nr_stale;
	const struct pw_hash_algo *algo; /* "option object-format <algo>" */
	struct pw_session *s;            /* opened by "list", used by "fetch" */
	struct pw_repo *repo;
	struct pw_repo *s_repo; /* the repository whose config s was opened with */
	struct pw_buf line;
	struct pw_buf out; /* answers not written yet */
	/* the caller's, with a credential cache: Git asks once per helper
	 * process, whatever the number of connections */
	struct pw_http_env http;
	/* the batch being read (freed at exit even on a fatal error) */
	struct pw_oid *wants;
	char **specs;
	size_t nr_specs;
};

/* The error that ends the helper ("fatal: <msg>" for the caller). */
static int fatal(struct rh *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fatal(struct rh *h, const char *fmt, ...)
{
	char msg[PW_ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return pw_error_set(h->err, PW_ERROR, "%s", msg);
}

static int nomem(struct rh *h)
{
	return pw_error_set(h->err, PW_ENOMEM, "out of memory");
}

static void message(const struct rh *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void message(const struct rh *h, const char *fmt, ...)
{
	char line[PW_ERROR_MSG_MAX + 64];
	va_list ap;

	if (!h->o->message)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	h->o->message(h->o->ctx, line);
}

static void trace_who(const struct rh *h, const char *who)
{
	if (h->o->trace_who)
		h->o->trace_who(h->o->ctx, who);
}

static void trace_raw(const struct rh *h, int write, const char *data, size_t len)
{
	if (h->o->trace_packet)
		h->o->trace_packet(h->o->ctx, write, data, len);
}

static void trace_pkt(const struct rh *h, int write, const struct pw_pkt *pkt)
{
	if (pkt->kind == PW_PKT_DATA)
		trace_raw(h, write, pkt->data ? pkt->data : "", pkt->len);
	else if (pkt->kind == PW_PKT_FLUSH)
		trace_raw(h, write, "0000", 4);
	else if (pkt->kind == PW_PKT_DELIM)
		trace_raw(h, write, "0001", 4);
	else if (pkt->kind == PW_PKT_RESPONSE_END)
		trace_raw(h, write, "0002", 4);
}

/* Answers are buffered and written at each answer's end (where
 * git-remote-http flushes stdout); a failed write is Git gone, which the
 * next read sees. */
static int say(struct rh *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(struct rh *h, const char *fmt, ...)
{
	char small[512], *p = small;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return nomem(h);
	if ((size_t)n >= sizeof(small)) {
		if (!(p = malloc((size_t)n + 1)))
			return nomem(h);
		va_start(ap, fmt);
		vsnprintf(p, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	n = pw_buf_add(&h->out, p, (size_t)n);
	if (p != small)
		free(p);
	return n ? nomem(h) : 0;
}

static int say_buf(struct rh *h, const struct pw_buf *b)
{
	return pw_buf_add(&h->out, b->data, b->len) ? nomem(h) : 0;
}

static void answer(struct rh *h, const char *s)
{
	struct pw_error ignored;

	if (!say(h, "%s", s))
		pw_pkt_send(h->o->out_fd, &h->out, &ignored);
}

static void free_batch(struct rh *h)
{
	size_t i;

	free(h->wants);
	h->wants = NULL;
	for (i = 0; i < h->nr_specs; i++)
		free(h->specs[i]);
	free(h->specs);
	h->specs = NULL;
	h->nr_specs = 0;
}

/* One command line without its newline; 1 at end of input. Byte by byte:
 * after "stateless-connect" the rest of the input is the packet stream. */
static int read_line(struct rh *h)
{
	pw_buf_reset(&h->line);
	for (;;) {
		char ch;
		ssize_t r = read(h->o->in_fd, &ch, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return h->line.len ? 0 : 1;
		if (ch == '\n')
			return 0;
		if (h->line.len >= 65536 || pw_buf_addch(&h->line, ch))
			return -1;
	}
}

/* The config the client sees: the repository's, else the caller's. */
static const struct pw_config *config(const struct rh *h)
{
	return h->repo ? pw_repo_config(h->repo) : h->o->config;
}

static int wanted_version(const struct rh *h)
{
	return h->o->protocol_version ? h->o->protocol_version(h->o->ctx, h->repo) : 2;
}

static void client_opts(struct rh *h, struct pw_client_opts *o, int version)
{
	memset(o, 0, sizeof(*o));
	o->protocol_version = version;
	o->quiet = h->verbosity < 1;
	o->progress = h->progress;
	o->ssh = h->o->ssh;
	o->http_env = &h->http;
	o->protocol = h->o->protocol;
	o->config = config(h);
	o->report = h->o->report;
	if (h->o->trace_packet) {
		o->trace_packet = h->o->trace_packet;
		o->trace_packet_ctx = h->o->ctx;
	}
}

static void transport_opts(struct rh *h, struct pw_transport_opts *to)
{
	memset(to, 0, sizeof(*to));
	to->quiet = h->verbosity < 1;
	to->config = config(h);
	to->http_env = &h->http;
	to->protocol = h->o->protocol;
}

static void close_session(struct rh *h)
{
	if (h->s)
		pw_session_close(h->s, NULL);
	h->s = NULL;
	pw_repo_free(h->s_repo);
	h->s_repo = NULL;
}

static void note(void *ctx, int level, const char *line)
{
	const struct rh *h = ctx;

	if (h->verbosity >= level)
		message(h, "%s", line);
}

static int open_repo(struct rh *h)
{
	struct pw_error e = {0};

	/* afresh: a clone rewrites the repository's format after "list"; the
	 * open session keeps the config it was given until it is closed */
	if (h->s && !h->s_repo)
		h->s_repo = h->repo;
	else
		pw_repo_free(h->repo);
	h->repo = NULL;
	if (h->o->open_repo(h->o->ctx, &h->repo, &e))
		return fatal(h, "%s", e.msg);
	if (!h->repo)
		return fatal(h, "remote-http: fetch and push need a repository ($GIT_DIR)");
	return 0;
}

/* "option deepen-since" / "option deepen-not": a C-quoted value (value is
 * freed here). */
static int set_deepen(struct rh *h, const char *name, char *value)
{
	struct pw_error qerr = {0};
	char **n;
	size_t qlen;
	char *q = pw_helper_unquote(value, strlen(value), &qlen, &qerr);

	free(value);
	if (!q)
		return fatal(h, "invalid quoting in %s value: %s", name, qerr.msg);
	if (!strcmp(name, "deepen-since")) {
		free(h->deepen_since);
		h->deepen_since = q;
	} else if (!(n = realloc(h->deepen_not, (h->nr_deepen_not + 2) * sizeof(*n)))) {
		free(q);
		return nomem(h);
	} else {
		h->deepen_not = n;
		n[h->nr_deepen_not++] = q;
		n[h->nr_deepen_not] = NULL;
	}
	answer(h, "ok\n");
	return 0;
}

static int set_option(struct rh *h, const struct pw_helper_cmd *c)
{
	char name[64], *value;
	int b = 0, known = 1;

	if (c->arg_len >= sizeof(name)) {
		answer(h, "unsupported\n");
		return 0;
	}
	memcpy(name, c->arg, c->arg_len);
	name[c->arg_len] = 0;
	if (!(value = strndup(c->arg2 ? c->arg2 : "", c->arg2_len)))
		return nomem(h);
	if (!strcmp(name, "verbosity")) {
		h->verbosity = atoi(value);
	} else if (!strcmp(name, "progress")) {
		h->progress = !pw_config_parse_bool(value, &b) && b;
	} else if (!strcmp(name, "depth")) {
		char *end;
		long n = strtol(value, &end, 10);

		if (*end || n < 0 || n > 0x7fffffff) {
			free(value);
			answer(h, "error invalid depth\n");
			return 0;
		}
		h->depth = (unsigned)n;
	} else if (!strcmp(name, "followtags")) {
		h->followtags = !pw_config_parse_bool(value, &b) && b;
	} else if (!strcmp(name, "dry-run")) {
		h->dry_run = !pw_config_parse_bool(value, &b) && b;
	} else if (!strcmp(name, "atomic")) {
		h->atomic = !pw_config_parse_bool(value, &b) && b;
	} else if (!strcmp(name, "cloning")) {
		h->cloning = !pw_config_parse_bool(value, &b) && b;
	} else if (!strcmp(name, "filter")) {
		free(h->filter);
		h->filter = value;
		value = NULL;
	} else if (!strcmp(name, "deepen-since") || !strcmp(name, "deepen-not")) {
		return set_deepen(h, name, value);
	} else if (!strcmp(name, "push-option")) {
		struct pw_error qerr = {0};
		const char **n;
		size_t qlen;
		char *q;

		/* git C-quotes a value with special characters */
		if (!(q = pw_helper_unquote(value, strlen(value), &qlen, &qerr))) {
			free(value);
			return fatal(h, "invalid quoting in push-option value: %s", qerr.msg);
		}
		free(value);
		value = q;
		n = realloc(h->push_options, (h->nr_push_options + 1) * sizeof(*h->push_options));
		if (!n) {
			free(value);
			return nomem(h);
		}
		h->push_options = n;
		h->push_options[h->nr_push_options++] = value;
		value = NULL;
	} else if (!strcmp(name, "object-format")) {
		/* Git sends a bare "option object-format" before list */
		if (!*value || !strcmp(value, "true")) {
			h->object_format = 1;
		} else if (pw_object_format_lookup(value, strlen(value), &h->algo, NULL)) {
			free(value);
			answer(h, "error unknown object format\n");
			return 0;
		}
	} else if (!strcmp(name, "cas")) {
		char **n = realloc(h->cas, (h->nr_cas + 1) * sizeof(*n));

		if (!n) {
			free(value);
			return nomem(h);
		}
		h->cas = n;
		h->cas[h->nr_cas++] = value;
		value = NULL;
	} else if (!strcmp(name, "pushcert")) {
		if (!strcmp(value, "true"))
			h->push_cert = 2;
		else if (!strcmp(value, "if-asked"))
			h->push_cert = 1;
		else if (!strcmp(value, "false"))
			h->push_cert = 0;
		else
			known = 0;
	} else if (!strcmp(name, "thin") || !strcmp(name, "update-shallow") ||
	           !strcmp(name, "check-connectivity") || !strcmp(name, "from-promisor") ||
	           !strcmp(name, "no-dependents")) {
		/* what packwire's client does anyway */
	} else {
		known = 0;
	}
	free(value);
	answer(h, known ? "ok\n" : "unsupported\n");
	return 0;
}

/* "list for-push" of a dumb server: the refs of its info/refs, as
 * git-remote-http lists them (no refs: the local algorithm); the push then
 * goes over WebDAV (pw_push). */
static int list_dumb_for_push(struct rh *h)
{
	struct pw_client_opts o;
	struct pw_error err = {0};
	struct pw_buf out = PW_BUF_INIT;
	const struct pw_adv *adv;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;

	client_opts(h, &o, 0);
	if (pw_session_open(&h->s, h->url, &o, &err) ||
	    pw_session_list_refs(h->s, NULL, 0, &adv, &err))
		return fatal(h, "%s", err.msg);
	for (i = 0; i < adv->nr; i++) {
		const struct pw_remote_ref *r = &adv->refs[i];

		if (!r->unborn && !r->symref_target && strcmp(r->name, "HEAD") &&
		    pw_buf_addf(&out, "%s %s\n", pw_oid_to_hex(&r->oid, hex), r->name))
			return nomem(h);
	}
	if ((h->object_format && say(h, ":object-format %s\n",
	                             !out.len && h->repo ? pw_repo_algo(h->repo)->name
	                                                 : pw_session_algo(h->s)->name)) ||
	    say_buf(h, &out)) {
		pw_buf_free(&out);
		return nomem(h);
	}
	close_session(h);
	pw_buf_free(&h->pushrefs);
	h->pushrefs = out;
	answer(h, "\n");
	return 0;
}

/* "list for-push": receive-pack's refs, from its v0 advertisement. The
 * connection's info/refs answer stays in the cache, so that the push that
 * follows does not ask again (one GET, as git-remote-http). */
static int list_for_push(struct rh *h)
{
	struct pw_transport_opts to;
	struct pw_pkt_reader rd = {0};
	struct pw_error err = {0};
	struct pw_conn *conn = NULL;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_adv adv;
	struct pw_pkt pkt;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	transport_opts(h, &to);
	to.service = "git-receive-pack";
	/* receive-pack speaks v0 or v1: v2 asks for v0, as git-remote-http */
	to.protocol_version = wanted_version(h) == 1 ? 1 : 0;
	if ((rc = pw_transport_connect(&conn, h->url, &to, &err)))
		return fatal(h, "%s", err.msg);
	if (conn->in_fd < 0) {
		pw_conn_free(conn);
		return list_dumb_for_push(h);
	}
	if (pw_pkt_reader_init(&rd, conn->in_fd, 0)) {
		pw_conn_free(conn);
		return nomem(h);
	}
	/* the library's v0 parser (fuzz-advertisement) */
	pw_adv_init(&adv);
	do {
		if ((rc = pw_pkt_read(&rd, &pkt, &err)))
			break;
		trace_pkt(h, 0, &pkt);
		rc = pw_adv_feed_v0(&adv, &pkt, &err);
	} while (rc == PW_EMORE);
	pw_pkt_reader_free(&rd);
	pw_conn_free(conn);
	for (i = 0; !rc && i < adv.nr; i++) {
		const struct pw_remote_ref *r = &adv.refs[i];

		if (!r->unborn &&
		    pw_buf_addf(&out, "%s %s\n", pw_oid_to_hex(&r->oid, hex), r->name))
			rc = pw_error_set(&err, PW_ENOMEM, "out of memory");
	}
	if (!rc && h->object_format &&
	    say(h, ":object-format %s\n",
	        (adv.algo ? adv.algo : pw_hash_by_id(PW_HASH_SHA1))->name))
		rc = pw_error_set(&err, PW_ENOMEM, "out of memory");
	pw_adv_free(&adv);
	if (!rc && say_buf(h, &out))
		rc = pw_error_set(&err, PW_ENOMEM, "out of memory");
	if (rc) {
		pw_buf_free(&out);
		return fatal(h, "%s", err.msg);
	}
	pw_buf_free(&h->pushrefs);
	h->pushrefs = out;
	answer(h, "\n");
	return 0;
}

static int do_list(struct rh *h, int for_push)
{
	struct pw_client_opts o;
	struct pw_error err = {0};
	const struct pw_adv *adv;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	if (h->s) {
		close_session(h);
	}
	trace_who(h, "git");
	if (for_push)
		return list_for_push(h);
	client_opts(h, &o, wanted_version(h));
	if ((rc = pw_session_open(&h->s, h->url, &o, &err)) ||
	    (rc = pw_session_list_refs(h->s, NULL, PW_LSREFS_SYMREFS | PW_LSREFS_PEEL, &adv, &err)))
		return fatal(h, "%s", err.msg);
	if (h->object_format && (rc = say(h, ":object-format %s\n", pw_session_algo(h->s)->name)))
		return rc;
	for (i = 0; i < adv->nr; i++) {
		const struct pw_remote_ref *r = &adv->refs[i];

		if (r->symref_target)
			rc = say(h, "@%s %s\n", r->symref_target, r->name);
		else if (!r->unborn)
			rc = say(h, "%s %s\n", pw_oid_to_hex(&r->oid, hex), r->name);
		if (!rc && r->has_peeled)
			rc = say(h, "%s %s^{}\n", pw_oid_to_hex(&r->peeled, hex), r->name);
		if (rc)
			return rc;
	}
	answer(h, "\n");
	return 0;
}

/* "fetch <oid> <name>" lines up to a blank one, then one fetch. */
static int do_fetch(struct rh *h, const struct pw_helper_cmd *first)
{
	struct pw_fetch_request req = {0};
	struct pw_fetch_result res = {0};
	struct pw_error err = {0};
	size_t nr = 0, alloc = 0;
	struct pw_helper_cmd c = *first;
	int rc;

	if ((rc = open_repo(h)))
		return rc;
	/* git-remote-http's fetch is fetch-pack's */
	trace_who(h, "fetch-pack");
	if (!h->s) {
		struct pw_client_opts o;
		const struct pw_adv *adv;

		client_opts(h, &o, wanted_version(h));
		if (pw_session_open(&h->s, h->url, &o, &err) ||
		    pw_session_list_refs(h->s, NULL, 0, &adv, &err))
			return fatal(h, "%s", err.msg);
	}
	for (;;) {
		if (c.kind != PW_HCMD_FETCH)
			return fatal(h, "remote-http: expected a fetch command in the batch");
		if (nr == alloc) {
			struct pw_oid *n =
			        realloc(h->wants, (alloc = alloc ? 2 * alloc : 16) * sizeof(*n));

			if (!n)
				return nomem(h);
			h->wants = n;
		}
		if (pw_oid_from_hex(&h->wants[nr], c.arg, c.arg_len, pw_session_algo(h->s)))
			return fatal(h, "remote-http: bad object id in fetch: %.*s", (int)c.arg_len,
			             c.arg);
		nr++;
		if ((rc = read_line(h)) || pw_helper_cmd_parse(h->line.data, h->line.len, &c, &err))
			return fatal(h, "remote-http: %s",
			             rc ? "unexpected end of the fetch batch" : err.msg);
		if (c.kind == PW_HCMD_END)
			break;
	}
	if (pw_session_check_algo(h->s, pw_repo_algo(h->repo), &err))
		return fatal(h, "%s", err.msg);
	req.wants = h->wants;
	req.nr_wants = nr;
	req.depth = h->depth;
	req.deepen_since = h->deepen_since;
	req.deepen_not = (const char *const *)h->deepen_not;
	req.nr_deepen_not = h->nr_deepen_not;
	req.filter = h->filter;
	req.include_tag = h->followtags;
	rc = pw_session_fetch(h->s, h->repo, &req, &res, &err);
	if (!rc && (h->depth || h->deepen_since || h->nr_deepen_not))
		rc = pw_fetch_result_write_shallow(h->repo, &res, &err);
	pw_fetch_result_free(&res);
	free_batch(h);
	if (rc)
		return fatal(h, "%s", err.msg);
	/* a session serves one fetch: the next one starts afresh */
	close_session(h);
	answer(h, "\n");
	return 0;
}

static const char *push_status(const struct pw_push_ref *r, const char **msg)
{
	*msg = NULL;
	switch (r->status) {
	case PW_PUSH_OK:
		if (r->forced_update)
			*msg = "forced update";
		return "ok";
	case PW_PUSH_UPTODATE:
		*msg = "up to date";
		return "ok";
	case PW_PUSH_REJECT_NONFF:
		*msg = "non-fast-forward";
		break;
	case PW_PUSH_REJECT_FETCH_FIRST:
		*msg = "fetch first";
		break;
	case PW_PUSH_REJECT_EXISTS:
		*msg = "already exists";
		break;
	case PW_PUSH_REJECT_NODELETE:
		*msg = "remote does not support deleting refs";
		break;
	case PW_PUSH_NO_SUCH_REF:
		*msg = "no such ref";
		break;
	case PW_PUSH_ATOMIC_FAILED:
		*msg = "atomic push failed";
		break;
	case PW_PUSH_REMOTE_REJECT:
		*msg = r->remote_msg ? r->remote_msg : "rejected";
		break;
	case PW_PUSH_NO_REPORT:
		*msg = "expecting report";
		break;
	default:
		*msg = "no match";
		break;
	}
	return "error";
}

static void free_stale(struct rh *h)
{
	size_t i;

	for (i = 0; i < h->nr_stale; i++)
		free(h->stale[i]);
	free(h->stale);
	h->stale = NULL;
	h->nr_stale = 0;
}

/* The remote's value of ref as "list for-push" showed it; NULL when absent. */
static const char *pushref(const struct rh *h, const char *ref, size_t *len)
{
	const char *p = h->pushrefs.data, *end = p ? p + h->pushrefs.len : NULL;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;

		if (!nl)
			break;
		sp = memchr(p, ' ', (size_t)(nl - p));
		if (sp && (size_t)(nl - sp - 1) == strlen(ref) &&
		    !memcmp(sp + 1, ref, strlen(ref))) {
			*len = (size_t)(sp - p);
			return p;
		}
		p = nl + 1;
	}
	return NULL;
}

/* --force-with-lease as send-pack does it: a push whose ref has a "cas"
 * goes on forced when the remote still has the expected value, else it is
 * left out and reported "stale info". */
static int apply_cas(struct rh *h)
{
	size_t i, j, k = 0;

	for (i = 0; i < h->nr_specs; i++) {
		char *spec = h->specs[i], *colon = strrchr(spec, ':'), *forced;
		const char *dst = colon ? colon + 1 : spec, *expect = NULL, *cur;
		size_t curlen = 0, dl = strlen(dst);
		int zero = 1;

		for (j = 0; j < h->nr_cas; j++)
			if (!strncmp(h->cas[j], dst, dl) && h->cas[j][dl] == ':')
				expect = h->cas[j] + dl + 1;
		if (!expect) {
			h->specs[k++] = spec;
			continue;
		}
		for (const char *e = expect; *e; e++)
			zero &= *e == '0';
		cur = pushref(h, dst, &curlen);
		if (cur ? (strlen(expect) == curlen && !strncasecmp(cur, expect, curlen)) : zero) {
			if (spec[0] != '+') {
				if (!(forced = malloc(strlen(spec) + 2)))
					return nomem(h);
				forced[0] = '+';
				strcpy(forced + 1, spec);
				free(spec);
				spec = forced;
			}
			h->specs[k++] = spec;
			continue;
		}
		{
			char **n = realloc(h->stale, (h->nr_stale + 1) * sizeof(*n));
			char *d = strdup(dst);

			if (!n || !d) {
				free(d);
				if (n)
					h->stale = n;
				return nomem(h);
			}
			h->stale = n;
			h->stale[h->nr_stale++] = d;
			free(spec);
		}
	}
	h->nr_specs = k;
	return 0;
}

/* A proc-receive hook's reports of what it did instead (report-status-v2),
 * as "option" lines after the ref's "ok", one "ok" more for each further
 * report, as send-pack --helper-status prints them. */
static int print_reports(struct rh *h, const struct pw_push_ref *r)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t j;
	int rc = 0;

	for (j = 0; !rc && j < r->nr_reports; j++) {
		const struct pw_push_report *rep = &r->reports[j];

		if (j)
			rc = say(h, "ok %s\n", r->dst);
		if (!rc && rep->ref_name)
			rc = say(h, "option refname %s\n", rep->ref_name);
		if (!rc && rep->old_oid.algo)
			rc = say(h, "option old-oid %s\n", pw_oid_to_hex(&rep->old_oid, hex));
		if (!rc && rep->new_oid.algo)
			rc = say(h, "option new-oid %s\n", pw_oid_to_hex(&rep->new_oid, hex));
		if (!rc && rep->forced_update)
			rc = say(h, "option forced-update\n");
	}
	return rc;
}

/* The pack is sent: the caller hears of it (Git's t5549 reads its object
 * count in trace2 to see what push.negotiate saved). */
static void pack_done(void *data, const struct pw_pack_write_stats *st)
{
	const struct rh *h = data;

	if (h->o->pack_done)
		h->o->pack_done(h->o->ctx, st);
}

/* The report's callbacks with the caller's data, and pack_done with ours. */
static void push_progress(void *data, const char *title, uint64_t n, uint64_t total, int done)
{
	const struct rh *h = data;

	h->o->report.progress(h->o->report.data, title, n, total, done);
}

static void push_warning(void *data, const char *msg)
{
	const struct rh *h = data;

	h->o->report.warning(h->o->report.data, msg);
}

static void push_remote(void *data, const char *text, size_t len)
{
	const struct rh *h = data;

	h->o->report.remote(h->o->report.data, text, len);
}

/* "push <refspec>" lines up to a blank one, into h->specs. */
static int read_push_batch(struct rh *h, const struct pw_helper_cmd *first)
{
	struct pw_helper_cmd c = *first;
	struct pw_error err = {0};
	int rc;

	for (;;) {
		char **n;

		if (c.kind != PW_HCMD_PUSH)
			return fatal(h, "remote-http: expected a push command in the batch");
		if (!(n = realloc(h->specs, (h->nr_specs + 1) * sizeof(*n))))
			return nomem(h);
		h->specs = n;
		if (!(n[h->nr_specs] = strndup(c.arg, c.arg_len)))
			return nomem(h);
		h->nr_specs++;
		if ((rc = read_line(h)) || pw_helper_cmd_parse(h->line.data, h->line.len, &c, &err))
			return fatal(h, "remote-http: %s",
			             rc ? "unexpected end of the push batch" : err.msg);
		if (c.kind == PW_HCMD_END)
			return 0;
	}
}

/* The push's options from the helper's state: signed, traced, negotiated. */
static int push_opts(struct rh *h, struct pw_push_opts *o, char *pusher, size_t pusher_len)
{
	const struct pw_config_entry *e;
	int b = 0;

	memset(o, 0, sizeof(*o));
	o->atomic = h->atomic;
	o->dry_run = h->dry_run;
	o->quiet = h->verbosity < 1;
	o->progress = h->progress;
	o->ssh = h->o->ssh;
	o->http_env = &h->http;
	o->protocol = h->o->protocol;
	o->push_options = h->push_options;
	o->nr_push_options = h->nr_push_options;
	if (h->push_cert) {
		/* push --signed: the certificate signed with gpg, as send-pack */
		if (!h->o->push_pusher || !h->o->push_sign ||
		    h->o->push_pusher(h->repo, pusher, pusher_len))
			return fatal(h, "a signed push needs a committer email "
			                "(user.email or GIT_COMMITTER_EMAIL)");
		o->push_cert = h->push_cert;
		o->cert_pusher = pusher;
		o->sign = h->o->push_sign;
		o->sign_ctx = h->repo;
	}
	if (h->o->trace_packet) {
		trace_who(h, "send-pack");
		o->trace_packet = h->o->trace_packet;
		o->trace_packet_ctx = h->o->ctx;
	}
	/* report.data is handed to local_pack_done too: ours, over the caller's */
	o->report.progress = h->o->report.progress ? push_progress : NULL;
	o->report.warning = h->o->report.warning ? push_warning : NULL;
	o->report.remote = h->o->report.remote ? push_remote : NULL;
	o->report.data = h;
	o->local_pack_done = pack_done;
	/* push.negotiate, read by send-pack in Git: its fetch speaks the
	 * version git-remote-http would */
	e = pw_config_get_entry(config(h), "push.negotiate");
	if (e && !pw_config_parse_bool(e->value, &b) && b) {
		o->negotiate = 1;
		o->negotiate_protocol = wanted_version(h);
	}
	return 0;
}

/* What the push did, as send-pack --helper-status prints it. */
static int push_report(struct rh *h, const struct pw_push_result *res)
{
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < h->nr_stale; i++)
		rc = say(h, "error %s stale info\n", h->stale[i]);
	free_stale(h);
	if (res->unpack_error)
		message(h, "error: remote unpack failed: %s", res->unpack_error);
	for (i = 0; !rc && i < res->nr; i++) {
		const char *msg, *st = push_status(&res->refs[i], &msg);

		rc = say(h, "%s %s%s%s\n", st, res->refs[i].dst, msg ? " " : "", msg ? msg : "");
		if (!rc && res->refs[i].status == PW_PUSH_OK)
			rc = print_reports(h, &res->refs[i]);
	}
	return rc;
}

/* "push <refspec>" lines up to a blank one, then one push. */
static int do_push(struct rh *h, const struct pw_helper_cmd *first)
{
	struct pw_push_opts o;
	struct pw_push_result res = {0};
	char pusher[640];
	struct pw_error err = {0};
	int rc;

	if ((rc = open_repo(h)))
		return rc;
	if (h->s) {
		close_session(h);
	}
	if ((rc = read_push_batch(h, first)) || (rc = apply_cas(h)) ||
	    (rc = push_opts(h, &o, pusher, sizeof(pusher))))
		return rc;
	if (h->nr_specs)
		rc = pw_push(h->repo, h->url, (const char *const *)h->specs, h->nr_specs, &o, &res,
		             &err);
	free_batch(h);
	/* the last meter ends its line before git prints "To <url>" */
	if (o.report.progress)
		o.report.progress(o.report.data, NULL, 0, 0, 0);
	if (rc) {
		pw_push_result_free(&res);
		return fatal(h, "%s", err.msg);
	}
	rc = push_report(h, &res);
	pw_push_result_free(&res);
	if (!rc)
		answer(h, "\n");
	return rc;
}

/* "get <url> <path>": the file at url into path (Git's bundle URIs), with
 * the remote's http.* settings; a blank line when it is there. */
static int do_get(struct rh *h, const struct pw_helper_cmd *c)
{
	struct pw_transport_opts to;
	struct pw_error err = {0};
	char *url = strndup(c->arg, c->arg_len), *path = strndup(c->arg2, c->arg2_len);
	int rc;

	if (!url || !path) {
		free(url);
		free(path);
		return nomem(h);
	}
	transport_opts(h, &to);
	rc = pw_http_download(url, path, &to, &err);
	if (rc) {
		message(h, "error: %s", err.msg);
		rc = fatal(h, "failed to download file at URL '%s'", url);
	} else {
		answer(h, "\n");
	}
	free(url);
	free(path);
	return rc;
}

/* Copy packets from r to Git up to and including the one of kind `last`;
 * traced when trace is set. */
static int relay(const struct rh *h, int trace, struct pw_pkt_reader *r, enum pw_pkt_kind last,
                 struct pw_buf *out, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc;

	pw_buf_reset(out);
	for (;;) {
		if ((rc = pw_pkt_read(r, &pkt, err)))
			return rc;
		if (trace)
			trace_pkt(h, 0, &pkt);
		switch (pkt.kind) {
		case PW_PKT_EOF:
			return pw_error_set(err, PW_EPROTO, "the remote end hung up unexpectedly");
		case PW_PKT_FLUSH:
			rc = pw_pkt_flush(out);
			break;
		case PW_PKT_DELIM:
			rc = pw_pkt_delim(out);
			break;
		case PW_PKT_RESPONSE_END:
			rc = pw_pkt_response_end(out);
			break;
		default:
			rc = pw_pkt_write(out, pkt.data, pkt.len);
			break;
		}
		if (rc)
			return pw_error_set(err, rc, "out of memory");
		if (pkt.kind == last || out->len >= 65536)
			if ((rc = pw_pkt_send(h->o->out_fd, out, err)))
				return rc;
		if (pkt.kind == last)
			return 0;
	}
}

/* v2 over HTTP: Git's requests (packets up to a flush) become POSTs; each
 * response goes back followed by the response-end packet. *fell_back after a
 * "fallback" (not v2, or not upload-pack): the helper reads on. */
static int stateless_connect(struct rh *h, const struct pw_helper_cmd *c, int *fell_back)
{
	struct pw_transport_opts to;
	struct pw_pkt_reader in = {0}, rd = {0};
	struct pw_buf out = PW_BUF_INIT, req = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_conn *conn = NULL;
	struct pw_pkt pkt;
	int rc;

	if (c->arg_len != 15 || memcmp(c->arg, "git-upload-pack", 15)) {
		answer(h, "fallback\n");
		*fell_back = 1;
		return 0;
	}
	transport_opts(h, &to);
	to.service = "git-upload-pack";
	to.protocol_version = 2;
	if ((rc = pw_transport_connect(&conn, h->url, &to, &err)))
		return fatal(h, "%s", err.msg);
	if (conn->in_fd < 0) {
		/* a dumb server (no service line): list and fetch go through
		 * packwire's dumb client */
		pw_conn_free(conn);
		answer(h, "fallback\n");
		*fell_back = 1;
		return 0;
	}
	if (pw_pkt_reader_init(&rd, conn->in_fd, 0) || pw_pkt_reader_init(&in, h->o->in_fd, 0)) {
		rc = pw_error_set(&err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = pw_pkt_peek(&rd, &pkt, &err)))
		goto fail;
	if (pkt.kind != PW_PKT_DATA || pkt.len < 9 || memcmp(pkt.data, "version 2", 9)) {
		/* a v0 server: Git falls back to list and fetch */
		pw_pkt_reader_free(&rd);
		pw_pkt_reader_free(&in);
		pw_conn_free(conn);
		answer(h, "fallback\n");
		*fell_back = 1;
		return 0;
	}
	answer(h, "\n");
	/* as git-remote-http: its view of the capabilities and of Git's
	 * requests is traced, the answers go through as they are */
	trace_who(h, "git");
	if ((rc = relay(h, 1, &rd, PW_PKT_FLUSH, &out, &err)))
		goto fail;
	for (;;) {
		pw_buf_reset(&req);
		do {
			if ((rc = pw_pkt_read(&in, &pkt, &err)))
				goto fail;
			trace_pkt(h, 0, &pkt);
			if (pkt.kind == PW_PKT_EOF) {
				if (req.len)
					rc = pw_error_set(&err, PW_EPROTO,
					                  "remote-http: request cut short");
				goto done;
			}
			rc = pkt.kind == PW_PKT_FLUSH   ? pw_pkt_flush(&req)
			     : pkt.kind == PW_PKT_DELIM ? pw_pkt_delim(&req)
			     : pkt.kind == PW_PKT_DATA
			             ? pw_pkt_write(&req, pkt.data, pkt.len)
			             : pw_error_set(&err, PW_EPROTO,
			                            "remote-http: unexpected packet "
			                            "in a request");
			if (rc == PW_ENOMEM)
				pw_error_set(&err, rc, "out of memory");
			if (rc)
				goto fail;
		} while (pkt.kind != PW_PKT_FLUSH);
		if ((rc = pw_pkt_send(conn->out_fd, &req, &err)) ||
		    (rc = pw_conn_end_request(conn, &err)) ||
		    (rc = relay(h, 0, &rd, PW_PKT_RESPONSE_END, &out, &err)))
			goto fail;
		trace_raw(h, 1, "0002", 4);
	}
done:
fail:
	pw_pkt_reader_free(&rd);
	pw_pkt_reader_free(&in);
	pw_buf_free(&out);
	pw_buf_free(&req);
	pw_conn_close_write(conn);
	if (rc) {
		/* an answer cut off or badly framed: the transport knows how,
		 * the reader saw only an early end */
		struct pw_error why = {0};

		if (pw_conn_finish(conn, NULL, &why) && why.msg[0])
			pw_error_copy(&err, &why);
	}
	pw_conn_free(conn);
	if (rc)
		return fatal(h, "%s", err.msg);
	return 0;
}

static void free_all(struct rh *h)
{
	size_t i;

	close_session(h);
	pw_repo_free(h->repo);
	pw_buf_free(&h->line);
	pw_buf_free(&h->out);
	free_batch(h);
	free(h->filter);
	free(h->deepen_since);
	for (i = 0; i < h->nr_deepen_not; i++)
		free(h->deepen_not[i]);
	free(h->deepen_not);
	for (i = 0; i < h->nr_push_options; i++)
		free((char *)h->push_options[i]);
	free(h->push_options);
	pw_http_cache_free(h->http.cache);
	for (i = 0; i < h->nr_cas; i++)
		free(h->cas[i]);
	free(h->cas);
	free_stale(h);
	pw_buf_free(&h->pushrefs);
}

/* One command; *done when the session ends with it. */
static int one_command(struct rh *h, const struct pw_helper_cmd *c, int *done)
{
	int fell_back = 0, rc;

	switch (c->kind) {
	case PW_HCMD_END:
		*done = 1;
		return 0;
	case PW_HCMD_CAPABILITIES:
		answer(h, "stateless-connect\nfetch\nget\npush\noption\ncheck-connectivity\n"
		          "object-format\n\n");
		return 0;
	case PW_HCMD_OPTION:
		return set_option(h, c);
	case PW_HCMD_LIST:
	case PW_HCMD_LIST_FOR_PUSH:
		return do_list(h, c->kind == PW_HCMD_LIST_FOR_PUSH);
	case PW_HCMD_FETCH:
		return do_fetch(h, c);
	case PW_HCMD_PUSH:
		return do_push(h, c);
	case PW_HCMD_GET:
		return do_get(h, c);
	case PW_HCMD_STATELESS_CONNECT:
		/* after a fallback Git goes on with list and fetch */
		rc = stateless_connect(h, c, &fell_back);
		*done = rc || !fell_back;
		return rc;
	default:
		return fatal(h, "remote-http: command '%s' is not supported", h->line.data);
	}
}

int pw_helper_serve(const struct pw_helper_serve_opts *o, struct pw_error *err)
{
	struct rh h;
	struct pw_error e = {0};
	struct pw_helper_cmd c;
	const char *dc;
	int rc = 0, done = 0;

	memset(&h, 0, sizeof(h));
	h.o = o;
	h.err = err;
	h.url = o->url;
	h.verbosity = 1;
	/* "<scheme>::<url>" given as the remote; a URL without a scheme is
	 * refused at once, as git-remote-http does */
	dc = strstr(h.url, "::");
	if (dc && !memchr(h.url, '/', (size_t)(dc - h.url)))
		h.url = dc + 2;
	dc = strstr(h.url, "://");
	if (!dc || dc == h.url)
		return fatal(&h, "url has no scheme: %s", h.url);
	pw_buf_init(&h.line, 0);
	pw_buf_init(&h.out, 0);
	h.http = o->http;
	h.http.note = note;
	h.http.note_ctx = &h;
	if (pw_http_cache_new(&h.http.cache))
		return nomem(&h);
	/* the repository's config (http.*, credential.*) from the start, when
	 * there is one; fetch and push open it afresh */
	if (o->open_repo(o->ctx, &h.repo, &e)) {
		pw_repo_free(h.repo);
		h.repo = NULL;
	}
	while (!rc && !done) {
		int r = read_line(&h);

		if (r < 0)
			rc = fatal(&h, "remote-http: error reading a command");
		else if (r > 0)
			break;
		else if (pw_helper_cmd_parse(h.line.data, h.line.len, &c, &e))
			rc = fatal(&h, "remote-http: %s", e.msg);
		else
			rc = one_command(&h, &c, &done);
	}
	free_all(&h);
	return rc;
}
