/* Config parser, getters and writer edge cases. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/env.h"
#include "packwire/packwire.h"
#include "test.h"
#include "util/fs.h"

static struct pw_config *parse(const char *text)
{
	struct pw_config *cfg = NULL;
	struct pw_error err = {0};
	int rc = pw_config_parse(&cfg, text, strlen(text), "/x/config", &err);

	if (rc)
		fprintf(stderr, "unexpected parse error: %s\n", err.msg);
	CHECK_EQ_INT(rc, 0);
	return cfg;
}

static const char *get(struct pw_config *cfg, const char *key)
{
	const char *v = NULL;

	return pw_config_get_string(cfg, key, &v, NULL) ? "(none)" : v;
}

/* Parse must fail with "bad config line <line> in file /x/config". */
static void bad(const char *text, int line)
{
	struct pw_config *cfg = NULL;
	struct pw_error err = {0};
	char want[128];

	snprintf(want, sizeof(want), "bad config line %d in file /x/config", line);
	CHECK_EQ_INT(pw_config_parse(&cfg, text, strlen(text), "/x/config", &err), PW_EINVAL);
	CHECK(cfg == NULL);
	CHECK_STR(err.msg, want);
}

static int count_cb(const struct pw_config_entry *e, void *data)
{
	struct pw_buf *b = data;

	pw_buf_adds(b, e->value ? e->value : "(null)");
	pw_buf_addch(b, ',');
	return 0;
}

static void test_syntax(void)
{
	struct pw_config *cfg = parse("# comment\n"
	                              "; another\n"
	                              "[Core]\n"
	                              "\tBare = true ; trailing comment\n"
	                              "  FileMode=false\n"
	                              "  noval\n"
	                              "[remote \"Origin\"]\n"
	                              "\turl = \"/a b/c\" # comment\n"
	                              "\tfetch = +refs/heads/*:refs/remotes/Origin/*\n"
	                              "[remote \"Origin\"] fetch = second\n"
	                              "[branch.Main]\n"
	                              "\tremote = x\n"
	                              "[sec \"a\\\"b\\\\c\"]\n"
	                              "\tk = v\n"
	                              "[esc]\n"
	                              "\ta = \"x\\ty\\nz\\\\q\\\"\\b\"\n"
	                              "\tb = one\\\n"
	                              "two\n"
	                              "\tc = \"  padded  \"  \n"
	                              "\td = in  side\t spaces   \n"
	                              "\te = \"#not comment;\" ; comment\n"
	                              "\tf =\n"
	                              "\tg\n");
	int b = -1;

	if (!cfg)
		return;
	CHECK_STR(get(cfg, "core.bare"), "true");
	CHECK_STR(get(cfg, "CORE.BARE"), "true");
	CHECK_STR(get(cfg, "core.filemode"), "false");
	CHECK(pw_config_get_entry(cfg, "core.noval") != NULL);
	CHECK(pw_config_get_entry(cfg, "core.noval")->value == NULL);
	CHECK_EQ_INT(pw_config_get_bool(cfg, "core.noval", &b, NULL), 0);
	CHECK_EQ_INT(b, 1);
	CHECK_EQ_INT(pw_config_get_string(cfg, "core.noval", &(const char *){0}, NULL), PW_EINVAL);
	CHECK_STR(get(cfg, "remote.Origin.url"), "/a b/c");
	CHECK_STR(get(cfg, "REMOTE.Origin.URL"), "/a b/c");
	CHECK_STR(get(cfg, "remote.origin.url"), "(none)"); /* subsection is case-sensitive */
	CHECK_STR(get(cfg, "remote.Origin.fetch"), "second");
	CHECK_STR(get(cfg, "branch.main.remote"), "x"); /* legacy form lower-cases */
	CHECK_STR(get(cfg, "sec.a\"b\\c.k"), "v");
	CHECK_STR(get(cfg, "esc.a"), "x\ty\nz\\q\"\b");
	CHECK_STR(get(cfg, "esc.b"), "onetwo");
	CHECK_STR(get(cfg, "esc.c"), "  padded  ");
	CHECK_STR(get(cfg, "esc.d"), "in  side  spaces");
	CHECK_STR(get(cfg, "esc.e"), "#not comment;");
	CHECK_STR(get(cfg, "esc.f"), "");
	CHECK(pw_config_get_entry(cfg, "esc.g")->value == NULL);
	CHECK_EQ_INT(pw_config_get_entry(cfg, "esc.g")->line, 23);
	CHECK_EQ_INT(pw_config_get_entry(cfg, "core.bare")->line, 4);
	CHECK_STR(pw_config_get_entry(cfg, "core.bare")->origin, "/x/config");
	{
		struct pw_buf all = PW_BUF_INIT;

		CHECK_EQ_INT(pw_config_get_all(cfg, "remote.Origin.fetch", count_cb, &all), 0);
		CHECK_STR(all.data, "+refs/heads/*:refs/remotes/Origin/*,second,");
		CHECK_EQ_INT(pw_config_get_all(cfg, "remote.Origin.nope", count_cb, &all),
		             PW_ENOTFOUND);
		pw_buf_free(&all);
	}
	CHECK_STR(get(cfg, "nope.nope"), "(none)");
	pw_config_free(cfg);

	/* CRLF, BOM, empty input */
	cfg = parse("\xef\xbb\xbf[a]\r\n\tb = c\r\n");
	if (cfg) {
		CHECK_STR(get(cfg, "a.b"), "c");
		pw_config_free(cfg);
	}
	cfg = parse("");
	if (cfg) {
		CHECK_EQ_INT(pw_config_count(cfg), 0);
		pw_config_free(cfg);
	}
}

static void test_errors(void)
{
	bad("[core\n", 1);
	bad("[core]\nbare = \"unterminated\n", 2);
	bad("[core]\n\n\tbare = bad\\escape\n", 3);
	bad("key = outside\n", 1);
	bad("[a]\n1key = x\n", 2);
	bad("[a]\nkey junk\n", 2);
	bad("[a \"sub]\n", 1);
	bad("[a \"sub\" ]\n", 1);
	bad("[a b]\n", 1);
	bad("[]\n", 1);
	bad("[a]\n\tx = one\\\n\ttwo\n[b\n", 4);
	bad("[a.b \"c\"]\n", 1);
	bad("[a]\nk = \"x\0y\"\n", 2);
}

static void test_types(void)
{
	struct pw_config *cfg = parse("[t]\n"
	                              "yes = yes\n on = ON\n one = 1\n two = 2\n"
	                              "no = no\n off = off\n zero = 0\n empty =\n f = False\n"
	                              "bad = maybe\n"
	                              "k = 1k\n m = 2M\n g = 3g\n neg = -1k\n hex = 0x10\n"
	                              "unit = 1x\n big = 3g\n huge = 9999999999999999999\n"
	                              "i64 = 8589934592g\n i64ok = 8388607g\n");
	int b, i;
	int64_t v;
	struct pw_error err = {0};

	if (!cfg)
		return;
	CHECK(!pw_config_get_bool(cfg, "t.yes", &b, NULL) && b == 1);
	CHECK(!pw_config_get_bool(cfg, "t.on", &b, NULL) && b == 1);
	CHECK(!pw_config_get_bool(cfg, "t.one", &b, NULL) && b == 1);
	CHECK(!pw_config_get_bool(cfg, "t.two", &b, NULL) && b == 1);
	CHECK(!pw_config_get_bool(cfg, "t.no", &b, NULL) && b == 0);
	CHECK(!pw_config_get_bool(cfg, "t.off", &b, NULL) && b == 0);
	CHECK(!pw_config_get_bool(cfg, "t.zero", &b, NULL) && b == 0);
	CHECK(!pw_config_get_bool(cfg, "t.empty", &b, NULL) && b == 0);
	CHECK(!pw_config_get_bool(cfg, "t.f", &b, NULL) && b == 0);
	CHECK_EQ_INT(pw_config_get_bool(cfg, "t.bad", &b, &err), PW_EINVAL);
	CHECK_STR(err.msg, "bad boolean config value 'maybe' for 't.bad' in file /x/config");
	CHECK_EQ_INT(pw_config_get_bool(cfg, "t.absent", &b, NULL), PW_ENOTFOUND);
	CHECK(!pw_config_get_int(cfg, "t.k", &i, NULL) && i == 1024);
	CHECK(!pw_config_get_int(cfg, "t.m", &i, NULL) && i == 2 * 1024 * 1024);
	CHECK(!pw_config_get_int(cfg, "t.neg", &i, NULL) && i == -1024);
	CHECK(!pw_config_get_int(cfg, "t.hex", &i, NULL) && i == 16);
	CHECK(!pw_config_get_int64(cfg, "t.g", &v, NULL) && v == 3LL << 30);
	CHECK_EQ_INT(pw_config_get_int(cfg, "t.unit", &i, &err), PW_EINVAL);
	CHECK_STR(err.msg, "bad numeric config value '1x' for 't.unit' in file /x/config: "
	                   "invalid unit");
	CHECK_EQ_INT(pw_config_get_int(cfg, "t.big", &i, &err), PW_EINVAL); /* > INT_MAX */
	CHECK(strstr(err.msg, "out of range") != NULL);
	CHECK_EQ_INT(pw_config_get_int64(cfg, "t.huge", &v, NULL), PW_EINVAL);
	CHECK_EQ_INT(pw_config_get_int64(cfg, "t.i64", &v, NULL), PW_EINVAL);
	CHECK(!pw_config_get_int64(cfg, "t.i64ok", &v, NULL) && v == 8388607LL << 30);
	CHECK_EQ_INT(pw_config_get_int(cfg, "t.empty", &i, NULL), PW_EINVAL);
	pw_config_free(cfg);
}

static void test_writer(void)
{
	char dir[] = "/tmp/pw-test-config-XXXXXX", *path;
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_config *cfg;
	const char *v;

	if (!mkdtemp(dir)) {
		CHECK(0);
		return;
	}
	path = pw_path_join(dir, "config");
	CHECK_EQ_INT(pw_config_set_in_file(path, "core.bare", "false", &err), 0);
	CHECK_EQ_INT(pw_config_set_in_file(path, "core.repositoryFormatVersion", "0", &err), 0);
	CHECK_EQ_INT(pw_config_set_in_file(path, "remote.Origin.url", "/a \"b\"", &err), 0);
	CHECK_EQ_INT(pw_config_set_in_file(path, "core.bare", "true", &err), 0);
	CHECK_EQ_INT(pw_config_add_in_file(path, "remote.Origin.fetch", "x", &err), 0);
	CHECK_EQ_INT(pw_config_add_in_file(path, "remote.Origin.fetch", "y;z", &err), 0);
	CHECK_EQ_INT(pw_config_set_in_file(path, "extensions.objectFormat", "sha256", &err), 0);
	CHECK_EQ_INT(pw_config_set_in_file(path, "extensions.objectformat", NULL, &err), 0);
	CHECK_EQ_INT(pw_config_set_in_file(path, "bad", "x", &err), PW_EINVAL);
	CHECK_EQ_INT(pw_fs_read_file(path, &b, 0, NULL), 0);
	CHECK_STR(b.data, "[core]\n"
	                  "\tbare = true\n"
	                  "\trepositoryformatversion = 0\n"
	                  "[remote \"Origin\"]\n"
	                  "\turl = /a \\\"b\\\"\n"
	                  "\tfetch = x\n"
	                  "\tfetch = \"y;z\"\n"
	                  "[extensions]\n");
	CHECK_EQ_INT(pw_config_load_file(&cfg, path, &err), 0);
	if (cfg) {
		CHECK(!pw_config_get_string(cfg, "remote.Origin.url", &v, NULL) &&
		      !strcmp(v, "/a \"b\""));
		CHECK(!pw_config_get_string(cfg, "remote.Origin.fetch", &v, NULL) &&
		      !strcmp(v, "y;z"));
		pw_config_free(cfg);
	}
	/* a held lock refuses the edit and leaves the file alone */
	{
		struct pw_lock lk;

		CHECK_EQ_INT(pw_lock_acquire(&lk, path, NULL), 0);
		CHECK_EQ_INT(pw_config_set_in_file(path, "core.bare", "false", &err), PW_ELOCKED);
		pw_lock_rollback(&lk);
	}
	/* a broken file is not rewritten */
	CHECK_EQ_INT(pw_fs_write_atomic(path, "[core\n", 6, NULL), 0);
	CHECK_EQ_INT(pw_config_set_in_file(path, "core.bare", "false", &err), PW_EINVAL);
	CHECK(strstr(err.msg, "bad config line 1 in file") != NULL);
	CHECK_EQ_INT(pw_config_load_file(&cfg, "/nonexistent/config", &err), PW_ENOTFOUND);
	unlink(path);
	rmdir(dir);
	free(path);
	pw_buf_free(&b);
}

static void put(const char *path, const char *text)
{
	CHECK_EQ_INT(pw_fs_write_atomic(path, text, strlen(text), NULL), 0);
}

/* System, global, repository and command-line layers, lowest first. */
static void test_layers(void)
{
	char tmpl[] = "/tmp/pw-layers-XXXXXX";
	char *dir = mkdtemp(tmpl), sys[256], xdg[256], glob[256], repo[300], gd[256], cmd[300];
	const char *keys[] = {"pair.key", "core.bare"}, *values[] = {"pair", "true"};
	struct pw_config_layers l = {0};
	struct pw_config *cfg = NULL;
	struct pw_repo *r = NULL;
	struct pw_repo_opts ro = {0};
	struct pw_error err = {0};
	const struct pw_config_entry *e;
	char *params;

	CHECK(dir != NULL);
	snprintf(sys, sizeof(sys), "%s/system", dir);
	snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
	snprintf(glob, sizeof(glob), "%s/global", dir);
	put(sys, "[a]\n\tx = sys\n\ty = sys\n\tz = sys\n\tw = sys\n");
	put(xdg, "[a]\n\tx = xdg\n\ty = xdg\n\tz = xdg\n");
	put(glob, "[a]\n\tx = glob\n\ty = glob\n");
	l.system = sys;
	l.xdg = xdg;
	l.global = glob;
	l.parameters = "'a.x=cmd' 'b.flag'";
	l.keys = keys;
	l.values = values;
	l.nr_pairs = 1;
	/* no repository: system < xdg < global < -c */
	CHECK_EQ_INT(pw_config_load_layers(&cfg, &l, NULL, &err), 0);
	CHECK_STR(get(cfg, "a.x"), "cmd");
	CHECK_STR(get(cfg, "a.y"), "glob");
	CHECK_STR(get(cfg, "a.z"), "xdg");
	CHECK_STR(get(cfg, "a.w"), "sys");
	CHECK_STR(get(cfg, "pair.key"), "pair");
	e = pw_config_get_entry(cfg, "b.flag");
	CHECK(e && !e->value); /* a bare -c key is true */
	e = pw_config_get_entry(cfg, "a.y");
	CHECK(e && !strcmp(e->origin, glob));
	pw_config_free(cfg);
	/* missing files are no error, broken ones are */
	l.xdg = "/nonexistent/xdg";
	CHECK_EQ_INT(pw_config_load_layers(&cfg, &l, "/nonexistent/config", &err), 0);
	CHECK_STR(get(cfg, "a.z"), "sys");
	pw_config_free(cfg);
	l.parameters = "'unterminated";
	CHECK_EQ_INT(pw_config_load_layers(&cfg, &l, NULL, &err), PW_EINVAL);
	CHECK(strstr(err.msg, "GIT_CONFIG_PARAMETERS") != NULL);
	CHECK(cfg == NULL);
	l.parameters = NULL;
	/* parameters are quoted as git -c passes them on */
	params = pw_config_parameters_add(NULL, "a.q=it's");
	CHECK_STR(params, "'a.q=it'\\''s'");
	l.parameters = params;
	CHECK_EQ_INT(pw_config_load_layers(&cfg, &l, NULL, &err), 0);
	CHECK_STR(get(cfg, "a.q"), "it's");
	pw_config_free(cfg);
	free(params);
	/* a repository between global and -c; its format ignores the user's
	 * files but not -c */
	snprintf(gd, sizeof(gd), "%s/r.git", dir);
	CHECK_EQ_INT(pw_repo_init(&r, gd, 1, NULL, &err), 0);
	pw_repo_free(r);
	snprintf(repo, sizeof(repo), "%s/config", gd);
	CHECK_EQ_INT(pw_config_set_in_file(repo, "a.y", "repo", &err), 0);
	CHECK_EQ_INT(pw_config_set_in_file(repo, "a.x", "repo", &err), 0);
	put(glob, "[a]\n\tx = glob\n\ty = glob\n[core]\n\tbare = false\n");
	l.parameters = "'a.x=cmd'";
	ro.config = &l;
	CHECK_EQ_INT(pw_repo_open_gitdir_opts(&r, gd, &ro, &err), 0);
	CHECK_STR(get((struct pw_config *)pw_repo_config(r), "a.x"), "cmd");
	CHECK_STR(get((struct pw_config *)pw_repo_config(r), "a.y"), "repo");
	CHECK_STR(get((struct pw_config *)pw_repo_config(r), "a.w"), "sys");
	CHECK(pw_repo_is_bare(r)); /* global core.bare=false is not the format */
	pw_repo_free(r);
	/* without layers: the repository's file alone */
	CHECK_EQ_INT(pw_repo_open_gitdir(&r, gd, &err), 0);
	CHECK_STR(get((struct pw_config *)pw_repo_config(r), "a.x"), "repo");
	CHECK_STR(get((struct pw_config *)pw_repo_config(r), "a.w"), "(none)");
	pw_repo_free(r);
	/* GIT_CONFIG_COUNT pairs are command line too */
	l.nr_pairs = 2;
	CHECK_EQ_INT(pw_repo_open_gitdir_opts(&r, gd, &ro, &err), 0);
	CHECK_STR(get((struct pw_config *)pw_repo_config(r), "pair.key"), "pair");
	pw_repo_free(r);
	values[0] = NULL;
	CHECK_EQ_INT(pw_repo_open_gitdir_opts(&r, gd, &ro, &err), PW_EINVAL);
	CHECK(strstr(err.msg, "GIT_CONFIG_VALUE_0") != NULL);
	unlink(sys);
	unlink(glob);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK(system(cmd) == 0);
}

/* pw_options_from_env reads the variables git reads, and nothing else does. */
static void test_env(void)
{
	struct pw_env_options o;
	struct pw_error err = {0};

	setenv("HOME", "/home/u", 1);
	unsetenv("XDG_CONFIG_HOME");
	unsetenv("GIT_CONFIG_GLOBAL");
	unsetenv("GIT_CONFIG_SYSTEM");
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_PARAMETERS", "'a.b=c'", 1);
	setenv("GIT_CONFIG_COUNT", "1", 1);
	setenv("GIT_CONFIG_KEY_0", "k.k", 1);
	setenv("GIT_CONFIG_VALUE_0", "v", 1);
	setenv("GIT_CEILING_DIRECTORIES", "/x:/y", 1);
	setenv("GIT_SSH_COMMAND", "myssh -v", 1);
	setenv("GIT_SSH_VARIANT", "simple", 1);
	CHECK_EQ_INT(pw_options_from_env(&o, &err), 0);
	CHECK(o.config.system == NULL);
	CHECK_STR(o.config.xdg, "/home/u/.config/git/config");
	CHECK_STR(o.config.global, "/home/u/.gitconfig");
	CHECK_STR(o.config.parameters, "'a.b=c'");
	CHECK_EQ_INT((int)o.config.nr_pairs, 1);
	CHECK_STR(o.config.keys[0], "k.k");
	CHECK_STR(o.config.values[0], "v");
	CHECK_STR(o.ceiling_dirs, "/x:/y");
	CHECK_STR(o.ssh.command, "myssh -v");
	CHECK_STR(o.ssh.variant, "simple");
	pw_env_options_free(&o);
	setenv("XDG_CONFIG_HOME", "/xdg", 1);
	unsetenv("GIT_CONFIG_NOSYSTEM");
	CHECK_EQ_INT(pw_options_from_env(&o, &err), 0);
	CHECK_STR(o.config.system, "/etc/gitconfig");
	CHECK_STR(o.config.xdg, "/xdg/git/config");
	pw_env_options_free(&o);
	setenv("GIT_CONFIG_GLOBAL", "/g", 1);
	CHECK_EQ_INT(pw_options_from_env(&o, &err), 0);
	CHECK(o.config.xdg == NULL);
	CHECK_STR(o.config.global, "/g");
	pw_env_options_free(&o);
	setenv("GIT_CONFIG_COUNT", "x", 1);
	CHECK_EQ_INT(pw_options_from_env(&o, &err), PW_EINVAL);
	CHECK(strstr(err.msg, "GIT_CONFIG_COUNT") != NULL);
	pw_env_options_free(&o);
	unsetenv("GIT_CONFIG_COUNT");
	unsetenv("GIT_CONFIG_PARAMETERS");
	unsetenv("GIT_CEILING_DIRECTORIES");
	unsetenv("GIT_SSH_COMMAND");
	unsetenv("GIT_SSH_VARIANT");
	unsetenv("GIT_CONFIG_GLOBAL");
}

int main(void)
{
	test_syntax();
	test_errors();
	test_types();
	test_writer();
	test_layers();
	test_env();
	return pw_test_done();
}
