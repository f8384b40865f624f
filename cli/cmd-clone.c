/* packwire clone [--bare] [--mirror] [--depth=N] [--shallow-since=DATE]
 * [--shallow-exclude=REF] [-b B] [-o NAME] [-n] [--filter=SPEC] [-q]
 * [--progress] [--upload-pack=CMD] URL [DIR] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/client.h"
#include "packwire/env.h"
#include "packwire/packwire.h"
#include "packwire/transport.h"

static const char usage_str[] =
        "packwire clone [--bare] [--mirror] [--depth=<n>] [--shallow-since=<date>] "
        "[--shallow-exclude=<ref>] [-b <branch>] [-o <name>] [-n] [--filter=<spec>] [-q] "
        "[-v] [--progress] [--upload-pack=<cmd>] <repo> [<dir>]";

/* Git's guess: last path component without "/.git" or ".git". */
static char *guess_dir(const char *url, int bare)
{
	size_t len = strlen(url), start;
	char *out;

	while (len > 1 && url[len - 1] == '/')
		len--;
	if (len >= 5 && !strncmp(url + len - 5, "/.git", 5))
		len -= 5;
	while (len > 1 && url[len - 1] == '/')
		len--;
	if (len > 4 && !strncmp(url + len - 4, ".git", 4))
		len -= 4;
	start = len;
	while (start > 0 && url[start - 1] != '/' && url[start - 1] != ':')
		start--;
	if (start == len)
		return NULL;
	out = malloc(len - start + 5);
	if (!out)
		return NULL;
	memcpy(out, url + start, len - start);
	strcpy(out + (len - start), bare ? ".git" : "");
	return out;
}

/* A plain path (not file://): git clones it by copying, and says "done." */
static int is_local_path(const char *url)
{
	struct pw_url u;
	struct pw_error err = {0};
	struct stat st;
	int local;

	if (pw_url_parse(&u, url, &err))
		return 0;
	local = u.scheme == PW_URL_LOCAL && !stat(url, &st) && S_ISDIR(st.st_mode);
	pw_url_free(&u);
	return local;
}

int cmd_clone(int argc, char **argv)
{
	struct pw_clone_opts o;
	struct pw_clone_info info;
	struct pw_error err = {0};
	const char *dir = NULL, *depth = NULL, *deepen_not[64];
	size_t nr_not = 0;
	char *guessed = NULL, *initial = NULL;
	int i, quiet = 0, progress = -1, rc, found, verbose = 0, no_local = 0;

	memset(&o, 0, sizeof(o));
	o.single_branch = -1;
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--bare")) {
			o.bare = 1;
			continue;
		}
		if (!strcmp(a, "--mirror")) {
			o.mirror = o.bare = 1;
			continue;
		}
		if (!strcmp(a, "-n") || !strcmp(a, "--no-checkout")) {
			o.no_checkout = 1;
			continue;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
			continue;
		}
		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose = 1;
			continue;
		}
		if (!strcmp(a, "--progress")) {
			progress = 1;
			continue;
		}
		if (!strcmp(a, "--single-branch")) {
			o.single_branch = 1;
			continue;
		}
		if (!strcmp(a, "--no-single-branch")) {
			o.single_branch = 0;
			continue;
		}
		if (!strcmp(a, "--no-local")) {
			no_local = 1;
			continue;
		}
		if (!strcmp(a, "-l") || !strcmp(a, "--local"))
			continue;
		if (pw_cli_opt_value(argc, argv, &i, "--depth", NULL, &depth))
			continue;
		if (pw_cli_opt_value(argc, argv, &i, "--shallow-since", NULL, &o.deepen_since))
			continue;
		if (pw_cli_opt_value(argc, argv, &i, "--shallow-exclude", NULL,
		                     &deepen_not[nr_not])) {
			if (++nr_not >= sizeof(deepen_not) / sizeof(deepen_not[0]))
				return pw_cli_fatal("too many --shallow-exclude options");
			deepen_not[nr_not] = NULL;
			o.deepen_not = deepen_not;
			continue;
		}
		if (pw_cli_opt_value(argc, argv, &i, "--branch", "-b", &o.branch))
			continue;
		if (pw_cli_opt_value(argc, argv, &i, "--origin", "-o", &o.origin))
			continue;
		if (pw_cli_opt_value(argc, argv, &i, "--filter", NULL, &o.filter))
			continue;
		if (pw_cli_opt_value(argc, argv, &i, "--upload-pack", "-u", &o.client.upload_pack))
			continue;
		if (!strcmp(a, "--"))
			break;
		return pw_cli_unknown_option(a, usage_str);
	}
	if (depth) {
		char *end;
		long n = strtol(depth, &end, 10);

		if (!*depth || *end || n <= 0)
			return pw_cli_fatal("depth %s is not a positive number", depth);
		o.depth = (unsigned)n;
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i >= argc)
		return pw_cli_usage(usage_str);
	o.url = argv[i++];
	if (i < argc)
		dir = argv[i++];
	if (i < argc)
		return pw_cli_usage(usage_str);
	if (!dir) {
		guessed = guess_dir(o.url, o.bare);
		if (!guessed)
			return pw_cli_fatal("could not guess directory name; please specify a "
			                    "directory on the command line");
		dir = guessed;
	}
	o.dir = dir;
	pw_cli_client_signals();
	o.client.protocol_version = pw_cli_protocol_version(NULL);
	o.client.quiet = quiet;
	o.client.git_proxy = getenv("GIT_PROXY_COMMAND");
	o.client.progress = progress < 0 ? pw_cli_progress_wanted(quiet) : !quiet;
	o.client.ssh = pw_cli_env()->ssh;
	o.client.http_env = &pw_cli_env()->http;
	o.client.protocol = &pw_cli_env()->protocol;
	pw_cli_report(&o.client.report, NULL);
	o.cwd = pw_cli_env()->pwd;
	o.config = &pw_cli_env()->config;
	{
		const char *v = pw_cli_config_get(NULL, "init.defaultbranch", &found);

		initial = found && v ? strdup(v) : NULL;
		o.initial_branch = initial;
	}
	if (!quiet) {
		if (o.bare)
			fprintf(stderr, "Cloning into bare repository '%s'...\n", dir);
		else
			fprintf(stderr, "Cloning into '%s'...\n", dir);
	}
	if (!no_local && is_local_path(o.url) && (o.deepen_since || nr_not)) {
		/* git copies a local repository whole: the history is not cut,
		 * but the clone stays single-branch as for a cut one */
		if (o.deepen_since)
			fprintf(stderr, "warning: --shallow-since is ignored in local clones; use "
			                "file:// instead.\n");
		if (nr_not)
			fprintf(stderr, "warning: --shallow-exclude is ignored in local clones; "
			                "use file:// instead.\n");
		if (o.single_branch < 0)
			o.single_branch = 1;
		o.deepen_since = NULL;
		o.deepen_not = NULL;
	}
	rc = pw_clone(&o, &info, &err);
	if (rc) {
		free(guessed);
		free(initial);
		return pw_cli_fatal("%s", err.msg);
	}
	if (verbose)
		fprintf(stderr, "negotiated: protocol v%d, object-format %s, %u objects\n",
		        info.version, info.algo ? info.algo->name : "?", info.nr_objects);
	if (info.empty && !quiet)
		fprintf(stderr, "warning: You appear to have cloned an empty repository.\n");
	if (!quiet && !no_local && is_local_path(o.url))
		fputs("done.\n", stderr); /* git's line after copying a local repository */
	free(guessed);
	free(initial);
	return 0;
}
