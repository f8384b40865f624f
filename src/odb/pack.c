#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "odb/delta.h"
#include "odb/entry.h"
#include "odb/pack.h"
#include "packwire/object.h"
#include "util/bigmem.h"

static atomic_uint_fast64_t next_pack_id = 1;

static int is_delta(int type)
{
	return type == PW_OBJ_OFS_DELTA || type == PW_OBJ_REF_DELTA;
}

int pw_pack_open(struct pw_pack **out, const char *idx_path, const struct pw_hash_algo *algo,
                 struct pw_error *err)
{
	struct pw_idx *idx;
	int rc;

	*out = NULL;
	if ((rc = pw_idx_open(&idx, idx_path, algo, err)))
		return rc;
	if ((rc = pw_pack_open_idx(out, idx, idx_path, err)))
		pw_idx_free(idx);
	return rc;
}

int pw_pack_open_idx(struct pw_pack **out, struct pw_idx *idx, const char *idx_path,
                     struct pw_error *err)
{
	const struct pw_hash_algo *algo = idx->algo;
	size_t len = strlen(idx_path), rawsz = algo->rawsz;
	struct pw_pack *p;
	struct stat st;
	uint32_t nr;
	void *map;
	int fd, rc;

	*out = NULL;
	if (len < 4 || strcmp(idx_path + len - 4, ".idx"))
		return pw_error_set(err, PW_EINVAL, "%s: an index file name must end in .idx",
		                    idx_path);
	p = calloc(1, sizeof(*p));
	if (!p || !(p->idx_path = strdup(idx_path)) || !(p->path = malloc(len + 2))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory opening %s", idx_path);
		goto fail;
	}
	memcpy(p->path, idx_path, len - 4);
	memcpy(p->path + len - 4, ".pack", 6);
	p->name = strrchr(p->path, '/') ? strrchr(p->path, '/') + 1 : p->path;
	p->algo = algo;
	p->id = atomic_fetch_add(&next_pack_id, 1);
	p->idx = idx;
	fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = pw_error_set(err, errno == ENOENT ? PW_ENOTFOUND : PW_EIO,
		                  "cannot open pack %s: %s", p->path, strerror(errno));
		goto fail;
	}
	if (fstat(fd, &st)) {
		rc = pw_error_set(err, PW_EIO, "cannot stat %s: %s", p->path, strerror(errno));
		close(fd);
		goto fail;
	}
	if ((uint64_t)st.st_size < PW_PACK_HEADER_SIZE + rawsz || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		rc = pw_error_set(err, PW_ECORRUPT, "pack %s is too small (%lld bytes; truncated?)",
		                  p->path, (long long)st.st_size);
		goto fail;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		rc = pw_error_set(err, PW_EIO, "cannot map %s: %s", p->path, strerror(errno));
		goto fail;
	}
	p->data = map;
	p->size = (size_t)st.st_size;
	p->mapped = 1;
	if ((rc = pw_pack_header_decode(p->data, p->size, &nr, err))) {
		pw_error_wrap(err, "pack %s", p->path);
		goto fail;
	}
	if (nr != p->idx->nr) {
		rc = pw_error_set(err, PW_ECORRUPT,
		                  "pack %s holds %u objects but its index %s lists %u", p->path, nr,
		                  idx_path, p->idx->nr);
		goto fail;
	}
	p->nr = nr;
	if (memcmp(p->data + p->size - rawsz, p->idx->pack_checksum, rawsz)) {
		rc = pw_error_set(err, PW_EMISMATCH,
		                  "pack %s: trailing checksum does not match the one in its index "
		                  "%s (pack replaced or truncated?)",
		                  p->path, idx_path);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	if (p)
		p->idx = NULL; /* still the caller's */
	pw_pack_free(p);
	return rc;
}

int pw_pack_open_memory(struct pw_pack **out, const void *data, size_t len,
                        const struct pw_hash_algo *algo, struct pw_error *err)
{
	struct pw_pack *p;
	uint32_t nr;
	int rc;

	*out = NULL;
	if (len < PW_PACK_HEADER_SIZE + algo->rawsz)
		return pw_error_set(err, PW_ECORRUPT, "pack in memory is too small");
	if ((rc = pw_pack_header_decode(data, len, &nr, err)))
		return rc;
	p = calloc(1, sizeof(*p));
	if (!p || !(p->path = strdup("<memory>"))) {
		free(p);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	p->name = p->path;
	p->algo = algo;
	p->id = atomic_fetch_add(&next_pack_id, 1);
	p->data = data;
	p->size = len;
	p->nr = nr;
	*out = p;
	return 0;
}

void pw_pack_release(struct pw_pack *p, uint64_t from, uint64_t to)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uintptr_t base = (uintptr_t)p->data;
	uint64_t a, b;

	if (!p->mapped || to > p->size || from >= to)
		return;
	/* whole pages inside [from, to) of the mapping (which starts on a page) */
	a = (from + page - 1) / page * page;
	b = to / page * page;
	if (a < b)
		madvise((void *)(base + a), (size_t)(b - a), MADV_DONTNEED);
}

void pw_pack_free(struct pw_pack *p)
{
	if (!p)
		return;
	if (p->mapped)
		munmap((void *)p->data, p->size);
	pw_idx_free(p->idx);
	pw_pack__revindex_drop(p);
	free(p->path);
	free(p->idx_path);
	free(p);
}

int pw_pack_find(const struct pw_pack *pack, const uint8_t *raw, uint64_t *offset)
{
	uint32_t pos;

	if (!pack->idx || !pw_idx_find(pack->idx, raw, &pos))
		return 0;
	return pw_idx_nth_offset(pack->idx, pos, offset, NULL) ? 0 : 1;
}

/* Decode the entry header at offset; the entry must lie before the trailer. */
static int decode_at(const struct pw_pack *p, uint64_t offset, struct pw_pack_entry_hdr *h,
                     struct pw_error *err)
{
	size_t end = p->size - p->algo->rawsz;
	int rc;

	if (offset < PW_PACK_HEADER_SIZE || offset >= end)
		return pw_error_set(err, PW_ECORRUPT, "pack %s: offset %llu is outside the pack",
		                    p->path, (unsigned long long)offset);
	rc = pw_pack_entry_hdr_decode(p->data + offset, end - (size_t)offset, p->algo->rawsz,
	                              offset, h, err);
	if (rc == PW_EMORE)
		return pw_error_set(err, PW_ECORRUPT, "pack %s: entry at offset %llu is truncated",
		                    p->path, (unsigned long long)offset);
	if (rc)
		return pw_error_wrap(err, "pack %s", p->path);
	return 0;
}

/* Claims above this are checked against the entry's own compressed length. */
#define PACK_LARGE_CLAIM ((uint64_t)32 << 20)

/* Inflate the zlib stream of the entry at `offset` (header h) into out, which
 * must come out at exactly h->size bytes. */
static int inflate_entry(struct pw_pack *p, uint64_t offset, const struct pw_pack_entry_hdr *h,
                         struct pw_base_cache *cache, struct pw_buf *out, struct pw_error *err)
{
	size_t start = (size_t)offset + h->hdr_len, end = p->size - p->algo->rawsz;
	struct libdeflate_decompressor *dec, *own = NULL;
	size_t in_used = 0, out_used = 0;
	enum libdeflate_result r;
	int rc;

	if (h->size > PW_DELTA_MAX_RESULT || h->size >= SIZE_MAX)
		return pw_error_set(
		        err, PW_ETOOBIG, "pack %s: object at offset %llu is too large (%llu bytes)",
		        p->path, (unsigned long long)offset, (unsigned long long)h->size);
	/* zlib expands at most ~1032:1, so a claim is worth only what the
	 * entry's compressed bytes can produce. A large one is measured against
	 * the entry itself (the reverse index knows where it ends), not against
	 * the rest of the pack. */
	if (h->size > PACK_LARGE_CLAIM && start <= end &&
	    h->size <= (uint64_t)(end - start) * 1032 + 1024) {
		struct pw_error ignored;
		uint64_t next;

		if (!pw_pack_entry_end(p, offset, &next, &ignored) && next > start && next <= end)
			end = (size_t)next;
	}
	if (start > end || h->size > (uint64_t)(end - start) * 1032 + 1024)
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: entry at offset %llu is truncated or claims an "
		                    "impossible size",
		                    p->path, (unsigned long long)offset);
	pw_buf_reset(out);
	if ((rc = pw_buf_grow(out, (size_t)h->size)))
		return pw_error_set(err, rc, "pack %s: cannot allocate %llu bytes", p->path,
		                    (unsigned long long)h->size);
	dec = cache ? pw_base_cache_decompressor(cache) : NULL;
	if (!dec && !(dec = own = libdeflate_alloc_decompressor()))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	r = libdeflate_zlib_decompress_ex(dec, p->data + start, end - start, out->data,
	                                  (size_t)h->size, &in_used, &out_used);
	if (own)
		libdeflate_free_decompressor(own);
	if (r == LIBDEFLATE_INSUFFICIENT_SPACE)
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: entry at offset %llu inflates to more than the "
		                    "%llu bytes its header says",
		                    p->path, (unsigned long long)offset,
		                    (unsigned long long)h->size);
	if (r != LIBDEFLATE_SUCCESS)
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: entry at offset %llu has corrupt zlib data", p->path,
		                    (unsigned long long)offset);
	if (out_used != h->size)
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: entry at offset %llu inflates to %zu bytes, but its "
		                    "header says %llu",
		                    p->path, (unsigned long long)offset, out_used,
		                    (unsigned long long)h->size);
	out->len = out_used;
	out->data[out_used] = '\0';
	return 0;
}

/* The offset of a delta's base. */
static int base_offset(const struct pw_pack *p, uint64_t offset, const struct pw_pack_entry_hdr *h,
                       uint64_t *base, struct pw_error *err)
{
	if (h->type == PW_OBJ_OFS_DELTA) {
		*base = offset - h->base_ofs;
		return 0;
	}
	if (!pw_pack_find(p, h->base_raw, base)) {
		struct pw_oid oid;
		char hex[PW_MAX_HEXSZ + 1];

		pw_oid_from_raw(&oid, h->base_raw, p->algo);
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: delta at offset %llu has its base %s outside the "
		                    "pack",
		                    p->path, (unsigned long long)offset, pw_oid_to_hex(&oid, hex));
	}
	return 0;
}

static void swap_buf(struct pw_buf *a, struct pw_buf *b)
{
	struct pw_buf t = *a;

	*a = *b;
	*b = t;
}

int pw_pack_read(struct pw_pack *p, uint64_t offset, struct pw_base_cache *cache, int *type,
                 struct pw_buf *out, struct pw_error *err)
{
	uint64_t stack_chain[64], *chain = stack_chain, cur = offset;
	size_t n = 0, cap = 64, i;
	struct pw_buf base = PW_BUF_INIT, tmp = PW_BUF_INIT, delta = PW_BUF_INIT;
	struct pw_base_cache_hit hit;
	struct pw_pack_entry_hdr h;
	const uint8_t *bp = NULL;
	size_t blen = 0;
	int btype = 0, rc = 0;

	if (cache && pw_base_cache_get(cache, p->id, offset, &hit)) {
		pw_buf_reset(out);
		if ((rc = pw_buf_add(out, hit.data, hit.len)))
			return pw_error_set(err, rc, "out of memory");
		*type = hit.type;
		return 0;
	}
	for (;;) {
		if ((rc = decode_at(p, cur, &h, err)))
			goto done;
		if (!is_delta(h.type)) {
			if ((rc = inflate_entry(p, cur, &h, cache, n ? &base : out, err)))
				goto done;
			btype = h.type;
			if (!n) {
				*type = btype;
				goto done;
			}
			bp = (const uint8_t *)base.data;
			blen = base.len;
			if (cache && pw_base_cache_put(cache, p->id, cur, btype, &base) &&
			    pw_base_cache_get(cache, p->id, cur, &hit)) {
				bp = hit.data;
				blen = hit.len;
			}
			break;
		}
		if (n == cap) {
			uint64_t *nc;

			if (n >= PW_PACK_MAX_DELTA_DEPTH) {
				rc = pw_error_set(err, PW_ECORRUPT,
				                  "pack %s: delta chain from offset %llu is longer "
				                  "than %d (a cycle?)",
				                  p->path, (unsigned long long)offset,
				                  PW_PACK_MAX_DELTA_DEPTH);
				goto done;
			}
			nc = malloc(cap * 2 * sizeof(*nc));
			if (!nc) {
				rc = pw_error_set(err, PW_ENOMEM, "out of memory");
				goto done;
			}
			memcpy(nc, chain, n * sizeof(*nc));
			if (chain != stack_chain)
				free(chain);
			chain = nc;
			cap *= 2;
		}
		chain[n++] = cur;
		if ((rc = base_offset(p, cur, &h, &cur, err)))
			goto done;
		if (cache && pw_base_cache_get(cache, p->id, cur, &hit)) {
			btype = hit.type;
			bp = hit.data;
			blen = hit.len;
			break;
		}
	}
	/* Apply the deltas from the one nearest the base up to the one asked for. */
	for (i = n; i-- > 0;) {
		if ((rc = decode_at(p, chain[i], &h, err)) ||
		    (rc = inflate_entry(p, chain[i], &h, cache, &delta, err)))
			goto done;
		rc = pw_delta_apply(bp, blen, (const uint8_t *)delta.data, delta.len,
		                    i ? &tmp : out, err);
		if (rc) {
			pw_error_wrap(err, "pack %s: entry at offset %llu", p->path,
			              (unsigned long long)chain[i]);
			goto done;
		}
		if (!i)
			break;
		swap_buf(&base, &tmp);
		bp = (const uint8_t *)base.data;
		blen = base.len;
		if (cache && pw_base_cache_put(cache, p->id, chain[i], btype, &base) &&
		    pw_base_cache_get(cache, p->id, chain[i], &hit)) {
			bp = hit.data;
			blen = hit.len;
		}
	}
	*type = btype;
done:
	if (chain != stack_chain)
		free(chain);
	pw_buf_free(&base);
	pw_buf_free(&tmp);
	pw_buf_free(&delta);
	return rc;
}

/* The result size of the delta at offset: inflate only its first bytes. */
static int delta_result_size(const struct pw_pack *p, uint64_t offset,
                             const struct pw_pack_entry_hdr *h, uint64_t *size,
                             struct pw_error *err)
{
	size_t start = (size_t)offset + h->hdr_len, end = p->size - p->algo->rawsz;
	uint8_t buf[32];
	uint64_t bsize;
	size_t got, hl;
	z_stream s;
	int zr;

	if (start > end)
		return pw_error_set(err, PW_ECORRUPT, "pack %s: entry at offset %llu is truncated",
		                    p->path, (unsigned long long)offset);
	memset(&s, 0, sizeof(s));
	if (inflateInit(&s) != Z_OK)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	s.next_in = (Bytef *)(p->data + start);
	s.avail_in = (uInt)(end - start > (1u << 20) ? (1u << 20) : end - start);
	s.next_out = buf;
	s.avail_out = (uInt)(h->size < sizeof(buf) ? h->size : sizeof(buf));
	zr = inflate(&s, Z_SYNC_FLUSH);
	got = (size_t)(s.next_out - buf);
	inflateEnd(&s);
	if ((zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR) ||
	    pw_delta_sizes(buf, got, &bsize, size, &hl))
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: cannot read the delta header at offset %llu", p->path,
		                    (unsigned long long)offset);
	return 0;
}

/* Down the delta chain from the entry at cur (its header h, for the entry
 * at offset) to its base: the base's type. */
static int chain_type(struct pw_pack *p, uint64_t offset, uint64_t cur, struct pw_pack_entry_hdr *h,
                      int *type, struct pw_error *err)
{
	int rc, depth;

	for (depth = 0; is_delta(h->type); depth++) {
		if (depth >= PW_PACK_MAX_DELTA_DEPTH)
			return pw_error_set(err, PW_ECORRUPT,
			                    "pack %s: delta chain from offset %llu is longer than "
			                    "%d (a cycle?)",
			                    p->path, (unsigned long long)offset,
			                    PW_PACK_MAX_DELTA_DEPTH);
		if ((rc = base_offset(p, cur, h, &cur, err)) || (rc = decode_at(p, cur, h, err)))
			return rc;
	}
	*type = h->type;
	return 0;
}

int pw_pack_read_header(struct pw_pack *p, uint64_t offset, int *type, uint64_t *size,
                        struct pw_error *err)
{
	struct pw_pack_entry_hdr h;
	uint64_t cur = offset;
	int rc;

	if ((rc = decode_at(p, cur, &h, err)))
		return rc;
	if (!is_delta(h.type)) {
		*type = h.type;
		*size = h.size;
		return 0;
	}
	if ((rc = delta_result_size(p, cur, &h, size, err)))
		return rc;
	return chain_type(p, offset, cur, &h, type, err);
}

int pw_pack_entry_type(struct pw_pack *p, uint64_t offset, int *type, struct pw_error *err)
{
	struct pw_pack_entry_hdr h;
	uint64_t cur = offset;
	int rc;

	if ((rc = decode_at(p, cur, &h, err)))
		return rc;
	return chain_type(p, offset, cur, &h, type, err);
}

/* Each digit count of count[0..mask] becomes the number of keys with a
 * smaller digit: where that digit's keys start. */
static void prefix_sums(uint32_t *count, uint32_t mask)
{
	uint32_t i, sum = 0;

	for (i = 0; i <= mask; i++) {
		uint32_t c = count[i];

		count[i] = sum;
		sum += c;
	}
}

/* LSD radix sort of k[0..n) by the bits up to the highest bit
 * of max, in as few passes of at most 16 bits as that takes, through
 * scratch tmp (n entries). -1 when the counts cannot be had. */
static int radix_sort64(uint64_t *k, uint64_t *tmp, uint32_t n, uint64_t max)
{
	unsigned nbits = 0, passes, bits, shift, pass;
	uint64_t *src = k, *dst = tmp, *t;
	uint32_t *count, i, mask;

	while (nbits < 64 && max >> nbits)
		nbits++;
	passes = (nbits + 15) / 16;
	if (!passes)
		return 0;
	bits = (nbits + passes - 1) / passes;
	mask = (1u << bits) - 1;
	if (!(count = malloc(((size_t)mask + 1) * sizeof(*count))))
		return -1;
	for (pass = 0, shift = 0; pass < passes; pass++, shift += bits) {
		memset(count, 0, ((size_t)mask + 1) * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(src[i] >> shift) & mask]++;
		prefix_sums(count, mask);
		for (i = 0; i < n; i++)
			dst[count[(src[i] >> shift) & mask]++] = src[i];
		t = src;
		src = dst;
		dst = t;
	}
	if (src != k)
		memcpy(k, src, (size_t)n * sizeof(*k));
	free(count);
	return 0;
}

static int checked_offset(struct pw_pack *p, uint32_t i, uint64_t *o, struct pw_error *err);

/* Sort the idx positions 0..n) by off[position] (each below 2^nbits) into
 * a or b, least significant digit first, in as few passes of at most 16
 * bits as that takes; the first pass reads the positions in order. The
 * buffer holding the result, or NULL when the counts cannot be had. */
static uint32_t *radix_sort_pos(const uint32_t *off, uint32_t n, unsigned nbits, uint32_t *a,
                                uint32_t *b)
{
	unsigned passes = (nbits + 15) / 16, bits, shift, pass;
	uint32_t *count, *src = NULL, *dst = a, i, mask;

	if (!passes)
		passes = 1;
	bits = (nbits + passes - 1) / passes;
	mask = bits ? (1u << bits) - 1 : 0;
	if (!(count = malloc(((size_t)mask + 1) * sizeof(*count))))
		return NULL;
	for (pass = 0, shift = 0; pass < passes; pass++, shift += bits) {
		memset(count, 0, ((size_t)mask + 1) * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(off[i] >> shift) & mask]++;
		prefix_sums(count, mask);
		for (i = 0; i < n; i++) {
			uint32_t x = src ? src[i] : i;

			dst[count[(off[x] >> shift) & mask]++] = x;
		}
		src = dst;
		dst = dst == a ? b : a;
	}
	free(count);
	return src;
}

/* Below 4 GiB: rev_pos, pack_pos and rev_off32 in one block of 12 bytes an
 * object, which is all the memory the build takes but the digit counts (a
 * fetch served from a big pack pays more for fresh pages than for the
 * sort): the idx's offsets go into the third array, the positions are
 * sorted by them between the first two, the offsets are gathered into the
 * free one and the third becomes pack_pos. */
static int revindex_narrow(struct pw_pack *p, struct pw_error *err)
{
	size_t n4 = ((size_t)p->nr + 1) * sizeof(uint32_t);
	uint32_t *mem, *a, *b, *off, *sorted, *other, i, n = p->nr;
	uint64_t end = p->size - p->algo->rawsz, o;
	unsigned nbits = 0;
	int rc;

	if (!(mem = pw_bigmem_alloc(3 * n4)))
		return pw_error_set(err, PW_ENOMEM,
		                    "out of memory building the reverse index of %s", p->path);
	a = mem;
	b = mem + n + 1;
	off = mem + 2 * ((size_t)n + 1);
	for (i = 0; i < n; i++) {
		if ((rc = checked_offset(p, i, &o, err)))
			goto fail;
		off[i] = (uint32_t)o;
	}
	while (nbits < 32 && end >> nbits)
		nbits++;
	if (!(sorted = radix_sort_pos(off, n, nbits, a, b))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory building the reverse index of %s",
		                  p->path);
		goto fail;
	}
	other = sorted == a ? b : a;
	for (i = 0; i < n; i++) {
		other[i] = off[sorted[i]];
		if (i && other[i] == other[i - 1]) {
			rc = pw_error_set(err, PW_ECORRUPT,
			                  "index %s: two entries share offset %llu", p->idx_path,
			                  (unsigned long long)other[i]);
			goto fail;
		}
	}
	for (i = 0; i < n; i++)
		off[sorted[i]] = i;
	sorted[n] = UINT32_MAX;
	other[n] = (uint32_t)end;
	off[n] = UINT32_MAX;
	p->rev_pos = sorted;
	p->rev_off32 = other;
	p->pack_pos = off;
	p->rev_mem = mem;
	p->rev_mem_len = 3 * n4;
	return 0;
fail:
	pw_bigmem_free(mem, 3 * n4);
	return rc;
}

/* For a pack of 4 GiB or more, whose keys are bare offsets: rev_pos from
 * each idx entry's place among the sorted offsets (off). */
static int rev_pos_by_search(struct pw_pack *p, const uint64_t *off, struct pw_error *err)
{
	uint32_t i;
	uint64_t o;
	int rc;

	for (i = 0; i < p->nr; i++) {
		size_t lo = 0, hi = p->nr;

		if ((rc = pw_idx_nth_offset(p->idx, i, &o, err)))
			return rc;
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (off[mid] <= o)
				lo = mid;
			else
				hi = mid;
		}
		p->rev_pos[lo] = i;
	}
	return 0;
}

/* The offset of idx entry i, checked against the pack. */
static int checked_offset(struct pw_pack *p, uint32_t i, uint64_t *o, struct pw_error *err)
{
	int rc;

	if ((rc = pw_idx_nth_offset(p->idx, i, o, err)))
		return rc;
	if (*o < PW_PACK_HEADER_SIZE || *o >= p->size - p->algo->rawsz)
		return pw_error_set(err, PW_ECORRUPT,
		                    "index %s: entry %u has offset %llu, outside the pack",
		                    p->idx_path, i, (unsigned long long)*o);
	return 0;
}

/* The reverse index: rev_pos (idx positions in pack order), pack_pos (its
 * inverse) and the offsets by pack position, ascending, with the
 * trailer's offset as sentinel, as a server builds one for every pack it
 * serves from. 12 bytes an object below 4 GiB (revindex_narrow). Larger
 * packs sort 64-bit offsets through a second array and find each one's
 * idx position by searching the idx's order (rare; slower). */
int pw_pack_revindex(struct pw_pack *p, struct pw_error *err)
{
	return pw_pack__revindex_build(p, (p->size >> 32) != 0, err);
}

void pw_pack__revindex_drop(struct pw_pack *p)
{
	size_t n = (size_t)p->nr + 1;

	if (p->rev_mem)
		pw_bigmem_free(p->rev_mem, p->rev_mem_len);
	pw_bigmem_free(p->rev_offsets, n * sizeof(*p->rev_offsets));
	p->rev_mem = NULL;
	p->rev_mem_len = 0;
	p->rev_offsets = NULL;
	p->rev_off32 = p->rev_pos = p->pack_pos = NULL;
}

int pw_pack__revindex_build(struct pw_pack *p, int wide, struct pw_error *err)
{
	size_t n8 = ((size_t)p->nr + 1) * sizeof(uint64_t);
	uint64_t *key = NULL, *tmp = NULL;
	uint32_t i, *block = NULL;
	int rc = 0;

	if (p->rev_pos)
		return 0;
	if (!p->idx)
		return pw_error_set(err, PW_EINVAL, "pack %s has no index", p->path);
	if (!wide && !(p->size >> 32))
		return revindex_narrow(p, err);
	key = pw_bigmem_alloc(n8);
	tmp = pw_bigmem_alloc(n8);
	block = pw_bigmem_alloc(n8);
	if (!key || !tmp || !block)
		goto nomem;
	for (i = 0; i < p->nr; i++)
		if ((rc = checked_offset(p, i, &key[i], err)))
			goto fail;
	if (radix_sort64(key, tmp, p->nr, p->size))
		goto nomem;
	pw_bigmem_free(tmp, n8);
	tmp = NULL;
	for (i = 1; i < p->nr; i++)
		if (key[i] == key[i - 1]) {
			rc = pw_error_set(err, PW_ECORRUPT,
			                  "index %s: two entries share offset %llu", p->idx_path,
			                  (unsigned long long)key[i]);
			goto fail;
		}
	p->rev_pos = block;
	p->pack_pos = block + p->nr + 1;
	if ((rc = rev_pos_by_search(p, key, err)))
		goto fail;
	for (i = 0; i < p->nr; i++)
		if (p->rev_pos[i] < p->nr)
			p->pack_pos[p->rev_pos[i]] = i;
	key[p->nr] = p->size - p->algo->rawsz;
	p->rev_pos[p->nr] = UINT32_MAX;
	p->pack_pos[p->nr] = UINT32_MAX;
	p->rev_offsets = key;
	p->rev_mem = block;
	p->rev_mem_len = n8;
	return 0;
nomem:
	rc = pw_error_set(err, PW_ENOMEM, "out of memory building the reverse index of %s",
	                  p->path);
fail:
	pw_bigmem_free(key, n8);
	pw_bigmem_free(tmp, n8);
	pw_bigmem_free(block, n8);
	p->rev_pos = p->pack_pos = NULL;
	return rc;
}

int pw_pack_pos_at_offset(const struct pw_pack *p, uint64_t offset, uint32_t *pos)
{
	uint32_t lo = 0, hi = p->nr;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		uint64_t o = pw_pack_pos_offset(p, mid);

		if (o == offset) {
			*pos = mid;
			return 1;
		}
		if (o < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* The reverse-index position of the entry starting at offset (*i), or an
 * error when no entry starts there. */
static int entry_at(struct pw_pack *p, uint64_t offset, uint32_t *i, struct pw_error *err)
{
	int rc;

	if ((rc = pw_pack_revindex(p, err)))
		return rc;
	if (!pw_pack_pos_at_offset(p, offset, i))
		return pw_error_set(err, PW_EINVAL, "pack %s: no entry starts at offset %llu",
		                    p->path, (unsigned long long)offset);
	return 0;
}

int pw_pack_entry_end(struct pw_pack *p, uint64_t offset, uint64_t *end, struct pw_error *err)
{
	uint32_t i;
	int rc;

	if ((rc = entry_at(p, offset, &i, err)))
		return rc;
	*end = pw_pack_pos_offset(p, i + 1);
	return 0;
}

int pw_pack_entry_raw(struct pw_pack *p, uint64_t offset, struct pw_pack_raw_entry *info,
                      struct pw_error *err)
{
	struct pw_pack_entry_hdr h;
	uint32_t i;
	int rc;

	if ((rc = entry_at(p, offset, &i, err)))
		return rc;
	if ((rc = decode_at(p, offset, &h, err)))
		return rc;
	memset(info, 0, sizeof(*info));
	info->offset = offset;
	info->type = h.type;
	info->size = h.size;
	info->hdr_len = h.hdr_len;
	info->data = p->data + offset;
	info->len = (size_t)(pw_pack_pos_offset(p, i + 1) - offset);
	info->idx_pos = p->rev_pos[i];
	if (h.hdr_len > info->len)
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: entry at offset %llu overlaps the next one", p->path,
		                    (unsigned long long)offset);
	if (h.type == PW_OBJ_OFS_DELTA)
		info->base_offset = offset - h.base_ofs;
	else if (h.type == PW_OBJ_REF_DELTA)
		pw_oid_from_raw(&info->base_oid, h.base_raw, p->algo);
	return 0;
}

int pw_pack_verify_checksum(struct pw_pack *p, struct pw_error *err)
{
	size_t rawsz = p->algo->rawsz;
	struct pw_hash_ctx ctx;
	uint8_t sum[PW_MAX_RAWSZ];

	pw_hash_init_checksum(&ctx, p->algo); /* the trailer: not an object id */
	pw_hash_update(&ctx, p->data, p->size - rawsz);
	pw_hash_final_checksum(&ctx, sum);
	if (memcmp(sum, p->data + p->size - rawsz, rawsz))
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack %s: checksum mismatch: the content does not hash to the "
		                    "trailer (corrupt or truncated pack)",
		                    p->path);
	return 0;
}
