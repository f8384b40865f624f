/* Object checks for index-pack --strict and link collection for
 * --strict / --check-self-contained-and-connected. Deliberately small: the
 * structure Git needs to read an object (commit tree and parents, tree entry
 * modes, names and ids, tag target and type), not every fsck rule. */
#ifndef PW_PACK_IP_CHECK_H
#define PW_PACK_IP_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"

/* Referenced object ids, raw, deduplicated from time to time. */
struct ip_links {
	uint8_t *raw;
	size_t nr, alloc, compacted;
	size_t rawsz;
};

/* Check the object `oid` of `type` (commit, tree or tag); with collect, add
 * the ids it refers to (gitlinks excepted) to links. */
int pw_ip_check_object(struct ip_links *links, const struct pw_hash_algo *algo, int type,
                       const char *data, size_t len, const struct pw_oid *oid, int collect,
                       struct pw_error *err);
/* Move src's ids into dst. */
int pw_ip_links_merge(struct ip_links *dst, struct ip_links *src);
/* Every collected id must satisfy in_pack or has_object (which may be NULL). */
int pw_ip_links_verify(struct ip_links *links, int (*in_pack)(void *ctx, const struct pw_oid *oid),
                       void *pack_ctx, int (*has_object)(void *ctx, const struct pw_oid *oid),
                       void *odb_ctx, struct pw_error *err);
void pw_ip_links_free(struct ip_links *links);

#endif
