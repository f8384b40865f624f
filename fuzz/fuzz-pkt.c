/* Fuzz the pkt-line decoder over a stream of packets, with side-band
 * demultiplexing, ERR recognition and the progress relay on each data packet,
 * and re-encoding every data packet to check the round trip. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "packwire/pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_progress_relay relay;
	struct pw_buf enc = PW_BUF_INIT;
	struct pw_error err;
	size_t off = 0;

	pw_progress_relay_init(&relay, "\033[K");
	while (off < size) {
		struct pw_pkt pkt;
		struct pw_str s;
		size_t used;
		int band, rc = pw_pkt_decode(data + off, size - off, &pkt, &used, &err);

		if (rc)
			break;
		if (used < 4 || used > PW_PKT_MAX || used > size - off)
			__builtin_trap();
		if (pkt.kind == PW_PKT_DATA) {
			pw_buf_reset(&enc);
			if (pw_pkt_write(&enc, pkt.data, pkt.len) || enc.len != used ||
			    memcmp(enc.data + 4, data + off + 4, pkt.len))
				__builtin_trap();
			pw_pkt_is_err(&pkt, &s);
			if (!pw_sideband_demux(&pkt, &band, &s, &err) && band == PW_BAND_PROGRESS)
				pw_progress_relay_feed(&relay, s.p, s.len);
			pw_pkt_chomp(&pkt);
		}
		off += used;
	}
	pw_progress_relay_finish(&relay);
	pw_progress_relay_free(&relay);
	pw_buf_free(&enc);
	return 0;
}
