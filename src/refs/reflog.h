/* Reflogs as Git's files backend writes them (logs/<refname>, one line per
 * update: "<old> <new> <committer ident>\t<message>\n"), for the servers'
 * ref updates (receive-pack logs "push"). */
#ifndef PW_REFS_REFLOG_H
#define PW_REFS_REFLOG_H

#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_repo;

/* Who an entry names; every field may be NULL (see pw_reflog_append). */
struct pw_reflog_ident {
	const char *name, *email, *date;
	const char *default_email; /* after user.email (Git's EMAIL) */
};

/* Append to the log of `name` when it exists or core.logAllRefUpdates asks
 * for one ("always": every ref; true, the default of non-bare repositories:
 * refs/heads/, refs/remotes/, refs/notes/ and HEAD). The committer is
 * who->name/email, else user.name/user.email, else who->default_email for
 * the email, else the account; the time who->date ("<seconds> <+hhmm>", "@"
 * allowed), else now. who may be NULL. 0 when written or not wanted;
 * PW_EIO/PW_ENOMEM with err set. */
int pw_reflog_append(struct pw_repo *repo, const char *name, const struct pw_oid *old_oid,
                     const struct pw_oid *new_oid, const char *msg,
                     const struct pw_reflog_ident *who, struct pw_error *err);

/* One entry of a log: its values and time (seconds since the epoch). */
struct pw_reflog_entry {
	struct pw_oid old_oid, new_oid;
	int64_t timestamp;
};

/* One line of a log (without its newline), "<old> <new> <name> <<email>>
 * <seconds> <zone>\t<message>" with ids of algo: 0 with e filled, -1 when
 * the line is not one. Pure; fuzzed (fuzz-reflog-entry). */
int pw_reflog_parse_entry(const struct pw_hash_algo *algo, const char *line, size_t len,
                          struct pw_reflog_entry *e);

/* A log is read whole up to this size (PW_ETOOBIG past it). */
#define PW_REFLOG_MAX_BYTES ((size_t)256 << 20)

/* Call fn for every entry of the log of `name`, newest first, until it
 * returns non-zero (which is returned); lines that do not parse are skipped,
 * as Git does. 0 when there is no log. PW_ETOOBIG, PW_EIO, PW_ENOMEM with err
 * set. */
int pw_reflog_foreach_reverse(struct pw_repo *repo, const char *name,
                              int (*fn)(const struct pw_reflog_entry *e, void *data), void *data,
                              struct pw_error *err);

/* Remove the log of a deleted ref (and its now empty directories). */
void pw_reflog_delete(struct pw_repo *repo, const char *name);

#endif
