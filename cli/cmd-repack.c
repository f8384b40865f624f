/* packwire repack -a -d [-b] [-q] [--window=N] [--depth=N] [--threads=N]:
 * everything reachable into one pack (with a .bitmap on -b or
 * repack.writeBitmaps), then, with -d, the redundant packs and loose objects
 * deleted. Thin over pw_repack (packwire/repack.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"
#include "packwire/repack.h"
#include "progress.h"

static const char usage_str[] = "packwire repack [-a] [-A] [-d] [-b | --write-bitmap-index] [-q] "
                                "[--window=N] [--depth=N] [--threads=N]";

static int int_value(const char *arg, const char *name, int *out, int *bad)
{
	size_t n = strlen(name);
	char *end;
	long v;

	if (strncmp(arg, name, n) || arg[n] != '=')
		return 0;
	v = strtol(arg + n + 1, &end, 10);
	if (*end || end == arg + n + 1 || v < 0 || v > 100000)
		*bad = 1;
	*out = (int)v;
	return 1;
}

struct compat_ctx {
	struct pw_repo *repo;
	const struct pw_hash_algo *compat; /* NULL: no compat map */
	struct pw_compat_lock *lock;
	int map_ok;       /* the new pack's side file is written */
	long kill, steps; /* PACKWIRE_TEST_REPACK_KILL */
};

/* Before anything old is deleted: the new pack's side file, so that every
 * object keeps its compat id at every step. When it cannot be written the
 * old packs (and their side files) stay. */
static int before_delete(void *data, const char *idx_path)
{
	struct compat_ctx *c = data;
	struct pw_error err = {0};

	if (!c->compat)
		return 0;
	if (pw_compat_note_pack_repo(c->repo, idx_path, &err)) {
		fprintf(stderr,
		        "warning: compat map not updated, the old packs are kept (run 'packwire "
		        "compat build'): %s\n",
		        err.msg);
		return 1;
	}
	c->map_ok = 1;
	return 0;
}

/* PACKWIRE_TEST_REPACK_KILL=N: die by SIGKILL after the Nth step of the
 * repack (the map-completeness test stops it between any two). */
static void step(void *data, const char *what)
{
	struct compat_ctx *c = data;

	(void)what;
	if (c->kill > 0 && ++c->steps >= c->kill) {
		fflush(NULL);
		raise(SIGKILL);
	}
}

int cmd_repack(int argc, char **argv)
{
	struct pw_repack_opts opts;
	struct pw_repack_result res;
	struct pw_error err = {0};
	struct pw_repo *repo;
	struct compat_ctx c = {0};
	const char *kill = getenv("PACKWIRE_TEST_REPACK_KILL");
	int i, quiet = 0, rc, bad = 0;

	pw_repack_opts_init(&opts);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-a") || !strcmp(a, "-A"))
			; /* the only mode: everything reachable into one pack */
		else if (!strcmp(a, "-d"))
			opts.delete_old = 1;
		else if (!strcmp(a, "-ad") || !strcmp(a, "-Ad"))
			opts.delete_old = 1;
		else if (!strcmp(a, "-b") || !strcmp(a, "--write-bitmap-index"))
			opts.write_bitmap = 1;
		else if (!strcmp(a, "--no-write-bitmap-index"))
			opts.write_bitmap = 0;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			quiet = 1;
		else if (!strcmp(a, "-l") || !strcmp(a, "--local") || !strcmp(a, "-f") ||
		         !strcmp(a, "-F") || !strcmp(a, "-n"))
			; /* accepted for compatibility */
		else if (int_value(a, "--window", &opts.window, &bad) ||
		         int_value(a, "--depth", &opts.depth, &bad) ||
		         int_value(a, "--threads", &opts.threads, &bad)) {
			if (bad)
				return pw_cli_usage(usage_str);
		} else
			return pw_cli_unknown_option(a, usage_str);
	}
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	c.repo = repo;
	c.kill = kill ? atol(kill) : 0;
	c.compat = pw_repo_compat_algo(repo);
	if (c.compat == pw_repo_algo(repo))
		c.compat = NULL;
	/* with a compat map: one writer at a time rewrites it and the view */
	if (c.compat && pw_compat_lock(&c.lock, pw_repo_objects_dir(repo), &err)) {
		pw_repo_free(repo);
		return pw_cli_fatal("repack: %s", err.msg);
	}
	if (c.lock)
		pw_cli_compat_locked_hook();
	if (pw_cli_progress_wanted(quiet))
		opts.progress = pw_cli_progress;
	opts.warning = pw_cli_warning_cb;
	opts.before_delete = before_delete;
	opts.step = step;
	opts.data = &c;
	rc = pw_repack(repo, &opts, &res, &err);
	if (rc)
		rc = pw_cli_fatal("%s", err.msg);
	else if (!*res.hex && !quiet)
		fputs("Nothing new to pack.\n", stderr);
	/* the stored view, rewritten when it has one (or compat.viewPack) */
	if (!rc && c.map_ok && pw_cli_compat_view_wanted(repo, -1))
		rc = pw_cli_compat_view_write(repo, c.compat, c.lock, quiet);
	pw_compat_unlock(c.lock);
	pw_repo_free(repo);
	return rc;
}
