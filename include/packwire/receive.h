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

struct pw_receive_opts {
	int advertise_refs;   /* --advertise-refs: only send the advertisement */
	int stateless_rpc;    /* --stateless-rpc: no advertisement, read the request */
	int protocol_version; /* 1: send "version 1" first (GIT_PROTOCOL=version=1) */
	/* Messages (hook output, errors) when the client did not ask for
	 * side-band: written here; -1 drops them. */
	int err_fd;
	int timeout_ms;    /* > 0: give up when the client sends nothing this long */
	const char *agent; /* NULL: "packwire/<version>" */
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

/* ---- the command list, exposed for tests and fuzzing ------------------- */

struct pw_receive_cmd {
	struct pw_oid old_oid, new_oid;
	char *name;        /* malloc'd ref name */
	const char *error; /* NULL = accepted so far; else the "ng" reason (static) */
	char *error_own;   /* when the reason is built at run time (freed) */
	int skip_update;   /* handled (e.g. by a failure before the ref step) */
};

struct pw_receive_cmds {
	const struct pw_hash_algo *algo;
	struct pw_receive_cmd *v;
	size_t nr, alloc;
	char *caps; /* capability list of the first command (malloc'd, "" if none) */
	int seen_caps;
};

/* Caller-owned; _free releases the names and caps. Pure parsing, any
 * thread; messages go to err. */
PW_API void pw_receive_cmds_init(struct pw_receive_cmds *c, const struct pw_hash_algo *algo);
PW_API void pw_receive_cmds_free(struct pw_receive_cmds *c);

/* Limits on what one push may send. */
#define PW_RECEIVE_MAX_CMDS         100000
#define PW_RECEIVE_MAX_PUSH_OPTIONS 1000

/*
 * The capability list of the first command line (the text after its NUL),
 * without parsing the rest: the object format must be checked before oids
 * of the session's length are parsed. *caps is a view into line; empty when
 * the line has no NUL.
 */
PW_API void pw_receive_line_caps(const char *line, size_t len, struct pw_str *caps);

/*
 * Parse one command line "<old> <new> <refname>" (LF stripped or not; the
 * first may carry "\0<caps>") and append it. PW_EPROTO with a message for a
 * malformed line, ids of the wrong length or an empty or oversized ref name
 * (whether the name is a valid ref is decided per command later);
 * PW_ETOOBIG past PW_RECEIVE_MAX_CMDS.
 */
PW_API int pw_receive_cmds_add_line(struct pw_receive_cmds *c, const char *line, size_t len,
                                    struct pw_error *err);
/* After the last line: PW_EPROTO when a ref is named twice. */
PW_API int pw_receive_cmds_finish(struct pw_receive_cmds *c, struct pw_error *err);

#endif
