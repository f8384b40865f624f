/* The first bytes of a smart-HTTP info/refs answer: the "# service=" line
 * and its flush (v0/v1), or the v2 capability advertisement as it is. Pure:
 * no I/O, fuzzed by fuzz-http-discovery. */
#include <string.h>

#include "packwire/pkt.h"
#include "proto/quote.h"
#include "transport/transport-priv.h"

int pw_http__discovery(const uint8_t *p, size_t n, const char *service, size_t *skip, int *version,
                       struct pw_error *err)
{
	struct pw_pkt pkt;
	size_t used, off = 0, sl = strlen(service);
	char q[PW_QUOTE_MAX];
	int rc;

	*skip = 0;
	*version = 0;
	rc = pw_pkt_decode(p, n, &pkt, &used, err);
	if (rc == PW_EMORE)
		return pw_error_set(err, PW_EPROTO, "invalid server response; truncated");
	if (rc)
		return rc;
	if (pkt.kind != PW_PKT_DATA)
		return pw_error_set(err, PW_EPROTO,
		                    "invalid server response; expected service, got flush packet");
	pw_pkt_chomp(&pkt);
	if (pkt.len == 9 && !memcmp(pkt.data, "version 2", 9)) {
		*version = 2;
		return 0;
	}
	if (!(pkt.len == 10 + sl && !memcmp(pkt.data, "# service=", 10) &&
	      !memcmp(pkt.data + 10, service, sl)))
		return pw_error_set(err, PW_EPROTO, "invalid server response; got '%s'",
		                    pw_proto__quote(q, sizeof(q), pkt.data, pkt.len));
	off = used;
	/* metadata lines up to the flush: ignored, as Git does */
	for (;;) {
		rc = pw_pkt_decode(p + off, n - off, &pkt, &used, err);
		if (rc == PW_EMORE)
			return pw_error_set(err, PW_EPROTO,
			                    "invalid server response; no flush after the service "
			                    "line");
		if (rc)
			return rc;
		off += used;
		if (pkt.kind == PW_PKT_FLUSH)
			break;
		if (pkt.kind != PW_PKT_DATA)
			return pw_error_set(err, PW_EPROTO,
			                    "invalid server response; unexpected control packet");
	}
	*skip = off;
	if (!pw_pkt_decode(p + off, n - off, &pkt, &used, NULL) && pkt.kind == PW_PKT_DATA) {
		pw_pkt_chomp(&pkt);
		/* v1: the refs follow "version 1"; v2 (after a "# service"
		 * preamble, as some servers send): its capabilities */
		if (pkt.len == 9 && !memcmp(pkt.data, "version ", 8) &&
		    (pkt.data[8] == '1' || pkt.data[8] == '2'))
			*version = pkt.data[8] - '0';
	}
	return 0;
}
