/* fetch.fsckObjects settings (client/fetch-fsck.c): which switch wins, the
 * severities fetch.fsck.<id> takes (as Git spells them), unknown ids
 * skipped with Git's warning, and the problems index-pack would only meet
 * once started (a fatal id demoted, an unreadable skipList), kept for the
 * pack. Both algorithms. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/fetch-fsck.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/repo.h"
#include "test.h"
#include "util/fs.h"

static char warned[1024];

static void on_warning(void *data, const char *msg)
{
	(void)data;
	snprintf(warned, sizeof(warned), "%s", msg);
}

static void test_severity(void)
{
	CHECK(pw_fetch__fsck_severity_ok("error"));
	CHECK(pw_fetch__fsck_severity_ok("warn"));
	CHECK(pw_fetch__fsck_severity_ok("ignore"));
	/* Git's parse_msg_type compares exactly */
	CHECK(!pw_fetch__fsck_severity_ok("WARN"));
	CHECK(!pw_fetch__fsck_severity_ok("Error"));
	CHECK(!pw_fetch__fsck_severity_ok("info"));
	CHECK(!pw_fetch__fsck_severity_ok("fatal"));
	CHECK(!pw_fetch__fsck_severity_ok("errors"));
	CHECK(!pw_fetch__fsck_severity_ok("warn "));
	CHECK(!pw_fetch__fsck_severity_ok(""));
	CHECK(!pw_fetch__fsck_severity_ok(NULL));
}

/* Set config (NULL-terminated key, value pairs; value NULL removes) in
 * the repository at gd, then run setup: its return code. */
static int setup_with(const char *gd, const char *const *kv, struct pw_fetch_fsck *f,
                      struct pw_error *err)
{
	const struct pw_report report = {NULL, on_warning, NULL, NULL, NULL};
	struct pw_repo *repo = NULL;
	char cfg[4200];
	int rc;

	snprintf(cfg, sizeof(cfg), "%s/config", gd);
	for (; kv[0]; kv += 2)
		CHECK_EQ_INT(pw_config_set_in_file(cfg, kv[0], kv[1], err), 0);
	CHECK_EQ_INT(pw_repo_open_gitdir(&repo, gd, err), 0);
	if (!repo)
		return PW_ERROR;
	warned[0] = 0;
	rc = pw_fetch__fsck_setup(f, repo, &report, err);
	pw_repo_free(repo);
	return rc;
}

static void test_setup(const struct pw_hash_algo *algo, const char *dir)
{
	struct pw_fetch_fsck f;
	struct pw_error err = {0};
	struct pw_repo *repo = NULL;
	char gd[4096];

	snprintf(gd, sizeof(gd), "%s/%s.git", dir, algo->name);
	CHECK_EQ_INT(pw_repo_init(&repo, gd, 1, algo, &err), 0);
	pw_repo_free(repo);

	/* off by default; transfer.* when fetch.* is unset; fetch.* wins */
	{
		const char *kv[] = {NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_EQ_INT(f.on, 0);
		pw_fetch__fsck_free(&f);
	}
	{
		const char *kv[] = {"transfer.fsckObjects", "true", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_EQ_INT(f.on, 1);
		CHECK(f.opts.strict);
		pw_fetch__fsck_free(&f);
	}
	{
		const char *kv[] = {"fetch.fsckObjects", "false", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_EQ_INT(f.on, 0);
		pw_fetch__fsck_free(&f);
	}
	{
		const char *kv[] = {"fetch.fsckObjects", "yes", "transfer.fsckObjects", "false",
		                    NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_EQ_INT(f.on, 1);
		pw_fetch__fsck_free(&f);
	}
	/* a bad boolean in either is an error, even when the other decides */
	{
		const char *kv[] = {"transfer.fsckObjects", "maybe", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), PW_EINVAL);
		CHECK(strstr(err.msg, "transfer.fsckobjects") != NULL);
		pw_fetch__fsck_free(&f);
	}
	{
		const char *kv[] = {"transfer.fsckObjects", "true", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		pw_fetch__fsck_free(&f);
	}
	/* severities: a known id takes error/warn/ignore */
	{
		const char *kv[] = {"fetch.fsck.badEmail", "warn", "fetch.fsck.hasDotdot", "ignore",
		                    NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK(f.deferred == NULL);
		CHECK(f.opts.severity != NULL);
		CHECK_STR(warned, "");
		pw_fetch__fsck_free(&f);
	}
	{
		const char *kv[] = {"fetch.fsck.badEmail", "WARN", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), PW_EINVAL);
		CHECK_STR(err.msg, "Unknown fsck message type: 'WARN'");
		pw_fetch__fsck_free(&f);
	}
	{
		const char *kv[] = {"fetch.fsck.badEmail", "info", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), PW_EINVAL);
		CHECK_STR(err.msg, "Unknown fsck message type: 'info'");
		pw_fetch__fsck_free(&f);
	}
	/* an unknown id is skipped, whatever its value */
	{
		const char *kv[] = {"fetch.fsck.badEmail", NULL, "fetch.fsck.noSuchId", "bogus",
		                    NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_STR(warned, "Skipping unknown msg id 'nosuchid'");
		CHECK(f.deferred == NULL);
		pw_fetch__fsck_free(&f);
	}
	/* a fatal id cannot be demoted: kept for when a pack arrives */
	{
		const char *kv[] = {"fetch.fsck.noSuchId", NULL, "fetch.fsck.nulInHeader", "warn",
		                    NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_STR(f.deferred, "Cannot demote nulinheader to warn");
		pw_fetch__fsck_free(&f);
	}
	{
		const char *kv[] = {"fetch.fsck.nulInHeader", "error", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK(f.deferred == NULL);
		pw_fetch__fsck_free(&f);
	}
	/* skipList: relative to the repository (bare: its git directory),
	 * named as configured when it cannot be read */
	{
		const char *kv[] = {"fetch.fsck.nulInHeader", NULL, "fetch.fsck.skipList",
		                    "no-such-file", NULL};
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_STR(f.deferred, "could not open object name list: no-such-file");
		pw_fetch__fsck_free(&f);
	}
	{
		char path[4200], line[PW_MAX_HEXSZ + 2];
		struct pw_oid oid;
		FILE *fp;
		const char *kv[] = {"fetch.fsck.skipList", "skip", NULL};

		snprintf(path, sizeof(path), "%s/skip", gd);
		memset(&oid, 0, sizeof(oid));
		oid.algo = (uint8_t)algo->id;
		memset(oid.id, 0xab, algo->rawsz);
		pw_oid_to_hex(&oid, line);
		fp = fopen(path, "w");
		CHECK(fp != NULL);
		if (fp) {
			fprintf(fp, "# objects we know about\n%s\n", line);
			fclose(fp);
		}
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK(f.deferred == NULL);
		CHECK(pw_oidmap_get(&f.opts.skip, &oid) != NULL);
		pw_fetch__fsck_free(&f);
	}
	{
		char path[4200];
		FILE *fp;
		const char *kv[] = {"fetch.fsck.skipList", "skip", NULL};

		snprintf(path, sizeof(path), "%s/skip", gd);
		fp = fopen(path, "w");
		CHECK(fp != NULL);
		if (fp) {
			fputs("nothex\n", fp);
			fclose(fp);
		}
		CHECK_EQ_INT(setup_with(gd, kv, &f, &err), 0);
		CHECK_STR(f.deferred, "invalid object name: nothex");
		pw_fetch__fsck_free(&f);
	}
}

int main(void)
{
	char tmpl[] = "/tmp/pw-test-fetch-fsck-XXXXXX";
	char *dir = mkdtemp(tmpl);

	test_severity();
	CHECK(dir != NULL);
	if (dir) {
		test_setup(&pw_hash_sha1, dir);
		test_setup(&pw_hash_sha256, dir);
		pw_fs_remove_tree(dir, 0);
	}
	return pw_test_done();
}
