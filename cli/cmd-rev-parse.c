/* packwire rev-parse: the repository facts and ref resolution that scripts
 * and tests ask Git's rev-parse for: --git-dir, --is-bare-repository,
 * --show-toplevel, --show-object-format[=storage|input|output], and
 * revisions given as full hex ids or ref names (DWIM), with --verify / -q.
 * Revision operators (^, ~, ^{}) are not supported. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/packwire.h"

static void print_git_dir(struct pw_repo *repo)
{
	const char *gd = pw_repo_git_dir(repo), *env = getenv("GIT_DIR");
	char cwd[PATH_MAX], *real;
	size_t n;

	if (env && *env) {
		puts(env);
		return;
	}
	if (!getcwd(cwd, sizeof(cwd)) || !(real = realpath(cwd, NULL))) {
		puts(gd);
		return;
	}
	n = strlen(real);
	if (!strcmp(real, gd))
		puts(".");
	else if (!strncmp(gd, real, n) && !strcmp(gd + n, "/.git"))
		puts(".git");
	else
		puts(gd);
	free(real);
}

int cmd_rev_parse(int argc, char **argv)
{
	struct pw_repo *repo;
	const struct pw_hash_algo *out_algo = NULL;
	int verify = 0, quiet = 0, i, rc, nrevs = 0, dashdash = 0;
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid oid;

	if (argc == 2 && !strcmp(argv[1], "-h"))
		return pw_cli_usage("packwire rev-parse [--verify] [-q | --quiet] "
		                    "[--git-dir | --is-bare-repository | --show-toplevel | "
		                    "--show-object-format] [--output-object-format=<algo>] "
		                    "<args>...");
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--verify"))
			verify = 1;
		else if (!strcmp(argv[i], "-q") || !strcmp(argv[i], "--quiet"))
			quiet = 1;
		else if (!strncmp(argv[i], "--output-object-format=", 23) &&
		         !(out_algo = pw_hash_by_name(argv[i] + 23, strlen(argv[i] + 23))))
			rc = pw_cli_fatal("unknown hash algorithm: %s", argv[i] + 23);
	}
	if (out_algo && out_algo != pw_repo_algo(repo) && out_algo != pw_cli_compat_algo(repo))
		rc = pw_cli_fatal("no compat map to %s", out_algo->name);
	for (i = 1; i < argc && !rc; i++) {
		const char *a = argv[i];

		if (!dashdash && a[0] == '-') {
			if (!strcmp(a, "--verify") || !strcmp(a, "-q") || !strcmp(a, "--quiet") ||
			    !strncmp(a, "--output-object-format=", 23)) {
				continue;
			} else if (!strcmp(a, "--")) {
				dashdash = 1;
			} else if (!strcmp(a, "--git-dir")) {
				print_git_dir(repo);
			} else if (!strcmp(a, "--is-bare-repository")) {
				puts(pw_repo_is_bare(repo) ? "true" : "false");
			} else if (!strcmp(a, "--show-toplevel")) {
				if (!pw_repo_work_tree(repo))
					rc = pw_cli_fatal(
					        "this operation must be run in a work tree");
				else
					puts(pw_repo_work_tree(repo));
			} else if (!strcmp(a, "--show-object-format") ||
			           !strcmp(a, "--show-object-format=storage") ||
			           !strcmp(a, "--show-object-format=input") ||
			           !strcmp(a, "--show-object-format=output")) {
				puts(pw_repo_algo(repo)->name);
			} else if (!strncmp(a, "--show-object-format=", 21)) {
				rc = pw_cli_fatal("unknown mode for --show-object-format: %s",
				                  a + 21);
			} else {
				rc = pw_cli_fatal("unsupported option '%s'", a);
			}
			continue;
		}
		nrevs++;
		if (verify && nrevs > 1) {
			rc = quiet ? 1 : pw_cli_fatal("Needed a single revision");
			break;
		}
		if (pw_cli_resolve_rev(repo, a, &oid, NULL) &&
		    pw_cli_compat_resolve(repo, a, &oid)) {
			if (verify)
				rc = quiet ? 1 : pw_cli_fatal("Needed a single revision");
			else
				rc = pw_cli_fatal(
				        "ambiguous argument '%s': unknown revision or path not in "
				        "the working tree",
				        a);
			break;
		}
		if (out_algo && out_algo != pw_repo_algo(repo) &&
		    pw_cli_compat_map_oid(repo, &oid, &oid)) {
			rc = pw_cli_fatal("no %s id known for %s", out_algo->name,
			                  pw_oid_to_hex(&oid, hex));
			break;
		}
		puts(pw_oid_to_hex(&oid, hex));
	}
	if (!rc && verify && nrevs == 0)
		rc = quiet ? 1 : pw_cli_fatal("Needed a single revision");
	pw_repo_free(repo);
	return rc;
}
