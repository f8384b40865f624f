/* The serving side of fetches: upload-pack for protocol v0/v1 (ref
 * advertisement, want/have negotiation, shallow, pack) and v2 (capability
 * advertisement, ls-refs, fetch, object-info). A session reads requests from
 * one fd and writes responses to another, so pipes (ssh, file://), the git://
 * daemon and the HTTP backend all drive the same code. One session holds all
 * of its state; many sessions may run on as many threads. */
#ifndef PACKWIRE_SERVER_H
#define PACKWIRE_SERVER_H

#include "packwire/export.h"

#include "packwire/dumb.h" /* pw_update_server_info, declared here before */
#include "packwire/error.h"
#include "packwire/repo.h"

struct pw_pack_cache;
struct pw_ref_store;

struct pw_upload_pack_opts {
	int version;        /* protocol: 0, 1 or 2 (see pw_protocol_version_from_env) */
	int stateless_rpc;  /* one request, no advertisement (smart HTTP) */
	int advertise_refs; /* only the advertisement (v2: the capabilities), then return */
	int strict;         /* accepted for compatibility (repository entry is the CLI's) */
	int timeout;        /* seconds without input before giving up; 0 = none */
	int progress_fd;    /* unused by the library yet; -1 */
	const char *agent;  /* NULL = "packwire/<version>" */
	/* GIT_NAMESPACE ("a/b"), or NULL: only the refs under
	 * refs/namespaces/a/refs/namespaces/b/ are served, under their names
	 * there, and that namespace's HEAD (borrowed) */
	const char *ref_namespace;
	/* The session id advertised when transfer.advertiseSID is true
	 * (borrowed; NULL = one made from the time and the process id). */
	const char *session_id;
	/* Trace2-style data events ("transfer", "negotiated-version", "2";
	 * "transfer", "client-sid", <the client's id>), or NULL. */
	void (*trace_data)(void *ctx, const char *category, const char *key, const char *value);
	void *trace_ctx;
	/* Every pkt-line read from and written to the client (write = 1), as
	 * Git's GIT_TRACE_PACKET shows them: a data packet's payload, "0000",
	 * "0001" or "0002" for the control packets. The pack and side-band
	 * frames are not passed (Git writes them past its packet tracing).
	 * NULL: no tracing. */
	void (*trace_packet)(void *ctx, int write, const char *data, size_t len);
	void *trace_packet_ctx;
	/* The commands Git's upload-pack would run, as lines of Git's GIT_TRACE
	 * (without its time-and-place prefix and "trace: "): "run_command: <hook>
	 * git pack-objects <options>" when uploadpack.packObjectsHook makes the
	 * pack, else "in-process: git pack-objects <options>" -- the options Git
	 * would pass for this request (--revs, --thin, --filter=... in Git's
	 * spelling), for a pack that packwire makes itself. NULL: no tracing. */
	void (*trace_command)(void *ctx, const char *line);
	void *trace_command_ctx;
	/* The client's algorithm ("sha1", "sha256"; borrowed), served through
	 * the repository's compat map when it is not the storage algorithm
	 * (packwire compat build); NULL = the repository's. */
	const char *object_format;
	/* The pack cache (packwire/pack-cache.h) the packs of this session go
	 * through, or NULL (borrowed; one handle serves any number of sessions
	 * on any threads). */
	struct pw_pack_cache *pack_cache;
	/* A ref store whose prepare step runs before the session reads any
	 * ref (packwire/receive.h; borrowed), or NULL. */
	const struct pw_ref_store *ref_store;
	/* Any object may be wanted, as uploadpack.allowAnySHA1InWant (a
	 * cluster's peers fetch objects by id). */
	int allow_any_want;
};

PW_API void pw_upload_pack_opts_init(struct pw_upload_pack_opts *opts);

/* The protocol version requested by a GIT_PROTOCOL value (colon-separated
 * "key=value" items; the highest "version=N" Git knows, N in 0..2). NULL or
 * nothing usable gives 0. */
PW_API int pw_protocol_version_from_env(const char *git_protocol);

struct pw_upload_session;

/* `repo` is borrowed for the session's lifetime; in_fd/out_fd are not closed. */
/* The session is the caller's (pw_upload_session_free, NULL is fine;
 * *out NULL on failure, message in err). One thread runs a session; each
 * concurrent session needs its own repo handle, since the session reads
 * refs through it. */
PW_API int pw_upload_session_new(struct pw_upload_session **out, struct pw_repo *repo, int in_fd,
                                 int out_fd, const struct pw_upload_pack_opts *opts,
                                 struct pw_error *err);
PW_API void pw_upload_session_free(struct pw_upload_session *s);
/*
 * Serve until the client is done. 0 on success; on failure a negative code
 * with the message in pw_upload_session_error(s). The message has already gone to
 * the client as an ERR packet (or on side-band 3 once a pack was started)
 * where the protocol allows it.
 */
PW_API int pw_upload_session_run(struct pw_upload_session *s);
/* Borrowed, valid until the session is freed. */
PW_API const struct pw_error *pw_upload_session_error(const struct pw_upload_session *s);

/* Statistics of the pack sent by the last fetch in a session. */
struct pw_upload_stats {
	unsigned long long objects, bytes;
	int shallow; /* a shallow walk was used */
};
PW_API void pw_upload_session_stats(const struct pw_upload_session *s, struct pw_upload_stats *out);

/* new + run + free in one; the error (if any) is copied to err. */
/* The same ownership and threading rules: repo borrowed for the call, fds
 * left open. Writing to a client that hung up gives EPIPE only when the
 * process ignores SIGPIPE, which is the caller's to set. */
PW_API int pw_upload_pack(struct pw_repo *repo, int in_fd, int out_fd,
                          const struct pw_upload_pack_opts *opts, struct pw_error *err);

#endif
