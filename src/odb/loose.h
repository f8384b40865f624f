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

/* Largest object a loose file may declare (docs/limits.md). */
#define PW_LOOSE_MAX_SIZE ((uint64_t)1 << 40)

/*
 * A loose object's file as it arrives, never held whole: each piece fed is
 * inflated into a fixed 64 KiB buffer and hashed ("<type> <size>\0" and the
 * content) as it goes. The header is checked as soon as it is inflated
 * (known type, size at most max_size); inflating past the declared size,
 * bad or truncated zlib data and bytes after the zlib stream are
 * PW_ECORRUPT, a declared size over max_size PW_ETOOBIG. `what` (borrowed)
 * names the object in messages.
 */
struct pw_loose_stream {
	const struct pw_hash_algo *algo;
	const char *what;
	uint64_t max_size;
	void *z;      /* z_stream */
	uint8_t *out; /* the inflate buffer */
	uint8_t hdr[64];
	size_t hlen; /* header bytes inflated so far */
	int have_hdr, done;
	int type;
	uint64_t size, got; /* declared, inflated content */
	struct pw_hash_ctx h;
};
int pw_loose_stream_init(struct pw_loose_stream *s, const struct pw_hash_algo *algo,
                         uint64_t max_size, const char *what, struct pw_error *err);
int pw_loose_stream_feed(struct pw_loose_stream *s, const void *data, size_t len,
                         struct pw_error *err);
/* The end of the file: the whole zlib stream and exactly the declared size
 * must have come; *oid gets the object's id (PW_ECOLLISION as
 * pw_hash_final). */
int pw_loose_stream_finish(struct pw_loose_stream *s, struct pw_oid *oid, int *type, uint64_t *size,
                           struct pw_error *err);
void pw_loose_stream_free(struct pw_loose_stream *s);

/* Read the loose object oid from objects_dir. PW_ENOTFOUND (no message) when
 * there is no such file. scratch holds the compressed file (reused). */
int pw_loose_read(const char *objects_dir, const struct pw_oid *oid, int *type, uint64_t *size,
                  struct pw_buf *out, struct pw_buf *scratch, struct pw_error *err);
int pw_loose_exists(const char *objects_dir, const struct pw_oid *oid);

/* Write an object (temporary file + rename); *oid gets its id. */
int pw_loose_write(const char *objects_dir, const struct pw_hash_algo *algo, int type,
                   const void *data, size_t len, struct pw_oid *oid, struct pw_error *err);

#endif
