/* Git's revision syntax, as rev-list and pack-objects --revs take it: names
 * ("main", "v1.0", "HEAD", "@", a full hex id) with the suffixes ~N, ^N, ^{},
 * ^{commit}, ^{tree}, ^{tag}, ^{blob}, and the arguments "X", "^X", "A..B",
 * "--not" and "--all" that add tips and exclusions to an object walk. */
#ifndef PACKWIRE_REVISION_H
#define PACKWIRE_REVISION_H

#include "packwire/export.h"

#include <stddef.h>

#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/revlist.h"

struct pw_repo;
struct pw_revs;

/* Called with a warning that is not an error (e.g. "refname 'x' is
 * ambiguous."); msg is borrowed for the call. */
typedef void (*pw_revs_warn_fn)(void *data, const char *msg);

/* A parser of revision arguments over `repo` (for refs) and `odb` (for
 * objects), both borrowed for its lifetime; odb must be of the repository's
 * algorithm. It records every tip and exclusion added. PW_ENOMEM. A parser,
 * its repo and odb are used by one thread at a time. */
PW_API int pw_revs_new(struct pw_revs **out, struct pw_repo *repo, struct pw_odb *odb);
PW_API void pw_revs_free(struct pw_revs *revs);
/* The message of the last failure (borrowed, valid until the next call). */
PW_API const struct pw_error *pw_revs_error(const struct pw_revs *revs);
/* Where warnings go (default: dropped). */
PW_API void pw_revs_set_warn(struct pw_revs *revs, pw_revs_warn_fn fn, void *data);

/* Resolve "<name>[~N|^N|^{type}]..." to an object id. PW_ENOTFOUND for an
 * unknown name or missing object, PW_EINVAL for bad syntax or a type that
 * does not match, PW_ECORRUPT for objects that do not parse; the message is
 * Git's ("ambiguous argument 'x': unknown revision or path not in the working
 * tree.", "bad revision 'x'", "'x': not a commit", "bad object <hex>"). */
PW_API int pw_revs_resolve(struct pw_revs *revs, const char *arg, struct pw_oid *oid);

/* One argument into the walk rl: "X" (a tip), "^X" (an exclusion), "A..B"
 * (^A B; an empty side means HEAD), "--not" (flips the meaning of the
 * following ones) or "--all". Errors as pw_revs_resolve, or the walk's. */
PW_API int pw_revs_add(struct pw_revs *revs, struct pw_revlist *rl, const char *arg);
/* Every ref and HEAD as tips (exclusions after an odd number of --not). */
PW_API int pw_revs_add_all(struct pw_revs *revs, struct pw_revlist *rl);

/* The tips and exclusions added so far, in order (e.g. for a bitmap walk):
 * the i-th id (borrowed, i < pw_revs_count) and *exclude whether it is an
 * exclusion. */
PW_API size_t pw_revs_count(const struct pw_revs *revs);
PW_API const struct pw_oid *pw_revs_get(const struct pw_revs *revs, size_t i, int *exclude);

#endif
