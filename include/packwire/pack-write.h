/* Writing packs: from a list of objects (with optional path names for delta
 * search) to a v2 pack stream with the repository's checksum, reusing what
 * existing packs already store (verbatim deltas and compressed data) and
 * searching new deltas for the rest. Servers stream the pack through a
 * callback; pack-objects writes <base>-<hex>.pack/.idx. A writer is used by
 * one thread (it starts its own delta-search threads). */
#ifndef PACKWIRE_PACK_WRITE_H
#define PACKWIRE_PACK_WRITE_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/report.h"

struct pw_pack_writer;

/* Progress of the phases ("Counting objects", "Compressing objects",
 * "Writing objects") goes to a pw_progress_fn (packwire/report.h).
 * Calls never overlap, but "Compressing objects" may come from the pack
 * writer's delta-search threads: touch only what data points at. */

struct pw_pack_write_opts {
	int window;       /* objects tried as delta bases (0 = no search); 10 */
	int depth;        /* longest delta chain written; 50 */
	int reuse_delta;  /* copy deltas stored in packs when their base is sent; 1 */
	int reuse_object; /* copy compressed data stored in packs; 1 */
	int thin;         /* bases added with pw_pack_writer_add_base may be used; 0 */
	int ofs_delta;    /* OFS_DELTA for in-pack bases (else REF_DELTA); 1 */
	int compression;  /* zlib level 0..9, -1 = zlib's default (6); -1 */
	int threads;      /* delta search threads, 0 = 2 when objects_dir is set */
	int verify_reuse; /* check reused entries: CRC (idx v2) or inflate (v1); 1 */
	/* Objects directory of the odb, so that search threads can open their own
	 * handles (an odb handle serves one thread). NULL: one thread. */
	const char *objects_dir;
	pw_progress_fn progress; /* may be NULL */
	void *progress_data;
};

/* Fill opts with the defaults above. */
PW_API void pw_pack_write_opts_init(struct pw_pack_write_opts *opts);

struct pw_config;
/* Override opts with a repository's settings where they are set: pack.window,
 * pack.depth, pack.compression (else core.compression) and pack.threads. Call
 * it after pw_pack_write_opts_init and before the caller's own options (a
 * command line wins over the configuration). cfg may be NULL (no change).
 * Values are taken as they are; thread-safe when cfg is not being changed. */
PW_API void pw_pack_write_opts_from_config(struct pw_pack_write_opts *opts,
                                           const struct pw_config *cfg);

/* `odb` is borrowed for the writer's lifetime; opts is copied (NULL = defaults). */
/* 0 or PW_ENOMEM (no message); the writer is the caller's, freed with
 * pw_pack_writer_free (NULL is fine). Later failures leave their message
 * in pw_pack_writer_error(w) (borrowed). The writer reads through odb:
 * nobody else may use that odb handle until the writer is freed. */
PW_API int pw_pack_writer_new(struct pw_pack_writer **out, struct pw_odb *odb,
                              const struct pw_pack_write_opts *opts);
PW_API void pw_pack_writer_free(struct pw_pack_writer *w);
PW_API const struct pw_error *pw_pack_writer_error(const struct pw_pack_writer *w);

/* A hint before the first add: about n objects will be added, so the
 * writer's tables are made once at their size. 0 or PW_ENOMEM. */
PW_API int pw_pack_writer_reserve(struct pw_pack_writer *w, size_t n);
/* Add an object to send. type PW_OBJ_NONE = look it up. path (may be NULL)
 * is where it was found in a tree, for the delta search's name hash.
 * Adding an object twice is harmless (the first path is kept). */
PW_API int pw_pack_writer_add(struct pw_pack_writer *w, const struct pw_oid *oid, int type,
                              const char *path, size_t path_len);
/* Add an object the receiver has (thin packs): a possible delta base, never
 * sent. Ignored unless opts.thin. Missing bases are dropped silently. */
PW_API int pw_pack_writer_add_base(struct pw_pack_writer *w, const struct pw_oid *oid, int type,
                                   const char *path, size_t path_len);
/* Name an object a tag ref points at (or peels to), as Git's pack-objects
 * marks the targets of refs/tags: it is written early, with the newest
 * history. Objects not in the pack are ignored. Without any call, the tag
 * objects of the pack and what they peel to are taken. */
PW_API int pw_pack_writer_add_tagged(struct pw_pack_writer *w, const struct pw_oid *oid);
struct pw_repo;
/* pw_pack_writer_add_tagged for every ref under refs/tags of repo and what
 * it peels to. */
PW_API int pw_pack_writer_add_tag_refs(struct pw_pack_writer *w, struct pw_repo *repo);
/* Objects to be sent so far. */
PW_API size_t pw_pack_writer_count(const struct pw_pack_writer *w);
/* 1 when oid was added to be sent (pw_pack_writer_add; a base of a thin
 * pack only is not), else 0. */
PW_API int pw_pack_writer_contains(const struct pw_pack_writer *w, const struct pw_oid *oid);

/* A pack in another algorithm than the odb's: the compat view of a
 * repository (docs/compat-map.md). Objects are added and read by their ids
 * in the odb's algorithm and written translated. Blobs are the same bytes in
 * both algorithms, so their packed entries (whole, or deltas whose base is
 * sent) are still reused; trees, commits and tags are translated and their
 * deltas searched on the translated content. REF_DELTA bases, the trailing
 * checksum and the .idx use `algo`. */
struct pw_pack_translate {
	const struct pw_hash_algo *algo; /* of the pack written */
	/* The id in algo of the odb's object `in`: 0, or an error code with
	 * the message in err. */
	int (*oid)(void *data, const struct pw_oid *in, struct pw_oid *out, struct pw_error *err);
	/* Append the content in algo of an object that is not a blob to out. */
	int (*content)(void *data, int type, const void *in, size_t len, struct pw_buf *out,
	               struct pw_error *err);
	/* Given to the callbacks on the writing thread (data) and on the second
	 * delta-search thread (data2; NULL: the search uses one thread). */
	void *data, *data2;
};
/* Before the first pw_pack_writer_add; t is copied. A translated pack gets
 * its bitmap through pw_pack_writer_write_bitmap_file_odb. */
PW_API int pw_pack_writer_set_translate(struct pw_pack_writer *w,
                                        const struct pw_pack_translate *t);

/* Receives the pack's bytes in order; returns 0 or an error code (message in err). */
/* Called on the writing thread, in order; data is valid during the call. */
typedef int (*pw_pack_out_fn)(void *ctx, const void *data, size_t len, struct pw_error *err);

/* Count, search deltas and write the whole pack. `checksum` (optional,
 * algo->rawsz bytes) receives the trailing checksum. Can be called once. */
PW_API int pw_pack_writer_write(struct pw_pack_writer *w, pw_pack_out_fn fn, void *ctx,
                                uint8_t *checksum);
PW_API int pw_pack_writer_write_fd(struct pw_pack_writer *w, int fd, uint8_t *checksum);

/* After a successful write: the .idx of the pack (version 1 or 2). */
PW_API int pw_pack_writer_write_idx_fd(struct pw_pack_writer *w, int fd, int version);

/* Write "<base_name>-<hex>.pack" and ".idx" (through temporary files renamed
 * into place), hex being the pack checksum; hex_out gets it (PW_MAX_HEXSZ + 1). */
PW_API int pw_pack_writer_write_files(struct pw_pack_writer *w, const char *base_name,
                                      int idx_version, char *hex_out);

/* After pw_pack_writer_write_files: write "<base_name>-<hex>.bitmap" (a
 * reachability bitmap that Git 2.39 reads) through a temporary file renamed
 * into place. Commits are chosen as Git chooses them; one that tips (may be
 * tags) peel to is preferred in its window (pack.preferBitmapTips).
 * PW_ENOTFOUND when the pack is not closed under reachability (no file
 * written; the message says which object is missing). */
PW_API int pw_pack_writer_write_bitmap_file(struct pw_pack_writer *w, const char *base_name,
                                            const struct pw_oid *tips, size_t ntips);

/* The same for a translated pack (pw_pack_writer_set_translate): odb reads
 * the written pack in its own algorithm (an odb of the directory it was
 * written to); tips are ids of that algorithm. NULL odb: the writer's. */
PW_API int pw_pack_writer_write_bitmap_file_odb(struct pw_pack_writer *w, const char *base_name,
                                                const struct pw_oid *tips, size_t ntips,
                                                struct pw_odb *odb);

/* What a walk already parsed of commit oid (pw_revlist_commit_info): 1 with
 * out filled (freed by the caller with pw_commit_info_free), 0 when it does
 * not know (the commit is read), or an error. */
typedef int (*pw_pack_commit_fn)(void *data, const struct pw_oid *oid, struct pw_commit_info *out);
/* Let pw_pack_writer_write_bitmap_file ask fn before reading a commit. */
PW_API void pw_pack_writer_set_commit_info(struct pw_pack_writer *w, pw_pack_commit_fn fn,
                                           void *data);

/* Statistics of the last write. */
struct pw_pack_write_stats {
	uint32_t written;        /* objects in the pack */
	uint32_t reused;         /* entries copied verbatim (whole or delta) */
	uint32_t reused_deltas;  /* of which deltas */
	uint32_t deltas;         /* delta entries in total */
	uint32_t thin_deltas;    /* REF_DELTA entries whose base is not in the pack */
	uint32_t reuse_failures; /* reused entries that failed verification (rewritten) */
	uint64_t bytes;          /* pack size including the trailer */
};
PW_API void pw_pack_writer_stats(const struct pw_pack_writer *w, struct pw_pack_write_stats *out);

/* Git's path name hash used to group delta candidates: the last characters of
 * the path weigh most, whitespace is ignored. */
PW_API uint32_t pw_pack_name_hash(const char *path, size_t len);

#endif
