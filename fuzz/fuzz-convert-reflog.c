/* Fuzz pw_convert_reflog (packwire convert's reader of reflog files): byte 0
 * bit 0 chooses sha1 rather than sha256 as the source algorithm; the rest
 * is the reflog. Ids whose first byte is 0xff are unknown to the look-up
 * (their lines are dropped). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "packwire/convert.h"

/* The other algorithm's id keeps the first 20 bytes (enough to tell ids
 * apart here); ids starting with 0xff are unknown. */
static int any_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	(void)data;
	if (from->id[0] == 0xff)
		return PW_ENOTFOUND;
	pw_oid_zero(out, from->algo == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1);
	memcpy(out->id, from->id, 20);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *from, *to;
	struct pw_error err;
	struct pw_buf out;
	size_t dropped = 0;

	if (!size)
		return 0;
	from = data[0] & 1 ? &pw_hash_sha1 : &pw_hash_sha256;
	to = data[0] & 1 ? &pw_hash_sha256 : &pw_hash_sha1;
	pw_buf_init(&out, (size_t)1 << 24);
	pw_convert_reflog(&out, (const char *)data + 1, size - 1, from, to, any_lookup, NULL,
	                  &dropped, &err);
	pw_buf_free(&out);
	return 0;
}
