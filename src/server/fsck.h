/* Object checks for receive.fsckObjects / transfer.fsckObjects, in the
 * spirit of `git fsck --strict` on incoming objects:
 *  - commits: "tree" line first, then "parent" lines, "author" and
 *    "committer" identities ("Name <email> <seconds> <+hhmm>"), no NUL in
 *    the header; the tree exists and is a tree, parents exist and are commits;
 *  - trees: modes 100644, 100755, 120000, 40000, 160000 only (no zero
 *    padding, no 100664), names non-empty without '/', not ".", "..", ".git"
 *    (any case), entries in Git's order without duplicates; every entry but
 *    gitlinks exists with the type its mode says;
 *  - tags: "object", "type", "tag" lines (and a well-formed "tagger" when
 *    present); the tagged object exists with the type the tag names.
 * Blob contents are not inspected (no .gitmodules rules). */
#ifndef PW_SERVER_FSCK_H
#define PW_SERVER_FSCK_H

#include <stddef.h>

#include "packwire/error.h"
#include "packwire/odb.h"

/* Check one object; links are looked up in odb. PW_ECORRUPT with a message
 * naming the object and the problem. */
int pw_fsck_object(struct pw_odb *odb, const struct pw_oid *oid, int type, const char *data,
                   size_t len, struct pw_error *err);

/* Check every object listed in the pack index idx_path, read through odb. */
int pw_fsck_pack(struct pw_odb *odb, const char *idx_path, struct pw_error *err);

#endif
