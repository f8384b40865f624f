#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/packwire.h"

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct cmd commands[] = {
        {"cat-file", cmd_cat_file, "print objects, their type or size"},
        {"clone", cmd_clone, "clone a repository (SHA-1 or SHA-256) from a server"},
        {"fetch", cmd_fetch, "download objects and refs from a server"},
        {"hash-object", cmd_hash_object, "compute the object id of a file"},
        {"http-backend", cmd_http_backend, "serve Git over HTTP as a CGI program (git http-backend)"},
        {"index-pack", cmd_index_pack, "build the .idx of a pack"},
        {"init", cmd_init, "create an empty repository (SHA-1 or SHA-256)"},
        {"ls-remote", cmd_ls_remote, "list the refs of a remote repository"},
        {"pack-objects", cmd_pack_objects, "write a pack of the given objects"},
        {"push", cmd_push, "update remote refs and send the objects they need"},
        {"receive-pack", cmd_receive_pack, "receive what is pushed into a repository"},
        {"rev-list", cmd_rev_list, "list commits and objects reachable from revisions"},
        {"rev-parse", cmd_rev_parse, "resolve refs and show repository facts"},
        {"show-index", cmd_show_index, "list the entries of a pack index"},
        {"show-ref", cmd_show_ref, "list references"},
        {"update-ref", cmd_update_ref, "update references safely"},
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

int main(int argc, char **argv)
{
	size_t i;

	/* global "-c key=value" options, as git -c */
	while (argc >= 3 && !strcmp(argv[1], "-c")) {
		if (!argv[2][0] || argv[2][0] == '=' || pw_cli_config_override(argv[2]))
			return pw_cli_fatal("bad -c option '%s'", argv[2]);
		argv[2] = argv[0];
		argc -= 2;
		argv += 2;
	}
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
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "packwire: '%s' is not a packwire command. See 'packwire --help'.\n",
	        argv[1]);
	return 1;
}
