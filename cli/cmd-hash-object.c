/* packwire hash-object [--object-format=ALGO] [-t TYPE] (--stdin | FILE): a
 * small command that exercises the hash layer end to end. */
#include <stdio.h>
#include <string.h>

#include "cmds.h"
#include "packwire/fs.h"
#include "packwire/packwire.h"

int cmd_hash_object(int argc, char **argv)
{
	const char *usage = "packwire hash-object [--object-format=<algo>] [-t <type>] "
	                    "(--stdin | <file>)";
	const struct pw_hash_algo *algo = &pw_hash_sha1;
	int type = PW_OBJ_BLOB, from_stdin = 0, i, rc;
	const char *file = NULL;
	struct pw_buf data = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_oid oid;
	char hex[PW_MAX_HEXSZ + 1];

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--object-format=", 16)) {
			const char *v = argv[i] + 16;

			algo = pw_hash_by_name(v, strlen(v));
			if (!algo)
				return pw_cli_fatal("unknown object format '%s'", v);
		} else if (!strcmp(argv[i], "-t") && i + 1 < argc) {
			const char *t = argv[++i];

			type = pw_object_type_from_name(t, strlen(t));
			if (!type)
				return pw_cli_fatal("invalid object type \"%s\"", t);
		} else if (!strcmp(argv[i], "--stdin")) {
			from_stdin = 1;
		} else if (argv[i][0] == '-') {
			return pw_cli_unknown_option(argv[i], usage);
		} else {
			file = argv[i];
		}
	}
	if (from_stdin == !!file)
		return pw_cli_usage(usage);
	rc = pw_fs_read_file(from_stdin ? "/dev/stdin" : file, &data, 0, &err);
	if (rc)
		return pw_cli_fatal("%s", err.msg);
	rc = pw_object_hash(algo, type, data.data, data.len, &oid);
	pw_buf_free(&data);
	if (rc) {
		pw_hash_collision_error(&err, &oid);
		return pw_cli_fatal("%s", err.msg);
	}
	printf("%s\n", pw_oid_to_hex(&oid, hex));
	return 0;
}
