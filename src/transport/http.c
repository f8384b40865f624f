/* Smart HTTP(S) client on libcurl: GET info/refs (discovery), then one POST
 * per request (stateless RPC), as Git's remote-curl does.
 *
 * The bridge to the fd-based struct pw_conn: a thread per connection owns
 * the curl handle. The caller writes a request into a pipe (out_fd; a new
 * pipe per request, closed by pw_conn_end_request so the thread sees its
 * end) and reads every response from one socket (in_fd). Requests up to
 * http.postBuffer are buffered (gzip'd above 1 KiB for upload-pack) and sent
 * with a length; larger ones stream with chunked transfer. Responses stream
 * as they arrive, so a clone holds no pack in memory here. */
#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/pkt.h"
#include "packwire/transport.h"
#include "packwire/version.h"
#include "transport/curl-load.h"
#include "transport/transport-priv.h"
#include "util/spawn.h"

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

/* ---- settings ------------------------------------------------------------ */

static const char *cfg_str(const struct pw_config *cfg, const char *key)
{
	const char *v = NULL;

	if (!cfg || pw_config_get_string(cfg, key, &v, NULL))
		return NULL;
	return v;
}

static int add_header(const struct pw_config_entry *e, void *data)
{
	struct http *h = data;
	struct curl_slist *n;

	if (!e->value || !*e->value) { /* an empty value resets the list, as in Git */
		curl_slist_free_all(h->set.extra);
		h->set.extra = NULL;
		return 0;
	}
	if (!(n = curl_slist_append(h->set.extra, e->value)))
		return PW_ENOMEM;
	h->set.extra = n;
	return 0;
}

static int add_helper(const struct pw_config_entry *e, void *data)
{
	struct http *h = data;

	if (!e->value || !*e->value) {
		pw_buf_reset(&h->set.helpers);
		h->set.nr_helpers = 0;
		return 0;
	}
	if (pw_buf_add(&h->set.helpers, e->value, strlen(e->value) + 1))
		return PW_ENOMEM;
	h->set.nr_helpers++;
	return 0;
}

static int add_resolve(const struct pw_config_entry *e, void *data)
{
	struct http *h = data;
	struct curl_slist *n;

	if (!e->value || !*e->value) { /* an empty value resets the list, as in Git */
		curl_slist_free_all(h->set.resolve);
		h->set.resolve = NULL;
		return 0;
	}
	if (!(n = curl_slist_append(h->set.resolve, e->value)))
		return PW_ENOMEM;
	h->set.resolve = n;
	return 0;
}

static int tag_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

/* Git's Accept-Language: the tags of LANGUAGE (else of the message locale
 * unless it is C or POSIX), '_' made '-', codesets and modifiers dropped,
 * then "*", with falling q-values; at most about 4000 bytes. */
static int accept_language(struct settings *s, const struct pw_http_env *env)
{
	const char *src = NULL, *p;
	struct pw_buf b = PW_BUF_INIT;
	size_t nr = 0, i, places, max_q, last;
	char fmt[16];

	if (env && env->language && *env->language)
		src = env->language;
	else if (env)
		src = env->lc_all && *env->lc_all             ? env->lc_all
		      : env->lc_messages && *env->lc_messages ? env->lc_messages
		                                              : env->lang;
	if (!src || !*src ||
	    (src != (env ? env->language : NULL) && (!strcmp(src, "C") || !strcmp(src, "POSIX"))))
		return 0;
	/* count the tags */
	for (p = src; *p;) {
		size_t n = 0;

		while (p[n] && tag_char(p[n]))
			n++;
		if (n)
			nr++;
		p += n;
		while (*p && *p != ':')
			p++;
		if (*p)
			p++;
		if (nr >= 999)
			break;
	}
	if (!nr)
		return 0;
	nr++; /* "*" */
	for (max_q = 1, places = 0; max_q < nr && places <= 3; places++, max_q *= 10)
		;
	snprintf(fmt, sizeof(fmt), ";q=0.%%0%zuzu", places);
	if (pw_buf_adds(&b, "Accept-Language: "))
		goto oom;
	last = b.len;
	for (i = 0, p = src; i < nr; i++) {
		if (i && pw_buf_adds(&b, ", "))
			goto oom;
		if (i + 1 == nr) {
			if (pw_buf_addch(&b, '*'))
				goto oom;
		} else {
			for (;;) { /* the next non-empty tag */
				size_t n = 0;

				while (p[n] && tag_char(p[n]))
					n++;
				for (size_t k = 0; k < n; k++)
					if (pw_buf_addch(&b, p[k] == '_' ? '-' : p[k]))
						goto oom;
				p += n;
				while (*p && *p != ':')
					p++;
				if (*p)
					p++;
				if (n)
					break;
			}
		}
		if (i && pw_buf_addf(&b, fmt, max_q - i))
			goto oom;
		if (b.len > 4000) {
			pw_buf_setlen(&b, last);
			break;
		}
		last = b.len;
	}
	s->accept_language = pw_buf_detach(&b, NULL);
	return 0;
oom:
	pw_buf_free(&b);
	return PW_ENOMEM;
}

static int dup_to(char **dst, const char *v);

/* Does the credential.<url> pattern u name the server (and path) of h? */
static int cred_url_match(const struct http *h, const char *u, size_t n)
{
	const char *sep = memmem(u, n, "://", 3), *host, *slash, *at;
	size_t pl, hl;

	if (!sep || !h->cred.protocol || !h->cred.host)
		return 0;
	if ((size_t)(sep - u) != strlen(h->cred.protocol) ||
	    strncmp(u, h->cred.protocol, (size_t)(sep - u)))
		return 0;
	host = sep + 3;
	slash = memchr(host, '/', (size_t)(u + n - host));
	hl = (size_t)((slash ? slash : u + n) - host);
	if ((at = memchr(host, '@', hl))) { /* user@host: the host part */
		hl -= (size_t)(at + 1 - host);
		host = at + 1;
	}
	if (hl != strlen(h->cred.host) || strncmp(host, h->cred.host, hl))
		return 0;
	if (!slash)
		return 1;
	pl = (size_t)(u + n - slash - 1);
	while (pl && slash[pl] == '/')
		pl--;
	if (!pl)
		return 1;
	return h->cred.path && !strncmp(slash + 1, h->cred.path, pl) &&
	       (h->cred.path[pl] == 0 || h->cred.path[pl] == '/');
}

static int cred_url_username(const struct pw_config_entry *e, void *data)
{
	struct http *h = data;
	size_t kl = strlen(e->key);

	if (kl < 11 + 9 + 1 || strncmp(e->key, "credential.", 11) ||
	    strcmp(e->key + kl - 9, ".username") || !e->value)
		return 0;
	if (!cred_url_match(h, e->key + 11, kl - 11 - 9))
		return 0;
	return dup_to(&h->set.cred_username, e->value);
}

static long num(const char *v, long dflt)
{
	int64_t n;

	if (!v || pw_config_parse_int64(v, &n) || n < 0 || n > 0x7fffffff)
		return dflt;
	return (long)n;
}

static int dup_to(char **dst, const char *v)
{
	free(*dst);
	*dst = NULL;
	return v && !(*dst = strdup(v)) ? PW_ENOMEM : 0;
}

static int load_settings(struct http *h, const struct pw_url *u, const struct pw_config *cfg,
                         const struct pw_http_env *env, struct pw_error *err)
{
	struct settings *s = &h->set;
	const char *v, *proxy, *ua;
	int b, rc = 0;
	int64_t n;

	s->follow = 1;
	if ((v = cfg_str(cfg, "http.followredirects"))) {
		if (!strcmp(v, "initial"))
			s->follow = 1;
		else if (!pw_config_parse_bool(v, &b))
			s->follow = b ? 2 : 0;
	}
	s->ssl_verify = 1;
	if (cfg && !pw_config_get_bool(cfg, "http.sslverify", &b, NULL))
		s->ssl_verify = b;
	if (env && env->ssl_no_verify)
		s->ssl_verify = 0;
	v = cfg_str(cfg, "http.sslcainfo");
	if (env && env->ssl_cainfo)
		v = env->ssl_cainfo;
	rc |= dup_to(&s->cainfo, v);
	proxy = cfg_str(cfg, "http.proxy");
	if (!proxy && env) {
		proxy = u->scheme == PW_URL_HTTPS ? env->https_proxy : env->http_proxy;
		if (!proxy)
			proxy = env->all_proxy;
	}
	rc |= dup_to(&s->proxy, proxy && *proxy ? proxy : NULL);
	rc |= dup_to(&s->noproxy, env ? env->no_proxy : NULL);
	if ((v = env && env->askpass && *env->askpass ? env->askpass
	                                              : cfg_str(cfg, "core.askpass")) ||
	    (v = env && env->ssh_askpass && *env->ssh_askpass ? env->ssh_askpass : NULL))
		if (*v && (rc = dup_to(&s->askpass, v)))
			return pw_error_set(err, rc, "out of memory");
	ua = cfg_str(cfg, "http.useragent");
	if (env && env->user_agent)
		ua = env->user_agent;
	rc |= dup_to(&s->user_agent, ua ? ua : "packwire/" PW_VERSION);
	s->low_speed_limit = num(cfg_str(cfg, "http.lowspeedlimit"), 0);
	s->low_speed_time = num(cfg_str(cfg, "http.lowspeedtime"), 0);
	if (env && env->low_speed_limit)
		s->low_speed_limit = num(env->low_speed_limit, 0);
	if (env && env->low_speed_time)
		s->low_speed_time = num(env->low_speed_time, 0);
	s->post_buffer = HTTP_POST_DEFAULT;
	if (cfg && !pw_config_get_int64(cfg, "http.postbuffer", &n, NULL) && n > 0)
		s->post_buffer = (uint64_t)n < PW_PKT_MAX ? PW_PKT_MAX : (size_t)n;
	if (s->post_buffer > ((size_t)1 << 30))
		s->post_buffer = (size_t)1 << 30;
	rc |= dup_to(&s->netrc, env ? env->netrc : NULL);
	rc |= accept_language(s, env);
	rc |= dup_to(&s->cookie_file, cfg_str(cfg, "http.cookiefile"));
	if (cfg && !pw_config_get_bool(cfg, "http.savecookies", &b, NULL))
		s->save_cookies = b;
	s->smart = 1;
	if (env && env->smart_http && !pw_config_parse_bool(env->smart_http, &b))
		s->smart = b;
	if (env) {
		s->note = env->note;
		s->note_ctx = env->note_ctx;
	}
	if (env && env->trace) {
		s->trace = env->trace;
		s->trace_ctx = env->trace_ctx;
		s->trace_data = !(env->trace_curl_no_data || env->curl_verbose);
		s->trace_redact = 1;
		if (env->trace_redact && !pw_config_parse_bool(env->trace_redact, &b))
			s->trace_redact = b;
	}
	if (rc)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (cfg) {
		rc = pw_config_get_all(cfg, "http.extraheader", add_header, h);
		if (rc == 0 || rc == PW_ENOTFOUND)
			rc = pw_config_get_all(cfg, "credential.helper", add_helper, h);
		if (rc == 0 || rc == PW_ENOTFOUND)
			rc = pw_config_get_all(cfg, "http.curloptresolve", add_resolve, h);
		if (rc && rc != PW_ENOTFOUND)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		if (!pw_config_get_bool(cfg, "credential.usehttppath", &b, NULL))
			s->use_http_path = b;
		if (dup_to(&s->cred_username, cfg_str(cfg, "credential.username")))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		/* credential.<url>.username for this server wins (Git's matching of
		 * the protocol, host and, when given, path) */
		if (pw_config_foreach(cfg, cred_url_username, h) == PW_ENOMEM)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- URLs ------------------------------------------------------------------ */

static char *url_decode(const char *s)
{
	size_t n = strlen(s), i, k = 0;
	char *o = malloc(n + 1);

	if (!o)
		return NULL;
	for (i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && pw_hexval(s[i + 1]) >= 0 &&
		    pw_hexval(s[i + 2]) >= 0) {
			o[k++] = (char)(pw_hexval(s[i + 1]) * 16 + pw_hexval(s[i + 2]));
			i += 2;
		} else {
			o[k++] = s[i];
		}
	}
	o[k] = 0;
	return o;
}

/* "scheme://[user[:pass]@]rest" -> base without user info, and the
 * credential fields from it. */
static int split_url(struct http *h, const char *url, struct pw_error *err)
{
	const char *p = strstr(url, "://"), *auth_end, *host, *slash;
	struct pw_buf b = PW_BUF_INIT;
	size_t len;

	if (!p)
		return pw_error_set(err, PW_EINVAL, "invalid URL '%s'", url);
	host = p + 3;
	slash = host + strcspn(host, "/?#");
	auth_end = memchr(host, '@', (size_t)(slash - host));
	/* the last '@' before the path ends the user info */
	if (auth_end) {
		const char *q;

		for (q = auth_end; q < slash; q++)
			if (*q == '@')
				auth_end = q;
	}
	if (pw_buf_add(&b, url, (size_t)(host - url)))
		goto oom;
	if (auth_end) {
		const char *colon = memchr(host, ':', (size_t)(auth_end - host));
		char *tmp;

		tmp = strndup(host, (size_t)((colon ? colon : auth_end) - host));
		if (!tmp || !(h->cred.username = url_decode(tmp))) {
			free(tmp);
			goto oom;
		}
		free(tmp);
		if (colon) {
			tmp = strndup(colon + 1, (size_t)(auth_end - colon - 1));
			if (!tmp || !(h->cred.password = url_decode(tmp))) {
				free(tmp);
				goto oom;
			}
			free(tmp);
		}
		host = auth_end + 1;
	}
	if (pw_buf_adds(&b, host))
		goto oom;
	len = b.len;
	while (len && b.data[len - 1] == '/')
		len--;
	pw_buf_setlen(&b, len);
	h->base = pw_buf_detach(&b, NULL);
	if (!(h->cred.protocol = strndup(url, (size_t)(p - url))) ||
	    !(h->cred.host = strndup(host, (size_t)(host + strcspn(host, "/?#") - host))))
		goto oom;
	slash = host + strcspn(host, "/?#");
	if (*slash == '/' && !(h->cred.path = strdup(slash + 1)))
		goto oom;
	return 0;
oom:
	pw_buf_free(&b);
	return pw_error_set(err, PW_ENOMEM, "out of memory");
}

static int set_shown(struct http *h)
{
	size_t n = strlen(h->base);

	free(h->shown);
	if (!(h->shown = malloc(n + 2)))
		return PW_ENOMEM;
	memcpy(h->shown, h->base, n);
	h->shown[n] = '/';
	h->shown[n + 1] = 0;
	return 0;
}

/* ---- the credential protocol ------------------------------------------------ */

static int cred_line(struct pw_buf *b, const char *k, const char *v)
{
	if (!v)
		return 0;
	if (strchr(v, '\n'))
		return PW_EINVAL;
	return pw_buf_addf(b, "%s=%s\n", k, v);
}

/* Run one helper as Git does: "!cmd" through the shell, an absolute path,
 * else "git credential-<name>", with the action appended. */
static int run_helper(struct http *h, const char *helper, const char *action, int want_reply)
{
	struct pw_buf cmd = PW_BUF_INIT, in = PW_BUF_INIT, out = PW_BUF_INIT;
	int to[2] = {-1, -1}, rc = 0;
	struct pw_spawn_fd map[1];
	struct pw_spawn sp;
	const char *argv[4];

	if (helper[0] == '!')
		rc = pw_buf_adds(&cmd, helper + 1);
	else if (helper[0] == '/')
		rc = pw_buf_adds(&cmd, helper);
	else
		rc = pw_buf_addf(&cmd, "git credential-%s", helper);
	if (!rc)
		rc = pw_buf_addf(&cmd, " %s", action);
	if (!rc)
		rc = cred_line(&in, "protocol", h->cred.protocol);
	if (!rc)
		rc = cred_line(&in, "host", h->cred.host);
	if (!rc && h->set.use_http_path)
		rc = cred_line(&in, "path", h->cred.path);
	if (!rc)
		rc = cred_line(&in, "username", h->cred.username);
	if (!rc)
		rc = cred_line(&in, "password", h->cred.password);
	if (rc)
		goto out;
	/* stdin is a socket so that a helper which does not read it cannot
	 * raise SIGPIPE here (send with MSG_NOSIGNAL) */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to)) {
		rc = PW_EIO;
		goto out;
	}
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = cmd.data;
	argv[3] = NULL;
	map[0] = (struct pw_spawn_fd){0, to[0]};
	memset(&sp, 0, sizeof(sp));
	sp.argv = argv;
	sp.flags = PW_SPAWN_PIPE_OUT;
	sp.fds = map;
	sp.nr_fds = 1;
	rc = pw_spawn_start(&sp, NULL);
	close(to[0]);
	to[0] = -1;
	if (rc) {
		rc = rc == PW_ENOMEM ? rc : PW_EIO;
		goto out;
	}
	{
		size_t off = 0;

		while (off < in.len) {
			ssize_t w = send(to[1], in.data + off, in.len - off, MSG_NOSIGNAL);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
	}
	close(to[1]);
	to[1] = -1;
	for (;;) {
		char buf[4096];
		ssize_t r = read(sp.out_fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out.len + (size_t)r > CRED_MAX)
			continue; /* drain, keep what fits */
		if (pw_buf_add(&out, buf, (size_t)r))
			break;
	}
	close(sp.out_fd);
	pw_spawn_wait(sp.pid, NULL, NULL, NULL);
	if (want_reply) {
		char *line = out.data, *nl;

		while (*line && (nl = strchr(line, '\n'))) {
			char *eq;

			*nl = 0;
			if (!*line)
				break;
			if ((eq = strchr(line, '='))) {
				char **dst = NULL;

				*eq = 0;
				if (!strcmp(line, "username"))
					dst = &h->cred.username;
				else if (!strcmp(line, "password"))
					dst = &h->cred.password;
				else if (!strcmp(line, "quit") && strcmp(eq + 1, "0") &&
				         strcmp(eq + 1, "false"))
					rc = 1;
				if (dst) {
					free(*dst);
					if (!(*dst = strdup(eq + 1))) {
						rc = PW_ENOMEM;
						break;
					}
				}
			}
			line = nl + 1;
		}
	}
out:
	if (to[0] >= 0)
		close(to[0]);
	if (to[1] >= 0)
		close(to[1]);
	pw_buf_free(&cmd);
	pw_buf_free(&in);
	pw_buf_free(&out);
	return rc;
}

static void cred_each(struct http *h, const char *action)
{
	size_t off = 0, i;

	for (i = 0; i < h->set.nr_helpers; i++) {
		const char *helper = h->set.helpers.data + off;

		off += strlen(helper) + 1;
		if (run_helper(h, helper, action, 0) < 0)
			break;
	}
}

static int askpass(struct http *h, const char *what, char **out);

/* Git's credential_fill: helpers in order until a username and a password
 * are known (or one says quit). No terminal prompt: packwire never asks. */
static int cred_fill(struct http *h, struct pw_error *err)
{
	size_t off = 0, i;

	if (!h->cred.username && h->set.cred_username &&
	    !(h->cred.username = strdup(h->set.cred_username)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (i = 0; i < h->set.nr_helpers; i++) {
		const char *helper = h->set.helpers.data + off;
		int rc;

		off += strlen(helper) + 1;
		if (h->cred.username && h->cred.password)
			break;
		rc = run_helper(h, helper, "get", 1);
		if (rc == PW_ENOMEM)
			return pw_error_set(err, rc, "out of memory");
		if (rc == 1)
			return pw_error_set(err, PW_EIO, "credential helper '%s' told us to quit",
			                    helper);
	}
	if (h->set.askpass && (!h->cred.username || !h->cred.password)) {
		int rc = 0;

		if (!h->cred.username)
			rc = askpass(h, "Username", &h->cred.username);
		if (!rc && !h->cred.password)
			rc = askpass(h, "Password", &h->cred.password);
		if (rc == PW_ENOMEM)
			return pw_error_set(err, rc, "out of memory");
		if (rc)
			return pw_error_set(err, PW_EIO,
			                    "could not read %s for '%s://%s': askpass failed",
			                    h->cred.username ? "Password" : "Username",
			                    h->cred.protocol, h->cred.host);
	}
	if (!h->cred.username || !h->cred.password) {
		char *p = strstr(h->shown, "://");
		size_t hl = p ? (size_t)(p + 3 - h->shown) + strcspn(p + 3, "/") : strlen(h->shown);

		return pw_error_set(err, PW_EIO,
		                    "could not read %s for '%.*s': terminal prompts disabled",
		                    h->cred.username ? "Password" : "Username", (int)hl, h->shown);
	}
	return 0;
}

struct answer {
	struct pw_buf b;
	int oom;
};

static void keep_answer(void *ctx, const char *data, size_t len)
{
	struct answer *a = ctx;

	if (a->b.len < CRED_MAX && pw_buf_add(&a->b, data, len))
		a->oom = 1;
}

/* Ask the askpass program for what ("Username", "Password"), as Git's
 * credential prompt words it; its first line of output is the answer. */
static int askpass(struct http *h, const char *what, char **out)
{
	struct pw_buf prompt = PW_BUF_INIT;
	struct answer ans = {PW_BUF_INIT, 0};
	struct pw_spawn_io io = {NULL, 0, keep_answer, NULL, &ans};
	struct pw_spawn sp;
	const char *argv[3];
	int rc, st;

	if (pw_buf_addf(&prompt, "%s for '%s://%s%s%s%s%s': ", what, h->cred.protocol,
	                h->cred.username ? h->cred.username : "", h->cred.username ? "@" : "",
	                h->cred.host, h->set.use_http_path && h->cred.path ? "/" : "",
	                h->set.use_http_path && h->cred.path ? h->cred.path : ""))
		return PW_ENOMEM;
	argv[0] = h->set.askpass;
	argv[1] = prompt.data;
	argv[2] = NULL;
	memset(&sp, 0, sizeof(sp));
	sp.argv = argv;
	sp.flags = PW_SPAWN_PATH;
	rc = pw_spawn_run(&sp, &io, &st, NULL);
	pw_buf_free(&prompt);
	if (!rc && ans.oom)
		rc = PW_ENOMEM;
	else if (rc || st)
		rc = rc == PW_ENOMEM ? rc : PW_EIO;
	else if (!(*out = strndup(ans.b.data, strcspn(ans.b.data, "\r\n"))))
		rc = PW_ENOMEM;
	pw_buf_free(&ans.b);
	return rc;
}

/* ---- credentials kept across connections (pw_http_env.auth) ----------------- */

static void cred_free(struct cred *c);
static void disc_clear(struct pw_http_cache *a);

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

int pw_http_cache_new(struct pw_http_cache **out)
{
	if (!(*out = calloc(1, sizeof(**out))))
		return PW_ENOMEM;
	pthread_mutex_init(&(*out)->mu, NULL);
	return 0;
}

static void auth_clear(struct pw_http_cache *a)
{
	struct cred c = {a->protocol, a->host, a->path, a->username, a->password};

	cred_free(&c);
	a->protocol = a->host = a->path = a->username = a->password = NULL;
}

void pw_http_cache_free(struct pw_http_cache *a)
{
	if (!a)
		return;
	auth_clear(a);
	disc_clear(a);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

static void disc_clear(struct pw_http_cache *a)
{
	free(a->disc_url);
	free(a->disc_service);
	free(a->disc_base);
	a->disc_url = a->disc_service = a->disc_base = NULL;
	pw_buf_free(&a->disc_adv);
}

/* Keep what discover() found for the next connection to url (as given,
 * before any redirect). */
static void disc_keep(struct http *h, const char *url)
{
	struct pw_http_cache *a = h->auth;

	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	disc_clear(a);
	if (dup_to(&a->disc_url, url) || dup_to(&a->disc_service, h->service) ||
	    dup_to(&a->disc_base, h->base) || pw_buf_add(&a->disc_adv, h->adv.data, h->adv.len))
		disc_clear(a);
	a->disc_skip = h->adv_skip;
	a->disc_authmask = h->authmask;
	a->disc_version = h->version;
	a->disc_dumb = h->dumb;
	pthread_mutex_unlock(&a->mu);
}

/* 1 when the last discovery was of url and this service (and v2 was asked
 * for or not alike): h takes it, and the cache forgets it. */
static int disc_take(struct http *h, const char *url)
{
	struct pw_http_cache *a = h->auth;
	int took = 0;

	if (!a)
		return 0;
	pthread_mutex_lock(&a->mu);
	if (a->disc_url && !strcmp(a->disc_url, url) && !strcmp(a->disc_service, h->service) &&
	    (a->disc_dumb || a->disc_version != 2 || h->asked == 2)) {
		pw_buf_free(&h->adv);
		h->adv = a->disc_adv;
		pw_buf_init(&a->disc_adv, 0);
		free(h->base);
		h->base = a->disc_base;
		a->disc_base = NULL;
		h->adv_skip = a->disc_skip;
		h->authmask &= a->disc_authmask;
		h->version = a->disc_version;
		h->v2 = h->version == 2;
		h->dumb = a->disc_dumb;
		took = 1;
	}
	disc_clear(a);
	pthread_mutex_unlock(&a->mu);
	return took;
}

static int same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Is what a holds for the server (and path, with useHttpPath) of h? */
static int auth_for(const struct pw_http_cache *a, const struct http *h)
{
	return a->username && a->password && same(a->protocol, h->cred.protocol) &&
	       same(a->host, h->cred.host) &&
	       (!h->set.use_http_path || same(a->path, h->cred.path));
}

/* A new connection starts with the credentials that worked before, unless
 * its URL names another user or has a password of its own. */
static int auth_take(struct http *h)
{
	struct pw_http_cache *a = h->auth;
	int rc = 0;

	if (!a || h->cred.password)
		return 0;
	pthread_mutex_lock(&a->mu);
	if (auth_for(a, h) && (!h->cred.username || !strcmp(h->cred.username, a->username))) {
		free(h->cred.username);
		if (!(h->cred.username = strdup(a->username)) ||
		    !(h->cred.password = strdup(a->password)))
			rc = PW_ENOMEM;
		h->authmask = a->authmask;
		h->have_cred = 1;
	}
	pthread_mutex_unlock(&a->mu);
	return rc;
}

/* Credentials that just worked: Git's credential_approve, and kept. */
static void auth_approve(struct http *h)
{
	struct pw_http_cache *a = h->auth;

	if (!h->cred.username || !h->cred.password)
		return;
	cred_each(h, "store");
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	if (!auth_for(a, h) || strcmp(a->username, h->cred.username) ||
	    strcmp(a->password, h->cred.password)) {
		auth_clear(a);
		if (dup_to(&a->protocol, h->cred.protocol) || dup_to(&a->host, h->cred.host) ||
		    dup_to(&a->path, h->cred.path) || dup_to(&a->username, h->cred.username) ||
		    dup_to(&a->password, h->cred.password))
			auth_clear(a);
	}
	a->authmask = h->authmask;
	pthread_mutex_unlock(&a->mu);
}

/* Credentials the server refused: Git's credential_reject, and forgotten. */
static void auth_reject(struct http *h)
{
	struct pw_http_cache *a = h->auth;

	if (!h->cred.username || !h->cred.password)
		return;
	cred_each(h, "erase");
	if (!a)
		return;
	pthread_mutex_lock(&a->mu);
	if (auth_for(a, h) && !strcmp(a->username, h->cred.username))
		auth_clear(a);
	pthread_mutex_unlock(&a->mu);
}

/* ---- GIT_TRACE_CURL ---------------------------------------------------------- */

static void trace_line(const struct http *h, struct pw_buf *b)
{
	while (b->len && (b->data[b->len - 1] == ' ' || b->data[b->len - 1] == '\t' ||
	                  b->data[b->len - 1] == '\r' || b->data[b->len - 1] == '\n'))
		b->len--;
	if (pw_buf_addch(b, '\n'))
		return;
	h->set.trace(h->set.trace_ctx, b->data, b->len);
}

static int iprefix(const char *s, size_t n, const char *p, size_t *skip)
{
	size_t k = strlen(p);

	if (n < k || strncasecmp(s, p, k))
		return 0;
	*skip = k;
	return 1;
}

/* One header line (no newline), Authorization and Cookie values hidden as
 * Git hides them. */
static void trace_header_line(const struct http *h, const char *text, const char *l, size_t n,
                              int redact)
{
	struct pw_buf b = PW_BUF_INIT;
	size_t k;

	if (pw_buf_addf(&b, "%s: ", text))
		goto out;
	if (redact && h->set.trace_redact &&
	    (iprefix(l, n, "Authorization:", &k) || iprefix(l, n, "Proxy-Authorization:", &k))) {
		while (k < n && (l[k] == ' ' || l[k] == '\t'))
			k++;
		while (k < n && l[k] != ' ' && l[k] != '\t' && l[k] != '\r')
			k++; /* the scheme may be shown */
		if (pw_buf_add(&b, l, k) || pw_buf_adds(&b, " <redacted>"))
			goto out;
	} else if (redact && h->set.trace_redact && iprefix(l, n, "Cookie:", &k)) {
		while (k < n && (l[k] == ' ' || l[k] == '\t'))
			k++;
		if (pw_buf_add(&b, l, k))
			goto out;
		while (k < n && l[k] != '\r') {
			size_t end = k, eq;

			while (end < n && l[end] != '\r' &&
			       !(l[end] == ';' && end + 1 < n && l[end + 1] == ' '))
				end++;
			for (eq = k; eq < end && l[eq] != '='; eq++)
				;
			if (pw_buf_add(&b, l + k, eq - k) || pw_buf_adds(&b, "=<redacted>"))
				goto out;
			if (end < n && l[end] == ';') {
				if (pw_buf_adds(&b, "; "))
					goto out;
				k = end + 2;
			} else {
				break;
			}
		}
	} else if (pw_buf_add(&b, l, n)) {
		goto out;
	}
	trace_line(h, &b);
out:
	pw_buf_free(&b);
}

static int curl_trace(CURL *c, curl_infotype type, char *data, size_t size, void *arg)
{
	struct http *h = arg;
	const char *text;
	struct pw_buf b = PW_BUF_INIT;
	int header = 0, redact = 0;
	size_t i, w;

	(void)c;
	switch (type) {
	case CURLINFO_TEXT:
		if (!pw_buf_adds(&b, "== Info: ") && !pw_buf_add(&b, data, size))
			trace_line(h, &b);
		pw_buf_free(&b);
		return 0;
	case CURLINFO_HEADER_OUT:
		text = "=> Send header", header = redact = 1;
		break;
	case CURLINFO_HEADER_IN:
		text = "<= Recv header", header = 1;
		break;
	case CURLINFO_DATA_OUT:
		text = "=> Send data";
		break;
	case CURLINFO_DATA_IN:
		text = "<= Recv data";
		break;
	case CURLINFO_SSL_DATA_OUT:
		text = "=> Send SSL data";
		break;
	case CURLINFO_SSL_DATA_IN:
		text = "<= Recv SSL data";
		break;
	default:
		return 0;
	}
	if (!header && !h->set.trace_data)
		return 0;
	if (pw_buf_addf(&b, "%s, %10.10ld bytes (0x%8.8lx)\n", text, (long)size,
	                (unsigned long)size))
		goto out;
	h->set.trace(h->set.trace_ctx, b.data, b.len);
	if (header) {
		for (i = 0; i < size;) {
			const char *nl = memchr(data + i, '\n', size - i);
			size_t n = nl ? (size_t)(nl - (data + i)) + 1 : size - i;

			trace_header_line(h, text, data + i, n, redact);
			i += n;
		}
		goto out;
	}
	for (i = 0; i < size; i += 60) {
		pw_buf_reset(&b);
		if (pw_buf_addf(&b, "%s: ", text))
			goto out;
		for (w = 0; w < 60 && i + w < size; w++) {
			unsigned char ch = (unsigned char)data[i + w];

			if (pw_buf_addch(&b, ch >= 0x20 && ch < 0x80 ? (char)ch : '.'))
				goto out;
		}
		if (pw_buf_addch(&b, '\n'))
			goto out;
		h->set.trace(h->set.trace_ctx, b.data, b.len);
	}
out:
	pw_buf_free(&b);
	return 0;
}

/* ---- curl ------------------------------------------------------------------- */

static int xfer_abort(void *data, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct http *h = data;
	int q;

	(void)a, (void)b, (void)c, (void)d;
	pthread_mutex_lock(&h->mu);
	q = h->quit;
	pthread_mutex_unlock(&h->mu);
	return q;
}

/* Every response header goes by: the WWW-Authenticate schemes are noted. */
static size_t header_seen(char *p, size_t sz, size_t n, void *arg)
{
	struct http *h = arg;
	size_t len = sz * n, k = 17;
	static const struct {
		const char *name;
		long bit;
	} schemes[] = {{"Basic", CURLAUTH_BASIC},
	               {"Digest", CURLAUTH_DIGEST},
	               {"Negotiate", CURLAUTH_NEGOTIATE},
	               {"NTLM", CURLAUTH_NTLM}};

	if (len > k && !strncasecmp(p, "WWW-Authenticate:", k)) {
		while (k < len && p[k] == ' ')
			k++;
		for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
			size_t sl = strlen(schemes[i].name);

			if (len - k >= sl && !strncasecmp(p + k, schemes[i].name, sl))
				h->seen_auth |= schemes[i].bit;
		}
	}
	return len;
}

static void setup_common(struct http *h, int follow)
{
	CURL *c = h->curl;

	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(c, CURLOPT_USERAGENT, h->set.user_agent);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	if (h->set.redir_protocols[0])
		curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, h->set.redir_protocols);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, follow && h->set.redir_protocols[0] ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, (long)HTTP_MAX_REDIRS);
	curl_easy_setopt(c, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, h->set.ssl_verify ? 1L : 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, h->set.ssl_verify ? 2L : 0L);
	if (h->set.cainfo)
		curl_easy_setopt(c, CURLOPT_CAINFO, h->set.cainfo);
	/* "" turns off curl's own reading of the proxy variables: the library
	 * reads no environment, pw_options_from_env passed them */
	curl_easy_setopt(c, CURLOPT_PROXY, h->set.proxy ? h->set.proxy : "");
	if (h->set.noproxy)
		curl_easy_setopt(c, CURLOPT_NOPROXY, h->set.noproxy);
	if (h->set.low_speed_limit > 0 && h->set.low_speed_time > 0) {
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, h->set.low_speed_limit);
		curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, h->set.low_speed_time);
	}
	curl_easy_setopt(c, CURLOPT_HTTPAUTH, h->authmask);
	if (h->set.netrc) {
		curl_easy_setopt(c, CURLOPT_NETRC, (long)CURL_NETRC_OPTIONAL);
		curl_easy_setopt(c, CURLOPT_NETRC_FILE, h->set.netrc);
	}
	if (h->cred.username) {
		curl_easy_setopt(c, CURLOPT_USERNAME, h->cred.username);
		curl_easy_setopt(c, CURLOPT_PASSWORD, h->cred.password ? h->cred.password : "");
	}
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_seen);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, h);
	if (h->set.cookie_file) {
		curl_easy_setopt(c, CURLOPT_COOKIEFILE, h->set.cookie_file);
		if (h->set.save_cookies)
			curl_easy_setopt(c, CURLOPT_COOKIEJAR, h->set.cookie_file);
	}
	if (h->set.resolve)
		curl_easy_setopt(c, CURLOPT_RESOLVE, h->set.resolve);
	if (h->set.trace) {
		curl_easy_setopt(c, CURLOPT_VERBOSE, 1L);
		curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, curl_trace);
		curl_easy_setopt(c, CURLOPT_DEBUGDATA, h);
	}
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, xfer_abort);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, h);
	h->errbuf[0] = 0;
}

/* lines (Accept-Language before them for a GET, after them for a POST, as
 * Git orders them), Git-Protocol when v1 or v2 is asked (discovery) or
 * spoken (POSTs), and http.extraHeader */
static struct curl_slist *headers(struct http *h, const char *const *lines, int version, int post)
{
	struct curl_slist *l = NULL, *n, *e;

	if (!post && h->set.accept_language) {
		if (!(l = curl_slist_append(NULL, h->set.accept_language)))
			return NULL;
	}
	for (; *lines; lines++) {
		if (!(n = curl_slist_append(l, *lines)))
			goto fail;
		l = n;
	}
	if (post && h->set.accept_language) {
		if (!(n = curl_slist_append(l, h->set.accept_language)))
			goto fail;
		l = n;
	}
	if (version == 1 || version == 2) {
		if (!(n = curl_slist_append(l, version == 1 ? "Git-Protocol: version=1"
		                                            : "Git-Protocol: version=2")))
			goto fail;
		l = n;
	}
	for (e = h->set.extra; e; e = e->next) {
		if (!(n = curl_slist_append(l, e->data)))
			goto fail;
		l = n;
	}
	return l;
fail:
	curl_slist_free_all(l);
	return NULL;
}

/* Git's rule: once a server said which schemes it takes (a 401), only
 * those are tried; with Basic among them it is sent at once, so a streamed
 * (chunked) POST need not be replayed. */
static void narrow_auth(struct http *h)
{
	long avail = 0;

	curl_easy_getinfo(h->curl, CURLINFO_HTTPAUTH_AVAIL, &avail);
	avail |= h->seen_auth;
	if (avail & CURLAUTH_BASIC)
		h->authmask = CURLAUTH_BASIC;
	else if (avail)
		h->authmask &= avail;
}

/* After a request (auth narrowed): a 401 while may_ask and no credentials
 * yet fills them once. 1: send the request again; 0: done; <0: the error. */
static int ask_once(struct http *h, long status, int may_ask, struct pw_error *err)
{
	int rc;

	narrow_auth(h);
	if (status != 401 || h->have_cred || !may_ask)
		return 0;
	if ((rc = cred_fill(h, err)))
		return rc;
	h->have_cred = 1;
	return 1;
}

/* The media type without parameters, lower case. */
static void content_type(CURL *c, char *out, size_t sz)
{
	char *ct = NULL;
	size_t i = 0;

	curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct);
	if (ct)
		for (; ct[i] && ct[i] != ';' && ct[i] != ' ' && i + 1 < sz; i++)
			out[i] = (char)((ct[i] >= 'A' && ct[i] <= 'Z') ? ct[i] + 32 : ct[i]);
	out[i] = 0;
}

static const char *curl_why(struct http *h, CURLcode cc)
{
	return h->errbuf[0] ? h->errbuf : curl_easy_strerror(cc);
}

/* ---- discovery ---------------------------------------------------------------- */

struct getbuf {
	struct pw_buf *b;
	int toobig;
};

static size_t get_write(char *p, size_t sz, size_t n, void *data)
{
	struct getbuf *g = data;

	if (g->b->len + sz * n > HTTP_MAX_ADV) {
		g->toobig = 1;
		return 0;
	}
	return pw_buf_add(g->b, p, sz * n) ? 0 : sz * n;
}

/* The base after a redirect: the effective URL minus the tail we asked for,
 * as Git's update_url_from_redirect; a redirect elsewhere is refused. */
static int rebase(struct http *h, const char *tail, struct pw_error *err)
{
	char *eff = NULL;
	size_t el, tl = strlen(tail);

	curl_easy_getinfo(h->curl, CURLINFO_EFFECTIVE_URL, &eff);
	if (!eff)
		return 0;
	el = strlen(eff);
	{
		size_t bl = strlen(h->base);

		if (el == bl + tl && !strncmp(eff, h->base, bl))
			return 0; /* no redirect */
	}
	if (el < tl || strcmp(eff + el - tl, tail))
		return pw_error_set(err, PW_EPROTO,
		                    "unable to update url base from redirection:\n"
		                    "  asked for: %s%s\n   redirect: %s",
		                    h->base, tail, eff);
	{
		char *nb = strndup(eff, el - tl);

		if (!nb)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		free(h->base);
		h->base = nb;
	}
	if (h->set.note) {
		struct pw_buf b = PW_BUF_INIT;

		if (!pw_buf_addf(&b, "warning: redirecting to %s/", h->base))
			h->set.note(h->set.note_ctx, 1, b.data);
		pw_buf_free(&b);
	}
	return set_shown(h) ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
}

/* The server and path of the credential from the base URL (after a
 * redirect), as Git's credential_from_url; a username given stays when the
 * server is the same. */
static int cred_from_base(struct http *h, struct pw_error *err)
{
	const char *p = strstr(h->base, "://"), *host, *slash;
	char *proto, *hst = NULL, *path = NULL;

	if (!p)
		return 0;
	host = p + 3;
	slash = host + strcspn(host, "/?#");
	if (!(proto = strndup(h->base, (size_t)(p - h->base))) ||
	    !(hst = strndup(host, (size_t)(slash - host))) ||
	    (*slash == '/' && !(path = strdup(slash + 1)))) {
		free(proto);
		free(hst);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (!same(proto, h->cred.protocol) || !same(hst, h->cred.host)) {
		free(h->cred.username);
		h->cred.username = NULL;
	}
	free(h->cred.protocol);
	free(h->cred.host);
	free(h->cred.path);
	h->cred.protocol = proto;
	h->cred.host = hst;
	h->cred.path = path;
	return 0;
}

static const char *remote_text(struct http *h, char *out, size_t sz);

static int discover_get(struct http *h, struct pw_error *err)
{
	char tail[64], ct[128], want[96], *url, rtext[1024];
	const char *hdr_lines[] = {"Pragma: no-cache", NULL};
	struct curl_slist *hl;
	struct getbuf g = {&h->adv, 0};
	int tries, rc = 0, version = 0;
	size_t skip = 0;
	long code = 0;
	CURLcode cc = CURLE_OK;

	if (h->set.smart)
		snprintf(tail, sizeof(tail), "/info/refs?service=%s", h->service);
	else /* GIT_SMART_HTTP=false: a dumb client's request */
		snprintf(tail, sizeof(tail), "/info/refs");
	if (!(url = malloc(strlen(h->base) + strlen(tail) + 1)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	strcpy(url, h->base);
	strcat(url, tail);
	if (!(hl = headers(h, hdr_lines, h->asked, 0))) {
		free(url);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	/* a username without a password: ask before the first try, as Git */
	if (h->cred.username && !h->cred.password && (rc = cred_fill(h, err)))
		goto out;
	for (tries = 0; tries < 2; tries++) {
		pw_buf_reset(&h->adv);
		setup_common(h, h->set.follow >= 1);
		curl_easy_setopt(h->curl, CURLOPT_URL, url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		/* no FAILONERROR: an error's text/plain body is shown, as Git */
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, get_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &g);
		cc = curl_easy_perform(h->curl);
		code = 0;
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		narrow_auth(h);
		if (code == 401 && !h->have_cred && !(h->cred.username && h->cred.password)) {
			/* the credentials are for where the redirects led, as Git */
			if ((rc = rebase(h, tail, err)) || (rc = cred_from_base(h, err)) ||
			    (rc = cred_fill(h, err)))
				goto out;
			h->have_cred = 1;
			continue;
		}
		break;
	}
	if (code == 401) {
		auth_reject(h);
		rc = pw_error_set(err, PW_EIO, "Authentication failed for '%s'%s", h->shown,
		                  remote_text(h, rtext, sizeof(rtext)));
		goto out;
	}
	if (code == 404) {
		rc = pw_error_set(err, PW_ENOTFOUND, "repository '%s' not found%s", h->shown,
		                  remote_text(h, rtext, sizeof(rtext)));
		goto out;
	}
	if (cc == CURLE_OK && code >= 400) {
		rc = pw_error_set(err, PW_EIO,
		                  "unable to access '%s': The requested URL returned error: %ld%s",
		                  h->shown, code, remote_text(h, rtext, sizeof(rtext)));
		goto out;
	}
	if (cc == CURLE_OK && code >= 300 && code < 400) {
		char *loc = NULL;

		curl_easy_getinfo(h->curl, CURLINFO_REDIRECT_URL, &loc);
		rc = pw_error_set(err, PW_EIO,
		                  "unable to access '%s': redirect to '%s' not followed "
		                  "(http.followRedirects)",
		                  h->shown, loc ? loc : "?");
		goto out;
	}
	if (g.toobig) {
		rc = pw_error_set(err, PW_ETOOBIG,
		                  "unable to access '%s': the ref advertisement is larger than "
		                  "%u bytes",
		                  h->shown, HTTP_MAX_ADV);
		goto out;
	}
	if (cc != CURLE_OK) {
		rc = pw_error_set(err, PW_EIO, "unable to access '%s': %s", h->shown,
		                  curl_why(h, cc));
		goto out;
	}
	auth_approve(h);
	h->approved = 1;
	if ((rc = rebase(h, tail, err)))
		goto out;
	content_type(h->curl, ct, sizeof(ct));
	snprintf(want, sizeof(want), "application/x-%s-advertisement", h->service);
	if (!h->set.smart || strcmp(ct, want)) {
		/* as Git's remote-curl: any other type is a dumb server's info/refs */
		h->dumb = 1;
		goto out;
	}
	if ((rc = pw_http__discovery((const uint8_t *)h->adv.data, h->adv.len, h->service, &skip,
	                             &version, err)))
		goto out;
	h->adv_skip = skip;
	h->version = version;
	h->v2 = version == 2;
out:
	curl_slist_free_all(hl);
	free(url);
	return rc;
}

/* An error's body, when it is text/plain, as Git shows it: "\nremote: "
 * before each line, converted from its charset to UTF-8, trimmed. "" when
 * there is nothing to show. */
static const char *remote_text(struct http *h, char *out, size_t sz)
{
	char *ct = NULL, type[64], charset[64] = "";
	const char *p;
	size_t i = 0, o = 0, n;
	char *conv = NULL, *t;

	out[0] = 0;
	curl_easy_getinfo(h->curl, CURLINFO_CONTENT_TYPE, &ct);
	if (!ct || !h->adv.len)
		return out;
	for (p = ct; *p == ' '; p++)
		;
	for (; *p && *p != ';' && *p != ' ' && i + 1 < sizeof(type); p++)
		type[i++] = (char)((*p >= 'A' && *p <= 'Z') ? *p + 32 : *p);
	type[i] = 0;
	if (strcmp(type, "text/plain"))
		return out;
	while ((p = strchr(p, ';'))) { /* parameters: "; name=value" */
		p++;
		while (*p == ' ')
			p++;
		if (!strncasecmp(p, "charset=", 8)) {
			p += 8;
			for (i = 0; p[i] && p[i] != ';' && p[i] != ' ' && i + 1 < sizeof(charset);
			     i++)
				charset[i] = p[i];
			charset[i] = 0;
		}
	}
	n = h->adv.len;
	t = h->adv.data;
	if (charset[0] && strcasecmp(charset, "utf-8")) {
		iconv_t cd = iconv_open("UTF-8", charset);

		if (cd != (iconv_t)-1) {
			size_t inl = n, outl = 4 * n + 4;
			char *in = h->adv.data, *dst;

			if ((conv = malloc(outl))) {
				dst = conv;
				iconv(cd, &in, &inl, &dst, &outl);
				n = (size_t)(dst - conv);
				t = conv;
			}
			iconv_close(cd);
		}
	}
	while (n && (t[n - 1] == '\n' || t[n - 1] == '\r' || t[n - 1] == ' ' || t[n - 1] == '\t'))
		n--;
	while (n && (*t == '\n' || *t == '\r' || *t == ' ' || *t == '\t'))
		t++, n--;
	for (i = 0; i < n && o + 10 < sz;) {
		const char *nl = memchr(t + i, '\n', n - i);
		size_t l = nl ? (size_t)(nl - (t + i)) : n - i;

		o += (size_t)snprintf(out + o, sz - o, "\nremote: %.*s", (int)l, t + i);
		if (o >= sz)
			o = sz - 1;
		i += l + 1;
	}
	free(conv);
	return out;
}

/* info/refs: the cache's answer when it has one for this URL and service,
 * else a GET (kept in the cache for the next connection). */
static int discover(struct http *h, struct pw_error *err)
{
	char *given;
	int rc;

	if (!h->auth)
		return discover_get(h, err);
	if (!(given = strdup(h->base)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (disc_take(h, given)) {
		free(given);
		return set_shown(h) ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
	}
	if (!(rc = discover_get(h, err)))
		disc_keep(h, given);
	free(given);
	return rc;
}

/* ---- dumb HTTP: plain GETs for client/dumb.c ---------------------------------- */

static const struct pw_conn_ops http_ops;

static struct http *dumb_of(struct pw_conn *c)
{
	struct pw_conn_impl *impl = c ? pw_conn__impl(c) : NULL;

	if (!impl || impl->ops != &http_ops || !impl->priv)
		return NULL;
	return ((struct http *)impl->priv)->dumb ? impl->priv : NULL;
}

int pw_http__dumb_refs(struct pw_conn *c, const uint8_t **p, size_t *n)
{
	struct http *h = dumb_of(c);

	if (!h)
		return 0;
	*p = (const uint8_t *)h->adv.data;
	*n = h->adv.len;
	return 1;
}

const char *pw_http__base(struct pw_conn *c)
{
	struct http *h = dumb_of(c);

	return h ? h->base : NULL;
}

int pw_http__follow_all(struct pw_conn *c)
{
	struct http *h = dumb_of(c);

	return h && h->set.follow == 2;
}

int pw_http__server_may_use(struct pw_conn *c, const char *url)
{
	struct http *h = dumb_of(c);
	const char *p = h ? h->set.redir_protocols : "";
	size_t n = strcspn(url, ":");

	while (*p) {
		size_t k = strcspn(p, ",");

		if (k == n && !strncmp(p, url, n))
			return 1;
		p += k + (p[k] == ',');
	}
	return 0;
}

struct dumb_get {
	int (*sink)(void *ctx, const void *p, size_t n);
	void *ctx;
	int rc; /* the sink's */
};

static size_t dumb_write(char *p, size_t sz, size_t n, void *data)
{
	struct dumb_get *g = data;

	if (g->rc)
		return 0;
	g->rc = g->sink(g->ctx, p, sz * n);
	return g->rc ? 0 : sz * n;
}

int pw_http__get(struct pw_conn *c, const char *url,
                 int (*sink)(void *ctx, const void *p, size_t n), void *ctx, struct pw_error *err)
{
	struct http *h = dumb_of(c);
	struct dumb_get g = {sink, ctx, 0};
	struct curl_slist *hl;
	const char *no_cache[] = {"Pragma: no-cache", NULL};
	long code = 0;
	CURLcode cc = CURLE_OK;
	int tries, again;

	if (!h)
		return pw_error_set(err, PW_EINVAL, "not a dumb HTTP connection");
	if (!(hl = headers(h, no_cache, 0, 0)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (tries = 0; tries < 2; tries++) {
		/* redirects of the files themselves only with followRedirects=true */
		setup_common(h, h->set.follow == 2);
		curl_easy_setopt(h->curl, CURLOPT_URL, url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h->curl, CURLOPT_FAILONERROR, 1L);
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, dumb_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &g);
		cc = curl_easy_perform(h->curl);
		code = 0;
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		again = ask_once(h, code, !tries && !g.rc, err);
		if (again < 0) {
			curl_slist_free_all(hl);
			return again;
		}
		if (!again)
			break;
	}
	curl_slist_free_all(hl);
	if (g.rc)
		return g.rc;
	if (code == 404 || code == 410)
		return pw_error_set(err, PW_ENOTFOUND, "%s: HTTP %ld", url, code);
	if (code == 401) {
		auth_reject(h);
		return pw_error_set(err, PW_EIO, "Authentication failed for '%s'", h->shown);
	}
	if (cc == CURLE_OK && code < 300 && !h->approved) {
		auth_approve(h);
		h->approved = 1;
	}
	if (cc == CURLE_OK && code >= 300)
		return pw_error_set(err, PW_EIO, "unable to access '%s': HTTP %ld%s", url, code,
		                    code < 400 ? " (redirect not followed: http.followRedirects)"
		                               : "");
	if (cc != CURLE_OK)
		return pw_error_set(err, PW_EIO, "unable to access '%s': %s", url, curl_why(h, cc));
	return 0;
}

/* ---- any method with a body (WebDAV, client/dav-push.c) ------------------------ */

struct any_req {
	struct http *h;
	struct pw_http__req *r;
	uint64_t off;
	int toobig, rd_err;
};

static size_t any_read(char *buf, size_t sz, size_t n, void *arg)
{
	struct any_req *a = arg;
	uint64_t left = a->r->body_len - a->off;
	size_t want = sz * n < left ? sz * n : (size_t)left;

	if (!want)
		return 0;
	if (a->r->body) {
		memcpy(buf, (const char *)a->r->body + a->off, want);
	} else {
		ssize_t got = pread(a->r->body_fd, buf, want, (off_t)a->off);

		if (got <= 0) {
			a->rd_err = 1;
			return CURL_READFUNC_ABORT;
		}
		want = (size_t)got;
	}
	a->off += want;
	return want;
}

static size_t any_write(char *p, size_t sz, size_t n, void *arg)
{
	struct any_req *a = arg;

	if (!a->r->resp)
		return sz * n;
	if (pw_buf_add(a->r->resp, p, sz * n)) {
		a->toobig = 1;
		return 0;
	}
	return sz * n;
}

static size_t any_header(char *p, size_t sz, size_t n, void *arg)
{
	struct any_req *a = arg;

	/* a new response (after a 401 or a 100 Continue) starts afresh */
	if (sz * n > 5 && !strncmp(p, "HTTP/", 5) && a->r->resp_headers)
		pw_buf_reset(a->r->resp_headers);
	if (a->r->resp_headers && pw_buf_add(a->r->resp_headers, p, sz * n))
		a->toobig = 1;
	return header_seen(p, sz, n, a->h);
}

int pw_http__request(struct pw_conn *c, struct pw_http__req *r, struct pw_error *err)
{
	struct http *h = dumb_of(c);
	struct any_req a = {h, r, 0, 0, 0};
	struct curl_slist *hl;
	const char *lines[9] = {"Expect:"}; /* no 100-continue wait before a body */
	CURLcode cc = CURLE_OK;
	size_t k = 1;
	int tries, again;

	r->status = 0;
	if (!h)
		return pw_error_set(err, PW_EINVAL, "not a dumb HTTP connection");
	for (; r->headers && r->headers[k - 1] && k < 8; k++)
		lines[k] = r->headers[k - 1];
	lines[k] = NULL;
	if (!(hl = headers(h, lines, 0, 0)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (tries = 0; tries < 2; tries++) {
		a.off = 0;
		if (r->resp)
			pw_buf_reset(r->resp);
		if (r->resp_headers)
			pw_buf_reset(r->resp_headers);
		setup_common(h, 0);
		curl_easy_setopt(h->curl, CURLOPT_URL, r->url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, any_header);
		curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &a);
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, any_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &a);
		if (r->body || r->body_fd >= 0) {
			curl_easy_setopt(h->curl, CURLOPT_UPLOAD, 1L);
			curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, any_read);
			curl_easy_setopt(h->curl, CURLOPT_READDATA, &a);
			curl_easy_setopt(h->curl, CURLOPT_INFILESIZE_LARGE,
			                 (curl_off_t)r->body_len);
		}
		curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, r->method);
		cc = curl_easy_perform(h->curl);
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &r->status);
		again = ask_once(h, r->status, !tries && cc == CURLE_OK, err);
		if (again < 0) {
			curl_slist_free_all(hl);
			return again;
		}
		if (!again)
			break;
	}
	curl_slist_free_all(hl);
	if (a.toobig)
		return pw_error_set(err, PW_ETOOBIG, "%s %s: response too large", r->method,
		                    r->url);
	if (a.rd_err)
		return pw_error_set(err, PW_EIO, "%s %s: cannot read the body to send", r->method,
		                    r->url);
	if (cc != CURLE_OK)
		return pw_error_set(err, PW_EIO, "unable to access '%s': %s", r->url,
		                    curl_why(h, cc));
	if (r->status == 401) {
		auth_reject(h);
		return pw_error_set(err, PW_EIO, "Authentication failed for '%s'", h->shown);
	}
	if (r->status < 300 && !h->approved) {
		auth_approve(h);
		h->approved = 1;
	}
	return 0;
}

/* ---- the request thread --------------------------------------------------------- */

struct post {
	struct http *h;
	int checked, failed;
	int may_retry;       /* a 401 gets credentials and one more try */
	const uint8_t *body; /* buffered part of the request */
	size_t body_len, body_off;
	int stream_fd;              /* the rest, chunked; -1 when all is buffered */
	struct pw_http_pktcheck pc; /* v2: where the answer is in its packets */
};

static void signal_response(struct http *h, int rc)
{
	pthread_mutex_lock(&h->mu);
	h->resp_rc = rc;
	h->resp_seq++;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static int send_resp(struct http *h, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(h->resp_wr, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The status of a POST's answer, checked when its first bytes come (or at
 * its end when it has none). Its Content-Type is not checked, as Git does
 * not: the packets say what they are. */
static int check_post(struct post *p, CURLcode cc)
{
	struct http *h = p->h;
	long code = 0;

	p->checked = 1;
	curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
	if (cc != CURLE_OK || code >= 300) {
		if (code == 401)
			pw_error_set(&h->resp_err, PW_EIO, "Authentication failed for '%s'",
			             h->shown);
		else if (code >= 300)
			pw_error_set(
			        &h->resp_err, PW_EIO,
			        "RPC failed; HTTP %ld curl 22 The requested URL returned error: "
			        "%ld",
			        code, code);
		else
			pw_error_set(&h->resp_err, PW_EIO, "RPC failed; curl %d %s", (int)cc,
			             curl_why(h, cc));
		p->failed = 1;
		signal_response(h, h->resp_err.code);
		return -1;
	}
	signal_response(h, 0);
	return 0;
}

static size_t post_write(char *data, size_t sz, size_t n, void *arg)
{
	struct post *p = arg;

	if (!p->checked && p->may_retry) {
		long code = 0;

		curl_easy_getinfo(p->h->curl, CURLINFO_RESPONSE_CODE, &code);
		if (code == 401)
			return sz * n; /* the body of a 401 about to be retried */
	}
	if (!p->checked && check_post(p, CURLE_OK))
		return 0;
	/* v2: the response-end packet is ours to add, and where the answer
	 * stops matters (Git's words for an answer cut off) */
	if (p->h->v2 &&
	    pw_http__pktcheck_feed(&p->pc, (const uint8_t *)data, sz * n, &p->h->resp_err)) {
		p->failed = 1;
		return 0;
	}
	if (send_resp(p->h, data, sz * n))
		return 0;
	return sz * n;
}

static size_t post_read(char *buf, size_t sz, size_t n, void *arg)
{
	struct post *p = arg;
	size_t want = sz * n;

	if (p->body_off < p->body_len) {
		size_t k = p->body_len - p->body_off;

		if (k > want)
			k = want;
		memcpy(buf, p->body + p->body_off, k);
		p->body_off += k;
		return k;
	}
	if (p->stream_fd < 0)
		return 0;
	for (;;) {
		ssize_t r = read(p->stream_fd, buf, want);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return CURL_READFUNC_ABORT;
		return (size_t)r;
	}
}

static int gzip_buf(const struct pw_buf *in, struct pw_buf *out)
{
	z_stream z;
	int rc;

	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return PW_ENOMEM;
	size_t bound = deflateBound(&z, in->len) + 32;

	if (pw_buf_grow(out, bound)) {
		deflateEnd(&z);
		return PW_ENOMEM;
	}
	z.next_in = (Bytef *)in->data;
	z.avail_in = (uInt)in->len;
	z.next_out = (Bytef *)out->data;
	z.avail_out = (uInt)bound;
	rc = deflate(&z, Z_FINISH);
	if (rc != Z_STREAM_END) {
		deflateEnd(&z);
		return PW_ENOMEM;
	}
	pw_buf_setlen(out, z.total_out);
	deflateEnd(&z);
	return 0;
}

/* Read the request: up to post_buffer bytes; *eof when it ended within. */
static int read_request(int fd, struct pw_buf *b, size_t max, int *eof)
{
	*eof = 0;
	while (b->len < max) {
		ssize_t r;

		if (pw_buf_grow(b, 65536))
			return PW_ENOMEM;
		r = read(fd, b->data + b->len, max - b->len < 65536 ? max - b->len : (size_t)65536);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return PW_EIO;
		if (!r) {
			*eof = 1;
			return 0;
		}
		pw_buf_setlen(b, b->len + (size_t)r);
	}
	return 0;
}

static void drain(int fd)
{
	char buf[65536];
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR))
		;
}

static void do_post(struct http *h, struct pw_buf *req, int eof)
{
	char url_tail[64], ctype[96], accept[96], *url;
	const char *lines[6];
	struct pw_buf gz = PW_BUF_INIT;
	struct curl_slist *hl = NULL;
	struct post p;
	int nl = 0, tries;
	long code = 0;
	CURLcode cc;
	const struct pw_buf *body = req;

	memset(&p, 0, sizeof(p));
	p.h = h;
	p.stream_fd = eof ? -1 : h->req_rd;
	snprintf(url_tail, sizeof(url_tail), "/%s", h->service);
	snprintf(ctype, sizeof(ctype), "Content-Type: application/x-%s-request", h->service);
	snprintf(accept, sizeof(accept), "Accept: application/x-%s-result", h->service);
	lines[nl++] = ctype;
	lines[nl++] = accept;
	lines[nl++] = "Expect:";
	if (!eof)
		lines[nl++] = "Transfer-Encoding: chunked";
	else if (!strcmp(h->service, "git-upload-pack") && req->len > HTTP_GZIP_MIN &&
	         !gzip_buf(req, &gz)) {
		lines[nl++] = "Content-Encoding: gzip";
		body = &gz;
	}
	lines[nl] = NULL;
	url = malloc(strlen(h->base) + strlen(url_tail) + 1);
	hl = url ? headers(h, lines, h->version, 1) : NULL;
	if (!hl) {
		pw_error_set(&h->resp_err, PW_ENOMEM, "out of memory");
		signal_response(h, PW_ENOMEM);
		goto out;
	}
	strcpy(url, h->base);
	strcat(url, url_tail);
	if (h->set.note) {
		char note[160];

		if (!eof)
			snprintf(note, sizeof(note), "POST %s (chunked)", h->service);
		else if (body == &gz)
			snprintf(note, sizeof(note), "POST %s (gzip %zu to %zu bytes)", h->service,
			         req->len, gz.len);
		else
			snprintf(note, sizeof(note), "POST %s (%zu bytes)", h->service, req->len);
		h->set.note(h->set.note_ctx, 2, note);
	}
	for (tries = 0; tries < 2; tries++) {
		code = 0;
		p.checked = p.failed = 0;
		memset(&p.pc, 0, sizeof(p.pc));
		p.may_retry = eof && !tries && !h->have_cred;
		p.body = (const uint8_t *)body->data;
		p.body_len = body->len;
		p.body_off = 0;
		setup_common(h, h->set.follow == 2);
		curl_easy_setopt(h->curl, CURLOPT_URL, url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h->curl, CURLOPT_POST, 1L);
		if (eof) {
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body->data);
			curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE,
			                 (curl_off_t)body->len);
		} else {
			curl_easy_setopt(h->curl, CURLOPT_READFUNCTION, post_read);
			curl_easy_setopt(h->curl, CURLOPT_READDATA, &p);
		}
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, post_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &p);
		/* the status is ours to judge (no FAILONERROR): 401 may be retried */
		cc = curl_easy_perform(h->curl);
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		narrow_auth(h);
		if (!p.checked && code == 401 && eof && !tries) {
			struct pw_error e;

			if (!h->have_cred && !cred_fill(h, &e)) {
				h->have_cred = 1;
				continue;
			}
		}
		break;
	}
	if (!p.checked) {
		check_post(&p, cc);
		/* not a byte: upload-pack died before it said anything (a stateless
		 * v0 reader would wait for the rest for ever; git hangs up) */
		if (!p.failed && !strcmp(h->service, "git-upload-pack")) {
			pw_error_set(&h->resp_err, PW_EPROTO,
			             "the remote end hung up unexpectedly");
			p.failed = 1;
		}
	} else if (p.failed) {
		/* the answer's framing was wrong: resp_err says how */
	} else if (!p.failed && cc != CURLE_OK) {
		/* cut off mid-response: the reader sees the end of the stream */
		pw_error_set(&h->resp_err, PW_EIO, "RPC failed; curl %d %s", (int)cc,
		             curl_why(h, cc));
		p.failed = 1;
	}
	if (code == 401) {
		auth_reject(h);
	} else if (!p.failed && h->have_cred && !h->approved) {
		auth_approve(h);
		h->approved = 1;
	}
	if (!p.failed && h->v2 && pw_http__pktcheck_end(&p.pc, &h->resp_err))
		p.failed = 1;
	if (!p.failed && h->v2) {
		if (send_resp(h, "0002", 4))
			p.failed = 1;
	}
out:
	if (p.failed || !hl) {
		pthread_mutex_lock(&h->mu);
		h->dead = 1;
		pthread_mutex_unlock(&h->mu);
		shutdown(h->resp_wr, SHUT_WR);
	}
	if (!eof)
		drain(h->req_rd);
	curl_slist_free_all(hl);
	free(url);
	pw_buf_free(&gz);
}

static int one_packet(const struct pw_buf *b)
{
	int n = b->len >= 4 ? pw_hexval(b->data[0]) : -1, i;

	for (i = 1; i < 4 && n >= 0; i++)
		n = pw_hexval(b->data[i]) < 0 ? -1 : n * 16 + pw_hexval(b->data[i]);
	return n >= 4 && (size_t)n == b->len;
}

static void *http_main(void *arg)
{
	struct http *h = arg;
	struct pw_buf req = PW_BUF_INIT;

	if (send_resp(h, h->adv.data + h->adv_skip, h->adv.len - h->adv_skip))
		goto out;
	pw_buf_free(&h->adv);
	for (;;) {
		int eof, rc;

		pw_buf_reset(&req);
		rc = read_request(h->req_rd, &req, h->set.post_buffer, &eof);
		if (rc) {
			pw_error_set(&h->resp_err, rc, "reading the request: %s", strerror(errno));
			signal_response(h, rc);
			break;
		}
		/* Git's buffer must have room for a whole packet before each
		 * read: what it sends with a length is at most
		 * http.postBuffer - LARGE_PACKET_MAX (and one packet) */
		if (eof && req.len > h->set.post_buffer - PW_PKT_MAX && !one_packet(&req))
			eof = 0;
		if (req.len)
			do_post(h, &req, eof);
		pthread_mutex_lock(&h->mu);
		if (!req.len && h->req_seq > h->resp_seq) {
			/* an empty request: nothing is sent, nothing comes back */
			h->resp_rc = 0;
			h->resp_seq = h->req_seq;
			pthread_cond_broadcast(&h->cv);
		}
		while (!h->nr_next && !h->quit)
			pthread_cond_wait(&h->cv, &h->mu);
		if (h->quit || h->dead) {
			pthread_mutex_unlock(&h->mu);
			break;
		}
		close(h->req_rd);
		h->req_rd = h->next_req_rd[0];
		memmove(h->next_req_rd, h->next_req_rd + 1, --h->nr_next * sizeof(int));
		pthread_mutex_unlock(&h->mu);
	}
out:
	pw_buf_free(&req);
	shutdown(h->resp_wr, SHUT_WR);
	return NULL;
}

/* ---- the connection ------------------------------------------------------------ */

static int http_end_request(struct pw_conn *c, struct pw_error *err)
{
	struct http *h = pw_conn__impl(c)->priv;
	int p[2], rc;
	unsigned want;

	if (pipe2(p, O_CLOEXEC))
		return pw_error_set(err, PW_EIO, "pipe: %s", strerror(errno));
	pthread_mutex_lock(&h->mu);
	if (h->nr_next == (int)(sizeof(h->next_req_rd) / sizeof(h->next_req_rd[0]))) {
		pthread_mutex_unlock(&h->mu);
		close(p[0]);
		close(p[1]);
		return pw_error_set(err, PW_EIO, "too many HTTP requests in flight");
	}
	h->next_req_rd[h->nr_next++] = p[0];
	want = ++h->req_seq;
	pthread_cond_broadcast(&h->cv);
	pthread_mutex_unlock(&h->mu);
	if (c->out_fd >= 0)
		close(c->out_fd);
	c->out_fd = p[1];
	pthread_mutex_lock(&h->mu);
	while (h->resp_seq < want && !h->dead)
		pthread_cond_wait(&h->cv, &h->mu);
	rc = h->resp_seq >= want ? h->resp_rc : PW_EIO;
	if (rc)
		pw_error_copy(err, &h->resp_err);
	if (h->dead && !rc && h->resp_seq < want)
		rc = pw_error_set(err, PW_EIO, "the HTTP connection is gone");
	pthread_mutex_unlock(&h->mu);
	return rc;
}

static int http_finish(struct pw_conn *c, int *status, struct pw_error *err)
{
	struct http *h = pw_conn__impl(c)->priv;

	if (h && h->started) {
		pthread_mutex_lock(&h->mu);
		h->quit = 1;
		pthread_cond_broadcast(&h->cv);
		pthread_mutex_unlock(&h->mu);
	}
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = c->out_fd = -1;
	if (h && h->started) {
		pthread_join(h->tid, NULL);
		h->started = 0;
	}
	pw_conn__impl(c)->status = 0;
	if (status)
		*status = 0;
	/* an answer that went wrong after its start (cut off, badly framed):
	 * the reader saw only its end, this says why */
	if (h && h->dead && h->resp_err.code)
		return pw_error_copy(err, &h->resp_err);
	return 0;
}

static void cred_free(struct cred *c)
{
	free(c->protocol);
	free(c->host);
	free(c->path);
	free(c->username);
	if (c->password)
		memset(c->password, 0, strlen(c->password));
	free(c->password);
}

static void http_free_priv(struct http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	if (h->req_rd >= 0)
		close(h->req_rd);
	while (h->nr_next)
		close(h->next_req_rd[--h->nr_next]);
	if (h->resp_wr >= 0)
		close(h->resp_wr);
	curl_slist_free_all(h->set.extra);
	pw_buf_free(&h->set.helpers);
	free(h->set.cainfo);
	free(h->set.askpass);
	free(h->set.proxy);
	free(h->set.noproxy);
	free(h->set.user_agent);
	free(h->set.netrc);
	free(h->set.cred_username);
	free(h->set.accept_language);
	free(h->set.cookie_file);
	curl_slist_free_all(h->set.resolve);
	pw_buf_free(&h->adv);
	cred_free(&h->cred);
	free(h->base);
	free(h->shown);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	free(h);
}

static void http_free(struct pw_conn *c)
{
	http_free_priv(pw_conn__impl(c)->priv);
	pw_conn__impl(c)->priv = NULL;
}

static const struct pw_conn_ops http_ops = {
        .finish = http_finish,
        .end_request = http_end_request,
        .free = http_free,
};

/* A redirect is not the user's choice: "user" transports are out, as in
 * Git. */
static void redirect_protocols(struct http *h, const struct pw_config *cfg,
                               const struct pw_transport_opts *opts)
{
	struct pw_protocol_env pe = {0};
	int hp, hs;

	if (opts && opts->protocol)
		pe = *opts->protocol;
	pe.protocol_from_user = "0";
	hp = !pw_protocol_check_allowed("http", cfg, &pe, NULL);
	hs = !pw_protocol_check_allowed("https", cfg, &pe, NULL);
	snprintf(h->set.redir_protocols, sizeof(h->set.redir_protocols), "%s%s%s", hp ? "http" : "",
	         hp && hs ? "," : "", hs ? "https" : "");
}

struct file_sink {
	int fd, write_errno;
};

static int file_sink(void *ctx, const void *p, size_t n)
{
	struct file_sink *f = ctx;

	if (pw_write_full(f->fd, p, n, NULL)) {
		f->write_errno = errno ? errno : EIO;
		return PW_EIO;
	}
	return 0;
}

int pw_http_download(const char *url, const char *path, const struct pw_transport_opts *opts,
                     struct pw_error *err)
{
	const struct pw_config *cfg =
	        opts ? (opts->config ? opts->config : opts->git_proxy_config) : NULL;
	struct pw_conn_impl ci;
	struct pw_url u;
	struct http *h;
	struct file_sink f = {-1, 0};
	int rc;

	if ((rc = pw_curl_load(err)) || (rc = pw_url_parse(&u, url, err)))
		return rc;
	if (!(h = calloc(1, sizeof(*h)))) {
		pw_url_free(&u);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	/* a dumb connection of its own, for pw_http__get */
	h->req_rd = h->resp_wr = -1;
	h->authmask = (long)CURLAUTH_ANY;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->service = "git-upload-pack";
	h->dumb = 1;
	memset(&ci, 0, sizeof(ci));
	ci.pub.in_fd = ci.pub.out_fd = -1;
	ci.ops = &http_ops;
	ci.priv = h;
	h->conn = &ci.pub;
	if ((rc = split_url(h, url, err)) ||
	    (rc = load_settings(h, &u, cfg, opts ? opts->http_env : NULL, err)))
		goto out;
	redirect_protocols(h, cfg, opts);
	h->auth = opts && opts->http_env ? opts->http_env->cache : NULL;
	if (set_shown(h) || !(h->curl = curl_easy_init()) || auth_take(h)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((f.fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
		rc = pw_error_set(err, PW_EIO, "cannot create '%s': %s", path, strerror(errno));
		goto out;
	}
	rc = pw_http__get(&ci.pub, url, file_sink, &f, err);
	if (rc && f.write_errno)
		pw_error_set(err, rc, "cannot write '%s': %s", path, strerror(f.write_errno));
	if (close(f.fd) && !rc)
		rc = pw_error_set(err, PW_EIO, "cannot write '%s': %s", path, strerror(errno));
	if (rc)
		unlink(path);
out:
	http_free_priv(h);
	pw_url_free(&u);
	return rc;
}

int pw_transport__http(struct pw_conn *c, const struct pw_url *u, const char *url,
                       const char *service, int version, const struct pw_transport_opts *opts,
                       struct pw_error *err)
{
	const struct pw_config *cfg =
	        opts ? (opts->config ? opts->config : opts->git_proxy_config) : NULL;
	struct http *h;
	int req[2] = {-1, -1}, sv[2] = {-1, -1}, rc;

	if ((rc = pw_curl_load(err)))
		return rc;
	if (!(h = calloc(1, sizeof(*h))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	h->req_rd = h->resp_wr = -1;
	h->authmask = (long)CURLAUTH_ANY;
	pthread_mutex_init(&h->mu, NULL);
	pthread_cond_init(&h->cv, NULL);
	h->service = service;
	h->asked = version;
	h->conn = c;
	if ((rc = split_url(h, url, err)) ||
	    (rc = load_settings(h, u, cfg, opts ? opts->http_env : NULL, err)))
		goto fail;
	redirect_protocols(h, cfg, opts);
	h->auth = opts && opts->http_env ? opts->http_env->cache : NULL;
	if (set_shown(h) || !(h->curl = curl_easy_init()) || auth_take(h)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = discover(h, err)))
		goto fail;
	if (h->dumb) { /* no request thread: the dumb client GETs on its own */
		c->stateless = 1;
		pw_conn__impl(c)->priv = h;
		pw_conn__impl(c)->ops = &http_ops;
		return 0;
	}
	if (pipe2(req, O_CLOEXEC) || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		rc = pw_error_set(err, PW_EIO, "pipe: %s", strerror(errno));
		goto fail;
	}
	h->req_rd = req[0];
	h->resp_wr = sv[1];
	c->out_fd = req[1];
	c->in_fd = sv[0];
	c->stateless = 1;
	pw_conn__impl(c)->priv = h;
	pw_conn__impl(c)->ops = &http_ops;
	if (pthread_create(&h->tid, NULL, http_main, h)) {
		rc = pw_error_set(err, PW_EIO, "cannot start the HTTP thread");
		goto fail_started;
	}
	h->started = 1;
	return 0;
fail_started:
	close(c->out_fd);
	close(c->in_fd);
	c->in_fd = c->out_fd = -1;
	pw_conn__impl(c)->priv = NULL;
	pw_conn__impl(c)->ops = NULL;
	http_free_priv(h);
	return rc;
fail:
	if (req[0] >= 0)
		close(req[0]);
	if (req[1] >= 0)
		close(req[1]);
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	http_free_priv(h);
	return rc;
}
