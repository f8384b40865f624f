/* packwire remote-http <remote> [<url>] (also remote-https): a remote helper
 * (gitremote-helpers(7)) over packwire's HTTP client, so that stock git can
 * use packwire as its git-remote-http(s). Commands come on stdin, answers go
 * to stdout; stateless-connect bridges Git's v2 requests to POSTs, fetch and
 * push run packwire's own client on $GIT_DIR. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "client-util.h"
#include "cmds.h"
#include "push-sign.h"
#include "trace-packet.h"
#include "trace2.h"
#include "packwire/packwire.h"

static const char usage_str[] = "packwire remote-http <remote> [<url>]";

struct rh {
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
	/* the environment's, with a credential cache: Git asks once per
	 * helper process, whatever the number of connections */
	struct pw_http_env http;
	/* the batch being read (freed at exit even on a fatal error) */
	struct pw_oid *wants;
	char **specs;
	size_t nr_specs;
	/* GIT_TRACE_PACKET as git-remote-http writes it: what the helper reads
	 * as "git", its fetch as "fetch-pack", its push as "send-pack" */
	struct pw_cli_trace_packet *trace;
	/* GIT_TRACE2_EVENT: the pack a push wrote, as pack-objects tells it */
	struct pw_cli_trace2 *trace2;
};

static void trace_pkt(const struct rh *h, int write, const struct pw_pkt *pkt)
{
	if (!h->trace)
		return;
	if (pkt->kind == PW_PKT_DATA)
		pw_cli_trace_packet(h->trace, write, pkt->data ? pkt->data : "", pkt->len);
	else if (pkt->kind == PW_PKT_FLUSH)
		pw_cli_trace_packet(h->trace, write, "0000", 4);
	else if (pkt->kind == PW_PKT_DELIM)
		pw_cli_trace_packet(h->trace, write, "0001", 4);
	else if (pkt->kind == PW_PKT_RESPONSE_END)
		pw_cli_trace_packet(h->trace, write, "0002", 4);
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

/* One line of stdin without its newline; 1 at end of input. Byte by byte:
 * after "stateless-connect" the rest of stdin is the packet stream. */
static int read_line(struct rh *h)
{
	pw_buf_reset(&h->line);
	for (;;) {
		char ch;
		ssize_t r = read(0, &ch, 1);

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

static void answer(const char *s)
{
	fputs(s, stdout);
	fflush(stdout);
}

/* The version git-remote-http would ask for: protocol.version when it is
 * set, else GIT_TEST_PROTOCOL_VERSION (Git's test suite), else 2, as in Git. */
static int wanted_version(const struct rh *h)
{
	const char *v = getenv("GIT_TEST_PROTOCOL_VERSION");

	if (pw_config_get_entry(pw_cli_config(h->repo), "protocol.version"))
		return pw_cli_protocol_version(h->repo);
	if (v && (!strcmp(v, "0") || !strcmp(v, "1") || !strcmp(v, "2")))
		return v[0] - '0';
	return 2;
}

static void client_opts(struct rh *h, struct pw_client_opts *o, int version)
{
	memset(o, 0, sizeof(*o));
	o->protocol_version = version;
	o->quiet = h->verbosity < 1;
	o->progress = h->progress;
	o->ssh = pw_cli_env()->ssh;
	o->http_env = &h->http;
	o->protocol = &pw_cli_env()->protocol;
	o->config = pw_cli_config(h->repo);
	pw_cli_report(&o->report, NULL);
	if (h->trace) {
		o->trace_packet = pw_cli_trace_packet;
		o->trace_packet_ctx = h->trace;
	}
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

	if (h->verbosity < level)
		return;
	fprintf(stderr, "%s\n", line);
	fflush(stderr);
}

static int open_repo(struct rh *h)
{
	/* afresh: a clone rewrites the repository's format after "list"; the
	 * open session keeps the config it was given until it is closed */
	if (h->s && !h->s_repo)
		h->s_repo = h->repo;
	else
		pw_repo_free(h->repo);
	h->repo = NULL;
	if (pw_cli_find_repo(&h->repo, 0) || !h->repo)
		return pw_cli_fatal("remote-http: fetch and push need a repository ($GIT_DIR)");
	return 0;
}

static int set_option(struct rh *h, const struct pw_helper_cmd *c)
{
	char name[64], *value;
	int b = 0, known = 1;

	if (c->arg_len >= sizeof(name)) {
		answer("unsupported\n");
		return 0;
	}
	memcpy(name, c->arg, c->arg_len);
	name[c->arg_len] = 0;
	if (!(value = strndup(c->arg2 ? c->arg2 : "", c->arg2_len)))
		return pw_cli_fatal("out of memory");
	if (!strcmp(name, "verbosity")) {
		h->verbosity = atoi(value);
	} else if (!strcmp(name, "progress")) {
		h->progress = !pw_config_parse_bool(value, &b) && b;
	} else if (!strcmp(name, "depth")) {
		char *end;
		long n = strtol(value, &end, 10);

		if (*end || n < 0 || n > 0x7fffffff) {
			free(value);
			answer("error invalid depth\n");
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
		struct pw_error qerr = {0};
		char **n;
		size_t qlen;
		char *q = pw_helper_unquote(value, strlen(value), &qlen, &qerr);

		free(value);
		value = NULL;
		if (!q)
			return pw_cli_fatal("invalid quoting in %s value: %s", name, qerr.msg);
		if (name[7] == 's') {
			free(h->deepen_since);
			h->deepen_since = q;
		} else if (!(n = realloc(h->deepen_not, (h->nr_deepen_not + 2) * sizeof(*n)))) {
			free(q);
			return pw_cli_fatal("out of memory");
		} else {
			h->deepen_not = n;
			n[h->nr_deepen_not++] = q;
			n[h->nr_deepen_not] = NULL;
		}
	} else if (!strcmp(name, "push-option")) {
		struct pw_error qerr = {0};
		const char **n;
		size_t qlen;
		char *q;

		/* git C-quotes a value with special characters */
		if (!(q = pw_helper_unquote(value, strlen(value), &qlen, &qerr))) {
			free(value);
			return pw_cli_fatal("invalid quoting in push-option value: %s", qerr.msg);
		}
		free(value);
		value = q;
		n = realloc(h->push_options, (h->nr_push_options + 1) * sizeof(*h->push_options));
		if (!n) {
			free(value);
			return pw_cli_fatal("out of memory");
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
			answer("error unknown object format\n");
			return 0;
		}
	} else if (!strcmp(name, "cas")) {
		char **n = realloc(h->cas, (h->nr_cas + 1) * sizeof(*n));

		if (!n) {
			free(value);
			return pw_cli_fatal("out of memory");
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
	answer(known ? "ok\n" : "unsupported\n");
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
		return pw_cli_fatal("%s", err.msg);
	for (i = 0; i < adv->nr; i++) {
		const struct pw_remote_ref *r = &adv->refs[i];

		if (!r->unborn && !r->symref_target && strcmp(r->name, "HEAD") &&
		    pw_buf_addf(&out, "%s %s\n", pw_oid_to_hex(&r->oid, hex), r->name))
			return pw_cli_fatal("out of memory");
	}
	if (h->object_format)
		printf(":object-format %s\n", !out.len && h->repo ? pw_repo_algo(h->repo)->name
		                                                  : pw_session_algo(h->s)->name);
	close_session(h);
	fwrite(out.data, 1, out.len, stdout);
	pw_buf_free(&h->pushrefs);
	h->pushrefs = out;
	answer("\n");
	return 0;
}

/* "list for-push": receive-pack's refs, from its v0 advertisement. The
 * connection's info/refs answer stays in the cache, so that the push that
 * follows does not ask again (one GET, as git-remote-http). */
static int list_for_push(struct rh *h)
{
	struct pw_transport_opts to = {0};
	struct pw_pkt_reader rd = {0};
	struct pw_error err = {0};
	struct pw_conn *conn = NULL;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_adv adv;
	struct pw_pkt pkt;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	to.service = "git-receive-pack";
	/* receive-pack speaks v0 or v1: v2 asks for v0, as git-remote-http */
	to.protocol_version = wanted_version(h) == 1 ? 1 : 0;
	to.quiet = h->verbosity < 1;
	to.config = pw_cli_config(h->repo);
	to.http_env = &h->http;
	to.protocol = &pw_cli_env()->protocol;
	if ((rc = pw_transport_connect(&conn, h->url, &to, &err)))
		return pw_cli_fatal("%s", err.msg);
	if (conn->in_fd < 0) {
		pw_conn_free(conn);
		return list_dumb_for_push(h);
	}
	if (pw_pkt_reader_init(&rd, conn->in_fd, 0)) {
		pw_conn_free(conn);
		return pw_cli_fatal("out of memory");
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
	if (!rc && h->object_format)
		printf(":object-format %s\n",
		       (adv.algo ? adv.algo : pw_hash_by_id(PW_HASH_SHA1))->name);
	pw_adv_free(&adv);
	if (rc) {
		pw_buf_free(&out);
		return pw_cli_fatal("%s", err.msg);
	}
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
	pw_buf_free(&h->pushrefs);
	h->pushrefs = out;
	answer("\n");
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
	pw_cli_trace_packet_who(h->trace, "git");
	if (for_push)
		return list_for_push(h);
	client_opts(h, &o, wanted_version(h));
	if ((rc = pw_session_open(&h->s, h->url, &o, &err)) ||
	    (rc = pw_session_list_refs(h->s, NULL, PW_LSREFS_SYMREFS | PW_LSREFS_PEEL, &adv, &err)))
		return pw_cli_fatal("%s", err.msg);
	if (h->object_format)
		printf(":object-format %s\n", pw_session_algo(h->s)->name);
	for (i = 0; i < adv->nr; i++) {
		const struct pw_remote_ref *r = &adv->refs[i];

		if (r->symref_target)
			printf("@%s %s\n", r->symref_target, r->name);
		else if (!r->unborn)
			printf("%s %s\n", pw_oid_to_hex(&r->oid, hex), r->name);
		if (r->has_peeled)
			printf("%s %s^{}\n", pw_oid_to_hex(&r->peeled, hex), r->name);
	}
	answer("\n");
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
	pw_cli_trace_packet_who(h->trace, "fetch-pack");
	if (!h->s) {
		struct pw_client_opts o;
		const struct pw_adv *adv;

		client_opts(h, &o, wanted_version(h));
		if (pw_session_open(&h->s, h->url, &o, &err) ||
		    pw_session_list_refs(h->s, NULL, 0, &adv, &err))
			return pw_cli_fatal("%s", err.msg);
	}
	for (;;) {
		if (c.kind != PW_HCMD_FETCH)
			return pw_cli_fatal("remote-http: expected a fetch command in the batch");
		if (nr == alloc) {
			struct pw_oid *n =
			        realloc(h->wants, (alloc = alloc ? 2 * alloc : 16) * sizeof(*n));

			if (!n)
				return pw_cli_fatal("out of memory");
			h->wants = n;
		}
		if (pw_oid_from_hex(&h->wants[nr], c.arg, c.arg_len, pw_session_algo(h->s)))
			return pw_cli_fatal("remote-http: bad object id in fetch: %.*s",
			                    (int)c.arg_len, c.arg);
		nr++;
		if ((rc = read_line(h)) || pw_helper_cmd_parse(h->line.data, h->line.len, &c, &err))
			return pw_cli_fatal("remote-http: %s",
			                    rc ? "unexpected end of the fetch batch" : err.msg);
		if (c.kind == PW_HCMD_END)
			break;
	}
	if (pw_session_check_algo(h->s, pw_repo_algo(h->repo), &err))
		return pw_cli_fatal("%s", err.msg);
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
		return pw_cli_fatal("%s", err.msg);
	/* a session serves one fetch: the next one starts afresh */
	close_session(h);
	answer("\n");
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
					return pw_cli_fatal("out of memory");
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
				return pw_cli_fatal("out of memory");
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
static void print_reports(const struct pw_push_ref *r)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t j;

	for (j = 0; j < r->nr_reports; j++) {
		const struct pw_push_report *rep = &r->reports[j];

		if (j)
			printf("ok %s\n", r->dst);
		if (rep->ref_name)
			printf("option refname %s\n", rep->ref_name);
		if (rep->old_oid.algo)
			printf("option old-oid %s\n", pw_oid_to_hex(&rep->old_oid, hex));
		if (rep->new_oid.algo)
			printf("option new-oid %s\n", pw_oid_to_hex(&rep->new_oid, hex));
		if (rep->forced_update)
			printf("option forced-update\n");
	}
}

/* The pack is sent: its object count as Git's pack-objects reports it to
 * trace2 (Git's t5549 reads it to see what push.negotiate saved). */
static void pack_done(void *data, const struct pw_pack_write_stats *st)
{
	const struct rh *h = data;
	char n[16];

	snprintf(n, sizeof(n), "%u", (unsigned)st->written);
	pw_cli_trace2_data(h->trace2, "pack-objects", "write_pack_file/wrote", n);
}

/* "push <refspec>" lines up to a blank one, then one push. */
static int do_push(struct rh *h, const struct pw_helper_cmd *first)
{
	struct pw_push_opts o = {0};
	struct pw_push_result res = {0};
	char pusher[640];
	struct pw_error err = {0};
	struct pw_helper_cmd c = *first;
	size_t i;
	int rc;

	if ((rc = open_repo(h)))
		return rc;
	if (h->s) {
		close_session(h);
	}
	for (;;) {
		char **n;

		if (c.kind != PW_HCMD_PUSH)
			return pw_cli_fatal("remote-http: expected a push command in the batch");
		if (!(n = realloc(h->specs, (h->nr_specs + 1) * sizeof(*n))))
			return pw_cli_fatal("out of memory");
		h->specs = n;
		if (!(n[h->nr_specs] = strndup(c.arg, c.arg_len)))
			return pw_cli_fatal("out of memory");
		h->nr_specs++;
		if ((rc = read_line(h)) || pw_helper_cmd_parse(h->line.data, h->line.len, &c, &err))
			return pw_cli_fatal("remote-http: %s",
			                    rc ? "unexpected end of the push batch" : err.msg);
		if (c.kind == PW_HCMD_END)
			break;
	}
	if ((rc = apply_cas(h)))
		return rc;
	o.atomic = h->atomic;
	o.dry_run = h->dry_run;
	o.quiet = h->verbosity < 1;
	o.progress = h->progress;
	o.ssh = pw_cli_env()->ssh;
	o.http_env = &h->http;
	o.protocol = &pw_cli_env()->protocol;
	o.push_options = h->push_options;
	o.nr_push_options = h->nr_push_options;
	if (h->push_cert) {
		/* push --signed: the certificate signed with gpg, as send-pack */
		if (pw_cli_push_pusher(h->repo, pusher, sizeof(pusher)))
			return pw_cli_fatal("a signed push needs a committer email "
			                    "(user.email or GIT_COMMITTER_EMAIL)");
		o.push_cert = h->push_cert;
		o.cert_pusher = pusher;
		o.sign = pw_cli_push_sign;
		o.sign_ctx = h->repo;
	}
	if (h->trace) {
		pw_cli_trace_packet_who(h->trace, "send-pack");
		o.trace_packet = pw_cli_trace_packet;
		o.trace_packet_ctx = h->trace;
	}
	pw_cli_report(&o.report, NULL);
	o.report.data = h;
	o.local_pack_done = pack_done;
	{
		/* push.negotiate, read by send-pack in Git: its fetch speaks
		 * the version git-remote-http would */
		int found, b = 0;
		const char *v = pw_cli_config_get(h->repo, "push.negotiate", &found);

		if (found && !pw_config_parse_bool(v, &b) && b) {
			o.negotiate = 1;
			o.negotiate_protocol = wanted_version(h);
		}
	}
	if (h->nr_specs)
		rc = pw_push(h->repo, h->url, (const char *const *)h->specs, h->nr_specs, &o, &res,
		             &err);
	free_batch(h);
	/* the last meter ends its line before git prints "To <url>" */
	if (o.report.progress)
		o.report.progress(o.report.data, NULL, 0, 0, 0);
	if (rc) {
		pw_push_result_free(&res);
		return pw_cli_fatal("%s", err.msg);
	}
	for (i = 0; i < h->nr_stale; i++)
		printf("error %s stale info\n", h->stale[i]);
	free_stale(h);
	if (res.unpack_error)
		fprintf(stderr, "error: remote unpack failed: %s\n", res.unpack_error);
	for (i = 0; i < res.nr; i++) {
		const char *msg, *st = push_status(&res.refs[i], &msg);

		printf("%s %s%s%s\n", st, res.refs[i].dst, msg ? " " : "", msg ? msg : "");
		if (res.refs[i].status == PW_PUSH_OK)
			print_reports(&res.refs[i]);
	}
	pw_push_result_free(&res);
	answer("\n");
	return 0;
}

/* "get <url> <path>": the file at url into path (Git's bundle URIs), with
 * the remote's http.* settings; a blank line when it is there. */
static int do_get(struct rh *h, const struct pw_helper_cmd *c)
{
	struct pw_transport_opts to = {0};
	struct pw_error err = {0};
	char *url = strndup(c->arg, c->arg_len), *path = strndup(c->arg2, c->arg2_len);
	int rc;

	if (!url || !path) {
		free(url);
		free(path);
		return pw_cli_fatal("out of memory");
	}
	to.quiet = h->verbosity < 1;
	to.config = pw_cli_config(h->repo);
	to.http_env = &h->http;
	to.protocol = &pw_cli_env()->protocol;
	rc = pw_http_download(url, path, &to, &err);
	if (rc) {
		fprintf(stderr, "error: %s\n", err.msg);
		rc = pw_cli_fatal("failed to download file at URL '%s'", url);
	} else {
		answer("\n");
	}
	free(url);
	free(path);
	return rc;
}

/* Copy packets from r to fd 1 up to and including the one of kind `last`;
 * traced when trace is set. */
static int relay(const struct rh *trace, struct pw_pkt_reader *r, enum pw_pkt_kind last,
                 struct pw_buf *out, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc;

	pw_buf_reset(out);
	for (;;) {
		if ((rc = pw_pkt_read(r, &pkt, err)))
			return rc;
		if (trace)
			trace_pkt(trace, 0, &pkt);
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
			if ((rc = pw_pkt_send(1, out, err)))
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
	struct pw_transport_opts to = {0};
	struct pw_pkt_reader in = {0}, rd = {0};
	struct pw_buf out = PW_BUF_INIT, req = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_conn *conn = NULL;
	struct pw_pkt pkt;
	int rc;

	if (c->arg_len != 15 || memcmp(c->arg, "git-upload-pack", 15)) {
		answer("fallback\n");
		*fell_back = 1;
		return 0;
	}
	to.service = "git-upload-pack";
	to.protocol_version = 2;
	to.quiet = h->verbosity < 1;
	to.config = pw_cli_config(h->repo);
	to.http_env = &h->http;
	to.protocol = &pw_cli_env()->protocol;
	if ((rc = pw_transport_connect(&conn, h->url, &to, &err)))
		return pw_cli_fatal("%s", err.msg);
	if (conn->in_fd < 0) {
		/* a dumb server (no service line): list and fetch go through
		 * packwire's dumb client */
		pw_conn_free(conn);
		answer("fallback\n");
		*fell_back = 1;
		return 0;
	}
	if (pw_pkt_reader_init(&rd, conn->in_fd, 0) || pw_pkt_reader_init(&in, 0, 0)) {
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
		answer("fallback\n");
		*fell_back = 1;
		return 0;
	}
	answer("\n");
	/* as git-remote-http: its view of the capabilities and of Git's
	 * requests is traced, the answers go through as they are */
	pw_cli_trace_packet_who(h->trace, "git");
	if ((rc = relay(h, &rd, PW_PKT_FLUSH, &out, &err)))
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
		    (rc = relay(NULL, &rd, PW_PKT_RESPONSE_END, &out, &err)))
			goto fail;
		if (h->trace)
			pw_cli_trace_packet(h->trace, 1, "0002", 4);
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
		return pw_cli_fatal("%s", err.msg);
	return 0;
}

int cmd_remote_http(int argc, char **argv)
{
	struct rh h = {0};
	struct pw_error err = {0};
	struct pw_helper_cmd c;
	int rc = 0;

	if (argc < 2 || argc > 3 || !strcmp(argv[1], "-h"))
		return pw_cli_usage(usage_str);
	h.url = argc == 3 ? argv[2] : argv[1];
	h.verbosity = 1;
	pw_buf_init(&h.line, 0);
	h.http = pw_cli_env()->http;
	h.http.note = note;
	h.http.note_ctx = &h;
	/* "<scheme>::<url>" given as the remote; a URL without a scheme is
	 * refused at once, as git-remote-http does */
	{
		const char *dc = strstr(h.url, "::");

		if (dc && !memchr(h.url, '/', (size_t)(dc - h.url)))
			h.url = dc + 2;
		dc = strstr(h.url, "://");
		if (!dc || dc == h.url)
			return pw_cli_fatal("url has no scheme: %s", h.url);
	}
	if (pw_http_cache_new(&h.http.cache))
		return pw_cli_fatal("out of memory");
	h.trace = pw_cli_trace_packet_open("git");
	{
		char sid[96];

		pw_cli_sid_make(sid, sizeof(sid));
		h.trace2 = pw_cli_trace2_open(sid);
	}
	/* the repository's config (http.*, credential.*) from the start, when
	 * there is one; fetch and push open it afresh */
	if (pw_repo_discover(&h.repo, getenv("GIT_DIR"), ".", pw_cli_repo_opts(), &err))
		h.repo = NULL;
	pw_cli_client_signals();
	while (!rc) {
		int r = read_line(&h);

		if (r < 0) {
			rc = pw_cli_fatal("remote-http: error reading a command");
			break;
		}
		if (r > 0)
			break;
		if (pw_helper_cmd_parse(h.line.data, h.line.len, &c, &err)) {
			rc = pw_cli_fatal("remote-http: %s", err.msg);
			break;
		}
		switch (c.kind) {
		case PW_HCMD_END:
			goto out;
		case PW_HCMD_CAPABILITIES:
			answer("stateless-connect\nfetch\nget\npush\noption\ncheck-connectivity\n"
			       "object-format\n\n");
			break;
		case PW_HCMD_OPTION:
			rc = set_option(&h, &c);
			break;
		case PW_HCMD_LIST:
		case PW_HCMD_LIST_FOR_PUSH:
			rc = do_list(&h, c.kind == PW_HCMD_LIST_FOR_PUSH);
			break;
		case PW_HCMD_FETCH:
			rc = do_fetch(&h, &c);
			break;
		case PW_HCMD_PUSH:
			rc = do_push(&h, &c);
			break;
		case PW_HCMD_GET:
			rc = do_get(&h, &c);
			break;
		case PW_HCMD_STATELESS_CONNECT:
			/* after a fallback Git goes on with list and fetch */
			{
				int fell_back = 0;

				rc = stateless_connect(&h, &c, &fell_back);
				if (!rc && fell_back)
					break;
			}
			goto out;
		default:
			rc = pw_cli_fatal("remote-http: command '%s' is not supported",
			                  h.line.data);
			break;
		}
	}
out:
	close_session(&h);
	pw_repo_free(h.repo);
	pw_buf_free(&h.line);
	free_batch(&h);
	free(h.filter);
	free(h.deepen_since);
	for (size_t i = 0; i < h.nr_deepen_not; i++)
		free(h.deepen_not[i]);
	free(h.deepen_not);
	for (size_t i = 0; i < h.nr_push_options; i++)
		free((char *)h.push_options[i]);
	free(h.push_options);
	pw_http_cache_free(h.http.cache);
	pw_cli_trace_packet_close(h.trace);
	pw_cli_trace2_close(h.trace2);
	for (size_t i = 0; i < h.nr_cas; i++)
		free(h.cas[i]);
	free(h.cas);
	free_stale(&h);
	pw_buf_free(&h.pushrefs);
	return rc;
}
