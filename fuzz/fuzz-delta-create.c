/* Fuzz delta creation: the first two bytes split the rest into base and
 * target (and pick a size bound); create + apply must give the target back. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "pack/delta-create.h"
#include "odb/delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_buf delta = PW_BUF_INIT, out = PW_BUF_INIT;
	struct pw_error err;
	size_t split, max_size;
	int rc;

	if (size < 2)
		return 0;
	split = (size_t)data[0] * (size - 2) / 255;
	max_size = data[1] & 1 ? (size_t)data[1] * 4 : 0;
	data += 2;
	size -= 2;
	rc = pw_delta_create(data, split, data + split, size - split, max_size, &delta);
	if (rc == 0) {
		if (max_size && delta.len > max_size)
			__builtin_trap();
		if (pw_delta_apply(data, split, (const uint8_t *)delta.data, delta.len, &out, &err))
			__builtin_trap();
		if (out.len != size - split || memcmp(out.data, data + split, out.len))
			__builtin_trap();
	} else if (rc != PW_ETOOBIG || !max_size) {
		__builtin_trap();
	}
	pw_buf_free(&delta);
	pw_buf_free(&out);
	return 0;
}
