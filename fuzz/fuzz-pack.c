/* Fuzz the index-pack parser and delta resolver on a pack in memory: the
 * first byte picks the algorithm (odd = sha256), the rest is the pack. */
#include <stddef.h>
#include <stdint.h>

#include "pack/index-pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_ipack_opts opts = {0};
	struct pw_ipack *ip;
	struct pw_error err;
	uint32_t i;

	if (!size)
		return 0;
	opts.algo = data[0] & 1 ? &pw_hash_sha256 : &pw_hash_sha1;
	opts.threads = 1;
	opts.check_objects = (data[0] & 2) != 0;
	opts.check_links = (data[0] & 4) != 0;
	opts.cache_limit = data[0] & 8 ? 1 : 0; /* drop and rebuild bases */
	opts.report_links = (data[0] & 16) != 0;
	if (pw_ipack_new(&ip, &opts, &err))
		return 0;
	if (!pw_ipack_parse_mem(ip, data + 1, size - 1) && !pw_ipack_resolve(ip)) {
		(void)pw_ipack_self_contained(ip);
		for (i = 0; i < pw_ipack_nr_objects(ip); i++) {
			struct pw_ipack_info info;

			pw_ipack_info(ip, i, &info);
		}
	}
	pw_ipack_free(ip);
	return 0;
}
