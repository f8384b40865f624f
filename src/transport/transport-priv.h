/* What a transport implementation provides behind struct pw_conn. */
#ifndef PW_TRANSPORT_PRIV_H
#define PW_TRANSPORT_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/transport.h"

struct pw_buf;

struct pw_conn_ops;

/* What a connection is behind its public fields: pw_transport_connect
 * allocates this, callers see &impl->pub. */
struct pw_conn_impl {
	struct pw_conn pub; /* first: a struct pw_conn * is a struct pw_conn_impl * */
	const struct pw_conn_ops *ops;
	int pid;
	int finished, status;
	void *priv;
};

static inline struct pw_conn_impl *pw_conn__impl(struct pw_conn *c)
{
	return (struct pw_conn_impl *)c;
}

struct pw_conn_ops {
	/* Close the streams and release the server (reap, end the request). */
	int (*finish)(struct pw_conn *c, int *status, struct pw_error *err);
	/* Stateless only: the request is complete. NULL for stateful ones. */
	int (*end_request)(struct pw_conn *c, struct pw_error *err);
	/* Release priv. May be NULL. */
	void (*free)(struct pw_conn *c);
};

int pw_transport__local(struct pw_conn *c, const char *path, const char *cmd, int version,
                        struct pw_error *err);
int pw_transport__ssh(struct pw_conn *c, const struct pw_url *u, const char *cmd, int version,
                      const struct pw_ssh_opts *ssh, struct pw_error *err);
/* git:// (git.c). */
int pw_transport__git(struct pw_conn *c, const struct pw_url *u, const char *service, int version,
                      const struct pw_transport_opts *opts, struct pw_error *err);
/* The core.gitProxy command for host (malloc'd; "" for "none"; NULL when
 * no entry matches). */
int pw_transport__git_proxy(char **out, const struct pw_config *cfg, const char *host);
/* http:// and https:// (http.c). */
int pw_transport__http(struct pw_conn *c, const struct pw_url *u, const char *url,
                       const char *service, int version, const struct pw_transport_opts *opts,
                       struct pw_error *err);
/* Where the advertisement starts in an info/refs body (after "# service="
 * and its flush); *version: 2 for a v2 capability advertisement, 1 for refs
 * after "version 1", else 0. Pure. */
int pw_http__discovery(const uint8_t *p, size_t n, const char *service, size_t *skip, int *version,
                       struct pw_error *err);
/* A v2 answer's pkt-line framing as it streams (http-pktcheck.c): feed
 * each piece (PW_EPROTO for a bad length or a response-end packet from the
 * server), then _end says whether it stopped inside a packet. Pure. */
struct pw_http_pktcheck {
	char len[4];
	unsigned len_filled;
	size_t remaining;
};
int pw_http__pktcheck_feed(struct pw_http_pktcheck *st, const uint8_t *p, size_t n,
                           struct pw_error *err);
int pw_http__pktcheck_end(const struct pw_http_pktcheck *st, struct pw_error *err);
/* Dumb HTTP (http.c, for client/dumb.c). pw_http__dumb_refs: 1 when c is an
 * HTTP connection whose info/refs had no smart answer, with that body
 * (borrowed, valid while c lives); else 0. */
int pw_http__dumb_refs(struct pw_conn *c, const uint8_t **p, size_t *n);
/* The repository's URL (after a redirect of info/refs), no trailing '/'. */
const char *pw_http__base(struct pw_conn *c);
/* http.followRedirects is true (alternates may be followed, as in Git). */
int pw_http__follow_all(struct pw_conn *c);
/* May a URL the server named (an alternate) be used: its scheme allowed
 * for what the user did not ask for (protocol.<name>.allow=user is not
 * enough), as computed when c was opened? */
int pw_http__server_may_use(struct pw_conn *c, const char *url);
/* GET an absolute URL with the connection's settings (auth, TLS, proxy,
 * http.*); the body goes to sink, whose non-zero return stops the transfer
 * and is returned. PW_ENOTFOUND for 404/410, PW_EIO otherwise. */
int pw_http__get(struct pw_conn *c, const char *url,
                 int (*sink)(void *ctx, const void *p, size_t n), void *ctx, struct pw_error *err);
/* Any method (WebDAV's PROPFIND, LOCK, PUT, MOVE, ...) on an absolute URL
 * of a dumb connection, with its settings and credentials (a 401 asks once).
 * The body is body[0..body_len) or, when body is NULL and body_fd >= 0,
 * body_len bytes of body_fd from offset 0. The response body goes to resp
 * and its header lines to resp_headers (either may be NULL; their max
 * bounds them: PW_ETOOBIG). Returns 0 whatever the status (in status) but
 * 401; PW_EIO when no answer came. */
struct pw_http__req {
	const char *method, *url;
	const char *const *headers; /* "Name: value", NULL-terminated (7 at most); or NULL */
	const void *body;
	int body_fd;
	uint64_t body_len;
	struct pw_buf *resp, *resp_headers;
	long status;
};
int pw_http__request(struct pw_conn *c, struct pw_http__req *r, struct pw_error *err);
/* <name>::<address> and unknown schemes: git-remote-<name> (helper.c). A
 * helper that cannot connect gives a conn without a stream (in_fd -1) whose
 * helper pw_transport__take_helper hands to the client. */
int pw_transport__helper(struct pw_conn *c, const struct pw_url *u, const char *service,
                         const char *cmd, int version, const struct pw_transport_opts *opts,
                         struct pw_error *err);
struct pw_helper;
struct pw_helper *pw_transport__take_helper(struct pw_conn *c);
/* Start argv (no shell) with its stdin/stdout as the connection (process.c). */
int pw_transport__spawn(struct pw_conn *c, char *const *argv, struct pw_error *err);

#endif
