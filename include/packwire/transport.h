/* Reaching a Git server: one interface for every transport. A connection is a
 * bidirectional byte stream (read from in_fd, write to out_fd) to a server
 * process running one service ("git-upload-pack" or "git-receive-pack").
 *
 * Process transports (local paths, file://, ssh:// and scp-like host:path)
 * spawn a child and talk over pipes; they are stateful: one stream for the
 * whole session. Stateless transports (smart HTTP, later) carry one request
 * per round: the caller writes a request to out_fd and calls
 * pw_conn_end_request, after which in_fd yields the response. Code written
 * against this interface checks `stateless` and re-sends what v2 requires.
 * Over HTTP each response to a request is followed by a response-end packet
 * ("0002") when the server speaks v2; an empty request sends nothing. */
#ifndef PACKWIRE_TRANSPORT_H
#define PACKWIRE_TRANSPORT_H

#include "packwire/export.h"

#include "packwire/error.h"

struct pw_config;

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
/* On failure *out holds nothing to free; on success free it with
 * pw_url_free (which frees the strings, not the struct). Pure: any thread. */
PW_API int pw_url_parse(struct pw_url *out, const char *url, struct pw_error *err);
PW_API void pw_url_free(struct pw_url *u);
/* Is this address a local repository path or file:// URL? */
PW_API int pw_url_is_local(const char *url);

/* Quote s for a POSIX shell the way Git does ('...', with ' and ! escaped),
 * appended to out. */
struct pw_buf;
/* (0 or PW_ENOMEM/PW_ETOOBIG from the buffer.) */
PW_API int pw_sq_quote(struct pw_buf *out, const char *s);

/* How to reach ssh:// and host:path servers, as Git's GIT_SSH_COMMAND,
 * GIT_SSH and GIT_SSH_VARIANT say (the library reads no environment: see
 * pw_options_from_env). All NULL: run "ssh", an OpenSSH. */
struct pw_ssh_opts {
	const char *command; /* a shell command ("ssh -i key"), run through sh -c */
	const char *program; /* else this program */
	const char *variant; /* "ssh", "plink", "putty", "tortoiseplink", "simple";
	                        NULL = guessed from the program's name */
};

/* What the environment says about HTTP(S) (pw_options_from_env fills one;
 * the library reads no environment itself). NULL = unset. */
struct pw_http_env {
	const char *ssl_no_verify;   /* GIT_SSL_NO_VERIFY: set = do not verify */
	const char *ssl_cainfo;      /* GIT_SSL_CAINFO */
	const char *user_agent;      /* GIT_HTTP_USER_AGENT */
	const char *low_speed_limit; /* GIT_HTTP_LOW_SPEED_LIMIT */
	const char *low_speed_time;  /* GIT_HTTP_LOW_SPEED_TIME */
	const char *terminal_prompt; /* GIT_TERMINAL_PROMPT (packwire never prompts) */
	/* curl's proxy variables: http_proxy, HTTPS_PROXY/https_proxy,
	 * ALL_PROXY/all_proxy, NO_PROXY/no_proxy */
	const char *http_proxy, *https_proxy, *all_proxy, *no_proxy;
	const char *netrc; /* $HOME/.netrc (NULL: no .netrc) */
	/* GIT_ASKPASS, SSH_ASKPASS: a program asked for a missing username or
	 * password (GIT_ASKPASS, else core.askPass, else SSH_ASKPASS), as Git */
	const char *askpass, *ssh_askpass;
	const char *smart_http; /* GIT_SMART_HTTP: false = ask as a dumb client */
	/* LANGUAGE, LC_ALL, LC_MESSAGES, LANG: the Accept-Language header */
	const char *language, *lc_all, *lc_messages, *lang;
	/* GIT_TRACE_CURL_NO_DATA, GIT_CURL_VERBOSE (headers only), GIT_TRACE_REDACT */
	const char *trace_curl_no_data, *curl_verbose, *trace_redact;
	/* Not from the environment: set by the caller. trace gets Git's
	 * GIT_TRACE_CURL lines ("=> Send header: ...", each ending in '\n',
	 * secrets redacted unless trace_redact is false), possibly from a
	 * connection's own thread; NULL = no tracing. */
	void (*trace)(void *ctx, const char *line, size_t len);
	void *trace_ctx;
	/* What git-remote-http tells on stderr (no newline): level 1 "warning:
	 * redirecting to <url>" after a redirected discovery, level 2 "POST
	 * git-upload-pack (123 bytes)" before each POST (Git prints them from
	 * verbosity 1 and 2 on); NULL = none */
	void (*note)(void *ctx, int level, const char *line);
	void *note_ctx;
	/* What git-remote-http keeps across the connections of one process,
	 * for the connections given the same cache: credentials that worked
	 * (asked once per server), and the last info/refs answer, used once by
	 * the next connection to the same URL and service instead of a second
	 * GET (a helper's "list for-push" then "push"). NULL = none. */
	struct pw_http_cache *cache;
};

/* A cache for pw_http_env.cache (any thread). */
struct pw_http_cache;
/* 0 or PW_ENOMEM. */
PW_API int pw_http_cache_new(struct pw_http_cache **out);
/* Wipes and frees; NULL is fine. */
PW_API void pw_http_cache_free(struct pw_http_cache *c);

/* Which transports may be used, as Git's protocol.allow rules say, and where
 * remote helpers are found (the CLI fills it from the environment). */
struct pw_protocol_env {
	const char *allow_protocol;     /* GIT_ALLOW_PROTOCOL: colon list, overrides config */
	const char *protocol_from_user; /* GIT_PROTOCOL_FROM_USER ("user" policy); NULL = yes */
	const char *exec_path;          /* GIT_EXEC_PATH: git-remote-<name> looked for here first;
	                                   NULL = ask `git --exec-path`, then PATH */
};

/* May the transport `name` ("file", "ssh", "git", "http", "https", "ext",
 * a helper's name) be used? 0, or PW_EUNSUPPORTED "transport '<name>' not
 * allowed". cfg (protocol.allow, protocol.<name>.allow) and env may be NULL. */
PW_API int pw_protocol_check_allowed(const char *name, const struct pw_config *cfg,
                                     const struct pw_protocol_env *env, struct pw_error *err);

struct pw_transport_opts {
	const char *service;  /* "git-upload-pack" (NULL) or "git-receive-pack" */
	const char *command;  /* replaces the service command (--upload-pack=...) */
	int protocol_version; /* 0, 1 or 2: what to ask the server for */
	int quiet;
	struct pw_ssh_opts ssh;
	/* git://: a proxy command run as "<cmd> <host> <port>" (the CLI passes
	 * GIT_PROXY_COMMAND); "" = none. NULL: core.gitProxy from the config. */
	const char *git_proxy;
	const struct pw_config *git_proxy_config; /* may be NULL */
	/* http(s)://: http.* and credential.* come from config (NULL: from
	 * git_proxy_config), environment values from http_env (may be NULL). */
	const struct pw_config *config;
	const struct pw_http_env *http_env;
	/* protocol policy and helper look-up (NULL: Git's defaults) */
	const struct pw_protocol_env *protocol;
	/* remote helpers: GIT_DIR for the helper, the remote's name (NULL: the URL) */
	const char *git_dir;
	const char *remote_name;
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
/* The connection is the caller's (pw_conn_free; *out NULL on failure) and
 * is used by one thread at a time; messages go to err. The child process
 * is the connection's: pw_conn_finish/pw_conn_free reap it, and nothing
 * else in the process should wait for it. */
PW_API int pw_transport_connect(struct pw_conn **out, const char *url,
                                const struct pw_transport_opts *opts, struct pw_error *err);
/* Stateless transports: the request written to out_fd is complete; the
 * response can be read from in_fd. A no-op for stateful ones. HTTP: out_fd
 * is a new descriptor afterwards (for the next request); returns once the
 * response's status and type are known, with Git's words when they are bad
 * ("RPC failed; HTTP 500 ..."). */
PW_API int pw_conn_end_request(struct pw_conn *c, struct pw_error *err);
/* GET an http(s):// URL into the file path (created or truncated; removed
 * again on failure), with the http.* settings and credentials of opts, as
 * a remote helper's "get" does for bundle URIs. PW_ENOTFOUND for 404/410,
 * PW_EIO for other failures. */
PW_API int pw_http_download(const char *url, const char *path, const struct pw_transport_opts *opts,
                            struct pw_error *err);
/* Close our side of the stream so the server sees end of input. */
PW_API void pw_conn_close_write(struct pw_conn *c);
/* Close both ends and reap the server process. *status (may be NULL) gets
 * its exit code (128 + signal when killed). Returns 0, or PW_EIO when
 * waiting failed. Safe to call twice. */
PW_API int pw_conn_finish(struct pw_conn *c, int *status, struct pw_error *err);
/* Finish (if not yet done) and free. NULL is fine. */
PW_API void pw_conn_free(struct pw_conn *c);

#endif
