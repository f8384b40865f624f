/* Internals shared by the client's files. */
#ifndef PW_CLIENT_PRIV_H
#define PW_CLIENT_PRIV_H

#include "packwire/client.h"
#include "packwire/push.h"

struct pw_bundle;

struct pw_session {
	struct pw_conn *conn;
	struct pw_pkt_reader rd;
	struct pw_client_opts opts;
	int version; /* 0, 1 or 2 as the server answered */
	const struct pw_hash_algo *algo;
	int algo_advertised;
	struct pw_adv adv;       /* v0/v1 advertisement, or the v2 ls-refs answer */
	struct pw_v2_caps caps2; /* v2 capabilities */
	char *caps_joined;
	int listed;
	int fetched; /* v0/v1: wants were sent */
	int failed;  /* the stream is out of step: no polite goodbye */
	struct pw_buf out;
	struct pw_bundle *bundle;    /* a bundle file as the remote (bundle.c) */
	struct pw_dumb_remote *dumb; /* dumb HTTP (dumb.c) instead of conn's stream */
	struct pw_helper *helper;    /* a fetch helper drives this session (helper.c) */
	char *import_dir;            /* an import helper's stream, imported (helper.c) */
};

/* Append a ref named name[0..len) (no limit checked: the caller's) to a. */
int pw_adv__add_ref(struct pw_adv *a, const char *name, size_t len, struct pw_remote_ref **out,
                    struct pw_error *err);

int pw_client__read(struct pw_session *s, struct pw_pkt *pkt, struct pw_error *err);
/* GIT_TRACE_PACKET (pw_client_opts.trace_packet): one packet, or each
 * packet of an outgoing buffer. fn NULL: nothing. */
typedef void pw_client__trace_fn(void *ctx, int write, const char *data, size_t len);
void pw_client__trace_pkt(pw_client__trace_fn *fn, void *ctx, int write, const struct pw_pkt *pkt);
void pw_client__trace_buf(pw_client__trace_fn *fn, void *ctx, const struct pw_buf *b);
/* Send s->out (and empty it). */
int pw_client__send(struct pw_session *s, struct pw_error *err);
/* Stateless v2: the transport's response-end packet must follow a response
 * (a no-op otherwise). */
int pw_client__response_end(struct pw_session *s, const char *what, struct pw_error *err);
/* Start s->out with "command=X", agent, object-format, delim. */
int pw_client__v2_command(struct pw_session *s, const char *cmd, struct pw_error *err);

/* Sessions through a remote helper's own commands (helper.c). */
struct pw_helper;
int pw_client__helper_open(struct pw_session *s, struct pw_helper *h, struct pw_error *err);
int pw_client__helper_fetch(struct pw_session *s, struct pw_repo *repo,
                            const struct pw_fetch_request *req, struct pw_fetch_result *res,
                            struct pw_error *err);
int pw_client__helper_close(struct pw_session *s, struct pw_error *err);
/* Push through a helper's "push" command: "list for-push" into adv (ids of
 * local unless ":object-format" says otherwise), then the batch of res's
 * pending refs with the options of o; the answers set each ref's status.
 * pw_client__helper_end ends the session and frees h. */
struct pw_push_opts;
struct pw_push_result;
int pw_client__helper_push_list(struct pw_helper *h, struct pw_repo *repo,
                                const struct pw_hash_algo *local, struct pw_adv *adv,
                                struct pw_error *err);
/* push-lease.c: the --force-with-lease of remote ref r (its old_oid set):
 * 0 when none applies; 1 with r->lease and r->lease_expect set and *verdict
 * PW_PUSH_PENDING when it holds (the update is forced), else
 * PW_PUSH_REJECT_STALE or PW_PUSH_REJECT_REMOTE_UPDATED; or an error.
 * remote: the configured remote's name (its fetch refspecs give the
 * tracking refs), NULL for a URL. */
int pw_push__lease(struct pw_repo *repo, const struct pw_push_opts *o, const char *remote,
                   struct pw_push_ref *r, enum pw_push_status *verdict, struct pw_error *err);
/* pre-push.c: run the pre-push hook, when there is one, on res's updates
 * (their verdicts given). 0 when it agrees; when it exits non-zero (or
 * cannot run), res->pre_push_refused gets its status and the call fails
 * (PW_ERROR). pw_push__pre_push_input writes its stdin lines into out. */
int pw_push__pre_push(struct pw_repo *repo, const struct pw_push_opts *o,
                      struct pw_push_result *res, struct pw_error *err);
int pw_push__pre_push_input(const struct pw_push_result *res, struct pw_buf *out);
int pw_client__helper_push(struct pw_helper *h, struct pw_repo *repo, const struct pw_push_opts *o,
                           struct pw_push_result *res, struct pw_error *err);
void pw_client__helper_end(struct pw_helper *h);

/* Local history, newest first, for "have" lines. */
struct pw_odb;
struct pw_have_walk;
int pw_have_walk_new(struct pw_have_walk **out, struct pw_odb *odb, struct pw_repo *repo,
                     struct pw_error *err);
/* The same from the given commits (or tags of commits) instead of the refs. */
int pw_have_walk_new_tips(struct pw_have_walk **out, struct pw_odb *odb, const struct pw_oid *tips,
                          size_t nr, struct pw_error *err);
/* 1 with the next commit to offer, 0 when there are no more. */
int pw_have_walk_next(struct pw_have_walk *w, struct pw_oid *out);
/* The server has this commit: it and its ancestors need not be offered. */
void pw_have_walk_mark_common(struct pw_have_walk *w, const struct pw_oid *oid);
void pw_have_walk_free(struct pw_have_walk *w);

/* Read $GIT_DIR/shallow (sorted, deduplicated). */
int pw_shallow_read(struct pw_repo *repo, struct pw_oid **out, size_t *nr, struct pw_error *err);

/* Write the .promisor file of the pack a fetch stored (none stored: 0). */
int pw_fetch__mark_promisor(const struct pw_fetch_result *res, const char *body, size_t len,
                            struct pw_error *err);

/* The blobs (and trees) of the commit's tree that are not in the repository:
 * a partial clone's checkout must fetch them first. *out is malloc'd. */
int pw_checkout__missing_blobs(struct pw_repo *repo, const struct pw_oid *commit,
                               struct pw_oid **out, size_t *nr, struct pw_error *err);

/* One line of a push's report (report-status or -v2) read into res, whose
 * refs name the commands sent; st carries which ref "option" lines belong
 * to from one line to the next (zeroed before the first). For fuzz-push-report:
 * push.c reads reports through the same code. */
struct pw_push_report_state {
	struct pw_push_ref *hint;
	int new_report;
};
int pw_client__push_report_line(struct pw_push_result *res, const struct pw_hash_algo *algo,
                                struct pw_push_report_state *st, const char *line, size_t len,
                                struct pw_error *err);

#endif
