/* Fuzz the bundle header parser: the first byte picks how the input is fed
 * (odd: whole; even: growing prefixes, as a pipe delivers it) and the rest is
 * the bundle. A header that parses is written back and must parse again to
 * the same refs (v2 headers of SHA-256 ids are refused by the writer). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_bundle_header h, h2;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err;
	size_t used = 0, used2 = 0, n;
	int rc = PW_EMORE;

	if (!size)
		return 0;
	pw_bundle_header_init(&h);
	pw_bundle_header_init(&h2);
	if (data[0] & 1) {
		rc = pw_bundle_header_parse(&h, data + 1, size - 1, &used, &err);
	} else {
		for (n = 0; n < size && rc == PW_EMORE; n += 1 + n / 4)
			rc = pw_bundle_header_parse(&h, data + 1, n, &used, &err);
		if (rc == PW_EMORE)
			rc = pw_bundle_header_parse(&h, data + 1, size - 1, &used, &err);
	}
	if (!rc && used > size - 1)
		abort();
	if (!rc && !pw_bundle_header_write(&h, &out, &err)) {
		if (pw_bundle_header_parse(&h2, (const uint8_t *)out.data, out.len, &used2, &err) ||
		    used2 != out.len || h2.nr_refs != h.nr_refs || h2.nr_prereqs != h.nr_prereqs ||
		    h2.algo != h.algo)
			abort();
	}
	pw_buf_free(&out);
	pw_bundle_header_free(&h);
	pw_bundle_header_free(&h2);
	return 0;
}
