/* Dumb HTTP's files: what a server that runs no Git program offers
 * (info/refs, HEAD, objects/info/packs, the alternates files), read by the
 * client's walker (client/dumb.c) and written for it by update-server-info,
 * http-backend (server/http.c) and the WebDAV push (client/dav-push.c), all
 * through the writers of dumb-info.c. The formats live here and nowhere
 * else. The parsers are pure and fuzzed (fuzz-dumb-info-refs,
 * fuzz-dumb-info-packs). */
#ifndef PW_TRANSPORT_DUMB_H
#define PW_TRANSPORT_DUMB_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"

/* Bounds on what a dumb server's files may make us hold (docs/limits.md). */
#define PW_DUMB_MAX_REFS       (1u << 22)
#define PW_DUMB_MAX_PACKS      10000
#define PW_DUMB_MAX_ALTERNATES 64 /* object stores in all */

/* ---- pure parsers (dumb-parse.c) ---------------------------------------- */

/* info/refs: "<hex>\t<name>\n" lines, "<name>^{}" lines peeling the ref
 * before them. The algorithm is guessed from the first id's length (40 or
 * 64 hex digits; anything else is refused) and *algo set (NULL for an empty
 * body); every id must have that length. fn gets each ref in order (a peeled
 * line with peeled = 1 and the name of the ref it peels, which came just
 * before); its non-zero return stops the parse and is returned. */
typedef int (*pw_dumb_ref_fn)(void *ctx, const char *name, size_t len, const struct pw_oid *oid,
                              int peeled);
int pw_dumb_parse_refs(const uint8_t *p, size_t n, pw_dumb_ref_fn fn, void *ctx,
                       const struct pw_hash_algo **algo, struct pw_error *err);
/* HEAD: "ref: <name>" (*symref malloc'd) or a detached id of algo (when
 * algo is NULL, guessed from its length; *oid then carries it). */
int pw_dumb_parse_head(const uint8_t *p, size_t n, const struct pw_hash_algo *algo, char **symref,
                       struct pw_oid *oid, struct pw_error *err);
/* objects/info/packs: "P pack-<hex>.pack" lines (others ignored, as Git
 * does). *names gets the malloc'd array of malloc'd names. */
int pw_dumb_parse_packs(const uint8_t *p, size_t n, const struct pw_hash_algo *algo, char ***names,
                        size_t *nr, struct pw_error *err);
void pw_dumb_free_names(char **names, size_t nr);
/* objects/info/http-alternates or objects/info/alternates of the object
 * store at objects_url ("http://h/r.git/objects"): absolute http(s) URLs,
 * server-absolute paths and paths relative to objects_url, each resolved
 * to an object store URL (no trailing '/', "." and ".." removed). Lines of
 * other protocols are skipped and counted in *skipped. */
int pw_dumb_parse_alternates(const uint8_t *p, size_t n, const char *objects_url, char ***urls,
                             size_t *nr, size_t *skipped, struct pw_error *err);

/* ---- writers (dumb-info.c) --------------------------------------------- */

struct pw_buf;
struct pw_odb;
struct pw_repo;

/* One ref of info/refs: "<hex>\t<name>\n", then "<peeled>\t<name>^{}\n"
 * when peeled is not NULL. 0 or PW_ENOMEM. */
int pw_dumb_info_refs_line(struct pw_buf *out, const struct pw_oid *oid, const char *name,
                           const struct pw_oid *peeled);
/* info/refs as Git writes it, appended to out: the refs under prefix (in
 * name order, named without their first strip bytes: a namespace), each
 * annotated tag followed by its peeled line (none when the chain is
 * broken). A ref whose object is missing fails ("<name>: bad object <hex>",
 * update-server-info's rule) or, with skip_missing, is left out
 * (http-backend's). 0 or an error with err set. */
int pw_dumb_info_refs(struct pw_repo *repo, struct pw_odb *odb, const char *prefix, size_t strip,
                      int skip_missing, struct pw_buf *out, struct pw_error *err);
/* HEAD as a dumb client reads it, appended to out: "ref: <target>\n" or
 * "<hex>\n" for a detached HEAD, nothing when HEAD does not resolve. The
 * HEAD is ns_prefix's ("refs/namespaces/<ns>/", or "" for none), its target
 * named without ns_prefix (Git's head_ref_namespaced). 0 or PW_ENOMEM. */
int pw_dumb_head(struct pw_repo *repo, const char *ns_prefix, struct pw_buf *out);
/* objects/info/packs as http-backend makes it, appended to out: "P <pack>"
 * for each local pack with its .idx, newest first, then an empty line
 * (update-server-info keeps the order of the file it rewrites instead).
 * 0 or PW_ENOMEM. */
int pw_dumb_info_packs(const char *objects_dir, struct pw_buf *out);
/* objects/info/packs with a pack pushed over WebDAV, in out: "P <name>"
 * first, then the old file's len bytes (old may be NULL when len is 0).
 * 1, out untouched, when old already names it (the same objects pushed
 * before); 0, or PW_ENOMEM. */
int pw_dumb_info_packs_add(const char *old, size_t len, const char *name, struct pw_buf *out);

#endif
