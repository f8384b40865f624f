/* packwire init [-q] [--bare] [--object-format=<algo>] [-b <name>] [<dir>]:
 * create a repository stock Git works in, SHA-1 or SHA-256. Like Git, the
 * initial branch comes from -b, else init.defaultBranch in the user's global
 * config, else "master". (Git's "hint:" advice about the default name is not
 * printed.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/env.h"
#include "packwire/packwire.h"

/* init.defaultBranch from the config layers (system, global, -c), as git. */
static char *default_branch(void)
{
	const char *v;
	int found;

	v = pw_cli_config_get(NULL, "init.defaultBranch", &found);
	return found && v && *v ? strdup(v) : NULL;
}

int cmd_init(int argc, char **argv)
{
	const char *usage = "packwire init [-q | --quiet] [--bare] [--object-format=<format>] "
	                    "[-b <branch-name> | --initial-branch=<branch-name>] [<directory>]";
	struct pw_repo_init_opts opts = {0};
	const char *dir = NULL, *branch = NULL, *env;
	char *dflt = NULL;
	struct pw_error err = {0};
	struct pw_repo *repo;
	int quiet = 0, i, rc;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;

		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = 1;
		} else if (!strcmp(a, "--bare")) {
			opts.bare = 1;
		} else if (!strncmp(a, "--object-format=", 16) ||
		           (!strcmp(a, "--object-format") && i + 1 < argc)) {
			v = a[15] == '=' ? a + 16 : argv[++i];
			opts.algo = pw_hash_by_name(v, strlen(v));
			if (!opts.algo)
				return pw_cli_fatal("unknown hash algorithm '%s'", v);
		} else if (!strncmp(a, "--initial-branch=", 17)) {
			branch = a + 17;
		} else if ((!strcmp(a, "-b") || !strcmp(a, "--initial-branch")) && i + 1 < argc) {
			branch = argv[++i];
		} else if (!strncmp(a, "-b", 2) && a[2]) {
			branch = a + 2;
		} else if (!strcmp(a, "--")) {
			if (i + 1 < argc)
				dir = argv[++i];
		} else if (a[0] == '-' || dir) {
			return pw_cli_unknown_option(a, usage);
		} else {
			dir = a;
		}
	}
	if (!opts.algo && (env = getenv("GIT_DEFAULT_HASH")) && *env) {
		opts.algo = pw_hash_by_name(env, strlen(env));
		if (!opts.algo)
			return pw_cli_fatal("unknown hash algorithm '%s'", env);
	}
	if (!branch)
		branch = dflt = default_branch();
	opts.initial_branch = branch;
	opts.config = &pw_cli_env()->config;
	rc = pw_repo_init_ext(&repo, dir ? dir : ".", &opts, &err);
	free(dflt);
	if (rc)
		return pw_cli_fatal("%s", err.msg);
	if (!quiet)
		printf("%s Git repository in %s/\n",
		       opts.reinitialized ? "Reinitialized existing" : "Initialized empty",
		       pw_repo_git_dir(repo));
	pw_repo_free(repo);
	return 0;
}
