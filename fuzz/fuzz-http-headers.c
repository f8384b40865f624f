/* Fuzz the first look at an HTTP request over raw header sets: the framing
 * check (pw_http_check_headers) and pw_http_admit of an upload-pack and a
 * receive-pack POST carrying those fields, against an empty bare repository
 * per algorithm (made once in a temporary directory).
 *
 * First byte: bit 0 algorithm (0 sha1, 1 sha256), bit 1 receive-pack (else
 * upload-pack), bit 2 HTTP/1.0 (else HTTP/1.1), bit 3 a front bound
 * (max_body) of 4096. Then one header field per line, "Name: value" (the
 * value starts after the colon and one space, if any). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/http.h"
#include "packwire/repo.h"

#define MAX_FIELDS 64

static char root[2][64];
static int ready = -1;

struct answer {
	int starts;
};

static int on_start(void *ctx, int status, const char *reason, const struct pw_http_header *h,
                    size_t nr)
{
	struct answer *a = ctx;

	(void)h, (void)nr;
	if (a->starts++ || (status != 400 && status != 413 && status != 501) || !reason)
		abort();
	return 0;
}

static int on_write(void *ctx, const void *data, size_t len)
{
	struct answer *a = ctx;

	if (!a->starts || !data || !len)
		abort();
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

	for (a = 0; a < 2; a++) {
		struct pw_repo_init_opts o;
		struct pw_repo *repo;
		struct pw_error err;
		char path[512];

		snprintf(root[a], sizeof(root[a]), "/tmp/pw-fuzz-headers-XXXXXX");
		if (!mkdtemp(root[a]))
			return -1;
		memset(&o, 0, sizeof(o));
		o.bare = 1;
		o.algo = a ? &pw_hash_sha256 : &pw_hash_sha1;
		snprintf(path, sizeof(path), "%s/r.git", root[a]);
		if (pw_repo_init_ext(&repo, path, &o, &err))
			return -1;
		pw_repo_free(repo);
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_http_header h[MAX_FIELDS];
	struct pw_http_framing f;
	struct pw_http_request req;
	struct pw_http_sink sink;
	struct answer ans = {0};
	struct pw_error err;
	char *copy, *p, *end;
	size_t nr = 0;
	uint64_t limit = 7;
	int flags, rc, frc;

	if (ready < 0) {
		ready = setup() == 0;
		atexit(cleanup);
	}
	if (!ready || !size)
		return 0;
	flags = data[0];
	if (!(copy = malloc(size)))
		return 0;
	memcpy(copy, data + 1, size - 1);
	copy[size - 1] = 0;
	end = copy + strlen(copy);
	for (p = copy; p < end && nr < MAX_FIELDS;) {
		char *nl = strchr(p, '\n'), *colon;

		if (nl)
			*nl = 0;
		if ((colon = strchr(p, ':'))) {
			*colon = 0;
			h[nr].name = p;
			h[nr].value = colon[1] == ' ' ? colon + 2 : colon + 1;
			nr++;
		}
		p = nl ? nl + 1 : end;
	}

	rc = frc = pw_http_check_headers(h, nr, (flags & 4) ? "HTTP/1.0" : "HTTP/1.1", &f, &err);
	if (rc && rc != PW_EINVAL && rc != PW_EUNSUPPORTED)
		abort();
	if (!rc && ((f.chunked && f.has_length) || f.length > (uint64_t)INT64_MAX ||
	            (!f.has_length && f.length)))
		abort();

	pw_http_request_init(&req);
	req.method = "POST";
	req.path_info = (flags & 2) ? "/r.git/git-receive-pack" : "/r.git/git-upload-pack";
	req.project_root = root[flags & 1];
	req.export_all = 1;
	req.server_protocol = (flags & 4) ? "HTTP/1.0" : "HTTP/1.1";
	req.content_type = (flags & 2) ? "application/x-git-receive-pack-request"
	                               : "application/x-git-upload-pack-request";
	req.max_request_buffer = 1 << 16;
	req.max_body = (flags & 8) ? 4096 : 0;
	req.headers = h;
	req.nr_headers = nr;
	sink.start = on_start;
	sink.write = on_write;
	sink.ctx = &ans;
	rc = pw_http_admit(&req, &sink, &limit, &err);
	/* a refusal is answered, a pass is not; the framing check agrees */
	if (!rc != !ans.starts || (!rc && limit == 7) || (rc && limit))
		abort();
	/* an upload-pack body is held to the request buffer; no body, no bound */
	if (!rc && !(flags & 2) && limit != ((f.chunked || f.length) ? 1u << 16 : 0))
		abort();
	if (!frc != !rc && !(flags & 8) && !(f.length > 1 << 16))
		abort(); /* the framing alone decides, short of a length over a bound */
	free(copy);
	return 0;
}
