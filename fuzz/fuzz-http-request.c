/* Fuzz the HTTP request handler (pw_http_serve) with request descriptions
 * built from the input, against an empty bare repository per algorithm
 * (made once in a temporary directory), and the gzip body decoder.
 *
 * First byte: bit 0 algorithm (0 sha1, 1 sha256); bit 1 gzip body; bit 2
 * HTTP/1.1; bit 3 http.getanyfile off (a second repository); bits 4-5 the
 * Git-Protocol header (none, version=1, version=2, garbage); bit 6 an
 * unknown Content-Length (else the body's length). Then four lines: method,
 * PATH_INFO (the repository is "/r.git"), query, content type; the rest is
 * the body. Pushes stay refused (no user), so the repository never changes. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/http.h"
#include "packwire/repo.h"

static char root[2][64];
static int ready = -1;

struct body {
	const uint8_t *p;
	size_t left;
};

static long read_body(void *ctx, void *buf, size_t len)
{
	struct body *b = ctx;

	/* small pieces, to cross every boundary */
	if (len > 7)
		len = 7 + b->left % 1000;
	if (len > b->left)
		len = b->left;
	memcpy(buf, b->p, len);
	b->p += len;
	b->left -= len;
	return (long)len;
}

struct sink_state {
	int started;
	size_t bytes;
};

static int on_start(void *ctx, int status, const char *reason, const struct pw_http_header *h,
                    size_t nr)
{
	struct sink_state *s = ctx;
	size_t i;

	if (s->started || status < 100 || status > 599 || !reason)
		abort();
	for (i = 0; i < nr; i++)
		if (!h[i].name || !h[i].value || strchr(h[i].value, '\n'))
			abort();
	s->started = 1;
	return 0;
}

static int on_write(void *ctx, const void *data, size_t len)
{
	struct sink_state *s = ctx;

	if (!s->started || !data)
		abort();
	s->bytes += len;
	return 0;
}

static void cleanup(void)
{
	char cmd[200];
	int a;

	for (a = 0; a < 2; a++) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root[a]);
		if (root[a][0] && system(cmd)) {
			/* a leftover temporary directory */
		}
	}
}

static int setup(void)
{
	int a;

	signal(SIGPIPE, SIG_IGN);
	for (a = 0; a < 2; a++) {
		struct pw_repo_init_opts o;
		struct pw_repo *repo;
		struct pw_error err;
		char path[512];
		FILE *f;

		snprintf(root[a], sizeof(root[a]), "/tmp/pw-fuzz-http-XXXXXX");
		if (!mkdtemp(root[a]))
			return -1;
		memset(&o, 0, sizeof(o));
		o.bare = 1;
		o.algo = a ? &pw_hash_sha256 : &pw_hash_sha1;
		snprintf(path, sizeof(path), "%s/r.git", root[a]);
		if (pw_repo_init_ext(&repo, path, &o, &err))
			return -1;
		pw_repo_free(repo);
		snprintf(path, sizeof(path), "%s/r.git/git-daemon-export-ok", root[a]);
		if ((f = fopen(path, "w")))
			fclose(f);
		snprintf(path, sizeof(path), "cp -r '%s/r.git' '%s/off.git'", root[a], root[a]);
		if (system(path))
			return -1;
		snprintf(path, sizeof(path), "%s/off.git/config", root[a]);
		if ((f = fopen(path, "a"))) {
			fputs("[http]\n\tgetanyfile = false\n", f);
			fclose(f);
		}
	}
	return 0;
}

/* next line of the input (without its LF) into out; advances *p */
static void line(const uint8_t **p, size_t *left, char *out, size_t cap)
{
	size_t i = 0;

	while (*left && **p != '\n') {
		if (i + 1 < cap && **p)
			out[i++] = (char)**p;
		(*p)++;
		(*left)--;
	}
	if (*left) {
		(*p)++;
		(*left)--;
	}
	out[i] = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *protos[4] = {NULL, "version=1", "version=2", "version=x:version=2:="};
	struct pw_http_request req;
	struct pw_http_sink sink;
	struct sink_state st = {0, 0};
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err;
	struct body b;
	char method[32], path[512], query[256], ctype[128], pi[600];
	const uint8_t *p = data + 1;
	size_t left;
	int flags;

	if (ready < 0) {
		ready = setup() == 0;
		atexit(cleanup);
	}
	if (!ready || !size)
		return 0;
	flags = data[0];
	left = size - 1;
	line(&p, &left, method, sizeof(method));
	line(&p, &left, path, sizeof(path));
	line(&p, &left, query, sizeof(query));
	line(&p, &left, ctype, sizeof(ctype));

	/* the decoder alone */
	pw_http_gunzip(&out, p, left, 1 << 20, &err);
	pw_buf_free(&out);

	pw_http_request_init(&req);
	snprintf(pi, sizeof(pi), "%s", path);
	if ((flags & 8) && !strncmp(path, "/r.git", 6))
		snprintf(pi, sizeof(pi), "/off.git%s", path + 6);
	req.method = method;
	req.path_info = pi;
	req.query = query[0] ? query : NULL;
	req.content_type = ctype;
	req.content_encoding = (flags & 2) ? "gzip" : NULL;
	req.server_protocol = (flags & 4) ? "HTTP/1.1" : "HTTP/1.0";
	req.git_protocol = protos[(flags >> 4) & 3];
	req.content_length = (flags & 64) ? -1 : (long long)left;
	req.project_root = root[flags & 1];
	req.export_all = 1;
	req.max_request_buffer = 1 << 20;
	b.p = p;
	b.left = left;
	req.read_body = read_body;
	req.body_ctx = &b;
	sink.start = on_start;
	sink.write = on_write;
	sink.ctx = &st;
	pw_http_serve(&req, &sink, &err);
	if (!st.started)
		abort(); /* every request gets an answer */
	return 0;
}
