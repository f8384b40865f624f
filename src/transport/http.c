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

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/pkt.h"
#include "packwire/transport.h"
#include "packwire/version.h"
#include "transport/curl-load.h"
#include "transport/http-priv.h"
#include "transport/transport-priv.h"

void pw_http__disc_clear(struct pw_http_cache *a)
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
	pw_http__disc_clear(a);
	if (pw_http__dup_to(&a->disc_url, url) || pw_http__dup_to(&a->disc_service, h->service) ||
	    pw_http__dup_to(&a->disc_base, h->base) ||
	    pw_buf_add(&a->disc_adv, h->adv.data, h->adv.len))
		pw_http__disc_clear(a);
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
	pw_http__disc_clear(a);
	pthread_mutex_unlock(&a->mu);
	return took;
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
size_t pw_http__header_seen(char *p, size_t sz, size_t n, void *arg)
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

void pw_http__setup_common(struct http *h, int follow)
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
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, pw_http__header_seen);
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
		curl_easy_setopt(c, CURLOPT_DEBUGFUNCTION, pw_http__curl_trace);
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
struct curl_slist *pw_http__headers(struct http *h, const char *const *lines, int version, int post)
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
void pw_http__narrow_auth(struct http *h)
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
int pw_http__ask_once(struct http *h, long status, int may_ask, struct pw_error *err)
{
	int rc;

	pw_http__narrow_auth(h);
	if (status != 401 || h->have_cred || !may_ask)
		return 0;
	if ((rc = pw_http__cred_fill(h, err)))
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

const char *pw_http__curl_why(struct http *h, CURLcode cc)
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
	return pw_http__set_shown(h) ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
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
	if (!pw_http__same(proto, h->cred.protocol) || !pw_http__same(hst, h->cred.host)) {
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
	if (!(hl = pw_http__headers(h, hdr_lines, h->asked, 0))) {
		free(url);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	/* a username without a password: ask before the first try, as Git */
	if (h->cred.username && !h->cred.password && (rc = pw_http__cred_fill(h, err)))
		goto out;
	for (tries = 0; tries < 2; tries++) {
		pw_buf_reset(&h->adv);
		pw_http__setup_common(h, h->set.follow >= 1);
		curl_easy_setopt(h->curl, CURLOPT_URL, url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		/* no FAILONERROR: an error's text/plain body is shown, as Git */
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, get_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &g);
		cc = curl_easy_perform(h->curl);
		code = 0;
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		pw_http__narrow_auth(h);
		if (code == 401 && !h->have_cred && !(h->cred.username && h->cred.password)) {
			/* the credentials are for where the redirects led, as Git */
			if ((rc = rebase(h, tail, err)) || (rc = cred_from_base(h, err)) ||
			    (rc = pw_http__cred_fill(h, err)))
				goto out;
			h->have_cred = 1;
			continue;
		}
		break;
	}
	if (code == 401) {
		pw_http__auth_reject(h);
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
		                  pw_http__curl_why(h, cc));
		goto out;
	}
	pw_http__auth_approve(h);
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
		return pw_http__set_shown(h) ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
	}
	if (!(rc = discover_get(h, err)))
		disc_keep(h, given);
	free(given);
	return rc;
}

/* ---- dumb HTTP: plain GETs for client/dumb.c ---------------------------------- */

static const struct pw_conn_ops http_ops;

struct http *pw_http__dumb_of(struct pw_conn *c)
{
	struct pw_conn_impl *impl = c ? pw_conn__impl(c) : NULL;

	if (!impl || impl->ops != &http_ops || !impl->priv)
		return NULL;
	return ((struct http *)impl->priv)->dumb ? impl->priv : NULL;
}

int pw_http__dumb_refs(struct pw_conn *c, const uint8_t **p, size_t *n)
{
	struct http *h = pw_http__dumb_of(c);

	if (!h)
		return 0;
	*p = (const uint8_t *)h->adv.data;
	*n = h->adv.len;
	return 1;
}

const char *pw_http__base(struct pw_conn *c)
{
	struct http *h = pw_http__dumb_of(c);

	return h ? h->base : NULL;
}

int pw_http__follow_all(struct pw_conn *c)
{
	struct http *h = pw_http__dumb_of(c);

	return h && h->set.follow == 2;
}

int pw_http__server_may_use(struct pw_conn *c, const char *url)
{
	struct http *h = pw_http__dumb_of(c);
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
	struct http *h = pw_http__dumb_of(c);
	struct dumb_get g = {sink, ctx, 0};
	struct curl_slist *hl;
	const char *no_cache[] = {"Pragma: no-cache", NULL};
	long code = 0;
	CURLcode cc = CURLE_OK;
	int tries, again;

	if (!h)
		return pw_error_set(err, PW_EINVAL, "not a dumb HTTP connection");
	if (!(hl = pw_http__headers(h, no_cache, 0, 0)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (tries = 0; tries < 2; tries++) {
		/* redirects of the files themselves only with followRedirects=true */
		pw_http__setup_common(h, h->set.follow == 2);
		curl_easy_setopt(h->curl, CURLOPT_URL, url);
		curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hl);
		curl_easy_setopt(h->curl, CURLOPT_FAILONERROR, 1L);
		curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, dumb_write);
		curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &g);
		cc = curl_easy_perform(h->curl);
		code = 0;
		curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &code);
		again = pw_http__ask_once(h, code, !tries && !g.rc, err);
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
		pw_http__auth_reject(h);
		return pw_error_set(err, PW_EIO, "Authentication failed for '%s'", h->shown);
	}
	if (cc == CURLE_OK && code < 300 && !h->approved) {
		pw_http__auth_approve(h);
		h->approved = 1;
	}
	if (cc == CURLE_OK && code >= 300)
		return pw_error_set(err, PW_EIO, "unable to access '%s': HTTP %ld%s", url, code,
		                    code < 400 ? " (redirect not followed: http.followRedirects)"
		                               : "");
	if (cc != CURLE_OK)
		return pw_error_set(err, PW_EIO, "unable to access '%s': %s", url,
		                    pw_http__curl_why(h, cc));
	return 0;
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

void pw_http__cred_free(struct cred *c)
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
	pw_http__cred_free(&h->cred);
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
	if ((rc = pw_http__split_url(h, url, err)) ||
	    (rc = pw_http__load_settings(h, &u, cfg, opts ? opts->http_env : NULL, err)))
		goto out;
	redirect_protocols(h, cfg, opts);
	h->auth = opts && opts->http_env ? opts->http_env->cache : NULL;
	if (pw_http__set_shown(h) || !(h->curl = curl_easy_init()) || pw_http__auth_take(h)) {
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
	if ((rc = pw_http__split_url(h, url, err)) ||
	    (rc = pw_http__load_settings(h, u, cfg, opts ? opts->http_env : NULL, err)))
		goto fail;
	redirect_protocols(h, cfg, opts);
	h->auth = opts && opts->http_env ? opts->http_env->cache : NULL;
	if (pw_http__set_shown(h) || !(h->curl = curl_easy_init()) || pw_http__auth_take(h)) {
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
	if (pthread_create(&h->tid, NULL, pw_http__thread_main, h)) {
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
