/* Fuzz the dumb HTTP client's reading of info/refs and HEAD: the first byte
 * picks the file (bit 0: HEAD) and, for HEAD, the algorithm it is read with
 * (bits 1-2: guessed, SHA-1, SHA-256); the rest is the file. Every id parsed
 * must be of the algorithm found or given. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "client/dumb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo = NULL;
	struct pw_error err;
	size_t i;

	if (!size)
		return 0;
	if (data[0] & 1) {
		const struct pw_hash_algo *given = (data[0] & 6) == 2   ? &pw_hash_sha1
		                                   : (data[0] & 6) == 4 ? &pw_hash_sha256
		                                                        : NULL;
		struct pw_oid oid;
		char *symref = NULL;

		if (!pw_dumb_parse_head(data + 1, size - 1, given, &symref, &oid, &err) &&
		    !symref && given && pw_oid_algo(&oid) != given)
			__builtin_trap();
		free(symref);
		return 0;
	}
	{
		struct pw_adv a;

		pw_adv_init(&a);
		if (!pw_dumb_parse_info_refs(data + 1, size - 1, &a, &algo, &err))
			for (i = 0; i < a.nr; i++)
				if (pw_oid_algo(&a.refs[i].oid) != algo)
					__builtin_trap();
		pw_adv_free(&a);
	}
	return 0;
}
