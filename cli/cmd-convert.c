/* packwire convert --to=(sha1|sha256) [-q | --quiet] [--progress] SRC DST:
 * a new repository at DST holding SRC's history in the other algorithm,
 * with the compat map back to SRC's ids (packwire/convert.h). */
#include <dirent.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/client.h"
#include "packwire/convert.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "progress.h"

/* The conversion runs in a child; a signal that stops it (forwarded from
 * us) leaves this process to remove what it wrote. */
static volatile pid_t child;

static void forward(int sig)
{
	if (child > 0)
		kill(child, sig);
}

/* 1 when dst is absent, 2 when it is an empty directory, 0 otherwise (the
 * conversion refuses it and writes nothing there). */
static int dst_state(const char *dst)
{
	struct stat st;
	struct dirent *de;
	DIR *d;
	int empty = 1;

	if (stat(dst, &st))
		return 1;
	if (!S_ISDIR(st.st_mode) || !(d = opendir(dst)))
		return 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty ? 2 : 0;
}

/* PACKWIRE_TEST_CONVERT_KILL=TITLE: the converting process dies by SIGKILL
 * at the first progress report of that phase (the cleanup test). */
static const char *kill_at;
static pw_progress_fn shown;

static void report(void *data, const char *title, uint64_t n, uint64_t total, int done)
{
	if (kill_at && !strcmp(kill_at, title)) {
		fflush(NULL);
		raise(SIGKILL);
	}
	if (shown)
		shown(data, title, n, total, done);
}

/* A non-bare destination gets its HEAD checked out, as a clone does. */
static int checkout(const char *dst, struct pw_error *err)
{
	struct pw_repo *repo;
	struct pw_oid head;
	int rc;

	if ((rc = pw_repo_open(&repo, dst, err)))
		return rc;
	if (!pw_repo_is_bare(repo) && !pw_refs_resolve(repo, "HEAD", &head, NULL))
		rc = pw_checkout_fresh(repo, &head, err);
	pw_repo_free(repo);
	return rc;
}

static int convert(const char *src, const char *dst, const struct pw_hash_algo *to,
                   struct pw_convert_opts *opts, int quiet, int state)
{
	struct pw_error err = {0};

	if (pw_convert_repo(src, dst, to, opts, &err))
		return pw_cli_fatal("convert: %s", err.msg);
	if (checkout(dst, &err)) {
		pw_convert_discard(dst, state == 2);
		return pw_cli_fatal("convert: checkout: %s", err.msg);
	}
	if (!quiet)
		fprintf(stderr,
		        "converted %s to %s in %s: %llu objects (%u deltas, %llu bytes), "
		        "%llu refs, %llu reflogs\n",
		        src, to->name, dst, (unsigned long long)opts->objects, opts->deltas,
		        (unsigned long long)opts->pack_bytes, (unsigned long long)opts->refs,
		        (unsigned long long)opts->reflogs);
	return 0;
}

static int run_child(const char *src, const char *dst, const struct pw_hash_algo *to,
                     struct pw_convert_opts *opts, int quiet)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	struct sigaction sa;
	int state = dst_state(dst), st;
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = state ? fork() : -1;
	if (pid <= 0) {
		int rc = convert(src, dst, to, opts, quiet, state);

		if (pid == 0) {
			fflush(stdout);
			fflush(stderr);
			_exit(rc);
		}
		return rc;
	}
	child = pid;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	while (waitpid(pid, &st, 0) < 0)
		;
	child = 0;
	if (WIFSIGNALED(st)) {
		pw_convert_discard(dst, state == 2);
		signal(WTERMSIG(st), SIG_DFL);
		raise(WTERMSIG(st));
		return 128 + WTERMSIG(st);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : PW_EXIT_FATAL;
}

/* What the source's gitlinks are mapped through after --submodule: its
 * compat.submodule.<path>.repository config and its .gitmodules URLs under
 * base (a source that cannot be opened is left to the conversion to
 * report). */
static int submodules_of(struct pw_compat_submodules **subs, const char *src, const char *base)
{
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	int rc = 0;

	if (!pw_repo_open(&repo, src, &err))
		rc = pw_cli_submodules_repo(subs, repo, base);
	pw_repo_free(repo);
	return rc;
}

int cmd_convert(int argc, char **argv)
{
	const char *usage = "packwire convert --to=(sha1|sha256) [-q | --quiet] [--progress] "
	                    "[--submodule=<path>=<repo>...] [--submodule-base=<dir>] "
	                    "<source> <destination>";
	const char *to_name = NULL, *src = NULL, *dst = NULL, *base = NULL;
	const struct pw_hash_algo *to;
	struct pw_convert_opts opts;
	struct pw_compat_submodules *subs = NULL;
	int quiet = 0, progress = -1, rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			quiet = 1;
		else if (!strncmp(a, "--submodule=", 12)) {
			if ((rc = pw_cli_submodule_opt(&subs, a + 12)))
				return rc;
		} else if (!strncmp(a, "--submodule-base=", 17) && a[17])
			base = a + 17;
		else if (!strcmp(a, "--progress"))
			progress = 1;
		else if (!strcmp(a, "--no-progress"))
			progress = 0;
		else if (pw_cli_opt_value(argc, argv, &i, "--to", NULL, &to_name))
			;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return pw_cli_usage(usage);
		else if (a[0] == '-' && a[1])
			return pw_cli_unknown_option(a, usage);
		else if (!src)
			src = a;
		else if (!dst)
			dst = a;
		else
			return pw_cli_usage(usage);
	}
	if (!to_name || !src || !dst)
		return pw_cli_usage(usage);
	if (!(to = pw_hash_by_name(to_name, strlen(to_name))))
		return pw_cli_fatal("unknown object format '%s'", to_name);
	memset(&opts, 0, sizeof(opts));
	if (progress < 0 ? pw_cli_progress_wanted(quiet) : progress && !quiet)
		shown = pw_cli_progress;
	kill_at = getenv("PACKWIRE_TEST_CONVERT_KILL");
	if (shown || kill_at)
		opts.progress = report;
	if ((rc = submodules_of(&subs, src, base))) {
		pw_compat_submodules_free(subs);
		return rc;
	}
	opts.submodules = subs;
	rc = run_child(src, dst, to, &opts, quiet);
	pw_compat_submodules_free(subs);
	return rc;
}
