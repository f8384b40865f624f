/* The pkt-line framing of a stateless v2 answer, followed as its bytes come
 * from the server (the transport appends the response-end packet itself):
 * an answer cut off inside a packet is told apart from one that ended at a
 * boundary, in Git's words. Pure: no I/O, fuzzed by fuzz-http-pktcheck. */
#include <string.h>

#include "packwire/hash.h"
#include "transport/transport-priv.h"

int pw_http__pktcheck_feed(struct pw_http_pktcheck *st, const uint8_t *p, size_t n,
                           struct pw_error *err)
{
	while (n) {
		if (!st->remaining) {
			size_t k = 4 - st->len_filled;
			int len = 0, i;

			if (k > n)
				k = n;
			memcpy(st->len + st->len_filled, p, k);
			st->len_filled += k;
			p += k;
			n -= k;
			if (st->len_filled < 4)
				break;
			st->len_filled = 0;
			for (i = 0; i < 4; i++) {
				int v = pw_hexval((unsigned char)st->len[i]);

				if (v < 0)
					return pw_error_set(err, PW_EPROTO,
					                    "bad line length character: %.4s",
					                    st->len);
				len = len * 16 + v;
			}
			if (len == 2)
				return pw_error_set(err, PW_EPROTO,
				                    "unexpected response end packet in the answer");
			/* flush and delim have no body; 3 is not a length (the
			 * packet reader says so) */
			st->remaining = len < 4 ? 0 : (size_t)len - 4;
		}
		if (st->remaining) {
			size_t k = st->remaining < n ? st->remaining : n;

			st->remaining -= k;
			p += k;
			n -= k;
		}
	}
	return 0;
}

int pw_http__pktcheck_end(const struct pw_http_pktcheck *st, struct pw_error *err)
{
	if (st->len_filled)
		return pw_error_set(err, PW_EPROTO, "%u bytes of length header were received",
		                    st->len_filled);
	if (st->remaining)
		return pw_error_set(err, PW_EPROTO, "%zu bytes of body are still expected",
		                    st->remaining);
	return 0;
}
