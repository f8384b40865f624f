/* packwire bundle create [--version=2|3] [-q|--quiet] [--progress] <file> <rev-list-args>
 *                 verify [-q|--quiet] <file>
 *                 list-heads <file> [<refname>...]
 *                 unbundle [--progress] <file> [<refname>...]
 * as git bundle does; "-" is standard output (create) or input (the rest). */
#define _XOPEN_SOURCE 700
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/bundle.h"
#include "packwire/packwire.h"
#include "packwire/repo.h"
#include "progress.h"

static const char usage_str[] =
        "packwire bundle create [-q | --quiet | --progress] [--version=<version>] <file> "
        "<git-rev-list-args>\n"
        "   or: packwire bundle verify [-q | --quiet] <file>\n"
        "   or: packwire bundle list-heads <file> [<refname>...]\n"
        "   or: packwire bundle unbundle [--progress] <file> [<refname>...]";

/* Git's --since forms that scripts use: a Unix time ("@" optional),
 * "YYYY-MM-DD[( |T)HH:MM[:SS]]" (UTC; without a time, now's time of day) and "<n>.<unit>.ago" /
 * "<n> <unit> ago". 0 with *out set, -1 when not understood. */
static int parse_date(const char *s, int64_t *out)
{
	const char *p = s;
	char unit[32];
	long long n;
	size_t k = 0;
	struct tm tm;
	char *end;

	if (*p == '@')
		p++;
	n = strtoll(p, &end, 10);
	if (end != p && !*end && (p != s || n > 99999999)) {
		*out = n;
		return 0;
	}
	memset(&tm, 0, sizeof(tm));
	if (sscanf(s, "%d-%d-%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) == 3) {
		const char *t = strpbrk(s, " T");

		if (t) {
			sscanf(t + 1, "%d:%d:%d", &tm.tm_hour, &tm.tm_min, &tm.tm_sec);
		} else {
			/* a date alone keeps the time of day of now, as Git's approxidate */
			time_t now = time(NULL);
			struct tm g;

			gmtime_r(&now, &g);
			tm.tm_hour = g.tm_hour;
			tm.tm_min = g.tm_min;
			tm.tm_sec = g.tm_sec;
		}
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		*out = (int64_t)timegm(&tm);
		return 0;
	}
	p = s;
	n = strtoll(p, &end, 10);
	if (end == p)
		return -1;
	p = end;
	while (*p == '.' || *p == ' ' || *p == '_')
		p++;
	while (isalpha((unsigned char)*p) && k < sizeof(unit) - 1)
		unit[k++] = (char)tolower((unsigned char)*p++);
	unit[k] = 0;
	if (k > 1 && unit[k - 1] == 's')
		unit[--k] = 0;
	while (*p == '.' || *p == ' ' || *p == '_')
		p++;
	if (strcmp(p, "ago"))
		return -1;
	{
		static const struct {
			const char *name;
			int64_t secs;
		} units[] = {{"second", 1},        {"minute", 60},      {"hour", 3600},
		             {"day", 86400},       {"week", 7 * 86400}, {"month", 30 * 86400},
		             {"year", 365 * 86400}};
		size_t i;

		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (!strcmp(unit, units[i].name)) {
				*out = (int64_t)time(NULL) - n * units[i].secs;
				return 0;
			}
	}
	return -1;
}

static void print_refs(const struct pw_bundle_ref *v, size_t nr, FILE *f, int argc, char **argv)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int j;

	for (i = 0; i < nr; i++) {
		if (argc) {
			for (j = 0; j < argc && strcmp(v[i].name, argv[j]); j++)
				;
			if (j == argc)
				continue;
		}
		fprintf(f, "%s %s\n", pw_oid_to_hex(&v[i].oid, hex), v[i].name);
	}
}

static int open_bundle(struct pw_bundle **b, const char *path)
{
	struct pw_error err = {0};
	int rc = pw_bundle_open(b, path, &err);

	if (rc == PW_ENOTFOUND)
		return pw_cli_error("could not open '%s'", path);
	if (rc)
		return pw_cli_error("%s", err.msg);
	return 0;
}

static int cmd_create(int argc, char **argv)
{
	struct pw_bundle_create_opts o;
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	const char **args;
	const char *file = NULL, *v;
	char *lock = NULL;
	int i, quiet = 0, progress = -1, fd = 1, rc, nargs = 0, options_done = 0;

	memset(&o, 0, sizeof(o));
	o.max_count = -1;
	args = calloc((size_t)argc + 1, sizeof(*args));
	if (!args)
		return pw_cli_fatal("out of memory");
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!file && !options_done) {
			if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
				quiet = 1;
				continue;
			} else if (!strcmp(a, "--progress")) {
				progress = 1;
				continue;
			} else if (!strcmp(a, "--no-progress")) {
				progress = 0;
				continue;
			} else if (!strcmp(a, "--all-progress") ||
			           !strcmp(a, "--all-progress-implied")) {
				continue;
			} else if (pw_cli_opt_value(argc, argv, &i, "--version", NULL, &v)) {
				char *end;

				o.version = (int)strtol(v, &end, 10);
				if (*end || (o.version != 2 && o.version != 3)) {
					free(args);
					return pw_cli_fatal("unsupported bundle version %s", v);
				}
				continue;
			} else if (!strcmp(a, "--")) {
				options_done = 1;
				continue;
			} else if (a[0] == '-' && a[1]) {
				free(args);
				return pw_cli_unknown_option(a, usage_str);
			}
		}
		if (!file) {
			file = a;
			continue;
		}
		if (pw_cli_opt_value(argc, argv, &i, "--since", NULL, &v) ||
		    pw_cli_opt_value(argc, argv, &i, "--after", NULL, &v) ||
		    pw_cli_opt_value(argc, argv, &i, "--max-age", NULL, &v)) {
			if (parse_date(v, &o.since)) {
				free(args);
				return pw_cli_fatal("cannot parse date '%s'", v);
			}
		} else if (pw_cli_opt_value(argc, argv, &i, "--max-count", "-n", &v)) {
			o.max_count = strtol(v, NULL, 10);
		} else if (a[0] == '-' && isdigit((unsigned char)a[1])) {
			o.max_count = strtol(a + 1, NULL, 10);
		} else if (!strcmp(a, "--")) {
			continue;
		} else if (a[0] == '-' && a[1] == '-' && strcmp(a, "--all") && strcmp(a, "--not")) {
			free(args);
			return pw_cli_fatal("unrecognized argument: %s", a);
		} else {
			args[nargs++] = a;
		}
	}
	if (!file) {
		free(args);
		return pw_cli_usage(usage_str);
	}
	if ((rc = pw_cli_open_repo(&repo))) {
		free(args);
		return rc;
	}
	o.args = args;
	o.nr_args = (size_t)nargs;
	o.progress = progress >= 0 ? progress : pw_cli_progress_wanted(quiet);
	if (quiet)
		o.progress = 0;
	pw_cli_report(&o.report, pw_cli_progress);
	if (strcmp(file, "-")) {
		size_t n = strlen(file) + 6;

		lock = malloc(n);
		if (!lock) {
			rc = pw_cli_fatal("out of memory");
			goto out;
		}
		snprintf(lock, n, "%s.lock", file);
		fd = open(lock, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		if (fd < 0) {
			rc = pw_cli_fatal("Unable to create '%s': %s", lock, strerror(errno));
			free(lock);
			lock = NULL;
			goto out;
		}
	}
	rc = pw_bundle_create(repo, &o, fd, &err);
	if (lock) {
		if (close(fd) && !rc)
			rc = pw_error_set(&err, PW_EIO, "writing '%s': %s", lock, strerror(errno));
		if (!rc && rename(lock, file))
			rc = pw_error_set(&err, PW_EIO, "cannot rename '%s': %s", lock,
			                  strerror(errno));
		if (rc)
			unlink(lock);
	}
	rc = rc ? pw_cli_fatal("%s", err.msg) : 0;
out:
	free(lock);
	free(args);
	pw_repo_free(repo);
	return rc;
}

static int cmd_verify(int argc, char **argv)
{
	struct pw_repo *repo = NULL;
	struct pw_bundle *b = NULL;
	struct pw_error err = {0};
	const struct pw_bundle_header *h;
	struct pw_oid *missing = NULL;
	const char *file = NULL;
	size_t nr = 0, i;
	int quiet = 0, rc;

	for (i = 1; i < (size_t)argc; i++) {
		if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
			quiet = 1;
		else if (argv[i][0] == '-' && argv[i][1])
			return pw_cli_unknown_option(argv[i], usage_str);
		else if (!file)
			file = argv[i];
		else
			return pw_cli_usage(usage_str);
	}
	if (!file)
		return pw_cli_usage(usage_str);
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	if ((rc = open_bundle(&b, file)))
		goto out;
	h = pw_bundle_get_header(b);
	if ((rc = pw_bundle_missing_prereqs(b, repo, &missing, &nr, &err))) {
		rc = pw_cli_error("%s", err.msg);
		goto out;
	}
	if (nr) {
		char hex[PW_MAX_HEXSZ + 1];

		pw_cli_error("Repository lacks these prerequisite commits:");
		for (i = 0; i < nr; i++)
			pw_cli_error("%s ", pw_oid_to_hex(&missing[i], hex));
		rc = 1;
		goto out;
	}
	if (!quiet) {
		if (h->nr_refs == 1)
			printf("The bundle contains this ref:\n");
		else
			printf("The bundle contains these %zu refs:\n", h->nr_refs);
		print_refs(h->refs, h->nr_refs, stdout, 0, NULL);
		if (!h->nr_prereqs) {
			printf("The bundle records a complete history.\n");
		} else {
			char hex[PW_MAX_HEXSZ + 1];

			if (h->nr_prereqs == 1)
				printf("The bundle requires this ref:\n");
			else
				printf("The bundle requires these %zu refs:\n", h->nr_prereqs);
			for (i = 0; i < h->nr_prereqs; i++)
				printf("%s \n", pw_oid_to_hex(&h->prereqs[i].oid, hex));
		}
		printf("The bundle uses this hash algorithm: %s\n", h->algo->name);
		if (h->filter)
			printf("The bundle uses this filter: %s\n", h->filter);
		fflush(stdout);
	}
	fprintf(stderr, "%s is okay\n", file);
out:
	free(missing);
	pw_bundle_free(b);
	pw_repo_free(repo);
	return rc;
}

static int cmd_list_heads(int argc, char **argv)
{
	struct pw_bundle *b = NULL;
	const struct pw_bundle_header *h;
	int rc;

	if (argc < 2)
		return pw_cli_usage(usage_str);
	if (argv[1][0] == '-' && argv[1][1])
		return pw_cli_unknown_option(argv[1], usage_str);
	if ((rc = open_bundle(&b, argv[1])))
		return rc;
	h = pw_bundle_get_header(b);
	print_refs(h->refs, h->nr_refs, stdout, argc - 2, argv + 2);
	pw_bundle_free(b);
	return fflush(stdout) ? pw_cli_fatal("writing the output failed") : 0;
}

static int cmd_unbundle(int argc, char **argv)
{
	struct pw_bundle_read_opts ro;
	struct pw_fetch_result res;
	struct pw_repo *repo = NULL;
	struct pw_bundle *b = NULL;
	struct pw_error err = {0};
	const struct pw_bundle_header *h;
	int i = 1, rc, progress = 0;

	memset(&ro, 0, sizeof(ro));
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (!strcmp(argv[i], "--progress"))
			progress = 1;
		else if (!strcmp(argv[i], "--no-progress"))
			progress = 0;
		else
			return pw_cli_unknown_option(argv[i], usage_str);
	}
	if (i >= argc)
		return pw_cli_usage(usage_str);
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	if ((rc = open_bundle(&b, argv[i])))
		goto out;
	ro.progress = progress;
	pw_cli_report(&ro.report, NULL);
	if (pw_bundle_unbundle(b, repo, &ro, &res, &err)) {
		rc = pw_cli_error("%s", err.msg);
		pw_fetch_result_free(&res);
		goto out;
	}
	pw_fetch_result_free(&res);
	h = pw_bundle_get_header(b);
	print_refs(h->refs, h->nr_refs, stdout, argc - i - 1, argv + i + 1);
	if (fflush(stdout))
		rc = pw_cli_fatal("writing the output failed");
out:
	pw_bundle_free(b);
	pw_repo_free(repo);
	return rc;
}

int cmd_bundle(int argc, char **argv)
{
	if (argc < 2)
		return pw_cli_usage(usage_str);
	if (!strcmp(argv[1], "create"))
		return cmd_create(argc - 1, argv + 1);
	if (!strcmp(argv[1], "verify"))
		return cmd_verify(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list-heads"))
		return cmd_list_heads(argc - 1, argv + 1);
	if (!strcmp(argv[1], "unbundle"))
		return cmd_unbundle(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return pw_cli_usage(usage_str);
	pw_cli_error("unknown subcommand: `%s'", argv[1]);
	return pw_cli_usage(usage_str);
}
