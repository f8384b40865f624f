/* receive-pack: the server side of `git push` (pack protocol v0/v1).
 *
 * One call serves one push over a pair of file descriptors: the reference
 * advertisement, the client's commands and push options, the pack (indexed
 * into a quarantine object directory, checked for connectivity and, when
 * configured, fsck'd), the hooks, the reference updates and the status
 * report. A failed push leaves no new object and no reference change behind.
 * The HTTP backend calls it with advertise_refs / stateless_rpc. */
#ifndef PACKWIRE_RECEIVE_H
#define PACKWIRE_RECEIVE_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_repo;

/* One ref update handed to a ref store (pw_ref_store.commit). */
struct pw_store_update {
	const char *name;
	struct pw_oid old_oid, new_oid; /* zero old: create; zero new: delete */
	const char *error;              /* out: NULL = applied, else the "ng" reason */
};

/*
 * Where a server's refs live when they are not (only) the repository's own:
 * a replicated cluster keeps them in a consistent store (src/cluster/).
 * prepare (may be NULL) runs before a session reads any ref: it brings the
 * repository's refs up to date with the store; non-zero refuses the session
 * with err's message. service is "upload-pack" or "receive-pack".
 * commit replaces receive-pack's own ref updates: it gets every update still
 * accepted after the checks and hooks, with the new objects already in the
 * repository, and commits them (all or nothing when atomic), applying them
 * to the repository too; it sets u[i].error for each one it refused. It
 * returns 0, or a negative code (err set) when nothing was applied.
 */
struct pw_ref_store {
	int (*prepare)(void *data, struct pw_repo *repo, const char *service, struct pw_error *err);
	int (*commit)(void *data, struct pw_repo *repo, int atomic, struct pw_store_update *u,
	              size_t n, struct pw_error *err);
	void *data;
	/* The store takes objects only, for a push already checked elsewhere
	 * (a cluster's peer endpoint): receive-pack runs no hook. */
	int objects_only;
};

/* How one push ended (pw_receive_opts.result), for a server's numbers. */
struct pw_receive_result {
	size_t commands; /* ref updates the client asked for (0: no push, e.g. advertise_refs) */
	size_t refused;  /* of them, the ones refused ("ng" in the report) */
	int failed;      /* the pack did not unpack, or the session did not finish */
};

struct pw_receive_opts {
	int advertise_refs;   /* --advertise-refs: only send the advertisement */
	int stateless_rpc;    /* --stateless-rpc: no advertisement, read the request */
	int protocol_version; /* 1: send "version 1" first (GIT_PROTOCOL=version=1) */
	/* Messages (hook output, errors) when the client did not ask for
	 * side-band: written here; -1 drops them. */
	int err_fd;
	int timeout_ms;    /* > 0: give up when the client sends nothing this long */
	const char *agent; /* NULL: "packwire/<version>" */
	/* Who the reflog entries of a push name (Git takes them from
	 * GIT_COMMITTER_NAME/EMAIL/DATE, which the library does not read: the
	 * caller passes them). NULL name/email: user.name/user.email from the
	 * repository's config, then default_email (Git's EMAIL) for the email,
	 * then the account. NULL date ("<seconds> <+hhmm>", "@" allowed): now. */
	const char *committer_name;
	const char *committer_email;
	const char *committer_date;
	const char *default_email;
	/* The session id advertised when transfer.advertiseSID is true
	 * (borrowed; NULL = none advertised), and trace2-style data events
	 * ("transfer", "client-sid", <the client's id>), or NULL. */
	const char *session_id;
	void (*trace_data)(void *ctx, const char *category, const char *key, const char *value);
	void *trace_ctx;
	/* The repository path as the client named it (Git's receive-pack
	 * argument; "." under its daemon and http-backend): push-certificate
	 * nonces are signed over it. NULL: the git directory. */
	const char *service_path;
	/* The client's algorithm when it is not the repository's: "sha1" or
	 * "sha256" (NULL: the repository's). The repository must have
	 * extensions.compatObjectFormat = that algorithm and its compat map
	 * (docs/compat-map.md): the advertisement and the status report are in
	 * the client's ids, the pushed objects are translated into the storage
	 * algorithm (with their map entries) before anything else looks at
	 * them, and hooks see storage ids. */
	const char *object_format;
	/* Where the repositories of submodules may be found when a pushed
	 * tree's gitlink needs its id in the other algorithm (a push of the
	 * other algorithm, or a native push into a repository with a compat
	 * map): besides compat.submodule.<path>.repository, the .gitmodules
	 * URLs that resolve to repositories under this directory (the
	 * daemon's base path, GIT_PROJECT_ROOT). NULL: the directory that
	 * holds the repository. */
	const char *submodule_base;
	/* Called before each compat map file is renamed into place (tests kill
	 * the process there); NULL = none. */
	void (*before_map_publish)(void *data, const char *tmp_path, const char *final_path);
	void *before_map_publish_data;
	/* Filled in by the call when not NULL (also when it fails). */
	struct pw_receive_result *result;
	/* The ref store the updates go through (borrowed), or NULL: the
	 * repository's refs. */
	const struct pw_ref_store *ref_store;
};

PW_API void pw_receive_opts_init(struct pw_receive_opts *opts);

/*
 * Serve one push of `repo` (borrowed; its algorithm is the session's). Returns
 * 0 when the protocol ran to its end, even when the client's updates were
 * refused (that is reported to the client, and in err's message for logs);
 * a negative code when the session could not finish (client hung up, bad
 * request, wrong object format), with err set. Never crashes on any input.
 * The process should ignore SIGPIPE (hooks may exit without reading stdin).
 */
/* Threads: one call per repo handle at a time (the handle is borrowed and
 * read through). Concurrent pushes to one repository (other handles, other
 * processes) are safe: each one's ref updates go through Git's ref locks.
 * Hooks run as child processes the call waits for; in_fd/out_fd (and
 * err_fd) are not closed. */
PW_API int pw_receive_pack(struct pw_repo *repo, int in_fd, int out_fd,
                           const struct pw_receive_opts *opts, struct pw_error *err);

#endif
