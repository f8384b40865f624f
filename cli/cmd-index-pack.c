/* packwire index-pack: build the .idx of a pack, as git index-pack does.
 *
 * --strict checks that commits, trees and tags parse (tree/parent lines,
 * author/committer present, tree entry modes, names and ids, tag object/type/
 * tag lines) and that every object they refer to (gitlinks excepted) is in
 * the pack or in the repository; --check-self-contained-and-connected only
 * checks the links. Not done: Git's other fsck rules (email format, sorted
 * tree entries, .gitmodules, ...) and the comparison of objects that already
 * exist in the repository with their copy in the pack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "pack/index-pack.h"
#include "packwire/packwire.h"
#include "packwire/odb.h"
#include "packwire/repo.h"
#include "util/fs.h"

static const char usage_str[] =
        "packwire index-pack [-v] [-o <index-file>] [--stdin [--fix-thin] [--keep[=<msg>]]] "
        "[--index-version=<n>[,<offset>]] [--object-format=<algo>] [--strict] [--verify] "
        "[--check-self-contained-and-connected] [--threads=<n>] [<pack-file>]";

struct progress {
	const char *title;
	int phase;
	int last_pct;
	uint64_t last_done;
};

static void progress_cb(void *ctx, int phase, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;
	const char *title = phase == PW_IPACK_RECEIVING ? p->title : "Resolving deltas";
	int pct = total ? (int)(done * 100 / total) : 100;

	if (phase != p->phase) {
		p->phase = phase;
		p->last_pct = -1;
	}
	if (pct == p->last_pct && done != total)
		return;
	if (done == total && p->last_done == done && pct == p->last_pct)
		return;
	p->last_pct = pct;
	p->last_done = done;
	fprintf(stderr, "\r%s: %3d%% (%llu/%llu)%s", title, pct, (unsigned long long)done,
	        (unsigned long long)total, done == total ? ", done.\n" : "");
}

static int odb_read(void *ctx, const struct pw_oid *oid, int *type, struct pw_buf *out)
{
	return pw_odb_read(ctx, oid, type, out);
}

static int odb_has(void *ctx, const struct pw_oid *oid)
{
	return pw_odb_exists(ctx, oid);
}

int cmd_index_pack(int argc, char **argv)
{
	struct pw_index_pack_args args;
	struct progress prog = {NULL, 0, -1, UINT64_MAX};
	const char *pack = NULL, *idx = NULL, *title = NULL;
	const struct pw_hash_algo *algo = NULL;
	int from_stdin = 0, verbose = 0, i, rc, kept = 0;
	struct pw_repo *repo = NULL;
	struct pw_odb *odb = NULL;
	char *pack_dir = NULL;
	struct pw_error err = {0};
	char hex[PW_MAX_HEXSZ + 1];

	memset(&args, 0, sizeof(args));
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-v")) {
			verbose = 1;
		} else if (!strcmp(a, "-o")) {
			if (++i >= argc)
				return pw_cli_usage(usage_str);
			idx = argv[i];
		} else if (!strcmp(a, "--stdin")) {
			from_stdin = 1;
		} else if (!strcmp(a, "--fix-thin")) {
			args.opts.fix_thin = 1;
		} else if (!strcmp(a, "--keep")) {
			args.keep_msg = "";
		} else if (!strncmp(a, "--keep=", 7)) {
			args.keep_msg = a + 7;
		} else if (!strncmp(a, "--index-version=", 16)) {
			char *end;
			unsigned long v = strtoul(a + 16, &end, 10);

			if (v < 1 || v > 2)
				return pw_cli_fatal("bad index version '%s'", a + 16);
			args.idx_version = (int)v;
			if (*end == ',') {
				args.off32_limit = strtoull(end + 1, &end, 0);
				if (*end)
					return pw_cli_fatal("bad index version '%s'", a + 16);
			} else if (*end) {
				return pw_cli_fatal("bad index version '%s'", a + 16);
			}
		} else if (!strncmp(a, "--object-format=", 16)) {
			algo = pw_hash_by_name(a + 16, strlen(a + 16));
			if (!algo)
				return pw_cli_fatal("unknown hash algorithm '%s'", a + 16);
		} else if (!strcmp(a, "--strict") || !strncmp(a, "--strict=", 9) ||
		           !strcmp(a, "--fsck-objects") || !strncmp(a, "--fsck-objects=", 15)) {
			args.opts.check_objects = 1;
			if (a[2] == 's')
				args.opts.check_links = 1;
		} else if (!strcmp(a, "--check-self-contained-and-connected")) {
			args.opts.check_links = 1;
		} else if (!strcmp(a, "--verify")) {
			args.verify = 1;
		} else if (!strncmp(a, "--progress-title=", 17)) {
			title = a + 17;
		} else if (!strcmp(a, "--progress-title")) {
			if (++i >= argc)
				return pw_cli_usage(usage_str);
			title = argv[i];
		} else if (!strncmp(a, "--threads=", 10)) {
			args.opts.threads = atoi(a + 10);
		} else if (!strncmp(a, "--max-input-size=", 17) || !strcmp(a, "--rev-index") ||
		           !strcmp(a, "--no-rev-index")) {
			/* accepted for compatibility */
		} else if (a[0] == '-' && a[1]) {
			return pw_cli_usage(usage_str);
		} else if (!pack) {
			pack = a;
		} else {
			return pw_cli_usage(usage_str);
		}
	}
	if (!pack && !from_stdin)
		return pw_cli_usage(usage_str);
	if (args.opts.fix_thin && !from_stdin)
		return pw_cli_fatal("the option '--fix-thin' requires '--stdin'");
	if (args.keep_msg && !from_stdin)
		args.keep_msg = NULL; /* as Git: --keep only means something with --stdin */
	/* the repository, when there is one, gives the algorithm, the place for
	 * --stdin packs and the objects thin packs and links refer to */
	if ((rc = pw_cli_find_repo(&repo, 0)))
		return rc;
	/* a pack stored into the repository must be of its algorithm; one
	 * written to an explicit path may be of either (as with Git) */
	if (repo && from_stdin && !pack && algo && algo != pw_repo_algo(repo)) {
		rc = pw_cli_fatal("--object-format=%s does not match the repository (%s)",
		                  algo->name, pw_repo_algo(repo)->name);
		goto out;
	}
	if (from_stdin && !pack && !repo)
		return pw_cli_fatal("--stdin requires a git repository");
	args.opts.algo = algo ? algo : repo ? pw_repo_algo(repo) : &pw_hash_sha1;
	/* thin-pack bases and link targets come from the repository's objects */
	if (repo && args.opts.algo == pw_repo_algo(repo) &&
	    (args.opts.fix_thin || args.opts.check_links)) {
		if (pw_odb_open(&odb, pw_repo_objects_dir(repo), args.opts.algo, &err)) {
			rc = pw_cli_fatal("%s", err.msg);
			goto out;
		}
		args.opts.read_object = odb_read;
		args.opts.has_object = odb_has;
		args.opts.odb_ctx = odb;
	}
	if (from_stdin && !pack) {
		pack_dir = pw_path_join(pw_repo_objects_dir(repo), "pack");
		if (!pack_dir || pw_fs_mkdir_p(pack_dir, &err)) {
			rc = pw_cli_fatal("%s", pack_dir ? err.msg : "out of memory");
			goto out;
		}
	}
	if (verbose && pw_cli_progress_wanted(0)) {
		prog.title =
		        title ? title : (from_stdin ? "Receiving objects" : "Indexing objects");
		args.opts.progress = progress_cb;
		args.opts.progress_ctx = &prog;
	}
	if (from_stdin) {
		args.opts.allow_junk = 1;
		rc = pw_index_pack_stream(&args, 0, pack_dir, pack, idx, hex, &kept, &err);
	} else {
		rc = pw_index_pack_file(&args, pack, idx, hex, &err);
	}
	if (rc) {
		rc = pw_cli_fatal("%s", err.msg);
		goto out;
	}
	if (!args.verify) {
		if (from_stdin)
			printf("%s\t%s\n", kept ? "keep" : "pack", hex);
		else
			printf("%s\n", hex);
	}
out:
	pw_odb_free(odb);
	free(pack_dir);
	pw_repo_free(repo);
	return rc;
}
