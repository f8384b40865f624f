/* Fuzz the WebDAV push's reading of the server's answers: the first byte
 * picks the reader (bit 0: the Lock-Token header among raw header lines;
 * bit 1: packed-refs, each id read with the algorithm its length names;
 * else the XML of a PROPFIND multistatus or a LOCK answer); the rest is the
 * answer. What is kept must respect the parser's bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/dav.h"

static int packed_one(void *ctx, const char *name, size_t len, const char *hex, size_t hexlen)
{
	const struct pw_hash_algo *algo = pw_hash_guess_from_hexlen(hexlen);
	struct pw_oid oid;

	(void)ctx;
	if (!len && !name)
		__builtin_trap();
	if (len > PW_DAV_MAX_HREF)
		__builtin_trap();
	if (algo && !pw_oid_from_hex(&oid, hex, hexlen, algo) && pw_oid_algo(&oid) != algo)
		__builtin_trap();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_dav_answer a;
	struct pw_error err;
	size_t i;

	if (!size)
		return 0;
	if (data[0] & 1) {
		char *t = pw_dav_lock_token_header((const char *)data + 1, size - 1);

		if (t && (!*t || strlen(t) > PW_DAV_MAX_HREF))
			__builtin_trap();
		free(t);
		return 0;
	}
	if (data[0] & 2) {
		pw_dav_parse_packed_refs(data + 1, size - 1, packed_one, NULL, &err);
		return 0;
	}
	if (!pw_dav_parse(data + 1, size - 1, &a, &err)) {
		if (a.nr > PW_DAV_MAX_ENTRIES)
			__builtin_trap();
		for (i = 0; i < a.nr; i++)
			if (!a.entries[i].path || strlen(a.entries[i].path) > PW_DAV_MAX_HREF)
				__builtin_trap();
		if (a.lock_token && (!*a.lock_token || strlen(a.lock_token) > PW_DAV_MAX_HREF))
			__builtin_trap();
	} else if (!err.msg[0]) {
		__builtin_trap(); /* a failure says why */
	}
	pw_dav_answer_free(&a);
	return 0;
}
