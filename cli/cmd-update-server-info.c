/* packwire update-server-info [--force]: write info/refs and
 * objects/info/packs for dumb HTTP clients, as git update-server-info. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"

int cmd_update_server_info(int argc, char **argv)
{
	struct pw_repo *repo;
	struct pw_error err;
	int force = 0, i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-f") || !strcmp(argv[i], "--force"))
			force = 1;
		else {
			fprintf(stderr, "usage: packwire update-server-info [--force]\n");
			return PW_EXIT_USAGE;
		}
	}
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	rc = pw_update_server_info(repo, force, &err);
	pw_repo_free(repo);
	if (rc)
		return pw_cli_fatal("%s", err.msg);
	return 0;
}
