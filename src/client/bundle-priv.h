/* The session's bundle remote: clone, fetch and ls-remote read a bundle file
 * through the same pw_session calls as a server (bundle.c). */
#ifndef PW_CLIENT_BUNDLE_PRIV_H
#define PW_CLIENT_BUNDLE_PRIV_H

#include "packwire/client.h"

struct pw_bundle;
struct pw_repo;

/* Is url a regular file that starts with a bundle signature? */
int pw_bundle_remote__probe(const char *url);
/* A session whose refs are the bundle's (listed already, version 0). */
int pw_bundle_remote__open(struct pw_session **out, const char *url,
                           const struct pw_client_opts *opts, struct pw_error *err);
int pw_bundle_remote__check_algo(struct pw_session *s, const struct pw_hash_algo *local,
                                 struct pw_error *err);
int pw_bundle_remote__fetch(struct pw_session *s, struct pw_repo *repo,
                            const struct pw_fetch_request *req, struct pw_fetch_result *res,
                            struct pw_error *err);
void pw_bundle_remote__free(struct pw_bundle *b);

#endif
