/* The proc-receive hook (receive.procReceiveRefs): which commands go to it,
 * the conversation with it (version, commands, push options, its report)
 * and the parser of its report, private to the library and reached by the
 * unit tests and the fuzz target through src/. */
#ifndef PW_SERVER_PROC_RECEIVE_H
#define PW_SERVER_PROC_RECEIVE_H

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "server/receive-cmds.h"

/* One receive.procReceiveRefs value: "[<modifiers>:]<prefix>", modifiers
 * from "a" (create), "d" (delete), "m" (modify) and "!" (negate). */
struct pw_proc_ref {
	unsigned add : 1, del : 1, mod : 1, neg : 1;
	char *prefix; /* trailing slashes removed */
};

struct pw_proc_refs {
	struct pw_proc_ref *v;
	size_t nr;
};

#define PW_PROC_MAX_REFS    10000  /* receive.procReceiveRefs values */
#define PW_PROC_MAX_REPORTS 100000 /* "ok" entries in one report */
#define PW_PROC_MAX_MSG     65536  /* error text collected from one report */

/* 0, PW_ENOMEM or PW_ETOOBIG. */
int pw_proc_refs_add(struct pw_proc_refs *r, const char *value);
void pw_proc_refs_free(struct pw_proc_refs *r);
/* 1 when the command goes to the proc-receive hook. */
int pw_proc_refs_match(const struct pw_proc_refs *r, const struct pw_receive_cmd *c);

/*
 * The hook's report, one pkt-line at a time ("ok <ref>", "ng <ref> [<reason>]",
 * "option refname|old-oid|new-oid <v>", "option forced-update",
 * "option fall-through"). What it says lands in the commands (run_proc,
 * error, reports); what is wrong with it goes to msg, worded as Git's.
 */
struct pw_proc_report {
	struct pw_receive_cmds *cmds;
	size_t hint;
	int has_hint, new_report, option_once;
	struct pw_receive_report *report; /* the entry "option" lines fill */
	size_t nreports, responses;
	int failed;         /* Git's code -1: something was not ok */
	struct pw_buf *msg; /* the caller's; lines end with LF; bounded */
};

void pw_proc_report_init(struct pw_proc_report *p, struct pw_receive_cmds *cmds,
                         struct pw_buf *msg);
/* One line (a trailing LF is dropped; text after a NUL is ignored). 0 or
 * PW_ENOMEM. */
int pw_proc_report_line(struct pw_proc_report *p, const char *line, size_t len);
/* After the flush: a command sent to the hook and not reported on fails. */
void pw_proc_report_finish(struct pw_proc_report *p);

struct pw_proc_receive {
	const char *path;       /* the hook */
	const char *const *env; /* as for pw_hook_run */
	const char *cwd;
	struct pw_receive_cmds *cmds; /* those with run_proc set are sent */
	int atomic, push_options;     /* offered to the hook */
	char *const *popts;
	size_t npopts;
	void (*output)(void *ctx, const char *data, size_t len); /* the hook's stderr */
	void *ctx;
};

/*
 * Run the hook and hold the conversation. Returns 0 when everything sent
 * was reported ok, 1 when the hook failed, could not be talked to or
 * reported a failure (msg then says why, without a final LF, when there is
 * more to say than the hook's own output), PW_ENOMEM.
 */
int pw_proc_receive_run(const struct pw_proc_receive *r, struct pw_buf *msg);

#endif
