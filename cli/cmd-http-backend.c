/* packwire http-backend: the CGI program, a drop-in for git http-backend.
 * It reads the CGI environment (GIT_PROJECT_ROOT, PATH_INFO, QUERY_STRING,
 * REQUEST_METHOD, CONTENT_TYPE, CONTENT_LENGTH, ...), passes the request to
 * the library's handler with stdin as the body, and writes the response
 * ("Status:" and header lines, a blank line, the body) to stdout. Refusals
 * are logged on stderr, which the web server puts in its error log. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/http.h"
#include "packwire/packwire.h"

static const char usage_text[] = "packwire http-backend (run as a CGI program)";

static long read_stdin(void *ctx, void *buf, size_t len)
{
	(void)ctx;
	for (;;) {
		ssize_t n = read(0, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		return (long)n;
	}
}

static int write_all(const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(1, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int cgi_start(void *ctx, int status, const char *reason, const struct pw_http_header *h,
                     size_t nr)
{
	char line[512];
	size_t i;
	int n;

	(void)ctx;
	/* as git http-backend: no Status line for 200 */
	if (status != 200) {
		n = snprintf(line, sizeof(line), "Status: %d %s\r\n", status, reason);
		if (write_all(line, (size_t)n))
			return -1;
	}
	for (i = 0; i < nr; i++) {
		n = snprintf(line, sizeof(line), "%s: %s\r\n", h[i].name, h[i].value);
		if (n < 0 || (size_t)n >= sizeof(line) || write_all(line, (size_t)n))
			return -1;
	}
	return write_all("\r\n", 2);
}

static int cgi_write(void *ctx, const void *data, size_t len)
{
	(void)ctx;
	return write_all(data, len);
}

/* An unsigned decimal environment value; 0 and *ok = 0 when unset or bad. */
static unsigned long long env_ull(const char *name, int *ok)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long n;

	*ok = 0;
	if (!v || !*v)
		return 0;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || *v == '-')
		return 0;
	*ok = 1;
	return n;
}

int cmd_http_backend(int argc, char **argv)
{
	struct pw_http_request req;
	struct pw_http_sink sink = {cgi_start, cgi_write, NULL};
	struct pw_error err;
	const char *v;
	int ok, rc;

	(void)argv;
	if (argc > 1)
		return pw_cli_usage(usage_text);
	pw_http_request_init(&req);
	req.method = getenv("REQUEST_METHOD");
	req.path_info = getenv("PATH_INFO");
	req.path_translated = getenv("PATH_TRANSLATED");
	req.query = getenv("QUERY_STRING");
	req.server_protocol = getenv("SERVER_PROTOCOL");
	req.content_type = getenv("CONTENT_TYPE");
	req.content_encoding = getenv("HTTP_CONTENT_ENCODING");
	/* as Git: a GIT_PROTOCOL the web server sets (even empty) wins over
	 * the client's Git-Protocol header */
	req.git_protocol = getenv("GIT_PROTOCOL");
	if (!req.git_protocol)
		req.git_protocol = getenv("HTTP_GIT_PROTOCOL");
	req.ref_namespace = getenv("GIT_NAMESPACE");
	req.committer_name = getenv("GIT_COMMITTER_NAME");
	req.committer_email = getenv("GIT_COMMITTER_EMAIL");
	req.committer_date = getenv("GIT_COMMITTER_DATE");
	req.remote_user = getenv("REMOTE_USER");
	req.remote_addr = getenv("REMOTE_ADDR");
	req.project_root = getenv("GIT_PROJECT_ROOT");
	req.export_all = getenv("GIT_HTTP_EXPORT_ALL") != NULL;
	req.agent = getenv("GIT_USER_AGENT");
	if ((v = getenv("CONTENT_LENGTH")) && *v) {
		unsigned long long n = env_ull("CONTENT_LENGTH", &ok);

		/* an error only for a service's POST, where Git reads it */
		if (!ok || n > (unsigned long long)1 << 62)
			req.content_length_bad = v;
		else
			req.content_length = (long long)n;
	}
	req.max_request_buffer = env_ull("GIT_HTTP_MAX_REQUEST_BUFFER", &ok);
	if ((v = getenv("GIT_HTTP_MAX_REQUEST_BUFFER")) && *v && !ok)
		return pw_cli_fatal("failed to parse GIT_HTTP_MAX_REQUEST_BUFFER: %s", v);
	req.read_body = read_stdin;
	req.err_fd = 2;

	signal(SIGPIPE, SIG_IGN);
	req.pack_cache = pw_cli_pack_cache_from_config();
	rc = pw_http_serve(&req, &sink, &err);
	pw_pack_cache_free(req.pack_cache);
	if (rc) {
		fprintf(stderr, "fatal: %s\n", err.msg);
		/* a refusal was answered (as git, exit 0); a failed service is 1 */
		return err.code == PW_ENOTFOUND || err.code == PW_EUNSUPPORTED ||
		                       err.code == PW_EINVAL || err.code == PW_ETOOBIG
		               ? 0
		               : 1;
	}
	return 0;
}
