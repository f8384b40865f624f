/* The index-pack engine's parts (index-pack.c: creation, phase 1 and the
 * results; index-pack-resolve.c: phase 2, the delta resolution and thin
 * packs) share the engine and its objects. */
#ifndef PW_PACK_INDEX_PACK_PRIV_H
#define PW_PACK_INDEX_PACK_PRIV_H

#include <libdeflate.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "pack/index-pack.h"
#include "pack/ip-check.h"
#include "packwire/object.h"
#include "packwire/buf.h"

/* Entries up to this size are inflated with libdeflate in one call; larger
 * ones are streamed through zlib so that phase 1 holds no whole object. */
#define LD_MAX ((size_t)1 << 20)
/* The read window of the stream reader. */
#define WINDOW (LD_MAX + LD_MAX / 4 + 65536)
/* Bytes of resolved bases one resolver keeps before dropping ancestors. */
#define CACHE_LIMIT ((size_t)32 << 20)
/* Deflate cannot expand more than ~1032:1; anything claiming more is bogus. */
#define MAX_RATIO 1040

#define NO_OBJ UINT32_MAX
/* The smallest pack entry: a one-byte type and size, and the shortest zlib
 * stream (2 bytes of header, an empty fixed block, the 4-byte Adler-32). No
 * pack of L bytes holds more than (L - header - trailer) / 9 objects. */
#define MIN_ENTRY 9

struct ip_obj {
	struct pw_idx_entry e; /* oid, offset, crc32 */
	uint64_t size;         /* inflated size of the entry (delta size for deltas) */
	uint32_t hdr_len;
	uint32_t depth;
	uint32_t base; /* base object (deltas), NO_OBJ otherwise */
	uint8_t type;  /* pack entry type */
	uint8_t real_type;
	uint8_t claimed; /* taken by a resolver (atomic) */
	uint8_t appended;
};

struct ofs_child {
	uint32_t base, obj;
};

struct ref_child {
	struct pw_oid base;
	uint32_t obj;
};

struct ip_in {
	const uint8_t *data; /* window */
	size_t len, pos;     /* valid bytes, consumed bytes */
	size_t hashed;       /* bytes of the window hashed (and copied) so far */
	uint64_t base;       /* pack offset of data[0] */
	int eof;
	int fd, out_fd; /* -1 for memory */
	/* A live connection (pipe, socket): the peer sends the pack and then
	 * waits for an answer, so never block for bytes past what is needed. */
	int stream;
	uint64_t max_input; /* 0 = no limit */
	uint64_t file_left; /* a regular file: its bytes from the pack's start; 0 = unknown */
	uint8_t *own;
	struct pw_hash_ctx hash;
	uint32_t crc;
};

struct pw_ipack {
	struct pw_ipack_opts opts;
	const struct pw_hash_algo *algo;
	struct pw_error err;
	pthread_mutex_t err_lock;

	uint32_t nr_header; /* object count in the pack header */
	struct ip_obj *objs;
	uint32_t nr, alloc;
	struct ofs_child *ofs;
	uint32_t nr_ofs, alloc_ofs;
	struct ref_child *refs;
	uint32_t nr_refs, alloc_refs;
	uint32_t nr_deltas, nr_appended;
	uint64_t pack_end; /* offset of the trailing checksum */
	uint64_t data_end; /* end of the last entry (after --fix-thin appends) */
	uint8_t checksum[PW_MAX_RAWSZ];
	int parsed, resolved, has_ref_delta;

	/* phase 2 view of the pack */
	const uint8_t *map;
	size_t map_len;
	int pack_fd; /* phase 2 reads with pread when there is no map */
	int own_fd;
	int out_fd;

	/* phase 1 */
	struct libdeflate_decompressor *ld;
	struct pw_buf scratch;

	/* phase 2 */
	pthread_mutex_t q_lock;
	pthread_cond_t q_cond;
	struct work_item *q;
	size_t q_nr, q_alloc;
	int idle; /* resolvers waiting for work (atomic reads outside q_lock) */
	int nthreads;
	uint32_t next_root;   /* atomic */
	uint32_t resolved_nr; /* atomic */
	int failed;           /* atomic: a resolver hit an error */
	struct pw_idx_entry **sorted;

	/* link checks: phase 1 feeds links, resolvers their own buffers */
	struct ip_linkset linkset;
	struct ip_links links;
	int links_broken;   /* report_links: an object could not be read (atomic) */
	int self_contained; /* after resolve */
};

static inline uint64_t pw_ipack__entry_end(const struct pw_ipack *ip, uint32_t i)
{
	return i + 1 < ip->nr ? ip->objs[i + 1].e.offset : ip->data_end;
}

static inline int pw_ipack__wants_links(const struct pw_ipack *ip)
{
	return ip->opts.check_links || ip->opts.report_links;
}

/* ---- index-pack.c -------------------------------------------------------- */

/* Room for need objects in ip->objs. */
int pw_ipack__grow_objs(struct pw_ipack *ip, uint32_t need);
/* Check a commit, tree or tag and collect its links (see index-pack.c). */
int pw_ipack__check_obj(struct pw_ipack *ip, struct ip_links *links, int type, const char *data,
                        size_t len, const struct pw_oid *oid, struct pw_error *err);
/* The caller's progress callback, when there is one. */
void pw_ipack__report(struct pw_ipack *ip, int phase, uint64_t done, uint64_t total);

#endif
