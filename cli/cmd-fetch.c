/* packwire fetch [--depth=N] [--shallow-since=DATE] [--shallow-exclude=REF]
 * [--prune] [--tags] [--no-tags] [-q] [--upload-pack=CMD] [REMOTE
 * [REFSPEC...]]: summary lines as git fetch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/client.h"
#include "packwire/env.h"
#include "packwire/packwire.h"

static const char usage_str[] =
        "packwire fetch [--depth=<n>] [--shallow-since=<date>] [--shallow-exclude=<ref>] "
        "[--prune] [--tags] [--no-tags] [-q] [--upload-pack=<cmd>] [<repository> [<refspec>...]]";

#define SUMMARY_WIDTH 17 /* 2 * abbrev + 3, as Git with 7-digit ids */

static const char *pretty(const char *name)
{
	if (!strncmp(name, "refs/heads/", 11))
		return name + 11;
	if (!strncmp(name, "refs/tags/", 10))
		return name + 10;
	if (!strncmp(name, "refs/remotes/", 13))
		return name + 13;
	return name;
}

/* git's "From <url>" header: credentials left out, trailing slashes and a
 * trailing ".git" (after a name of at least two characters) dropped */
static void print_from(const char *url)
{
	const char *scheme = strstr(url, "://"), *at = NULL, *end;
	size_t len;

	if (scheme) {
		const char *host = scheme + 3;

		at = memchr(host, '@', strcspn(host, "/"));
		if (at)
			fprintf(stderr, "From %.*s", (int)(host - url), url);
	}
	if (!at)
		fputs("From ", stderr);
	url = at ? at + 1 : url;
	len = strlen(url);
	while (len && url[len - 1] == '/')
		len--;
	end = url + len;
	if (len > 5 && !memcmp(end - 4, ".git", 4))
		len -= 4;
	fprintf(stderr, "%.*s\n", (int)len, url);
}

static void report(const struct pw_fetch_report *rep, int quiet)
{
	size_t i, refcol = 10;
	int header = 0;

	if (quiet)
		return;
	for (i = 0; i < rep->nr; i++) {
		const struct pw_ref_update *u = &rep->v[i];
		size_t rl = strlen(pretty(u->remote_name));
		size_t ll = strlen(u->local_name ? pretty(u->local_name) : "FETCH_HEAD");

		if (u->status == PW_UPD_UPTODATE)
			continue;
		if (rl > refcol && rl + ll + SUMMARY_WIDTH + 5 <= 80)
			refcol = rl;
	}
	/* pruned first, then for-merge, then the rest, as git fetch shows them */
	for (int pass = 0; pass < 3; pass++)
		for (i = 0; i < rep->nr; i++) {
			const struct pw_ref_update *u = &rep->v[i];
			const char *remote = pretty(u->remote_name);
			const char *local = u->local_name ? pretty(u->local_name) : "FETCH_HEAD";
			const char *err = NULL;
			char summary[160], a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1];
			char code = ' ';
			int is_tag = u->local_name && !strncmp(u->local_name, "refs/tags/", 10);
			int is_branch = !strncmp(u->remote_name, "refs/heads/", 11);

			if ((pass == 0) != (u->status == PW_UPD_DELETED) ||
			    (pass > 0 && (pass == 1) != (u->for_merge != 0)))
				continue;
			pw_oid_to_hex(&u->old_oid, a);
			pw_oid_to_hex(&u->new_oid, b);
			a[7] = b[7] = 0;
			switch (u->status) {
			case PW_UPD_UPTODATE:
				continue;
			case PW_UPD_NEW:
				code = '*';
				snprintf(summary, sizeof(summary), "%s",
				         is_tag      ? "[new tag]"
				         : is_branch ? "[new branch]"
				                     : "[new ref]");
				break;
			case PW_UPD_FF:
				snprintf(summary, sizeof(summary), "%s..%s", a, b);
				break;
			case PW_UPD_FORCED:
				code = '+';
				snprintf(summary, sizeof(summary), "%s...%s", a, b);
				err = "forced update";
				break;
			case PW_UPD_REJECTED:
				code = '!';
				snprintf(summary, sizeof(summary), "[rejected]");
				err = "non-fast-forward";
				break;
			case PW_UPD_CLOBBER:
				code = '!';
				snprintf(summary, sizeof(summary), "[rejected]");
				err = "would clobber existing tag";
				break;
			case PW_UPD_TAG_FORCED:
				code = 't';
				snprintf(summary, sizeof(summary), "[tag update]");
				break;
			case PW_UPD_DELETED:
				code = '-';
				snprintf(summary, sizeof(summary), "[deleted]");
				break;
			case PW_UPD_FETCH_HEAD:
				code = '*';
				snprintf(summary, sizeof(summary), "%s",
				         is_branch                                    ? "branch"
				         : !strncmp(u->remote_name, "refs/tags/", 10) ? "tag"
				         : !strcmp(u->remote_name, "HEAD")            ? "branch"
				                                                      : "");
				if (!strcmp(u->remote_name, "HEAD"))
					remote = "HEAD";
				break;
			}
			if (!header) {
				print_from(rep->url);
				header = 1;
			}
			fprintf(stderr, " %c %-*s %-*s -> %s%s%s%s\n", code, SUMMARY_WIDTH, summary,
			        (int)refcol, remote, local, err ? "  (" : "", err ? err : "",
			        err ? ")" : "");
		}
}

int cmd_fetch(int argc, char **argv)
{
	struct pw_fetch_opts o;
	struct pw_fetch_report rep;
	struct pw_error err = {0};
	struct pw_repo *repo;
	const char *depth = NULL, *deepen_not[64];
	size_t nr_not = 0;
	int i, quiet = 0, progress = -1, rc;

	memset(&o, 0, sizeof(o));
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--prune") || !strcmp(a, "-p"))
			o.prune = 1;
		else if (!strcmp(a, "--tags") || !strcmp(a, "-t"))
			o.tags = 1;
		else if (!strcmp(a, "--no-tags") || !strcmp(a, "-n"))
			o.no_tags = 1;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			quiet = 1;
		else if (!strcmp(a, "--progress"))
			progress = 1;
		else if (pw_cli_opt_value(argc, argv, &i, "--shallow-exclude", NULL,
		                          &deepen_not[nr_not])) {
			if (++nr_not >= sizeof(deepen_not) / sizeof(deepen_not[0]))
				return pw_cli_fatal("too many --shallow-exclude options");
			deepen_not[nr_not] = NULL;
			o.deepen_not = deepen_not;
		} else if (pw_cli_opt_value(argc, argv, &i, "--depth", NULL, &depth) ||
		           pw_cli_opt_value(argc, argv, &i, "--shallow-since", NULL,
		                            &o.deepen_since) ||
		           pw_cli_opt_value(argc, argv, &i, "--upload-pack", NULL,
		                            &o.client.upload_pack))
			continue;
		else if (!strcmp(a, "--"))
			break;
		else
			return pw_cli_unknown_option(a, usage_str);
	}
	if (i < argc && !strcmp(argv[i], "--"))
		i++;
	if (depth) {
		char *end;
		long n = strtol(depth, &end, 10);

		if (!*depth || *end || n <= 0)
			return pw_cli_fatal("depth %s is not a positive number", depth);
		o.depth = (unsigned)n;
	}
	if (i < argc)
		o.remote = argv[i++];
	if (i < argc)
		o.refspecs = (const char *const *)(argv + i);
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	pw_cli_client_signals();
	o.client.protocol_version = pw_cli_protocol_version(repo);
	o.client.quiet = quiet;
	o.client.git_proxy = getenv("GIT_PROXY_COMMAND");
	o.client.git_proxy_config = pw_repo_config(repo);
	o.client.progress = progress < 0 ? pw_cli_progress_wanted(quiet) : !quiet;
	o.client.ssh = pw_cli_env()->ssh;
	o.client.http_env = &pw_cli_env()->http;
	o.client.protocol = &pw_cli_env()->protocol;
	o.client.git_dir = pw_repo_git_dir(repo);
	pw_cli_report(&o.client.report, NULL);
	if (!o.client.upload_pack && o.remote) {
		char key[1024];
		int found;

		snprintf(key, sizeof(key), "remote.%s.uploadpack", o.remote);
		o.client.upload_pack = pw_cli_config_get(repo, key, &found);
	}
	rc = pw_fetch(repo, &o, &rep, &err);
	if (rc) {
		pw_fetch_report_free(&rep);
		pw_repo_free(repo);
		return pw_cli_fatal("%s", err.msg);
	}
	report(&rep, quiet);
	rc = rep.rejected ? 1 : 0;
	pw_fetch_report_free(&rep);
	pw_repo_free(repo);
	return rc;
}
