/* index-pack and verify-pack: index a pack (from a file or a stream) into
 * an .idx, checking every object, resolving deltas (on several threads) and
 * completing thin packs; or check an existing pack against its .idx. A
 * struct pw_ipack holds one indexed pack; it is used by one thread at a time
 * (the delta-resolution threads are internal). Nothing here touches a
 * repository by itself: thin-pack bases and link checks go through the
 * callbacks of struct pw_ipack_opts. */
#ifndef PACKWIRE_INDEX_PACK_H
#define PACKWIRE_INDEX_PACK_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

enum pw_ipack_phase { PW_IPACK_RECEIVING = 1, PW_IPACK_RESOLVING = 2 };

/* The most objects a streamed pack of unknown length may claim (2^26: far
 * above the largest repositories known; docs/limits.md). */
#define PW_PACK_MAX_STREAM_OBJECTS (1u << 26)

struct pw_ipack_opts {
	const struct pw_hash_algo *algo;
	int threads;       /* delta resolution threads; 0 = number of CPUs (at most 3) */
	int fix_thin;      /* append missing REF_DELTA bases read through read_object */
	int check_objects; /* parse commits, trees and tags (--strict) */
	int check_links;   /* referenced objects must exist (--strict, --check-self-...) */
	/* Collect links without failing on them: afterwards the pack says whether
	 * it needs nothing from outside (pw_index_pack_args.self_contained; then
	 * a connectivity walk over its objects can be skipped, as Git's fetch does). */
	int report_links;
	int allow_junk;     /* bytes after the trailing checksum are ignored (stdin) */
	size_t cache_limit; /* bytes of bases one resolver keeps; 0 = 64 MiB */
	/* Streams: PW_ETOOBIG past this many bytes; 0 = no limit. It also
	 * bounds the header's object count (at most (max_input - header -
	 * trailer) / 9, the smallest entry): a count that cannot fit fails
	 * before any object is read; without it (nor a regular file's length)
	 * the count is at most PW_PACK_MAX_STREAM_OBJECTS. */
	uint64_t max_input;
	/* Repository access, both optional, called from the calling thread (after
	 * the resolver threads have finished). read_object fills out (replaced)
	 * and *type, returns 0 or PW_ENOTFOUND; has_object returns 1 or 0. */
	int (*read_object)(void *ctx, const struct pw_oid *oid, int *type, struct pw_buf *out);
	int (*has_object)(void *ctx, const struct pw_oid *oid);
	void *odb_ctx;
	/* Progress, from one thread at a time; may be NULL. */
	void (*progress)(void *ctx, int phase, uint64_t done, uint64_t total);
	void *progress_ctx;
};

struct pw_ipack;

/* NULL is fine. */
PW_API void pw_ipack_free(struct pw_ipack *ip);
/* The last error (borrowed). */
PW_API const struct pw_error *pw_ipack_error(const struct pw_ipack *ip);
/* Objects in the pack (after it was indexed). */
PW_API uint32_t pw_ipack_nr_objects(const struct pw_ipack *ip);

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
PW_API int pw_ipack_info(const struct pw_ipack *ip, uint32_t i, struct pw_ipack_info *out);

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
 * replaced by .idx) through a temporary file. hex (PW_MAX_HEXSZ + 1 bytes)
 * gets the pack checksum. Errors: PW_ECORRUPT for a bad pack (err says
 * which object), PW_ENOTFOUND, PW_EIO, PW_ENOMEM; nothing is left behind. */
PW_API int pw_index_pack_file(const struct pw_index_pack_args *args, const char *pack_path,
                              const char *idx_path, char *hex, struct pw_error *err);

/* Read a pack from in_fd. With pack_path NULL, store it in pack_dir (which
 * must exist) as pack-<hex>.pack/.idx (.keep), else at pack_path (idx_path or
 * beside). *kept says whether a .keep file was created. Errors as for
 * pw_index_pack_file, plus PW_ETOOBIG past opts.max_input. */
PW_API int pw_index_pack_stream(const struct pw_index_pack_args *args, int in_fd,
                                const char *pack_dir, const char *pack_path, const char *idx_path,
                                char *hex, int *kept, struct pw_error *err);

/*
 * Index the pack of `idx_path` (.idx or .pack) and, unless stat_only, check
 * the index. algo NULL: guessed from the index. On success *out holds the
 * indexed pack for pw_ipack_info (free with pw_ipack_free); *pack_path gets
 * the pack's name (malloc'd) either way.
 */
PW_API int pw_verify_pack(const char *idx_path, const struct pw_hash_algo *algo, int stat_only,
                          struct pw_ipack **out, char **pack_path, struct pw_error *err);

#endif
