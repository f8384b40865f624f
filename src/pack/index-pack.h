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
#include "pack/idx-write.h"

enum pw_ipack_phase { PW_IPACK_RECEIVING = 1, PW_IPACK_RESOLVING = 2 };

struct pw_ipack_opts {
	const struct pw_hash_algo *algo;
	int threads;       /* delta resolution threads; 0 = number of CPUs (at most 3) */
	int fix_thin;      /* append missing REF_DELTA bases read through read_object */
	int check_objects; /* parse commits, trees and tags (--strict) */
	int check_links;   /* referenced objects must exist (--strict, --check-self-...) */
	/* Collect links without failing on them: afterwards pw_ipack_self_contained()
	 * says whether the pack needs nothing from outside (then a connectivity
	 * walk over its objects can be skipped, as Git's fetch does). */
	int report_links;
	int allow_junk;     /* bytes after the trailing checksum are ignored (stdin) */
	size_t cache_limit; /* bytes of bases one resolver keeps; 0 = 64 MiB */
	uint64_t max_input; /* pw_ipack_parse_fd: PW_ETOOBIG past this many bytes; 0 = no limit */
	/* Repository access, both optional. read_object fills out (replaced) and
	 * *type, returns 0 or PW_ENOTFOUND; has_object returns 1 or 0. */
	int (*read_object)(void *ctx, const struct pw_oid *oid, int *type, struct pw_buf *out);
	int (*has_object)(void *ctx, const struct pw_oid *oid);
	void *odb_ctx;
	/* Progress, from one thread at a time; may be NULL. */
	void (*progress)(void *ctx, int phase, uint64_t done, uint64_t total);
	void *progress_ctx;
};

struct pw_ipack;

int pw_ipack_new(struct pw_ipack **out, const struct pw_ipack_opts *opts, struct pw_error *err);
void pw_ipack_free(struct pw_ipack *ip);
/* The last error (borrowed). */
const struct pw_error *pw_ipack_error(const struct pw_ipack *ip);

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

/* After resolve: */
uint32_t pw_ipack_nr_objects(const struct pw_ipack *ip);
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

/* One object in pack order, for verify-pack. */
struct pw_ipack_info {
	struct pw_oid oid;
	int type;              /* commit, tree, blob or tag */
	uint64_t size;         /* size in the entry header (of the delta for deltas) */
	uint64_t size_in_pack; /* header + compressed bytes */
	uint64_t offset;
	uint32_t depth;     /* 0 for whole objects */
	struct pw_oid base; /* for deltas */
};
int pw_ipack_info(const struct pw_ipack *ip, uint32_t i, struct pw_ipack_info *out);

/* ---- whole commands (file handling around the engine) ------------------ */

struct pw_index_pack_args {
	struct pw_ipack_opts opts;
	int idx_version;      /* 1 or 2 (0 = 2) */
	uint64_t off32_limit; /* 0 = default */
	const char *keep_msg; /* non-NULL: write a .keep with this line ("" = empty file) */
	int verify;           /* compare with the existing idx instead of writing */
	int *self_contained;  /* out, may be NULL: pw_ipack_self_contained() of the pack */
};

/* Index an existing pack file: writes idx_path (NULL = pack_path with .pack
 * replaced by .idx) through a temporary file. hex gets the checksum. */
int pw_index_pack_file(const struct pw_index_pack_args *args, const char *pack_path,
                       const char *idx_path, char *hex, struct pw_error *err);

/* Read a pack from in_fd. With pack_path NULL, store it in pack_dir as
 * pack-<hex>.pack/.idx (.keep), else at pack_path (idx_path or beside).
 * *kept says whether a .keep file was created. */
int pw_index_pack_stream(const struct pw_index_pack_args *args, int in_fd, const char *pack_dir,
                         const char *pack_path, const char *idx_path, char *hex, int *kept,
                         struct pw_error *err);

#endif
