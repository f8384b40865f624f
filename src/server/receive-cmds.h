/* The command list of a push ("<old> <new> <refname>" lines, the first with
 * "\0<capabilities>"): receive-pack's parser, private to the library and
 * reached by the unit tests and the fuzz target through src/. */
#ifndef PW_SERVER_RECEIVE_CMDS_H
#define PW_SERVER_RECEIVE_CMDS_H

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

/* What a proc-receive hook said it did with a command ("ok <ref>" and its
 * "option" lines); a field left unset keeps the command's own value. */
struct pw_receive_report {
	char *ref_name; /* malloc'd or NULL */
	struct pw_oid old_oid, new_oid;
	int has_old, has_new, forced_update;
	struct pw_receive_report *next;
};

#define PW_RECEIVE_PROC_SCHEDULED 1 /* goes to the proc-receive hook */
#define PW_RECEIVE_PROC_RETURNED  2 /* the hook reported on it */

struct pw_receive_cmd {
	struct pw_oid old_oid, new_oid;
	char *name;        /* malloc'd ref name */
	const char *error; /* NULL = accepted so far; else the "ng" reason (static) */
	char *error_own;   /* when the reason is built at run time (freed) */
	int skip_update;   /* handled (e.g. by a failure before the ref step) */
	int did_not_exist; /* a delete of a ref that was not there: no post hooks */
	/* receive.denyCurrentBranch=updateInstead: the work tree (and its git
	 * dir) to update when the ref moves; malloc'd, NULL when none */
	char *worktree, *worktree_git_dir;
	int run_proc;                      /* PW_RECEIVE_PROC_* bits */
	int proc_fell_through;             /* the hook handed it back ("fall-through") */
	struct pw_receive_report *reports; /* from the proc-receive hook, in order */
};

struct pw_receive_cmds {
	const struct pw_hash_algo *algo;
	struct pw_receive_cmd *v;
	size_t nr, alloc;
	char *caps; /* capability list of the first command (malloc'd, "" if none) */
	int seen_caps;
};

void pw_receive_cmds_init(struct pw_receive_cmds *c, const struct pw_hash_algo *algo);
void pw_receive_cmds_free(struct pw_receive_cmds *c);

/* Limits on what one push may send. */
#define PW_RECEIVE_MAX_CMDS         100000
#define PW_RECEIVE_MAX_PUSH_OPTIONS 1000

/*
 * The capability list of the first command line (the text after its NUL),
 * without parsing the rest: the object format must be checked before oids
 * of the session's length are parsed. *caps is a view into line; empty when
 * the line has no NUL.
 */
void pw_receive_line_caps(const char *line, size_t len, struct pw_str *caps);

/*
 * Parse one command line "<old> <new> <refname>" (LF stripped or not; the
 * first may carry "\0<caps>") and append it. PW_EPROTO with a message for a
 * malformed line, ids of the wrong length or an empty or oversized ref name
 * (whether the name is a valid ref is decided per command later);
 * PW_ETOOBIG past PW_RECEIVE_MAX_CMDS.
 */
int pw_receive_cmds_add_line(struct pw_receive_cmds *c, const char *line, size_t len,
                             struct pw_error *err);

#endif
