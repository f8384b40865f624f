/* packwire rev-list [--objects] [--all] [--count] [--stdin] [--not] <rev>... [^<rev>...]:
 * commits reachable from the tips and not from the exclusions, and with
 * --objects their trees and blobs ("<oid> <path>"), as git rev-list prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "packwire/revision.h"

struct print_state {
	int count_only;
	uint64_t count;
	const struct pw_hash_algo *algo;
};

static int print_obj(const struct pw_revlist_obj *o, void *data)
{
	struct print_state *ps = data;
	char hex[PW_MAX_HEXSZ + 1];

	ps->count++;
	if (ps->count_only)
		return 0;
	pw_oid_to_hex(&o->oid, hex);
	if (!o->path) {
		fputs(hex, stdout);
		putchar('\n');
	} else {
		fputs(hex, stdout);
		putchar(' ');
		fwrite(o->path, 1, o->path_len, stdout);
		putchar('\n');
	}
	return 0;
}

int cmd_rev_list(int argc, char **argv)
{
	const char *usage = "packwire rev-list [--objects] [--all] [--count] [--stdin] "
	                    "<rev>... [^<rev>...]";
	struct pw_repo *repo = NULL;
	struct pw_odb *odb = NULL;
	struct pw_revlist *rl = NULL;
	struct pw_revs *revs = NULL;
	struct print_state ps = {0};
	struct pw_error err = {0};
	int objects = 0, all = 0, from_stdin = 0, i, rc, ret = 0, seen_dashdash = 0;
	static char obuf[1 << 16];

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--objects"))
			objects = 1;
		else if (!strcmp(argv[i], "--all"))
			all = 1;
		else if (!strcmp(argv[i], "--count"))
			ps.count_only = 1;
		else if (!strcmp(argv[i], "--stdin"))
			from_stdin = 1;
		else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return pw_cli_usage(usage);
		else if (argv[i][0] == '-' && strcmp(argv[i], "--not") && strcmp(argv[i], "--"))
			return pw_cli_usage(usage);
	}
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	if (pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), &err)) {
		ret = pw_cli_fatal("%s", err.msg);
		goto out;
	}
	if (pw_revlist_new(&rl, odb, objects ? PW_REVLIST_OBJECTS : 0) ||
	    pw_revs_new(&revs, repo, odb)) {
		ret = pw_cli_fatal("out of memory");
		goto out;
	}
	pw_revs_set_warn(revs, pw_cli_warning_cb, NULL);
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			seen_dashdash = 1;
			continue;
		}
		if (seen_dashdash)
			break;
		if (argv[i][0] == '-' && strcmp(argv[i], "--not"))
			continue;
		if (pw_revs_add(revs, rl, argv[i])) {
			ret = pw_cli_fatal("%s", pw_revs_error(revs)->msg);
			goto out;
		}
	}
	if (all && pw_revs_add_all(revs, rl)) {
		ret = pw_cli_fatal("%s", pw_revs_error(revs)->msg);
		goto out;
	}
	if (from_stdin) {
		char *line = NULL;
		size_t cap = 0;
		ssize_t n;

		while ((n = getline(&line, &cap, stdin)) > 0) {
			while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
				line[--n] = '\0';
			if (!n)
				continue;
			if (pw_revs_add(revs, rl, line)) {
				ret = pw_cli_fatal("%s", pw_revs_error(revs)->msg);
				break;
			}
		}
		free(line);
		if (ret)
			goto out;
	}
	ps.algo = pw_repo_algo(repo);
	rc = pw_revlist_run(rl, print_obj, &ps);
	if (rc) {
		fflush(stdout);
		ret = pw_cli_fatal("%s", pw_revlist_error(rl)->msg);
		goto out;
	}
	if (ps.count_only)
		printf("%llu\n", (unsigned long long)ps.count);
	if (fflush(stdout))
		ret = pw_cli_fatal("writing the output failed");
out:
	pw_revlist_free(rl);
	pw_revs_free(revs);
	pw_odb_free(odb);
	pw_repo_free(repo);
	return ret;
}
