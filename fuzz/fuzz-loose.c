/* Fuzz the loose object decoder (zlib + strict header checks): the first
 * byte chooses a header-only or a full decode, the rest is the file. */
#include <stddef.h>
#include <stdint.h>

#include "odb/loose.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err;
	uint64_t osize;
	int type;

	if (!size)
		return 0;
	pw_buf_init(&out, (size_t)1 << 26);
	pw_loose_decode(data + 1, size - 1, &type, &osize, data[0] & 1 ? NULL : &out, "fuzz", &err);
	pw_buf_free(&out);
	return 0;
}
