/* The smart HTTP client's parts (http.c and http-*.c) share one connection
 * handle, struct http: the settings (http-settings.c), the credential
 * protocol and the cache of credentials and discoveries (http-cred.c),
 * GIT_TRACE_CURL (http-trace.c), WebDAV requests (http-dav.c) and the
 * request thread (http-thread.c); http.c holds curl's setup, discovery,
 * dumb GETs and the connection. */
#ifndef PW_TRANSPORT_HTTP_PRIV_H
#define PW_TRANSPORT_HTTP_PRIV_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/error.h"
#include "packwire/transport.h"
#include "transport/curl-load.h"

/* info/refs is held in memory whole: bounded (docs/limits.md). */
#define HTTP_MAX_ADV      (64u << 20)
#define HTTP_MAX_REDIRS   20
#define HTTP_GZIP_MIN     1024
#define HTTP_POST_DEFAULT (1u << 20)
#define CRED_MAX          (64u << 10)

struct cred {
	char *protocol, *host, *path, *username, *password;
};

struct settings {
	int follow; /* 0 false, 1 initial, 2 true */
	int ssl_verify;
	/* copies: a config may be reloaded (clone rewrites the repository
	 * format) while the connection lives */
	char *cainfo;
	char *proxy; /* NULL: none */
	char *noproxy;
	char *user_agent;
	long low_speed_limit, low_speed_time;
	size_t post_buffer;
	struct curl_slist *extra; /* http.extraHeader */
	char *netrc;
	struct pw_buf helpers; /* credential.helper values, NUL-separated */
	size_t nr_helpers;
	int use_http_path;
	char *cred_username;
	char redir_protocols[16];   /* what a redirect may switch to (protocol policy) */
	char *askpass;              /* GIT_ASKPASS, core.askPass, SSH_ASKPASS; NULL: none */
	char *accept_language;      /* "Accept-Language: ..." or NULL */
	char *cookie_file;          /* http.cookieFile */
	int save_cookies;           /* http.saveCookies */
	struct curl_slist *resolve; /* http.curloptResolve */
	int smart;                  /* 0: GIT_SMART_HTTP=false, be a dumb client */
	/* GIT_TRACE_CURL */
	void (*trace)(void *ctx, const char *line, size_t len);
	void *trace_ctx;
	int trace_data, trace_redact;
	void (*note)(void *ctx, int level, const char *line);
	void *note_ctx;
};

struct http {
	struct pw_conn *conn;
	CURL *curl;
	char *base;  /* the repository URL (after a discovery redirect), no trailing '/' */
	char *shown; /* base without user info, with a trailing '/', for messages */
	const char *service;
	/* the protocol version asked for (Git-Protocol on the discovery) and
	 * the one the server answered (Git-Protocol on the POSTs); v2 = (version
	 * == 2) */
	int asked, version, v2;
	struct settings set;
	struct cred cred;
	int have_cred;              /* username and password are set on the handle */
	int approved;               /* auth_approve done for them */
	struct pw_http_cache *auth; /* pw_http_env.cache */
	long authmask;              /* CURLAUTH_ANY, narrowed to what a 401 offered (as Git) */
	long seen_auth;             /* the schemes of every WWW-Authenticate seen (curl may
	                               answer a 401 itself: the last response then has none) */
	char errbuf[CURL_ERROR_SIZE];

	pthread_t tid;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int req_rd; /* thread: read end of the current request pipe */
	/* read ends of the pipes of the requests after the current one, in
	 * order (end_request queues one; the thread may still be busy with an
	 * earlier response's tail) */
	int next_req_rd[4];
	int nr_next;
	int resp_wr; /* thread: write end of the response socket */
	unsigned req_seq, resp_seq;
	int resp_rc; /* outcome of request resp_seq */
	struct pw_error resp_err;
	int quit, dead;
	struct pw_buf adv; /* the advertisement, written first */
	size_t adv_skip;
	int dumb; /* no smart answer: adv is a dumb info/refs (client/dumb.c) */
};

/* What pw_http_env.cache keeps for the connections given it: credentials
 * that worked, and the last discovery (see http.c's disc_keep). */
struct pw_http_cache {
	pthread_mutex_t mu;
	char *protocol, *host, *path, *username, *password;
	long authmask;
	/* the last discovery: asked for (url, service), got base and adv */
	char *disc_url, *disc_service, *disc_base;
	struct pw_buf disc_adv;
	size_t disc_skip;
	int disc_version, disc_dumb;
	long disc_authmask;
};

/* ---- settings and URLs (http-settings.c) -------------------------------- */

/* Copy v (NULL too) into *dst, freeing what it held: 0 or PW_ENOMEM. */
int pw_http__dup_to(char **dst, const char *v);
/* http.*, credential.* and the environment for the server of u. */
int pw_http__load_settings(struct http *h, const struct pw_url *u, const struct pw_config *cfg,
                           const struct pw_http_env *env, struct pw_error *err);
/* "scheme://[user[:pass]@]rest": h->base without the user info, and the
 * credential fields from it. */
int pw_http__split_url(struct http *h, const char *url, struct pw_error *err);
/* h->shown from h->base: 0 or PW_ENOMEM. */
int pw_http__set_shown(struct http *h);

/* ---- credentials (http-cred.c) ------------------------------------------ */

/* Git's credential_fill: helpers, then askpass, never a terminal. */
int pw_http__cred_fill(struct http *h, struct pw_error *err);
void pw_http__cred_free(struct cred *c);
/* Both NULL, or equal strings. */
int pw_http__same(const char *a, const char *b);
/* Start with the cached credentials for the server; 0 or PW_ENOMEM. */
int pw_http__auth_take(struct http *h);
/* Git's credential_approve / credential_reject, and the cache kept so. */
void pw_http__auth_approve(struct http *h);
void pw_http__auth_reject(struct http *h);

/* ---- curl (http.c) ------------------------------------------------------- */

/* The handle's common options for a request (follow: redirects allowed). */
void pw_http__setup_common(struct http *h, int follow);
/* The request's header lines, with Git-Protocol for version (post: a POST). */
struct curl_slist *pw_http__headers(struct http *h, const char *const *lines, int version,
                                    int post);
/* The WWW-Authenticate schemes of each response (CURLOPT_HEADERFUNCTION). */
size_t pw_http__header_seen(char *p, size_t sz, size_t n, void *arg);
/* Only the schemes a 401 offered from now on, as Git. */
void pw_http__narrow_auth(struct http *h);
/* After a 401: fill the credentials once when may_ask. 1: ask again. */
int pw_http__ask_once(struct http *h, long status, int may_ask, struct pw_error *err);
/* curl's reason for cc (the handle's error buffer, else curl's text). */
const char *pw_http__curl_why(struct http *h, CURLcode cc);
void pw_http__disc_clear(struct pw_http_cache *a);
/* The handle of a dumb connection, else NULL. */
struct http *pw_http__dumb_of(struct pw_conn *c);

/* ---- GIT_TRACE_CURL (http-trace.c) --------------------------------------- */

/* CURLOPT_DEBUGFUNCTION: Git's trace lines through h->set.trace. */
int pw_http__curl_trace(CURL *c, curl_infotype type, char *data, size_t size, void *arg);

/* ---- the request thread (http-thread.c) --------------------------------- */

/* The thread of a smart connection: the advertisement, then one POST per
 * request read from the request pipe, the answers into the socket. */
void *pw_http__thread_main(void *arg);

#endif
