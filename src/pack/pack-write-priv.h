/* The pack writer's parts (pack-write.c: counting, writing, files;
 * pack-write-search.c: the delta search; pack-write-order.c: Git's write
 * order) share the writer and its objects. */
#ifndef PW_PACK_PACK_WRITE_PRIV_H
#define PW_PACK_PACK_WRITE_PRIV_H

#include <libdeflate.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hash/oididx.h"
#include "odb/entry.h"
#include "odb/pack.h"
#include "pack/bitmap.h"
#include "packwire/object.h"
#include "packwire/pack-write.h"

/* Objects smaller than this are not worth a delta. */
#define MIN_DELTA_SIZE 50
/* Objects larger than this are neither searched nor used as bases (Git's
 * core.bigFileThreshold default). */
#define BIG_FILE ((uint64_t)512 << 20)
/* Compressed whole objects computed during the search are kept up to this
 * many bytes (beyond, they are compressed again while writing). */
#define ZCACHE_LIMIT ((size_t)256 << 20)
#define OUTBUF_SIZE  (128 * 1024)

enum {
	W_BASE_ONLY = 1, /* thin-pack base: the receiver has it */
	W_REUSE = 2,     /* copy the packed entry verbatim */
	W_WRITTEN = 4,
	W_MISSING = 8, /* base-only object we do not have */
	W_VISIT = 16,
	W_DEPTH = 32, /* depth of a reused delta is final */
	W_SEARCHED = 64,
	W_TSIZE = 128, /* size is the translated content's */
	/* translated, stored as a delta whose base is sent too: its delta is
	 * computed against that base's translation (the stored pack's choice,
	 * found by a wider search than ours), not searched */
	W_MIRROR = 256,
	W_TAGGED = 512, /* a tag, or what one peels to: written early */
};

struct wobj {
	struct pw_oid oid;
	uint8_t type;     /* real type */
	uint8_t raw_type; /* type of the packed entry, 0 when not packed */
	uint8_t raw_hdr;  /* header length of the packed entry */
	uint8_t zdelta;   /* zdata holds a delta */
	uint32_t hash;
	uint16_t depth;
	uint16_t child_depth; /* longest reused delta chain hanging below */
	uint32_t flags;
	int32_t base; /* delta base (index), -1 for none */
	uint32_t idx_pos;
	uint32_t crc;
	uint64_t size;
	struct pw_pack *pack;
	const uint8_t *raw; /* the packed entry */
	size_t raw_len;
	uint64_t raw_size;
	uint8_t *zdata; /* new entry data (compressed delta or whole object) */
	size_t zlen;
	uint64_t zsize; /* its size before compression */
	uint64_t offset;
};
/* the writer's index finds an object's id at the start of its entry */
_Static_assert(offsetof(struct wobj, oid) == 0, "wobj starts with its id");

struct pw_pack_writer {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;     /* of the odb */
	const struct pw_hash_algo *out_algo; /* of the pack: translate.algo or algo */
	struct pw_pack_write_opts opts;
	int translating;
	struct pw_pack_translate translate;
	struct pw_buf tr_buf; /* translated content on the writing thread */
	struct pw_error err;
	struct wobj *objs;
	size_t nr, alloc, nr_send;
	struct pw_oididx map;  /* oid -> index into objs */
	struct pw_oid *tagged; /* pw_pack_writer_add_tagged */
	size_t nr_tagged, alloc_tagged;
	int tagged_given;
	int written;
	uint8_t checksum[PW_MAX_RAWSZ];
	struct pw_pack_write_stats stats;
	uint32_t *wseq;              /* entry numbers in the order written (stats.written) */
	pw_pack_commit_fn commit_fn; /* pw_pack_writer_set_commit_info */
	void *commit_data;
	atomic_size_t zcache;
	atomic_uint_fast64_t search_done;
	uint64_t search_total;
	pthread_mutex_t progress_lock;
	/* output */
	pw_pack_out_fn out_fn;
	void *out_ctx;
	uint8_t *outbuf;
	size_t outlen;
	uint64_t pos;
	struct pw_hash_ctx hash;
};

static inline int pw_pack_writer__is_delta_type(int t)
{
	return t == PW_OBJ_OFS_DELTA || t == PW_OBJ_REF_DELTA;
}

static inline int pw_pack_writer__w_translates(const struct pw_pack_writer *w, int type)
{
	return w->translating && type != PW_OBJ_BLOB;
}

/* A reused delta: copied verbatim, base known. */
static inline int pw_pack_writer__reused_delta(const struct wobj *o)
{
	return (o->flags & W_REUSE) && pw_pack_writer__is_delta_type(o->raw_type);
}

/* Its base is decided before the search: a reused or a mirrored delta. */
static inline int pw_pack_writer__chained(const struct wobj *o)
{
	return pw_pack_writer__reused_delta(o) || (o->flags & W_MIRROR);
}

/* ---- pack-write.c -------------------------------------------------------- */

int pw_pack_writer__nomem(struct pw_pack_writer *w);
void pw_pack_writer__progress(struct pw_pack_writer *w, const char *title, uint64_t n,
                              uint64_t total, int done);
/* The content of a non-blob in the pack's algorithm, in place of buf's. */
int pw_pack_writer__translate_content(struct pw_pack_writer *w, void *data, int type,
                                      struct pw_buf *buf, struct pw_buf *tmp,
                                      const struct pw_oid *oid, struct pw_error *err);
/* The object's entry number, or -1 when it is not in the pack. */
int32_t pw_pack_writer__lookup(struct pw_pack_writer *w, const struct pw_oid *oid);

/* ---- the delta search (pack-write-search.c) ------------------------------ */

/* zlib-compress in[0..len) into *out (malloc'd), *outlen its length. */
int pw_pack_writer__compress_into(struct libdeflate_compressor *c, const void *in, size_t len,
                                  uint8_t **out, size_t *outlen);
/* Deltas for the objects that are not reused, on the writer's threads. */
int pw_pack_writer__search_deltas(struct pw_pack_writer *w);

/* ---- the write order (pack-write-order.c) -------------------------------- */

/* The entry numbers in the order they are written (Git's), *out malloc'd. */
int pw_pack_writer__compute_write_order(struct pw_pack_writer *w, int32_t **out);

#endif
