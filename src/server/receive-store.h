/* receive-pack's side of a ref store (packwire/receive.h, pw_ref_store):
 * its updates go to the store instead of the repository's ref transaction.
 * Kept out of receive-pack.c so that the session only calls in at two
 * places (before the advertisement, and in place of its ref updates). */
#ifndef PW_SERVER_RECEIVE_STORE_H
#define PW_SERVER_RECEIVE_STORE_H

#include "packwire/receive.h"
#include "server/receive-cmds.h"

/* The store's prepare step for receive-pack: 0, or its error in err (the
 * session then refuses every update with that message). */
int pw_rp_store_prepare(const struct pw_ref_store *st, struct pw_repo *repo, struct pw_error *err);

/* Commit the commands that are still live (no error, not skipped, not the
 * proc-receive hook's) through the store, setting the error of each one it
 * refused; a store that failed as a whole fails them all (message in err,
 * returned non-zero). store_err: the prepare step's failure, or NULL. */
int pw_rp_store_commit(const struct pw_ref_store *st, struct pw_repo *repo, int atomic,
                       struct pw_receive_cmds *cmds, const struct pw_error *store_err,
                       struct pw_error *err);

#endif
