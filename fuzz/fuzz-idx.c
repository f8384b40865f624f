/* Fuzz the pack index reader: the first byte picks the algorithm (odd =
 * SHA-256), the rest is the idx file. Every entry is read and looked up. */
#include <stddef.h>
#include <stdint.h>

#include "odb/idx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_idx *idx;
	struct pw_error err;
	uint32_t n, pos;

	if (!size)
		return 0;
	algo = data[0] & 1 ? &pw_hash_sha256 : &pw_hash_sha1;
	if (pw_idx_open_memory(&idx, data + 1, size - 1, "fuzz.idx", algo, &err))
		return 0;
	for (n = 0; n < idx->nr; n++) {
		struct pw_oid oid;
		uint64_t off;
		int has_crc;

		pw_idx_nth_oid(idx, n, &oid);
		(void)pw_idx_nth_offset(idx, n, &off, &err);
		(void)pw_idx_nth_crc(idx, n, &has_crc);
		(void)pw_idx_find(idx, oid.id, &pos);
	}
	pw_idx_free(idx);
	return 0;
}
