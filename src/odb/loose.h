/* Loose objects: objects/xx/yyyy... holding zlib("<type> <size>\0<content>"). */
#ifndef PW_ODB_LOOSE_H
#define PW_ODB_LOOSE_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"

/* "<dir>/xx/yyyy..." into out (replaced). */
int pw_loose_path(struct pw_buf *out, const char *objects_dir, const struct pw_oid *oid);

/* Decode a loose object's file content held in memory. With out == NULL only
 * the header is inflated (type and size). `what` names the object in
 * messages. Strict: unknown type, bad size, missing NUL, wrong content length
 * and trailing bytes are PW_ECORRUPT. */
int pw_loose_decode(const uint8_t *z, size_t zlen, int *type, uint64_t *size, struct pw_buf *out,
                    const char *what, struct pw_error *err);

/* Read the loose object oid from objects_dir. PW_ENOTFOUND (no message) when
 * there is no such file. scratch holds the compressed file (reused). */
int pw_loose_read(const char *objects_dir, const struct pw_oid *oid, int *type, uint64_t *size,
                  struct pw_buf *out, struct pw_buf *scratch, struct pw_error *err);
int pw_loose_exists(const char *objects_dir, const struct pw_oid *oid);

/* Write an object (temporary file + rename); *oid gets its id. */
int pw_loose_write(const char *objects_dir, const struct pw_hash_algo *algo, int type,
                   const void *data, size_t len, struct pw_oid *oid, struct pw_error *err);

#endif
