/* packwire show-index [--object-format=<algo>] < <file>.idx: list the entries
 * of a pack index as git show-index does ("<offset> <oid>" for v1,
 * "<offset> <oid> (<crc32>)" for v2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/idx.h"
#include "packwire/packwire.h"

int cmd_show_index(int argc, char **argv)
{
	const struct pw_hash_algo *algo = NULL;
	struct pw_buf in = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_idx *idx;
	char hex[PW_MAX_HEXSZ + 1];
	uint32_t n;
	int i, rc = 0;

	for (i = 1; i < argc; i++) {
		if (!strncmp(argv[i], "--object-format=", 16)) {
			const char *v = argv[i] + 16;

			algo = pw_hash_by_name(v, strlen(v));
			if (!algo)
				return pw_cli_fatal("unknown hash algorithm '%s'", v);
		} else {
			return pw_cli_unknown_option(
			        argv[i], "packwire show-index [--object-format=<hash-algorithm>]");
		}
	}
	if (!algo) {
		/* Inside a repository its format is the default, as in git. */
		struct pw_repo *repo = NULL;
		const char *gd = getenv("GIT_DIR");

		if (!(gd && *gd ? pw_repo_open_gitdir_opts(&repo, gd, pw_cli_repo_opts(), NULL)
		                : pw_repo_open_opts(&repo, ".", pw_cli_repo_opts(), NULL)))
			algo = pw_repo_algo(repo);
		pw_repo_free(repo);
		if (!algo)
			algo = &pw_hash_sha1;
	}
	for (;;) {
		size_t got;

		if (pw_buf_grow(&in, 1 << 16))
			return pw_cli_fatal("out of memory");
		got = fread(in.data + in.len, 1, in.cap - in.len - 1, stdin);
		if (!got)
			break;
		in.len += got;
	}
	if (ferror(stdin)) {
		pw_buf_free(&in);
		return pw_cli_fatal("unable to read the index from standard input");
	}
	if (pw_idx_open_memory(&idx, in.data, in.len, "<stdin>", algo, &err)) {
		pw_buf_free(&in);
		return pw_cli_fatal("%s", err.msg);
	}
	for (n = 0; n < pw_idx_count(idx); n++) {
		struct pw_oid oid;
		uint64_t off;
		int has_crc;
		uint32_t crc = pw_idx_nth_crc(idx, n, &has_crc);

		if (pw_idx_nth_offset(idx, n, &off, &err)) {
			rc = pw_cli_fatal("%s", err.msg);
			break;
		}
		pw_idx_nth_oid(idx, n, &oid);
		pw_oid_to_hex(&oid, hex);
		if (has_crc)
			printf("%llu %s (%08x)\n", (unsigned long long)off, hex, crc);
		else
			printf("%llu %s\n", (unsigned long long)off, hex);
	}
	pw_idx_free(idx);
	pw_buf_free(&in);
	if (fflush(stdout) && !rc)
		rc = pw_cli_fatal("unable to write to stdout");
	return rc;
}
