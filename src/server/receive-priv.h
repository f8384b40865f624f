/* receive-pack's parts (receive-pack.c and receive-*.c) share one push
 * session, struct rp: the protocol (advertisement, request, ref updates,
 * report: receive-pack.c), the pushed pack (receive-unpack.c), the checks
 * of each command (receive-checks.c), shallow pushes (receive-shallow.c),
 * hooks and push certificates' environment (receive-hooks.c) and
 * push-to-checkout (receive-checkout.c). */
#ifndef PW_SERVER_RECEIVE_PRIV_H
#define PW_SERVER_RECEIVE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "hash/oidmap.h"
#include "odb/fsck.h"
#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/idx.h"
#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/receive.h"
#include "packwire/repo.h"
#include "refs/hide.h"
#include "server/compat-receive.h"
#include "server/proc-receive.h"
#include "server/pushcert.h"
#include "server/receive-cmds.h"

#define MAX_PUSH_OPTION_BYTES (1u << 20)

enum deny { DENY_UNSET = -1, DENY_IGNORE = 0, DENY_WARN, DENY_REFUSE, DENY_UPDATE_INSTEAD };

struct rp {
	struct pw_repo *repo;
	struct pw_compat_submodules *subs; /* rp_submodules */
	const struct pw_hash_algo *algo;
	const struct pw_receive_opts *opts;
	struct pw_error *err;
	int in_fd, out_fd;
	struct pw_pkt_reader rd;
	int rd_init;

	/* negotiated */
	int caps_taken, report, report_v2, sideband, quiet, atomic, use_push_options;
	struct pw_receive_cmds cmds;
	char **popts;
	size_t npopts, popts_bytes;
	size_t nshallow;
	struct pw_oid *shallow;          /* the client's shallow commits */
	struct pw_oidmap theirs;         /* of those, the ones this push brought */
	struct pw_oid_array new_shallow; /* receive.shallowUpdate: to add to our shallow file */
	int shallow_update, bad_shallow;
	int shallow_xlated; /* across algorithms: s->shallow holds storage ids */

	/* config */
	int deny_nff, deny_deletes, fsck, adv_push_options, adv_atomic, auto_gc, adv_sid;
	int update_server_info; /* receive.updateServerInfo */
	enum deny deny_current, deny_delete_current;
	int64_t max_input;
	char *hooks_dir;
	char *head_target;             /* HEAD's symref target, or NULL */
	struct pw_hide_refs hidden;    /* transfer.hideRefs + receive.hideRefs */
	struct pw_fsck_opts fsck_opts; /* receive.fsck.<msg-id>, receive.fsck.skipList */
	struct pw_proc_refs proc_refs; /* receive.procReceiveRefs */
	const char *cert_seed;         /* receive.certNonceSeed (borrowed from the config) */
	long cert_slop_limit;          /* receive.certNonceSlop */

	/* push certificate (git push --signed) */
	char *cert_nonce;   /* the nonce we gave out (or adopted), NULL without a seed */
	struct pw_buf cert; /* as received, NUL-free lines */
	int cert_prepared, have_cert_oid;
	int no_cert_env; /* running something that is not a hook (git gc) */
	struct pw_oid cert_oid;
	struct pw_sigcheck cert_sig;
	const char *nonce_status;
	long nonce_slop;
	char *fsck_config_error; /* reported when a pack is checked, as Git does */

	/* state */
	struct pw_oid *refs; /* values of the refs at the start, for exclusion */
	size_t nrefs, alloc_refs;
	struct pw_odb *main_odb, *q_odb;
	char *qdir;
	char *unpack_error; /* NULL = unpack ok */
	/* The pushed pack, when everything its objects refer to is in it: its
	 * objects need no connectivity walk (until check_connectivity). */
	struct pw_idx *self_contained;
	int io_failed;        /* writing to the client failed: stop talking */
	int64_t unpack_limit; /* fewer objects than this: loose objects */
	uint32_t pack_nr;     /* objects in the pushed pack */

	/* a client of the other algorithm (opts->object_format): ids on the
	 * wire are wire's, translated at the edge (compat-receive.h) */
	struct pw_rp_compat *compat;
	const struct pw_hash_algo *wire; /* the client's algorithm (= algo natively) */
	struct pw_error store_err;       /* opts->ref_store's prepare step failed */
};

/* ---- output (receive-pack.c) --------------------------------------------- */

/* "<prefix><message>\n" for the user: side-band 2 when negotiated, else
 * the error descriptor. */
void pw_rp__msg(struct rp *s, const char *prefix, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
#define rp_error(s, ...)   pw_rp__msg(s, "error: ", __VA_ARGS__)
#define rp_warning(s, ...) pw_rp__msg(s, "warning: ", __VA_ARGS__)
/* A hook's output, passed to the user as it comes (ctx: the session). */
void pw_rp__hook_output(void *ctx, const char *data, size_t len);
/* The hex of a storage id in the client's algorithm: 0, or PW_ENOTFOUND
 * when the compat map does not know it. */
int pw_rp__wire_hex(struct rp *s, const struct pw_oid *oid, char *hex);

/* ---- the pushed pack (receive-unpack.c) ---------------------------------- */

/* Read the pack into the quarantine (index-pack, or loose objects under
 * receive.unpackLimit), check it (fsck), translate it for a client of the
 * other algorithm. 0, or the session's error. */
int pw_rp__receive_pack_data(struct rp *s);
/* A client of the other algorithm: its shallow commits as storage ids, once
 * the pushed objects are translated. */
int pw_rp__compat_shallow(struct rp *s);

/* ---- checks (receive-checks.c) ------------------------------------------- */

int pw_rp__cmd_is_delete(const struct pw_receive_cmd *c);
/* A hidden ref is neither advertised nor updatable. */
void pw_rp__reject_hidden(struct rp *s);
/* Every new tip's history is complete (or the command fails). */
void pw_rp__check_connectivity(struct rp *s);
/* Ref name, deny* settings, fast-forward: NULL or why the command fails. */
const char *pw_rp__check_rules(struct rp *s, struct pw_receive_cmd *c);
/* The ref still holds what the client thinks it holds: NULL or why not. */
const char *pw_rp__check_old_value(struct rp *s, struct pw_receive_cmd *c);
/* A symref and its target updated differently in one push fail both. */
void pw_rp__check_aliased(struct rp *s);

/* ---- shallow pushes (receive-shallow.c) ---------------------------------- */

/* Our own shallow file's ids, each to fn; fn's non-zero return stops. */
int pw_rp__foreach_our_shallow(struct rp *s, int (*fn)(struct rp *, const struct pw_oid *, void *),
                               void *data);
/* The client's shallow commits this push brought (s->theirs). */
int pw_rp__find_theirs(struct rp *s);
int pw_rp__is_shallow_repo(struct rp *s);
/* Git's rule for a push from a shallow repository, per command. */
void pw_rp__check_shallow(struct rp *s);
/* receive.shallowUpdate: the new shallow commits into our shallow file. */
void pw_rp__write_shallow(struct rp *s);

/* ---- hooks (receive-hooks.c) ---------------------------------------------- */

/* A hook's environment: "NAME=value" strings (malloc'd). */
struct env {
	char **v;
	size_t nr;
};
int pw_rp__env_add(struct env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Run the program at path (freed here) with the push's environment plus
 * e's, in cwd, input on its stdin; its exit code, or negative. */
int pw_rp__run_with_env(struct rp *s, char *path, const char *const *args, struct env *e,
                        int env_failed, const char *cwd, const char *input, size_t input_len);
/* What push certificates' nonces are signed over: the path the client
 * named (a stateless server checks another instance's nonce). */
const char *pw_rp__nonce_path(const struct rp *s);
void pw_rp__pre_receive(struct rp *s);
/* The update hook of one command: NULL or why it refused. */
const char *pw_rp__update_hook(struct rp *s, struct pw_receive_cmd *c);
void pw_rp__proc_receive(struct rp *s);
void pw_rp__post_hooks(struct rp *s);
void pw_rp__auto_gc(struct rp *s);
/* Every command not failed yet fails with why. */
void pw_rp__fail_all(struct rp *s, const char *why);

/* ---- push-to-checkout (receive-checkout.c) -------------------------------- */

/* Where branch name is checked out (Git's find_shared_symref): 1 with *wt
 * and *gd (absolute, malloc'd), 0 when nowhere, negative on ENOMEM. */
int pw_rp__checked_out(struct rp *s, const char *name, char **wt, char **gd);
/* receive.denyCurrentBranch=updateInstead: the push-to-checkout hook, else
 * the work tree updated as Git does; NULL or why the command fails. */
const char *pw_rp__update_worktree(struct rp *s, struct pw_receive_cmd *c);

#endif
