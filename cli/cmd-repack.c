/* packwire repack -a -d [-b] [-q] [--window=N] [--depth=N] [--threads=N]:
 * everything reachable into one pack (with a .bitmap on -b or
 * repack.writeBitmaps), then, with -d, the redundant packs and loose objects
 * deleted. Thin over pw_repack (packwire/repack.h). */
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

/* A repository with a compat map: the new pack's side file, then the stored
 * view rewritten when it has one (or compat.viewPack). */
static int compat_after(struct pw_repo *repo, const struct pw_repack_result *res, int quiet)
{
	const struct pw_hash_algo *compat = pw_repo_compat_algo(repo);
	struct pw_error err = {0};
	char *idx;

	if (!compat || compat == pw_repo_algo(repo))
		return 0;
	if (!(idx = malloc(strlen(pw_repo_objects_dir(repo)) + PW_MAX_HEXSZ + 20)))
		return pw_cli_fatal("out of memory");
	sprintf(idx, "%s/pack/pack-%s.idx", pw_repo_objects_dir(repo), res->hex);
	if (pw_compat_note_pack_repo(repo, idx, &err))
		fprintf(stderr,
		        "warning: compat map not updated (run 'packwire compat build'): %s\n",
		        err.msg);
	free(idx);
	if (err.code || !pw_cli_compat_view_wanted(repo, -1))
		return 0;
	return pw_cli_compat_view_write(repo, compat, quiet);
}

int cmd_repack(int argc, char **argv)
{
	struct pw_repack_opts opts;
	struct pw_repack_result res;
	struct pw_error err = {0};
	struct pw_repo *repo;
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
	if (pw_cli_progress_wanted(quiet))
		opts.progress = pw_cli_progress;
	opts.warning = pw_cli_warning_cb;
	rc = pw_repack(repo, &opts, &res, &err);
	if (rc) {
		pw_repo_free(repo);
		return pw_cli_fatal("%s", err.msg);
	}
	if (!*res.hex && !quiet)
		fputs("Nothing new to pack.\n", stderr);
	rc = *res.hex ? compat_after(repo, &res, quiet) : 0;
	pw_repo_free(repo);
	return rc;
}
