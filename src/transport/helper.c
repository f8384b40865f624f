/* Remote helpers as a transport: find and start git-remote-<name>, read its
 * capabilities, and turn "connect" (a full-duplex stream) and
 * "stateless-connect" (v2 requests each answered with a response-end
 * packet, as over HTTP) into a struct pw_conn. Helpers offering neither
 * leave a conn without a stream whose helper the client takes over. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "transport/helper.h"
#include "transport/transport-priv.h"
#include "util/spawn.h"

static const struct {
	const char *name;
	unsigned bit;
} known_caps[] = {
        {"fetch", PW_HELPER_FETCH},
        {"push", PW_HELPER_PUSH},
        {"import", PW_HELPER_IMPORT},
        {"export", PW_HELPER_EXPORT},
        {"connect", PW_HELPER_CONNECT},
        {"stateless-connect", PW_HELPER_STATELESS_CONNECT},
        {"option", PW_HELPER_OPTION},
        {"check-connectivity", PW_HELPER_CHECK_CONNECT},
        {"object-format", PW_HELPER_OBJECT_FORMAT},
        {"signed-tags", PW_HELPER_SIGNED_TAGS},
        {"no-private-update", PW_HELPER_NO_PRIVATE_UPDATE},
        {"bidi-import", PW_HELPER_BIDI_IMPORT},
};

int pw_helper_parse_capability(struct pw_helper *h, const char *line, size_t len,
                               struct pw_error *err)
{
	int mandatory = 0;
	size_t i;

	if (len && line[0] == '*') {
		mandatory = 1;
		line++;
		len--;
	}
	for (i = 0; i < sizeof(known_caps) / sizeof(known_caps[0]); i++)
		if (strlen(known_caps[i].name) == len && !memcmp(line, known_caps[i].name, len)) {
			h->caps |= known_caps[i].bit;
			return 0;
		}
	if (len > 8 && !memcmp(line, "refspec ", 8)) {
		char **n, *r;

		if (h->nr_refspecs >= 1024)
			return pw_error_set(err, PW_ETOOBIG,
			                    "remote helper '%s': too many refspecs", h->name);
		n = realloc(h->refspecs, (h->nr_refspecs + 1) * sizeof(*n));
		if (!n)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		h->refspecs = n;
		if (!(r = malloc(len - 8 + 1)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		memcpy(r, line + 8, len - 8);
		r[len - 8] = 0;
		h->refspecs[h->nr_refspecs++] = r;
		return 0;
	}
	if ((len > 13 && !memcmp(line, "import-marks ", 13)) ||
	    (len > 13 && !memcmp(line, "export-marks ", 13))) {
		char **slot = line[0] == 'i' ? &h->import_marks : &h->export_marks;

		free(*slot);
		if (!(*slot = strndup(line + 13, len - 13)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		return 0;
	}
	/* get and the like: nothing we rely on */
	if (mandatory)
		return pw_error_set(
		        err, PW_EUNSUPPORTED,
		        "unknown mandatory capability %.*s; this remote helper probably "
		        "needs newer version of Git",
		        (int)(len > 200 ? 200 : len), line);
	return 0;
}

static void keep_output(void *ctx, const char *data, size_t len)
{
	struct pw_buf *b = ctx;

	if (b->len + len < 4096)
		pw_buf_add(b, data, len);
}

/* `git --exec-path`, malloc'd, or NULL. */
static char *git_exec_path(void)
{
	static const char *const argv[] = {"git", "--exec-path", NULL};
	struct pw_buf out = PW_BUF_INIT;
	struct pw_spawn_io io = {NULL, 0, keep_output, NULL, &out};
	struct pw_spawn sp;
	char *dir = NULL;
	int st;

	memset(&sp, 0, sizeof(sp));
	sp.argv = argv;
	sp.flags = PW_SPAWN_PATH;
	if (!pw_spawn_run(&sp, &io, &st, NULL)) {
		while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == '\r'))
			pw_buf_setlen(&out, out.len - 1);
		if (out.len)
			dir = strdup(out.data);
	}
	pw_buf_free(&out);
	return dir;
}

static int valid_name(const char *name)
{
	const char *p;

	if (!*name)
		return 0;
	for (p = name; *p; p++)
		if (*p == '/' || *p == '\\' || (unsigned char)*p < 0x20)
			return 0;
	return 1;
}

/* Our environment with GIT_DIR=<git_dir> (when given) and
 * GIT_PROTOCOL=version=<version> (when > 0). */
static int spawn_helper(struct pw_helper *h, const char *prog, int search, char *const *argv,
                        const char *git_dir, int version, struct pw_error *err)
{
	struct pw_buf dir_var = PW_BUF_INIT;
	const char *env[3];
	struct pw_spawn sp;
	char proto[64];
	size_t n = 0;
	int rc;

	if (git_dir) {
		if (pw_buf_adds(&dir_var, "GIT_DIR=") || pw_buf_adds(&dir_var, git_dir)) {
			pw_buf_free(&dir_var);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		env[n++] = dir_var.data;
	}
	if (version > 0) {
		snprintf(proto, sizeof(proto), "GIT_PROTOCOL=version=%d", version);
		env[n++] = proto;
	}
	env[n] = NULL;
	memset(&sp, 0, sizeof(sp));
	sp.argv = (const char *const *)argv;
	sp.prog = prog;
	sp.flags = PW_SPAWN_PIPE_IN | PW_SPAWN_PIPE_OUT | (search ? PW_SPAWN_PATH : 0);
	sp.env = env;
	rc = pw_spawn_start(&sp, err);
	pw_buf_free(&dir_var);
	if (rc && sp.errnum == ENOENT)
		return pw_error_set(err, PW_EUNSUPPORTED, "unable to find remote helper for '%s'",
		                    h->name);
	if (rc)
		return rc;
	h->pid = sp.pid;
	h->out_fd = sp.in_fd;
	h->in_fd = sp.out_fd;
	return 0;
}

int pw_helper_write(struct pw_helper *h, const char *s, size_t n, struct pw_error *err)
{
	while (n) {
		ssize_t w = h->out_fd >= 0 ? write(h->out_fd, s, n) : -1;

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return pw_error_set(err, PW_EIO, "remote helper '%s' aborted session",
			                    h->name);
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Byte by byte: what follows a "connect" answer is the service's stream,
 * which must stay unread. */
int pw_helper_read_line(struct pw_helper *h, struct pw_error *err)
{
	pw_buf_reset(&h->line);
	for (;;) {
		char ch;
		ssize_t r;

		if (h->timeout_ms > 0 && h->in_fd >= 0) {
			struct pollfd p = {.fd = h->in_fd, .events = POLLIN};
			int n = poll(&p, 1, h->timeout_ms);

			if (n < 0 && errno == EINTR)
				continue;
			if (n == 0) {
				/* stopped, so that nothing it does later lands half-done */
				if (h->pid > 0 && !h->reaped)
					pw_spawn_kill(h->pid, SIGTERM);
				return pw_error_set(err, PW_EIO,
				                    "remote helper '%s' printed nothing for %d "
				                    "seconds (helperTimeout): stopped it",
				                    h->name, h->timeout_ms / 1000);
			}
		}
		r = read(h->in_fd, &ch, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return pw_error_set(err, PW_EIO, "reading from remote helper '%s': %s",
			                    h->name, strerror(errno));
		if (r == 0)
			return pw_error_set(err, PW_EPROTO, "remote helper '%s' aborted session",
			                    h->name);
		if (ch == '\n')
			return 0;
		if (h->line.len >= PW_HELPER_LINE_MAX)
			return pw_error_set(
			        err, PW_ETOOBIG,
			        "remote helper '%s' printed a line longer than %d bytes", h->name,
			        PW_HELPER_LINE_MAX);
		if (pw_buf_addch(&h->line, ch))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
}

int pw_helper_option(struct pw_helper *h, const char *name, const char *value, struct pw_error *err)
{
	struct pw_buf cmd = PW_BUF_INIT;
	int rc;

	if (!(h->caps & PW_HELPER_OPTION))
		return 1;
	if (pw_buf_addf(&cmd, "option %s %s\n", name, value)) {
		pw_buf_free(&cmd);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	rc = pw_helper_write(h, cmd.data, cmd.len, err);
	pw_buf_free(&cmd);
	if (rc || (rc = pw_helper_read_line(h, err)))
		return rc;
	if (!strcmp(h->line.data, "ok"))
		return 0;
	if (!strcmp(h->line.data, "unsupported"))
		return 1;
	if (!strncmp(h->line.data, "error", 5))
		return pw_error_set(err, PW_EINVAL, "remote helper '%s' refused option %s: %s",
		                    h->name, name,
		                    h->line.data[5] == ' ' ? h->line.data + 6 : h->line.data);
	return pw_error_set(err, PW_EPROTO,
	                    "remote helper '%s': unexpected answer to option %s: %.200s", h->name,
	                    name, h->line.data);
}

int pw_helper_finish(struct pw_helper *h, int *status, struct pw_error *err)
{
	int rc;

	if (h->out_fd >= 0)
		close(h->out_fd);
	if (h->in_fd >= 0)
		close(h->in_fd);
	h->out_fd = h->in_fd = -1;
	if (h->pid > 0 && !h->reaped) {
		h->reaped = 1;
		if ((rc = pw_spawn_wait(h->pid, &h->status, NULL, err)))
			return rc;
	}
	if (status)
		*status = h->status;
	return 0;
}

void pw_helper_free(struct pw_helper *h)
{
	size_t i;

	if (!h)
		return;
	pw_helper_finish(h, NULL, NULL);
	for (i = 0; i < h->nr_refspecs; i++)
		free(h->refspecs[i]);
	free(h->refspecs);
	free(h->import_marks);
	free(h->export_marks);
	free(h->name);
	pw_buf_free(&h->line);
	free(h);
}

/* Seconds from remote.<name>.helperTimeout or packwire.helperTimeout, in ms. */
static int helper_timeout(const struct pw_transport_opts *opts)
{
	const struct pw_config *cfg;
	char key[512];
	int v = 0;

	if (!opts)
		return 0;
	cfg = opts->config ? opts->config : opts->git_proxy_config;
	if (!cfg)
		return 0;
	snprintf(key, sizeof(key), "remote.%s.helperTimeout",
	         opts->remote_name ? opts->remote_name : "");
	if ((!opts->remote_name || pw_config_get_int(cfg, key, &v, NULL)) &&
	    pw_config_get_int(cfg, "packwire.helperTimeout", &v, NULL))
		return 0;
	return v > 0 && v < 86400 ? v * 1000 : 0;
}

int pw_helper_start(struct pw_helper **out, const struct pw_url *u,
                    const struct pw_transport_opts *opts, int version, struct pw_error *err)
{
	const struct pw_protocol_env *pe = opts ? opts->protocol : NULL;
	struct pw_buf prog = PW_BUF_INIT;
	const char *remote = opts && opts->remote_name ? opts->remote_name : u->path;
	char *exec_dir = NULL;
	char *argv[4];
	struct pw_helper *h;
	int rc, search = 1;

	*out = NULL;
	if (!u->helper || !valid_name(u->helper))
		return pw_error_set(err, PW_EINVAL, "invalid remote helper name '%s'",
		                    u->helper ? u->helper : "");
	if (!(h = calloc(1, sizeof(*h))) || !(h->name = strdup(u->helper))) {
		free(h);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	h->in_fd = h->out_fd = -1;
	pw_buf_init(&h->line, 0);
	/* where Git looks: its exec path first, then PATH */
	exec_dir = pe && pe->exec_path ? strdup(pe->exec_path) : git_exec_path();
	if (exec_dir && *exec_dir) {
		if (pw_buf_addf(&prog, "%s/git-remote-%s", exec_dir, h->name)) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto fail;
		}
		if (!access(prog.data, X_OK))
			search = 0;
		else
			pw_buf_reset(&prog);
	}
	if (search && pw_buf_addf(&prog, "git-remote-%s", h->name)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	argv[0] = prog.data;
	argv[1] = (char *)remote;
	argv[2] = u->path;
	argv[3] = NULL;
	h->timeout_ms = helper_timeout(opts);
	if ((rc = spawn_helper(h, prog.data, search, argv, opts ? opts->git_dir : NULL, version,
	                       err)))
		goto fail;
	if ((rc = pw_helper_write(h, "capabilities\n", 13, err)))
		goto fail;
	for (;;) {
		if ((rc = pw_helper_read_line(h, err)))
			goto fail;
		if (!h->line.len)
			break;
		if ((rc = pw_helper_parse_capability(h, h->line.data, h->line.len, err)))
			goto fail;
	}
	free(exec_dir);
	pw_buf_free(&prog);
	*out = h;
	return 0;
fail:
	free(exec_dir);
	pw_buf_free(&prog);
	pw_helper_free(h);
	return rc;
}

/* ---- the helper as a connection ----------------------------------------- */

static int helper_conn_finish(struct pw_conn *c, int *status, struct pw_error *err)
{
	struct pw_helper *h = pw_conn__impl(c)->priv;

	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->in_fd >= 0)
		close(c->in_fd);
	c->out_fd = c->in_fd = -1;
	if (!h) {
		if (status)
			*status = pw_conn__impl(c)->status;
		return 0;
	}
	return pw_helper_finish(h, status, err);
}

static void helper_conn_free(struct pw_conn *c)
{
	pw_helper_free(pw_conn__impl(c)->priv);
	pw_conn__impl(c)->priv = NULL;
}

static const struct pw_conn_ops helper_conn_ops = {
        .finish = helper_conn_finish,
        .free = helper_conn_free,
};

/* "connect"/"stateless-connect": 1 established, 0 "fallback", else error. */
static int run_connect(struct pw_helper *h, const char *verb, const char *service,
                       struct pw_error *err)
{
	struct pw_buf cmd = PW_BUF_INIT;
	int rc;

	if (pw_buf_addf(&cmd, "%s %s\n", verb, service)) {
		pw_buf_free(&cmd);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	rc = pw_helper_write(h, cmd.data, cmd.len, err);
	pw_buf_free(&cmd);
	if (rc || (rc = pw_helper_read_line(h, err)))
		return rc;
	if (!h->line.len)
		return 1;
	if (!strcmp(h->line.data, "fallback"))
		return 0;
	return pw_error_set(err, PW_EPROTO, "unknown response to %s: %.200s", verb, h->line.data);
}

int pw_transport__helper(struct pw_conn *c, const struct pw_url *u, const char *service,
                         const char *cmd, int version, const struct pw_transport_opts *opts,
                         struct pw_error *err)
{
	struct pw_helper *h;
	int rc;

	if ((rc = pw_helper_start(&h, u, opts, version, err)))
		return rc;
	pw_conn__impl(c)->priv = h;
	pw_conn__impl(c)->ops = &helper_conn_ops;
	if (cmd && strcmp(cmd, service) && (h->caps & PW_HELPER_OPTION) &&
	    (h->caps & (PW_HELPER_CONNECT | PW_HELPER_STATELESS_CONNECT))) {
		rc = pw_helper_option(h, "servpath", cmd, err);
		if (rc < 0)
			goto fail;
	}
	rc = 0;
	if (h->caps & PW_HELPER_CONNECT) {
		if ((rc = run_connect(h, "connect", service, err)) < 0)
			goto fail;
	} else if ((h->caps & PW_HELPER_STATELESS_CONNECT) && version == 2 &&
	           !strcmp(service, "git-upload-pack")) {
		if ((rc = run_connect(h, "stateless-connect", service, err)) < 0)
			goto fail;
		c->stateless = rc == 1;
	}
	if (rc == 1) {
		c->in_fd = h->in_fd;
		c->out_fd = h->out_fd;
		h->in_fd = h->out_fd = -1;
	}
	/* else no stream: the client drives the helper's own commands */
	return 0;
fail:
	helper_conn_free(c);
	pw_conn__impl(c)->ops = NULL;
	return rc;
}

struct pw_helper *pw_transport__take_helper(struct pw_conn *c)
{
	struct pw_helper *h;

	if (pw_conn__impl(c)->ops != &helper_conn_ops || c->in_fd >= 0)
		return NULL;
	h = pw_conn__impl(c)->priv;
	pw_conn__impl(c)->priv = NULL;
	return h;
}
