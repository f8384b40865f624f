/* packwire pack-objects [--stdout] [--thin] [--revs] [--all] [--window=N]
 * [--depth=N] [--index-version=N] [--no-reuse-delta] [--no-reuse-object]
 * [--delta-base-offset] [--threads=N] [--compression=N] [-q|--progress] [BASE-NAME]
 *
 * Objects come on stdin, one "<oid>[ <path>]" a line, or with --revs as
 * revision arguments ("<rev>", "^<rev>", "--not"). Writes
 * BASE-NAME-<hex>.pack/.idx and prints <hex>, or the pack to stdout. */
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
#include "packwire/revlist.h"
#include "revargs.h"

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
static int pack_from_bitmap(struct pw_cli_revs *revs, const struct pw_pack_write_opts *opts,
                            int progress)
{
	struct pw_bitmap_walk *bw;
	struct pw_bitmap_write_opts wo;
	struct pw_pack_write_stats st;
	struct pw_error err = {0};
	const struct pw_config *cfg = pw_repo_config(revs->repo);
	uint64_t sent = 0;
	size_t i;
	int rc, use = 1;

	if (cfg && !pw_config_get_bool(cfg, "pack.usebitmaps", &use, NULL) && !use)
		return PW_ENOTFOUND;
	if (pw_bitmap_walk_new(&bw, revs->odb, &err))
		return PW_ENOTFOUND;
	for (i = 0, rc = 0; !rc && i < revs->ntips; i++)
		rc = pw_bitmap_walk_add(bw, &revs->tips[i], revs->exclude[i]);
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

static void config_defaults(struct pw_repo *repo, struct pw_pack_write_opts *o)
{
	const struct pw_config *cfg = pw_repo_config(repo);
	int v;

	if (!cfg)
		return;
	if (!pw_config_get_int(cfg, "pack.window", &v, NULL))
		o->window = v;
	if (!pw_config_get_int(cfg, "pack.depth", &v, NULL))
		o->depth = v;
	if (!pw_config_get_int(cfg, "core.compression", &v, NULL))
		o->compression = v;
	if (!pw_config_get_int(cfg, "pack.compression", &v, NULL))
		o->compression = v;
	if (!pw_config_get_int(cfg, "pack.threads", &v, NULL))
		o->threads = v;
}

int cmd_pack_objects(int argc, char **argv)
{
	const char *usage = "packwire pack-objects [--stdout] [--thin] [--revs] [--all] "
	                    "[--window=N] [--depth=N] [--index-version=N] [--no-reuse-delta] "
	                    "[--no-reuse-object] [--delta-base-offset] [-q|--progress] "
	                    "[BASE-NAME]";
	struct pw_pack_write_opts opts;
	struct pw_cli_revs revs = {0};
	struct pw_pack_writer *w = NULL;
	struct pw_error err = {0};
	struct collect col = {0};
	const char *base_name = NULL;
	int to_stdout = 0, thin = 0, use_revs = 0, all = 0, idx_version = 2, quiet = 0;
	int force_progress = 0, ofs = 0, no_reuse_delta = 0, no_reuse_object = 0;
	int window = -2, depth = -2, compression = -2, threads = -2, i, rc, ret = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		int r = 0;

		if (!strcmp(a, "--stdout"))
			to_stdout = 1;
		else if (!strcmp(a, "--thin"))
			thin = 1;
		else if (!strcmp(a, "--revs"))
			use_revs = 1;
		else if (!strcmp(a, "--all"))
			all = use_revs = 1;
		else if (!strcmp(a, "--no-reuse-delta"))
			no_reuse_delta = 1;
		else if (!strcmp(a, "--no-reuse-object"))
			no_reuse_object = no_reuse_delta = 1;
		else if (!strcmp(a, "--delta-base-offset"))
			ofs = 1;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			quiet = 1;
		else if (!strcmp(a, "--progress"))
			force_progress = 1;
		else if ((r = int_opt(a, "--window", &window)) ||
		         (r = int_opt(a, "--depth", &depth)) ||
		         (r = int_opt(a, "--index-version", &idx_version)) ||
		         (r = int_opt(a, "--compression", &compression)) ||
		         (r = int_opt(a, "--threads", &threads))) {
			if (r < 0)
				return pw_cli_usage(usage);
		} else if (!strcmp(a, "--non-empty") || !strcmp(a, "--keep-true-parents") ||
		           !strcmp(a, "--include-tag") || !strcmp(a, "--all-progress") ||
		           !strcmp(a, "--all-progress-implied"))
			; /* accepted for compatibility; no effect here */
		else if (a[0] == '-')
			return pw_cli_unknown_option(a, usage);
		else if (!base_name)
			base_name = a;
		else
			return pw_cli_usage(usage);
	}
	if (to_stdout == !!base_name)
		return pw_cli_usage(usage);
	if (idx_version != 1 && idx_version != 2)
		return pw_cli_fatal("unsupported index version %d", idx_version);
	if ((rc = pw_cli_open_repo(&revs.repo)))
		return rc;
	revs.algo = pw_repo_algo(revs.repo);
	if (pw_odb_open(&revs.odb, pw_repo_objects_dir(revs.repo), revs.algo, &err)) {
		ret = pw_cli_fatal("%s", err.msg);
		goto out;
	}
	pw_pack_write_opts_init(&opts);
	config_defaults(revs.repo, &opts);
	if (window != -2)
		opts.window = window;
	if (depth != -2)
		opts.depth = depth;
	if (compression != -2)
		opts.compression = compression;
	if (threads != -2)
		opts.threads = threads;
	opts.reuse_delta = !no_reuse_delta;
	opts.reuse_object = !no_reuse_object;
	opts.thin = thin;
	opts.ofs_delta = ofs;
	opts.objects_dir = pw_repo_objects_dir(revs.repo);
	col.progress = force_progress || pw_cli_progress_wanted(quiet);
	if (col.progress)
		opts.progress = pw_cli_progress;
	if (pw_pack_writer_new(&w, revs.odb, &opts)) {
		ret = pw_cli_fatal("out of memory");
		goto out;
	}
	col.w = w;

	if (use_revs) {
		if (pw_revlist_new(&revs.rl, revs.odb,
		                   PW_REVLIST_OBJECTS | (thin ? PW_REVLIST_EDGES : 0))) {
			ret = pw_cli_fatal("out of memory");
			goto out;
		}
		if (all && (ret = pw_cli_revs_add_all(&revs)))
			goto out;
	}
	while ((n = getline(&line, &cap, stdin)) > 0) {
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (!n)
			continue;
		if (use_revs) {
			if ((ret = pw_cli_revs_add(&revs, line)))
				goto out;
		} else {
			struct pw_oid oid;
			const char *path = NULL;
			size_t plen = 0;

			if (line[0] == '-')
				continue;
			if (pw_oid_from_hex(&oid, line, (size_t)n, revs.algo)) {
				ret = pw_cli_fatal("expected object ID, got garbage:\n %s", line);
				goto out;
			}
			if ((size_t)n > revs.algo->hexsz) {
				if (line[revs.algo->hexsz] != ' ') {
					ret = pw_cli_fatal("expected object ID, got garbage:\n %s",
					                   line);
					goto out;
				}
				path = line + revs.algo->hexsz + 1;
				plen = (size_t)n - revs.algo->hexsz - 1;
			}
			if (pw_pack_writer_add(w, &oid, PW_OBJ_NONE, path, plen)) {
				ret = pw_cli_fatal("%s", pw_pack_writer_error(w)->msg);
				goto out;
			}
		}
	}
	/* as in Git, a bitmapped pack is reused for --stdout even with
	 * --no-reuse-delta / --no-reuse-object (pack.useBitmaps=false stops it) */
	if (use_revs && to_stdout) {
		rc = pack_from_bitmap(&revs, &opts, col.progress);
		if (rc != PW_ENOTFOUND) {
			ret = rc;
			goto out;
		}
	}
	if (use_revs) {
		rc = pw_revlist_run(revs.rl, collect_obj, &col);
		if (rc) {
			const char *msg = pw_revlist_error(revs.rl)->msg;

			ret = pw_cli_fatal("%s", *msg ? msg : pw_pack_writer_error(w)->msg);
			goto out;
		}
		if (col.progress)
			pw_cli_progress(NULL, "Enumerating objects", col.n, 0, 1);
		/* the walk's maps are not needed while writing: lower the peak */
		pw_revlist_free(revs.rl);
		revs.rl = NULL;
	}
	if (to_stdout) {
		rc = pw_pack_writer_write_fd(w, 1, NULL);
	} else {
		char hex[PW_MAX_HEXSZ + 1];

		rc = pw_pack_writer_write_files(w, base_name, idx_version, hex);
		if (!rc)
			printf("%s\n", hex);
	}
	if (rc) {
		ret = pw_cli_fatal("%s", pw_pack_writer_error(w)->msg);
		goto out;
	}
	if (col.progress) {
		struct pw_pack_write_stats st;

		pw_pack_writer_stats(w, &st);
		fprintf(stderr, "Total %u (delta %u), reused %u (delta %u)\n", st.written,
		        st.deltas, st.reused, st.reused_deltas);
	}
out:
	free(line);
	pw_pack_writer_free(w);
	pw_revlist_free(revs.rl);
	pw_cli_revs_release(&revs);
	pw_odb_free(revs.odb);
	pw_repo_free(revs.repo);
	return ret;
}
