/* Fuzz pack entry reading: header decode, inflate, OFS_DELTA chains, delta
 * application and the base cache. The first byte picks the algorithm (odd =
 * SHA-256), the rest is a whole .pack; objects are read at each of the first
 * 4096 offsets, whether or not an entry starts there. */
#include <stddef.h>
#include <stdint.h>

#include "odb/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_base_cache *cache = NULL;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_pack *pack;
	struct pw_error err;
	uint64_t off, osize;
	int type;

	if (!size)
		return 0;
	algo = data[0] & 1 ? &pw_hash_sha256 : &pw_hash_sha1;
	if (pw_pack_open_memory(&pack, data + 1, size - 1, algo, &err))
		return 0;
	if (pw_base_cache_new(&cache, 1 << 20)) {
		pw_pack_free(pack);
		return 0;
	}
	pw_buf_init(&out, (size_t)1 << 24);
	for (off = 12; off < pack->size && off < 4096; off++) {
		pw_pack_read(pack, off, cache, &type, &out, &err);
		pw_pack_read_header(pack, off, &type, &osize, &err);
	}
	pw_pack_verify_checksum(pack, &err);
	pw_buf_free(&out);
	pw_base_cache_free(cache);
	pw_pack_free(pack);
	return 0;
}
