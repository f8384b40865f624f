/* packwire verify-pack: check packs against their .idx, as git verify-pack. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/index-pack.h"
#include "packwire/packwire.h"

static const char usage_str[] =
        "packwire verify-pack [-v | --verbose] [-s | --stat-only] [--object-format=<algo>] "
        "[--] <pack>.idx...";

static void show(const struct pw_ipack *ip, int stat_only)
{
	uint32_t i, nr = pw_ipack_nr_objects(ip), base = 0, deepest = 0;
	uint64_t *hist = NULL;
	struct pw_ipack_info info;
	char hex[PW_MAX_HEXSZ + 1], bhex[PW_MAX_HEXSZ + 1];

	for (i = 0; i < nr; i++) {
		pw_ipack_info(ip, i, &info);
		if (info.depth > deepest)
			deepest = info.depth;
	}
	hist = calloc(deepest + 1, sizeof(*hist));
	for (i = 0; i < nr; i++) {
		pw_ipack_info(ip, i, &info);
		if (!info.depth)
			base++;
		else if (hist)
			hist[info.depth]++;
		if (stat_only)
			continue;
		printf("%s %-6s %llu %llu %llu", pw_oid_to_hex(&info.oid, hex),
		       pw_object_type_name(info.type), (unsigned long long)info.size,
		       (unsigned long long)info.size_in_pack, (unsigned long long)info.offset);
		if (info.depth)
			printf(" %u %s", info.depth, pw_oid_to_hex(&info.base, bhex));
		putchar('\n');
	}
	if (base)
		printf("non delta: %u object%s\n", base, base == 1 ? "" : "s");
	for (i = 1; hist && i <= deepest; i++)
		if (hist[i])
			printf("chain length = %u: %llu object%s\n", i, (unsigned long long)hist[i],
			       hist[i] == 1 ? "" : "s");
	free(hist);
}

int cmd_verify_pack(int argc, char **argv)
{
	const struct pw_hash_algo *algo = NULL;
	int verbose = 0, stat_only = 0, i, status = 0, opts_done = 0, any = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (opts_done || a[0] != '-' || !a[1]) {
			any = 1;
			continue;
		}
		if (!strcmp(a, "--"))
			opts_done = 1;
		else if (!strcmp(a, "-v") || !strcmp(a, "--verbose"))
			verbose = 1;
		else if (!strcmp(a, "-s") || !strcmp(a, "--stat-only"))
			stat_only = 1;
		else if (!strncmp(a, "--object-format=", 16)) {
			algo = pw_hash_by_name(a + 16, strlen(a + 16));
			if (!algo)
				return pw_cli_fatal("unknown hash algorithm '%s'", a + 16);
		} else
			return pw_cli_unknown_option(a, usage_str);
	}
	if (!any)
		return pw_cli_usage(usage_str);
	opts_done = 0;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		struct pw_error err = {0};
		struct pw_ipack *ip = NULL;
		char *pack = NULL;
		int rc;

		if (!opts_done && a[0] == '-' && a[1]) {
			if (!strcmp(a, "--"))
				opts_done = 1;
			continue;
		}
		rc = pw_verify_pack(a, algo, stat_only, &ip, &pack, &err);
		if (rc) {
			fprintf(stderr, "error: %s\n", err.msg);
			status = 1;
		} else if (verbose || stat_only) {
			show(ip, stat_only && !verbose);
		}
		if (verbose)
			printf("%s: %s\n", pack ? pack : a, rc ? "bad" : "ok");
		fflush(stdout);
		pw_ipack_free(ip);
		free(pack);
	}
	return status;
}
