#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odb/entry.h"
#include "odb/idx.h"

uint64_t pw_idx_expected_size(int version, size_t rawsz, uint64_t nr, uint64_t nr_large)
{
	if (rawsz == 0 || rawsz > PW_MAX_RAWSZ || nr > UINT32_MAX || nr_large > nr)
		return 0;
	if (version == 1) {
		if (nr_large)
			return 0;
		return PW_IDX_FANOUT_SIZE + nr * (4 + rawsz) + 2 * rawsz;
	}
	if (version == 2)
		return 8 + PW_IDX_FANOUT_SIZE + nr * (rawsz + 4 + 4) + nr_large * 8 + 2 * rawsz;
	return 0;
}

static int parse(struct pw_idx *idx, struct pw_error *err)
{
	const uint8_t *p = idx->data;
	size_t rawsz = idx->algo->rawsz, size = idx->size;
	uint64_t min;
	uint32_t prev = 0;
	int i;

	if (size >= 8 && pw_get_be32(p) == PW_IDX_V2_MAGIC) {
		uint32_t v = pw_get_be32(p + 4);

		if (v != 2)
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "index file %s is version %u; only versions 1 and 2 "
			                    "are supported",
			                    idx->path, v);
		idx->version = 2;
		idx->fanout = p + 8;
	} else {
		idx->version = 1;
		idx->fanout = p;
	}
	if (size < (size_t)(idx->fanout - p) + PW_IDX_FANOUT_SIZE)
		return pw_error_set(err, PW_ECORRUPT,
		                    "index file %s is too small (%zu bytes; truncated?)", idx->path,
		                    size);
	for (i = 0; i < 256; i++) {
		uint32_t n = pw_get_be32(idx->fanout + 4 * i);

		if (n < prev)
			return pw_error_set(err, PW_ECORRUPT,
			                    "index file %s has a non-monotonic fan-out table "
			                    "(entry %d)",
			                    idx->path, i);
		prev = n;
	}
	idx->nr = prev;
	min = pw_idx_expected_size(idx->version, rawsz, idx->nr, 0);
	if (size < min)
		return pw_error_set(err, PW_ECORRUPT,
		                    "index file %s is truncated: %zu bytes, but %u objects of "
		                    "%s need %llu",
		                    idx->path, size, idx->nr, idx->algo->name,
		                    (unsigned long long)min);
	if (idx->version == 1) {
		if (size != min)
			return pw_error_set(err, PW_ECORRUPT,
			                    "index file %s has %llu unexpected trailing bytes",
			                    idx->path, (unsigned long long)(size - min));
		idx->stride = 4 + rawsz;
		idx->names = idx->fanout + PW_IDX_FANOUT_SIZE + 4;
		idx->pack_checksum = p + size - 2 * rawsz;
	} else {
		uint64_t extra = size - min;

		if (extra % 8 || extra / 8 > idx->nr)
			return pw_error_set(
			        err, PW_ECORRUPT,
			        "index file %s has a bad size (%zu bytes for %u objects "
			        "of %s)",
			        idx->path, size, idx->nr, idx->algo->name);
		idx->nr_large = (uint32_t)(extra / 8);
		idx->stride = rawsz;
		idx->names = idx->fanout + PW_IDX_FANOUT_SIZE;
		idx->crcs = idx->names + (size_t)idx->nr * rawsz;
		idx->offsets = idx->crcs + (size_t)idx->nr * 4;
		idx->large = idx->offsets + (size_t)idx->nr * 4;
		idx->pack_checksum = idx->large + (size_t)idx->nr_large * 8;
		/* The 64-bit table must be exactly as long as the escapes need: a
		 * file cut by a multiple of 8 bytes would otherwise pass. */
		{
			uint32_t n, need = 0;

			for (n = 0; n < idx->nr; n++) {
				uint32_t v = pw_get_be32(idx->offsets + (size_t)n * 4);

				if ((v & 0x80000000u) && (v & 0x7fffffffu) >= need)
					need = (v & 0x7fffffffu) + 1;
			}
			if (need != idx->nr_large)
				return pw_error_set(err, PW_ECORRUPT,
				                    "index file %s: its 64-bit offset table has "
				                    "%u entries but the offsets use %u "
				                    "(truncated?)",
				                    idx->path, idx->nr_large, need);
		}
	}
	idx->idx_checksum = idx->pack_checksum + rawsz;
	return 0;
}

static int make(struct pw_idx **out, const char *name, const struct pw_hash_algo *algo,
                struct pw_error *err)
{
	struct pw_idx *idx = calloc(1, sizeof(*idx));

	*out = NULL;
	if (!idx || !(idx->path = strdup(name))) {
		free(idx);
		return pw_error_set(err, PW_ENOMEM, "out of memory opening %s", name);
	}
	idx->algo = algo;
	*out = idx;
	return 0;
}

int pw_idx_open_memory(struct pw_idx **out, const void *data, size_t len, const char *name,
                       const struct pw_hash_algo *algo, struct pw_error *err)
{
	struct pw_idx *idx;
	int rc = make(&idx, name ? name : "<memory>", algo, err);

	*out = NULL;
	if (rc)
		return rc;
	idx->data = data;
	idx->size = len;
	if ((rc = parse(idx, err))) {
		pw_idx_free(idx);
		return rc;
	}
	*out = idx;
	return 0;
}

int pw_idx_open(struct pw_idx **out, const char *path, const struct pw_hash_algo *algo,
                struct pw_error *err)
{
	struct pw_idx *idx;
	struct stat st;
	int fd, rc;
	void *map;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return pw_error_set(err, PW_ENOTFOUND, "index file %s does not exist",
			                    path);
		return pw_error_set(err, PW_EIO, "cannot open index file %s: %s", path,
		                    strerror(errno));
	}
	if (fstat(fd, &st)) {
		rc = pw_error_set(err, PW_EIO, "cannot stat %s: %s", path, strerror(errno));
		close(fd);
		return rc;
	}
	if ((uint64_t)st.st_size < PW_IDX_FANOUT_SIZE || (uint64_t)st.st_size > SIZE_MAX) {
		close(fd);
		return pw_error_set(err, PW_ECORRUPT,
		                    "index file %s is too small (%lld bytes; truncated?)", path,
		                    (long long)st.st_size);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return pw_error_set(err, PW_EIO, "cannot map %s: %s", path, strerror(errno));
	if ((rc = make(&idx, path, algo, err))) {
		munmap(map, (size_t)st.st_size);
		return rc;
	}
	idx->data = map;
	idx->size = (size_t)st.st_size;
	idx->mapped = 1;
	if ((rc = parse(idx, err))) {
		pw_idx_free(idx);
		return rc;
	}
	*out = idx;
	return 0;
}

void pw_idx_free(struct pw_idx *idx)
{
	if (!idx)
		return;
	if (idx->mapped)
		munmap((void *)idx->data, idx->size);
	free(idx->path);
	free(idx);
}

int pw_idx_find(const struct pw_idx *idx, const uint8_t *raw, uint32_t *pos)
{
	size_t rawsz = idx->algo->rawsz, stride = idx->stride;
	uint32_t lo = raw[0] ? pw_get_be32(idx->fanout + 4 * (raw[0] - 1)) : 0;
	uint32_t hi = pw_get_be32(idx->fanout + 4 * raw[0]);

	/* Most steps are decided by the first eight bytes, compared as one
	 * big-endian number; memcmp only settles ties. */
	uint64_t key = pw_get_be64(raw);

	/* The fan-out only ever grows and ends at nr (checked at open). Ids
	 * are uniform, so the next three bytes say about where in the bucket
	 * this one sits (within a few sqrt(n) entries): narrow [lo, hi) to a
	 * window around there, widening it until it brackets the key, so the
	 * binary search below touches a few neighbouring cache lines instead of
	 * ten scattered ones. */
	if (hi - lo > 64) {
		uint32_t n = hi - lo, span = 16;
		uint32_t guess = lo + (uint32_t)(((uint64_t)((key >> 32) & 0xffffff) * n) >> 24);

		for (;;) {
			uint32_t a = guess - lo > span ? guess - span : lo;
			uint32_t b = hi - guess > span ? guess + span : hi;

			/* [a, b) holds the key when the entry before a is smaller
			 * and the one at b is not */
			if ((a == lo || pw_get_be64(idx->names + (size_t)(a - 1) * stride) < key) &&
			    (b == hi || pw_get_be64(idx->names + (size_t)b * stride) > key)) {
				lo = a;
				hi = b;
				break;
			}
			if (a == lo && b == hi)
				break;
			span *= 4;
		}
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		const uint8_t *name = idx->names + (size_t)mid * stride;
		uint64_t v = pw_get_be64(name);
		int c = v < key ? -1 : v > key ? 1 : memcmp(name + 8, raw + 8, rawsz - 8);

		if (!c) {
			*pos = mid;
			return 1;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

void pw_idx_nth_oid(const struct pw_idx *idx, uint32_t n, struct pw_oid *out)
{
	pw_oid_from_raw(out, pw_idx_nth_raw(idx, n), idx->algo);
}

int pw_idx_nth_offset(const struct pw_idx *idx, uint32_t n, uint64_t *offset, struct pw_error *err)
{
	uint32_t v;

	if (idx->version == 1) {
		*offset = pw_get_be32(idx->names + (size_t)n * idx->stride - 4);
		return 0;
	}
	v = pw_get_be32(idx->offsets + (size_t)n * 4);
	if (!(v & 0x80000000u)) {
		*offset = v;
		return 0;
	}
	v &= 0x7fffffffu;
	if (v >= idx->nr_large)
		return pw_error_set(err, PW_ECORRUPT,
		                    "index file %s: entry %u points at 64-bit offset %u, but "
		                    "the table has %u",
		                    idx->path, n, v, idx->nr_large);
	*offset = pw_get_be64(idx->large + (size_t)v * 8);
	return 0;
}

uint32_t pw_idx_nth_crc(const struct pw_idx *idx, uint32_t n, int *has_crc)
{
	if (idx->version == 1) {
		if (has_crc)
			*has_crc = 0;
		return 0;
	}
	if (has_crc)
		*has_crc = 1;
	return pw_get_be32(idx->crcs + (size_t)n * 4);
}

uint32_t pw_idx_count(const struct pw_idx *idx)
{
	return idx->nr;
}

int pw_idx_version(const struct pw_idx *idx)
{
	return idx->version;
}

const struct pw_hash_algo *pw_idx_algo(const struct pw_idx *idx)
{
	return idx->algo;
}
