/* packwire update-ref [--no-deref] [-m <reason>] (-d <ref> [<old>] |
 * <ref> <new> [<old>] | --stdin): update refs through a transaction, like
 * git update-ref. <old> "" or the null id means "must not exist". --stdin
 * takes "update <ref> <new> [<old>]", "create <ref> <new>" and
 * "delete <ref> [<old>]" lines and applies them all or none. Reflogs are
 * not written (-m is accepted and ignored). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"

static int parse_value(struct pw_repo *repo, const char *arg, struct pw_oid *out)
{
	if (!*arg) {
		pw_oid_zero(out, pw_repo_algo(repo));
		return 0;
	}
	if (pw_cli_resolve_rev(repo, arg, out, NULL))
		return pw_cli_fatal("%s: not a valid SHA1", arg);
	return 0;
}

static int queue(struct pw_repo *repo, struct pw_ref_tx *tx, const char *ref, const char *newv,
                 const char *oldv, int del, unsigned flags)
{
	struct pw_oid n, o;
	int rc;

	if (!pw_refname_is_storable(ref))
		return pw_cli_fatal("refusing to update ref with bad name '%s'", ref);
	if (newv && (rc = parse_value(repo, newv, &n)))
		return rc;
	if (oldv && (rc = parse_value(repo, oldv, &o)))
		return rc;
	if (del || pw_oid_is_zero(&n))
		rc = pw_ref_tx_delete(tx, ref, oldv ? &o : NULL);
	else
		rc = pw_ref_tx_update(tx, ref, &n, oldv ? &o : NULL, flags);
	if (rc)
		return pw_cli_fatal("%s", pw_ref_tx_error(tx)->msg);
	return 0;
}

/* Split a --stdin line into at most 4 space-separated words. */
static int split(char *line, char **w)
{
	int n = 0;
	char *p = line;

	while (n < 4) {
		w[n++] = p;
		if (!(p = strchr(p, ' ')))
			break;
		*p++ = '\0';
	}
	return p ? -1 : n;
}

static int from_stdin(struct pw_repo *repo, struct pw_ref_tx *tx, unsigned flags)
{
	char line[8192];
	int rc;

	while (fgets(line, sizeof(line), stdin)) {
		char *w[4] = {0};
		size_t n = strlen(line);
		int nw;

		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (!n)
			continue;
		nw = split(line, w);
		if (nw < 0)
			return pw_cli_fatal("too many arguments in: %s", line);
		if (!strcmp(w[0], "update") && (nw == 3 || nw == 4))
			rc = queue(repo, tx, w[1], w[2], nw == 4 ? w[3] : NULL, 0, flags);
		else if (!strcmp(w[0], "create") && nw == 3)
			rc = queue(repo, tx, w[1], w[2], "", 0, flags);
		else if (!strcmp(w[0], "delete") && (nw == 2 || nw == 3))
			rc = queue(repo, tx, w[1], NULL, nw == 3 ? w[2] : NULL, 1, flags);
		else
			return pw_cli_fatal("unknown command or bad arguments: %s", w[0]);
		if (rc)
			return rc;
	}
	return 0;
}

int cmd_update_ref(int argc, char **argv)
{
	const char *usage = "packwire update-ref [--no-deref] [-m <reason>] (-d <refname> "
	                    "[<old-val>] | <refname> <new-val> [<old-val>] | --stdin)";
	const char *args[3];
	int nargs = 0, del = 0, use_stdin = 0, i, rc;
	unsigned flags = 0;
	struct pw_repo *repo;
	struct pw_ref_tx *tx;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-d"))
			del = 1;
		else if (!strcmp(a, "--no-deref"))
			flags |= PW_REF_NO_DEREF;
		else if (!strcmp(a, "--stdin"))
			use_stdin = 1;
		else if (!strcmp(a, "-m") && i + 1 < argc)
			i++;
		else if (!strncmp(a, "-m", 2) && a[2])
			;
		else if (a[0] == '-' && a[1])
			return pw_cli_unknown_option(a, usage);
		else if (nargs == 3)
			return pw_cli_usage(usage);
		else
			args[nargs++] = a;
	}
	if (use_stdin ? (nargs || del) : del ? (nargs < 1 || nargs > 2) : (nargs < 2))
		return pw_cli_usage(usage);
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	if (pw_ref_tx_new(&tx, repo)) {
		pw_repo_free(repo);
		return pw_cli_fatal("out of memory");
	}
	if (use_stdin)
		rc = from_stdin(repo, tx, flags);
	else if (del)
		rc = queue(repo, tx, args[0], NULL, nargs > 1 ? args[1] : NULL, 1, flags);
	else
		rc = queue(repo, tx, args[0], args[1], nargs > 2 ? args[2] : NULL, 0, flags);
	if (!rc && pw_ref_tx_commit(tx))
		rc = pw_cli_fatal("%s", pw_ref_tx_error(tx)->msg);
	pw_ref_tx_free(tx);
	pw_repo_free(repo);
	return rc;
}
