/* git-daemon's request handling: decode the request line, map the path to a
 * repository under the access rules, and serve it. The front that accepts
 * connections (and forks) is the caller's. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/daemon.h"
#include "packwire/pkt.h"
#include "packwire/receive.h"
#include "packwire/repo.h"
#include "packwire/server.h"
#include "repo/hook.h"
#include "server/paths.h"

static const char *const service_names[PW_DAEMON_NR_SERVICES] = {
        "upload-pack",
        "upload-archive",
        "receive-pack",
};
/* the config key that may override each (daemon.<key>) */
static const char *const service_keys[PW_DAEMON_NR_SERVICES] = {
        "daemon.uploadpack",
        "daemon.uploadarch",
        "daemon.receivepack",
};

#define GENERIC_REFUSAL "access denied or repository not exported"

const char *pw_daemon_service_name(enum pw_daemon_service s)
{
	return (unsigned)s < PW_DAEMON_NR_SERVICES ? service_names[s] : NULL;
}

int pw_daemon_service_parse(const char *name, enum pw_daemon_service *out)
{
	int i;

	for (i = 0; i < PW_DAEMON_NR_SERVICES; i++)
		if (!strcmp(name, service_names[i])) {
			*out = (enum pw_daemon_service)i;
			return 0;
		}
	return PW_EINVAL;
}

void pw_daemon_opts_init(struct pw_daemon_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->enabled[PW_DAEMON_UPLOAD_PACK] = 1;
	/* as in Git, every service's daemon.<service> config counts unless
	 * --forbid-override says otherwise */
	o->overridable[PW_DAEMON_UPLOAD_PACK] = 1;
	o->overridable[PW_DAEMON_UPLOAD_ARCHIVE] = 1;
	o->overridable[PW_DAEMON_RECEIVE_PACK] = 1;
	o->confine_symlinks = 1;
}

static void logf_(const struct pw_daemon_opts *o, enum pw_daemon_log_level lv, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void logf_(const struct pw_daemon_opts *o, enum pw_daemon_log_level lv, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!o->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o->log(o->log_data, lv, msg);
}

/* ---- the request line ---------------------------------------------------- */

void pw_daemon_request_free(struct pw_daemon_request *r)
{
	if (!r)
		return;
	free(r->path);
	free(r->host);
	free(r->port);
	free(r->protocol);
	memset(r, 0, sizeof(*r));
}

/* Git's sanitize_client into s (room for n + 1): no '/', no leading,
 * repeated or trailing '.'; lower case too when `lower` (Git's
 * canonicalize_client). */
static void sanitize_host(char *s, const char *p, size_t n, int lower)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		if (p[i] == '/' || (p[i] == '.' && (!k || s[k - 1] == '.')))
			continue;
		s[k++] = lower ? (char)tolower((unsigned char)p[i]) : p[i];
	}
	while (k && s[k - 1] == '.')
		k--;
	s[k] = 0;
}

static char *canon_host(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s)
		sanitize_host(s, p, n, 1);
	return s;
}

/* "host=H[:port]" (H may be a [v6] literal) into r. */
static int parse_host(struct pw_daemon_request *r, const char *v, size_t n)
{
	const char *end = v + n, *colon = NULL, *hs = v, *he;

	if (n && *v == '[') {
		const char *rb = memchr(v, ']', n);

		if (rb) {
			hs = v + 1;
			he = rb;
			if (rb + 1 < end && rb[1] == ':')
				colon = rb + 1;
			goto split;
		}
	}
	colon = memchr(v, ':', n);
	he = colon ? colon : end;
split:
	if (colon && !(r->port = canon_host(colon + 1, (size_t)(end - colon - 1))))
		return PW_ENOMEM;
	if (!(r->host = canon_host(hs, (size_t)(he - hs))))
		return PW_ENOMEM;
	return 0;
}

int pw_daemon_request_parse(struct pw_daemon_request *out, const uint8_t *data, size_t len,
                            struct pw_error *err)
{
	const char *line = (const char *)data, *end = line + len, *nul, *p, *path = NULL;
	struct pw_buf proto = PW_BUF_INIT;
	size_t llen;
	int i, rc;

	memset(out, 0, sizeof(*out));
	if (len > PW_DAEMON_REQUEST_MAX)
		return pw_error_set(err, PW_ETOOBIG, "request of %zu bytes is too long", len);
	nul = memchr(line, 0, len);
	llen = nul ? (size_t)(nul - line) : len;
	if (llen && line[llen - 1] == '\n')
		llen--;
	for (i = 0; i < PW_DAEMON_NR_SERVICES; i++) {
		size_t sn = strlen(service_names[i]);

		if (llen > 4 + sn && !memcmp(line, "git-", 4) &&
		    !memcmp(line + 4, service_names[i], sn) && line[4 + sn] == ' ') {
			out->service = (enum pw_daemon_service)i;
			path = line + 5 + sn;
			break;
		}
	}
	if (!path) {
		/* a printable, bounded copy for the log */
		char shown[256];
		size_t k, n = llen < sizeof(shown) - 1 ? llen : sizeof(shown) - 1;

		for (k = 0; k < n; k++)
			shown[k] = isprint((unsigned char)line[k]) ? line[k] : '?';
		shown[n] = 0;
		return pw_error_set(err, PW_EPROTO, "Protocol error: '%s'", shown);
	}
	if (!(out->path = strndup(path, (size_t)(line + llen - path))))
		goto oom;
	if (!nul)
		return 0;
	/* after the path's NUL: "host=H\0", then (after a second NUL) extras */
	p = nul + 1;
	if (p < end && *p) {
		const char *e = memchr(p, 0, (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

		out->extended = 1;
		if (n >= 5 && !strncasecmp(p, "host=", 5)) {
			if (n > 5 && (rc = parse_host(out, p + 5, n - 5)))
				goto oom;
			p += n + 1;
		}
	}
	while (p < end) {
		const char *e = memchr(p, 0, (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);

		if (n && ((proto.len && pw_buf_addch(&proto, ':')) || pw_buf_add(&proto, p, n)))
			goto oom;
		p += n + 1;
	}
	if (proto.len) {
		out->protocol = pw_buf_detach(&proto, NULL);
		if (!out->protocol)
			goto oom;
		out->version = pw_protocol_version_from_env(out->protocol);
	}
	pw_buf_free(&proto);
	return 0;
oom:
	pw_buf_free(&proto);
	pw_daemon_request_free(out);
	return pw_error_set(err, PW_ENOMEM, "out of memory");
}

/* ---- paths --------------------------------------------------------------- */

/* "~user/rest" to "<home>/rest" (getpwnam; "~" alone: the daemon's user). */
static char *expand_user(const char *p)
{
	const char *slash = strchr(p, '/');
	size_t n = slash ? (size_t)(slash - p - 1) : strlen(p + 1);
	struct passwd pw, *res = NULL;
	char name[256], buf[4096], *out;
	int rc;

	if (n >= sizeof(name))
		return NULL;
	memcpy(name, p + 1, n);
	name[n] = 0;
	if (n)
		rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
	else
		rc = getpwuid_r(getuid(), &pw, buf, sizeof(buf), &res);
	if (rc || !res || !res->pw_dir)
		return NULL;
	n = strlen(res->pw_dir) + (slash ? strlen(slash) : 0) + 1;
	if (!(out = malloc(n)))
		return NULL;
	snprintf(out, n, "%s%s", res->pw_dir, slash ? slash : "");
	return out;
}

static int is_dir(const char *p)
{
	struct stat st;

	return !stat(p, &st) && S_ISDIR(st.st_mode);
}

/* Git's enter_repo without the chdir: *used gets the directory to open,
 * the return value the path as validated (the request's spelling plus the
 * suffix that matched). NULL when it is no repository. */
static char *enter_repo(const char *path, int strict, char **used)
{
	static const char *const suffix[] = {"/.git", "", ".git/.git", ".git", NULL};
	size_t len = strlen(path);
	char *base, *u = NULL, *valid = NULL;
	int i;

	*used = NULL;
	if (strict) {
		if (!pw_repo_is_git_dir(path))
			return NULL;
		*used = strdup(path);
		valid = strdup(path);
		if (!*used || !valid) {
			free(*used);
			free(valid);
			*used = NULL;
			return NULL;
		}
		return valid;
	}
	while (len > 1 && path[len - 1] == '/')
		len--;
	if (len >= PATH_MAX)
		return NULL;
	if (!(base = strndup(path, len)))
		return NULL;
	if (base[0] == '~') {
		char *e = expand_user(base);

		if (!e) {
			free(base);
			return NULL;
		}
		u = e;
	} else {
		u = strdup(base);
	}
	if (!u) {
		free(base);
		return NULL;
	}
	for (i = 0; suffix[i]; i++) {
		size_t n = strlen(u) + strlen(suffix[i]) + 1;
		char *cand = malloc(n);

		if (!cand)
			break;
		snprintf(cand, n, "%s%s", u, suffix[i]);
		if (is_dir(cand) && pw_repo_is_git_dir(cand)) {
			n = len + strlen(suffix[i]) + 1;
			if ((valid = malloc(n)))
				snprintf(valid, n, "%s%s", base, suffix[i]);
			*used = cand;
			break;
		}
		free(cand);
	}
	free(u);
	free(base);
	if (!valid) {
		free(*used);
		*used = NULL;
	}
	return valid;
}

/* %CH and %IP need a lookup of the requested host name. */
struct hostinfo {
	const struct pw_daemon_request *req;
	int looked_up;
	char canon[NI_MAXHOST], ip[NI_MAXHOST];
};

static void lookup_host(struct hostinfo *h)
{
	struct addrinfo hints, *ai = NULL;

	if (h->looked_up)
		return;
	h->looked_up = 1;
	if (!h->req->host || !*h->req->host)
		return;
	memset(&hints, 0, sizeof(hints));
	hints.ai_flags = AI_CANONNAME;
	if (getaddrinfo(h->req->host, NULL, &hints, &ai) || !ai)
		return;
	if (getnameinfo(ai->ai_addr, ai->ai_addrlen, h->ip, sizeof(h->ip), NULL, 0, NI_NUMERICHOST))
		h->ip[0] = 0;
	/* as Git: the sanitized canonical name, else the address */
	if (ai->ai_canonname)
		sanitize_host(h->canon, ai->ai_canonname,
		              strnlen(ai->ai_canonname, sizeof(h->canon) - 1), 0);
	else
		snprintf(h->canon, sizeof(h->canon), "%s", h->ip);
	freeaddrinfo(ai);
}

static int expand_interpolated(struct pw_buf *out, const char *fmt,
                               const struct pw_daemon_request *req)
{
	struct hostinfo h = {req, 0, "", ""};
	int rc = 0;

	for (; *fmt && !rc; fmt++) {
		if (*fmt != '%') {
			rc = pw_buf_addch(out, *fmt);
			continue;
		}
		if (fmt[1] == 'H') {
			rc = pw_buf_adds(out, req->host ? req->host : "");
			fmt++;
		} else if (fmt[1] == 'C' && fmt[2] == 'H') {
			lookup_host(&h);
			rc = pw_buf_adds(out, h.canon);
			fmt += 2;
		} else if (fmt[1] == 'I' && fmt[2] == 'P') {
			lookup_host(&h);
			rc = pw_buf_adds(out, h.ip);
			fmt += 2;
		} else if (fmt[1] == 'P') {
			rc = pw_buf_adds(out, req->port ? req->port : "");
			fmt++;
		} else if (fmt[1] == 'D') {
			rc = pw_buf_adds(out, req->path);
			fmt++;
		} else if (fmt[1] == '%') {
			rc = pw_buf_addch(out, '%');
			fmt++;
		} else {
			rc = pw_buf_addch(out, '%');
		}
	}
	return rc;
}

/* Git's path_ok: the directory to serve (malloc'd) or NULL (logged);
 * *validp gets the path as validated (the request's spelling, "~user"
 * unexpanded, plus the suffix that matched), which Git shows the access hook
 * and its log lines. */
static char *path_ok(const struct pw_daemon_opts *o, const struct pw_daemon_request *req,
                     char **validp)
{
	struct pw_buf b = PW_BUF_INIT;
	const char *dir = req->path;
	char *valid = NULL, *used = NULL;
	int based = 0;

	*validp = NULL;
	if (pw_srv_path_is_aliased(dir)) {
		logf_(o, PW_DAEMON_LOG_ERROR, "'%s': aliased", dir);
		return NULL;
	}
	if (*dir == '~') {
		if (!o->user_path) {
			logf_(o, PW_DAEMON_LOG_ERROR, "'%s': User-path not allowed", dir);
			return NULL;
		}
		if (*o->user_path) {
			const char *slash = strchr(dir, '/');
			size_t nl = slash ? (size_t)(slash - dir) : strlen(dir);

			logf_(o, PW_DAEMON_LOG_INFO,
			      "userpath <%s>, request <%s>, namlen %d, restlen %d, slash <%s>",
			      o->user_path, dir, (int)nl, (int)(strlen(dir) - nl),
			      slash ? slash : "");
			if (pw_buf_add(&b, dir, nl) ||
			    pw_buf_addf(&b, "/%s%s", o->user_path, slash ? slash : ""))
				goto oom;
			dir = b.data;
		}
	} else if (o->interpolated_path && req->extended) {
		if (*dir != '/') {
			logf_(o, PW_DAEMON_LOG_ERROR,
			      "'%s': Non-absolute path denied (interpolated-path active)", dir);
			return NULL;
		}
		if (expand_interpolated(&b, o->interpolated_path, req))
			goto oom;
		logf_(o, PW_DAEMON_LOG_INFO, "Interpolated dir '%s'", b.data);
		dir = b.data;
	} else if (o->base_path) {
		if (*dir != '/') {
			logf_(o, PW_DAEMON_LOG_ERROR,
			      "'%s': Non-absolute path denied (base-path active)", dir);
			return NULL;
		}
		if (pw_buf_addf(&b, "%s%s", o->base_path, dir))
			goto oom;
		dir = b.data;
		based = 1;
	}
	if (strlen(dir) >= PATH_MAX) {
		logf_(o, PW_DAEMON_LOG_ERROR, "path too large: %.200s...", dir);
		pw_buf_free(&b);
		return NULL;
	}
	valid = enter_repo(dir, o->strict_paths, &used);
	if (!valid && o->base_path && o->base_path_relaxed) {
		dir = req->path;
		based = 0;
		valid = enter_repo(dir, o->strict_paths, &used);
	}
	if (!valid) {
		/* "<repository>@sha1": the other algorithm's view of it */
		size_t bl;
		char *base;

		if (pw_srv_path_view(dir, strlen(dir), &bl) && (base = strndup(dir, bl))) {
			valid = enter_repo(base, o->strict_paths, &used);
			free(base);
		}
	}
	if (!valid) {
		logf_(o, PW_DAEMON_LOG_ERROR, "'%s' does not appear to be a git repository", dir);
		pw_buf_free(&b);
		return NULL;
	}
	pw_buf_free(&b);
	if (based && o->confine_symlinks && !pw_srv_path_inside(o->base_path, used)) {
		logf_(o, PW_DAEMON_LOG_ERROR, "'%s': resolves outside the base path", valid);
		goto deny;
	}
	if (o->whitelist && o->whitelist[0]) {
		size_t pl = strlen(valid), i;

		for (i = 0; o->whitelist[i]; i++) {
			size_t len = strlen(o->whitelist[i]);

			if (len <= pl && !memcmp(o->whitelist[i], valid, len) &&
			    (!valid[len] || (!o->strict_paths && valid[len] == '/'))) {
				*validp = valid;
				return used;
			}
		}
	} else if (!o->strict_paths) {
		*validp = valid;
		return used;
	}
	logf_(o, PW_DAEMON_LOG_ERROR, "'%s': not in directory list", valid);
deny:
	free(valid);
	free(used);
	return NULL;
oom:
	pw_buf_free(&b);
	logf_(o, PW_DAEMON_LOG_ERROR, "out of memory");
	return NULL;
}

/* ---- the decision -------------------------------------------------------- */

struct hook_out {
	struct pw_buf b;
};

static void hook_output(void *ctx, const char *data, size_t len)
{
	struct hook_out *h = ctx;

	if (h->b.len < 4096)
		pw_buf_add(&h->b, data, len);
}

/* Git's run_access_hook: args service, path (as validated), the requested
 * host, its canonical name, its IP address and the requested port (%H %CH
 * %IP %P); the client's address in REMOTE_ADDR and REMOTE_PORT, as Git's
 * daemon has them in its environment. A non-zero exit refuses, with the
 * first line of its output as the reason. */
static int run_access_hook(const struct pw_daemon_opts *o, const struct pw_daemon_request *req,
                           const char *path, const char *peer_ip, const char *peer_port,
                           const char **client_msg, struct pw_error *err)
{
	static __thread char reason[512];
	struct hostinfo hi = {req, 0, "", ""};
	char addr_env[NI_MAXHOST + 16], port_env[NI_MAXSERV + 16];
	const char *args[7], *env[3];
	struct hook_out out;
	struct pw_hook_run h;
	struct pw_error herr;
	int status = 0;
	size_t n;
	char *s;

	lookup_host(&hi);
	args[0] = service_names[req->service];
	args[1] = path;
	args[2] = req->host ? req->host : "";
	args[3] = hi.canon;
	args[4] = hi.ip;
	args[5] = req->port ? req->port : "";
	args[6] = NULL;
	/* Git writes an IPv6 peer in brackets */
	snprintf(addr_env, sizeof(addr_env),
	         strchr(peer_ip ? peer_ip : "", ':') ? "REMOTE_ADDR=[%s]" : "REMOTE_ADDR=%s",
	         peer_ip ? peer_ip : "");
	snprintf(port_env, sizeof(port_env), "REMOTE_PORT=%s", peer_port ? peer_port : "");
	env[0] = peer_ip ? addr_env : "REMOTE_ADDR";
	env[1] = peer_port ? port_env : "REMOTE_PORT";
	env[2] = NULL;
	pw_buf_init(&out.b, 0);
	memset(&h, 0, sizeof(h));
	h.path = o->access_hook;
	h.args = args;
	h.env = env;
	h.output = hook_output;
	h.ctx = &out;
	if (pw_hook_run(&h, &status, &herr) == 0 && status == 0) {
		pw_buf_free(&out.b);
		return 0;
	}
	s = out.b.data;
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	n = strcspn(s, "\n");
	snprintf(reason, sizeof(reason), "%.*s", (int)(n < 400 ? n : 400),
	         n ? s : "service rejected");
	pw_buf_free(&out.b);
	logf_(o, PW_DAEMON_LOG_ERROR, "%s", reason);
	*client_msg = o->informative_errors ? reason : GENERIC_REFUSAL;
	return pw_error_set(err, PW_ERROR, "access hook refused: %s", reason);
}

static int refuse(const struct pw_daemon_opts *o, const char **client_msg, const char *why,
                  struct pw_error *err, int code)
{
	*client_msg = o->informative_errors ? why : GENERIC_REFUSAL;
	return pw_error_set(err, code, "%s", why);
}

int pw_daemon_resolve(const struct pw_daemon_opts *o, const struct pw_daemon_request *req,
                      const char *peer_ip, const char *peer_port, char **gitdir,
                      const char **client_msg, struct pw_error *err)
{
	enum pw_daemon_service sv = req->service;
	const char *name = service_names[sv];
	int enabled = o->enabled[sv];
	struct pw_repo *repo = NULL;
	struct pw_error rerr;
	char *path, *valid = NULL, *ok;
	int rc;

	*gitdir = NULL;
	*client_msg = NULL;
	logf_(o, PW_DAEMON_LOG_INFO, "Request %s for '%s'", name, req->path);
	if (!enabled && !o->overridable[sv]) {
		logf_(o, PW_DAEMON_LOG_ERROR, "'%s': service not enabled.", name);
		return refuse(o, client_msg, "service not enabled", err, PW_EUNSUPPORTED);
	}
	if (!(path = path_ok(o, req, &valid)))
		return refuse(o, client_msg, "no such repository", err, PW_ENOTFOUND);
	if (!o->export_all) {
		size_t n = strlen(path) + sizeof("/git-daemon-export-ok");

		if (!(ok = malloc(n))) {
			free(path);
			free(valid);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		snprintf(ok, n, "%s/git-daemon-export-ok", path);
		rc = access(ok, F_OK);
		free(ok);
		if (rc) {
			logf_(o, PW_DAEMON_LOG_ERROR, "'%s': repository not exported.", valid);
			free(path);
			free(valid);
			return refuse(o, client_msg, "repository not exported", err, PW_ENOTFOUND);
		}
	}
	if (o->overridable[sv] && !pw_repo_open_gitdir(&repo, path, &rerr)) {
		int v;

		if (!pw_config_get_bool(pw_repo_config(repo), service_keys[sv], &v, NULL))
			enabled = v;
		pw_repo_free(repo);
	}
	if (!enabled) {
		logf_(o, PW_DAEMON_LOG_ERROR, "'%s': service not enabled for '%s'", name, valid);
		free(path);
		free(valid);
		return refuse(o, client_msg, "service not enabled", err, PW_EUNSUPPORTED);
	}
	if (o->access_hook &&
	    (rc = run_access_hook(o, req, valid, peer_ip, peer_port, client_msg, err))) {
		free(path);
		free(valid);
		return rc;
	}
	free(valid);
	*gitdir = path;
	return 0;
}

/* ---- one connection ------------------------------------------------------ */

/* Read exactly n bytes by the deadline (monotonic ms; 0 = none). */
static int read_by(int fd, uint8_t *p, size_t n, long long deadline, struct pw_error *err)
{
	while (n) {
		ssize_t r;

		if (deadline) {
			struct timespec ts;
			struct pollfd pfd = {fd, POLLIN, 0};
			long long now;
			int pr;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
			if (now >= deadline)
				return pw_error_set(err, PW_EIO, "timeout waiting for the request");
			pr = poll(&pfd, 1, (int)(deadline - now));
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr == 0)
				return pw_error_set(err, PW_EIO, "timeout waiting for the request");
		}
		r = read(fd, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return pw_error_set(err, PW_EIO, "read error: %s", strerror(errno));
		if (r == 0)
			return pw_error_set(err, PW_EPROTO, "the remote end hung up unexpectedly");
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* The request packet's payload into buf (PW_PKT_MAX bytes); *len set. */
static int read_request(const struct pw_daemon_opts *o, int fd, uint8_t *buf, size_t *len,
                        struct pw_error *err)
{
	int secs = o->init_timeout ? o->init_timeout : o->timeout;
	long long deadline = 0;
	struct pw_pkt pkt;
	size_t used;
	int rc;

	if (secs > 0) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		deadline =
		        (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + (long long)secs * 1000;
	}
	if ((rc = read_by(fd, buf, 4, deadline, err)))
		return rc;
	rc = pw_pkt_decode(buf, 4, &pkt, &used, err);
	if (rc == 0) {
		/* flush, delim, or an empty data packet: an empty request line */
		*len = 0;
		return 0;
	}
	if (rc != PW_EMORE)
		return rc;
	{
		unsigned n = 0;
		int i;

		for (i = 0; i < 4; i++)
			n = n * 16 + (unsigned)(isdigit(buf[i]) ? buf[i] - '0'
			                                        : (tolower(buf[i]) - 'a' + 10));
		n -= 4;
		if (n > PW_DAEMON_REQUEST_MAX)
			return pw_error_set(err, PW_ETOOBIG, "request of %u bytes is too long", n);
		if ((rc = read_by(fd, buf, n, deadline, err)))
			return rc;
		*len = n;
	}
	return 0;
}

static int send_err(int fd, const char *msg, const char *dir)
{
	struct pw_buf b = PW_BUF_INIT;
	int rc = pw_pkt_writef(&b, "ERR %s: %s", msg, dir);

	if (!rc)
		rc = pw_write_full(fd, b.data, b.len, NULL);
	pw_buf_free(&b);
	return rc;
}

static int serve(const struct pw_daemon_opts *o, const struct pw_daemon_request *req,
                 const char *gitdir, int in_fd, int out_fd, struct pw_error *err)
{
	struct pw_repo *repo = NULL;
	const char *view;
	size_t bl;
	int rc;

	if (req->service == PW_DAEMON_UPLOAD_ARCHIVE) {
		send_err(out_fd, "upload-archive is not supported", req->path);
		return pw_error_set(err, PW_EUNSUPPORTED, "upload-archive is not supported");
	}
	if ((rc = pw_repo_open_gitdir(&repo, gitdir, err)))
		return rc;
	view = pw_srv_path_view(req->path, strlen(req->path), &bl);
	if (view && pw_srv_dir_is_view_name(gitdir, view))
		view = NULL; /* a repository really named so */
	if (req->service == PW_DAEMON_UPLOAD_PACK) {
		struct pw_upload_pack_opts uo;

		pw_upload_pack_opts_init(&uo);
		uo.object_format = view;
		uo.version = req->version;
		uo.strict = 1;
		uo.timeout = o->timeout;
		uo.agent = o->agent;
		rc = pw_upload_pack(repo, in_fd, out_fd, &uo, err);
	} else {
		struct pw_receive_opts ro;

		pw_receive_opts_init(&ro);
		/* receive-pack has no v2: version=2 falls back to v0, as in Git */
		ro.protocol_version = req->version == 1 ? 1 : 0;
		ro.err_fd = -1;
		ro.agent = o->agent;
		ro.service_path = "."; /* git daemon runs `receive-pack .` in the repository */
		ro.object_format = view;
		ro.submodule_base = o->base_path; /* NULL: beside the repository */
		if (err)
			pw_error_clear(err);
		rc = pw_receive_pack(repo, in_fd, out_fd, &ro, err);
		/* refused updates end the protocol well; the reason is for the log */
		if (!rc && err && err->msg[0])
			logf_(o, PW_DAEMON_LOG_ERROR, "receive-pack: %s", err->msg);
	}
	pw_repo_free(repo);
	return rc;
}

/* --verbose: the request's extra attributes, as Git logs them */
static void log_attrs(const struct pw_daemon_opts *o, const struct pw_daemon_request *req)
{
	if (req->host)
		logf_(o, PW_DAEMON_LOG_INFO, "Extended attribute \"host\": %s%s%s", req->host,
		      req->port ? ":" : "", req->port ? req->port : "");
	if (req->protocol)
		logf_(o, PW_DAEMON_LOG_INFO, "Extended attribute \"protocol\": %s", req->protocol);
}

/* Git logs the attributes after the path's NUL before it finds the service
 * unknown: decode them behind a stand-in service for the log. */
static void log_attrs_of_bad_line(const struct pw_daemon_opts *o, const uint8_t *buf, size_t len)
{
	static const char stand_in[] = "git-upload-pack /";
	const uint8_t *nul = memchr(buf, 0, len);
	struct pw_daemon_request req;
	struct pw_error e;
	size_t rest;
	uint8_t *b;

	if (!o->log || !nul)
		return;
	rest = len - (size_t)(nul - buf);
	if (!(b = malloc(sizeof(stand_in) - 1 + rest)))
		return;
	memcpy(b, stand_in, sizeof(stand_in) - 1);
	memcpy(b + sizeof(stand_in) - 1, nul, rest);
	if (!pw_daemon_request_parse(&req, b, sizeof(stand_in) - 1 + rest, &e)) {
		log_attrs(o, &req);
		pw_daemon_request_free(&req);
	}
	free(b);
}

int pw_daemon_serve_conn(const struct pw_daemon_opts *o, int in_fd, int out_fd, const char *peer_ip,
                         const char *peer_port, struct pw_error *err)
{
	static const size_t cap = PW_DAEMON_REQUEST_MAX + 4;
	struct pw_daemon_request req;
	const char *msg = NULL;
	char *gitdir = NULL;
	uint8_t *buf;
	size_t len = 0;
	int rc;

	if (!(buf = malloc(cap)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	rc = read_request(o, in_fd, buf, &len, err);
	if (!rc)
		rc = pw_daemon_request_parse(&req, buf, len, err);
	if (rc == PW_EPROTO)
		log_attrs_of_bad_line(o, buf, len);
	free(buf);
	if (rc) {
		logf_(o, PW_DAEMON_LOG_ERROR, "%s", err ? err->msg : "bad request");
		return rc;
	}
	log_attrs(o, &req);
	rc = pw_daemon_resolve(o, &req, peer_ip, peer_port, &gitdir, &msg, err);
	if (rc) {
		if (msg)
			send_err(out_fd, msg, req.path);
		pw_daemon_request_free(&req);
		return rc;
	}
	rc = serve(o, &req, gitdir, in_fd, out_fd, err);
	if (rc)
		logf_(o, PW_DAEMON_LOG_ERROR, "%s: %s", service_names[req.service],
		      err ? err->msg : "");
	free(gitdir);
	pw_daemon_request_free(&req);
	return rc;
}
