/* Object types and the object header "<type> <size>\0". */
#ifndef PACKWIRE_OBJECT_H
#define PACKWIRE_OBJECT_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>
#include "packwire/hash.h"

/* Pure functions on caller data: no allocation, no errors, any thread. */

/* The numbers are the pack entry type codes. */
enum pw_object_type {
	PW_OBJ_NONE = 0,
	PW_OBJ_COMMIT = 1,
	PW_OBJ_TREE = 2,
	PW_OBJ_BLOB = 3,
	PW_OBJ_TAG = 4,
	PW_OBJ_OFS_DELTA = 6,
	PW_OBJ_REF_DELTA = 7,
};

/* "commit", "tree", "blob", "tag"; NULL for other values. */
PW_API const char *pw_object_type_name(int type);
/* PW_OBJ_NONE when `name` (of `len` bytes) is not one of the four. */
PW_API int pw_object_type_from_name(const char *name, size_t len);

/* Writes "<type> <size>\0" into hdr (>= 32 bytes); returns its length incl. NUL. */
PW_API size_t pw_object_header(char *hdr, int type, uint64_t size);
/* The object id of a whole object's content: 0, or PW_ECOLLISION when
 * SHA-1 detects a collision attack (hash.h; *out is still written). */
PW_API PW_CHECK_RESULT int pw_object_hash(const struct pw_hash_algo *algo, int type,
                                          const void *data, size_t len, struct pw_oid *out);

#endif
