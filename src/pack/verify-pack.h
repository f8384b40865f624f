/* verify-pack: check a pack and its .idx against each other. */
#ifndef PW_PACK_VERIFY_PACK_H
#define PW_PACK_VERIFY_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "pack/index-pack.h"

/* The algorithm an index must have been written for, from its size (v1 or
 * v2 layouts only fit one of sha1/sha256); NULL when neither fits. */
const struct pw_hash_algo *pw_idx_guess_algo(const uint8_t *idx, size_t len);

/* Compare an index (v1 or v2) with the objects index-pack found: its own
 * checksum, the pack checksum, fan-out, ids, CRCs (v2) and offsets. */
int pw_idx_verify(const struct pw_ipack *ip, const struct pw_hash_algo *algo, const uint8_t *idx,
                  size_t len, const char *name, struct pw_error *err);

/*
 * Index the pack of `idx_path` (.idx or .pack) and, unless stat_only, check
 * the index. algo NULL: guessed from the index. On success *out holds the
 * indexed pack for pw_ipack_info (free with pw_ipack_free); *pack_path gets
 * the pack's name (malloc'd) either way.
 */
int pw_verify_pack(const char *idx_path, const struct pw_hash_algo *algo, int stat_only,
                   struct pw_ipack **out, char **pack_path, struct pw_error *err);

#endif
