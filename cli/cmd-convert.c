/* packwire convert --to=(sha1|sha256) [-q | --quiet] [--progress] SRC DST:
 * a new repository at DST holding SRC's history in the other algorithm,
 * with the compat map back to SRC's ids (packwire/convert.h). */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "packwire/convert.h"
#include "progress.h"

int cmd_convert(int argc, char **argv)
{
	const char *usage = "packwire convert --to=(sha1|sha256) [-q | --quiet] [--progress] "
	                    "<source> <destination>";
	const char *to_name = NULL, *src = NULL, *dst = NULL;
	const struct pw_hash_algo *to;
	struct pw_convert_opts opts;
	struct pw_error err = {0};
	int quiet = 0, progress = -1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-q") || !strcmp(a, "--quiet"))
			quiet = 1;
		else if (!strcmp(a, "--progress"))
			progress = 1;
		else if (!strcmp(a, "--no-progress"))
			progress = 0;
		else if (pw_cli_opt_value(argc, argv, &i, "--to", NULL, &to_name))
			;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return pw_cli_usage(usage);
		else if (a[0] == '-' && a[1])
			return pw_cli_unknown_option(a, usage);
		else if (!src)
			src = a;
		else if (!dst)
			dst = a;
		else
			return pw_cli_usage(usage);
	}
	if (!to_name || !src || !dst)
		return pw_cli_usage(usage);
	if (!(to = pw_hash_by_name(to_name, strlen(to_name))))
		return pw_cli_fatal("unknown object format '%s'", to_name);
	memset(&opts, 0, sizeof(opts));
	if (progress < 0 ? pw_cli_progress_wanted(quiet) : progress && !quiet)
		opts.progress = pw_cli_progress;
	if (pw_convert_repo(src, dst, to, &opts, &err))
		return pw_cli_fatal("convert: %s", err.msg);
	if (!quiet)
		fprintf(stderr,
		        "converted %s to %s in %s: %llu objects (%u deltas, %llu bytes), %llu "
		        "refs, "
		        "%llu reflogs\n",
		        src, to->name, dst, (unsigned long long)opts.objects, opts.deltas,
		        (unsigned long long)opts.pack_bytes, (unsigned long long)opts.refs,
		        (unsigned long long)opts.reflogs);
	return 0;
}
