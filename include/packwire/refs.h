/* References of the files backend: loose refs, packed-refs, symbolic refs,
 * and atomic multi-ref transactions with Git's lock protocol. Calls taking a
 * repository leave their message in pw_repo_error(repo). */
#ifndef PACKWIRE_REFS_H
#define PACKWIRE_REFS_H

#include "packwire/export.h"

#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_repo;

/*
 * Contract: calls taking a repo use it (one thread at a time, see repo.h)
 * and leave their message in pw_repo_error(repo); strings they return
 * through char ** are malloc'd and freed by the caller with free(). Another
 * process (Git included) may change refs at any time: reads see a
 * consistent value per ref, and transactions lock what they write.
 */

/* Symrefs are followed at most this deep (as Git: 5). */
#define PW_REFS_MAX_DEPTH 5

/* git check-ref-format rules. With PW_REFNAME_ALLOW_ONELEVEL a name without
 * '/' is allowed (e.g. "HEAD", "main" for branch-name checks). */
#define PW_REFNAME_ALLOW_ONELEVEL 1
/* (1 or 0; pure, any thread.) */
PW_API int pw_refname_is_valid(const char *name, unsigned flags);
/* Names the ref store accepts: valid names under "refs/", or top-level
 * all-caps names like HEAD, FETCH_HEAD, ORIG_HEAD. */
PW_API int pw_refname_is_storable(const char *name);

/* Read one ref without following it: either *oid is set and *symref NULL,
 * or *symref is the malloc'd target ("refs/heads/main") and *oid zeroed.
 * PW_ENOTFOUND when it does not exist; PW_ECORRUPT when its content is bad. */
PW_API int pw_refs_read(struct pw_repo *repo, const char *name, struct pw_oid *oid, char **symref);

/* Follow symrefs to an oid. *final_name (optional, malloc'd) receives the
 * last name reached, also when that ref does not exist (an unborn branch:
 * return PW_ENOTFOUND with *final_name = "refs/heads/main"). */
PW_API int pw_refs_resolve(struct pw_repo *repo, const char *name, struct pw_oid *oid,
                           char **final_name);

/* ---- short names ------------------------------------------------------ */

/* Git's order for a short name: "<n>", "refs/<n>", "refs/tags/<n>",
 * "refs/heads/<n>", "refs/remotes/<n>", "refs/remotes/<n>/HEAD".
 *
 * pw_refname_dwim_match: 1 when the full ref name `name` is one of the
 * expansions of `shortname` (e.g. "main" and "refs/heads/main"), else 0.
 * Pure string work; thread-safe. */
PW_API int pw_refname_dwim_match(const char *shortname, const char *name);

/* Resolve a short name ("@" means HEAD) in the repository: the first
 * expansion that is a storable name (pw_refname_is_storable) and resolves
 * wins; *oid gets its value and *full_name (optional, malloc'd, the caller
 * frees it) the expanded name. When nmatch is not NULL every expansion is
 * tried and *nmatch counts those that resolve (more than 1: the name is
 * ambiguous, which Git warns about). Object ids are not parsed here: callers
 * decide whether a full hex id comes before or after the ref names.
 * PW_ENOTFOUND when nothing matches, PW_ENOMEM. Uses repo: one thread at a
 * time per handle. */
PW_API int pw_refs_dwim(struct pw_repo *repo, const char *shortname, struct pw_oid *oid,
                        char **full_name, unsigned *nmatch);

struct pw_ref {
	const char *name;          /* full name, e.g. "refs/heads/main" */
	struct pw_oid oid;         /* the value (for a symref: its resolved target's) */
	struct pw_oid peeled;      /* valid when has_peeled */
	int has_peeled;            /* packed-refs knows what this tag peels to */
	int peel_known;            /* packed-refs knows whether it peels (fully-peeled) */
	const char *symref_target; /* immediate target when a symref, else NULL */
};

/* Flags for pw_refs_foreach. */
#define PW_REFS_INCLUDE_HEAD   1 /* call fn for HEAD first (when it resolves) */
#define PW_REFS_INCLUDE_BROKEN 2 /* also dangling symrefs (oid zero) */

/* Every ref whose name starts with prefix (NULL = "refs/"), loose and packed
 * merged (loose wins), sorted by name. Refs with invalid names or unreadable
 * values are skipped. A non-zero return from fn stops and is returned. */
/* The struct pw_ref and its strings are valid during the callback only. */
PW_API int pw_refs_foreach(struct pw_repo *repo, const char *prefix, unsigned flags,
                           int (*fn)(const struct pw_ref *ref, void *data), void *data);

/* Write "ref: <target>" into name (e.g. HEAD) under its lock. */
PW_API int pw_refs_create_symref(struct pw_repo *repo, const char *name, const char *target);

/* ---- transactions ------------------------------------------------------ */

struct pw_ref_tx;

/* Flags for updates. */
#define PW_REF_NO_DEREF 1 /* update a symref itself instead of its target */

/* A transaction borrows repo (which must outlive it) and is used by one
 * thread. Its own failures (queueing, commit) are in pw_ref_tx_error(tx);
 * PW_ENOMEM from _new goes to pw_repo_error(repo). Free with pw_ref_tx_free
 * (NULL is fine; uncommitted updates are dropped, locks released). */
PW_API int pw_ref_tx_new(struct pw_ref_tx **out, struct pw_repo *repo);
/* Queue an update. old: NULL = don't check; zero oid = must not exist; else
 * must currently be that value. Nothing happens before commit. */
PW_API int pw_ref_tx_update(struct pw_ref_tx *tx, const char *name, const struct pw_oid *new_oid,
                            const struct pw_oid *old_oid, unsigned flags);
/* Deletes the named ref itself (a symref is removed, not its target). */
PW_API int pw_ref_tx_delete(struct pw_ref_tx *tx, const char *name, const struct pw_oid *old_oid);
/* Lock everything, verify every old value, then write: all or nothing.
 * PW_ELOCKED when a lock is held, PW_EMISMATCH on an old-value mismatch. */
/* Once only: a second commit is PW_EINVAL. */
PW_API int pw_ref_tx_commit(struct pw_ref_tx *tx);
/* The commit of a repository's first refs (a clone), as Git's clone writes
 * them: when it has no ref yet and every update creates a ref under refs/,
 * all of them go into packed-refs, written once under its lock (a clone of
 * a million refs makes one file, not a million); else pw_ref_tx_commit. */
PW_API int pw_ref_tx_commit_initial(struct pw_ref_tx *tx);
/* Borrowed, valid until pw_ref_tx_free. */
PW_API const struct pw_error *pw_ref_tx_error(const struct pw_ref_tx *tx);
PW_API void pw_ref_tx_free(struct pw_ref_tx *tx);

#endif
