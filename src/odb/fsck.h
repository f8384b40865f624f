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
 * Blob contents are not inspected (no .gitmodules rules).
 *
 * Each problem has Git's message id (missingEmail, badFilemode, ...) and
 * default severity; receive-pack checks strictly (warnings are errors, infos
 * are printed as warnings), receive.fsck.<id>=error|warn|ignore changes one
 * severity and receive.fsck.skipList names objects not to complain about.
 */
#ifndef PW_ODB_FSCK_H
#define PW_ODB_FSCK_H

#include <stddef.h>

#include "hash/oidmap.h"
#include "packwire/error.h"
#include "packwire/odb.h"

struct pw_fsck_opts {
	unsigned char *severity;  /* per message id overrides (NULL: defaults) */
	struct pw_oidmap skip;    /* skipList: objects never complained about */
	struct pw_oidmap shallow; /* commits whose parents need not exist (shallow push) */
	int strict;               /* warnings are errors (receive-pack, index-pack --strict) */
	/* Where non-fatal findings go ("object <oid>: <id>: <text>"); may be NULL. */
	void (*warn)(void *ctx, const char *msg);
	void *ctx;
};

void pw_fsck_opts_init(struct pw_fsck_opts *o);
void pw_fsck_opts_free(struct pw_fsck_opts *o);
/* <id>=<severity> as receive.fsck.<id> gives it (ids in any case). PW_ENOTFOUND
 * for an unknown id (Git skips it with a warning); PW_EINVAL for an unknown
 * severity or a fatal id given a severity other than "error" (Git's "Cannot
 * demote"), with err set. */
int pw_fsck_opts_set(struct pw_fsck_opts *o, const char *id, const char *severity,
                     struct pw_error *err);
/* Read a skipList file: one object id per line, '#' comments and blank
 * lines allowed. PW_ENOTFOUND / PW_EIO ("could not open object name list")
 * or PW_EINVAL ("invalid object name: <line>"). */
int pw_fsck_opts_skiplist(struct pw_fsck_opts *o, const char *path, const struct pw_hash_algo *algo,
                          struct pw_error *err);

/* Check one object; links are looked up in odb. opts NULL: strict, Git's
 * default severities. PW_ECORRUPT with a message naming the object, the
 * message id and the problem. */
int pw_fsck_object(struct pw_odb *odb, const struct pw_oid *oid, int type, const char *data,
                   size_t len, const struct pw_fsck_opts *opts, struct pw_error *err);

/* Check every object listed in the pack index idx_path, read through odb. */
int pw_fsck_pack(struct pw_odb *odb, const char *idx_path, const struct pw_fsck_opts *opts,
                 struct pw_error *err);

#endif
