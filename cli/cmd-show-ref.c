/* packwire show-ref [--head] [-d] [-s] [--tags] [--heads] [-q] [--verify]
 * [<pattern>...]: list refs as "<oid> <name>", Git's output format.
 * -d peels tags only where packed-refs records the peeled value (the object
 * database is not consulted yet). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"

struct opts {
	int head, deref, hash_only, tags, heads, quiet, found;
	char **patterns;
	int nr_patterns;
};

static void show(const struct opts *o, const char *name, const struct pw_oid *oid,
                 const struct pw_oid *peeled)
{
	char hex[PW_MAX_HEXSZ + 1];

	if (o->quiet)
		return;
	if (o->hash_only)
		printf("%s\n", pw_oid_to_hex(oid, hex));
	else
		printf("%s %s\n", pw_oid_to_hex(oid, hex), name);
	if (o->deref && peeled) {
		if (o->hash_only)
			printf("%s\n", pw_oid_to_hex(peeled, hex));
		else
			printf("%s %s^{}\n", pw_oid_to_hex(peeled, hex), name);
	}
}

/* A pattern matches whole trailing components: "main" matches refs/heads/main. */
static int matches(const struct opts *o, const char *name)
{
	size_t nl = strlen(name);
	int i;

	if (!o->nr_patterns)
		return 1;
	for (i = 0; i < o->nr_patterns; i++) {
		size_t pl = strlen(o->patterns[i]);

		if (pl > nl || strcmp(name + nl - pl, o->patterns[i]))
			continue;
		if (pl == nl || name[nl - pl - 1] == '/')
			return 1;
	}
	return 0;
}

static int each(const struct pw_ref *ref, void *data)
{
	struct opts *o = data;

	if (!strcmp(ref->name, "HEAD")) {
		if (!o->head)
			return 0;
	} else {
		if ((o->tags || o->heads) &&
		    !((o->tags && !strncmp(ref->name, "refs/tags/", 10)) ||
		      (o->heads && !strncmp(ref->name, "refs/heads/", 11))))
			return 0;
		if (!matches(o, ref->name))
			return 0;
	}
	o->found = 1;
	show(o, ref->name, &ref->oid, ref->has_peeled ? &ref->peeled : NULL);
	return 0;
}

int cmd_show_ref(int argc, char **argv)
{
	const char *usage = "packwire show-ref [-q | --quiet] [--verify] [--head] "
	                    "[-d | --dereference] [-s | --hash] [--tags] [--heads] [--] "
	                    "[<pattern>...]";
	struct opts o = {0};
	struct pw_repo *repo;
	int verify = 0, i, rc;

	o.patterns = calloc((size_t)argc, sizeof(char *));
	if (!o.patterns)
		return pw_cli_fatal("out of memory");
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--head"))
			o.head = 1;
		else if (!strcmp(a, "-d") || !strcmp(a, "--dereference"))
			o.deref = 1;
		else if (!strcmp(a, "-s") || !strcmp(a, "--hash"))
			o.hash_only = 1;
		else if (!strcmp(a, "--tags"))
			o.tags = 1;
		else if (!strcmp(a, "--heads"))
			o.heads = 1;
		else if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			o.quiet = 1;
		else if (!strcmp(a, "--verify"))
			verify = 1;
		else if (!strcmp(a, "--")) {
			for (i++; i < argc; i++)
				o.patterns[o.nr_patterns++] = argv[i];
		} else if (a[0] == '-') {
			free(o.patterns);
			return pw_cli_unknown_option(a, usage);
		} else
			o.patterns[o.nr_patterns++] = argv[i];
	}
	if ((rc = pw_cli_open_repo(&repo))) {
		free(o.patterns);
		return rc;
	}
	if (verify) {
		if (!o.nr_patterns)
			rc = pw_cli_fatal("--verify requires a reference");
		for (i = 0; !rc && i < o.nr_patterns; i++) {
			const char *name = o.patterns[i];
			struct pw_oid oid;

			if ((!strncmp(name, "refs/", 5) || (o.head && !strcmp(name, "HEAD"))) &&
			    !pw_refs_resolve(repo, name, &oid, NULL)) {
				show(&o, name, &oid, NULL);
				continue;
			}
			rc = o.quiet ? 1 : pw_cli_fatal("'%s' - not a valid ref", name);
		}
	} else {
		rc = pw_refs_foreach(repo, NULL, o.head ? PW_REFS_INCLUDE_HEAD : 0, each, &o);
		if (rc)
			rc = pw_cli_fatal("%s", pw_repo_error(repo)->msg);
		else if (!o.found)
			rc = 1;
	}
	pw_repo_free(repo);
	free(o.patterns);
	return rc;
}
