/* WebDAV push (what `git http-push` does against Apache's mod_dav): the
 * client side of a dumb HTTP server that takes PROPFIND, LOCK/UNLOCK, MKCOL,
 * PUT, MOVE and DELETE. push.c hands a push here when the HTTP connection
 * found no smart receive-pack; the XML parser of the server's answers is
 * pure and fuzzed (fuzz-dav). */
#ifndef PW_CLIENT_DAV_H
#define PW_CLIENT_DAV_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/client.h"
#include "packwire/push.h"

/* Bounds on what a DAV server may make us hold (docs/limits.md). */
#define PW_DAV_MAX_XML     (16u << 20) /* one PROPFIND or LOCK answer */
#define PW_DAV_MAX_ENTRIES (1u << 20)  /* responses in one multistatus */
#define PW_DAV_MAX_DEPTH   64          /* element nesting */
#define PW_DAV_MAX_HREF    4096        /* one href or lock token, decoded */
#define PW_DAV_MAX_REFS    (1u << 20)  /* refs found under refs/ */
#define PW_DAV_MAX_REF_DIR 32          /* refs/ subdirectory nesting */

/* ---- the XML answers (dav-parse.c) ---------------------------------------- */

struct pw_dav_entry {
	char *path; /* href, percent-decoded, without scheme and host */
	int collection;
};

struct pw_dav_answer {
	struct pw_dav_entry *entries; /* multistatus responses, in order */
	size_t nr, alloc;
	int exclusive_write; /* a supportedlock lockentry: exclusive write lock */
	char *lock_token;    /* lockdiscovery/activelock/locktoken/href, or NULL */
};

/* Parse a PROPFIND multistatus or a LOCK answer (elements matched by local
 * name; no DOCTYPE, entities beyond XML's five and character references
 * refused). The answer is the caller's, freed with pw_dav_answer_free even
 * on failure. PW_EPROTO with a message for malformed input, PW_ETOOBIG past
 * the bounds above, PW_ENOMEM. */
int pw_dav_parse(const uint8_t *p, size_t n, struct pw_dav_answer *out, struct pw_error *err);
void pw_dav_answer_free(struct pw_dav_answer *a);

/* The token of a "Lock-Token: <opaquelocktoken:...>" header among raw
 * header lines (malloc'd, without the angle brackets), or NULL. */
char *pw_dav_lock_token_header(const char *h, size_t n);

/* packed-refs as the server has it: fn gets each "<hex> <name>" line
 * (views into p; comments, "^" peeled lines and lines without a space are
 * skipped); its non-zero return stops the walk and is returned. Names of
 * more than PW_DAV_MAX_HREF bytes are refused (PW_EPROTO). */
int pw_dav_parse_packed_refs(const uint8_t *p, size_t n,
                             int (*fn)(void *ctx, const char *name, size_t name_len,
                                       const char *hex, size_t hex_len),
                             void *ctx, struct pw_error *err);

/* ---- the push (dav-push.c) ----------------------------------------------- */

struct pw_dav;
struct pw_conn;
struct pw_repo;
struct pw_odb;

/* Take over a dumb HTTP connection (borrowed: it must outlive the handle):
 * check that the server locks (PROPFIND supportedlock) and read its refs
 * (PROPFIND of refs/, each loose ref, packed-refs) into adv. The algorithm
 * comes from the ids' length, else it is local's (an empty repository). */
int pw_dav_open(struct pw_dav **out, struct pw_conn *conn, const struct pw_hash_algo *local,
                struct pw_adv *adv, struct pw_error *err);
/* Push res's pending refs (statuses decided by push.c against adv): lock
 * info/refs and the refs, send what the remote lacks (loose objects, or one
 * pack when there are many), write the refs, rewrite info/refs, unlock.
 * Every ref gets its outcome. A failure before any ref is written changes
 * no ref. */
int pw_dav_push(struct pw_dav *d, struct pw_repo *repo, struct pw_odb *odb,
                const struct pw_push_opts *o, struct pw_push_result *res, struct pw_error *err);
void pw_dav_free(struct pw_dav *d);

#endif
