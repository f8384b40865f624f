/* Two objects' ids at once: for SHA-1 both run through the collision
 * detector side by side (pw_sha1dc_oneshot2), which on a CPU with the SHA
 * instructions costs little more than one, since one chain of SHA-1 rounds
 * waits on their latency. index-pack's resolvers use it, pairing the
 * objects they make from deltas. */
#ifndef PW_HASH_OBJECT_PAIR_H
#define PW_HASH_OBJECT_PAIR_H

#include <stddef.h>

#include "packwire/object.h"

struct pw_object_bytes {
	int type;
	const void *data;
	size_t len;
};

/* The ids of in[0] and in[1] into out[0] and out[1]. rc[i] is 0, or
 * PW_ECOLLISION when object i is part of a collision attack (its id is
 * still written, for the message); the result is the first nonzero rc, or
 * 0. */
int pw_object_hash_pair(const struct pw_hash_algo *algo, const struct pw_object_bytes in[2],
                        struct pw_oid out[2], int rc[2]);

#endif
