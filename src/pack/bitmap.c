/* Reading .bitmap files: bit sets, EWAH decoding and the file layout. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pack/bitmap.h"
#include "odb/entry.h"
#include "odb/pack.h"
#include "packwire/object.h"

/* ---- bit sets ---------------------------------------------------------------- */

int pw_bitset_init(struct pw_bitset *b, uint32_t nbits)
{
	b->nbits = nbits;
	b->nwords = ((size_t)nbits + 63) / 64;
	/* never NULL, so that empty sets need no special case */
	b->w = calloc(b->nwords ? b->nwords : 1, sizeof(*b->w));
	return b->w ? 0 : PW_ENOMEM;
}

void pw_bitset_free(struct pw_bitset *b)
{
	free(b->w);
	b->w = NULL;
	b->nwords = 0;
	b->nbits = 0;
}

uint32_t pw_bitset_count(const struct pw_bitset *b)
{
	uint32_t n = 0;
	size_t i;

	for (i = 0; i < b->nwords; i++)
		n += (uint32_t)__builtin_popcountll(b->w[i]);
	return n;
}

/* ---- EWAH -------------------------------------------------------------------- */

int pw_ewah_parse(struct pw_ewah *out, const uint8_t *p, size_t avail, size_t *used,
                  struct pw_error *err)
{
	uint64_t len;

	if (avail < 8)
		return pw_error_set(err, PW_ECORRUPT, "bitmap: EWAH header truncated");
	out->bit_size = pw_get_be32(p);
	out->nwords = pw_get_be32(p + 4);
	len = 8 + (uint64_t)out->nwords * 8 + 4;
	if (len > avail)
		return pw_error_set(err, PW_ECORRUPT,
		                    "bitmap: EWAH of %u words runs past the end of the file",
		                    out->nwords);
	out->words = p + 8;
	*used = (size_t)len;
	return 0;
}

int pw_ewah_apply(const struct pw_ewah *e, struct pw_bitset *dst, int xor, struct pw_error *err)
{
	size_t pos = 0; /* destination word */
	uint32_t i = 0;

	while (i < e->nwords) {
		uint64_t rlw = pw_get_be64(e->words + (size_t)i * 8);
		uint64_t run = (rlw >> 1) & 0xffffffffu;
		uint32_t lit = (uint32_t)(rlw >> 33), k;

		i++;
		if (run > dst->nwords - pos)
			goto overflow;
		if (rlw & 1) {
			size_t end = pos + (size_t)run;

			for (; pos < end; pos++)
				dst->w[pos] = xor? ~dst->w[pos] : ~(uint64_t)0;
		} else {
			pos += (size_t)run;
		}
		if (lit > e->nwords - i)
			return pw_error_set(err, PW_ECORRUPT,
			                    "bitmap: EWAH literal run past the end of its words");
		if (lit > dst->nwords - pos)
			goto overflow;
		for (k = 0; k < lit; k++, i++, pos++) {
			uint64_t v = pw_get_be64(e->words + (size_t)i * 8);

			if (xor)
				dst->w[pos] ^= v;
			else
				dst->w[pos] |= v;
		}
	}
	/* bits past the last object */
	if (dst->nbits % 64 && dst->nwords && dst->w[dst->nwords - 1] >> (dst->nbits % 64))
		goto overflow;
	return 0;
overflow:
	return pw_error_set(err, PW_ECORRUPT, "bitmap: EWAH sets bits past the %u objects",
	                    dst->nbits);
}

/* ---- the file ------------------------------------------------------------------ */

/* Entry numbers by the commit's idx position: a bottom-up merge sort (qsort
 * would need the entries in a global to compare). */
static void sort_by_idx(uint32_t *v, uint32_t *tmp, uint32_t n, const struct pw_bitmap_entry *e)
{
	uint32_t width, i;

	for (width = 1; width < n; width *= 2) {
		for (i = 0; i < n; i += 2 * width) {
			uint32_t lo = i, mid = i + width < n ? i + width : n;
			uint32_t hi = i + 2 * width < n ? i + 2 * width : n;
			uint32_t a = lo, b = mid, k = lo;

			while (a < mid && b < hi)
				tmp[k++] = e[v[b]].idx_pos < e[v[a]].idx_pos ? v[b++] : v[a++];
			while (a < mid)
				tmp[k++] = v[a++];
			while (b < hi)
				tmp[k++] = v[b++];
		}
		memcpy(v, tmp, (size_t)n * sizeof(*v));
	}
}

void pw_bitmap_free(struct pw_bitmap *bm)
{
	int i;

	if (!bm)
		return;
	for (i = 0; i < 4; i++)
		pw_bitset_free(&bm->types[i]);
	free(bm->entries);
	free(bm->by_idx);
	if (bm->mapped)
		munmap((void *)bm->data, bm->size);
	free(bm);
}

int pw_bitmap_parse(struct pw_bitmap **out, const uint8_t *data, size_t size,
                    const struct pw_hash_algo *algo, uint32_t nr_objects,
                    const uint8_t *pack_checksum, struct pw_error *err)
{
	struct pw_bitmap *bm;
	size_t rawsz = algo->rawsz, pos, end, used, i;
	uint64_t tail;
	uint32_t *tmp = NULL;
	int rc, t;

	*out = NULL;
	if (size < 12 + rawsz || memcmp(data, "BITM", 4))
		return pw_error_set(err, PW_ECORRUPT, "bitmap: not a bitmap file");
	if (pw_get_be32(data + 4) >> 16 != 1)
		return pw_error_set(err, PW_EUNSUPPORTED, "bitmap: unsupported version %u",
		                    pw_get_be32(data + 4) >> 16);
	if (!(bm = calloc(1, sizeof(*bm))))
		return PW_ENOMEM;
	bm->algo = algo;
	bm->nr_objects = nr_objects;
	bm->data = data;
	bm->size = size;
	bm->flags = (uint16_t)(pw_get_be32(data + 4) & 0xffff);
	bm->nr_entries = pw_get_be32(data + 8);
	if (!(bm->flags & PW_BITMAP_OPT_FULL_DAG) ||
	    (bm->flags &
	     ~(PW_BITMAP_OPT_FULL_DAG | PW_BITMAP_OPT_HASH_CACHE | PW_BITMAP_OPT_LOOKUP_TABLE))) {
		rc = pw_error_set(err, PW_EUNSUPPORTED, "bitmap: unsupported flags 0x%x",
		                  (unsigned)bm->flags);
		goto fail;
	}
	if (pack_checksum && memcmp(data + 12, pack_checksum, rawsz)) {
		rc = pw_error_set(err, PW_EMISMATCH, "bitmap: written for another pack");
		goto fail;
	}

	/* what follows the entries, from the end: checksum, lookup table, hashes */
	tail = rawsz;
	if (bm->flags & PW_BITMAP_OPT_LOOKUP_TABLE)
		tail += (uint64_t)bm->nr_entries * 16;
	if (bm->flags & PW_BITMAP_OPT_HASH_CACHE)
		tail += (uint64_t)nr_objects * 4;
	if (tail > size - 12 - rawsz) {
		rc = pw_error_set(err, PW_ECORRUPT, "bitmap: file too short for its extensions");
		goto fail;
	}
	end = size - (size_t)tail;
	if (bm->flags & PW_BITMAP_OPT_HASH_CACHE)
		bm->hashes = data + end;

	pos = 12 + rawsz;
	for (t = 0; t < 4; t++) {
		struct pw_ewah e;

		if ((rc = pw_ewah_parse(&e, data + pos, end - pos, &used, err)))
			goto fail;
		pos += used;
		if ((rc = pw_bitset_init(&bm->types[t], nr_objects)))
			goto fail;
		if ((rc = pw_ewah_apply(&e, &bm->types[t], 0, err)))
			goto fail;
	}
	/* every object has exactly one type */
	for (i = 0; i < bm->types[0].nwords; i++) {
		uint64_t a = bm->types[0].w[i], b = bm->types[1].w[i], c = bm->types[2].w[i],
		         d = bm->types[3].w[i], all = ~(uint64_t)0;

		if (i == bm->types[0].nwords - 1 && nr_objects % 64)
			all = ((uint64_t)1 << (nr_objects % 64)) - 1;
		if ((a & b) | (a & c) | (a & d) | (b & c) | (b & d) | (c & d) ||
		    (a | b | c | d) != all) {
			rc = pw_error_set(err, PW_ECORRUPT,
			                  "bitmap: type bitmaps are inconsistent");
			goto fail;
		}
	}

	if (bm->nr_entries > (end - pos) / 14) {
		rc = pw_error_set(err, PW_ECORRUPT, "bitmap: %u entries cannot fit",
		                  bm->nr_entries);
		goto fail;
	}
	bm->entries = calloc(bm->nr_entries ? bm->nr_entries : 1, sizeof(*bm->entries));
	bm->by_idx = calloc(bm->nr_entries ? bm->nr_entries : 1, sizeof(*bm->by_idx));
	tmp = calloc(bm->nr_entries ? bm->nr_entries : 1, sizeof(*tmp));
	if (!bm->entries || !bm->by_idx || !tmp) {
		rc = PW_ENOMEM;
		goto fail;
	}
	for (i = 0; i < bm->nr_entries; i++) {
		struct pw_bitmap_entry *e = &bm->entries[i];

		if (end - pos < 6) {
			rc = pw_error_set(err, PW_ECORRUPT, "bitmap: entry %zu truncated", i);
			goto fail;
		}
		e->idx_pos = pw_get_be32(data + pos);
		e->xor = data[pos + 4];
		e->flags = data[pos + 5];
		pos += 6;
		if (e->idx_pos >= nr_objects || e->xor > PW_BITMAP_MAX_XOR || e->xor > i) {
			rc = pw_error_set(err, PW_ECORRUPT,
			                  "bitmap: entry %zu: bad object position or XOR offset",
			                  i);
			goto fail;
		}
		if ((rc = pw_ewah_parse(&e->ewah, data + pos, end - pos, &used, err)))
			goto fail;
		pos += used;
		bm->by_idx[i] = (uint32_t)i;
	}
	sort_by_idx(bm->by_idx, tmp, bm->nr_entries, bm->entries);
	free(tmp);
	*out = bm;
	return 0;
fail:
	free(tmp);
	bm->mapped = 0; /* the caller owns data */
	pw_bitmap_free(bm);
	return rc == PW_ENOMEM ? pw_error_set(err, rc, "bitmap: out of memory") : rc;
}

int pw_bitmap_open(struct pw_bitmap **out, struct pw_pack *pack, struct pw_error *err)
{
	size_t len = strlen(pack->path);
	char *path;
	struct stat st;
	void *map;
	int fd, rc;

	*out = NULL;
	if (len < 5 || strcmp(pack->path + len - 5, ".pack") || !pack->idx)
		return pw_error_set(err, PW_ENOTFOUND, "bitmap: %s is not a pack file", pack->path);
	if (!(path = malloc(len + 3)))
		return pw_error_set(err, PW_ENOMEM, "bitmap: out of memory");
	memcpy(path, pack->path, len - 5);
	strcpy(path + len - 5, ".bitmap");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = errno == ENOENT ? PW_ENOTFOUND : PW_EIO;
		pw_error_set(err, rc, "bitmap %s: %s", path, strerror(errno));
		free(path);
		return rc;
	}
	if (fstat(fd, &st) || st.st_size < 1 || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		rc = pw_error_set(err, PW_ECORRUPT, "bitmap %s: empty or unreadable", path);
		free(path);
		return rc;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		rc = pw_error_set(err, PW_EIO, "bitmap %s: mmap: %s", path, strerror(errno));
		free(path);
		return rc;
	}
	rc = pw_bitmap_parse(out, map, (size_t)st.st_size, pack->algo, pack->nr,
	                     pack->idx->pack_checksum, err);
	if (rc) {
		munmap(map, (size_t)st.st_size);
		pw_error_wrap(err, "%s", path);
	} else {
		(*out)->mapped = 1;
	}
	free(path);
	return rc;
}

int pw_bitmap_find(const struct pw_bitmap *bm, uint32_t idx_pos, uint32_t *entry)
{
	uint32_t lo = 0, hi = bm->nr_entries;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2, v = bm->entries[bm->by_idx[mid]].idx_pos;

		if (v == idx_pos) {
			*entry = bm->by_idx[mid];
			return 1;
		}
		if (v < idx_pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int pw_bitmap_get(const struct pw_bitmap *bm, uint32_t entry, struct pw_bitset *dst,
                  struct pw_bitset *tmp, struct pw_error *err)
{
	size_t i;
	int rc;

	memset(tmp->w, 0, tmp->nwords * sizeof(*tmp->w));
	/* bitmap(n) = ewah(n) ^ bitmap(n - xor(n)): XOR the whole chain */
	for (;;) {
		const struct pw_bitmap_entry *e = &bm->entries[entry];

		if ((rc = pw_ewah_apply(&e->ewah, tmp, 1, err)))
			return rc;
		if (!e->xor)
			break;
		entry -= e->xor ; /* xor <= entry was checked when parsing */
	}
	for (i = 0; i < dst->nwords; i++)
		dst->w[i] |= tmp->w[i];
	return 0;
}

int pw_bitmap_type(const struct pw_bitmap *bm, uint32_t pos)
{
	static const int types[4] = {PW_OBJ_COMMIT, PW_OBJ_TREE, PW_OBJ_BLOB, PW_OBJ_TAG};
	int t;

	for (t = 0; t < 4; t++)
		if (pw_bitset_get(&bm->types[t], pos))
			return types[t];
	return PW_OBJ_NONE;
}
