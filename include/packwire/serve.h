/* An embedded HTTP/1.1(S) server for Git (`packwire serve`), on
 * libmicrohttpd: every repository under a base directory, SHA-1 and SHA-256
 * alike, answered by the same request handler as the CGI front
 * (pw_http_serve in packwire/http.h). A thread pool reads and writes the
 * sockets; each request runs the handler on a thread of its own once its
 * body is in (memory, or an unlinked temporary file past a few MiB).
 * Push is on where the repository says http.receivepack = true, or for the
 * users of an htpasswd file (basic auth; bcrypt or SHA-crypt hashes checked
 * with libcrypt), who become REMOTE_USER. The library prints nothing and
 * reads no environment: the access log goes to a callback. */
#ifndef PACKWIRE_SERVE_H
#define PACKWIRE_SERVE_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"

struct pw_pack_cache;

struct pw_serve_opts {
	const char *listen;          /* IPv4/IPv6 address; NULL = "127.0.0.1" */
	unsigned port;               /* 0 = any free port (see pw_serve_port) */
	const char *base_path;       /* the directory of the repositories (required) */
	unsigned threads;            /* socket threads (a pool when > 1); 0 = 4 */
	unsigned max_connections;    /* 0 = 256 */
	unsigned timeout;            /* idle seconds before a connection is dropped; 0 = 60 */
	uint64_t max_request_buffer; /* as GIT_HTTP_MAX_REQUEST_BUFFER; 0 = per repository */
	uint64_t max_body;           /* bytes of one request body; 0 = 4 GiB */
	size_t max_header;           /* bytes of the request head; 0 = 32 KiB */
	const char *cert_file;       /* PEM certificate and key: HTTPS when both are set */
	const char *key_file;
	const char *auth_file; /* htpasswd lines user:hash; pushes then need basic auth */
	const char *realm;     /* NULL = "packwire" */
	const char *agent;     /* NULL = "packwire/<version>" */
	/* One line per request, common log format plus the duration, without
	 * the newline; called on a server thread, maybe on several at once. */
	void (*log)(void *ctx, const char *line);
	/* Messages of upload-pack/receive-pack with no side-band and of
	 * refused requests (the server's error log); may be NULL. */
	void (*error_log)(void *ctx, const char *msg);
	void *log_ctx;
	/* Requests handled at once; the others wait their turn on their
	 * connection. Each one in progress holds an object walk and a pack in
	 * the making, so this bounds the server's memory. 0 = 2 per CPU, at
	 * least 4. */
	unsigned max_jobs;
	/* Requests that may wait for a job while all max_jobs are busy, oldest
	 * served first. Past them a request is refused at once, and one that
	 * waited `timeout` seconds is refused then: 503 with Retry-After and a
	 * one-line text/plain reason (which git clone shows as "remote: ...").
	 * A waiting request costs a thread and its spooled body, no walk.
	 * 0 = 64; PW_SERVE_NO_QUEUE: none (refused whenever every job is busy). */
	unsigned max_queue;
	unsigned retry_after; /* seconds in Retry-After; 0 = 5 */
	/* GET /metrics (the Prometheus text format, docs/server.md) is on
	 * unless no_metrics; GET /healthz is always on: "ok" (200), or 503
	 * once pw_serve_drain (or pw_serve_stop) was called. */
	int no_metrics;
	/* The browse pages (GET / and GET /<repo>/) are on unless no_browse.
	 * Their clone URLs: url ("https://git.example.com", else the Host the
	 * client asked for) and daemon_url ("git://git.example.com", else no
	 * git:// URL), the repository's path appended. */
	int no_browse;
	const char *url;
	const char *daemon_url;
	/* The pack cache of upload-pack's packs (packwire/pack-cache.h), or
	 * NULL: borrowed, to be freed by the caller after pw_serve_stop. */
	struct pw_pack_cache *pack_cache;
};

#define PW_SERVE_NO_QUEUE 0xffffffffu

struct pw_serve;

/* Bind, load the certificate and the auth file, and start serving.
 * *out is freed by pw_serve_stop. The process must ignore SIGPIPE. */
PW_API int pw_serve_start(struct pw_serve **out, const struct pw_serve_opts *opts,
                          struct pw_error *err);
/* The port it listens on (the chosen one when opts.port was 0). */
PW_API unsigned pw_serve_port(const struct pw_serve *s);
/* The server goes on serving, but GET /healthz answers 503 from now on, so
 * that a load balancer stops sending it requests before pw_serve_stop.
 * Any thread; s may be NULL. */
PW_API void pw_serve_drain(struct pw_serve *s);
/* Graceful stop (pw_serve_drain first): no new connection is accepted, requests in flight run to
 * their end (or are cut after grace_seconds; 0 = wait for them), then the
 * server and everything it holds are freed. s may be NULL. */
PW_API void pw_serve_stop(struct pw_serve *s, unsigned grace_seconds);

/* Does password match the htpasswd hash ($2y$/$2b$ bcrypt, $5$/$6$
 * SHA-crypt)? 1 yes, 0 no, < 0 for a hash of another kind (err says so). */
PW_API int pw_serve_check_password(const char *hash, const char *password, struct pw_error *err);

#endif
