/* Fuzz the parser of the stored view's compat-view/current file
 * (pw_compat_view_parse_current). Byte 0 chooses the algorithm (bit 0:
 * sha256), the rest is the file. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "packwire/compat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char hex[PW_MAX_HEXSZ + 1], gen[PW_COMPAT_VIEW_GEN_LEN + 1];
	struct pw_error err;
	const struct pw_hash_algo *a;

	if (!size)
		return 0;
	a = data[0] & 1 ? &pw_hash_sha256 : &pw_hash_sha1;
	memset(&err, 0, sizeof(err));
	if (!pw_compat_view_parse_current((const char *)data + 1, size - 1, a, hex, gen, &err) &&
	    (strlen(hex) != a->hexsz || strlen(gen) != PW_COMPAT_VIEW_GEN_LEN || strchr(gen, '/')))
		__builtin_trap();
	return 0;
}
