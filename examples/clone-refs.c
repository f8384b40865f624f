/* clone-refs: clone a repository and print what arrived.
 *
 *     clone-refs [--bare] <url> <dir>
 *
 * <url> is a path, a file:// URL or an ssh address (ssh://host/path or
 * host:path); <dir> must not exist or be empty. Prints
 *
 *     object-format sha256
 *     <oid> refs/heads/main
 *     ...
 *
 * the same lines as `git rev-parse --show-object-format` and
 * `git for-each-ref --format='%(objectname) %(refname)'` in the clone.
 * A tour of the library: options, errors, the algorithm handle, refs.
 *
 * Build against an installed libpackwire:
 *     cc clone-refs.c $(pkg-config --cflags --libs packwire) -o clone-refs */
#include <stdio.h>
#include <string.h>

#include <packwire/packwire.h> /* every public header */

/* pw_refs_foreach calls this once per ref, sorted by name. A non-zero
 * return would stop the walk and become pw_refs_foreach's result. */
static int print_ref(const struct pw_ref *ref, void *data)
{
	char hex[PW_MAX_HEXSZ + 1]; /* hex goes into a caller's buffer */

	(void)data;
	printf("%s %s\n", pw_oid_to_hex(&ref->oid, hex), ref->name);
	return 0;
}

int main(int argc, char **argv)
{
	/* Errors: every fallible call returns 0 or a negative PW_E* code and,
	 * for calls without a handle, puts its message into a pw_error the
	 * caller owns. */
	struct pw_error err = {0};
	struct pw_clone_info info;
	struct pw_repo *repo;
	int bare = argc == 4 && !strcmp(argv[1], "--bare"), rc;

	if (argc != 3 + bare) {
		fprintf(stderr, "usage: clone-refs [--bare] <url> <dir>\n");
		return 2;
	}

	/* The library reads no environment variable by itself. A command-line
	 * tool that wants Git's GIT_* behaviour (here: GIT_SSH_COMMAND for
	 * ssh:// urls) asks for it explicitly; a server simply does not. */
	struct pw_env_options env;
	if (pw_options_from_env(&env, &err)) {
		fprintf(stderr, "clone-refs: %s\n", err.msg);
		pw_env_options_free(&env);
		return 1;
	}

	/* Options are plain structs: name the fields you set, the rest stay
	 * zero (= the defaults). single_branch -1 is Git's default (only with
	 * a depth). The object format is not an option: the clone learns it
	 * from the server. */
	struct pw_clone_opts opts = {
	        .url = argv[1 + bare],
	        .dir = argv[2 + bare],
	        .bare = bare,
	        .single_branch = -1,
	        .client = {.protocol_version = 2, .quiet = 1, .ssh = env.ssh},
	};
	rc = pw_clone(&opts, &info, &err);
	pw_env_options_free(&env);
	if (rc) {
		/* on failure the clone removed what it had created */
		fprintf(stderr, "clone-refs: %s (%s)\n", err.msg, pw_strerror(rc));
		return 1;
	}

	/* Open what we made. A repo handle is used by one thread at a time; it
	 * carries its own error record (pw_repo_error) for calls that take it. */
	rc = pw_repo_open(&repo, opts.dir, &err);
	if (rc) {
		fprintf(stderr, "clone-refs: %s\n", err.msg);
		return 1;
	}

	/* The algorithm belongs to the repository: an immutable, shared
	 * descriptor (pw_hash_sha1 or pw_hash_sha256), never a global mode. */
	const struct pw_hash_algo *algo = pw_repo_algo(repo);
	printf("object-format %s\n", algo->name);

	rc = pw_refs_foreach(repo, NULL, 0, print_ref, NULL);
	if (rc < 0)
		fprintf(stderr, "clone-refs: %s\n", pw_repo_error(repo)->msg);
	pw_repo_free(repo);
	return rc < 0;
}
