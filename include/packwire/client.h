/* The fetching side of the protocol: talk to an upload-pack server over any
 * transport, learn its refs and its object format (v2 capability, v0/v1
 * capability, else the length of the ids), negotiate, receive and index a
 * pack. clone and fetch are built from these pieces. */
#ifndef PACKWIRE_CLIENT_H
#define PACKWIRE_CLIENT_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/report.h"
#include "packwire/transport.h"

/*
 * Contract: messages go to the err each call takes (may be NULL). Sessions,
 * results and reports are the caller's and are used by one thread at a time;
 * a repo passed in is borrowed for the call and must not be used by another
 * thread meanwhile. Separate sessions and clones run in parallel. The
 * parsers (pw_adv_feed_*, refspecs) are pure. Transports spawn the server
 * (git-upload-pack, ssh) as a child process and reap it on close.
 */

struct pw_repo;

/* One ref the server offered. */
struct pw_remote_ref {
	char *name;        /* "refs/heads/main", "HEAD" */
	struct pw_oid oid; /* zero for an unborn symref */
	struct pw_oid peeled;
	int has_peeled;      /* annotated tag: peeled is what it points at */
	char *symref_target; /* "refs/heads/main" for HEAD, else NULL */
	int unborn;          /* v2 "unborn HEAD symref-target:..." */
};

/* ---- advertisement parser (pure: no I/O; fuzzed) ------------------------ */

/* Where the advertisement parser is. */
enum pw_adv_state {
	PW_ADV_FIRST = 0, /* nothing but a "version 1" line seen yet */
	PW_ADV_REFS,      /* reading ref lines */
	PW_ADV_SHALLOW,   /* reading "shallow <oid>" lines */
	PW_ADV_DONE,      /* the flush was read: the advertisement is complete */
};

/* A parsed advertisement: pw_adv_init, feed packets, read the fields, then
 * pw_adv_free. Every field is plain data the caller may read; the parser
 * owns the allocations (refs, shallow, caps) until pw_adv_free. */
struct pw_adv {
	int version;                     /* 0, or 1 after a "version 1" line */
	const struct pw_hash_algo *algo; /* learned; NULL until known */
	int algo_advertised;             /* object-format was in the capabilities */
	char *caps;                      /* v0/v1 capability list (NUL-terminated), "" when none */
	size_t caps_len;
	struct pw_remote_ref *refs;
	size_t nr, alloc;
	struct pw_oid *shallow; /* "shallow <oid>" lines of a shallow server */
	size_t nr_shallow, alloc_shallow;
	int empty;               /* "capabilities^{}" or no refs at all */
	enum pw_adv_state state; /* set by the parser */
};

/* The struct is the caller's; pw_adv_free releases the refs and strings
 * the feeds stored (names, symref targets), which pw_adv_find's results and
 * the refs array borrow. */
PW_API void pw_adv_init(struct pw_adv *a);
PW_API void pw_adv_free(struct pw_adv *a);
/*
 * Feed one packet of a v0/v1 ref advertisement: PW_EMORE until the flush,
 * then 0. The algorithm is the first object-format capability, else guessed
 * from the first id's length; every id must then have that length. Errors
 * (PW_EPROTO): "remote error: <msg>" for ERR lines, mixed id lengths, an
 * object-format that does not match the ids, malformed lines.
 */
PW_API int pw_adv_feed_v0(struct pw_adv *a, const struct pw_pkt *pkt, struct pw_error *err);
/* One line of a v2 ls-refs response for algo (set a->algo first); PW_EMORE
 * for lines, 0 at the flush. */
PW_API int pw_adv_feed_ls_refs(struct pw_adv *a, const struct pw_pkt *pkt, struct pw_error *err);
/* Find a ref by name (NULL when absent). */
PW_API const struct pw_remote_ref *pw_adv_find(const struct pw_adv *a, const char *name);

/* ---- sessions ----------------------------------------------------------- */

struct pw_client_opts {
	const char *upload_pack; /* --upload-pack command, NULL = git-upload-pack */
	int protocol_version;    /* wanted: 0, 1 or 2 (the server may answer v0) */
	int quiet;               /* no warnings through report.warning */
	/* ask for the server's progress (band 2, to report.remote) and report
	 * our own (receiving, resolving) to report.progress */
	int progress;
	struct pw_ssh_opts ssh;  /* how to run ssh (none: "ssh") */
	struct pw_report report; /* where progress and warnings go (none: dropped) */
	const char *git_proxy;   /* git:// proxy (pw_transport_opts) */
	const struct pw_config *git_proxy_config; /* core.gitProxy from here */
	/* http(s)://: http.* and credential.* (pw_transport_opts) */
	const struct pw_config *config;
	const struct pw_http_env *http_env;
	const struct pw_protocol_env *protocol; /* policy, helpers (pw_transport_opts) */
	const char *git_dir;                    /* GIT_DIR for remote helpers; may be NULL */
	/* a remote helper's first argument (its marks and private refs are
	 * kept under it); NULL: the URL, as for a URL given on the command line */
	const char *remote_name;
	/* GIT_TRACE_PACKET's view: each pkt-line read from the server (write
	 * 0) or sent to it (1), control packets as "0000", "0001", "0002"; the
	 * pack stream itself is left out. NULL: no trace. */
	void (*trace_packet)(void *ctx, int write, const char *data, size_t len);
	void *trace_packet_ctx;
};

struct pw_session;

/* Connect and read the server's first words (v0/v1 ref advertisement or v2
 * capabilities). */
/* *out is the caller's, ended and freed by pw_session_close. */
PW_API int pw_session_open(struct pw_session **out, const char *url,
                           const struct pw_client_opts *opts, struct pw_error *err);
/* End the session (v2: a flush), reap the server. Returns an error when the
 * server failed and nothing else was reported. NULL is fine. */
/* (The session is freed in any case.) */
PW_API int pw_session_close(struct pw_session *s, struct pw_error *err);

/* The getters below return values or borrowed strings valid until close. */
PW_API int pw_session_version(const struct pw_session *s);
/* The server's algorithm (sha1 when it said nothing). */
PW_API const struct pw_hash_algo *pw_session_algo(const struct pw_session *s);
/* Was object-format advertised (v2 line or v0 capability)? */
PW_API int pw_session_algo_advertised(const struct pw_session *s);
/* The v0/v1 capability list or v2 capability lines joined by spaces. */
PW_API const char *pw_session_caps(const struct pw_session *s);

/*
 * May a repository using `local` fetch from this server? v0/v1: PW_EUNSUPPORTED
 * "Server does not support this repository's object format"; v2:
 * "mismatched algorithms: client <L>; server <R>" or "the server does not
 * support algorithm '<L>'".
 */
PW_API int pw_session_check_algo(struct pw_session *s, const struct pw_hash_algo *local,
                                 struct pw_error *err);

/* Flags for pw_session_list_refs. */
#define PW_LSREFS_SYMREFS 1 /* ask v2 for symref-target */
#define PW_LSREFS_PEEL    2 /* ask v2 for peeled tags */
#define PW_LSREFS_UNBORN  4 /* ask v2 for an unborn HEAD (when offered) */

/* The server's refs: v2 runs ls-refs with these prefixes (NULL-terminated,
 * NULL = all); v0/v1 return the advertisement unfiltered. Borrowed, valid
 * until the session is closed. */
PW_API int pw_session_list_refs(struct pw_session *s, const char *const *prefixes, unsigned flags,
                                const struct pw_adv **out, struct pw_error *err);

struct pw_fetch_request {
	const struct pw_oid *wants;
	size_t nr_wants;
	unsigned depth;     /* deepen N; 0 = full history */
	const char *filter; /* filter-spec or NULL */
	int include_tag;
	int no_haves; /* clone: nothing to negotiate */
	/* --shallow-since / --shallow-exclude: "deepen-since <time>" (the date
	 * read as Git's approxidate reads its usual forms, else PW_EINVAL) and
	 * "deepen-not <ref>" lines (v0/v1 need the server's deepen-since and
	 * deepen-not capabilities, v2 its shallow feature); remote helpers get
	 * them as "option deepen-since" / "option deepen-not" unchanged; bundles
	 * and dumb HTTP refuse them (PW_EUNSUPPORTED) */
	const char *deepen_since;
	const char *const *deepen_not;
	size_t nr_deepen_not;
};

struct pw_fetch_result {
	int got_pack;
	char pack_path[4096]; /* objects/pack/pack-<hex>.pack when a new pack was stored */
	char idx_path[4096];
	struct pw_oid *shallow; /* the shallow list to store (when depth given) */
	size_t nr_shallow;
	int shallow_changed;
	uint32_t nr_objects;
	int rounds; /* negotiation rounds */
	size_t haves_sent;
};

/*
 * Fetch: negotiate with haves from the repository's refs, receive the pack
 * (thin, side-band-64k), index it into objects/pack with --fix-thin, check
 * that every wanted object is there (and, without depth or filter, that the
 * new history is connected). On failure no pack is left behind.
 */
/* res is (re)initialised first; free it with pw_fetch_result_free in any
 * case. repo is borrowed for the call. */
PW_API int pw_session_fetch(struct pw_session *s, struct pw_repo *repo,
                            const struct pw_fetch_request *req, struct pw_fetch_result *res,
                            struct pw_error *err);
/*
 * push.negotiate (git fetch --negotiate-only): offer the history of tips as
 * "have" lines with wait-for-done, and return the commits the server
 * acknowledged in *common (the caller frees it). Protocol v2 only:
 * PW_EUNSUPPORTED "--negotiate-only requires protocol v2", or when the
 * server lacks wait-for-done. No pack is asked for.
 */
PW_API int pw_session_negotiate(struct pw_session *s, struct pw_repo *repo,
                                const struct pw_oid *tips, size_t nr_tips, struct pw_oid **common,
                                size_t *nr_common, struct pw_error *err);
/* Remove the pack stored by a fetch whose refs could not be written. */
PW_API void pw_fetch_result_rollback(struct pw_fetch_result *res);
/* Write $GIT_DIR/shallow from the result (when it changed). */
PW_API int pw_fetch_result_write_shallow(struct pw_repo *repo, const struct pw_fetch_result *res,
                                         struct pw_error *err);
PW_API void pw_fetch_result_free(struct pw_fetch_result *res);

/* ---- local history ----------------------------------------------------- */

/* Is `anc` an ancestor of (or equal to) `desc`? 1, 0, or a negative error.
 * Missing objects (shallow history) count as "not an ancestor". */
PW_API int pw_commit_is_ancestor(struct pw_repo *repo, const struct pw_oid *anc,
                                 const struct pw_oid *desc, struct pw_error *err);

/* ---- refspecs ---------------------------------------------------------- */

struct pw_refspec {
	char *src, *dst; /* dst NULL when absent */
	int force;       /* leading + */
	int negative;    /* leading ^ */
	int glob;        /* both sides have one '*' */
};

/* On success free *out with pw_refspec_free; on failure nothing is held. */
PW_API int pw_refspec_parse(struct pw_refspec *out, const char *spec, struct pw_error *err);
PW_API void pw_refspec_free(struct pw_refspec *r);
/* Does name match src (or, reverse, dst)? *out (malloc'd, may be NULL) gets
 * the mapped name on the other side. 1, 0 or PW_ENOMEM. */
PW_API int pw_refspec_match(const struct pw_refspec *r, const char *name, int reverse, char **out);

/* ---- work tree --------------------------------------------------------- */

/* Write the tree of `commit` into the (empty) work tree of repo and the
 * matching .git/index (v2, stat data filled in). */
PW_API int pw_checkout_fresh(struct pw_repo *repo, const struct pw_oid *commit,
                             struct pw_error *err);

/* ---- clone -------------------------------------------------------------- */

struct pw_clone_opts {
	const char *url; /* as given; local paths are made absolute */
	const char *dir; /* where to create the repository (required) */
	int bare, mirror, no_checkout;
	int single_branch; /* -1: only with depth (Git's default) */
	unsigned depth;
	const char *branch;         /* -b */
	const char *origin;         /* NULL = "origin" */
	const char *filter;         /* --filter */
	const char *initial_branch; /* HEAD of an empty clone (init.defaultBranch) */
	/* the working directory as the user sees it (symbolic links kept, as
	 * $PWD), to make a relative local url absolute; NULL = getcwd() */
	const char *cwd;
	/* config layers for the new repository's handle (pw_repo_opts.config) */
	const struct pw_config_layers *config;
	struct pw_client_opts client;
	/* --shallow-since / --shallow-exclude (pw_fetch_request's; like depth
	 * they make the clone single-branch unless single_branch says no) */
	const char *deepen_since;
	const char *const *deepen_not; /* NULL-terminated, or NULL */
};

struct pw_clone_info {
	int version;                     /* protocol version used */
	const struct pw_hash_algo *algo; /* the repository's (= the server's) */
	int empty;                       /* the remote had no refs */
	size_t nr_refs;                  /* refs written */
	uint32_t nr_objects;
};

/* Clone into opts->dir, which must not exist or be empty. On failure what
 * was created is removed again. */
/* info holds no allocation (algo is static). The caller's process sees the
 * server's and ssh's stderr (the child inherits it). */
PW_API int pw_clone(const struct pw_clone_opts *opts, struct pw_clone_info *info,
                    struct pw_error *err);

/* ---- fetch into an existing repository -------------------------------- */

enum pw_update_status {
	PW_UPD_UPTODATE = 0,
	PW_UPD_NEW,        /* * [new branch] / [new tag] / [new ref] */
	PW_UPD_FF,         /* old..new */
	PW_UPD_FORCED,     /* + old...new (forced update) */
	PW_UPD_REJECTED,   /* ! [rejected] (non-fast-forward) */
	PW_UPD_CLOBBER,    /* ! [rejected] (would clobber existing tag) */
	PW_UPD_TAG_FORCED, /* t [tag update] */
	PW_UPD_DELETED,    /* - [deleted] (prune) */
	PW_UPD_FETCH_HEAD  /* no local ref: FETCH_HEAD only */
};

struct pw_ref_update {
	char *remote_name; /* refs/heads/x on the server ((none) for prune) */
	char *local_name;  /* NULL when only FETCH_HEAD gets it */
	struct pw_oid old_oid, new_oid;
	enum pw_update_status status;
	int for_merge;
};

struct pw_fetch_opts {
	const char *remote;          /* remote name or URL; NULL = the branch's remote / origin */
	const char *const *refspecs; /* command-line refspecs (NULL-terminated) or NULL */
	unsigned depth;
	int prune, tags, no_tags;
	struct pw_client_opts client;
	const char *deepen_since;      /* pw_fetch_request's */
	const char *const *deepen_not; /* NULL-terminated, or NULL */
};

struct pw_fetch_report {
	char *url; /* as shown in "From <url>" */
	struct pw_ref_update *v;
	size_t nr, alloc;
	int rejected;
	int version;
	const struct pw_hash_algo *algo;
};

/* Fetch into repo: negotiate, receive, update refs (one transaction; on
 * failure nothing changes and the new pack is removed), FETCH_HEAD, shallow.
 * Rejected non-fast-forward updates are reported, not errors. */
/* rep is zeroed first; free it with pw_fetch_report_free whatever the
 * result. repo is borrowed for the call. */
PW_API int pw_fetch(struct pw_repo *repo, const struct pw_fetch_opts *opts,
                    struct pw_fetch_report *rep, struct pw_error *err);
PW_API void pw_fetch_report_free(struct pw_fetch_report *rep);

#endif
