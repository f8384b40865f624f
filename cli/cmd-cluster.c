/* packwire cluster add: put a repository under a cluster's care
 * (docs/cluster.md). */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"

static const char usage_text[] =
        "packwire cluster add --cluster=etcd:URL[,URL...] [--base-path=DIR] <repository>";

int cmd_cluster(int argc, char **argv)
{
	const char *etcd = NULL, *base = ".", *name = NULL;
	struct pw_error err;
	int i;

	if (argc < 2 || strcmp(argv[1], "add"))
		return pw_cli_usage(usage_text);
	for (i = 2; i < argc; i++) {
		if (pw_cli_opt_value(argc, argv, &i, "--cluster", NULL, &etcd) ||
		    pw_cli_opt_value(argc, argv, &i, "--base-path", NULL, &base))
			continue;
		if (argv[i][0] == '-' || name)
			return pw_cli_unknown_option(argv[i], usage_text);
		name = argv[i];
	}
	if (!etcd || !name)
		return pw_cli_usage(usage_text);
	if (strlen(name) > 1 && name[strlen(name) - 1] == '/')
		return pw_cli_fatal("'%s': give the repository's path without a trailing '/'",
		                    name);
	if (pw_cluster_add(etcd, base, name, &err))
		return pw_cli_fatal("%s", err.msg);
	fprintf(stderr, "%s is now in the cluster's care\n", name);
	return 0;
}
