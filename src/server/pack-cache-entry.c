/* The pack-cache entry format (see pack-cache-entry.h): header, records
 * with a hash chain, end or failure record. No I/O here. */
#include <string.h>

#include "packwire/hash.h"
#include "server/pack-cache-entry.h"

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	put_be32(p, (uint32_t)(v >> 32));
	put_be32(p + 4, (uint32_t)v);
}

/* next = SHA-256(prev || a || b) */
static void chain_step(uint8_t next[PW_PC_HASH_SIZE], const uint8_t prev[PW_PC_HASH_SIZE],
                       const void *a, size_t alen, const void *b, size_t blen)
{
	struct pw_hash_ctx ctx;

	pw_hash_init_checksum(&ctx, &pw_hash_sha256);
	if (prev)
		pw_hash_update(&ctx, prev, PW_PC_HASH_SIZE);
	pw_hash_update(&ctx, a, alen);
	if (blen)
		pw_hash_update(&ctx, b, blen);
	pw_hash_final_checksum(&ctx, next);
}

static int corrupt(struct pw_error *err, const char *what)
{
	return pw_error_set(err, PW_ECORRUPT, "pack cache entry: %s", what);
}

int pw_pc_read_header(struct pw_pc_reader *r, const uint8_t *in, size_t avail,
                      const uint8_t *want_key, size_t *used, struct pw_error *err)
{
	static const uint8_t zero[16];
	uint32_t rs;

	memset(r, 0, sizeof(*r));
	*used = 0;
	if (avail < PW_PC_HDR_SIZE)
		return PW_EMORE;
	if (memcmp(in, PW_PC_MAGIC, 8))
		return corrupt(err, "bad magic");
	if (get_be32(in + 8) != PW_PC_VERSION)
		return corrupt(err, "unknown version");
	rs = get_be32(in + 12);
	if (!rs || rs > PW_PC_RECORD_MAX)
		return corrupt(err, "bad record size");
	if (memcmp(in + 48, zero, sizeof(zero)))
		return corrupt(err, "reserved bytes are not zero");
	if (want_key && memcmp(in + 16, want_key, PW_PC_KEY_SIZE))
		return corrupt(err, "the key is not the one its name says");
	memcpy(r->key, in + 16, PW_PC_KEY_SIZE);
	r->record_size = rs;
	chain_step(r->chain, NULL, in, PW_PC_HDR_SIZE, NULL, 0);
	r->have_header = 1;
	*used = PW_PC_HDR_SIZE;
	return 0;
}

/* Check the hash at in[n..n+32) against SHA-256(chain || in[0..n)); move on. */
static int check_hash(struct pw_pc_reader *r, const uint8_t *in, size_t n, struct pw_error *err)
{
	uint8_t h[PW_PC_HASH_SIZE];

	chain_step(h, r->chain, in, n, NULL, 0);
	if (memcmp(h, in + n, PW_PC_HASH_SIZE))
		return corrupt(err, "checksum mismatch");
	memcpy(r->chain, h, PW_PC_HASH_SIZE);
	return 0;
}

int pw_pc_read_record(struct pw_pc_reader *r, const uint8_t *in, size_t avail,
                      struct pw_pc_record *out, struct pw_error *err)
{
	uint32_t len;
	size_t need;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!r->have_header)
		return pw_error_set(err, PW_EINVAL, "pack cache entry: header not read");
	if (r->finished)
		return corrupt(err, "data after the end");
	if (avail < 4) {
		out->size = 4;
		return PW_EMORE;
	}
	len = get_be32(in);
	if (len == PW_PC_LEN_END) {
		need = PW_PC_END_SIZE;
	} else if (len == PW_PC_LEN_FAILED) {
		uint32_t n;

		if (avail < 8) {
			out->size = 8;
			return PW_EMORE;
		}
		n = get_be32(in + 4);
		if (n > PW_PC_MSG_MAX)
			return corrupt(err, "failure message too long");
		need = 8 + (size_t)n + PW_PC_HASH_SIZE;
	} else {
		if (len > r->record_size)
			return corrupt(err, "record longer than the record size");
		if (r->short_seen)
			return corrupt(err, "a short record is not the last one");
		need = 4 + (size_t)len + PW_PC_HASH_SIZE;
	}
	if (avail < need) {
		out->size = need;
		return PW_EMORE;
	}
	if ((rc = check_hash(r, in, need - PW_PC_HASH_SIZE, err)))
		return rc;
	out->size = need;
	if (len == PW_PC_LEN_END) {
		const uint8_t *f = in + 4;

		out->kind = PW_PC_END;
		out->end.total = get_be64(f);
		out->end.objects = get_be32(f + 8);
		out->end.deltas = get_be32(f + 12);
		out->end.reused = get_be32(f + 16);
		out->end.reused_deltas = get_be32(f + 20);
		out->end.pack_reused = get_be32(f + 24);
		if (get_be32(f + 28))
			return corrupt(err, "reserved bytes are not zero");
		if (out->end.total != r->total)
			return corrupt(err, "length mismatch");
		r->finished = 1;
		return 0;
	}
	if (len == PW_PC_LEN_FAILED) {
		out->kind = PW_PC_FAILED;
		out->data = in + 8;
		out->len = get_be32(in + 4);
		r->finished = 1;
		return 0;
	}
	out->kind = PW_PC_DATA;
	out->data = in + 4;
	out->len = len;
	r->total += len;
	r->records++;
	if (len < r->record_size)
		r->short_seen = 1;
	return 0;
}

void pw_pc_writer_init(struct pw_pc_writer *w, const uint8_t key[PW_PC_KEY_SIZE],
                       uint32_t record_size, uint8_t hdr[PW_PC_HDR_SIZE])
{
	memset(w, 0, sizeof(*w));
	memset(hdr, 0, PW_PC_HDR_SIZE);
	memcpy(hdr, PW_PC_MAGIC, 8);
	put_be32(hdr + 8, PW_PC_VERSION);
	put_be32(hdr + 12, record_size);
	memcpy(hdr + 16, key, PW_PC_KEY_SIZE);
	w->record_size = record_size;
	chain_step(w->chain, NULL, hdr, PW_PC_HDR_SIZE, NULL, 0);
}

size_t pw_pc_write_record(struct pw_pc_writer *w, const void *data, uint32_t len, uint8_t *out)
{
	put_be32(out, len);
	memcpy(out + 4, data, len);
	chain_step(w->chain, w->chain, out, 4 + (size_t)len, NULL, 0);
	memcpy(out + 4 + len, w->chain, PW_PC_HASH_SIZE);
	w->total += len;
	return 4 + (size_t)len + PW_PC_HASH_SIZE;
}

size_t pw_pc_write_end(struct pw_pc_writer *w, const struct pw_pc_trailer *t,
                       uint8_t out[PW_PC_END_SIZE])
{
	uint8_t *f = out + 4;

	memset(out, 0, PW_PC_END_SIZE);
	put_be32(out, PW_PC_LEN_END);
	put_be64(f, w->total);
	put_be32(f + 8, t->objects);
	put_be32(f + 12, t->deltas);
	put_be32(f + 16, t->reused);
	put_be32(f + 20, t->reused_deltas);
	put_be32(f + 24, t->pack_reused);
	chain_step(w->chain, w->chain, out, 4 + PW_PC_END_FIELDS, NULL, 0);
	memcpy(out + 4 + PW_PC_END_FIELDS, w->chain, PW_PC_HASH_SIZE);
	return PW_PC_END_SIZE;
}

size_t pw_pc_write_failed(struct pw_pc_writer *w, const char *msg, uint8_t out[PW_PC_FAILED_MAX])
{
	size_t n = strlen(msg);

	if (n > PW_PC_MSG_MAX)
		n = PW_PC_MSG_MAX;
	put_be32(out, PW_PC_LEN_FAILED);
	put_be32(out + 4, (uint32_t)n);
	memcpy(out + 8, msg, n);
	chain_step(w->chain, w->chain, out, 8 + n, NULL, 0);
	memcpy(out + 8 + n, w->chain, PW_PC_HASH_SIZE);
	return 8 + n + PW_PC_HASH_SIZE;
}
