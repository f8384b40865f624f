/* The file format of a pack-cache entry (pack-cache-entry.c): pure encoders
 * and a decoder that does no I/O, so that a reader can follow a file while
 * another process is still writing it, and so that the fuzzer can feed it.
 *
 *   header   64 bytes: "PWPKCACH", be32 version (1), be32 record size R
 *            (1..PW_PC_RECORD_MAX), the 32-byte key, 16 zero bytes
 *   records  be32 len (1..R), len bytes of the pack, a 32-byte chain hash;
 *            every record but the last holds exactly R bytes, so the
 *            records of a byte stream do not depend on who wrote it
 *   end      be32 0, 32 bytes (be64 total length, be32 objects, deltas,
 *            reused, reused deltas, pack-reused, be32 0), chain hash;
 *            nothing may follow it
 *   failed   (instead of the end, for the readers of a generation that
 *            failed) be32 0xffffffff, be32 n (<= PW_PC_MSG_MAX), n bytes of
 *            message, chain hash
 *
 * The chain starts as SHA-256(header) and each record's hash is
 * SHA-256(previous hash || the record's bytes before its hash): a reader
 * checks every record before it uses a byte of it, and the end's hash
 * vouches for the whole file, its length and its order included. */
#ifndef PW_SERVER_PACK_CACHE_ENTRY_H
#define PW_SERVER_PACK_CACHE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"

#define PW_PC_MAGIC       "PWPKCACH"
#define PW_PC_VERSION     1
#define PW_PC_HDR_SIZE    64
#define PW_PC_HASH_SIZE   32
#define PW_PC_KEY_SIZE    32
#define PW_PC_RECORD_MAX  (1u << 20)  /* largest record a reader accepts */
#define PW_PC_RECORD_SIZE (64u << 10) /* what the writer uses */
#define PW_PC_MSG_MAX     1024
#define PW_PC_END_FIELDS  32
#define PW_PC_END_SIZE    (4 + PW_PC_END_FIELDS + PW_PC_HASH_SIZE)
#define PW_PC_FAILED_MAX  (8 + PW_PC_MSG_MAX + PW_PC_HASH_SIZE)
#define PW_PC_LEN_END     0u
#define PW_PC_LEN_FAILED  0xffffffffu

/* What the end record carries besides the length: the pack writer's
 * numbers, so that a client served from the cache gets the same "Total"
 * line as the one that made the pack. */
struct pw_pc_trailer {
	uint64_t total;
	uint32_t objects, deltas, reused, reused_deltas, pack_reused;
};

enum pw_pc_kind { PW_PC_DATA = 1, PW_PC_END, PW_PC_FAILED };

struct pw_pc_record {
	enum pw_pc_kind kind;
	const uint8_t *data; /* DATA: the pack bytes; FAILED: the message (no NUL) */
	uint32_t len;
	struct pw_pc_trailer end; /* END */
	size_t size;              /* bytes of input the record took */
};

/* A reader's state: where the chain is, what it has seen. */
struct pw_pc_reader {
	uint8_t chain[PW_PC_HASH_SIZE];
	uint8_t key[PW_PC_KEY_SIZE];
	uint32_t record_size;
	uint64_t total;   /* pack bytes in the records so far */
	uint64_t records; /* data records so far */
	int have_header, short_seen, finished;
};

/* The header at in[0..avail): 0 (*used = PW_PC_HDR_SIZE), PW_EMORE, or
 * PW_ECORRUPT (bad magic, version, record size, reserved bytes, or a key
 * other than want_key when it is not NULL). */
int pw_pc_read_header(struct pw_pc_reader *r, const uint8_t *in, size_t avail,
                      const uint8_t *want_key, size_t *used, struct pw_error *err);

/* The next record at in[0..avail): 0 with *out filled and the chain moved
 * on; PW_EMORE with out->size = the bytes the record needs in all (at
 * least avail + 1); PW_ECORRUPT for a bad length, a hash that does not
 * match, an end whose total is not the sum of the records, a short record
 * not followed by the end, or anything after the end or failure record. */
int pw_pc_read_record(struct pw_pc_reader *r, const uint8_t *in, size_t avail,
                      struct pw_pc_record *out, struct pw_error *err);

/* The writer's state. */
struct pw_pc_writer {
	uint8_t chain[PW_PC_HASH_SIZE];
	uint32_t record_size;
	uint64_t total;
};

/* Start an entry: the header into hdr. */
void pw_pc_writer_init(struct pw_pc_writer *w, const uint8_t key[PW_PC_KEY_SIZE],
                       uint32_t record_size, uint8_t hdr[PW_PC_HDR_SIZE]);
/* One data record of len (1..record_size) bytes into out (room for
 * len + 4 + PW_PC_HASH_SIZE); returns its size. */
size_t pw_pc_write_record(struct pw_pc_writer *w, const void *data, uint32_t len, uint8_t *out);
/* The end record (t->total is set from the writer); returns PW_PC_END_SIZE. */
size_t pw_pc_write_end(struct pw_pc_writer *w, const struct pw_pc_trailer *t,
                       uint8_t out[PW_PC_END_SIZE]);
/* The failure record (the message cut at PW_PC_MSG_MAX); returns its size. */
size_t pw_pc_write_failed(struct pw_pc_writer *w, const char *msg, uint8_t out[PW_PC_FAILED_MAX]);

#endif
