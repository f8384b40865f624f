/* Being a remote helper (gitremote-helpers(7)) for stock git, over
 * packwire's client: what `git-remote-http(s)` is to Git. Git writes
 * commands ("capabilities", "option", "list", "fetch", "push", "get",
 * "stateless-connect") and reads the answers; fetch and push run packwire's
 * own client on the repository Git runs the helper in. `packwire
 * remote-http` is a front over pw_helper_serve: it parses the arguments,
 * reads the environment into these options, wires stdin and stdout, and
 * turns an error into "fatal: <message>" and exit code 128, as the helper
 * Git expects dies. */
#ifndef PACKWIRE_HELPER_SERVE_H
#define PACKWIRE_HELPER_SERVE_H

#include "packwire/export.h"

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/client.h"
#include "packwire/config.h"
#include "packwire/error.h"
#include "packwire/pack-write.h"
#include "packwire/report.h"
#include "packwire/repo.h"
#include "packwire/transport.h"

struct pw_helper_serve_opts {
	/* The remote's URL ("<scheme>::<url>" is taken as <url>); a URL
	 * without a scheme is refused before any command is read. */
	const char *url;
	/* Git's commands, read a byte at a time (after stateless-connect the
	 * rest of in_fd is Git's packet stream), and the answers. */
	int in_fd, out_fd;
	/* Passed to every callback below. */
	void *ctx;
	/* The repository Git runs the helper in ($GIT_DIR): 0 with *out set,
	 * or with *out NULL when there is none; an error otherwise. Called
	 * once at the start (an error then means no repository: its config is
	 * not used) and afresh before each fetch and push (a clone rewrites the
	 * repository's format after "list"), where an error ends the helper. */
	int (*open_repo)(void *ctx, struct pw_repo **out, struct pw_error *err);
	/* The config without a repository (system, global, -c); borrowed. */
	const struct pw_config *config;
	/* The protocol version to ask for, for the repository (NULL: none) as
	 * git-remote-http would: protocol.version, else the caller's default. */
	int (*protocol_version)(void *ctx, const struct pw_repo *repo);
	/* The client's settings: ssh, protocol policy, HTTP (copied; the
	 * helper adds its own credential cache and note callback). */
	struct pw_ssh_opts ssh;
	const struct pw_protocol_env *protocol;
	struct pw_http_env http;
	/* Progress, warnings and the server's band-2 text of fetch and push. */
	struct pw_report report;
	/* A line for the user (no newline; "error: ..." when it is one): what
	 * git-remote-http prints on stderr. NULL: dropped. */
	void (*message)(void *ctx, const char *line);
	/* GIT_TRACE_PACKET as git-remote-http writes it: the packets the
	 * helper reads as "git", its fetch as "fetch-pack", its push as
	 * "send-pack"; trace_who names who speaks next. NULL: no trace. */
	void (*trace_packet)(void *ctx, int write, const char *data, size_t len);
	void (*trace_who)(void *ctx, const char *who);
	/* push --signed ("option pushcert"): the certificate's pusher for the
	 * repository (-1 when no email is known) and its signature, as
	 * pw_push_opts.sign with the repository as sign_ctx. NULL: a signed
	 * push is refused. */
	int (*push_pusher)(const struct pw_repo *repo, char *out, size_t n);
	int (*push_sign)(void *repo, const char *cert, size_t len, struct pw_buf *sig,
	                 struct pw_error *err);
	/* The pack a push sent (Git's pack-objects tells trace2). May be NULL. */
	void (*pack_done)(void *ctx, const struct pw_pack_write_stats *st);
};

/* Answer Git's commands until the end of in_fd or an empty command line.
 * 0 then; an error (err set, e.g. "remote-http: expected a fetch command in
 * the batch", or a fetch's or push's own) ends the helper as git-remote-http
 * dies. A write to out_fd that fails is not an error (Git is gone: the next
 * read ends). One call per helper process; the options are borrowed. */
PW_API int pw_helper_serve(const struct pw_helper_serve_opts *o, struct pw_error *err);

#endif
