/* Fuzz delta application: the first byte splits the input into base and delta. */
#include <stdint.h>
#include <stddef.h>

#include "odb/delta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err;
	size_t split;

	if (!size)
		return 0;
	split = data[0];
	if (split > size - 1)
		split = size - 1;
	pw_delta_apply(data + 1, split, data + 1 + split, size - 1 - split, &out, &err);
	pw_buf_free(&out);
	return 0;
}
