/* Dumb HTTP, the client side: a server whose info/refs has no "# service="
 * line is read as plain files (info/refs, HEAD, objects/info/packs, packs
 * and their .idx, loose objects, alternates). The session hands itself over
 * here (struct pw_session.dumb); the files' parsers are transport/dumb.h's. */
#ifndef PW_CLIENT_DUMB_H
#define PW_CLIENT_DUMB_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/client.h"
#include "transport/dumb.h"

/* Bounds on what a dumb server may make us hold (docs/limits.md). */
#define PW_DUMB_MAX_SMALL     (1u << 20)        /* HEAD, info/packs, alternates files */
#define PW_DUMB_MAX_IDX       ((size_t)1 << 31) /* one .idx, held in memory */
#define PW_DUMB_MAX_LOOSE     ((size_t)1 << 30) /* one loose object, compressed */
#define PW_DUMB_MAX_PACK      ((uint64_t)1 << 40)
#define PW_DUMB_MAX_ALT_DEPTH 5 /* alternates of alternates, as Git's walker */

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

/* info/refs into an advertisement: transport/dumb.h's pw_dumb_parse_refs. */
int pw_dumb_parse_info_refs(const uint8_t *p, size_t n, struct pw_adv *a,
                            const struct pw_hash_algo **algo, struct pw_error *err);

#endif
