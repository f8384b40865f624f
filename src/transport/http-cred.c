/* The credential protocol as Git speaks it to credential helpers (get,
 * store, erase) and askpass, and the cache of credentials that worked,
 * kept across the connections of one process (pw_http_env.cache). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/transport.h"
#include "transport/http-priv.h"
#include "util/spawn.h"

static int cred_line(struct pw_buf *b, const char *k, const char *v)
{
	if (!v)
		return 0;
	if (strchr(v, '\n'))
		return PW_EINVAL;
	return pw_buf_addf(b, "%s=%s\n", k, v);
}

/* The helper's command line ("!cmd" through the shell, an absolute path,
 * else "git credential-<name>", with the action appended) and what it
 * reads: the credential so far. 0 or PW_ENOMEM / PW_EINVAL (a newline in
 * a value). */
static int helper_request(struct http *h, const char *helper, const char *action,
                          struct pw_buf *cmd, struct pw_buf *in)
{
	int rc;

	if (helper[0] == '!')
		rc = pw_buf_adds(cmd, helper + 1);
	else if (helper[0] == '/')
		rc = pw_buf_adds(cmd, helper);
	else
		rc = pw_buf_addf(cmd, "git credential-%s", helper);
	if (!rc)
		rc = pw_buf_addf(cmd, " %s", action);
	if (!rc)
		rc = cred_line(in, "protocol", h->cred.protocol);
	if (!rc)
		rc = cred_line(in, "host", h->cred.host);
	if (!rc && h->set.use_http_path)
		rc = cred_line(in, "path", h->cred.path);
	if (!rc)
		rc = cred_line(in, "username", h->cred.username);
	if (!rc)
		rc = cred_line(in, "password", h->cred.password);
	return rc;
}

/* Run cmd through the shell with in on its stdin and its stdout (at most
 * CRED_MAX bytes of it) into out, and wait for it. Its stdin is a socket
 * so that a helper which does not read it cannot raise SIGPIPE here (send
 * with MSG_NOSIGNAL). 0, PW_ENOMEM or PW_EIO. */
static int helper_exchange(const struct pw_buf *cmd, const struct pw_buf *in, struct pw_buf *out)
{
	int to[2] = {-1, -1}, rc;
	struct pw_spawn_fd map[1];
	struct pw_spawn sp;
	const char *argv[4] = {"/bin/sh", "-c", cmd->data, NULL};
	size_t off = 0;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, to))
		return PW_EIO;
	map[0] = (struct pw_spawn_fd){0, to[0]};
	memset(&sp, 0, sizeof(sp));
	sp.argv = argv;
	sp.flags = PW_SPAWN_PIPE_OUT;
	sp.fds = map;
	sp.nr_fds = 1;
	rc = pw_spawn_start(&sp, NULL);
	close(to[0]);
	if (rc) {
		close(to[1]);
		return rc == PW_ENOMEM ? rc : PW_EIO;
	}
	while (off < in->len) {
		ssize_t w = send(to[1], in->data + off, in->len - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	close(to[1]);
	for (;;) {
		char buf[4096];
		ssize_t r = read(sp.out_fd, buf, sizeof(buf));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out->len + (size_t)r > CRED_MAX)
			continue; /* drain, keep what fits */
		if (pw_buf_add(out, buf, (size_t)r))
			break;
	}
	close(sp.out_fd);
	pw_spawn_wait(sp.pid, NULL, NULL, NULL);
	return 0;
}

/* The helper's "key=value" lines up to a blank one: username and password
 * taken, 1 when it says quit. */
static int helper_reply(struct http *h, char *line)
{
	char *nl;
	int rc = 0;

	while (*line && (nl = strchr(line, '\n'))) {
		char *eq, **dst = NULL;

		*nl = 0;
		if (!*line)
			break;
		if ((eq = strchr(line, '='))) {
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
				if (!(*dst = strdup(eq + 1)))
					return PW_ENOMEM;
			}
		}
		line = nl + 1;
	}
	return rc;
}

/* Run one helper as Git does, for action ("get", "store", "erase"); with
 * want_reply, what it answers fills the credential. */
static int run_helper(struct http *h, const char *helper, const char *action, int want_reply)
{
	struct pw_buf cmd = PW_BUF_INIT, in = PW_BUF_INIT, out = PW_BUF_INIT;
	int rc = helper_request(h, helper, action, &cmd, &in);

	if (!rc)
		rc = helper_exchange(&cmd, &in, &out);
	if (!rc && want_reply)
		rc = helper_reply(h, out.data);
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
int pw_http__cred_fill(struct http *h, struct pw_error *err)
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

	pw_http__cred_free(&c);
	a->protocol = a->host = a->path = a->username = a->password = NULL;
}

void pw_http_cache_free(struct pw_http_cache *a)
{
	if (!a)
		return;
	auth_clear(a);
	pw_http__disc_clear(a);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

int pw_http__same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Is what a holds for the server (and path, with useHttpPath) of h? */
static int auth_for(const struct pw_http_cache *a, const struct http *h)
{
	return a->username && a->password && pw_http__same(a->protocol, h->cred.protocol) &&
	       pw_http__same(a->host, h->cred.host) &&
	       (!h->set.use_http_path || pw_http__same(a->path, h->cred.path));
}

/* A new connection starts with the credentials that worked before, unless
 * its URL names another user or has a password of its own. */
int pw_http__auth_take(struct http *h)
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
void pw_http__auth_approve(struct http *h)
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
		if (pw_http__dup_to(&a->protocol, h->cred.protocol) ||
		    pw_http__dup_to(&a->host, h->cred.host) ||
		    pw_http__dup_to(&a->path, h->cred.path) ||
		    pw_http__dup_to(&a->username, h->cred.username) ||
		    pw_http__dup_to(&a->password, h->cred.password))
			auth_clear(a);
	}
	a->authmask = h->authmask;
	pthread_mutex_unlock(&a->mu);
}

/* Credentials the server refused: Git's credential_reject, and forgotten. */
void pw_http__auth_reject(struct http *h)
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
