/* Fuzz the smart-HTTP client's framing check of a v2 answer as it streams:
 * the first byte says where the body is split in two pieces, the rest is
 * the body. Whatever the bytes, a partial length stays under 4 bytes and
 * the end's verdict agrees with what was left. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "packwire/error.h"
#include "transport/transport-priv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_http_pktcheck st;
	struct pw_error err;
	size_t cut;
	int rc;

	if (!size)
		return 0;
	cut = data[0];
	data++;
	size--;
	if (cut > size)
		cut = size;
	memset(&st, 0, sizeof(st));
	rc = pw_http__pktcheck_feed(&st, data, cut, &err);
	if (!rc)
		rc = pw_http__pktcheck_feed(&st, data + cut, size - cut, &err);
	if (st.len_filled > 3 || st.remaining > 65531)
		__builtin_trap();
	if (!rc && (pw_http__pktcheck_end(&st, &err) != 0) != (st.len_filled || st.remaining))
		__builtin_trap();
	return 0;
}
