/* Reflogs as Git's files backend writes them (logs/<refname>, one line per
 * update: "<old> <new> <committer ident>\t<message>\n"), for the servers'
 * ref updates (receive-pack logs "push"). */
#ifndef PW_REFS_REFLOG_H
#define PW_REFS_REFLOG_H

#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_repo;

/* Append to the log of `name` when it exists or core.logAllRefUpdates asks
 * for one ("always": every ref; true, the default of non-bare repositories:
 * refs/heads/, refs/remotes/, refs/notes/ and HEAD). The committer comes
 * from GIT_COMMITTER_NAME/EMAIL, else user.name/user.email, else the
 * account; the time from GIT_COMMITTER_DATE ("<seconds> <+hhmm>", "@" allowed),
 * else now. 0 when written or not wanted; PW_EIO/PW_ENOMEM with err set. */
int pw_reflog_append(struct pw_repo *repo, const char *name, const struct pw_oid *old_oid,
                     const struct pw_oid *new_oid, const char *msg, struct pw_error *err);

/* Remove the log of a deleted ref (and its now empty directories). */
void pw_reflog_delete(struct pw_repo *repo, const char *name);

#endif
