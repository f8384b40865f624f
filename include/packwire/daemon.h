/* The git:// daemon's request handling (git-daemon): decode the one-line
 * request "git-upload-pack /path\0host=H[:port]\0[\0extra\0...]", decide
 * which repository it names and whether it may be served (base path,
 * whitelist, strict paths, ~user, interpolated paths, git-daemon-export-ok,
 * service enable/override and daemon.<service> config, access hook), then
 * serve it with upload-pack or receive-pack on the connection.
 *
 * The front (listening, forking, signals, pid file, log destination) is the
 * caller's: packwire's CLI forks one process per connection and calls
 * pw_daemon_serve_conn in the child. Nothing here reads the environment,
 * prints, or changes the working directory; log lines go to a callback.
 * A pw_daemon_opts may be shared by threads (read only); a request is one
 * connection's. */
#ifndef PACKWIRE_DAEMON_H
#define PACKWIRE_DAEMON_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"

enum pw_daemon_service {
	PW_DAEMON_UPLOAD_PACK = 0,
	PW_DAEMON_UPLOAD_ARCHIVE, /* recognized, never served (not implemented) */
	PW_DAEMON_RECEIVE_PACK,
	PW_DAEMON_NR_SERVICES
};

/* The service's name without "git-" ("upload-pack"), or NULL. */
PW_API const char *pw_daemon_service_name(enum pw_daemon_service s);
/* "upload-pack", "upload-archive", "receive-pack" (as --enable= takes them):
 * 0 and *out set, or PW_EINVAL. */
PW_API int pw_daemon_service_parse(const char *name, enum pw_daemon_service *out);

/* Longest request line accepted (Git's packet buffer). */
#define PW_DAEMON_REQUEST_MAX 65516

/* A decoded request line. Strings are malloc'd, NUL-free, NULL when absent. */
struct pw_daemon_request {
	enum pw_daemon_service service;
	char *path;     /* as the client sent it */
	char *host;     /* canonical (lower case, no '/', no leading/trailing '.') */
	char *port;     /* from host=H:port */
	char *protocol; /* extra parameters joined by ':' (GIT_PROTOCOL's value) */
	int extended;   /* anything after the path's NUL (enables --interpolated-path) */
	int version;    /* protocol version the extra parameters ask for (0..2) */
};

/*
 * Decode the payload of the request packet (the pkt-line header removed).
 * PW_EPROTO with a message ("Protocol error: '<line>'") for an unknown
 * service or a line without "git-<service> " (an empty path is a path);
 * PW_ETOOBIG past PW_DAEMON_REQUEST_MAX. Pure: no I/O (fuzzed).
 */
PW_API int pw_daemon_request_parse(struct pw_daemon_request *out, const uint8_t *data, size_t len,
                                   struct pw_error *err);
PW_API void pw_daemon_request_free(struct pw_daemon_request *r);

enum pw_daemon_log_level { PW_DAEMON_LOG_INFO = 0, PW_DAEMON_LOG_ERROR = 1 };
/* One log line (no newline). Info lines are Git's --verbose lines. */
typedef void (*pw_daemon_log_fn)(void *data, enum pw_daemon_log_level level, const char *msg);

struct pw_daemon_opts {
	const char *base_path;         /* --base-path: prefix of every request path */
	int base_path_relaxed;         /* retry without base_path when not found */
	int export_all;                /* serve without git-daemon-export-ok */
	int strict_paths;              /* exact paths only (no .git suffixes, no subdirs) */
	const char *user_path;         /* NULL: ~user refused; "" : ~user; else ~user/<user_path> */
	const char *interpolated_path; /* %H %CH %IP %P %D %% */
	const char *const *whitelist;  /* directories (NULL-terminated); NULL/empty: all */
	int informative_errors;        /* ERR says why; else Git's generic refusal */
	int enabled[PW_DAEMON_NR_SERVICES];     /* default: upload-pack only */
	int overridable[PW_DAEMON_NR_SERVICES]; /* daemon.<service> config may change it
	                                           (default: all, as Git) */
	const char *access_hook;                /* program run before serving; non-zero refuses */
	int timeout;                            /* seconds of silence during a session; 0 = none */
	int init_timeout;                       /* seconds to wait for the request; 0 = timeout */
	int confine_symlinks; /* refuse a repository whose real path leaves base_path */
	const char *agent;    /* NULL = "packwire/<version>" */
	pw_daemon_log_fn log; /* may be NULL */
	void *log_data;
};

PW_API void pw_daemon_opts_init(struct pw_daemon_opts *o);

/*
 * The repository a request may be served from. 0 with *gitdir (malloc'd,
 * absolute or as resolved) set; else a negative code with *client_msg set to
 * the text of the ERR line to send (static; the generic refusal unless
 * informative_errors) and the reason logged. Runs the access hook (Git's
 * arguments: service, path, requested host, its canonical name and address,
 * requested port). peer_ip/peer_port (may be NULL) are the connection's:
 * the hook's REMOTE_ADDR and REMOTE_PORT, as under Git's daemon.
 */
PW_API int pw_daemon_resolve(const struct pw_daemon_opts *o, const struct pw_daemon_request *req,
                             const char *peer_ip, const char *peer_port, char **gitdir,
                             const char **client_msg, struct pw_error *err);

/*
 * Serve one connection read from in_fd and written to out_fd (the same
 * socket twice, or inetd's stdin/stdout; not closed): wait up to
 * init_timeout for the request, decide, answer "ERR <why>: <path>" when
 * refused, else run the service in the repository. 0 when the service ran
 * to its end; a negative code with err set otherwise (logged as well).
 * The process should ignore SIGPIPE.
 */
PW_API int pw_daemon_serve_conn(const struct pw_daemon_opts *o, int in_fd, int out_fd,
                                const char *peer_ip, const char *peer_port, struct pw_error *err);

#endif
