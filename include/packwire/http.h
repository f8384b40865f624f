/* The smart (and dumb) HTTP server side: one request handler that every
 * front calls (the CGI program `packwire http-backend`, an embedded server).
 * The front describes the request (method, path, query, a few headers, a
 * body reader) and gives a response sink; the handler routes it as
 * `git http-backend` does: info/refs with or without a service, the
 * stateless-RPC POSTs to git-upload-pack and git-receive-pack, and the dumb
 * files (HEAD, info/refs, objects/info/..., loose objects, packs and idx),
 * with Git's status codes, content types and cache headers. It reads no
 * environment variable and prints nothing: the front fills the request. */
#ifndef PACKWIRE_HTTP_H
#define PACKWIRE_HTTP_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"

/* Default bound of a buffered (upload-pack) request body, inflated: 10 MiB,
 * as git http-backend's GIT_HTTP_MAX_REQUEST_BUFFER. */
#define PW_HTTP_MAX_REQUEST_BUFFER (10u * 1024 * 1024)

/* What a request did, for the front's numbers (pw_http_request.result). */
struct pw_http_result {
	/* A push ran: 1 when every ref update it asked for was applied, -1 when
	 * one was refused or the push failed; 0 for any other request. */
	int push;
};

/* One header field (a request's as received, or a response's). */
struct pw_http_header {
	const char *name, *value;
};

/*
 * One request. Strings are borrowed for the call; NULL means absent.
 * Where the repository is: project_root + path_info (as GIT_PROJECT_ROOT and
 * PATH_INFO), or, when project_root is NULL or empty, path_translated (the
 * web server's PATH_TRANSLATED) is the full file-system path.
 */
struct pw_http_request {
	const char *method;          /* "GET", "HEAD", "POST", ... (required) */
	const char *path_info;       /* "/repo.git/info/refs" */
	const char *path_translated; /* used when project_root is unset */
	const char *query;           /* "service=git-upload-pack", no '?' */
	const char *server_protocol; /* "HTTP/1.1": a wrong method is 405, else 400 */
	const char *content_type;
	const char *content_encoding; /* "gzip" or "x-gzip" = gzip body */
	const char *git_protocol;     /* the Git-Protocol header ("version=2") */
	const char *remote_user;      /* authenticated user; NULL/"" = anonymous */
	const char *remote_addr;
	long long content_length; /* bytes of body; -1 = unknown (read to EOF) */
	/* Read up to len body bytes into buf: the count, 0 at the end, < 0 on
	 * error. NULL = empty body. Called on the caller's thread. */
	long (*read_body)(void *ctx, void *buf, size_t len);
	void *body_ctx;

	/* Server settings (what the environment gives git http-backend). */
	/* GIT_PROJECT_ROOT; a repository under it whose real path (symlinks
	 * resolved) leads outside it is refused (404, "resolves outside the
	 * base path"), as packwire daemon refuses it under --base-path */
	const char *project_root;
	int export_all; /* GIT_HTTP_EXPORT_ALL: no git-daemon-export-ok needed */
	/* Bound of a buffered body (GIT_HTTP_MAX_REQUEST_BUFFER); 0 = the
	 * repository's http.maxRequestBuffer, else PW_HTTP_MAX_REQUEST_BUFFER. */
	uint64_t max_request_buffer;
	/* Where upload-pack/receive-pack messages go when the client has no
	 * side-band (the web server's error log); -1 drops them. */
	int err_fd;
	const char *agent;         /* NULL = "packwire/<version>" */
	const char *ref_namespace; /* GIT_NAMESPACE for upload-pack, or NULL */
	/* GIT_COMMITTER_NAME/EMAIL/DATE for a push's reflog; NULL name/email:
	 * remote_user (else "anonymous") and "<name>@http.<remote_addr>", as
	 * git http-backend fills them in. */
	const char *committer_name, *committer_email, *committer_date;
	/* The CONTENT_LENGTH given when it did not parse as a size, else NULL:
	 * a POST to a service then fails as git http-backend's does (500,
	 * "failed to parse CONTENT_LENGTH: <value>"). */
	const char *content_length_bad;
	/* The request's header fields as they came, repeats included, when the
	 * front has them (an embedded server; a CGI program has only what the
	 * web server passed on): pw_http_admit checks the body's framing in
	 * them. NULL: content_length alone says how long the body is. */
	const struct pw_http_header *headers;
	size_t nr_headers;
	/* The front's bound on any request body (packwire serve --max-body);
	 * 0 = none. */
	uint64_t max_body;
	/* The browse pages (packwire serve; git http-backend has none, so 0
	 * keeps its 404): a GET or HEAD of "/" or of a directory path ending
	 * in '/' answers an HTML page listing the repositories under
	 * project_root, or showing one repository (docs/server.md). Read-only,
	 * bounded in the objects it reads and the bytes it writes. */
	int browse;
	/* The clone URLs the repository page shows: the server's base URL
	 * ("http://host:port", no trailing '/') and a git:// daemon's
	 * ("git://host[:port]"), the repository's path appended; NULL = none. */
	const char *clone_url;
	const char *daemon_url;
	/* Filled in when not NULL (also when the request fails). */
	struct pw_http_result *result;
	/* The pack cache upload-pack's packs go through (packwire/pack-cache.h;
	 * borrowed), or NULL. */
	struct pw_pack_cache *pack_cache;
};

struct pw_pack_cache;

/* Zero the request, content_length and err_fd -1. */
PW_API void pw_http_request_init(struct pw_http_request *req);

/*
 * Where the response goes. start() is called exactly once, before any
 * write(), with the status ("200", "OK" included) and the headers (borrowed
 * for the call; no Status header among them). write() gets the body in
 * pieces. A non-zero return from either means the client is gone: the
 * handler stops. Both are called on the caller's thread. For a HEAD request
 * the handler sends the headers only.
 */
struct pw_http_sink {
	int (*start)(void *ctx, int status, const char *reason,
	             const struct pw_http_header *headers, size_t nr);
	int (*write)(void *ctx, const void *data, size_t len);
	void *ctx;
};

/*
 * Serve one request. Returns 0 when the request was served (whatever the
 * status); a negative code with the message in err (for the server's log,
 * as git http-backend writes to stderr) when the answer was a refusal or an
 * error (404, 403, 500, ...; the response has been sent) or when the
 * service failed after its response began. err->code says which:
 * PW_ENOTFOUND (404), PW_EUNSUPPORTED (403/405/415), PW_EINVAL (400/500),
 * PW_ETOOBIG (413), else the service's code.
 * The POSTs run upload-pack/receive-pack on a second thread, fed and drained
 * through a socket pair by the caller's thread; the process must ignore
 * SIGPIPE (a client that goes away then gives EPIPE, not death). Any number
 * of requests may run at once on different threads.
 */
PW_API int pw_http_serve(const struct pw_http_request *req, const struct pw_http_sink *sink,
                         struct pw_error *err);

/*
 * The first look at a request, before any byte of its body is read: every
 * front goes through it (pw_http_serve calls it first; a front that reads
 * the body before the handler runs, such as an embedded server that spools
 * it, calls it as soon as the header is in).
 *  - The framing in req->headers (pw_http_check_headers): 400 or 501.
 *  - The declared length (the Content-Length field, else
 *    req->content_length) against req->max_body, then against what the
 *    endpoint takes: an upload-pack POST at most the request buffer
 *    (max_request_buffer, http.maxRequestBuffer, else
 *    PW_HTTP_MAX_REQUEST_BUFFER), as git http-backend: 413.
 * 0: go ahead; *limit (may be NULL) gets the most body bytes the handler
 * reads for the request: 0 when it reads none (a GET, or a request it
 * refuses anyway: the front may drop the body), UINT64_MAX when only
 * max_body bounds it. A body that turns out longer than *limit (chunked)
 * is refused by calling again with content_length set to what came.
 * Else the refusal has been sent through sink and its code is returned, as
 * pw_http_serve returns it (PW_EINVAL 400, PW_ETOOBIG 413, PW_EUNSUPPORTED
 * 501), with the message in err.
 */
PW_API int pw_http_admit(const struct pw_http_request *req, const struct pw_http_sink *sink,
                         uint64_t *limit, struct pw_error *err);

/* How a request's body is framed (RFC 9112 section 6). */
struct pw_http_framing {
	int chunked;     /* Transfer-Encoding: chunked */
	int has_length;  /* a Content-Length field */
	uint64_t length; /* its value (at most INT64_MAX) */
};

/*
 * Check the header fields of a request (h[0..nr), repeats included;
 * http_version "HTTP/1.0", "HTTP/1.1" or NULL) for what would let two
 * readers disagree on where its body ends or what it is: 0 with *out
 * filled, or PW_EINVAL (answer 400) for a Content-Length that is not a
 * decimal number below 2^63 (so not libmicrohttpd's "unknown size"
 * 18446744073709551615), Content-Length fields that disagree, both
 * Content-Length and Transfer-Encoding, Transfer-Encoding in an HTTP/1.0
 * request or not ending in "chunked", "chunked" twice, and repeated Host,
 * Content-Type or Content-Encoding fields; PW_EUNSUPPORTED (answer 501)
 * for a transfer coding other than chunked. Pure: no I/O.
 */
PW_API int pw_http_check_headers(const struct pw_http_header *h, size_t nr,
                                 const char *http_version, struct pw_http_framing *out,
                                 struct pw_error *err);

/*
 * The decoder of a gzip request body, exposed for tests and fuzzing:
 * inflate in[0..len) (a whole gzip stream; bytes after its end are
 * ignored, as Git does) into out, at most max bytes (0 = no bound).
 * PW_ETOOBIG past max, PW_EINVAL for a damaged or truncated stream.
 */
struct pw_buf;
PW_API int pw_http_gunzip(struct pw_buf *out, const void *in, size_t len, uint64_t max,
                          struct pw_error *err);

#endif
