/* What the odb tells the pack layer beyond the public packwire/odb.h:
 * where an object is stored (to copy pack entries verbatim), the odb's packs
 * and its delta-base cache. */
#ifndef PW_ODB_ODB_PRIV_H
#define PW_ODB_ODB_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "odb/pack.h"
#include "packwire/odb.h"

enum { PW_ODB_LOC_LOOSE = 1, PW_ODB_LOC_PACK = 2 };
struct pw_odb_loc {
	int kind;              /* PW_ODB_LOC_* */
	struct pw_pack *pack;  /* PACK: borrowed (lives as long as the odb) */
	uint64_t offset;       /* PACK: entry offset */
	const char *loose_dir; /* LOOSE: the objects directory holding it */
};
/* Where the object is (packs first, most recently used first; then loose).
 * PW_ENOTFOUND when absent; other errors (a pack that does not open) are in
 * pw_odb_error(odb). */
int pw_odb_locate(struct pw_odb *odb, const struct pw_oid *oid, struct pw_odb_loc *loc);
/* The odb's delta-base cache, to pass to pw_pack_read. */
struct pw_base_cache *pw_odb_cache(struct pw_odb *odb);
/* Packs of the odb (alternates included), opened on demand: n < count. */
size_t pw_odb_pack_count(const struct pw_odb *odb);
int pw_odb_pack(struct pw_odb *odb, size_t n, struct pw_pack **out);
/* How many objects the packs hold: about what a walk of everything meets,
 * so that its tables are made once (a pack that does not open counts
 * nothing; only a hint). */
size_t pw_odb_packed_count(struct pw_odb *odb);

#endif
