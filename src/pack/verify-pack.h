/* verify-pack: check a pack and its .idx against each other. */
#ifndef PW_PACK_VERIFY_PACK_H
#define PW_PACK_VERIFY_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "pack/index-pack.h"
#include "packwire/index-pack.h"

/* The algorithm an index must have been written for, from its size (v1 or
 * v2 layouts only fit one of sha1/sha256); NULL when neither fits. */
const struct pw_hash_algo *pw_idx_guess_algo(const uint8_t *idx, size_t len);

/* Compare an index (v1 or v2) with the objects index-pack found: its own
 * checksum, the pack checksum, fan-out, ids, CRCs (v2) and offsets. */
int pw_idx_verify(const struct pw_ipack *ip, const struct pw_hash_algo *algo, const uint8_t *idx,
                  size_t len, const char *name, struct pw_error *err);

/* pw_verify_pack is public (packwire/index-pack.h). */

#endif
