/* GIT_TRACE_CURL (see trace-curl.h). The destination follows Git's trace
 * keys: "1"/"true"/"2" stderr, a single digit a descriptor, an absolute
 * path a file appended to; GIT_CURL_VERBOSE sends the trace to stderr.
 * Each line gets Git's time-and-place prefix unless GIT_TRACE_BARE. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/config.h"
#include "trace-curl.h"
#include "trace-packet.h"

static int trace_fd = -1;
static int trace_bare;

static void write_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(trace_fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void trace_out(void *ctx, const char *line, size_t len)
{
	char buf[8192];
	size_t n = 0;

	(void)ctx;
	if (!trace_bare)
		n = pw_cli_trace_prefix(buf, sizeof(buf), "http.c:0");
	if (n + len <= sizeof(buf)) {
		memcpy(buf + n, line, len);
		write_all(buf, n + len); /* one write: lines of threads do not mix */
	} else {
		write_all(buf, n);
		write_all(line, len);
	}
}

void pw_cli_trace_curl_setup(struct pw_http_env *http)
{
	const char *v = getenv("GIT_TRACE_CURL"), *bare = getenv("GIT_TRACE_BARE");
	int b = 0, own;

	if (getenv("GIT_CURL_VERBOSE"))
		v = "1";
	if ((trace_fd = pw_cli_trace_dest("GIT_TRACE_CURL", v, &own)) < 0)
		return;
	trace_bare = bare && !pw_config_parse_bool(bare, &b) && b;
	http->trace = trace_out;
	http->trace_ctx = NULL;
}
