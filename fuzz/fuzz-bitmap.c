/* Fuzz the .bitmap reader: the first byte picks the algorithm (odd =
 * SHA-256), the next two the pack's object count (big-endian), the rest is
 * the file. Every stored bitmap is resolved, which decodes its EWAH chain. */
#include <stddef.h>
#include <stdint.h>

#include "pack/bitmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_bitmap *bm;
	struct pw_bitset dst = {0}, tmp = {0};
	struct pw_error err;
	uint32_t nr, i, e;

	if (size < 3)
		return 0;
	algo = data[0] & 1 ? &pw_hash_sha256 : &pw_hash_sha1;
	nr = (uint32_t)data[1] << 8 | data[2];
	if (pw_bitmap_parse(&bm, data + 3, size - 3, algo, nr, NULL, &err))
		return 0;
	if (!pw_bitset_init(&dst, nr) && !pw_bitset_init(&tmp, nr)) {
		for (i = 0; i < bm->nr_entries; i++) {
			(void)pw_bitmap_get(bm, i, &dst, &tmp, &err);
			(void)pw_bitmap_find(bm, bm->entries[i].idx_pos, &e);
		}
		for (i = 0; i < nr; i++)
			(void)pw_bitmap_type(bm, i);
		(void)pw_bitset_count(&dst);
	}
	pw_bitset_free(&dst);
	pw_bitset_free(&tmp);
	pw_bitmap_free(bm);
	return 0;
}
