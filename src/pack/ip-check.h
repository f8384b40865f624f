/* Object checks for index-pack --strict and link collection for
 * --strict / --check-self-contained-and-connected. Deliberately small: the
 * structure Git needs to read an object (commit tree and parents, tree entry
 * modes, names and ids, tag target and type), not every fsck rule. */
#ifndef PW_PACK_IP_CHECK_H
#define PW_PACK_IP_CHECK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"

/* Every id referenced by the objects of a pack, each once: an open-addressing
 * set of raw ids (all-zero slot = empty), about 1.5 x 20 or 32 bytes per
 * distinct id. Positions are seeded per set, so ids chosen by a hostile
 * sender do not pile up in one run of slots. Shared by the resolver threads
 * through ip_links batches. */
struct ip_linkset {
	pthread_mutex_t lock;
	uint8_t *slots;
	size_t cap, nr; /* cap: power of two, or 0 */
	size_t rawsz;
	unsigned shift; /* 64 - log2(cap) */
	uint64_t seed;
	int has_zero; /* the all-zero id was referenced */
};

/* One thread's links on their way into a set: a small buffer, moved into the
 * set under its lock when full (one lock per many links). */
struct ip_links {
	struct ip_linkset *set;
	uint8_t *raw;
	size_t nr, alloc;
	size_t rawsz;
	int failed; /* out of memory while moving links into the set */
};

int pw_ip_linkset_init(struct ip_linkset *set, size_t rawsz);
void pw_ip_linkset_free(struct ip_linkset *set);
/* Buffers feeding set. */
void pw_ip_links_init(struct ip_links *links, struct ip_linkset *set);
/* Move what is buffered into the set: 0 or PW_ENOMEM. */
int pw_ip_links_flush(struct ip_links *links);
void pw_ip_links_free(struct ip_links *links);

/* Check the object `oid` of `type` (commit, tree or tag); with collect, add
 * the ids it refers to (gitlinks excepted) to links. */
int pw_ip_check_object(struct ip_links *links, const struct pw_hash_algo *algo, int type,
                       const char *data, size_t len, const struct pw_oid *oid, int collect,
                       struct pw_error *err);
/* Look every id of the set up: in_pack first, then has_object (may be
 * NULL). *self_contained becomes 1 when every id is in the pack. With strict,
 * an id found in neither is an error; without, the answer is only the flag
 * (the search stops at the first id outside the pack). */
int pw_ip_linkset_verify(struct ip_linkset *set,
                         int (*in_pack)(void *ctx, const struct pw_oid *oid), void *pack_ctx,
                         int (*has_object)(void *ctx, const struct pw_oid *oid), void *odb_ctx,
                         int strict, int *self_contained, struct pw_error *err);
#endif
