/* packwire pack-objects [--stdout] [--thin] [--revs] [--all] [--window=N]
 * [--depth=N] [--index-version=N] [--no-reuse-delta] [--no-reuse-object]
 * [--delta-base-offset] [--threads=N] [--compression=N] [--write-bitmap-index]
 * [-q|--progress] [BASE-NAME]
 *
 * Objects come on stdin, one "<oid>[ <path>]" a line, or with --revs as
 * revision arguments ("<rev>", "^<rev>", "--not"). Writes
 * BASE-NAME-<hex>.pack/.idx (and .bitmap) and prints <hex>, or the pack to
 * stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/bitmap.h"
#include "packwire/config.h"
#include "packwire/pack-write.h"
#include "packwire/packwire.h"
#include "packwire/pkt.h"
#include "packwire/repo.h"
#include "packwire/revision.h"
#include "packwire/revlist.h"
#include "progress.h"

struct collect {
	struct pw_pack_writer *w;
	int progress;
	uint64_t n;
};

static int collect_obj(const struct pw_revlist_obj *o, void *data)
{
	struct collect *c = data;
	int rc;

	if (o->excluded)
		rc = pw_pack_writer_add_base(c->w, &o->oid, o->type, o->path, o->path_len);
	else
		rc = pw_pack_writer_add(c->w, &o->oid, o->type, o->path,
		                        o->type == PW_OBJ_TAG ? 0 : o->path_len);
	if (!rc && !o->excluded && c->progress && ++c->n % 1024 == 0)
		pw_cli_progress(NULL, "Enumerating objects", c->n, 0, 0);
	return rc;
}

static int out_stdout(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	*(uint64_t *)ctx += len;
	return pw_write_full(1, data, len, err);
}

/* --revs --stdout with a reachability bitmap: the objects come from the
 * bitmap and the pack from the bitmapped pack's entries. PW_ENOTFOUND when
 * the bitmap cannot answer (nothing written yet): walk instead. */
static int pack_from_bitmap(struct pw_repo *repo, struct pw_odb *odb, const struct pw_revs *revs,
                            const struct pw_pack_write_opts *opts, int progress)
{
	struct pw_bitmap_walk *bw;
	struct pw_bitmap_write_opts wo;
	struct pw_pack_write_stats st;
	struct pw_error err = {0};
	const struct pw_config *cfg = pw_repo_config(repo);
	uint64_t sent = 0;
	size_t i;
	int rc, use = 1, exclude;

	if (cfg && !pw_config_get_bool(cfg, "pack.usebitmaps", &use, NULL) && !use)
		return PW_ENOTFOUND;
	if (pw_bitmap_walk_new(&bw, odb, &err))
		return PW_ENOTFOUND;
	for (i = 0, rc = 0; !rc && i < pw_revs_count(revs); i++) {
		const struct pw_oid *oid = pw_revs_get(revs, i, &exclude);

		rc = pw_bitmap_walk_add(bw, oid, exclude);
	}
	if (!rc)
		rc = pw_bitmap_walk_run(bw);
	if (rc) {
		pw_bitmap_walk_free(bw);
		return rc == PW_ENOMEM ? pw_cli_fatal("out of memory") : PW_ENOTFOUND;
	}
	if (progress)
		pw_cli_progress(NULL, "Enumerating objects", pw_bitmap_walk_count(bw), 0, 1);
	memset(&wo, 0, sizeof(wo));
	wo.ofs_delta = opts->ofs_delta;
	wo.thin = opts->thin;
	if (progress)
		wo.progress = pw_cli_progress;
	memset(&st, 0, sizeof(st));
	rc = pw_bitmap_walk_write(bw, &wo, out_stdout, &sent, NULL, &st);
	if (rc && rc != PW_ENOMEM && !sent) {
		/* the check before writing failed: nothing went out */
		pw_bitmap_walk_free(bw);
		return PW_ENOTFOUND;
	}
	if (rc) {
		rc = pw_cli_fatal("%s", pw_bitmap_walk_error(bw)->msg);
		pw_bitmap_walk_free(bw);
		return rc;
	}
	if (progress)
		fprintf(stderr, "Total %u (delta %u), reused %u (delta %u)\n", st.written,
		        st.deltas, st.reused, st.reused_deltas);
	pw_bitmap_walk_free(bw);
	return 0;
}

static int int_opt(const char *arg, const char *name, int *out)
{
	size_t n = strlen(name);
	char *end;
	long v;

	if (strncmp(arg, name, n) || arg[n] != '=')
		return 0;
	v = strtol(arg + n + 1, &end, 10);
	if (*end || end == arg + n + 1 || v < -1 || v > 100000)
		return -1;
	*out = (int)v;
	return 1;
}

struct po_args {
	const char *base_name;
	int to_stdout, thin, use_revs, all, idx_version, quiet, force_progress, ofs;
	int no_reuse_delta, no_reuse_object;
	int write_bitmap;                        /* 1: warn when impossible, 2: quietly */
	int window, depth, compression, threads; /* -2: not given */
};

struct po {
	struct po_args a;
	struct pw_repo *repo;
	struct pw_odb *odb;
	struct pw_revlist *rl;
	struct pw_revs *revs;
	struct pw_pack_write_opts opts;
	struct pw_pack_writer *w;
	struct collect col;
};

static const char usage_str[] = "packwire pack-objects [--stdout] [--thin] [--revs] [--all] "
                                "[--window=N] [--depth=N] [--index-version=N] "
                                "[--no-reuse-delta] [--no-reuse-object] [--delta-base-offset] "
                                "[--write-bitmap-index] [-q|--progress] [BASE-NAME]";

/* 0, or the exit code of a usage error. */
static int parse_args(struct po_args *o, int argc, char **argv)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->idx_version = 2;
	o->window = o->depth = o->compression = o->threads = -2;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = 0;

		if (!strcmp(a, "--stdout"))
			o->to_stdout = 1;
		else if (!strcmp(a, "--thin"))
			o->thin = 1;
		else if (!strcmp(a, "--revs"))
			o->use_revs = 1;
		else if (!strcmp(a, "--all"))
			o->all = o->use_revs = 1;
		else if (!strcmp(a, "--no-reuse-delta"))
			o->no_reuse_delta = 1;
		else if (!strcmp(a, "--no-reuse-object"))
			o->no_reuse_object = o->no_reuse_delta = 1;
		else if (!strcmp(a, "--write-bitmap-index"))
			o->write_bitmap = 1;
		else if (!strcmp(a, "--write-bitmap-index-quiet"))
			o->write_bitmap = 2;
		else if (!strcmp(a, "--no-write-bitmap-index"))
			o->write_bitmap = 0;
		else if (!strcmp(a, "--delta-base-offset"))
			o->ofs = 1;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			o->quiet = 1;
		else if (!strcmp(a, "--progress"))
			o->force_progress = 1;
		else if ((r = int_opt(a, "--window", &o->window)) ||
		         (r = int_opt(a, "--depth", &o->depth)) ||
		         (r = int_opt(a, "--index-version", &o->idx_version)) ||
		         (r = int_opt(a, "--compression", &o->compression)) ||
		         (r = int_opt(a, "--threads", &o->threads))) {
			if (r < 0)
				return pw_cli_usage(usage_str);
		} else if (!strcmp(a, "--non-empty") || !strcmp(a, "--keep-true-parents") ||
		           !strcmp(a, "--include-tag") || !strcmp(a, "--all-progress") ||
		           !strcmp(a, "--all-progress-implied"))
			; /* accepted for compatibility; no effect here */
		else if (a[0] == '-')
			return pw_cli_unknown_option(a, usage_str);
		else if (!o->base_name)
			o->base_name = a;
		else
			return pw_cli_usage(usage_str);
	}
	if (o->to_stdout == !!o->base_name)
		return pw_cli_usage(usage_str);
	if (o->to_stdout)
		o->write_bitmap = 0; /* as Git: no bitmap for a streamed pack */
	if (o->idx_version != 1 && o->idx_version != 2)
		return pw_cli_fatal("unsupported index version %d", o->idx_version);
	return 0;
}

/* Defaults, then the repository's pack.* settings, then the command line. */
static void set_write_opts(struct po *p)
{
	struct pw_pack_write_opts *opts = &p->opts;

	pw_pack_write_opts_init(opts);
	pw_pack_write_opts_from_config(opts, pw_repo_config(p->repo));
	if (p->a.window != -2)
		opts->window = p->a.window;
	if (p->a.depth != -2)
		opts->depth = p->a.depth;
	if (p->a.compression != -2)
		opts->compression = p->a.compression;
	if (p->a.threads != -2)
		opts->threads = p->a.threads;
	opts->reuse_delta = !p->a.no_reuse_delta;
	opts->reuse_object = !p->a.no_reuse_object;
	opts->thin = p->a.thin;
	opts->ofs_delta = p->a.ofs;
	/* as git: a pack to stdout is checked by its reader, which hashes
	 * every object; one on disk gets reused entries checked first */
	opts->verify_reuse = !p->a.to_stdout;
	opts->objects_dir = pw_repo_objects_dir(p->repo);
	p->col.progress = p->a.force_progress || pw_cli_progress_wanted(p->a.quiet);
	if (p->col.progress)
		opts->progress = pw_cli_progress;
}

/* Open the repository, its objects, the writer and (with --revs) the walk. */
static int setup(struct po *p)
{
	struct pw_error err = {0};
	int rc;

	if ((rc = pw_cli_open_repo(&p->repo)))
		return rc;
	if (pw_odb_open(&p->odb, pw_repo_objects_dir(p->repo), pw_repo_algo(p->repo), &err))
		return pw_cli_fatal("%s", err.msg);
	set_write_opts(p);
	if (pw_pack_writer_new(&p->w, p->odb, &p->opts) ||
	    pw_pack_writer_add_tag_refs(p->w, p->repo))
		return pw_cli_fatal("out of memory");
	p->col.w = p->w;
	if (!p->a.use_revs)
		return 0;
	if (pw_revlist_new(&p->rl, p->odb,
	                   PW_REVLIST_OBJECTS | (p->a.thin ? PW_REVLIST_EDGES : 0)) ||
	    pw_revs_new(&p->revs, p->repo, p->odb))
		return pw_cli_fatal("out of memory");
	pw_revs_set_warn(p->revs, pw_cli_warning_cb, NULL);
	if (p->a.all && pw_revs_add_all(p->revs, p->rl))
		return pw_cli_fatal("%s", pw_revs_error(p->revs)->msg);
	return 0;
}

/* "<oid>[ <path>]" without --revs. */
static int add_object_line(struct po *p, const char *line, size_t n)
{
	const struct pw_hash_algo *algo = pw_repo_algo(p->repo);
	struct pw_oid oid;
	const char *path = NULL;
	size_t plen = 0;

	if (line[0] == '-')
		return 0;
	if (pw_oid_from_hex(&oid, line, n, algo))
		return pw_cli_fatal("expected object ID, got garbage:\n %s", line);
	if (n > algo->hexsz) {
		if (line[algo->hexsz] != ' ')
			return pw_cli_fatal("expected object ID, got garbage:\n %s", line);
		path = line + algo->hexsz + 1;
		plen = n - algo->hexsz - 1;
	}
	if (pw_pack_writer_add(p->w, &oid, PW_OBJ_NONE, path, plen))
		return pw_cli_fatal("%s", pw_pack_writer_error(p->w)->msg);
	return 0;
}

/* Objects or revision arguments from stdin, one a line. */
static int read_input(struct po *p)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int ret = 0;

	while (!ret && (n = getline(&line, &cap, stdin)) > 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!n)
			continue;
		if (!p->a.use_revs)
			ret = add_object_line(p, line, (size_t)n);
		else if (pw_revs_add(p->revs, p->rl, line))
			ret = pw_cli_fatal("%s", pw_revs_error(p->revs)->msg);
	}
	free(line);
	return ret;
}

/* The walk's objects into the writer. */
static int collect_revs(struct po *p)
{
	if (pw_revlist_run(p->rl, collect_obj, &p->col)) {
		const char *msg = pw_revlist_error(p->rl)->msg;

		return pw_cli_fatal("%s", *msg ? msg : pw_pack_writer_error(p->w)->msg);
	}
	if (p->col.progress)
		pw_cli_progress(NULL, "Enumerating objects", p->col.n, 0, 1);
	/* the walk's maps are not needed while writing: lower the peak */
	pw_revlist_free(p->rl);
	p->rl = NULL;
	return 0;
}

/* The .bitmap beside the pack, its commits chosen as Git chooses them. A
 * pack that is not closed under reachability keeps no bitmap, as in Git. */
static int write_bitmap(struct po *p)
{
	int rc;

	if (!p->revs) {
		if (p->a.write_bitmap == 1)
			fputs("warning: disabling bitmap writing, as some objects are not "
			      "being packed\n",
			      stderr);
		return 0;
	}
	rc = pw_pack_writer_write_bitmap_file(p->w, p->a.base_name, NULL, 0);
	if (rc == PW_ENOTFOUND || rc == PW_ECORRUPT) {
		if (p->a.write_bitmap == 1)
			fprintf(stderr,
			        "warning: disabling bitmap writing, as some objects are not "
			        "being packed (%s)\n",
			        pw_pack_writer_error(p->w)->msg);
		return 0;
	}
	return rc;
}

static int write_pack(struct po *p)
{
	int rc;

	if (p->a.to_stdout) {
		rc = pw_pack_writer_write_fd(p->w, 1, NULL);
	} else {
		char hex[PW_MAX_HEXSZ + 1];

		rc = pw_pack_writer_write_files(p->w, p->a.base_name, p->a.idx_version, hex);
		if (!rc && p->a.write_bitmap)
			rc = write_bitmap(p);
		if (!rc)
			printf("%s\n", hex);
	}
	if (rc)
		return pw_cli_fatal("%s", pw_pack_writer_error(p->w)->msg);
	if (p->col.progress) {
		struct pw_pack_write_stats st;

		pw_pack_writer_stats(p->w, &st);
		fprintf(stderr, "Total %u (delta %u), reused %u (delta %u)\n", st.written,
		        st.deltas, st.reused, st.reused_deltas);
	}
	return 0;
}

static int run(struct po *p)
{
	int rc;

	if ((rc = setup(p)) || (rc = read_input(p)))
		return rc;
	/* as in Git, a bitmapped pack is reused for --stdout even with
	 * --no-reuse-delta / --no-reuse-object (pack.useBitmaps=false stops it) */
	if (p->a.use_revs && p->a.to_stdout) {
		rc = pack_from_bitmap(p->repo, p->odb, p->revs, &p->opts, p->col.progress);
		if (rc != PW_ENOTFOUND)
			return rc;
	}
	if (p->a.use_revs && (rc = collect_revs(p)))
		return rc;
	return write_pack(p);
}

int cmd_pack_objects(int argc, char **argv)
{
	struct po p;
	int ret;

	memset(&p, 0, sizeof(p));
	if ((ret = parse_args(&p.a, argc, argv)))
		return ret;
	ret = run(&p);
	pw_pack_writer_free(p.w);
	pw_revlist_free(p.rl);
	pw_revs_free(p.revs);
	pw_odb_free(p.odb);
	pw_repo_free(p.repo);
	return ret;
}
