/* The object walk behind rev-list and pack-objects: commits reachable from a
 * set of tips but not from a set of exclusions and, on request, every tree and
 * blob they reach that the excluded side does not (with its path, for delta
 * search). A walk uses one odb handle and is used by one thread. */
#ifndef PACKWIRE_REVLIST_H
#define PACKWIRE_REVLIST_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/odb.h"

struct pw_revlist;

/* Flags for pw_revlist_new. */
#define PW_REVLIST_OBJECTS 1 /* list trees, blobs and tags too (rev-list --objects) */
/* Also report the trees and blobs of the boundary (excluded parents of listed
 * commits), flagged excluded: the receiver has them, so a thin pack may use
 * them as delta bases. Implies PW_REVLIST_OBJECTS. */
#define PW_REVLIST_EDGES 2

struct pw_revlist_obj {
	struct pw_oid oid;
	int type;         /* PW_OBJ_COMMIT, _TREE, _BLOB or _TAG */
	const char *path; /* NUL-terminated; NULL for commits, "" for root trees;
	                   * the tag's name for tags. Valid during the callback. */
	size_t path_len;
	int excluded; /* 1 for boundary objects (PW_REVLIST_EDGES only) */
};

/* Called once per object; a non-zero return stops the walk and is returned. */
typedef int (*pw_revlist_fn)(const struct pw_revlist_obj *obj, void *data);

/* `odb` is borrowed for the walk's lifetime. */
/* 0 or PW_ENOMEM (no message). The walk is the caller's: pw_revlist_free
 * (NULL is fine). Later failures are in pw_revlist_error(rl). The walk
 * reads through odb, so nobody else may use that odb handle meanwhile. */
PW_API int pw_revlist_new(struct pw_revlist **out, struct pw_odb *odb, unsigned flags);
PW_API void pw_revlist_free(struct pw_revlist *rl);
/* The message of the last failure (borrowed). */
PW_API const struct pw_error *pw_revlist_error(const struct pw_revlist *rl);

/* A hint before the walk: about n trees, blobs and tags will be seen (the
 * objects of the packs, say), so their table is made once at its size. 0 or
 * PW_ENOMEM (no message). */
PW_API int pw_revlist_reserve(struct pw_revlist *rl, size_t n);

/* Add a tip (exclude = 0) or an exclusion (^oid, exclude = 1). Annotated tags
 * are peeled (and listed themselves when included). `name` (may be NULL)
 * names a tree or blob tip in the output. PW_ENOTFOUND for a missing object. */
PW_API int pw_revlist_add(struct pw_revlist *rl, const struct pw_oid *oid, const char *name,
                          int exclude);

/* Walk and report: commits first (newest first, roughly), then tags, then
 * trees and blobs in traversal order. Can be called once. PW_ENOTFOUND (with
 * the object's id and path in the message) when something reachable is
 * missing, PW_ECORRUPT for objects that do not parse. */
PW_API int pw_revlist_run(struct pw_revlist *rl, pw_revlist_fn fn, void *data);

/* Number of commits listed by the last run. */
PW_API size_t pw_revlist_commit_count(const struct pw_revlist *rl);

/* After pw_revlist_run: the tree, parents and committer date of a commit
 * the walk parsed, as pw_commit_parse gives them (free with
 * pw_commit_info_free), so that a later step need not read it again. 1,
 * 0 when the walk did not parse that commit, or PW_ENOMEM. */
PW_API int pw_revlist_commit_info(const struct pw_revlist *rl, const struct pw_oid *oid,
                                  struct pw_commit_info *out);

#endif
