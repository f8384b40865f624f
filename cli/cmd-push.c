/* packwire push [--force] [--force-with-lease[=<ref>[:<expect>]]]
 * [--force-if-includes] [--delete] [--atomic] [--tags] [--all] [--mirror]
 * [--dry-run] [--porcelain] [--no-verify] [--push-option=<o>]
 * [--receive-pack=<cmd>] [-q] [-v] [<remote> [<refspec>...]]: the pre-push
 * hook (unless --no-verify), then send-pack over every transport, printing
 * git push's summary on stderr ("To <url>", one line per ref), or with
 * --porcelain git's machine-readable lines on stdout. Git's "hint:"
 * paragraphs after a rejection are not printed; object ids are abbreviated
 * to 7 digits. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/env.h"
#include "progress.h"
#include "packwire/packwire.h"
#include "packwire/push.h"

#define ABBREV 7

static const char usage_str[] =
        "packwire push [--force] [--force-with-lease[=<refname>[:<expect>]]] "
        "[--force-if-includes] [--delete] [--atomic] [--tags] [--all] [--mirror] "
        "[--dry-run] [--porcelain] [--no-verify] [--push-option=<o>] [--receive-pack=<cmd>] "
        "[-q] [-v] "
        "[<remote> [<refspec>...]]";

/* --porcelain: the lines go to stdout in git's tab-separated form */
static int porcelain;

static const char *pretty(const char *name)
{
	static const char *const pre[] = {"refs/heads/", "refs/tags/", "refs/remotes/"};
	size_t i;

	for (i = 0; i < 3; i++)
		if (!strncmp(name, pre[i], strlen(pre[i])))
			return name + strlen(pre[i]);
	return name;
}

/* dst: the name shown (a report's refname, else NULL for r->dst) */
static void line_to(char flag, const char *summary, const struct pw_push_ref *r, const char *dst,
                    const char *msg)
{
	const char *src = r->src;

	if (!dst)
		dst = r->dst;
	/* a deletion shows its source only when it was not done */
	if (r->is_delete)
		src = flag == '-' ? NULL : "(delete)";
	if (porcelain) {
		/* "<flag>\t<from>:<to>\t<summary> (<reason>)", full names */
		printf("%c\t%s:%s\t%s", flag, src ? src : "", dst, summary);
		if (msg)
			printf(" (%s)", msg);
		putchar('\n');
		return;
	}
	fprintf(stderr, " %c %-*s ", flag, 2 * ABBREV + 3, summary);
	if (src)
		fprintf(stderr, "%s -> %s", pretty(src), pretty(dst));
	else
		fputs(pretty(dst), stderr);
	if (msg)
		fprintf(stderr, " (%s)", msg);
	fputc('\n', stderr);
}

static void line(char flag, const char *summary, const struct pw_push_ref *r, const char *msg)
{
	line_to(flag, summary, r, NULL, msg);
}

/* An accepted update, with what a report of the server says instead
 * (name, old and new value, forced) where it says it, as git push shows. */
static void print_ok(const struct pw_push_ref *r, const struct pw_push_report *rep)
{
	char a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1], sum[64];
	const char *dst = rep && rep->ref_name ? rep->ref_name : r->dst;
	const struct pw_oid *old = rep && rep->old_oid.algo ? &rep->old_oid : &r->old_oid;
	const struct pw_oid *new = rep && rep->new_oid.algo ? &rep->new_oid : &r->new_oid;
	int forced = (rep && rep->forced_update) || r->forced_update;

	if (r->is_delete) {
		line_to('-', "[deleted]", r, dst, NULL);
	} else if (pw_oid_is_zero(old)) {
		line_to('*',
		        !strncmp(dst, "refs/tags/", 10)    ? "[new tag]"
		        : !strncmp(dst, "refs/heads/", 11) ? "[new branch]"
		                                           : "[new reference]",
		        r, dst, NULL);
	} else {
		pw_oid_to_hex(old, a);
		pw_oid_to_hex(new, b);
		snprintf(sum, sizeof(sum), "%.*s%s%.*s", ABBREV, a, forced ? "..." : "..", ABBREV,
		         b);
		line_to(forced ? '+' : ' ', sum, r, dst, forced ? "forced update" : NULL);
	}
}

static void print_one(const struct pw_push_ref *r, int verbose)
{
	size_t i;

	switch (r->status) {
	case PW_PUSH_UPTODATE:
		if (verbose)
			line('=', "[up to date]", r, NULL);
		break;
	case PW_PUSH_OK:
		if (!r->nr_reports)
			print_ok(r, NULL);
		for (i = 0; i < r->nr_reports; i++)
			print_ok(r, &r->reports[i]);
		break;
	case PW_PUSH_REJECT_NONFF:
		line('!', "[rejected]", r, "non-fast-forward");
		break;
	case PW_PUSH_REJECT_FETCH_FIRST:
		line('!', "[rejected]", r, "fetch first");
		break;
	case PW_PUSH_REJECT_EXISTS:
		line('!', "[rejected]", r, "already exists");
		break;
	case PW_PUSH_REJECT_NODELETE:
		line('!', "[rejected]", r, "remote does not support deleting refs");
		break;
	case PW_PUSH_REJECT_STALE:
		line('!', "[rejected]", r, "stale info");
		break;
	case PW_PUSH_REJECT_REMOTE_UPDATED:
		line('!', "[rejected]", r, "remote ref updated since checkout");
		break;
	case PW_PUSH_ATOMIC_FAILED:
		line('!', "[rejected]", r, "atomic push failed");
		break;
	case PW_PUSH_REMOTE_REJECT:
		line('!', "[remote rejected]", r, r->remote_msg);
		break;
	case PW_PUSH_NO_REPORT:
		line('!', "[remote failure]", r, "remote failed to report status");
		break;
	case PW_PUSH_NO_SUCH_REF:
	case PW_PUSH_PENDING:
		break;
	}
}

/* send-pack's words when --atomic fails here, with the number Git gives
 * each rejection */
static void atomic_failed(void *data, const struct pw_push_ref *r)
{
	int n = r->status == PW_PUSH_REJECT_NONFF         ? 2
	        : r->status == PW_PUSH_REJECT_EXISTS      ? 3
	        : r->status == PW_PUSH_REJECT_FETCH_FIRST ? 5
	        : r->status == PW_PUSH_REJECT_STALE       ? 7
	                                                  : 9;

	(void)data;
	fprintf(stderr, "error: atomic push failed for ref %s. status: %d\n\n", r->dst, n);
}

/* git's pack-objects summary, printed with the progress */
static void pack_done(void *data, const struct pw_pack_write_stats *st)
{
	(void)data;
	fprintf(stderr, "Total %u (delta %u), reused %u (delta %u), pack-reused 0\n",
	        (unsigned)st->written, (unsigned)st->deltas, (unsigned)st->reused,
	        (unsigned)st->reused_deltas);
}

static int print_result(const struct pw_push_result *res, int quiet, int verbose)
{
	size_t i;
	int ok = pw_push_result_ok(res), shown = 0, pass;
	/* --porcelain lists the refs that are up to date too */
	int list_all = verbose || porcelain;

	for (i = 0; i < res->nr; i++)
		if (res->refs[i].status == PW_PUSH_NO_SUCH_REF)
			fprintf(stderr, "error: unable to delete '%s': remote ref does not exist\n",
			        pretty(res->refs[i].dst));
	if (res->unpack_error)
		fprintf(stderr, "error: remote unpack failed: %s\n", res->unpack_error);
	for (i = 0; i < res->nr; i++)
		if (res->refs[i].status != PW_PUSH_UPTODATE)
			shown = 1;
	if (verbose)
		fprintf(stderr, "Pushing to %s\n", res->url);
	if (!shown && ok && !list_all) {
		if (!quiet)
			fprintf(stderr, "Everything up-to-date\n");
		return 0;
	}
	if (!quiet || !ok || verbose) {
		int header = 0;

		/* Git's order: up to date, then accepted, then the rest */
		for (pass = 0; pass < 3; pass++)
			for (i = 0; i < res->nr; i++) {
				const struct pw_push_ref *r = &res->refs[i];
				int p = r->status == PW_PUSH_UPTODATE ? 0
				        : r->status == PW_PUSH_OK     ? 1
				                                      : 2;

				if (p != pass || r->status == PW_PUSH_NO_SUCH_REF ||
				    (p == 0 && !list_all))
					continue;
				if (!header++)
					fprintf(porcelain ? stdout : stderr, "To %s\n", res->url);
				print_one(r, list_all);
			}
	}
	if (verbose)
		for (i = 0; i < res->nr; i++)
			if (res->refs[i].tracking)
				fprintf(stderr, "updating local tracking ref '%s'\n",
				        res->refs[i].tracking);
	if (porcelain)
		puts("Done"); /* the protocol ran, whatever became of the refs */
	if (!ok) {
		fprintf(stderr, "error: failed to push some refs to '%s'\n", res->url);
		return 1;
	}
	if (!shown && !quiet && !porcelain)
		fprintf(stderr, "Everything up-to-date\n");
	return 0;
}

/* A lease's expected value, as git's get_oid reads it: a revision (a full
 * id, a ref, "name~N"...) or the unique abbreviation of an object id. */
struct prefix_scan {
	const char *hex;
	size_t len;
	struct pw_oid found;
	int n;
};

static int prefix_one(const struct pw_oid *oid, void *data)
{
	struct prefix_scan *p = data;
	char hex[PW_MAX_HEXSZ + 1];

	pw_oid_to_hex(oid, hex);
	if (strncmp(hex, p->hex, p->len))
		return 0;
	if (p->n && pw_oid_equal(&p->found, oid))
		return 0;
	p->found = *oid;
	return ++p->n > 1;
}

static int resolve_expect(struct pw_repo *repo, const char *arg, struct pw_oid *out)
{
	struct pw_error err = {0};
	struct pw_odb *odb = NULL;
	struct pw_revs *revs = NULL;
	int rc;

	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), &err)))
		return rc;
	rc = pw_revs_new(&revs, repo, odb);
	if (!rc)
		rc = pw_revs_resolve(revs, arg, out);
	pw_revs_free(revs);
	if (rc && rc != PW_ENOMEM) {
		struct prefix_scan p = {arg, strlen(arg), {0}, 0};
		size_t i;

		for (i = 0; i < p.len && isxdigit((unsigned char)arg[i]) &&
		            !isupper((unsigned char)arg[i]);
		     i++)
			;
		if (i == p.len && p.len >= 4 && p.len < pw_repo_algo(repo)->hexsz) {
			pw_odb_foreach(odb, prefix_one, &p);
			if (p.n == 1) {
				*out = p.found;
				rc = 0;
			}
		}
	}
	pw_odb_free(odb);
	return rc;
}

/* --force-with-lease=<ref>:<expect>: cut each at its colon and resolve
 * <expect> (empty: the ref must not exist). 0, or git's error and 129. */
static int parse_leases(struct pw_repo *repo, struct pw_push_lease *leases, size_t n)
{
	size_t k;

	for (k = 0; k < n; k++) {
		char *colon = strchr(leases[k].ref, ':');

		if (!colon)
			continue;
		*colon = '\0';
		if (colon[1] && resolve_expect(repo, colon + 1, &leases[k].expect)) {
			fprintf(stderr, "error: cannot parse expected object name '%s'\n",
			        colon + 1);
			return 129;
		}
	}
	return 0;
}

int cmd_push(int argc, char **argv)
{
	struct pw_push_opts o;
	struct pw_push_result res;
	struct pw_repo *repo = NULL;
	struct pw_error err = {0};
	const char **popts = NULL, **specs = NULL, *remote = NULL;
	struct pw_push_lease *leases = NULL;
	size_t npopts = 0, nspecs = 0, nleases = 0, k;
	int i, rc, verbose = 0, dashdash = 0, if_includes = -1;

	memset(&o, 0, sizeof(o));
	porcelain = 0;
	popts = calloc((size_t)argc + 1, sizeof(*popts));
	specs = calloc((size_t)argc + 1, sizeof(*specs));
	leases = calloc((size_t)argc + 1, sizeof(*leases));
	if (!popts || !specs || !leases) {
		free(popts);
		free(specs);
		free(leases);
		return pw_cli_fatal("out of memory");
	}
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-') {
			if (!remote)
				remote = a;
			else
				specs[nspecs++] = a;
		} else if (!strcmp(a, "--")) {
			dashdash = 1;
		} else if (!strcmp(a, "-f") || !strcmp(a, "--force")) {
			o.force = 1;
		} else if (!strcmp(a, "--force-with-lease")) {
			o.lease_all = 1;
		} else if (!strncmp(a, "--force-with-lease=", 19)) {
			/* <ref>, or <ref>:<expect> (split and resolved once the
			 * repository is open) */
			if (!(leases[nleases].ref = strdup(a + 19))) {
				rc = pw_cli_fatal("out of memory");
				goto out;
			}
			leases[nleases++].use_tracking = !strchr(a + 19, ':');
		} else if (!strcmp(a, "--no-force-with-lease")) {
			o.lease_all = 0;
			while (nleases)
				free((char *)leases[--nleases].ref);
		} else if (!strcmp(a, "--force-if-includes")) {
			if_includes = 1;
		} else if (!strcmp(a, "--no-force-if-includes")) {
			if_includes = 0;
		} else if (!strcmp(a, "--porcelain")) {
			porcelain = 1;
		} else if (!strcmp(a, "-d") || !strcmp(a, "--delete")) {
			o.delete_refs = 1;
		} else if (!strcmp(a, "--atomic")) {
			o.atomic = 1;
		} else if (!strcmp(a, "--tags")) {
			o.tags = 1;
		} else if (!strcmp(a, "--all") || !strcmp(a, "--branches")) {
			o.all = 1;
		} else if (!strcmp(a, "--mirror")) {
			o.mirror = 1;
		} else if (!strcmp(a, "-n") || !strcmp(a, "--dry-run")) {
			o.dry_run = 1;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o.quiet = 1;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose = 1;
		} else if (!strcmp(a, "--no-verify")) {
			o.no_verify = 1;
		} else if (!strcmp(a, "--verify")) {
			o.no_verify = 0;
		} else if (!strcmp(a, "--progress")) {
			o.progress = 1;
		} else if (!strncmp(a, "--push-option=", 14)) {
			popts[npopts++] = a + 14;
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--push-option")) && i + 1 < argc) {
			popts[npopts++] = argv[++i];
		} else if (!strncmp(a, "--receive-pack=", 15)) {
			o.receive_pack = a + 15;
		} else if (!strncmp(a, "--exec=", 7)) {
			o.receive_pack = a + 7;
		} else {
			rc = pw_cli_unknown_option(a, usage_str);
			goto out;
		}
	}
	if (o.mirror && (o.all || o.tags || o.delete_refs)) {
		rc = pw_cli_fatal("options '--mirror' and '--all/--tags/--delete' cannot be used "
		                  "together");
		goto out;
	}
	/* progress by default only on a terminal, never with -q (as git push) */
	if (!o.progress)
		o.progress = pw_cli_progress_wanted(o.quiet);
	pw_cli_report(&o.report, pw_cli_progress);
	if (o.progress)
		o.local_pack_done = pack_done;
	o.git_proxy = getenv("GIT_PROXY_COMMAND");
	o.ssh = pw_cli_env()->ssh;
	o.http_env = &pw_cli_env()->http;
	o.protocol = &pw_cli_env()->protocol;
	o.atomic_failed = atomic_failed;
	o.push_options = popts;
	o.nr_push_options = npopts;
	pw_cli_client_signals();
	if ((rc = pw_cli_open_repo(&repo)))
		goto out;
	if ((rc = parse_leases(repo, leases, nleases))) {
		pw_repo_free(repo);
		goto out;
	}
	o.leases = leases;
	o.nr_leases = nleases;
	if (if_includes < 0) {
		int found;
		const char *v = pw_cli_config_get(repo, "push.useforceifincludes", &found);

		if_includes = found && !pw_config_parse_bool(v, &if_includes) && if_includes;
	}
	o.force_if_includes = if_includes && (o.lease_all || nleases);
	rc = pw_push(repo, remote, specs, nspecs, &o, &res, &err);
	if (rc && res.pre_push_refused) {
		/* the hook said why, as git push leaves it to say */
		fprintf(stderr, "error: failed to push some refs to '%s'\n", res.url);
		rc = 1;
	} else if (rc) {
		if (rc == PW_ENOTFOUND && strstr(err.msg, "src refspec"))
			fprintf(stderr, "error: %s\n", err.msg);
		else
			pw_cli_fatal("%s", err.msg);
		rc = rc == PW_ENOTFOUND && strstr(err.msg, "src refspec") ? 1 : PW_EXIT_FATAL;
		if (rc == 1 && res.url)
			fprintf(stderr, "error: failed to push some refs to '%s'\n", res.url);
	} else {
		rc = print_result(&res, o.quiet, verbose);
	}
	pw_push_result_free(&res);
	pw_repo_free(repo);
out:
	for (k = 0; k < nleases; k++)
		free((char *)leases[k].ref);
	free(leases);
	free(popts);
	free(specs);
	return rc;
}
