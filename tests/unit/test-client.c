/* Client pieces without a server: address parsing and quoting, refspecs, and
 * the advertisement parsers on both algorithms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/client.h"
#include "packwire/env.h"
#include "packwire/transport.h"
#include "test.h"

static void url_case(const char *in, enum pw_url_scheme scheme, const char *user, const char *host,
                     const char *port, const char *path)
{
	struct pw_url u;
	struct pw_error err;

	CHECK_EQ_INT(pw_url_parse(&u, in, &err), 0);
	CHECK_EQ_INT(u.scheme, scheme);
	CHECK_STR(u.user ? u.user : "", user ? user : "");
	CHECK_STR(u.host ? u.host : "", host ? host : "");
	CHECK_STR(u.port ? u.port : "", port ? port : "");
	CHECK_STR(u.path ? u.path : "", path ? path : "");
	pw_url_free(&u);
}

static void test_urls(void)
{
	struct pw_url u;
	struct pw_error err;
	struct pw_buf b = PW_BUF_INIT;

	url_case("/srv/repo.git", PW_URL_LOCAL, NULL, NULL, NULL, "/srv/repo.git");
	url_case("../x", PW_URL_LOCAL, NULL, NULL, NULL, "../x");
	url_case("./a:b", PW_URL_LOCAL, NULL, NULL, NULL, "./a:b");
	url_case("file:///srv/r", PW_URL_FILE, NULL, NULL, NULL, "/srv/r");
	url_case("ssh://me@host:2222/srv/r", PW_URL_SSH, "me", "host", "2222", "/srv/r");
	url_case("ssh://host/~me/r", PW_URL_SSH, NULL, "host", NULL, "~me/r");
	url_case("git+ssh://[::1]:22/r", PW_URL_SSH, NULL, "::1", "22", "/r");
	url_case("host:src/r", PW_URL_SSH, NULL, "host", NULL, "src/r");
	url_case("me@host:/abs", PW_URL_SSH, "me", "host", NULL, "/abs");
	url_case("[host:2200]:r", PW_URL_SSH, NULL, "host", "2200", "r");
	url_case("git://h/r", PW_URL_GIT, NULL, "h", NULL, "/r");
	url_case("https://h:8443/r", PW_URL_HTTPS, NULL, "h", "8443", "/r");
	CHECK_EQ_INT(pw_url_parse(&u, "ext::sh -c x", &err), 0);
	CHECK_EQ_INT(u.scheme, PW_URL_HELPER);
	CHECK_STR(u.helper, "ext");
	pw_url_free(&u);
	CHECK(pw_url_parse(&u, "ssh://-oProxyCommand=x/r", &err) < 0);
	CHECK(pw_url_parse(&u, "", &err) < 0);
	CHECK(pw_url_parse(&u, "ssh://host", &err) < 0);
	CHECK(pw_url_is_local("file:///x"));
	CHECK(!pw_url_is_local("host:x"));
	CHECK_EQ_INT(pw_sq_quote(&b, "it's a!"), 0);
	CHECK_STR(b.data, "'it'\\''s a'\\!''");
	pw_buf_free(&b);
}

static void test_refspecs(void)
{
	struct pw_refspec r;
	struct pw_error err;
	char *out;

	CHECK_EQ_INT(pw_refspec_parse(&r, "+refs/heads/*:refs/remotes/origin/*", &err), 0);
	CHECK(r.force && r.glob && !r.negative);
	CHECK_EQ_INT(pw_refspec_match(&r, "refs/heads/a/b", 0, &out), 1);
	CHECK_STR(out, "refs/remotes/origin/a/b");
	free(out);
	CHECK_EQ_INT(pw_refspec_match(&r, "refs/remotes/origin/x", 1, &out), 1);
	CHECK_STR(out, "refs/heads/x");
	free(out);
	CHECK_EQ_INT(pw_refspec_match(&r, "refs/tags/v1", 0, &out), 0);
	pw_refspec_free(&r);
	CHECK_EQ_INT(pw_refspec_parse(&r, "^refs/heads/skip*", &err), 0);
	CHECK(r.negative && r.glob && !r.dst);
	CHECK_EQ_INT(pw_refspec_match(&r, "refs/heads/skipped", 0, NULL), 1);
	pw_refspec_free(&r);
	CHECK_EQ_INT(pw_refspec_parse(&r, "main", &err), 0);
	CHECK(!r.glob && !r.dst);
	pw_refspec_free(&r);
	CHECK(pw_refspec_parse(&r, "refs/*/a:refs/b", &err) < 0);
	CHECK(pw_refspec_parse(&r, "^a:b", &err) < 0);
	CHECK(pw_refspec_parse(&r, "refs/**:x/*", &err) < 0);
}

static int feed(struct pw_adv *a, int lsrefs, const char *stream, size_t len, struct pw_error *err)
{
	size_t pos = 0;
	int rc = PW_EMORE;

	while (pos < len && rc == PW_EMORE) {
		struct pw_pkt pkt;
		size_t used;

		if ((rc = pw_pkt_decode((const uint8_t *)stream + pos, len - pos, &pkt, &used,
		                        err)))
			return rc;
		pos += used;
		rc = lsrefs ? pw_adv_feed_ls_refs(a, &pkt, err) : pw_adv_feed_v0(a, &pkt, err);
	}
	return rc;
}

static void addpkt(struct pw_buf *b, const char *fmt, const char *x, const char *y)
{
	char line[512];
	int n = snprintf(line, sizeof(line), fmt, x, y);

	pw_pkt_write(b, line, (size_t)n);
}

static void test_adv(const struct pw_hash_algo *algo)
{
	const struct pw_hash_algo *other = algo == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;
	char h1[65], h2[65], bad[65], caps[128];
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err;
	struct pw_adv a;
	const struct pw_remote_ref *r;

	memset(h1, 'a', algo->hexsz);
	h1[algo->hexsz] = 0;
	memset(h2, 'b', algo->hexsz);
	h2[algo->hexsz] = 0;
	memset(bad, 'c', other->hexsz);
	bad[other->hexsz] = 0;
	/* v0 with object-format, symref, peeled tag */
	snprintf(caps, sizeof(caps), "symref=HEAD:refs/heads/main object-format=%s", algo->name);
	{
		char l[512];
		int n = snprintf(l, sizeof(l), "%s HEAD%c%s\n", h1, 0, caps);

		pw_pkt_write(&b, l, (size_t)n);
	}
	addpkt(&b, "%s refs/heads/main\n", h1, NULL);
	addpkt(&b, "%s refs/tags/v1\n", h2, NULL);
	addpkt(&b, "%s refs/tags/v1^{}\n", h1, NULL);
	pw_pkt_flush(&b);
	pw_adv_init(&a);
	CHECK_EQ_INT(feed(&a, 0, b.data, b.len, &err), 0);
	CHECK(a.algo == algo);
	CHECK(a.algo_advertised);
	CHECK_EQ_INT((int)a.nr, 3);
	r = pw_adv_find(&a, "HEAD");
	CHECK(r && r->symref_target && !strcmp(r->symref_target, "refs/heads/main"));
	r = pw_adv_find(&a, "refs/tags/v1");
	CHECK(r && r->has_peeled);
	pw_adv_free(&a);
	/* without object-format: learned from the length */
	pw_buf_reset(&b);
	addpkt(&b, "%s refs/heads/main\n", h1, NULL);
	pw_pkt_flush(&b);
	pw_adv_init(&a);
	CHECK_EQ_INT(feed(&a, 0, b.data, b.len, &err), 0);
	CHECK(a.algo == algo && !a.algo_advertised);
	pw_adv_free(&a);
	/* mixed lengths */
	pw_buf_reset(&b);
	addpkt(&b, "%s refs/heads/main\n", h1, NULL);
	addpkt(&b, "%s refs/heads/evil\n", bad, NULL);
	pw_pkt_flush(&b);
	pw_adv_init(&a);
	CHECK_EQ_INT(feed(&a, 0, b.data, b.len, &err), PW_EPROTO);
	CHECK(strstr(err.msg, "mixed object formats") != NULL);
	pw_adv_free(&a);
	/* object-format that does not match the ids */
	pw_buf_reset(&b);
	{
		char l[512];
		int n = snprintf(l, sizeof(l), "%s HEAD%cobject-format=%s\n", h1, 0, other->name);

		pw_pkt_write(&b, l, (size_t)n);
	}
	pw_pkt_flush(&b);
	pw_adv_init(&a);
	CHECK_EQ_INT(feed(&a, 0, b.data, b.len, &err), PW_EPROTO);
	pw_adv_free(&a);
	/* empty repository */
	pw_buf_reset(&b);
	{
		char l[512], z[65];
		int n;

		memset(z, '0', algo->hexsz);
		z[algo->hexsz] = 0;
		n = snprintf(l, sizeof(l), "%s capabilities^{}%cobject-format=%s\n", z, 0,
		             algo->name);
		pw_pkt_write(&b, l, (size_t)n);
	}
	pw_pkt_flush(&b);
	pw_adv_init(&a);
	CHECK_EQ_INT(feed(&a, 0, b.data, b.len, &err), 0);
	CHECK(a.empty && a.nr == 0 && a.algo == algo);
	pw_adv_free(&a);
	/* ERR line */
	pw_buf_reset(&b);
	pw_pkt_writes(&b, "ERR access denied");
	pw_adv_init(&a);
	CHECK_EQ_INT(feed(&a, 0, b.data, b.len, &err), PW_EPROTO);
	CHECK(strstr(err.msg, "remote error: access denied") != NULL);
	pw_adv_free(&a);
	/* ls-refs */
	pw_buf_reset(&b);
	addpkt(&b, "%s HEAD symref-target:refs/heads/main\n", h1, NULL);
	addpkt(&b, "%s refs/tags/v1 peeled:%s\n", h2, h1);
	addpkt(&b, "unborn %s symref-target:refs/heads/x\n", "refs/y", NULL);
	pw_pkt_flush(&b);
	pw_adv_init(&a);
	a.algo = algo;
	CHECK_EQ_INT(feed(&a, 1, b.data, b.len, &err), 0);
	CHECK_EQ_INT((int)a.nr, 3);
	CHECK(a.refs[1].has_peeled && a.refs[2].unborn);
	pw_adv_free(&a);
	pw_buf_reset(&b);
	addpkt(&b, "%s refs/heads/x\n", bad, NULL);
	pw_adv_init(&a);
	a.algo = algo;
	CHECK_EQ_INT(feed(&a, 1, b.data, b.len, &err), PW_EPROTO);
	pw_adv_free(&a);
	pw_buf_free(&b);
}

/* Connect to host:repo through a fake ssh that logs its name and arguments;
 * returns what it logged. */
static char *ssh_run(const char *dir, const struct pw_ssh_opts *ssh, int version)
{
	struct pw_transport_opts to = {0};
	struct pw_conn *c = NULL;
	struct pw_error err = {0};
	char log[512], *out = calloc(1, 512);
	FILE *f;

	snprintf(log, sizeof(log), "%s/log", dir);
	unlink(log);
	to.protocol_version = version;
	to.ssh = *ssh;
	CHECK_EQ_INT(pw_transport_connect(&c, "host:repo", &to, &err), 0);
	pw_conn_free(c);
	if (out && (f = fopen(log, "r"))) {
		if (!fgets(out, 512, f))
			out[0] = '\0';
		fclose(f);
	}
	return out;
}

/* ssh comes from the options, never from the process environment. */
static void test_ssh_opts(void)
{
	char tmpl[] = "/tmp/pw-ssh-XXXXXX", *dir = mkdtemp(tmpl), path[256], prog[300], cmd[400];
	const char *names[] = {"ssh", "other", "envssh"};
	struct pw_ssh_opts ssh = {0};
	char *got, *oldpath = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	size_t i;

	CHECK(dir != NULL);
	for (i = 0; i < 3; i++) {
		FILE *f;

		snprintf(prog, sizeof(prog), "%s/%s", dir, names[i]);
		f = fopen(prog, "w");
		CHECK(f != NULL);
		fprintf(f, "#!/bin/sh\necho \"%s $*\" >%s/log\n", names[i], dir);
		fclose(f);
		chmod(prog, 0755);
	}
	/* what a caller that does not ask for the environment gets: "ssh" on PATH */
	snprintf(path, sizeof(path), "%s:%s", dir, oldpath ? oldpath : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	snprintf(prog, sizeof(prog), "%s/envssh", dir);
	setenv("GIT_SSH_COMMAND", prog, 1);
	setenv("GIT_SSH_VARIANT", "simple", 1);
	got = ssh_run(dir, &ssh, 2);
	CHECK_STR(got, "ssh -o SendEnv=GIT_PROTOCOL host git-upload-pack 'repo'\n");
	free(got);
	/* a program, with its variant guessed or given */
	snprintf(prog, sizeof(prog), "%s/other", dir);
	ssh.program = prog;
	got = ssh_run(dir, &ssh, 2);
	CHECK_STR(got, "other host git-upload-pack 'repo'\n"); /* simple: v0, no -o */
	free(got);
	ssh.variant = "ssh";
	got = ssh_run(dir, &ssh, 2);
	CHECK_STR(got, "other -o SendEnv=GIT_PROTOCOL host git-upload-pack 'repo'\n");
	free(got);
	/* a command wins over the program */
	snprintf(cmd, sizeof(cmd), "%s/envssh -x", dir);
	ssh.command = cmd;
	ssh.variant = NULL;
	got = ssh_run(dir, &ssh, 0);
	CHECK_STR(got, "envssh -x host git-upload-pack 'repo'\n");
	free(got);
	/* and pw_options_from_env hands the environment's over when asked */
	{
		struct pw_env_options eo;
		struct pw_error err = {0};

		CHECK_EQ_INT(pw_options_from_env(&eo, &err), 0);
		got = ssh_run(dir, &eo.ssh, 2);
		CHECK_STR(got, "envssh host git-upload-pack 'repo'\n");
		free(got);
		pw_env_options_free(&eo);
	}
	unsetenv("GIT_SSH_COMMAND");
	unsetenv("GIT_SSH_VARIANT");
	if (oldpath)
		setenv("PATH", oldpath, 1);
	free(oldpath);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	test_urls();
	test_refspecs();
	test_adv(&pw_hash_sha1);
	test_adv(&pw_hash_sha256);
	test_ssh_opts();
	return pw_test_done();
}
