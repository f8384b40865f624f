/* A cluster node's record, per repository, of the newest refs it applied
 * from etcd or sent to etcd in a commit (docs/cluster.md, "Restarts"):
 * <git-dir>/packwire-cluster-state. It is written before the local refs
 * change (so it is never older than them) and before a push's etcd
 * transaction (so a crash between etcd's commit and the local update
 * loses nothing); a node that cannot reach etcd serves at least it.
 *
 * The file (text, at most PW_CSTATE_MAX bytes):
 *   packwire-cluster-state 1 <algo> <etcd revision>\n
 *   <hex id> <refname>\n      one per ref, sorted by name, no duplicates
 * Writers hold an flock on <git-dir>/packwire-cluster-state.flock, write
 * <file>.tmp and rename it into place (no fsync: as the refs). */
#ifndef PW_CLUSTER_STATE_H
#define PW_CLUSTER_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

#define PW_CSTATE_FILE     "packwire-cluster-state"
#define PW_CSTATE_MAX      (16u << 20) /* bytes of the file */
#define PW_CSTATE_LINE_MAX 4096        /* bytes of one line */

struct pw_cstate_ref {
	char *name;
	struct pw_oid oid;
};

struct pw_cstate {
	int64_t revision;
	struct pw_cstate_ref *refs; /* sorted by name */
	size_t nr;
};

/* Decode a file of algo's ids. PW_EINVAL (err says where) on anything
 * malformed, PW_EMISMATCH when it is another algorithm's. */
int pw_cstate_parse(const char *text, size_t len, const struct pw_hash_algo *algo,
                    struct pw_cstate *out, struct pw_error *err);
void pw_cstate_free(struct pw_cstate *s);
/* The file's bytes for s (s->refs sorted, no duplicates). */
int pw_cstate_format(const struct pw_cstate *s, const struct pw_hash_algo *algo,
                     struct pw_buf *out);

/* The repository's record. PW_ENOTFOUND when there is none. */
int pw_cstate_load(const char *git_dir, const struct pw_hash_algo *algo, struct pw_cstate *out,
                   struct pw_error *err);

/* One change: oid NULL or zero = the ref is gone. */
struct pw_cstate_set {
	const char *name;
	const struct pw_oid *oid;
};

/*
 * Change the record, under its flock. replace 1: etcd's whole state at
 * revision: it becomes the record unless the record is of a newer revision
 * (*skipped = 1 then; may be NULL); 2: even then. Else merge: the refs named change, the
 * others stay, and the revision becomes max(record's, revision). The file
 * is rewritten only when its bytes change, and for replace 1 only when its
 * refs do (a newer revision with the same refs is not written).
 */
int pw_cstate_store(const char *git_dir, const struct pw_hash_algo *algo, int replace,
                    int64_t revision, const struct pw_cstate_set *set, size_t n, int *skipped,
                    struct pw_error *err);

#endif
