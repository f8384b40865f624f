/* A client session with upload-pack: connect, read the server's first
 * words (v0/v1 refs or v2 capabilities), list refs, end. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/bundle-priv.h"
#include "client/client-priv.h"
#include "client/dumb.h"
#include "transport/transport-priv.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/version.h"

int pw_session_version(const struct pw_session *s)
{
	return s->version;
}

const struct pw_hash_algo *pw_session_algo(const struct pw_session *s)
{
	return s->algo;
}

int pw_session_algo_advertised(const struct pw_session *s)
{
	return s->algo_advertised;
}

const char *pw_session_caps(const struct pw_session *s)
{
	return s->caps_joined ? s->caps_joined : "";
}

void pw_client__trace_pkt(pw_client__trace_fn *fn, void *ctx, int write, const struct pw_pkt *pkt)
{
	static const char *const ctl[] = {"0000", "0001", "0002"};

	if (!fn)
		return;
	if (pkt->kind == PW_PKT_DATA)
		fn(ctx, write, pkt->data ? pkt->data : "", pkt->len);
	else if (pkt->kind >= PW_PKT_FLUSH && pkt->kind <= PW_PKT_RESPONSE_END)
		fn(ctx, write, ctl[pkt->kind - PW_PKT_FLUSH], 4);
}

void pw_client__trace_buf(pw_client__trace_fn *fn, void *ctx, const struct pw_buf *b)
{
	struct pw_pkt pkt;
	size_t off = 0, used;

	while (fn && off < b->len &&
	       !pw_pkt_decode((const uint8_t *)b->data + off, b->len - off, &pkt, &used, NULL)) {
		off += used;
		pw_client__trace_pkt(fn, ctx, 1, &pkt);
	}
}

int pw_client__read(struct pw_session *s, struct pw_pkt *pkt, struct pw_error *err)
{
	int rc = pw_pkt_read(&s->rd, pkt, err);

	if (!rc)
		pw_client__trace_pkt(s->opts.trace_packet, s->opts.trace_packet_ctx, 0, pkt);
	return rc;
}

int pw_client__send(struct pw_session *s, struct pw_error *err)
{
	int rc;

	pw_client__trace_buf(s->opts.trace_packet, s->opts.trace_packet_ctx, &s->out);
	rc = pw_pkt_send(s->conn->out_fd, &s->out, err);

	if (rc)
		return pw_error_set(err, rc, "sending to the server: %s",
		                    err ? err->msg : "failed");
	return pw_conn_end_request(s->conn, err);
}

static int read_v0_adv(struct pw_session *s, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc;

	do {
		if ((rc = pw_client__read(s, &pkt, err)))
			return rc;
		rc = pw_adv_feed_v0(&s->adv, &pkt, err);
	} while (rc == PW_EMORE);
	if (rc)
		return rc;
	s->version = s->adv.version;
	s->algo = s->adv.algo;
	s->algo_advertised = s->adv.algo_advertised;
	s->listed = 1;
	s->caps_joined = strdup(s->adv.caps ? s->adv.caps : "");
	if (!s->caps_joined)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

static int read_v2_caps(struct pw_session *s, struct pw_error *err)
{
	struct pw_buf joined = PW_BUF_INIT;
	struct pw_pkt pkt;
	struct pw_str v;
	size_t i;
	int rc;

	do {
		if ((rc = pw_client__read(s, &pkt, err)))
			return rc;
		if (pkt.kind == PW_PKT_EOF)
			return pw_error_set(err, PW_EPROTO, "the remote end hung up unexpectedly");
		rc = pw_v2_caps_feed(&s->caps2, &pkt, err);
	} while (rc == PW_EMORE);
	if (rc)
		return rc;
	s->version = 2;
	s->algo = &pw_hash_sha1;
	if (!pw_v2_caps_get(&s->caps2, "object-format", &v)) {
		if (!v.p)
			return pw_error_set(
			        err, PW_EPROTO,
			        "protocol error: object-format capability without a value");
		if ((rc = pw_object_format_lookup(v.p, v.len, &s->algo, err)))
			return rc;
		s->algo_advertised = 1;
	}
	for (i = 0; i < s->caps2.nr; i++)
		if ((i && pw_buf_addch(&joined, ' ')) ||
		    pw_buf_add(&joined, s->caps2.lines[i].p, s->caps2.lines[i].len)) {
			pw_buf_free(&joined);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	s->caps_joined = pw_buf_detach(&joined, NULL);
	return 0;
}

int pw_session_open(struct pw_session **out, const char *url, const struct pw_client_opts *opts,
                    struct pw_error *err)
{
	struct pw_transport_opts topts = {0};
	struct pw_session *s;
	struct pw_pkt pkt;
	int rc;

	if (pw_bundle_remote__probe(url))
		return pw_bundle_remote__open(out, url, opts, err);
	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (opts)
		s->opts = *opts;
	pw_adv_init(&s->adv);
	pw_v2_caps_init(&s->caps2);
	s->rd.fd = -1;
	topts.command = s->opts.upload_pack;
	topts.protocol_version = s->opts.protocol_version;
	topts.quiet = s->opts.quiet;
	topts.ssh = s->opts.ssh;
	topts.git_proxy = s->opts.git_proxy;
	topts.git_proxy_config = s->opts.git_proxy_config;
	topts.config = s->opts.config;
	topts.http_env = s->opts.http_env;
	topts.protocol = s->opts.protocol;
	topts.git_dir = s->opts.git_dir;
	topts.remote_name = s->opts.remote_name;
	if ((rc = pw_transport_connect(&s->conn, url, &topts, err)))
		goto fail;
	if (pw_dumb_is(s->conn)) { /* no service line: the dumb client takes over */
		if ((rc = pw_dumb_open(&s->dumb, s->conn, &s->opts, err)))
			goto fail;
		s->algo = pw_dumb_algo(s->dumb);
		*out = s;
		return 0;
	}
	if (s->conn->in_fd < 0) {
		/* a helper without connect: its own commands (helper.c) */
		rc = pw_client__helper_open(s, pw_transport__take_helper(s->conn), err);
		pw_conn_free(s->conn);
		s->conn = NULL;
		if (rc)
			goto fail;
		*out = s;
		return 0;
	}
	if ((rc = pw_pkt_reader_init(&s->rd, s->conn->in_fd, 0))) {
		pw_error_set(err, rc, "out of memory");
		goto fail;
	}
	if ((rc = pw_pkt_peek(&s->rd, &pkt, err)))
		goto fail;
	if (pkt.kind == PW_PKT_EOF) {
		rc = pw_error_set(err, PW_EPROTO, "Could not read from remote repository.");
		goto fail;
	}
	if (pkt.kind == PW_PKT_DATA && pkt.len >= 9 && !memcmp(pkt.data, "version 2", 9) &&
	    (pkt.len == 9 || (pkt.len == 10 && pkt.data[9] == '\n')))
		rc = read_v2_caps(s, err);
	else
		rc = read_v0_adv(s, err);
	if (rc)
		goto fail;
	*out = s;
	return 0;
fail:
	pw_session_close(s, NULL);
	return rc;
}

int pw_session_close(struct pw_session *s, struct pw_error *err)
{
	int status = 0, rc = 0;

	if (!s)
		return 0;
	pw_bundle_remote__free(s->bundle);
	if (s->helper)
		rc = pw_client__helper_close(s, err);
	if (s->conn) {
		/* v2: end of session; v0/v1 without a fetch: "no wants" */
		if (s->conn->out_fd >= 0 && !s->failed && !s->conn->stateless &&
		    (s->version == 2 || !s->fetched)) {
			struct pw_error ignore;

			pw_buf_reset(&s->out);
			if (!pw_pkt_flush(&s->out))
				pw_client__send(s, &ignore);
		}
		pw_conn_close_write(s->conn);
		rc = pw_conn_finish(s->conn, &status, err);
		pw_conn_free(s->conn);
	}
	if (s->rd.buf)
		pw_pkt_reader_free(&s->rd);
	pw_dumb_free(s->dumb);
	pw_adv_free(&s->adv);
	pw_v2_caps_free(&s->caps2);
	pw_buf_free(&s->out);
	free(s->caps_joined);
	free(s);
	return rc;
}

int pw_session_check_algo(struct pw_session *s, const struct pw_hash_algo *local,
                          struct pw_error *err)
{
	if (s->bundle)
		return pw_bundle_remote__check_algo(s, local, err);
	if (s->dumb)
		return pw_dumb_check_algo(s->dumb, local, err);
	if (s->helper)
		return local == s->algo
		               ? 0
		               : pw_error_set(err, PW_EMISMATCH,
		                              "mismatched algorithms: client %s; server %s",
		                              local->name, s->algo->name);
	if (s->version == 2) {
		struct pw_str v, *vp = NULL;

		if (!pw_v2_caps_get(&s->caps2, "object-format", &v))
			vp = &v;
		return pw_object_format_client_check(local, vp, err);
	}
	if (!pw_object_format_caps_supports(s->adv.caps ? s->adv.caps : "", s->adv.caps_len, local))
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "Server does not support this repository's object format");
	return 0;
}

int pw_client__response_end(struct pw_session *s, const char *what, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc;

	if (!s->conn->stateless || s->version != 2)
		return 0;
	if ((rc = pw_client__read(s, &pkt, err)))
		return rc;
	if (pkt.kind != PW_PKT_RESPONSE_END)
		return pw_error_set(err, PW_EPROTO, "expected response end packet after %s", what);
	return 0;
}

/* The capability lines every v2 command starts with. */
int pw_client__v2_command(struct pw_session *s, const char *cmd, struct pw_error *err)
{
	int rc;

	pw_buf_reset(&s->out);
	rc = pw_pkt_writef(&s->out, "command=%s\n", cmd);
	if (!rc)
		rc = pw_pkt_writes(&s->out, "agent=packwire/" PW_VERSION "\n");
	if (!rc && s->algo_advertised)
		rc = pw_pkt_writef(&s->out, "object-format=%s\n", s->algo->name);
	if (!rc)
		rc = pw_pkt_delim(&s->out);
	return rc ? pw_error_set(err, rc, "out of memory") : 0;
}

int pw_session_list_refs(struct pw_session *s, const char *const *prefixes, unsigned flags,
                         const struct pw_adv **out, struct pw_error *err)
{
	struct pw_pkt pkt;
	int rc;

	*out = NULL;
	if (s->dumb)
		return pw_dumb_list_refs(s->dumb, out, err);
	if (s->version != 2 || s->listed) {
		*out = &s->adv;
		return 0;
	}
	if (!pw_v2_caps_has(&s->caps2, "ls-refs"))
		return pw_error_set(err, PW_EPROTO, "the server does not offer ls-refs");
	if ((rc = pw_client__v2_command(s, "ls-refs", err)))
		return rc;
	rc = 0;
	if (flags & PW_LSREFS_PEEL)
		rc = pw_pkt_writes(&s->out, "peel\n");
	if (!rc && (flags & PW_LSREFS_SYMREFS))
		rc = pw_pkt_writes(&s->out, "symrefs\n");
	if (!rc && (flags & PW_LSREFS_UNBORN) &&
	    pw_v2_caps_has_feature(&s->caps2, "ls-refs", "unborn"))
		rc = pw_pkt_writes(&s->out, "unborn\n");
	for (; !rc && prefixes && *prefixes; prefixes++)
		rc = pw_pkt_writef(&s->out, "ref-prefix %s\n", *prefixes);
	if (!rc)
		rc = pw_pkt_flush(&s->out);
	if (rc)
		return pw_error_set(err, rc, "out of memory");
	if ((rc = pw_client__send(s, err)))
		return rc;
	pw_adv_free(&s->adv);
	pw_adv_init(&s->adv);
	s->adv.algo = s->algo;
	s->adv.algo_advertised = s->algo_advertised;
	s->adv.version = 2;
	do {
		if ((rc = pw_client__read(s, &pkt, err)))
			return rc;
		rc = pw_adv_feed_ls_refs(&s->adv, &pkt, err);
	} while (rc == PW_EMORE);
	if (rc)
		return rc;
	if ((rc = pw_client__response_end(s, "ref listing", err)))
		return rc;
	s->listed = 1;
	*out = &s->adv;
	return 0;
}
