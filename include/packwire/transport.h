/* Reaching a Git server: one interface for every transport. A connection is a
 * bidirectional byte stream (read from in_fd, write to out_fd) to a server
 * process running one service ("git-upload-pack" or "git-receive-pack").
 *
 * Process transports (local paths, file://, ssh:// and scp-like host:path)
 * spawn a child and talk over pipes; they are stateful: one stream for the
 * whole session. Stateless transports (smart HTTP, later) carry one request
 * per round: the caller writes a request to out_fd and calls
 * pw_conn_end_request, after which in_fd yields the response. Code written
 * against this interface checks `stateless` and re-sends what v2 requires. */
#ifndef PACKWIRE_TRANSPORT_H
#define PACKWIRE_TRANSPORT_H

#include "packwire/export.h"

#include "packwire/error.h"

enum pw_url_scheme {
	PW_URL_LOCAL = 1, /* a plain path */
	PW_URL_FILE,      /* file:// */
	PW_URL_SSH,       /* ssh://, git+ssh://, ssh+git:// and scp-like host:path */
	PW_URL_GIT,       /* git:// */
	PW_URL_HTTP,      /* http:// */
	PW_URL_HTTPS,     /* https:// */
	PW_URL_HELPER,    /* <helper>::<address> or an unknown <scheme>:// */
};

/* A parsed remote address; every string malloc'd (NULL when absent). */
struct pw_url {
	enum pw_url_scheme scheme;
	char *helper; /* remote helper name (PW_URL_HELPER) */
	char *user;
	char *host; /* without brackets */
	char *port;
	char *path; /* as the server should see it ("~user/x" kept) */
	char *raw;  /* the address as given */
};

/* Parse the way Git classifies remote addresses: "<helper>::addr",
 * "scheme://", scp-like "[user@]host:path" (no '/' before the ':'), else a
 * local path. PW_EINVAL with a message for malformed addresses. */
PW_API int pw_url_parse(struct pw_url *out, const char *url, struct pw_error *err);
PW_API void pw_url_free(struct pw_url *u);
/* Is this address a local repository path or file:// URL? */
PW_API int pw_url_is_local(const char *url);

/* Quote s for a POSIX shell the way Git does ('...', with ' and ! escaped),
 * appended to out. */
struct pw_buf;
PW_API int pw_sq_quote(struct pw_buf *out, const char *s);

struct pw_transport_opts {
	const char *service;  /* "git-upload-pack" (NULL) or "git-receive-pack" */
	const char *command;  /* replaces the service command (--upload-pack=...) */
	int protocol_version; /* 0, 1 or 2: what to ask the server for */
	int quiet;
};

/* A connection to a service. Only pw_transport_connect creates one (the
 * transport keeps its own state beyond these fields, so never allocate or
 * copy a struct pw_conn yourself); the fields are for reading, except that
 * the descriptors are the caller's to read from and write to. A connection
 * is used by one thread at a time. */
struct pw_conn {
	int in_fd;     /* read the server's output */
	int out_fd;    /* write the server's input; -1 after pw_conn_close_write */
	int stateless; /* one request per round (HTTP); 0 for process transports */
	enum pw_url_scheme scheme;
};

/* Connect to the service at url. The child's stderr is inherited (Git shows
 * the server's messages). PW_EUNSUPPORTED for transports not built yet,
 * PW_EIO when the command cannot be started. */
PW_API int pw_transport_connect(struct pw_conn **out, const char *url,
                                const struct pw_transport_opts *opts, struct pw_error *err);
/* Stateless transports: the request written to out_fd is complete; the
 * response can be read from in_fd. A no-op for stateful ones. */
PW_API int pw_conn_end_request(struct pw_conn *c, struct pw_error *err);
/* Close our side of the stream so the server sees end of input. */
PW_API void pw_conn_close_write(struct pw_conn *c);
/* Close both ends and reap the server process. *status (may be NULL) gets
 * its exit code (128 + signal when killed). Returns 0, or PW_EIO when
 * waiting failed. Safe to call twice. */
PW_API int pw_conn_finish(struct pw_conn *c, int *status, struct pw_error *err);
/* Finish (if not yet done) and free. NULL is fine. */
PW_API void pw_conn_free(struct pw_conn *c);

#endif
