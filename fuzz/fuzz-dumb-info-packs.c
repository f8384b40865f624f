/* Fuzz the dumb HTTP client's reading of objects/info/packs and of the
 * alternates files: the first byte picks the file (bit 0: alternates) and
 * the algorithm (bit 1: SHA-256), the rest is the file. Pack names must come
 * out as "pack-<hex>.pack" of the algorithm's length, alternates as http(s)
 * URLs without "." or ".." segments. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "client/dumb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_error err;
	char **v = NULL;
	size_t nr = 0, skipped = 0, i;

	if (!size)
		return 0;
	algo = data[0] & 2 ? &pw_hash_sha256 : &pw_hash_sha1;
	if (data[0] & 1) {
		if (pw_dumb_parse_alternates(data + 1, size - 1, "http://h:80/a/r.git/objects", &v,
		                             &nr, &skipped, &err))
			return 0;
		for (i = 0; i < nr; i++)
			if ((strncmp(v[i], "http://", 7) && strncmp(v[i], "https://", 8)) ||
			    strstr(strstr(v[i], "://") + 3, "/../") ||
			    strstr(strstr(v[i], "://") + 3, "/./"))
				__builtin_trap();
	} else {
		if (pw_dumb_parse_packs(data + 1, size - 1, algo, &v, &nr, &err))
			return 0;
		for (i = 0; i < nr; i++)
			if (strlen(v[i]) != algo->hexsz + 10 || strchr(v[i], '/'))
				__builtin_trap();
	}
	pw_dumb_free_names(v, nr);
	return 0;
}
