/* The sending side of `git push` (send-pack, protocol v0): connect to a
 * receive-pack server, read its refs and capabilities, decide what to update
 * from refspecs (or push.default=simple), refuse non-fast-forwards unless
 * forced, send the commands and a thin pack of what the server lacks, read
 * its report, and update the remote-tracking refs. Printing is the caller's:
 * the result lists every ref with its outcome. */
#ifndef PACKWIRE_PUSH_H
#define PACKWIRE_PUSH_H

#include "packwire/export.h"

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/pack-write.h"
#include "packwire/report.h"
#include "packwire/transport.h"

struct pw_repo;
struct pw_push_ref;

/* One --force-with-lease=<ref>[:<expect>]: the update of the remote ref
 * that `ref` names (Git's rules: "main" is refs/heads/main, refs/tags/main,
 * ...; the first lease that names a ref is its lease) goes on, forced, only
 * when the server's value is the expected one; else it is rejected as
 * "stale info". */
struct pw_push_lease {
	const char *ref;
	/* 1: expect the remote-tracking ref's value (remote.<name>.fetch maps
	 * the remote ref to it; none, or a URL: expect no ref) */
	int use_tracking;
	/* else: the value expected; all zero (algo may be 0): the ref must
	 * not exist */
	struct pw_oid expect;
};

struct pw_push_opts {
	int force, delete_refs, atomic, tags, all, mirror, dry_run, quiet;
	/* Ask for the server's progress (band 2, to report.remote; not sent by
	 * packwire servers) and report building and sending the pack here
	 * ("Enumerating objects", then the pack writer's phases) to
	 * report.progress. */
	int progress;
	/* Where progress, warnings and the server's band-2 text go; members
	 * NULL = dropped. */
	struct pw_report report;
	/* Called (when set, with report.data) once the pack is sent, before the
	 * server's report is read. */
	void (*local_pack_done)(void *data, const struct pw_pack_write_stats *stats);
	struct pw_ssh_opts ssh;   /* how to run ssh (none: "ssh") */
	const char *receive_pack; /* command run on the server; NULL = remote config or
	                             git-receive-pack */
	const char *const *push_options;
	size_t nr_push_options;
	const char *git_proxy; /* git:// proxy command (GIT_PROXY_COMMAND); NULL: core.gitProxy */
	const struct pw_http_env *http_env;     /* http(s):// (pw_transport_opts); may be NULL */
	const struct pw_protocol_env *protocol; /* policy, helpers; may be NULL */
	/* push.negotiate: before the pack, an upload-pack session (of
	 * negotiate_protocol, which must be 2 to negotiate) finds which of the
	 * pushed history the server has, and the pack leaves it out; when that
	 * fails, two warnings and the push goes on, as Git. */
	int negotiate, negotiate_protocol;
	/* --signed: send a push certificate (gitprotocol-pack(5)) instead of
	 * bare commands. 0 never; 1 when the server asks for one (push-cert
	 * in its capabilities; else a warning); 2 always (PW_EUNSUPPORTED
	 * when the server takes none). */
	int push_cert;
	/* the certificate's "pusher": the signing key id (or committer ident)
	 * with a timestamp and zone, "Name <mail> 1700000000 +0000" */
	const char *cert_pusher;
	/* Sign cert[0..len): append its detached ASCII-armoured signature to
	 * sig; 0 or an error in err. Needed when push_cert is set. */
	int (*sign)(void *ctx, const char *cert, size_t len, struct pw_buf *sig,
	            struct pw_error *err);
	void *sign_ctx;
	/* each pkt-line read or sent, as pw_client_opts.trace_packet */
	void (*trace_packet)(void *ctx, int write, const char *data, size_t len);
	void *trace_packet_ctx;
	/* --force-with-lease: the leases named, and lease_all for the bare
	 * option (every other ref updated must be at its remote-tracking
	 * value). A ref whose lease holds is updated even when that is not a
	 * fast-forward; --force and "+" override a lease that does not. */
	const struct pw_push_lease *leases;
	size_t nr_leases;
	int lease_all;
	/* --force-if-includes: a lease on a remote-tracking value also needs
	 * that value in the reflog of the local ref of the same name (or
	 * reachable from an entry since the tracking ref last moved), else
	 * the ref is rejected as PW_PUSH_REJECT_REMOTE_UPDATED */
	int force_if_includes;
	/* Called (with report.data) when --atomic fails on the rejection of
	 * ref before anything was sent (pw_push_result.atomic_failed_by), before
	 * the connection is dropped: where git push says so. */
	void (*atomic_failed)(void *data, const struct pw_push_ref *ref);
	/* --no-verify: do not run the pre-push hook. Without it, the hook
	 * ($GIT_DIR/hooks/pre-push, or under core.hooksPath) runs as Git runs
	 * it, once the updates are decided and before anything is sent; its
	 * stdout goes to our stderr. A hook that fails stops the push. */
	int no_verify;
};

enum pw_push_status {
	PW_PUSH_PENDING = 0,        /* to be sent */
	PW_PUSH_UPTODATE,           /* the server already has it */
	PW_PUSH_REJECT_NONFF,       /* "non-fast-forward" */
	PW_PUSH_REJECT_FETCH_FIRST, /* we do not have the server's value */
	PW_PUSH_REJECT_EXISTS,      /* a tag that already exists */
	PW_PUSH_REJECT_NODELETE,    /* the server does not accept deletes */
	PW_PUSH_NO_SUCH_REF,        /* deleting a ref the server does not have */
	PW_PUSH_ATOMIC_FAILED,      /* another ref of an atomic push failed */
	PW_PUSH_OK,
	PW_PUSH_REMOTE_REJECT, /* "ng": see remote_msg */
	PW_PUSH_NO_REPORT,     /* sent, but the server said nothing about it */
	PW_PUSH_REJECT_STALE,  /* "stale info": not the value its lease expects */
	/* "remote ref updated since checkout" (--force-if-includes) */
	PW_PUSH_REJECT_REMOTE_UPDATED,
};

/* What the server says it did for an accepted update, when that differs
 * from the request (report-status-v2 "option" lines after an "ok", from a
 * proc-receive hook); git push shows one line per report. */
struct pw_push_report {
	char *ref_name;                 /* NULL: the ref pushed (dst) */
	struct pw_oid old_oid, new_oid; /* algo 0 (unset): the push's own */
	int forced_update;
};

struct pw_push_ref {
	/* local name ("refs/heads/main", "HEAD"), else the source as written
	 * (an id, "main~1"); NULL for a delete */
	char *src;
	char *dst; /* remote ref */
	struct pw_oid old_oid, new_oid;
	int force;         /* this update may rewind */
	int forced_update; /* ... and does */
	int is_delete;
	enum pw_push_status status;
	char *remote_msg;               /* "ng" reason */
	char *tracking;                 /* remote-tracking ref set (or deleted) for it, or NULL */
	struct pw_push_report *reports; /* the server's reports, in its order */
	size_t nr_reports;
	int lease;                  /* a lease applied: the server's value had to be ... */
	struct pw_oid lease_expect; /* ... this one (zero: no ref) */
};

struct pw_push_result {
	char *url;
	char *remote_name; /* NULL when a URL was given */
	struct pw_push_ref *refs;
	size_t nr;
	char *unpack_error; /* NULL: unpack ok (or nothing sent) */
	int sent;           /* commands went out */
	/* --atomic failed before anything was sent, on the rejection of
	 * refs[atomic_failed_by - 1] (send-pack's "atomic push failed for ref
	 * <name>"); the connection was then dropped without a word, as Git
	 * does. 0 otherwise, and always for helpers and smart HTTP, where Git
	 * says nothing of it. */
	size_t atomic_failed_by;
	/* the pre-push hook's exit status when it refused the push (nothing
	 * was sent; pw_push failed with PW_ERROR), else 0 */
	int pre_push_refused;
};

/*
 * Push to `remote` (a configured remote name or a URL; NULL = the current
 * branch's remote, else "origin"). Returns 0 when the protocol ran (per-ref
 * outcomes are in res, which the caller frees with pw_push_result_free),
 * or a negative code with err set: unknown remote, bad refspec, connection
 * failures, and PW_EUNSUPPORTED "the receiving end does not support this
 * repository's hash algorithm" before anything is sent.
 */
/* repo is borrowed for the call (one thread, see repo.h); res is zeroed
 * first and freed with pw_push_result_free whatever the result. The
 * callbacks run during the call (report.progress possibly from the pack
 * writer's delta-search threads, never two at once). */
PW_API int pw_push(struct pw_repo *repo, const char *remote, const char *const *refspecs,
                   size_t nr_refspecs, const struct pw_push_opts *opts, struct pw_push_result *res,
                   struct pw_error *err);
PW_API void pw_push_result_free(struct pw_push_result *res);
/* Did every ref end well (ok or up to date)? */
PW_API int pw_push_result_ok(const struct pw_push_result *res);

#endif
