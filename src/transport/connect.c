/* Choosing the transport for an address and the generic parts of a
 * connection's life. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/transport.h"
#include "transport/transport-priv.h"

static const char *scheme_name(enum pw_url_scheme s)
{
	switch (s) {
	case PW_URL_GIT:
		return "git";
	case PW_URL_HTTP:
		return "http";
	case PW_URL_HTTPS:
		return "https";
	default:
		return "helper";
	}
}

/* The name protocol.<name>.allow knows the transport by. */
static const char *policy_name(const struct pw_url *u)
{
	switch (u->scheme) {
	case PW_URL_LOCAL:
	case PW_URL_FILE:
		return "file";
	case PW_URL_SSH:
		return "ssh";
	case PW_URL_HELPER:
		return u->helper ? u->helper : "";
	default:
		return scheme_name(u->scheme);
	}
}

static const struct pw_config *policy_config(const struct pw_transport_opts *o)
{
	return o->config ? o->config : o->git_proxy_config;
}

int pw_transport_connect(struct pw_conn **out, const char *url,
                         const struct pw_transport_opts *opts, struct pw_error *err)
{
	const char *service = opts && opts->service ? opts->service : "git-upload-pack";
	const char *cmd = opts && opts->command && *opts->command ? opts->command : service;
	int version = opts ? opts->protocol_version : 0;
	static const struct pw_ssh_opts no_ssh;
	struct pw_url u;
	struct pw_conn_impl *impl;
	struct pw_conn *c;
	int rc;

	*out = NULL;
	if ((rc = pw_url_parse(&u, url, err)))
		return rc;
	impl = calloc(1, sizeof(*impl));
	c = impl ? &impl->pub : NULL;
	if (!c) {
		pw_url_free(&u);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	c->in_fd = c->out_fd = -1;
	c->scheme = u.scheme;
	if ((rc = pw_protocol_check_allowed(policy_name(&u), opts ? policy_config(opts) : NULL,
	                                    opts ? opts->protocol : NULL, err))) {
		pw_url_free(&u);
		free(c);
		return rc;
	}
	switch (u.scheme) {
	case PW_URL_LOCAL:
	case PW_URL_FILE:
		rc = pw_transport__local(c, u.path, cmd, version, err);
		break;
	case PW_URL_SSH:
		rc = pw_transport__ssh(c, &u, cmd, version, opts ? &opts->ssh : &no_ssh, err);
		break;
	case PW_URL_GIT:
		rc = pw_transport__git(c, &u, cmd, version, opts, err);
		break;
	case PW_URL_HTTP:
	case PW_URL_HTTPS:
		rc = pw_transport__http(c, &u, url, service, version, opts, err);
		break;
	case PW_URL_HELPER:
		rc = pw_transport__helper(c, &u, service, cmd, version, opts, err);
		break;
	default:
		rc = pw_error_set(err, PW_EUNSUPPORTED, "transport '%s' not supported yet",
		                  scheme_name(u.scheme));
		break;
	}
	pw_url_free(&u);
	if (rc) {
		free(c);
		return rc;
	}
	*out = c;
	return 0;
}

int pw_conn_end_request(struct pw_conn *c, struct pw_error *err)
{
	if (pw_conn__impl(c)->ops && pw_conn__impl(c)->ops->end_request)
		return pw_conn__impl(c)->ops->end_request(c, err);
	return 0;
}

void pw_conn_close_write(struct pw_conn *c)
{
	if (c->out_fd >= 0) {
		close(c->out_fd);
		c->out_fd = -1;
	}
}

int pw_conn_finish(struct pw_conn *c, int *status, struct pw_error *err)
{
	if (pw_conn__impl(c)->finished) {
		if (status)
			*status = pw_conn__impl(c)->status;
		return 0;
	}
	pw_conn__impl(c)->finished = 1;
	if (pw_conn__impl(c)->ops && pw_conn__impl(c)->ops->finish)
		return pw_conn__impl(c)->ops->finish(c, status, err);
	return 0;
}

void pw_conn_free(struct pw_conn *c)
{
	if (!c)
		return;
	pw_conn_finish(c, NULL, NULL);
	if (pw_conn__impl(c)->ops && pw_conn__impl(c)->ops->free)
		pw_conn__impl(c)->ops->free(c);
	free(c);
}
