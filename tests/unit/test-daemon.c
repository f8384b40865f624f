/* The git:// daemon's request decoder and path rules (base path, aliases,
 * whitelist, export-ok, symlinks out of the base path, ~user). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packwire/daemon.h"
#include "packwire/hash.h"
#include "packwire/repo.h"
#include "test.h"

static int parse(struct pw_daemon_request *r, const char *s, size_t n)
{
	struct pw_error err;

	return pw_daemon_request_parse(r, (const uint8_t *)s, n, &err);
}

static void test_parse(void)
{
	static const char v2[] = "git-upload-pack /r.git\0host=EXAMPLE.com.:99\0\0version=2\0x=y\0";
	static const char v6[] = "git-receive-pack /r.git\0host=[::1]:1234\0";
	static const char bare[] = "git-upload-pack /r.git\n";
	struct pw_daemon_request r;
	char *big;

	CHECK_EQ_INT(parse(&r, v2, sizeof(v2) - 1), 0);
	CHECK_EQ_INT(r.service, PW_DAEMON_UPLOAD_PACK);
	CHECK_STR(r.path, "/r.git");
	CHECK_STR(r.host, "example.com");
	CHECK_STR(r.port, "99");
	CHECK_STR(r.protocol, "version=2:x=y");
	CHECK_EQ_INT(r.version, 2);
	CHECK(r.extended);
	pw_daemon_request_free(&r);

	CHECK_EQ_INT(parse(&r, v6, sizeof(v6) - 1), 0);
	CHECK_EQ_INT(r.service, PW_DAEMON_RECEIVE_PACK);
	CHECK_STR(r.host, "::1");
	CHECK_STR(r.port, "1234");
	CHECK(r.protocol == NULL && r.version == 0);
	pw_daemon_request_free(&r);

	/* no NUL at all: served, without host or extras (as Git) */
	CHECK_EQ_INT(parse(&r, bare, sizeof(bare) - 1), 0);
	CHECK_STR(r.path, "/r.git");
	CHECK(r.host == NULL && !r.extended);
	pw_daemon_request_free(&r);

	CHECK_EQ_INT(parse(&r, "git-frob /r\0", 12), PW_EPROTO);
	CHECK_EQ_INT(parse(&r, "git-upload-pack/r", 17), PW_EPROTO);
	CHECK_EQ_INT(parse(&r, "", 0), PW_EPROTO);
	CHECK_EQ_INT(parse(&r, "git-upload-pack ", 16), 0); /* empty path: refused later */
	pw_daemon_request_free(&r);
	big = malloc(PW_DAEMON_REQUEST_MAX + 2);
	memset(big, 'a', PW_DAEMON_REQUEST_MAX + 1);
	memcpy(big, "git-upload-pack /", 17);
	CHECK_EQ_INT(parse(&r, big, PW_DAEMON_REQUEST_MAX + 1), PW_ETOOBIG);
	free(big);
}

static int resolve(const struct pw_daemon_opts *o, const char *path, const char **msg)
{
	struct pw_daemon_request r;
	struct pw_error err;
	char line[4096];
	char *dir = NULL;
	int n = snprintf(line, sizeof(line), "git-upload-pack %s", path), rc;

	if (parse(&r, line, (size_t)n))
		return -100;
	rc = pw_daemon_resolve(o, &r, NULL, NULL, &dir, msg, &err);
	free(dir);
	pw_daemon_request_free(&r);
	return rc;
}

static void test_resolve(void)
{
	char tmpl[] = "/tmp/pw-test-daemon-XXXXXX", p[4400], base[4200], outside[4200];
	const char *wl[2] = {NULL, NULL};
	struct pw_daemon_opts o;
	struct pw_repo *repo;
	struct pw_error err;
	const char *msg;
	char *root = mkdtemp(tmpl);

	CHECK(root != NULL);
	if (!root)
		return;
	snprintf(base, sizeof(base), "%s/base", root);
	snprintf(outside, sizeof(outside), "%s/outside.git", root);
	mkdir(base, 0777);
	snprintf(p, sizeof(p), "%s/r.git", base);
	CHECK_EQ_INT(pw_repo_init(&repo, p, 1, &pw_hash_sha1, &err), 0);
	pw_repo_free(repo);
	CHECK_EQ_INT(pw_repo_init(&repo, outside, 1, &pw_hash_sha256, &err), 0);
	pw_repo_free(repo);
	snprintf(p, sizeof(p), "%s/link.git", base);
	CHECK_EQ_INT(symlink(outside, p), 0);

	pw_daemon_opts_init(&o);
	o.base_path = base;
	o.export_all = 1;
	o.informative_errors = 1;
	CHECK_EQ_INT(resolve(&o, "/r.git", &msg), 0);
	CHECK_EQ_INT(resolve(&o, "/r", &msg), 0); /* .git added */
	CHECK(resolve(&o, "/../base/r.git", &msg) < 0);
	CHECK_STR(msg, "no such repository");
	CHECK(resolve(&o, "r.git", &msg) < 0);     /* relative under a base path */
	CHECK(resolve(&o, "//r.git", &msg) < 0);   /* alias */
	CHECK(resolve(&o, "~root/r", &msg) < 0);   /* no --user-path */
	CHECK(resolve(&o, "/link.git", &msg) < 0); /* symlink out of the base */
	o.confine_symlinks = 0;
	CHECK_EQ_INT(resolve(&o, "/link.git", &msg), 0); /* git daemon's way */

	o.export_all = 0;
	CHECK(resolve(&o, "/r.git", &msg) < 0);
	CHECK_STR(msg, "repository not exported");
	o.informative_errors = 0;
	CHECK(resolve(&o, "/r.git", &msg) < 0);
	CHECK_STR(msg, "access denied or repository not exported");

	pw_daemon_opts_init(&o);
	o.export_all = 1;
	wl[0] = base;
	o.whitelist = wl;
	snprintf(p, sizeof(p), "%s/r.git", base);
	CHECK_EQ_INT(resolve(&o, p, &msg), 0);
	CHECK(resolve(&o, outside, &msg) < 0);
	o.strict_paths = 1;
	CHECK(resolve(&o, p, &msg) < 0); /* below a listed directory, not listed */
	wl[0] = p;
	CHECK_EQ_INT(resolve(&o, p, &msg), 0);

	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	CHECK_EQ_INT(system(p), 0);
}

int main(void)
{
	test_parse();
	test_resolve();
	return pw_test_done();
}
