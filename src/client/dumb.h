/* Dumb HTTP, the client side: a server whose info/refs has no "# service="
 * line is read as plain files (info/refs, HEAD, objects/info/packs, packs
 * and their .idx, loose objects, alternates). The session hands itself over
 * here (struct pw_session.dumb); the parsers are pure and fuzzed. */
#ifndef PW_CLIENT_DUMB_H
#define PW_CLIENT_DUMB_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/client.h"

/* Bounds on what a dumb server may make us hold (docs/limits.md). */
#define PW_DUMB_MAX_REFS       (1u << 22)
#define PW_DUMB_MAX_PACKS      10000
#define PW_DUMB_MAX_SMALL      (1u << 20)        /* HEAD, info/packs, alternates files */
#define PW_DUMB_MAX_IDX        ((size_t)1 << 31) /* one .idx, held in memory */
#define PW_DUMB_MAX_LOOSE      ((size_t)1 << 30) /* one loose object, compressed */
#define PW_DUMB_MAX_PACK       ((uint64_t)1 << 40)
#define PW_DUMB_MAX_ALT_DEPTH  5  /* alternates of alternates, as Git's walker */
#define PW_DUMB_MAX_ALTERNATES 64 /* object stores in all */

struct pw_dumb_remote;

/* Did the HTTP connection find a dumb server (no service line)? */
int pw_dumb_is(struct pw_conn *conn);
/* Take over a session whose HTTP connection found a dumb server: parse its
 * info/refs (the algorithm from the first id's length). */
int pw_dumb_open(struct pw_dumb_remote **out, struct pw_conn *conn,
                 const struct pw_client_opts *opts, struct pw_error *err);
void pw_dumb_free(struct pw_dumb_remote *d);
/* The algorithm of the ids (sha1 when there are none). */
const struct pw_hash_algo *pw_dumb_algo(const struct pw_dumb_remote *d);
int pw_dumb_check_algo(struct pw_dumb_remote *d, const struct pw_hash_algo *local,
                       struct pw_error *err);
/* The refs of info/refs and HEAD (fetched from /HEAD on the first call). */
int pw_dumb_list_refs(struct pw_dumb_remote *d, const struct pw_adv **out, struct pw_error *err);
/* Walk from the wants, downloading what the repository lacks into a
 * quarantine directory that is moved into place only when the walk is
 * complete (removed on failure). */
int pw_dumb_fetch(struct pw_dumb_remote *d, struct pw_repo *repo,
                  const struct pw_fetch_request *req, struct pw_fetch_result *res,
                  struct pw_error *err);

/* ---- pure parsers (dumb-parse.c) ---------------------------------------- */

/* info/refs: "<hex>\t<name>\n" lines, "<name>^{}" lines peeling the ref
 * before them. The algorithm is guessed from the first id's length (40 or
 * 64 hex digits; anything else is refused) and *algo set (NULL for an empty
 * body); every id must have that length. fn gets each ref in order (a peeled
 * line with peeled = 1 and the name of the ref it peels, which came just
 * before); its non-zero return stops the parse and is returned. */
typedef int (*pw_dumb_ref_fn)(void *ctx, const char *name, size_t len, const struct pw_oid *oid,
                              int peeled);
int pw_dumb_parse_refs(const uint8_t *p, size_t n, pw_dumb_ref_fn fn, void *ctx,
                       const struct pw_hash_algo **algo, struct pw_error *err);
/* The same into an advertisement (pw_adv_init'd by the caller, freed by
 * pw_adv_free) as the session lists it (dumb.c). */
int pw_dumb_parse_info_refs(const uint8_t *p, size_t n, struct pw_adv *a,
                            const struct pw_hash_algo **algo, struct pw_error *err);
/* HEAD: "ref: <name>" (*symref malloc'd) or a detached id of algo (when
 * algo is NULL, guessed from its length; *oid then carries it). */
int pw_dumb_parse_head(const uint8_t *p, size_t n, const struct pw_hash_algo *algo, char **symref,
                       struct pw_oid *oid, struct pw_error *err);
/* objects/info/packs: "P pack-<hex>.pack" lines (others ignored, as Git
 * does). *names gets the malloc'd array of malloc'd names. */
int pw_dumb_parse_packs(const uint8_t *p, size_t n, const struct pw_hash_algo *algo, char ***names,
                        size_t *nr, struct pw_error *err);
void pw_dumb_free_names(char **names, size_t nr);
/* objects/info/http-alternates or objects/info/alternates of the object
 * store at objects_url ("http://h/r.git/objects"): absolute http(s) URLs,
 * server-absolute paths and paths relative to objects_url, each resolved
 * to an object store URL (no trailing '/', "." and ".." removed). Lines of
 * other protocols are skipped and counted in *skipped. */
int pw_dumb_parse_alternates(const uint8_t *p, size_t n, const char *objects_url, char ***urls,
                             size_t *nr, size_t *skipped, struct pw_error *err);

#endif
