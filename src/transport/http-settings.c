/* The smart HTTP client's settings: http.* (and http.<url>.*),
 * credential.helper and credential.<url>.username, the environment's
 * GIT_SSL_*, proxies, GIT_ASKPASS and languages (Accept-Language), and the
 * URL split into what curl gets and what credentials see. */
#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/pkt.h"
#include "packwire/transport.h"
#include "packwire/version.h"
#include "transport/http-priv.h"

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

int pw_http__dup_to(char **dst, const char *v);

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
	return pw_http__dup_to(&h->set.cred_username, e->value);
}

static long num(const char *v, long dflt)
{
	int64_t n;

	if (!v || pw_config_parse_int64(v, &n) || n < 0 || n > 0x7fffffff)
		return dflt;
	return (long)n;
}

int pw_http__dup_to(char **dst, const char *v)
{
	free(*dst);
	*dst = NULL;
	return v && !(*dst = strdup(v)) ? PW_ENOMEM : 0;
}

int pw_http__load_settings(struct http *h, const struct pw_url *u, const struct pw_config *cfg,
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
	rc |= pw_http__dup_to(&s->cainfo, v);
	proxy = cfg_str(cfg, "http.proxy");
	if (!proxy && env) {
		proxy = u->scheme == PW_URL_HTTPS ? env->https_proxy : env->http_proxy;
		if (!proxy)
			proxy = env->all_proxy;
	}
	rc |= pw_http__dup_to(&s->proxy, proxy && *proxy ? proxy : NULL);
	rc |= pw_http__dup_to(&s->noproxy, env ? env->no_proxy : NULL);
	if ((v = env && env->askpass && *env->askpass ? env->askpass
	                                              : cfg_str(cfg, "core.askpass")) ||
	    (v = env && env->ssh_askpass && *env->ssh_askpass ? env->ssh_askpass : NULL))
		if (*v && (rc = pw_http__dup_to(&s->askpass, v)))
			return pw_error_set(err, rc, "out of memory");
	ua = cfg_str(cfg, "http.useragent");
	if (env && env->user_agent)
		ua = env->user_agent;
	rc |= pw_http__dup_to(&s->user_agent, ua ? ua : "packwire/" PW_VERSION);
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
	rc |= pw_http__dup_to(&s->netrc, env ? env->netrc : NULL);
	rc |= accept_language(s, env);
	rc |= pw_http__dup_to(&s->cookie_file, cfg_str(cfg, "http.cookiefile"));
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
		if (pw_http__dup_to(&s->cred_username, cfg_str(cfg, "credential.username")))
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
int pw_http__split_url(struct http *h, const char *url, struct pw_error *err)
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

int pw_http__set_shown(struct http *h)
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
