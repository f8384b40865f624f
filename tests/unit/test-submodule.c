/* Finding a submodule's repository (src/compat/submodule.c): the
 * .gitmodules reader (well-formed, malformed, oversized, too many
 * entries) and where a .gitmodules URL points below a server's base path
 * (relative URLs, absolute paths, network URLs, and every way out of the
 * base refused). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat/submodule.h"
#include "packwire/packwire.h"
#include "test.h"

static void test_gitmodules(void)
{
	static const char ok[] = "[submodule \"a\"]\n\tpath = libs/a\n\turl = ../a.git\n"
	                         "[submodule \"b.c\"]\n\tpath = b\n"
	                         "[submodule \"nopath\"]\n\turl = x\n"
	                         "[core]\n\tbare = true\n";
	struct pw_gitmodules g;
	struct pw_error err;
	struct pw_buf big = PW_BUF_INIT;

	CHECK_EQ_INT(pw_compat__gitmodules_parse(&g, ok, strlen(ok), &err), 0);
	CHECK_EQ_INT((int)g.nr, 2);
	if (g.nr == 2) {
		CHECK_STR(g.v[0].name, "a");
		CHECK_STR(g.v[0].path, "libs/a");
		CHECK_STR(g.v[0].url, "../a.git");
		CHECK_STR(g.v[1].name, "b.c");
		CHECK_STR(g.v[1].path, "b");
		CHECK(g.v[1].url == NULL);
	}
	pw_compat__gitmodules_free(&g);

	/* not config syntax: refused, nothing returned */
	CHECK_EQ_INT(pw_compat__gitmodules_parse(&g, "[submodule \"a\"\npath", 19, &err),
	             PW_ECORRUPT);
	CHECK_EQ_INT((int)g.nr, 0);
	CHECK_EQ_INT(pw_compat__gitmodules_parse(&g, "[sub\0module]\n", 13, &err) != 0, 1);
	pw_compat__gitmodules_free(&g);
	/* larger than the bound */
	pw_buf_grow(&big, PW_GITMODULES_MAX + 2);
	memset(big.data, '#', PW_GITMODULES_MAX + 1);
	pw_buf_setlen(&big, PW_GITMODULES_MAX + 1);
	CHECK_EQ_INT(pw_compat__gitmodules_parse(&g, big.data, big.len, &err), PW_ECORRUPT);
	/* more submodules than the bound: the first ones are kept */
	pw_buf_reset(&big);
	for (int i = 0; i < PW_GITMODULES_ENTRIES + 10; i++)
		pw_buf_addf(&big, "[submodule \"s%d\"]\n\tpath = p%d\n", i, i);
	CHECK_EQ_INT(pw_compat__gitmodules_parse(&g, big.data, big.len, &err), 0);
	CHECK_EQ_INT((int)g.nr, PW_GITMODULES_ENTRIES);
	pw_compat__gitmodules_free(&g);
	pw_buf_free(&big);
}

static void url_is(const char *super, const char *url, int kind, const char *want)
{
	struct pw_buf out = PW_BUF_INIT;
	int got = pw_compat__submodule_url(&out, super, url, strlen(url));

	CHECK_EQ_INT(got, kind);
	if (got != kind)
		fprintf(stderr, "    url '%s' (super '%s')\n", url, super ? super : "(null)");
	if (kind != PW_SUBURL_NONE && got == kind)
		CHECK_STR(out.data, want);
	pw_buf_free(&out);
}

static void test_urls(void)
{
	char *long_url = malloc(PW_SUBMODULE_URL_MAX + 2);

	url_is("super.git", "../sub.git", PW_SUBURL_REL, "sub.git");
	url_is("g/super.git", "../sub.git", PW_SUBURL_REL, "g/sub.git");
	url_is("g/super.git", "./sub", PW_SUBURL_REL, "g/super.git/sub");
	url_is("g/super.git", "../../x/sub.git/", PW_SUBURL_REL, "x/sub.git");
	url_is("g/super.git", "../sub.git@sha1", PW_SUBURL_REL, "g/sub.git");
	url_is("g/super.git", "../sub.git@sha256", PW_SUBURL_REL, "g/sub.git");
	url_is("super.git", "../@sha1", PW_SUBURL_REL, "@sha1");
	/* the suffix goes before ".." is resolved (fuzz-gitmodules found
	 * "hst:/srv/..@sha256" leaving a component "..") */
	url_is("g/super.git", "../sub.git@sha1/", PW_SUBURL_REL, "g/sub.git");
	url_is("g/super.git", "../x/..@sha1", PW_SUBURL_REL, "g");
	url_is("s", "hst:srv/a/..@sha256", PW_SUBURL_NET, "srv");
	url_is("s", "hst:/srv/..@sha256", PW_SUBURL_NONE, NULL);
	url_is("s", "hst:/srv/../..@sha1", PW_SUBURL_NONE, NULL);
	url_is("s", "/srv/x/..@sha1", PW_SUBURL_ABS, "/srv");
	/* out of the base */
	url_is("super.git", "../../sub.git", PW_SUBURL_NONE, "");
	url_is("g/super.git", "../a/../../../sub.git", PW_SUBURL_NONE, "");
	url_is("super.git", "..", PW_SUBURL_NONE, "");
	url_is(NULL, "../sub.git", PW_SUBURL_NONE, "");
	url_is("", "../sub.git", PW_SUBURL_NONE, "");
	/* absolute paths */
	url_is("s", "/srv/git/sub.git", PW_SUBURL_ABS, "/srv/git/sub.git");
	url_is("s", "/srv/git/../git/./sub.git", PW_SUBURL_ABS, "/srv/git/sub.git");
	url_is("s", "file:///srv/git/sub.git", PW_SUBURL_ABS, "/srv/git/sub.git");
	url_is("s", "file://localhost/srv/sub.git", PW_SUBURL_ABS, "/srv/sub.git");
	url_is("s", "/..", PW_SUBURL_NONE, "");
	url_is("s", "/", PW_SUBURL_NONE, "");
	url_is("s", "file://", PW_SUBURL_NONE, "");
	/* network URLs: their path */
	url_is("s", "git://host/sub.git", PW_SUBURL_NET, "sub.git");
	url_is("s", "https://host:8080/git/sub.git@sha1", PW_SUBURL_NET, "git/sub.git");
	url_is("s", "ssh://u@host/srv/sub.git", PW_SUBURL_NET, "srv/sub.git");
	url_is("s", "host:sub.git", PW_SUBURL_NET, "sub.git");
	url_is("s", "host:/srv/sub.git", PW_SUBURL_NET, "srv/sub.git");
	url_is("s", "git://host", PW_SUBURL_NONE, "");
	url_is("s", "git://host/../../etc", PW_SUBURL_NONE, "");
	url_is("s", "ssh://host/~user/sub.git", PW_SUBURL_NONE, "");
	url_is("s", "host:~/sub.git", PW_SUBURL_NONE, "");
	/* nothing a server can look up */
	url_is("s", "", PW_SUBURL_NONE, "");
	url_is("s", "sub.git", PW_SUBURL_NONE, "");
	url_is("s", "../a\nb", PW_SUBURL_NONE, "");
	url_is("s", "../a\tb", PW_SUBURL_NONE, "");
	if (long_url) {
		long_url[0] = '.';
		long_url[1] = '.';
		memset(long_url + 2, 'a', PW_SUBMODULE_URL_MAX);
		long_url[PW_SUBMODULE_URL_MAX + 1] = '\0';
		url_is("s", long_url, PW_SUBURL_NONE, "");
	}
	free(long_url);
	{
		struct pw_buf out = PW_BUF_INIT;

		CHECK_EQ_INT(pw_compat__submodule_url(&out, "s", "../a\0b", 6), PW_SUBURL_NONE);
		pw_buf_free(&out);
	}
}

/* The resolver without any repository: the message names the path, the
 * commit and what to do. */
static void test_not_found(void)
{
	struct pw_compat_submodules *s = NULL;
	struct pw_compat_gitlink g;
	struct pw_oid c, out;
	struct pw_error err;
	char hex[PW_MAX_HEXSZ + 1];

	CHECK_EQ_INT(pw_compat_submodules_new(&s), 0);
	CHECK_EQ_INT(pw_compat_submodules_add(s, "", "x", &err), PW_EINVAL);
	CHECK_EQ_INT(pw_compat_submodules_add(s, "p", "", &err), PW_EINVAL);
	CHECK_EQ_INT(pw_hash_buf(&pw_hash_sha1, "x", 1, &c), 0);
	memset(&g, 0, sizeof(g));
	g.path = "dir/sub";
	g.path_len = 7;
	g.path_complete = 1;
	g.commit = &c;
	g.to = &pw_hash_sha256;
	CHECK_EQ_INT(pw_compat_submodules_gitlink(s, &g, &out, &err), PW_ENOTFOUND);
	CHECK(strstr(err.msg, "gitlink dir/sub") != NULL);
	CHECK(strstr(err.msg, pw_oid_to_hex(&c, hex)) != NULL);
	CHECK(strstr(err.msg, "--submodule=dir/sub=<repository>") != NULL);
	CHECK_EQ_INT(pw_compat_submodules_add(s, "dir/sub/", "/nonexistent/repo", &err), 0);
	CHECK_EQ_INT(pw_compat_submodules_gitlink(s, &g, &out, &err), PW_ENOTFOUND);
	CHECK(strstr(err.msg, "'/nonexistent/repo'") != NULL);
	pw_compat_submodules_free(s);
}

int main(void)
{
	test_gitmodules();
	test_urls();
	test_not_found();
	return pw_test_done();
}
