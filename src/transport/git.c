/* The git:// transport: a TCP connection to a git daemon (port 9418), or a
 * proxy command (GIT_PROXY_COMMAND / core.gitProxy, run as "<cmd> host
 * port") whose stdin/stdout carry the stream; then one request packet
 * "git-upload-pack /path\0host=H[:port]\0[\0version=N\0]". */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/pkt.h"
#include "packwire/transport.h"
#include "transport/transport-priv.h"

#define GIT_DEFAULT_PORT "9418"

static int sock_finish(struct pw_conn *c, int *status, struct pw_error *err)
{
	(void)err;
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->in_fd >= 0)
		close(c->in_fd);
	c->in_fd = c->out_fd = -1;
	pw_conn__impl(c)->status = 0;
	if (status)
		*status = 0;
	return 0;
}

static const struct pw_conn_ops sock_ops = {
        .finish = sock_finish,
};

struct proxy_match {
	const char *host;
	size_t hostlen;
	char *cmd; /* first match; "" for "none" */
	int found;
};

/* Git's rule: "cmd for domain" matches host == domain or host ending in
 * ".domain"; "cmd" alone matches every host; the first match wins. */
static int proxy_entry(const struct pw_config_entry *e, void *data)
{
	struct proxy_match *m = data;
	const char *v = e->value, *for_pos;
	size_t matchlen;

	if (m->found || !v)
		return 0;
	for_pos = strstr(v, " for ");
	if (!for_pos) {
		matchlen = strlen(v);
	} else {
		const char *dom = for_pos + 5;
		size_t dl = strlen(dom);

		if (m->hostlen < dl || strcmp(m->host + m->hostlen - dl, dom) ||
		    (m->hostlen != dl && m->host[m->hostlen - dl - 1] != '.'))
			return 0;
		matchlen = (size_t)(for_pos - v);
	}
	if (matchlen == 4 && !memcmp(v, "none", 4))
		matchlen = 0;
	if (!(m->cmd = malloc(matchlen + 1)))
		return PW_ENOMEM;
	memcpy(m->cmd, v, matchlen);
	m->cmd[matchlen] = 0;
	m->found = 1;
	return 0;
}

int pw_transport__git_proxy(char **out, const struct pw_config *cfg, const char *host)
{
	struct proxy_match m = {host, strlen(host), NULL, 0};
	int rc;

	*out = NULL;
	if (!cfg)
		return 0;
	rc = pw_config_get_all(cfg, "core.gitproxy", proxy_entry, &m);
	if (rc && rc != PW_ENOTFOUND) {
		free(m.cmd);
		return rc;
	}
	*out = m.cmd;
	return 0;
}

static int tcp_connect(const char *host, const char *port, int *fd_out, struct pw_error *err)
{
	struct pw_buf why = PW_BUF_INIT;
	struct addrinfo hints, *ai, *p;
	int rc, fd = -1, n = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	if ((rc = getaddrinfo(host, port, &hints, &ai)))
		return pw_error_set(err, PW_EIO, "unable to look up %s (port %s) (%s)", host, port,
		                    gai_strerror(rc));
	for (p = ai; p; p = p->ai_next, n++) {
		char addr[NI_MAXHOST];

		fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol);
		if (fd >= 0 && !connect(fd, p->ai_addr, p->ai_addrlen))
			break;
		if (getnameinfo(p->ai_addr, p->ai_addrlen, addr, sizeof(addr), NULL, 0,
		                NI_NUMERICHOST))
			snprintf(addr, sizeof(addr), "?");
		/* Git's wording: "<host>[<n>: <addr>]: errno=<why>" per address */
		pw_buf_addf(&why, "%s[%d: %s]: errno=%s\n", host, n, addr, strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0) {
		rc = pw_error_set(err, PW_EIO, "unable to connect to %s:\n%s", host, why.data);
		pw_buf_free(&why);
		return rc;
	}
	pw_buf_free(&why);
	*fd_out = fd;
	return 0;
}

int pw_transport__git(struct pw_conn *c, const struct pw_url *u, const char *service, int version,
                      const struct pw_transport_opts *opts, struct pw_error *err)
{
	const char *port = u->port ? u->port : GIT_DEFAULT_PORT;
	struct pw_buf req = PW_BUF_INIT, host = PW_BUF_INIT;
	char *proxy = NULL;
	int rc, fd = -1;

	if (opts && opts->git_proxy) {
		if (!(proxy = strdup(opts->git_proxy)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	} else if (opts &&
	           (rc = pw_transport__git_proxy(&proxy, opts->git_proxy_config, u->host))) {
		return pw_error_set(err, rc, "out of memory");
	}
	if (proxy && *proxy) {
		char *argv[4] = {proxy, u->host, (char *)port, NULL};

		rc = pw_transport__spawn(c, argv, err);
	} else {
		rc = tcp_connect(u->host, port, &fd, err);
		if (!rc) {
			c->in_fd = fd;
			/* the two ends are closed separately by the generic code */
			if ((c->out_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
				rc = pw_error_set(err, PW_EIO, "dup: %s", strerror(errno));
				close(fd);
				c->in_fd = -1;
			} else {
				pw_conn__impl(c)->ops = &sock_ops;
			}
		}
	}
	free(proxy);
	if (rc)
		return rc;
	/* the host as the URL spelled it, brackets and port included (as Git) */
	if ((strchr(u->host, ':') ? pw_buf_addf(&host, "[%s]", u->host)
	                          : pw_buf_adds(&host, u->host)) ||
	    (u->port && pw_buf_addf(&host, ":%s", u->port)) || pw_buf_addf(&req, "%04x", 0) ||
	    pw_buf_addf(&req, "%s %s", service, u->path) || pw_buf_addch(&req, 0) ||
	    pw_buf_addf(&req, "host=%s", host.data) || pw_buf_addch(&req, 0) ||
	    (version > 0 && (pw_buf_addch(&req, 0) || pw_buf_addf(&req, "version=%d", version) ||
	                     pw_buf_addch(&req, 0)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	if (req.len > 4 + PW_PKT_DATA_MAX) {
		rc = pw_error_set(err, PW_EINVAL, "request too long for '%s'", u->path);
		goto fail;
	}
	{
		char hdr[5];

		snprintf(hdr, sizeof(hdr), "%04zx", req.len);
		memcpy(req.data, hdr, 4);
	}
	if ((rc = pw_write_full(c->out_fd, req.data, req.len, err)))
		goto fail;
	pw_buf_free(&req);
	pw_buf_free(&host);
	return 0;
fail:
	pw_buf_free(&req);
	pw_buf_free(&host);
	if (pw_conn__impl(c)->ops && pw_conn__impl(c)->ops->finish)
		pw_conn__impl(c)->ops->finish(c, NULL, NULL);
	pw_conn__impl(c)->ops = NULL;
	return rc;
}
