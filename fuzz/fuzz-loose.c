/* Fuzz the loose object decoders (zlib + strict header checks): the first
 * byte chooses a header-only or a full decode, the algorithm (bit 1) and the
 * piece size the streaming decoder is fed in (bits 2-7); the rest is the
 * file. The two decoders must agree: what the whole-buffer one accepts, the
 * streaming one accepts with the same type, size and id. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "odb/loose.h"
#include "packwire/object.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_loose_stream s;
	struct pw_error err;
	struct pw_oid a, b;
	uint64_t osize, ssize;
	size_t piece, off;
	int type, stype, rc, src = -1;

	if (!size)
		return 0;
	algo = data[0] & 2 ? &pw_hash_sha256 : &pw_hash_sha1;
	piece = 1 + (size_t)(data[0] >> 2) * 97;
	pw_buf_init(&out, (size_t)1 << 26);
	rc = pw_loose_decode(data + 1, size - 1, &type, &osize, data[0] & 1 ? NULL : &out, "fuzz",
	                     &err);
	if (!pw_loose_stream_init(&s, algo, 0, "fuzz", &err)) {
		for (off = 1, src = 0; off < size && !src; off += piece)
			src = pw_loose_stream_feed(&s, data + off,
			                           size - off < piece ? size - off : piece, &err);
		if (!src)
			src = pw_loose_stream_finish(&s, &b, &stype, &ssize, &err);
		pw_loose_stream_free(&s);
	}
	if (!rc && !(data[0] & 1)) {
		if (src) /* the streaming decoder refused what the other accepted */
			abort();
		if (stype != type || ssize != osize || out.len != osize ||
		    (!pw_object_hash(algo, type, out.data, out.len, &a) && !pw_oid_equal(&a, &b)))
			abort();
	}
	pw_buf_free(&out);
	return 0;
}
