/* Receiving a push in the other algorithm (compat-receive.c): a repository
 * stored in one algorithm, with extensions.compatObjectFormat naming the
 * other and its map built, accepts a push from a client of the other
 * (receive-pack --object-format=ALGO). The advertisement goes out in the
 * client's ("wire") ids; the pack is indexed in the wire algorithm inside
 * the quarantine, its objects translated into the storage algorithm and
 * written as a storage pack with its side file, so that everything after
 * (connectivity, hooks, ref updates) works in storage ids. Also: keeping
 * the map current for a native push into such a repository. */
#ifndef PW_SERVER_COMPAT_RECEIVE_H
#define PW_SERVER_COMPAT_RECEIVE_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_repo;
struct pw_rp_compat;
struct pw_receive_cmd;

/* Hook before each map file is renamed into place (tests kill there). */
typedef void (*pw_rp_publish_fn)(void *data, const char *tmp_path, const char *final_path);

/* object_format NULL, empty or the storage algorithm: *out = NULL (a native
 * push). Else the repository must have extensions.compatObjectFormat =
 * that algorithm and a readable map. Errors in err. */
int pw_rp_compat_open(struct pw_rp_compat **out, struct pw_repo *repo, const char *object_format,
                      struct pw_error *err);
void pw_rp_compat_free(struct pw_rp_compat *c);
const struct pw_hash_algo *pw_rp_compat_wire(const struct pw_rp_compat *c);

/* Storage id -> wire id (pushed objects included once imported): 0 or
 * PW_ENOTFOUND. */
int pw_rp_compat_to_wire(struct pw_rp_compat *c, const struct pw_oid *storage, struct pw_oid *wire);
/* Wire id -> storage id: 0 or PW_ENOTFOUND. */
int pw_rp_compat_to_storage(struct pw_rp_compat *c, const struct pw_oid *wire,
                            struct pw_oid *storage);

/* index-pack's callbacks for --fix-thin in the wire algorithm (ctx = c):
 * a storage object read and translated into the wire algorithm. */
int pw_rp_compat_read_base(void *ctx, const struct pw_oid *wire, int *type, struct pw_buf *out);
int pw_rp_compat_has_base(void *ctx, const struct pw_oid *wire);

/* The client's shallow commits (wire ids; replacing those set before),
 * before the import. A pushed
 * commit that is one of them and has a parent neither pushed nor known
 * here cannot be given a storage id (a commit's id covers its parents'
 * ids), nor can the commits built on it and the tags of those: the import
 * leaves them out, and pw_rp_compat_cut_off names them. 0 or PW_ENOMEM. */
int pw_rp_compat_set_shallow(struct pw_rp_compat *c, const struct pw_oid *wire, size_t n);
int pw_rp_compat_cut_off(const struct pw_rp_compat *c, const struct pw_oid *wire);

/* Translate every object of the wire objects directory wire_dir (the
 * received pack) into the storage algorithm and write the new ones as one
 * pack in pack_dir (.pack, .compat side file, .idx), whole objects. hex_out
 * (PW_MAX_HEXSZ + 1) gets the pack's name, "" when nothing was new; *nr
 * the objects written. Nothing is written on error (PW_ENOTFOUND names
 * the object or gitlink path that cannot be translated). */
int pw_rp_compat_import(struct pw_rp_compat *c, const char *wire_dir, const char *pack_dir,
                        pw_rp_publish_fn before, void *before_data, char *hex_out, uint32_t *nr,
                        struct pw_error *err);

/* A command's ids, in place, from wire to storage. NULL when done, else
 * the "ng" reason (with the message in err): an old id the map does not
 * know cannot be the ref's value; a new id that was neither pushed nor
 * known is missing. */
const char *pw_rp_compat_cmd(struct pw_rp_compat *c, struct pw_receive_cmd *cmd,
                             struct pw_error *err);

/* Native push into a repository with extensions.compatObjectFormat: the
 * map entries of the packs of pack_dir (a quarantine's: their side files
 * are written beside them and migrate with them, before the .idx). Such a
 * repository keeps pushed objects as a pack. read_dir sees the quarantine
 * and the repository. */
struct pw_compat_submodules;
int pw_rp_compat_note_quarantine(struct pw_repo *repo, const char *read_dir, const char *pack_dir,
                                 struct pw_compat_submodules *subs, pw_rp_publish_fn before,
                                 void *before_data, struct pw_error *err);

/* Gitlinks of the pushed trees are mapped through subs (borrowed; NULL:
 * a gitlink the map does not know fails the push, naming its path). */
void pw_rp_compat_set_submodules(struct pw_rp_compat *c, struct pw_compat_submodules *subs);

/* Where a server finds the submodules of repo (server/compat-submodule.c):
 * compat.submodule.<path>.repository of its config, then the .gitmodules
 * URLs that resolve to repositories under base (NULL: the directory that
 * holds the repository), checked by pw_srv_path_inside. */
int pw_rp_submodules_new(struct pw_compat_submodules **out, struct pw_repo *repo, const char *base,
                         struct pw_error *err);

#endif
