/* GIT_TRACE2_EVENT data events (see trace2.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "trace2.h"

struct pw_cli_trace2 {
	int fd, own;
	char sid[128];
	struct timeval start;
};

void pw_cli_sid_make(char *buf, size_t size)
{
	struct timeval tv;
	struct tm tm;
	char when[32];

	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%S", &tm);
	snprintf(buf, size, "%s.%06ldZ-Hpackwire-P%08lx", when, (long)tv.tv_usec,
	         (unsigned long)getpid());
}

struct pw_cli_trace2 *pw_cli_trace2_open(const char *sid)
{
	const char *dest = getenv("GIT_TRACE2_EVENT");
	struct pw_cli_trace2 *t;
	struct stat st;
	int fd = -1, own = 0;

	if (!dest || !*dest)
		return NULL;
	if (dest[0] >= '1' && dest[0] <= '9' && !dest[1]) {
		fd = dest[0] - '0';
	} else if (dest[0] == '/') {
		char path[4096];

		if (!stat(dest, &st) && S_ISDIR(st.st_mode)) {
			if ((size_t)snprintf(path, sizeof(path), "%s/%s", dest, sid) >=
			    sizeof(path))
				return NULL;
		} else if ((size_t)snprintf(path, sizeof(path), "%s", dest) >= sizeof(path)) {
			return NULL;
		}
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
		own = 1;
	}
	if (fd < 0)
		return NULL;
	if (!(t = calloc(1, sizeof(*t)))) {
		if (own)
			close(fd);
		return NULL;
	}
	t->fd = fd;
	t->own = own;
	snprintf(t->sid, sizeof(t->sid), "%s", sid);
	gettimeofday(&t->start, NULL);
	return t;
}

/* A JSON string body: quotes, backslashes and control bytes escaped. */
static void json_str(char *out, size_t outsz, const char *s)
{
	size_t n = 0;

	for (; *s && n + 7 < outsz; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			out[n++] = '\\';
			out[n++] = (char)c;
		} else if (c < 0x20) {
			n += (size_t)snprintf(out + n, outsz - n, "\\u%04x", c);
		} else {
			out[n++] = (char)c;
		}
	}
	out[n] = '\0';
}

void pw_cli_trace2_data(void *ctx, const char *category, const char *key, const char *value)
{
	struct pw_cli_trace2 *t = ctx;
	char cat[128], k[128], v[512], when[64], line[1024];
	struct timeval now;
	struct tm tm;
	double rel;
	int len;

	if (!t)
		return;
	gettimeofday(&now, NULL);
	gmtime_r(&now.tv_sec, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	rel = (double)(now.tv_sec - t->start.tv_sec) + (now.tv_usec - t->start.tv_usec) / 1e6;
	json_str(cat, sizeof(cat), category);
	json_str(k, sizeof(k), key);
	json_str(v, sizeof(v), value);
	len = snprintf(line, sizeof(line),
	               "{\"event\":\"data\",\"sid\":\"%s\",\"thread\":\"main\","
	               "\"time\":\"%s.%06ldZ\",\"file\":\"\",\"line\":0,\"repo\":1,"
	               "\"t_abs\":%.6f,\"t_rel\":%.6f,\"nesting\":1,\"category\":\"%s\","
	               "\"key\":\"%s\",\"value\":\"%s\"}\n",
	               t->sid, when, (long)now.tv_usec, rel, rel, cat, k, v);
	if (len > 0 && (size_t)len < sizeof(line) && write(t->fd, line, (size_t)len) < 0)
		return;
}

void pw_cli_trace2_close(struct pw_cli_trace2 *t)
{
	if (!t)
		return;
	if (t->own)
		close(t->fd);
	free(t);
}
