/* Fuzz the smart-HTTP client's reading of an info/refs body (the "# service="
 * preamble and its flush, or a v2 advertisement): the first byte picks the
 * service, the rest is the body. What is skipped lies inside the input. */
#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "transport/transport-priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *service;
	struct pw_error err;
	size_t skip = 0;
	int version = 0;

	if (!size)
		return 0;
	service = (data[0] & 1) ? "git-receive-pack" : "git-upload-pack";
	data++;
	size--;
	if (!pw_http__discovery(data, size, service, &skip, &version, &err) &&
	    (skip > size || version < 0 || version > 2))
		__builtin_trap();
	return 0;
}
