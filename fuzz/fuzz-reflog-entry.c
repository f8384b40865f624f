/* Fuzz pw_reflog_parse_entry and pw_reflog_foreach_reverse's line walk
 * (push --force-if-includes reads reflogs): byte 0 bit 0 chooses sha1 rather
 * than sha256; the rest is split at newlines and each line parsed. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "packwire/hash.h"
#include "refs/reflog.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	const char *p, *end;
	struct pw_reflog_entry e;

	if (!size)
		return 0;
	algo = data[0] & 1 ? &pw_hash_sha1 : &pw_hash_sha256;
	p = (const char *)data + 1;
	end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (!pw_reflog_parse_entry(algo, p, len, &e) &&
		    (e.old_oid.algo != algo->id || e.timestamp < 0))
			__builtin_trap();
		p += len + (nl ? 1 : 0);
	}
	return 0;
}
