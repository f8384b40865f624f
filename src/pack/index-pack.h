/* index-pack: read a pack stream, check it, resolve its deltas and compute
 * every object's id, offset and CRC, so that an .idx can be written.
 *
 * Phase 1 streams the pack (from memory or from a file descriptor, copying it
 * to an output file as it goes): each entry's header is decoded, its zlib
 * stream inflated to find where it ends (and to check its size), whole objects
 * hashed at once. Phase 2 resolves deltas base-first, one subtree of a base at
 * a time, on several threads, reading entries again from the mapped pack.
 * Nothing here does I/O on the repository: thin-pack bases and link checks go
 * through callbacks, so the parser also runs on a bare memory buffer (fuzzing). */
#ifndef PW_PACK_INDEX_PACK_H
#define PW_PACK_INDEX_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/index-pack.h"
#include "pack/idx-write.h"

/* The options, pw_ipack_free/error/nr_objects/info and the whole commands
 * (pw_index_pack_file, pw_index_pack_stream) are public: packwire/index-pack.h. */

int pw_ipack_new(struct pw_ipack **out, const struct pw_ipack_opts *opts, struct pw_error *err);

/* Phase 1 over a whole pack in memory; data must outlive ip. */
int pw_ipack_parse_mem(struct pw_ipack *ip, const uint8_t *data, size_t len);
/* Phase 1 over a pack file (mapped, unmapped by pw_ipack_free). */
int pw_ipack_parse_file(struct pw_ipack *ip, const char *path);
/* Phase 1 over a stream, copying the pack to out_fd (a new, empty regular
 * file opened read-write, which phase 2 maps and --fix-thin appends to). */
int pw_ipack_parse_fd(struct pw_ipack *ip, int in_fd, int out_fd);
/* Phase 2: resolve deltas, complete a thin pack, check objects and links,
 * reject duplicates. Afterwards every object has its id. */
int pw_ipack_resolve(struct pw_ipack *ip);

/* After resolve (and pw_ipack_nr_objects, public): */
/* Number of objects appended by --fix-thin. */
uint32_t pw_ipack_nr_appended(const struct pw_ipack *ip);
uint32_t pw_ipack_nr_deltas(const struct pw_ipack *ip);
/* With check_links or report_links: 1 when every object referenced by an
 * object of the pack is in the pack itself (none taken from the repository
 * by --fix-thin, every commit, tree and tag readable), else 0. Then all that
 * an object of the pack reaches is in the pack. */
int pw_ipack_self_contained(const struct pw_ipack *ip);
/* The pack's trailing checksum (rawsz bytes; the new one after fix-thin). */
const uint8_t *pw_ipack_checksum(const struct pw_ipack *ip);
/* Entries sorted by object id (borrowed, valid until free). */
const struct pw_idx_entry *const *pw_ipack_sorted(const struct pw_ipack *ip);

#endif
