/* packwire compat: the map between the repository's storage ids and its
 * compat ids (extensions.compatObjectFormat; docs/compat-map.md).
 *   compat build [--object-format=ALGO] [--[no-]view-pack]
 *                                          translate every object, write maps
 *                                          (and the stored view's pack)
 *   compat lookup [--reverse] (--stdin | OID...)   print the other id
 *   compat verify                          check every map file completely */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmds.h"
#include "packwire/packwire.h"
#include "progress.h"

static const char usage_str[] = "packwire compat build [--object-format=(sha1|sha256)] "
                                "[--submodule=<path>=<repo>...] [--submodule-base=<dir>] "
                                "[--[no-]view-pack] [-q]\n"
                                "   or: packwire compat lookup [--reverse] (--stdin | <oid>...)\n"
                                "   or: packwire compat verify\n"
                                "   or: packwire compat pack-objects --stdout < <oid list>";

/* The compat algorithm: the option, else the extension, else the other one. */
static const struct pw_hash_algo *compat_of(struct pw_repo *repo, const char *opt)
{
	const struct pw_hash_algo *s = pw_repo_algo(repo);

	if (opt)
		return pw_hash_by_name(opt, strlen(opt));
	if (pw_repo_compat_algo(repo))
		return pw_repo_compat_algo(repo);
	return s->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
}

struct kill_hook {
	long after, seen;
};

/* PACKWIRE_TEST_COMPAT_KILL=N: die by SIGKILL when the Nth map file is
 * written but not yet renamed into place (the crash-safety test). */
static void before_publish(void *data, const char *tmp, const char *final)
{
	struct kill_hook *k = data;

	(void)tmp;
	(void) final;
	if (k->after > 0 && ++k->seen >= k->after) {
		fflush(NULL);
		raise(SIGKILL);
	}
}

static int progress(void *data, const char *what, uint64_t done, uint64_t total)
{
	int *quiet = data;

	if (!*quiet && !strcmp(what, "translated") && (done == total || done % 65536 == 0))
		fprintf(stderr, "Translating objects: %llu/%llu\n", (unsigned long long)done,
		        (unsigned long long)total);
	return 0;
}

/* Whether to write the stored view: the option, else compat.viewPack, else
 * keep one that exists current. */
int pw_cli_compat_view_wanted(struct pw_repo *repo, int opt)
{
	const struct pw_config *cfg = pw_repo_config(repo);
	int v;

	if (opt >= 0)
		return opt;
	if (cfg && !pw_config_get_bool(cfg, "compat.viewpack", &v, NULL))
		return v;
	return pw_compat_view_exists(pw_repo_objects_dir(repo));
}

/* Write the stored view of the compat algorithm, under lock (held by the
 * caller). PACKWIRE_TEST_COMPAT_VIEW_KILL=1 kills the writer before it
 * publishes. */
int pw_cli_compat_view_write(struct pw_repo *repo, const struct pw_hash_algo *compat,
                             struct pw_compat_lock *lock, int quiet)
{
	const char *env = getenv("PACKWIRE_TEST_COMPAT_VIEW_KILL");
	struct kill_hook k = {env ? atol(env) : 0, 0};
	struct pw_compat_view_opts vo;
	struct pw_error err = {0};

	memset(&vo, 0, sizeof(vo));
	if (pw_cli_progress_wanted(quiet))
		vo.progress = pw_cli_progress;
	vo.before_publish = before_publish;
	vo.before_publish_data = &k;
	vo.lock = lock;
	if (pw_compat_view_write(repo, compat, &vo, &err))
		return pw_cli_fatal("compat view pack: %s", err.msg);
	if (!*vo.name) {
		if (!quiet)
			fputs("compat view pack: no refs, nothing to store\n", stderr);
		return 0;
	}
	if (!quiet)
		fprintf(stderr, "compat view pack: pack-%s, %llu objects, %llu bytes (%s)\n",
		        vo.name, (unsigned long long)vo.objects, (unsigned long long)vo.bytes,
		        compat->name);
	return 0;
}

/* PACKWIRE_TEST_COMPAT_LOCKED=FIFO: with the writers' lock taken, wait
 * until a line can be read from FIFO (a test runs a second writer then). */
void pw_cli_compat_locked_hook(void)
{
	const char *fifo = getenv("PACKWIRE_TEST_COMPAT_LOCKED");
	char line[64];
	FILE *f;

	if (!fifo || !*fifo || !(f = fopen(fifo, "r")))
		return;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
}

/* compat build's work, with the writers' lock held: the maps, the
 * extension (with --object-format), then the stored view. */
static int build_locked(struct pw_repo *repo, const struct pw_hash_algo *compat, const char *opt,
                        int view, int quiet, struct pw_compat_build_opts *o)
{
	const struct pw_hash_algo *storage = pw_repo_algo(repo);
	struct pw_error err = {0};
	struct timespec t0, t1;
	int rc;

	pw_cli_compat_locked_hook();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (pw_compat_build(pw_repo_objects_dir(repo), storage, compat, o, &err))
		return pw_cli_fatal("compat build: %s", err.msg);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (opt) {
		char *cfg = malloc(strlen(pw_repo_git_dir(repo)) + 8);

		if (!cfg)
			return pw_cli_fatal("out of memory");
		sprintf(cfg, "%s/config", pw_repo_git_dir(repo));
		rc = pw_config_set_in_file(cfg, "core.repositoryformatversion", "1", &err);
		if (!rc)
			rc = pw_config_set_in_file(cfg, "extensions.compatObjectFormat",
			                           compat->name, &err);
		free(cfg);
		if (rc)
			return pw_cli_fatal("%s", err.msg);
	}
	if (!quiet)
		fprintf(stderr,
		        "compat build: %llu objects (%llu translated) %s -> %s, %llu pack maps and "
		        "%llu loose entries written (%llu bytes), %llu submodule commits mapped "
		        "in %.2f s\n",
		        (unsigned long long)o->objects, (unsigned long long)o->translated,
		        storage->name, compat->name, (unsigned long long)o->packs_written,
		        (unsigned long long)o->loose_written, (unsigned long long)o->bytes,
		        (unsigned long long)o->gitlinks,
		        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	if (!(view = pw_cli_compat_view_wanted(repo, view)))
		return pw_compat_view_exists(pw_repo_objects_dir(repo)) &&
		                       pw_compat_view_remove(pw_repo_objects_dir(repo), o->lock,
		                                             &err)
		               ? pw_cli_fatal("compat view pack: %s", err.msg)
		               : 0;
	return pw_cli_compat_view_write(repo, compat, o->lock, quiet);
}

static int do_build(struct pw_repo *repo, int argc, char **argv)
{
	const char *opt = NULL, *env = getenv("PACKWIRE_TEST_COMPAT_KILL"), *base = NULL;
	const struct pw_hash_algo *storage = pw_repo_algo(repo), *compat;
	struct pw_compat_build_opts o = {0};
	struct kill_hook k = {env ? atol(env) : 0, 0};
	struct pw_error err = {0};
	struct pw_compat_submodules *subs = NULL;
	int quiet = 0, rc, view = -1;

	for (int i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--object-format=", 16))
			opt = argv[i] + 16;
		else if (!strcmp(argv[i], "--view-pack"))
			view = 1;
		else if (!strcmp(argv[i], "--no-view-pack"))
			view = 0;
		else if (!strncmp(argv[i], "--submodule=", 12)) {
			if ((rc = pw_cli_submodule_opt(&subs, argv[i] + 12)))
				return rc;
		} else if (!strncmp(argv[i], "--submodule-base=", 17) && argv[i][17])
			base = argv[i] + 17;
		else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
			quiet = 1;
		else
			return pw_cli_usage(usage_str);
	}
	if (!(compat = compat_of(repo, opt)))
		return pw_cli_fatal("unknown object format '%s'", opt);
	if (compat->id == storage->id)
		return pw_cli_fatal("the compat object format must differ from the storage format "
		                    "(%s)",
		                    storage->name);
	o.progress = progress;
	o.progress_data = &quiet;
	o.before_publish = before_publish;
	o.before_publish_data = &k;
	if ((rc = pw_cli_submodules_repo(&subs, repo, base))) {
		pw_compat_submodules_free(subs);
		return rc;
	}
	o.submodules = subs;
	/* one writer at a time rewrites the map and the view */
	if (pw_compat_lock(&o.lock, pw_repo_objects_dir(repo), &err))
		rc = pw_cli_fatal("compat build: %s", err.msg);
	else
		rc = build_locked(repo, compat, opt, view, quiet, &o);
	pw_compat_unlock(o.lock);
	pw_compat_submodules_free(subs);
	return rc;
}

static int lookup_one(struct pw_compat_map *map, const struct pw_hash_algo *in, int reverse,
                      const char *arg, size_t len)
{
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid a, b;
	int rc;

	if (pw_oid_from_hex(&a, arg, len, in))
		return pw_cli_fatal("not a %s object id: %.*s", in->name, (int)len, arg);
	rc = reverse ? pw_compat_to_storage(map, &a, &b) : pw_compat_from_storage(map, &a, &b);
	if (rc == PW_ENOTFOUND)
		return pw_cli_error("no mapping for %.*s", (int)len, arg);
	if (rc)
		return pw_cli_fatal("%s", pw_compat_map_error(map)->msg);
	puts(pw_oid_to_hex(&b, hex));
	return 0;
}

static int do_lookup(struct pw_repo *repo, int argc, char **argv)
{
	const struct pw_hash_algo *storage = pw_repo_algo(repo), *compat = compat_of(repo, NULL);
	struct pw_compat_map *map;
	struct pw_error err = {0};
	int reverse = 0, use_stdin = 0, i, rc = 0, status = 0;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--reverse"))
			reverse = 1;
		else if (!strcmp(argv[i], "--stdin"))
			use_stdin = 1;
		else
			return pw_cli_usage(usage_str);
	}
	if (use_stdin == (i < argc))
		return pw_cli_usage(usage_str);
	if (pw_compat_map_open(&map, pw_repo_objects_dir(repo), storage, compat, &err))
		return pw_cli_fatal("%s", err.msg);
	if (use_stdin) {
		char line[256];

		while (fgets(line, sizeof(line), stdin)) {
			size_t n = strcspn(line, "\r\n");

			if ((rc = lookup_one(map, reverse ? compat : storage, reverse, line, n))) {
				if (rc == PW_EXIT_FATAL)
					break;
				status = 1;
			}
			fflush(stdout);
		}
	} else {
		for (; i < argc; i++)
			if ((rc = lookup_one(map, reverse ? compat : storage, reverse, argv[i],
			                     strlen(argv[i])))) {
				if (rc == PW_EXIT_FATAL)
					break;
				status = 1;
			}
	}
	pw_compat_map_free(map);
	return rc == PW_EXIT_FATAL ? rc : status;
}

/* The stored view, when there is one: 1 when it is damaged or stale. */
static int verify_view(const char *od, const struct pw_hash_algo *storage,
                       const struct pw_hash_algo *compat)
{
	struct pw_compat_map *map;
	struct pw_error err = {0};
	char name[PW_MAX_HEXSZ + 1];
	uint64_t n = 0;
	int rc;

	if (!pw_compat_view_exists(od))
		return 0;
	if (pw_compat_map_open(&map, od, storage, compat, &err)) {
		fprintf(stderr, "error: %s\n", err.msg);
		return 1;
	}
	rc = pw_compat_view_verify(od, map, &n, name, &err);
	pw_compat_map_free(map);
	if (rc) {
		fprintf(stderr, "error: %s\n", err.msg);
		return 1;
	}
	printf("view pack pack-%s ok: %llu objects\n", name, (unsigned long long)n);
	return 0;
}

static int do_verify(struct pw_repo *repo)
{
	const struct pw_hash_algo *storage = pw_repo_algo(repo), *compat = compat_of(repo, NULL);
	const char *od = pw_repo_objects_dir(repo);
	struct pw_compat_map *map;
	struct pw_error err = {0};
	struct pw_buf b = PW_BUF_INIT;
	int bad = 0, n = 0;
	char path[4096];

	/* loose-object-idx parses (the map open reads it) */
	if (pw_compat_map_open(&map, od, storage, compat, &err))
		return pw_cli_fatal("%s", err.msg);
	pw_compat_map_free(map);
	snprintf(path, sizeof(path), "%s/pack", od);
	{
		/* every pack-*.compat, checked against the .idx beside it */
		DIR *d = opendir(path);
		struct dirent *de;

		while (d && (de = readdir(d))) {
			size_t l = strlen(de->d_name);
			char idx[8300], mp[8300];

			if (l < 8 || strcmp(de->d_name + l - 7, ".compat"))
				continue;
			snprintf(mp, sizeof(mp), "%s/%s", path, de->d_name);
			snprintf(idx, sizeof(idx), "%s/%.*s.idx", path, (int)(l - 7), de->d_name);
			n++;
			if (pw_compat_pack_map_verify(mp, idx, storage, &err)) {
				fprintf(stderr, "error: %s\n", err.msg);
				bad++;
			}
		}
		if (d)
			closedir(d);
	}
	pw_buf_free(&b);
	bad += verify_view(od, storage, compat);
	if (bad)
		return 1;
	printf("%d pack maps ok\n", n);
	return 0;
}

static int out_fd(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	(void)ctx;
	if (fwrite(data, 1, len, stdout) != len)
		return pw_error_set(err, PW_EIO, "unable to write to stdout");
	return 0;
}

/* The objects listed on stdin (ids of either algorithm, one per line, any
 * text after the id ignored, as rev-list --objects prints them) as a pack
 * of the compat algorithm on stdout, each object whole. */
static int do_pack_objects(struct pw_repo *repo, int argc, char **argv)
{
	const struct pw_hash_algo *storage = pw_repo_algo(repo), *compat = pw_cli_compat_algo(repo);
	struct pw_compat_map *map = NULL;
	struct pw_odb *odb = NULL;
	struct pw_error err = {0};
	struct pw_oid *oids = NULL;
	size_t nr = 0, alloc = 0;
	char line[1024];
	int rc = 0;

	if (argc != 2 || strcmp(argv[1], "--stdout"))
		return pw_cli_usage(usage_str);
	if (pw_compat_map_open(&map, pw_repo_objects_dir(repo), storage, compat, &err) ||
	    pw_odb_open(&odb, pw_repo_objects_dir(repo), storage, &err)) {
		pw_compat_map_free(map);
		return pw_cli_fatal("%s", err.msg);
	}
	while (!rc && fgets(line, sizeof(line), stdin)) {
		size_t n = strcspn(line, " \r\n");
		struct pw_oid o, c;

		if (!n)
			continue;
		if (nr == alloc) {
			struct pw_oid *no =
			        realloc(oids, (alloc = alloc ? 2 * alloc : 1024) * sizeof(*no));

			if (!no) {
				rc = pw_cli_fatal("out of memory");
				break;
			}
			oids = no;
		}
		if (n == storage->hexsz && !pw_oid_from_hex(&o, line, n, storage)) {
			oids[nr++] = o;
		} else if (n == compat->hexsz && !pw_oid_from_hex(&c, line, n, compat) &&
		           !pw_compat_to_storage(map, &c, &o)) {
			oids[nr++] = o;
		} else {
			line[n] = 0;
			rc = pw_cli_fatal("not an object id with a mapping: %s", line);
		}
	}
	if (!rc && pw_compat_write_pack(odb, map, oids, nr, out_fd, NULL, NULL, &err))
		rc = pw_cli_fatal("%s", err.msg);
	if (!rc && fflush(stdout))
		rc = pw_cli_fatal("unable to write to stdout");
	free(oids);
	pw_odb_free(odb);
	pw_compat_map_free(map);
	return rc;
}

int cmd_compat(int argc, char **argv)
{
	struct pw_repo *repo;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "-h"))
		return pw_cli_usage(usage_str);
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	if (!strcmp(argv[1], "build"))
		rc = do_build(repo, argc - 1, argv + 1);
	else if (!strcmp(argv[1], "lookup"))
		rc = do_lookup(repo, argc - 1, argv + 1);
	else if (!strcmp(argv[1], "pack-objects"))
		rc = do_pack_objects(repo, argc - 1, argv + 1);
	else if (!strcmp(argv[1], "verify") && argc == 2)
		rc = do_verify(repo);
	else
		rc = pw_cli_usage(usage_str);
	pw_repo_free(repo);
	return rc;
}
