/* packwire index-pack: build the .idx of a pack, as git index-pack does.
 *
 * --strict checks that commits, trees and tags parse (tree/parent lines,
 * author/committer present, tree entry modes, names and ids, tag object/type/
 * tag lines) and that every object they refer to (gitlinks excepted) is in
 * the pack or in the repository; --check-self-contained-and-connected only
 * checks the links. Not done: Git's other fsck rules (email format, sorted
 * tree entries, .gitmodules, ...) and the comparison of objects that already
 * exist in the repository with their copy in the pack. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/compat.h"
#include "packwire/fs.h"
#include "packwire/index-pack.h"
#include "packwire/odb.h"
#include "packwire/packwire.h"
#include "packwire/repo.h"

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

struct ip_cmd {
	struct pw_index_pack_args args;
	struct progress prog;
	const char *pack, *idx, *title;
	const struct pw_hash_algo *algo; /* --object-format */
	int from_stdin, verbose;
	struct pw_repo *repo;
	struct pw_odb *odb;
	char *pack_dir;
};

/* "--index-version=<n>[,<offset>]"; 0 or an exit code. */
static int parse_index_version(struct ip_cmd *c, const char *v)
{
	char *end;
	unsigned long n = strtoul(v, &end, 10);

	if (n < 1 || n > 2)
		return pw_cli_fatal("bad index version '%s'", v);
	c->args.idx_version = (int)n;
	if (*end == ',') {
		c->args.off32_limit = strtoull(end + 1, &end, 0);
		if (*end)
			return pw_cli_fatal("bad index version '%s'", v);
	} else if (*end) {
		return pw_cli_fatal("bad index version '%s'", v);
	}
	return 0;
}

/* One argument at argv[*i] (moves *i past a value); 0 or an exit code. */
static int parse_arg(struct ip_cmd *c, int argc, char **argv, int *i)
{
	const char *a = argv[*i];

	if (!strcmp(a, "-v")) {
		c->verbose = 1;
	} else if (!strcmp(a, "-o")) {
		if (++*i >= argc)
			return pw_cli_usage(usage_str);
		c->idx = argv[*i];
	} else if (!strcmp(a, "--stdin")) {
		c->from_stdin = 1;
	} else if (!strcmp(a, "--fix-thin")) {
		c->args.opts.fix_thin = 1;
	} else if (!strcmp(a, "--keep")) {
		c->args.keep_msg = "";
	} else if (!strncmp(a, "--keep=", 7)) {
		c->args.keep_msg = a + 7;
	} else if (!strncmp(a, "--index-version=", 16)) {
		return parse_index_version(c, a + 16);
	} else if (!strncmp(a, "--object-format=", 16)) {
		c->algo = pw_hash_by_name(a + 16, strlen(a + 16));
		if (!c->algo)
			return pw_cli_fatal("unknown hash algorithm '%s'", a + 16);
	} else if (!strcmp(a, "--strict") || !strncmp(a, "--strict=", 9) ||
	           !strcmp(a, "--fsck-objects") || !strncmp(a, "--fsck-objects=", 15)) {
		c->args.opts.check_objects = 1;
		if (a[2] == 's')
			c->args.opts.check_links = 1;
	} else if (!strcmp(a, "--check-self-contained-and-connected")) {
		c->args.opts.check_links = 1;
	} else if (!strcmp(a, "--verify")) {
		c->args.verify = 1;
	} else if (!strncmp(a, "--progress-title=", 17)) {
		c->title = a + 17;
	} else if (!strcmp(a, "--progress-title")) {
		if (++*i >= argc)
			return pw_cli_usage(usage_str);
		c->title = argv[*i];
	} else if (!strncmp(a, "--threads=", 10)) {
		c->args.opts.threads = atoi(a + 10);
	} else if (!strncmp(a, "--max-input-size=", 17) || !strcmp(a, "--rev-index") ||
	           !strcmp(a, "--no-rev-index")) {
		/* accepted for compatibility */
	} else if (a[0] == '-' && a[1]) {
		return pw_cli_usage(usage_str);
	} else if (!c->pack) {
		c->pack = a;
	} else {
		return pw_cli_usage(usage_str);
	}
	return 0;
}

static int parse_args(struct ip_cmd *c, int argc, char **argv)
{
	int i, rc;

	for (i = 1; i < argc; i++)
		if ((rc = parse_arg(c, argc, argv, &i)))
			return rc;
	if (!c->pack && !c->from_stdin)
		return pw_cli_usage(usage_str);
	if (c->args.opts.fix_thin && !c->from_stdin)
		return pw_cli_fatal("the option '--fix-thin' requires '--stdin'");
	if (c->args.keep_msg && !c->from_stdin)
		c->args.keep_msg = NULL; /* as Git: --keep only means something with --stdin */
	return 0;
}

/* The repository, when there is one, gives the algorithm, the place for
 * --stdin packs and the objects thin packs and links refer to. */
static int setup_repo(struct ip_cmd *c)
{
	struct pw_error err = {0};
	struct pw_ipack_opts *o = &c->args.opts;
	int rc;

	if ((rc = pw_cli_find_repo(&c->repo, 0)))
		return rc;
	/* a pack stored into the repository must be of its algorithm; one
	 * written to an explicit path may be of either (as with Git) */
	if (c->repo && c->from_stdin && !c->pack && c->algo && c->algo != pw_repo_algo(c->repo))
		return pw_cli_fatal("--object-format=%s does not match the repository (%s)",
		                    c->algo->name, pw_repo_algo(c->repo)->name);
	if (c->from_stdin && !c->pack && !c->repo)
		return pw_cli_fatal("--stdin requires a git repository");
	o->algo = c->algo ? c->algo : c->repo ? pw_repo_algo(c->repo) : &pw_hash_sha1;
	/* thin-pack bases and link targets come from the repository's objects */
	if (c->repo && o->algo == pw_repo_algo(c->repo) && (o->fix_thin || o->check_links)) {
		if (pw_odb_open(&c->odb, pw_repo_objects_dir(c->repo), o->algo, &err))
			return pw_cli_fatal("%s", err.msg);
		o->read_object = odb_read;
		o->has_object = odb_has;
		o->odb_ctx = c->odb;
	}
	if (c->from_stdin && !c->pack) {
		c->pack_dir = pw_path_join(pw_repo_objects_dir(c->repo), "pack");
		if (!c->pack_dir || pw_fs_mkdir_p(c->pack_dir, &err))
			return pw_cli_fatal("%s", c->pack_dir ? err.msg : "out of memory");
	}
	return 0;
}

/* A pack indexed into a repository with a compat map gets its side file
 * (docs/compat-map.md); a failure only warns (compat build catches up). */
static void note_compat(struct ip_cmd *c, const char *hex)
{
	const struct pw_hash_algo *compat = c->repo ? pw_repo_compat_algo(c->repo) : NULL;
	struct pw_error err = {0};
	char idx[PATH_MAX], real_dir[PATH_MAX], real_pack[PATH_MAX], *slash;
	char *pack_dir;

	if (!compat || c->args.verify || c->args.opts.algo != pw_repo_algo(c->repo))
		return;
	if (c->idx)
		snprintf(idx, sizeof(idx), "%s", c->idx);
	else if (c->pack && strlen(c->pack) > 5 && !strcmp(c->pack + strlen(c->pack) - 5, ".pack"))
		snprintf(idx, sizeof(idx), "%.*s.idx", (int)(strlen(c->pack) - 5), c->pack);
	else if (c->pack_dir)
		snprintf(idx, sizeof(idx), "%s/pack-%s.idx", c->pack_dir, hex);
	else
		return;
	/* only a pack of the repository's own pack directory is mapped */
	if (!(pack_dir = pw_path_join(pw_repo_objects_dir(c->repo), "pack")))
		return;
	if (!realpath(idx, real_pack) || !realpath(pack_dir, real_dir) ||
	    !(slash = strrchr(real_pack, '/')) || (*slash = '\0', strcmp(real_pack, real_dir)) ||
	    strncmp(slash + 1, "pack-", 5)) {
		free(pack_dir);
		return;
	}
	free(pack_dir);
	*slash = '/';
	if (pw_compat_note_pack_repo(c->repo, real_pack, &err))
		fprintf(stderr,
		        "warning: compat map not updated (run 'packwire compat build'): %s\n",
		        err.msg);
}

static int run(struct ip_cmd *c)
{
	struct pw_error err = {0};
	char hex[PW_MAX_HEXSZ + 1];
	int rc, kept = 0;

	if ((rc = setup_repo(c)))
		return rc;
	if (c->verbose && pw_cli_progress_wanted(0)) {
		c->prog.title =
		        c->title ? c->title
		                 : (c->from_stdin ? "Receiving objects" : "Indexing objects");
		c->args.opts.progress = progress_cb;
		c->args.opts.progress_ctx = &c->prog;
	}
	if (c->from_stdin) {
		c->args.opts.allow_junk = 1;
		rc = pw_index_pack_stream(&c->args, 0, c->pack_dir, c->pack, c->idx, hex, &kept,
		                          &err);
	} else {
		rc = pw_index_pack_file(&c->args, c->pack, c->idx, hex, &err);
	}
	if (rc)
		return pw_cli_fatal("%s", err.msg);
	note_compat(c, hex);
	if (!c->args.verify) {
		if (c->from_stdin)
			printf("%s\t%s\n", kept ? "keep" : "pack", hex);
		else
			printf("%s\n", hex);
	}
	return 0;
}

int cmd_index_pack(int argc, char **argv)
{
	struct ip_cmd c;
	int rc;

	memset(&c, 0, sizeof(c));
	c.prog.last_pct = -1;
	c.prog.last_done = UINT64_MAX;
	if ((rc = parse_args(&c, argc, argv)))
		return rc;
	rc = run(&c);
	pw_odb_free(c.odb);
	free(c.pack_dir);
	pw_repo_free(c.repo);
	return rc;
}
