/* GIT_TRACE_PACKET (see trace-packet.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "packwire/pkt.h"
#include "trace-packet.h"

struct pw_cli_trace_packet {
	int fd, own, bare;
	char who[32];
};

static int env_true(const char *v)
{
	return v && (!strcmp(v, "1") || !strcasecmp(v, "true") || !strcasecmp(v, "yes") ||
	             !strcasecmp(v, "on"));
}

int pw_cli_trace_dest(const char *var, const char *v, int *own)
{
	int fd;

	*own = 0;
	if (!v || !*v || !strcmp(v, "0") || !strcasecmp(v, "false"))
		return -1;
	if (!strcmp(v, "1") || !strcasecmp(v, "true"))
		return STDERR_FILENO;
	if (v[0] >= '0' && v[0] <= '9' && !v[1])
		return v[0] - '0';
	if (v[0] != '/') {
		fprintf(stderr,
		        "warning: unknown trace value for '%s': %s\n"
		        "         If you want to trace into a file, then please set %s\n"
		        "         to an absolute pathname (starting with /)\n",
		        var, v, var);
		return -1;
	}
	if ((fd = open(v, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666)) < 0) {
		fprintf(stderr, "warning: could not open '%s' for tracing: %m\n", v);
		return -1;
	}
	*own = 1;
	return fd;
}

size_t pw_cli_trace_prefix(char *buf, size_t cap, const char *where)
{
	struct timeval tv;
	struct tm tm;
	time_t secs;
	int n;

	gettimeofday(&tv, NULL);
	secs = tv.tv_sec;
	localtime_r(&secs, &tm);
	n = snprintf(buf, cap, "%02d:%02d:%02d.%06ld %s ", tm.tm_hour, tm.tm_min, tm.tm_sec,
	             (long)tv.tv_usec, where);
	if (n < 0 || (size_t)n >= cap)
		return 0;
	while (n < 40 && (size_t)n + 1 < cap)
		buf[n++] = ' ';
	return (size_t)n;
}

int pw_cli_trace_bare(void)
{
	return env_true(getenv("GIT_TRACE_BARE"));
}

static struct pw_cli_trace_packet *open_key(const char *var, const char *who)
{
	struct pw_cli_trace_packet *t;
	int own, fd = pw_cli_trace_dest(var, getenv(var), &own);

	if (fd < 0)
		return NULL;
	if (!(t = calloc(1, sizeof(*t)))) {
		if (own)
			close(fd);
		return NULL;
	}
	t->fd = fd;
	t->own = own;
	t->bare = pw_cli_trace_bare();
	snprintf(t->who, sizeof(t->who), "%s", who);
	return t;
}

struct pw_cli_trace_packet *pw_cli_trace_packet_open(const char *who)
{
	return open_key("GIT_TRACE_PACKET", who);
}

struct pw_cli_trace_packet *pw_cli_trace_open(void)
{
	return open_key("GIT_TRACE", "");
}

void pw_cli_trace_line(void *ctx, const char *line)
{
	struct pw_cli_trace_packet *t = ctx;
	size_t len, cap, n = 0;
	char *buf;

	if (!t)
		return;
	len = strlen(line);
	cap = 64 + len + 10;
	if (!(buf = malloc(cap)))
		return;
	if (!t->bare)
		n = pw_cli_trace_prefix(buf, cap, "upload-pack.c:0");
	memcpy(buf + n, "trace: ", 7);
	n += 7;
	memcpy(buf + n, line, len);
	n += len;
	buf[n++] = '\n';
	if (write(t->fd, buf, n) < 0) {
		/* tracing must not break the session */
	}
	free(buf);
}

void pw_cli_trace_packet(void *ctx, int write_, const char *data, size_t len)
{
	struct pw_cli_trace_packet *t = ctx;
	char *line;
	size_t i, n = 0, cap;

	if (!t)
		return;
	cap = 64 + 32 + 12 * len; /* prefix, "packet: <who>< ", octal escapes */
	if (!(line = malloc(cap)))
		return;
	if (!t->bare)
		n = pw_cli_trace_prefix(line, cap, "packwire:0");
	n += (size_t)snprintf(line + n, cap - n, "packet: %12s%c ", t->who, write_ ? '>' : '<');
	for (i = 0; i < len; i++) {
		char c = data[i];

		if (c == '\n')
			continue; /* Git leaves newlines out */
		if (c >= 0x20 && c <= 0x7e)
			line[n++] = c;
		else /* as Git prints a (signed) char */
			n += (size_t)snprintf(line + n, cap - n, "\\%o", (unsigned)(int)c);
	}
	line[n++] = '\n';
	if (write(t->fd, line, n) < 0) {
		/* nothing to do: tracing must not break the session */
	}
	free(line);
}

void pw_cli_trace_packet_who(struct pw_cli_trace_packet *t, const char *who)
{
	if (t)
		snprintf(t->who, sizeof(t->who), "%s", who);
}

void pw_cli_trace_packet_buf(struct pw_cli_trace_packet *t, int write_, const void *data,
                             size_t len)
{
	const uint8_t *p = data;
	struct pw_pkt pkt;
	size_t off = 0, used;

	while (t && off < len && !pw_pkt_decode(p + off, len - off, &pkt, &used, NULL)) {
		off += used;
		if (pkt.kind == PW_PKT_DATA)
			pw_cli_trace_packet(t, write_, pkt.data ? pkt.data : "", pkt.len);
		else if (pkt.kind == PW_PKT_FLUSH)
			pw_cli_trace_packet(t, write_, "0000", 4);
		else if (pkt.kind == PW_PKT_DELIM)
			pw_cli_trace_packet(t, write_, "0001", 4);
		else if (pkt.kind == PW_PKT_RESPONSE_END)
			pw_cli_trace_packet(t, write_, "0002", 4);
	}
}

void pw_cli_trace_packet_close(struct pw_cli_trace_packet *t)
{
	if (!t)
		return;
	if (t->own)
		close(t->fd);
	free(t);
}
