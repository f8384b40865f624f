/* packwire ls-remote [--heads] [--tags] [--refs] [--symref] [-q]
 * [--upload-pack=CMD] [--exit-code] [URL [PATTERN...]]: the refs a server
 * offers, printed as git ls-remote prints them. Works outside a repository:
 * the algorithm comes from the server. */
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/client.h"
#include "packwire/env.h"
#include "packwire/packwire.h"

static const char usage_str[] =
        "packwire ls-remote [--heads] [--tags] [--refs] [--symref] [-q] "
        "[--upload-pack=<exec>] [--exit-code] [<repository> [<patterns>...]]";

static int tail_match(char **patterns, int n, const char *name)
{
	char path[4096];
	int i;

	if (!n)
		return 1;
	if (snprintf(path, sizeof(path), "/%s", name) >= (int)sizeof(path))
		return 0;
	for (i = 0; i < n; i++) {
		char pat[4096];

		if (snprintf(pat, sizeof(pat), "*/%s", patterns[i]) >= (int)sizeof(pat))
			continue;
		if (!fnmatch(pat, path, 0))
			return 1;
	}
	return 0;
}

int cmd_ls_remote(int argc, char **argv)
{
	int heads = 0, tags = 0, refs_only = 0, symref = 0, quiet = 0, exit_code = 0;
	const char *upload_pack = NULL, *url = NULL;
	struct pw_client_opts copts = {0};
	struct pw_session *s = NULL;
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	const struct pw_adv *adv;
	const char *prefixes[3];
	char **patterns = NULL;
	int npat = 0, i, rc, printed = 0, np = 0, from_remote = 0, no_arg;
	const char *remote_name;
	size_t k;

	/* -h is --heads, except alone, where it asks for the usage (as git) */
	if (argc == 2 && !strcmp(argv[1], "-h"))
		return pw_cli_usage(usage_str);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--heads") || !strcmp(a, "-h"))
			heads = 1;
		else if (!strcmp(a, "--tags") || !strcmp(a, "-t"))
			tags = 1;
		else if (!strcmp(a, "--refs"))
			refs_only = 1;
		else if (!strcmp(a, "--symref"))
			symref = 1;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			quiet = 1;
		else if (!strcmp(a, "--exit-code"))
			exit_code = 1;
		else if (pw_cli_opt_value(argc, argv, &i, "--upload-pack", NULL, &upload_pack))
			continue;
		else if (!strcmp(a, "--"))
			break;
		else
			return pw_cli_unknown_option(a, usage_str);
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (i < argc)
		url = argv[i++];
	no_arg = !url;
	remote_name = url ? url : "origin";
	patterns = argv + i;
	npat = argc - i;
	pw_cli_client_signals();
	if (pw_repo_open_opts(&repo, ".", pw_cli_repo_opts(), NULL))
		repo = NULL;
	{
		const char *remote = remote_name;
		char key[1024];
		int found = 0;
		const char *v = NULL;

		if (repo && snprintf(key, sizeof(key), "remote.%s.url", remote) < (int)sizeof(key))
			v = pw_cli_config_get(repo, key, &found);
		if (found && v) {
			url = v;
			from_remote = 1;
		} else if (!url) {
			pw_repo_free(repo);
			return pw_cli_fatal("No remote configured to list refs from.");
		}
	}
	if (!upload_pack && repo && from_remote) {
		char key[1024];
		int found;

		snprintf(key, sizeof(key), "remote.%s.uploadpack", remote_name);
		upload_pack = pw_cli_config_get(repo, key, &found);
	}
	copts.upload_pack = upload_pack;
	copts.protocol_version = pw_cli_protocol_version(repo);
	copts.quiet = 1;
	copts.ssh = pw_cli_env()->ssh;
	copts.http_env = &pw_cli_env()->http;
	copts.protocol = &pw_cli_env()->protocol;
	copts.git_dir = repo ? pw_repo_git_dir(repo) : NULL;
	copts.config = pw_cli_config(repo);
	pw_cli_report(&copts.report, NULL);
	copts.git_proxy = getenv("GIT_PROXY_COMMAND");
	copts.git_proxy_config = repo ? pw_repo_config(repo) : NULL;
	if ((rc = pw_session_open(&s, url, &copts, &err))) {
		pw_repo_free(repo);
		return pw_cli_fatal("%s", err.msg);
	}
	if (heads)
		prefixes[np++] = "refs/heads/";
	if (tags)
		prefixes[np++] = "refs/tags/";
	prefixes[np] = NULL;
	rc = pw_session_list_refs(s, np ? prefixes : NULL,
	                          PW_LSREFS_PEEL | (symref ? PW_LSREFS_SYMREFS : 0), &adv, &err);
	if (rc) {
		pw_session_close(s, NULL);
		pw_repo_free(repo);
		return pw_cli_fatal("%s", err.msg);
	}
	if (!quiet && no_arg)
		fprintf(stderr, "From %s\n", url);
	for (k = 0; k < adv->nr; k++) {
		const struct pw_remote_ref *r = &adv->refs[k];
		char hex[PW_MAX_HEXSZ + 1];
		int is_head = !strncmp(r->name, "refs/heads/", 11);
		int is_tag = !strncmp(r->name, "refs/tags/", 10);

		if (r->unborn)
			continue;
		if ((heads || tags) && !((heads && is_head) || (tags && is_tag)))
			continue;
		if (refs_only && strncmp(r->name, "refs/", 5))
			continue;
		if (!tail_match(patterns, npat, r->name))
			continue;
		if (symref && r->symref_target)
			printf("ref: %s\t%s\n", r->symref_target, r->name);
		printf("%s\t%s\n", pw_oid_to_hex(&r->oid, hex), r->name);
		printed++;
		if (r->has_peeled && !refs_only)
			printf("%s\t%s^{}\n", pw_oid_to_hex(&r->peeled, hex), r->name);
	}
	fflush(stdout);
	rc = pw_session_close(s, &err);
	pw_repo_free(repo);
	if (exit_code && !printed)
		return 2;
	return 0;
}
