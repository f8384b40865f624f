/* serve-upload-pack: serve a repository on stdin/stdout, as `git upload-pack`
 * does, so that stock git can fetch from it:
 *
 *     git clone --upload-pack=/path/to/serve-upload-pack file:///srv/repo.git
 *     git clone --upload-pack=serve-upload-pack host:/srv/repo.git   (over ssh)
 *
 * Git runs the command with the repository path as its last argument and
 * asks for protocol v2 through the GIT_PROTOCOL environment variable.
 * Everything else (advertisement, negotiation, the pack, errors to the
 * client) is the library's.
 *
 * Build against an installed libpackwire:
 *     cc serve-upload-pack.c $(pkg-config --cflags --libs packwire) -o serve-upload-pack */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include <packwire/packwire.h>

int main(int argc, char **argv)
{
	struct pw_upload_pack_opts opts;
	struct pw_error err = {0};
	struct pw_repo *repo;
	int rc;

	if (argc < 2) {
		fprintf(stderr, "usage: serve-upload-pack <dir>\n");
		return 2;
	}

	/* Find the git dir the way upload-pack does: DIR/.git, DIR, DIR.git. */
	rc = pw_repo_open_exact(&repo, argv[argc - 1], &err);
	if (rc) {
		fprintf(stderr, "fatal: '%s' does not appear to be a git repository\n",
		        argv[argc - 1]);
		return 128;
	}

	/* Start from the defaults, then set what this process decides. The
	 * library reads no environment itself: the protocol version Git asks
	 * for is passed in by the program that embeds it. */
	pw_upload_pack_opts_init(&opts);
	opts.version = pw_protocol_version_from_env(getenv("GIT_PROTOCOL"));

	/* A client that hangs up must become an EPIPE error, not a signal. */
	signal(SIGPIPE, SIG_IGN);

	/* One session: reads requests from fd 0, writes responses to fd 1. The
	 * repo handle is borrowed for the call; sessions share nothing, so a
	 * server may run many at once, each with its own repo handle. */
	rc = pw_upload_pack(repo, 0, 1, &opts, &err);
	pw_repo_free(repo);
	if (rc) {
		/* the client already got the message as an ERR packet where the
		 * protocol allows one; this copy is for the server's log */
		fprintf(stderr, "fatal: %s\n", err.msg);
		return 128;
	}
	return 0;
}
