/* One repository, both algorithms: an object's content translated from the
 * repository's storage algorithm into its compat algorithm
 * (extensions.compatObjectFormat), and the persistent map between the two
 * ids of every object (objects/loose-object-idx for loose objects, a
 * pack-<hash>.compat side file per pack: docs/compat-map.md). */
#ifndef PACKWIRE_COMPAT_H
#define PACKWIRE_COMPAT_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

/*
 * Contract: pw_compat_convert is pure (any thread). A struct pw_compat_map
 * is opened by pw_compat_map_open, owned by the caller and freed with
 * pw_compat_map_free (NULL is fine); one thread at a time per handle. Errors
 * go to the err given or to pw_compat_map_error(map).
 */

/* Look up the id in the other algorithm of an object referenced by the
 * content being translated: 0 with *out set, PW_ENOTFOUND when unknown (any
 * other code stops the translation and is returned). */
typedef int (*pw_compat_lookup_fn)(void *data, const struct pw_oid *from, struct pw_oid *out);

/* Translate an object's content (type PW_OBJ_*) from algorithm `from` to
 * `to`, as Git 2.55 does, appending it to out: blobs are copied; tree
 * entries, tree/parent/mergetag lines of commits and the object line of tags
 * get the ids that lookup gives; a tag's in-body signature becomes the header
 * of its algorithm (gpgsig / gpgsig-sha256) and the header of `to` becomes the
 * in-body signature. PW_ENOTFOUND (message naming the id, and the path of a
 * tree entry or gitlink) when lookup does not know a referenced id;
 * PW_ECORRUPT for malformed content. */
PW_API int pw_compat_convert(struct pw_buf *out, int type, const void *data, size_t len,
                             const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                             pw_compat_lookup_fn lookup, void *lookup_data, struct pw_error *err);

/* The references to other objects the translation of this content needs
 * (tree entries except gitlinks, tree, parents, the object lines of
 * mergetags, a tag's object): fn is called for each; a non-zero return stops
 * and is returned. PW_ECORRUPT for malformed content. */
PW_API int pw_compat_references(int type, const void *data, size_t len,
                                const struct pw_hash_algo *algo,
                                int (*fn)(void *fn_data, const struct pw_oid *oid), void *fn_data,
                                struct pw_error *err);

/* ---- the persistent map --------------------------------------------- */

struct pw_compat_map;

/* Open the map of the objects directory `objects_dir` stored in `storage`
 * with compat algorithm `compat`: loose-object-idx is read, the packs' side
 * files are mapped on demand. A missing file means "no entries". */
PW_API int pw_compat_map_open(struct pw_compat_map **out, const char *objects_dir,
                              const struct pw_hash_algo *storage, const struct pw_hash_algo *compat,
                              struct pw_error *err);
PW_API void pw_compat_map_free(struct pw_compat_map *map);
PW_API const struct pw_error *pw_compat_map_error(const struct pw_compat_map *map);
/* The two algorithms of the map (borrowed, static). */
PW_API const struct pw_hash_algo *pw_compat_map_storage_algo(const struct pw_compat_map *map);
PW_API const struct pw_hash_algo *pw_compat_map_compat_algo(const struct pw_compat_map *map);
/* Storage id -> compat id and back: 0, or PW_ENOTFOUND when the object has
 * no entry (PW_ECORRUPT for a damaged side file, message in the handle).
 * Cost: a binary search per pack map, or a hash look-up for loose ones. */
PW_API int pw_compat_from_storage(struct pw_compat_map *map, const struct pw_oid *storage,
                                  struct pw_oid *compat);
PW_API int pw_compat_to_storage(struct pw_compat_map *map, const struct pw_oid *compat,
                                struct pw_oid *storage);
/* Record the pair of a new loose object: appended to loose-object-idx under
 * loose-object-idx.lock (O_CREAT|O_EXCL), as the transition document says.
 * PW_ELOCKED when another process holds the lock. */
PW_API int pw_compat_map_add_loose(struct pw_compat_map *map, const struct pw_oid *storage,
                                   const struct pw_oid *compat);

/* Check a pack side file against its .idx: sizes, header, trailer checksum,
 * the sorted table. 0 or PW_ECORRUPT with the message in err. */
PW_API int pw_compat_pack_map_verify(const char *map_path, const char *idx_path,
                                     const struct pw_hash_algo *storage, struct pw_error *err);
/* Parse the bytes of a loose-object-idx: fn gets every pair (non-zero stops
 * and is returned). PW_ECORRUPT with the line number for anything else than
 * Git's format. Pure: any thread. */
PW_API int pw_compat_loose_idx_parse(const char *data, size_t len,
                                     const struct pw_hash_algo *storage,
                                     const struct pw_hash_algo *compat,
                                     int (*fn)(void *fn_data, const struct pw_oid *storage,
                                               const struct pw_oid *compat),
                                     void *fn_data, struct pw_error *err);
/* Validate the bytes of a pack side file (header, sizes, fan-out, sorted
 * table, trailer) for a pack of `nr` objects whose trailing checksum is
 * pack_checksum (NULL: not compared). Pure: any thread. */
PW_API int pw_compat_pack_map_check(const uint8_t *data, size_t len,
                                    const struct pw_hash_algo *storage, uint32_t nr,
                                    const uint8_t *pack_checksum, int full, struct pw_error *err);

/* ---- building it --------------------------------------------------- */

struct pw_compat_submodules;

struct pw_compat_lock; /* the writers' lock, below */
struct pw_compat_build_opts {
	/* Called after each step with what was done ("translated", "wrote");
	 * a non-zero return stops the build and is returned. May be NULL. */
	int (*progress)(void *data, const char *what, uint64_t done, uint64_t total);
	void *progress_data;
	/* Called with each side file written to its temporary name, before the
	 * rename that publishes it (a test kills the process here). May be NULL. */
	void (*before_publish)(void *data, const char *tmp_path, const char *final_path);
	void *before_publish_data;
	/* out: what was done */
	uint64_t objects;    /* objects in the map */
	uint64_t translated; /* of which translated now (the others were mapped) */
	uint64_t packs_written, loose_written;
	uint64_t bytes; /* size of the side files and loose-object-idx */
	/* Where the submodules' repositories are (borrowed; NULL: none, a
	 * gitlink then stops the build). */
	struct pw_compat_submodules *submodules;
	uint64_t gitlinks; /* out: submodule commits mapped (their pairs are
	                    * written to loose-object-idx) */
	/* The writers' lock (pw_compat_lock) when the caller holds it; NULL:
	 * the build takes it itself and fails with PW_ELOCKED when another
	 * writer holds it. */
	struct pw_compat_lock *lock;
};

/* ---- the writers' lock ------------------------------------------------- */

/* <objects>/compat-view.lock, created with O_EXCL as Git creates its locks:
 * whoever rewrites the map and the stored view (compat build, repack) holds
 * it for the whole rewrite, so that two writers never interleave their
 * files. Taken by another writer: PW_ELOCKED at once, with a message naming
 * the file and saying to remove it when no writer runs (a crashed writer
 * leaves it; nothing removes it automatically). Adding the entries of new
 * objects (a push, a fetch) does not take it. */
struct pw_compat_lock;
PW_API int pw_compat_lock(struct pw_compat_lock **out, const char *objects_dir,
                          struct pw_error *err);
/* Release (remove the file). NULL is fine. */
PW_API void pw_compat_unlock(struct pw_compat_lock *lock);

/* Translate every object of the objects directory (alternates excluded)
 * into `compat` (blobs, then trees, commits and tags after what they
 * reference; objects already in a map are not translated again) and write
 * the maps: one side file per pack (temporary file, fsync, rename) and
 * loose-object-idx for loose objects. Errors in err: PW_ENOTFOUND names an
 * object whose reference is missing or a gitlink with no known id. */
PW_API int pw_compat_build(const char *objects_dir, const struct pw_hash_algo *storage,
                           const struct pw_hash_algo *compat, struct pw_compat_build_opts *opts,
                           struct pw_error *err);

/* ---- submodules: a gitlink through the submodule's own map ----------- */

/* A gitlink the translator does not know, as the gitlink callback sees it. */
struct pw_compat_gitlink {
	const char *path; /* in the superproject's tree, "dir/sub" (not NUL-ended) */
	size_t path_len;
	/* 0: the tree was reached without its commit (the path starts there) */
	int path_complete;
	const struct pw_oid *commit;   /* the submodule commit, in `from` */
	const struct pw_hash_algo *to; /* the id wanted */
	/* The .gitmodules of the tree at the path's root: its content when
	 * the translator could read it (else NULL), and its id (NULL: none). */
	const char *gitmodules;
	size_t gitmodules_len;
	const struct pw_oid *gitmodules_oid;
};

/* Where the repositories of a superproject's submodules are. A gitlink's
 * commit is mapped through the map of a submodule repository that is
 * stored in one algorithm with the other as extensions.compatObjectFormat
 * (a repository after `compat build`, or the copy `packwire convert`
 * made): the repository named for the gitlink's path first, then the
 * others known (a commit id names that commit wherever it is). One thread
 * at a time; freed with pw_compat_submodules_free (NULL is fine). */
struct pw_compat_submodules;
struct pw_config;
PW_API int pw_compat_submodules_new(struct pw_compat_submodules **out);
PW_API void pw_compat_submodules_free(struct pw_compat_submodules *s);
/* The repository (git dir or work tree) of the submodule at `path`
 * (--submodule=<path>=<repo>): PW_EINVAL for an empty path or repo. */
PW_API int pw_compat_submodules_add(struct pw_compat_submodules *s, const char *path,
                                    const char *repo, struct pw_error *err);
/* Every compat.submodule.<path>.repository of cfg (a relative repository
 * is relative to dir, the superproject's git directory). */
PW_API int pw_compat_submodules_add_config(struct pw_compat_submodules *s,
                                           const struct pw_config *cfg, const char *dir,
                                           struct pw_error *err);
/* Also the repositories that the URLs of the superproject's .gitmodules
 * name under base (relative URLs against super_dir's place under base;
 * absolute ones by their path), each checked with inside(base, dir)
 * (every symlink resolved) before it is opened. */
PW_API int pw_compat_submodules_discover(struct pw_compat_submodules *s, const char *base,
                                         const char *super_dir,
                                         int (*inside)(const char *base, const char *dir),
                                         struct pw_error *err);
/* The superproject's objects (storage algorithm and compat algorithm): a
 * .gitmodules the translation's own objects lack is read there. */
PW_API int pw_compat_submodules_set_super(struct pw_compat_submodules *s, const char *objects_dir,
                                          const struct pw_hash_algo *storage,
                                          const struct pw_hash_algo *compat, struct pw_error *err);
/* The resolver a repository's gitlinks are mapped through, the same for
 * compat build, convert, fetches and index-pack into a repository with a
 * map, and compat pushes: into *s (created when NULL; what it holds already,
 * such as --submodule options, is tried first), repo's
 * compat.submodule.<path>.repository config, repo's objects (for a
 * .gitmodules the translation cannot read) and the repositories that its
 * .gitmodules URLs name under base (NULL: the directory that holds the
 * superproject, its work tree or else its git directory; "../sub.git" is
 * then a repository beside it), each checked with inside (NULL:
 * every symlink resolved, the path is base or under it). repo may be freed
 * after. On error *s is left as it was (a resolver made here is freed). */
struct pw_repo;
PW_API int pw_compat_submodules_for_repo(struct pw_compat_submodules **s, struct pw_repo *repo,
                                         const char *base,
                                         int (*inside)(const char *base, const char *dir),
                                         struct pw_error *err);
/* The gitlink callback of pw_compat_xlate_opts (data = s): PW_ENOTFOUND
 * with a message naming the path, the commit, the repository and what to
 * do when no submodule repository maps the commit. */
PW_API int pw_compat_submodules_gitlink(void *s, const struct pw_compat_gitlink *g,
                                        struct pw_oid *out, struct pw_error *err);
/* The map's updates (pw_compat_map_add_pack, _add_objects) map gitlinks
 * through s (borrowed; NULL: none). */
PW_API void pw_compat_map_set_submodules(struct pw_compat_map *map, struct pw_compat_submodules *s);

/* ---- translating objects, each after what it references -------------- */

struct pw_odb;
struct pw_compat_xlate;
struct pw_compat_gitlink;

struct pw_compat_xlate_opts {
	const struct pw_hash_algo *from, *to;
	struct pw_odb *odb; /* reads the objects of `from` (borrowed) */
	/* Ids translated before (a map), or NULL: PW_ENOTFOUND when unknown. */
	pw_compat_lookup_fn known;
	void *known_data;
	/* Called with each object translated (content in `to`); a non-zero
	 * return stops and is returned. May be NULL. */
	int (*emit)(void *data, const struct pw_oid *from, const struct pw_oid *to, int type,
	            const void *content, size_t len, struct pw_error *err);
	void *emit_data;
	size_t max_depth; /* references deeper than this are a cycle; 0 = 4M */
	/* The id in `to` of a gitlink's commit (a submodule's: not an object
	 * of odb), asked once per commit the translator does not know, or
	 * NULL (then a gitlink not known is an error naming its path). 0 with
	 * *out set, else an error code with the message in err (it stops the
	 * translation). pw_compat_submodules_gitlink is one. */
	int (*gitlink)(void *data, const struct pw_compat_gitlink *g, struct pw_oid *out,
	               struct pw_error *err);
	void *gitlink_data;
};

/* 0, PW_EINVAL (bad options) or PW_ENOMEM. One thread at a time. */
PW_API int pw_compat_xlate_new(struct pw_compat_xlate **out,
                               const struct pw_compat_xlate_opts *opts);
PW_API void pw_compat_xlate_free(struct pw_compat_xlate *x);
/* Room for n ids (optional). */
PW_API int pw_compat_xlate_reserve(struct pw_compat_xlate *x, size_t n);
/* Translate `from` unless its id is known, and before it whatever it
 * references that is not known (read through odb). PW_ENOTFOUND (message
 * naming the object, and the path of a gitlink) when a reference is
 * neither known nor readable; PW_ECORRUPT for malformed content. */
PW_API int pw_compat_xlate_object(struct pw_compat_xlate *x, const struct pw_oid *from,
                                  struct pw_error *err);
/* The id in `to` of an object translated or known (0), else PW_ENOTFOUND. */
PW_API int pw_compat_xlate_lookup(struct pw_compat_xlate *x, const struct pw_oid *from,
                                  struct pw_oid *to);
/* The `from` id of an object translated or looked up, else PW_ENOTFOUND. */
PW_API int pw_compat_xlate_reverse(struct pw_compat_xlate *x, const struct pw_oid *to,
                                   struct pw_oid *from);
/* Objects translated (emitted) so far; ids known (translated or looked up). */
PW_API uint64_t pw_compat_xlate_count(const struct pw_compat_xlate *x);
PW_API size_t pw_compat_xlate_known_count(const struct pw_compat_xlate *x);

/* ---- keeping the map current ---------------------------------------- */

/* Write the side file of the pack whose index is idx_path (beside it,
 * through a temporary file renamed into place): the compat id of each of
 * its objects from lookup (storage -> compat). PW_ENOTFOUND naming an
 * object lookup does not know (nothing written). */
PW_API int pw_compat_pack_map_write(const char *idx_path, const struct pw_hash_algo *storage,
                                    pw_compat_lookup_fn lookup, void *lookup_data,
                                    struct pw_error *err);

/* New objects of the repository whose map is `map`: the objects of one
 * pack (idx_path, which may sit in a quarantine) or loose objects. Those
 * without an entry are translated (what they reference is looked up in the
 * map, else read through read_dir, an objects directory that sees both the
 * new objects and the repository's; NULL = the map's) and the entries are
 * written crash-safely: the pack's side file beside its .idx, or
 * loose-object-idx rewritten under its lock and renamed. A killed update
 * leaves the old map or the new one. The handle knows the entries after. */
PW_API int pw_compat_map_add_pack(struct pw_compat_map *map, const char *read_dir,
                                  const char *idx_path, struct pw_error *err);
PW_API int pw_compat_map_add_objects(struct pw_compat_map *map, const char *read_dir,
                                     const struct pw_oid *oids, size_t nr, struct pw_error *err);
/* Open the map of objects_dir, add the pack, free the map. */
PW_API int pw_compat_note_pack(const char *objects_dir, const struct pw_hash_algo *storage,
                               const struct pw_hash_algo *compat, const char *idx_path,
                               struct pw_error *err);
/* The same for a repository with a map (extensions.compatObjectFormat; 0
 * without one), its gitlinks mapped through pw_compat_submodules_for_repo
 * (base NULL): what a fetch, index-pack or repack into it calls. */
PW_API int pw_compat_note_pack_repo(struct pw_repo *repo, const char *idx_path,
                                    struct pw_error *err);
/* Forget what the handle has read, so that the next look-up sees the files
 * as they are now (a look-up that misses does this by itself when the pack
 * directory or loose-object-idx changed since). */
PW_API int pw_compat_map_reload(struct pw_compat_map *map);

/* ---- a pack in the compat algorithm --------------------------------- */

struct pw_odb;
/* Receives the pack's bytes in order; 0 or an error code (message in err). */
typedef int (*pw_compat_out_fn)(void *ctx, const void *data, size_t len, struct pw_error *err);
/* Write a version 2 pack holding the objects `oids` (storage ids, read
 * through odb) translated into the map's compat algorithm, in the order the
 * pack writer chooses, blobs' packed deltas reused and new deltas searched
 * on the translated content, with the compat algorithm's trailing checksum
 * (copied to checksum when not NULL: compat rawsz bytes). Every object
 * referenced by one of them must have an entry in map. */
PW_API int pw_compat_write_pack(struct pw_odb *odb, struct pw_compat_map *map,
                                const struct pw_oid *oids, size_t nr, pw_compat_out_fn fn,
                                void *ctx, uint8_t *checksum, struct pw_error *err);

/* The translation that makes a pack writer (packwire/pack-write.h) write
 * in the map's compat algorithm: ids through map (borrowed; the ids met are
 * cached), content through pw_compat_convert. With objects_dir, a second
 * handle of the map is opened for the writer's second search thread. Free
 * it after the writer. */
struct pw_compat_pack;
struct pw_pack_translate;
PW_API int pw_compat_pack_new(struct pw_compat_pack **out, struct pw_compat_map *map,
                              const char *objects_dir, struct pw_error *err);
/* Fill t for pw_pack_writer_set_translate (t points into cp). */
PW_API void pw_compat_pack_translation(struct pw_compat_pack *cp, struct pw_pack_translate *t);
PW_API void pw_compat_pack_free(struct pw_compat_pack *cp);

/* ---- the stored view: a pack of the compat algorithm with a bitmap --- */

/* <objects>/compat-view/ (docs/compat-map.md, "The stored view"): every
 * object reachable from the refs and HEAD as one pack of the compat
 * algorithm with its .idx and reachability bitmap, so that serving the view
 * is native serving over it. */
struct pw_repo;
struct pw_compat_view_opts {
	/* "Counting objects", "Writing objects", "Selecting bitmap commits"...
	 * as the pack writer reports them; may be NULL */
	void (*progress)(void *data, const char *title, uint64_t n, uint64_t total, int done);
	void *progress_data;
	/* Called with `current` written to its temporary name, before the
	 * rename that makes the new generation the one in use. May be NULL. */
	void (*before_publish)(void *data, const char *tmp_path, const char *final_path);
	void *before_publish_data;
	/* The writers' lock when the caller holds it; NULL: taken here. */
	struct pw_compat_lock *lock;
	/* out */
	uint64_t objects, bytes;
	char name[PW_MAX_HEXSZ + 1]; /* the pack's name */
};
/* Write a new generation of the stored view of repo (whose map must give a
 * compat id to every object reachable from its refs) and make it the one in
 * use; the old one is removed after. A failure or a crash leaves the old one
 * in use. A repository without refs gets nothing (0, opts->name empty). */
PW_API int pw_compat_view_write(struct pw_repo *repo, const struct pw_hash_algo *compat,
                                struct pw_compat_view_opts *opts, struct pw_error *err);
/* An odb over the stored view's pack (objects in `compat`). PW_ENOTFOUND
 * (err cleared) when there is none; PW_ECORRUPT when `current` is damaged. */
PW_API int pw_compat_view_open(struct pw_odb **out, const char *objects_dir,
                               const struct pw_hash_algo *compat, struct pw_error *err);
/* 1 when objects_dir has a stored view (its `current` file). */
PW_API int pw_compat_view_exists(const char *objects_dir);
/* Remove the stored view (serving falls back to translating), under the
 * writers' lock: `lock` when the caller holds it, else taken here. */
PW_API int pw_compat_view_remove(const char *objects_dir, struct pw_compat_lock *lock,
                                 struct pw_error *err);
/* Check the stored view completely: the pack and .idx (every object hashed,
 * both checksums), the bitmap loads, and every object's id is the compat id
 * the map gives the storage object it maps back to (else PW_ECORRUPT: stale
 * or damaged). *objects gets the count, name (hexsz + 1 bytes, may be NULL)
 * the pack's name. PW_ENOTFOUND when there is none. */
PW_API int pw_compat_view_verify(const char *objects_dir, struct pw_compat_map *map,
                                 uint64_t *objects, char *name, struct pw_error *err);
/* Parse the bytes of compat-view/current ("<algo> <pack-hex> g-XXXXXX\n",
 * XXXXXX letters and digits): the pack name into hex (hexsz + 1 bytes), the
 * generation's directory into gen (PW_COMPAT_VIEW_GEN_LEN + 1 bytes).
 * PW_ECORRUPT when it is anything else. */
#define PW_COMPAT_VIEW_GEN_LEN 8
PW_API int pw_compat_view_parse_current(const char *data, size_t len,
                                        const struct pw_hash_algo *compat, char *hex, char *gen,
                                        struct pw_error *err);

#endif
