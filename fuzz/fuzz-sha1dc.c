/* Fuzz SHA-1 collision detection: every implementation this CPU has, fed the
 * input whole, cut in two at a point the first two bytes choose, and in the
 * one-shot form, gives OpenSSL's digest, and all of them agree on whether
 * the input is an attack (random inputs never are). The digest is the plain
 * SHA-1 whether or not a block was flagged. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash/sha1dc-priv.h"

static int stream(const uint8_t *data, size_t size, size_t cut, uint8_t md[20])
{
	struct pw_sha1dc c;

	pw_sha1dc_init(&c);
	pw_sha1dc_update(&c, data, cut);
	pw_sha1dc_update(&c, data + cut, size - cut);
	return pw_sha1dc_final(&c, md);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum pw_sha1dc_impl impls[] = {PW_SHA1DC_GENERIC, PW_SHA1DC_AVX2,
	                                            PW_SHA1DC_AVX512};
	uint8_t want[20], md[20];
	size_t cut = size >= 2 ? ((size_t)data[0] << 8 | data[1]) % (size + 1) : 0, i;
	int flag = -1;

	SHA1(data, size, want);
	for (i = 0; i < sizeof(impls) / sizeof(impls[0]); i++) {
		int f;

		if (pw_sha1dc_select(impls[i]))
			continue;
		f = stream(data, size, cut, md);
		if (memcmp(md, want, 20))
			abort();
		if (flag >= 0 && f != flag)
			abort();
		flag = f;
		if (pw_sha1dc_oneshot(data, cut, data + cut, size - cut, md) != f ||
		    memcmp(md, want, 20))
			abort();
	}
	pw_sha1dc_select(PW_SHA1DC_AUTO);
	return 0;
}
