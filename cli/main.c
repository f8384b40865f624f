#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>
#endif

#include "client-util.h"
#include "cmds.h"
#include "packwire/packwire.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct cmd commands[] = {
        {"bundle", cmd_bundle, "create, verify, list and unpack bundle files"},
        {"cat-file", cmd_cat_file, "print objects, their type or size"},
        {"cluster", cmd_cluster, "put a repository under a cluster's care (cluster add)"},
        {"clone", cmd_clone, "clone a repository (SHA-1 or SHA-256) from a server"},
        {"compat", cmd_compat, "map object ids between SHA-1 and SHA-256 (compatObjectFormat)"},
        {"convert", cmd_convert, "migrate a repository into the other algorithm (SHA-1, SHA-256)"},
        {"daemon", cmd_daemon, "serve repositories over git:// (git daemon)"},
        {"fetch", cmd_fetch, "download objects and refs from a server"},
        {"hash-file", cmd_hash_file,
         "print the SHA-1 or SHA-256 of files, refusing collision attacks (sha1sum)"},
        {"hash-object", cmd_hash_object, "compute the object id of a file"},
        {"http-backend", cmd_http_backend,
         "serve Git over HTTP as a CGI program (git http-backend)"},
        {"index-pack", cmd_index_pack, "build the .idx of a pack"},
        {"init", cmd_init, "create an empty repository (SHA-1 or SHA-256)"},
        {"ls-remote", cmd_ls_remote, "list the refs of a remote repository"},
        {"pack-objects", cmd_pack_objects, "write a pack of the given objects"},
        {"repack", cmd_repack, "pack everything reachable into one pack (and a bitmap)"},
        {"push", cmd_push, "update remote refs and send the objects they need"},
        {"receive-pack", cmd_receive_pack, "receive what is pushed into a repository"},
        {"remote-http", cmd_remote_http, "be git's remote helper for http:// (git-remote-http)"},
        {"remote-https", cmd_remote_http, "be git's remote helper for https:// (git-remote-https)"},
        {"rev-list", cmd_rev_list, "list commits and objects reachable from revisions"},
        {"rev-parse", cmd_rev_parse, "resolve refs and show repository facts"},
        {"serve", cmd_serve, "serve repositories over HTTP(S) with an embedded server"},
        {"show-index", cmd_show_index, "list the entries of a pack index"},
        {"show-ref", cmd_show_ref, "list references"},
        {"update-ref", cmd_update_ref, "update references safely"},
        {"update-server-info", cmd_update_server_info,
         "write info/refs and objects/info/packs for dumb HTTP clients"},
        {"upload-pack", cmd_upload_pack, "send objects to a fetching client (git upload-pack)"},
        {"verify-pack", cmd_verify_pack, "check packs and show their objects"},
        {"version", cmd_version, "print the packwire version"},
};

int pw_cli_fatal(const char *fmt, ...)
{
	va_list ap;

	fputs("fatal: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return PW_EXIT_FATAL;
}

int pw_cli_error(const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

/* "packwire <cmd> -h": the usage is the answer, so it goes to stdout (as git) */
static int help_requested;

int pw_cli_usage(const char *usage)
{
	fprintf(help_requested ? stdout : stderr, "usage: %s\n", usage);
	return PW_EXIT_USAGE;
}

int pw_cli_opt_value(int argc, char **argv, int *i, const char *name, const char *shortname,
                     const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(name);

	if (!strncmp(a, name, n) && a[n] == '=') {
		*val = a + n + 1;
		return 1;
	}
	if ((!strcmp(a, name) || (shortname && !strcmp(a, shortname))) && *i + 1 < argc) {
		*val = argv[++*i];
		return 1;
	}
	return 0;
}

int pw_cli_unknown_option(const char *arg, const char *usage)
{
	if (arg[0] == '-' && arg[1] && strcmp(arg, "-h")) {
		if (arg[1] == '-')
			fprintf(stderr, "error: unknown option `%s'\n", arg + 2);
		else
			fprintf(stderr, "error: unknown switch `%c'\n", arg[1]);
	}
	return pw_cli_usage(usage);
}

int pw_cli_progress_wanted(int quiet)
{
	return !quiet && isatty(2);
}

int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("packwire version %s\n", PW_VERSION);
	return 0;
}

static void list_commands(FILE *f)
{
	size_t i;

	fprintf(f, "usage: packwire <command> [<args>]\n\ncommands:\n");
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "   %-14s %s\n", commands[i].name, commands[i].help);
}

static const char global_usage[] =
        "usage: packwire [-C <path>] [-c <name>=<value>] [--git-dir=<path>] "
        "[--work-tree=<path>]\n"
        "                <command> [<args>]\n";

/* "--name=V" or "--name V" at argv[*i]; *val NULL when the value is missing. */
static int global_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t n = strlen(name);

	if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') {
		*val = argv[*i] + n + 1;
		return 1;
	}
	if (strcmp(argv[*i], name))
		return 0;
	*val = *i + 1 < argc ? argv[++*i] : NULL;
	return 1;
}

static int missing_value(const char *what)
{
	fprintf(stderr, "%s\n%s", what, global_usage);
	return PW_EXIT_USAGE;
}

/* Git's options before the command: -C <path> (each relative to the one
 * before), -c <name>[=<value>], --git-dir[=]<path>, --work-tree[=]<path>.
 * Like git they become the process state its children inherit: the
 * directory, GIT_CONFIG_PARAMETERS, GIT_DIR and GIT_WORK_TREE (read back
 * by pw_cli_env()). *first gets the index of the command; returns -1 when
 * all went well, else an exit code. */
static int global_options(int argc, char **argv, int *first)
{
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i], *v;

		if (!strcmp(a, "-C")) {
			if (i + 1 >= argc)
				return missing_value("no directory given for '-C' option");
			v = argv[++i];
			if (*v && chdir(v))
				return pw_cli_fatal("cannot change to '%s': %s", v,
				                    strerror(errno));
		} else if (!strcmp(a, "-c")) {
			if (i + 1 >= argc)
				return missing_value("-c expects a configuration string");
			v = argv[++i];
			if (!v[0] || v[0] == '=' || pw_cli_config_override(v))
				return pw_cli_fatal("bad -c option '%s'", v);
		} else if (global_value(argc, argv, &i, "--git-dir", &v)) {
			if (!v)
				return missing_value("no directory given for '--git-dir' option");
			if (setenv("GIT_DIR", v, 1))
				return pw_cli_fatal("out of memory");
		} else if (global_value(argc, argv, &i, "--work-tree", &v)) {
			if (!v)
				return missing_value("no directory given for '--work-tree' option");
			if (setenv("GIT_WORK_TREE", v, 1))
				return pw_cli_fatal("out of memory");
		} else {
			break; /* --version, --help, -h, or an unknown option */
		}
	}
	*first = i;
	return -1;
}

/* A command runs once and exits: keep the memory it frees for its own
 * later allocations. By default glibc gives back a freed block of more
 * than 128 KiB (mmap) and the heap's free top, and the next allocation
 * takes fresh pages, each a page fault; on a virtual machine a fault
 * costs more than inflating a delta again (an incremental fetch served:
 * 3,600 faults, a third of its CPU). Not for the servers that run for
 * days (serve, cluster): there, memory given back matters more.
 *
 * For the commands that serve fetches, the heap's first HEAP_HUGE bytes
 * are also made eligible for transparent huge pages (what glibc's tunable
 * glibc.malloc.hugetlb=1 does, without the environment): one fault per
 * 2 MiB touched. A served fetch of v2.0.0: 1,140 faults -> 450-800, 49-65
 * -> 38-46 ms of CPU. Elsewhere it only rounded the peak RSS up (2-9 MiB:
 * index-pack 25.7 -> 28 MiB, a sha256 push received 34 -> 43 MiB) for
 * no CPU (index-pack of v2.0.0: 2.29 s either way, 6 paired runs). At 30
 * MiB, a clone of v2.0.0 served without bitmaps still took 2,840 faults
 * past it (the delta base cache's 16 MiB); at 62 MiB, 1,070. */
#define HEAP_HUGE ((size_t)62 << 20)
static void tune_malloc(const char *cmd)
{
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
	uint8_t *heap;

	if (!strcmp(cmd, "serve") || !strcmp(cmd, "cluster"))
		return;
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	if (!strcmp(cmd, "upload-pack") || !strcmp(cmd, "http-backend")) {
		/* from the heap (sbrk), not a mapping of its own (glibc maps
		 * no block of more than 32 MiB from the heap while it may
		 * map); freed, it stays */
		mallopt(M_MMAP_MAX, 0);
		if ((heap = malloc(HEAP_HUGE))) {
			uintptr_t a =
			        ((uintptr_t)heap + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);

			if (a < (uintptr_t)heap + HEAP_HUGE)
				(void)madvise((void *)a, (uintptr_t)heap + HEAP_HUGE - a,
				              MADV_HUGEPAGE);
			free(heap);
		}
		mallopt(M_MMAP_MAX, 65536); /* glibc's default */
	}
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
#else
	(void)cmd;
#endif
}

int main(int argc, char **argv)
{
	size_t i;
	int first = 1, rc;

	if ((rc = global_options(argc, argv, &first)) >= 0)
		return rc;
	argv[first - 1] = argv[0];
	argc -= first - 1;
	argv += first - 1;
	if (argc < 2) {
		list_commands(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "--version"))
		return cmd_version(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		list_commands(stdout);
		return 0;
	}
	help_requested = argc == 3 && !strcmp(argv[2], "-h");
	tune_malloc(argv[1]);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "packwire: '%s' is not a packwire command. See 'packwire --help'.\n",
	        argv[1]);
	return 1;
}
