/* The object database: loose objects, packs (idx v1/v2) and alternates of one
 * repository, for one hash algorithm. A handle is used by one thread at a time;
 * open one per thread to share a repository. */
#ifndef PACKWIRE_ODB_H
#define PACKWIRE_ODB_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/object.h"

/*
 * Contract: pw_odb_open gives the caller a handle (errors in err, *out NULL
 * on failure), freed with pw_odb_free (NULL is fine). Calls on a handle leave
 * their message in pw_odb_error(odb), overwritten by the next failure.
 * Objects read go into a pw_buf the caller owns. Threads: a handle keeps
 * caches and open files, so one thread uses it at a time; open one handle
 * per thread (they share nothing). Other processes may add objects
 * meanwhile: loose ones are seen at once, new packs after pw_odb_refresh.
 * The parsers below are pure and may run on any thread.
 */

struct pw_odb;

/* Open the object directory `objects_dir` (e.g. "repo.git/objects") holding
 * objects of `algo`; follows objects/info/alternates. */
PW_API int pw_odb_open(struct pw_odb **out, const char *objects_dir,
                       const struct pw_hash_algo *algo, struct pw_error *err);
PW_API void pw_odb_free(struct pw_odb *odb);
PW_API const struct pw_hash_algo *pw_odb_algo(const struct pw_odb *odb);
/* The last error on this handle (borrowed). */
PW_API const struct pw_error *pw_odb_error(const struct pw_odb *odb);

/* Check every object read against its id (off by default, as in git
 * cat-file); a mismatch is PW_ECORRUPT. */
PW_API void pw_odb_set_verify(struct pw_odb *odb, int on);
/* Problems met while scanning (unreadable idx files, missing alternates), one
 * per line; "" when none. Borrowed. */
PW_API const char *pw_odb_warnings(const struct pw_odb *odb);

/* Read a whole object: *type gets PW_OBJ_*, out the content (replaced).
 * PW_ENOTFOUND when absent; PW_ECORRUPT with a message naming the file. */
PW_API int pw_odb_read(struct pw_odb *odb, const struct pw_oid *oid, int *type, struct pw_buf *out);
/* Type and size without reading the content where the store allows it. */
PW_API int pw_odb_read_header(struct pw_odb *odb, const struct pw_oid *oid, int *type,
                              uint64_t *size);
/* 1 when the object exists (loose, packed or in an alternate), else 0. */
PW_API int pw_odb_exists(struct pw_odb *odb, const struct pw_oid *oid);
/* Write a loose object (zlib), returning its id; a no-op when it exists. */
/* (Written to a temporary file and renamed into place: safe against
 * concurrent writers of the same object.) */
PW_API int pw_odb_write_loose(struct pw_odb *odb, int type, const void *data, size_t len,
                              struct pw_oid *out);
/* Look for packs added since the handle was opened (after index-pack). */
PW_API int pw_odb_refresh(struct pw_odb *odb);
/* Call fn for every object id once (packs and loose, alternates included),
 * in no particular order; a non-zero return from fn stops and is returned. */
PW_API int pw_odb_foreach(struct pw_odb *odb, int (*fn)(const struct pw_oid *oid, void *data),
                          void *data);

/* ---- object parsing for traversal ------------------------------------- */

struct pw_commit_info {
	struct pw_oid tree;
	struct pw_oid *parents; /* malloc'd array */
	size_t nr_parents;
	int64_t commit_time; /* committer timestamp, seconds */
};
/* Parse a commit's header; PW_ECORRUPT on malformed input. Free with
 * pw_commit_info_free. */
/* Pure: any thread; the message goes to err. */
PW_API int pw_commit_parse(struct pw_commit_info *out, const char *data, size_t len,
                           const struct pw_hash_algo *algo, struct pw_error *err);
PW_API void pw_commit_info_free(struct pw_commit_info *c);

struct pw_tree_entry {
	unsigned mode;    /* octal mode as stored, e.g. 0100644, 040000 */
	const char *name; /* points into the tree buffer, not NUL-terminated */
	size_t name_len;
	struct pw_oid oid;
};
/* Iterate a tree: *pos starts at 0; returns 1 with an entry, 0 at the end,
 * PW_ECORRUPT on malformed input. */
PW_API int pw_tree_next(const char *data, size_t len, size_t *pos, const struct pw_hash_algo *algo,
                        struct pw_tree_entry *out, struct pw_error *err);

struct pw_tag_info {
	struct pw_oid object;
	int type;         /* type of the tagged object */
	const char *name; /* into the buffer */
	size_t name_len;
};
/* PW_ECORRUPT on malformed input, message in err; name points into data. */
PW_API int pw_tag_parse(struct pw_tag_info *out, const char *data, size_t len,
                        const struct pw_hash_algo *algo, struct pw_error *err);

/* ---- tags and history ------------------------------------------------- */

/* Annotated tags are followed at most this deep. */
#define PW_PEEL_MAX_DEPTH 64

/* Follow annotated tags from oid to the first object that is not a tag:
 * *out gets it and *type (optional) its type. Returns the number of tags
 * followed (0: oid is no tag) or a negative code with the message in err:
 * PW_ENOTFOUND ("bad object <hex>", *out is then the missing object),
 * PW_ECORRUPT for a tag that does not parse or a chain deeper than
 * PW_PEEL_MAX_DEPTH. Uses odb: one thread at a time per handle. */
PW_API int pw_odb_peel(struct pw_odb *odb, const struct pw_oid *oid, struct pw_oid *out, int *type,
                       struct pw_error *err);

/* Is commit `anc` an ancestor of (or equal to) commit `desc`? 1, 0, or
 * PW_ENOMEM (message in err). Missing or unreadable commits end a line of
 * history quietly (shallow history): "not an ancestor" when that hides the
 * answer. Lines older than `anc` by more than a day of clock skew are not
 * followed. Uses odb: one thread at a time per handle. */
PW_API int pw_odb_is_ancestor(struct pw_odb *odb, const struct pw_oid *anc,
                              const struct pw_oid *desc, struct pw_error *err);

#endif
