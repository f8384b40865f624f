/* packwire hash-file [--object-format=sha1|sha256] FILE...: the digest of
 * each file's bytes as sha1sum prints it ("<hex>  <file>"; "-" is standard
 * input). SHA-1 runs with collision detection, as every object id in
 * packwire does: a file that is part of a collision attack gets Git's
 * message on standard error instead of a digest, and the command exits 1
 * after the other files. The way to check a suspicious file from outside. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/packwire.h"

#define READ_SIZE (1 << 20)

/* 0, 1 when the file could not be read (message printed), or PW_ECOLLISION
 * with *oid set. A file that fits in the buffer is hashed in one call, the
 * cheapest way for the detector (one pass over its blocks and the padding);
 * a larger one streams. */
static int hash_one(const char *name, const struct pw_hash_algo *algo, unsigned char *buf,
                    struct pw_oid *oid)
{
	struct pw_hash_ctx ctx;
	int fd = strcmp(name, "-") ? open(name, O_RDONLY | O_CLOEXEC) : 0;
	size_t have = 0;
	int streaming = 0;

	if (fd < 0)
		return pw_cli_error("%s: %s", name, strerror(errno));
	for (;;) {
		ssize_t n = read(fd, buf + have, READ_SIZE - have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;

			if (fd)
				close(fd);
			return pw_cli_error("%s: %s", name, strerror(e));
		}
		if (n == 0)
			break;
		have += (size_t)n;
		if (have == READ_SIZE) {
			if (!streaming)
				pw_hash_init(&ctx, algo);
			streaming = 1;
			pw_hash_update(&ctx, buf, have);
			have = 0;
		}
	}
	if (fd)
		close(fd);
	if (!streaming)
		return pw_hash_buf(algo, buf, have, oid);
	pw_hash_update(&ctx, buf, have);
	return pw_hash_final(&ctx, oid);
}

int cmd_hash_file(int argc, char **argv)
{
	const char *usage = "packwire hash-file [--object-format=(sha1|sha256)] <file>...";
	const struct pw_hash_algo *algo = &pw_hash_sha1;
	const char **files;
	unsigned char *buf;
	int i, nfiles = 0, status = 0, only_files = 0;

	if (!(files = calloc((size_t)argc, sizeof(*files))))
		return pw_cli_fatal("out of memory");
	for (i = 1; i < argc && !status; i++) {
		const char *v;

		if (only_files || argv[i][0] != '-' || !strcmp(argv[i], "-")) {
			files[nfiles++] = argv[i];
		} else if (!strcmp(argv[i], "--")) {
			only_files = 1;
		} else if (pw_cli_opt_value(argc, argv, &i, "--object-format", NULL, &v)) {
			algo = pw_hash_by_name(v, strlen(v));
			if (!algo)
				status = pw_cli_fatal("unknown object format '%s'", v);
		} else {
			status = pw_cli_unknown_option(argv[i], usage);
		}
	}
	if (!status && !nfiles)
		status = pw_cli_usage(usage);
	if (!status && !(buf = malloc(READ_SIZE)))
		status = pw_cli_fatal("out of memory");
	if (status) {
		free(files);
		return status;
	}
	for (i = 0; i < nfiles; i++) {
		struct pw_oid oid;
		char hex[PW_MAX_HEXSZ + 1];
		int rc = hash_one(files[i], algo, buf, &oid);

		if (rc == PW_ECOLLISION) {
			struct pw_error err;

			pw_hash_collision_error(&err, &oid);
			fprintf(stderr, "error: %s: %s\n", files[i], err.msg);
			status = 1;
		} else if (rc) {
			status = 1;
		} else {
			printf("%s  %s\n", pw_oid_to_hex(&oid, hex), files[i]);
		}
	}
	free(buf);
	free(files);
	if (fflush(stdout) || ferror(stdout))
		return pw_cli_fatal("unable to write to standard output: %s", strerror(errno));
	return status;
}
