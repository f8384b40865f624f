/* Internals of the compat map shared by map.c and build.c. */
#ifndef PW_COMPAT_MAP_PRIV_H
#define PW_COMPAT_MAP_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "hash/oidmap.h"
#include "packwire/compat.h"

/* The side file (docs/compat-map.md). */
#define PW_COMPAT_MAGIC     "PWCM"
#define PW_COMPAT_VERSION   1u
#define PW_COMPAT_HDR_FIXED 20 /* magic, version, two algorithm ids, count */
#define PW_LOOSE_IDX_HEADER "# loose-object-idx\n"
/* loose-object-idx larger than this is refused (about 7 million lines) */
#define PW_COMPAT_LOOSE_IDX_MAX ((size_t)1 << 30)

struct pw_compat_pair {
	struct pw_oid storage, compat;
};
/* Pairs with a hash index both ways (the first pair of an id wins). */
struct pw_compat_pairs {
	struct pw_compat_pair *pairs;
	size_t nr, alloc;
	struct pw_oidmap by_storage, by_compat;
};
void pw_compat_pairs_free(struct pw_compat_pairs *p);
int pw_compat_pairs_add(struct pw_compat_pairs *p, const struct pw_oid *s,
                        const struct pw_oid *c); /* 0 or PW_ENOMEM */
const struct pw_compat_pair *pw_compat_pairs_by_storage(const struct pw_compat_pairs *p,
                                                        const struct pw_oid *s);
const struct pw_compat_pair *pw_compat_pairs_by_compat(const struct pw_compat_pairs *p,
                                                       const struct pw_oid *c);

/* pw_compat_pack_map_write with a hook before the rename (a test kills the
 * process there) and the size written. */
int pw_compat__pack_map_write(const char *idx_path, const struct pw_hash_algo *storage,
                              pw_compat_lookup_fn lookup, void *lookup_data,
                              void (*before)(void *, const char *, const char *), void *before_data,
                              uint64_t *bytes, struct pw_error *err);
/* Append the lines `add` to loose-object-idx: the whole file rewritten into
 * its lock file (O_CREAT|O_EXCL), fsynced and renamed over it. */
int pw_compat__loose_idx_publish(const char *objects_dir, const struct pw_buf *add,
                                 void (*before)(void *, const char *, const char *),
                                 void *before_data, uint64_t *bytes, struct pw_error *err);
/* Remember a pair in the handle only (the files are written by the caller). */
int pw_compat__map_remember(struct pw_compat_map *map, const struct pw_oid *storage,
                            const struct pw_oid *compat);
/* Whether a miss reloads the files when they changed (default on). */
void pw_compat__map_set_reload(struct pw_compat_map *map, int on);
/* The map's objects directory (borrowed). */
const char *pw_compat__map_dir(const struct pw_compat_map *map);
/* What pw_compat_map_set_submodules gave (borrowed, may be NULL). */
struct pw_compat_submodules *pw_compat__map_submodules(const struct pw_compat_map *map);
/* The gitlinks the translator mapped through opts.gitlink (from -> to;
 * borrowed): not objects of its odb, so not among its other pairs. */
const struct pw_compat_pairs *pw_compat__xlate_links(const struct pw_compat_xlate *x);
/* The gitlinks' pairs as loose-object-idx lines ("<storage> <compat>\n"),
 * appended to add: those mapped from storage to compat as they are, the
 * others (a push of the other algorithm) turned around; those for which
 * has(has_data, storage id) says the map has them are left out (has may
 * be NULL). */
int pw_compat__links_lines(const struct pw_compat_xlate *x, const struct pw_hash_algo *storage,
                           int (*has)(void *, const struct pw_oid *), void *has_data,
                           struct pw_buf *add);
/* Translate the commits and tags among oids first (types from the odb's
 * headers), so that each tree is reached from its commit: a gitlink's path
 * is then whole. */
int pw_compat__xlate_commits_first(struct pw_compat_xlate *x, const struct pw_oid *oids, size_t nr,
                                   struct pw_error *err);
/* The same for every packed commit and tag of the translator's odb, in
 * each pack's file order. */
int pw_compat__xlate_packed_commits_first(struct pw_compat_xlate *x, struct pw_error *err);
/* pw_compat_map_add_pack / _add_objects with the hook before the rename. */
int pw_compat__map_add_pack(struct pw_compat_map *map, const char *read_dir, const char *idx_path,
                            void (*before)(void *, const char *, const char *), void *before_data,
                            struct pw_error *err);
int pw_compat__map_add_objects(struct pw_compat_map *map, const char *read_dir,
                               const struct pw_oid *oids, size_t nr,
                               void (*before)(void *, const char *, const char *),
                               void *before_data, struct pw_error *err);

/* Translate every object of objects_dir (as pw_compat_build does, using the
 * map already there) into out (the caller's, pw_compat_pairs_free), writing
 * nothing. opts (may be NULL) gives progress and gets the counts. */
int pw_compat__translate_objects(struct pw_compat_pairs *out, const char *objects_dir,
                                 const struct pw_hash_algo *storage,
                                 const struct pw_hash_algo *compat,
                                 struct pw_compat_build_opts *opts, struct pw_error *err);
/* Translate the blobs of the translator's odb first, each pack's in the
 * order of the file (their delta bases then come from the cache), before a
 * loop over every object. */
int pw_compat__xlate_blobs_first(struct pw_compat_xlate *x, struct pw_error *err);
/* Hand the translator's pairs (from -> to of every object it translated or
 * looked up) to out (the caller's); the translator forgets them. */
void pw_compat__xlate_take_pairs(struct pw_compat_xlate *x, struct pw_compat_pairs *out);

/* Size of a side file for a pack of nr objects. */
uint64_t pw_compat_pack_map_size(const struct pw_hash_algo *storage, uint64_t nr);
/* Append the side file for ids (nr compat ids, raw, in .idx order) to out. */
int pw_compat_pack_map_encode(struct pw_buf *out, const struct pw_hash_algo *storage,
                              const uint8_t *pack_checksum, const uint8_t *ids, uint32_t nr,
                              struct pw_error *err);
/* Temporary file, fsync, (before), rename, fsync of the directory. */
int pw_compat_write_durable(const char *path, const void *data, size_t len,
                            void (*before)(void *, const char *, const char *), void *before_data,
                            struct pw_error *err);
/* malloc'd "<objects_dir>/loose-object-idx". */
char *pw_compat_loose_idx_path(const char *objects_dir);
/* Load loose-object-idx into pairs (a missing file is empty); raw (optional)
 * gets the file's bytes. */
int pw_compat_loose_idx_load(struct pw_compat_pairs *pairs, const char *objects_dir,
                             const struct pw_hash_algo *storage, const struct pw_hash_algo *compat,
                             struct pw_buf *raw, struct pw_error *err);

/* A struct pw_compat_pack whose ids come from pairs (complete, borrowed,
 * read-only: both search threads share it). */
int pw_compat_pack__from_pairs(struct pw_compat_pack **out, const struct pw_compat_pairs *pairs,
                               const struct pw_hash_algo *storage,
                               const struct pw_hash_algo *compat, struct pw_error *err);

/* Translate every object of objects_dir (as pw_compat_build does, using the
 * map already there) into out (the caller's, pw_compat_pairs_free), writing
 * nothing. opts (may be NULL) gives progress and gets the counts. */
int pw_compat__translate_objects(struct pw_compat_pairs *out, const char *objects_dir,
                                 const struct pw_hash_algo *storage,
                                 const struct pw_hash_algo *compat,
                                 struct pw_compat_build_opts *opts, struct pw_error *err);

#endif
