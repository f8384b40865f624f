/* Fuzz the client's advertisement parsers: the input after the first byte is
 * a stream of pkt-lines fed to the v0/v1 ref advertisement parser (bit 1 of
 * the first byte clear) or to the v2 ls-refs response parser (set); bit 0
 * picks the algorithm the ls-refs parser expects. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "packwire/client.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_error err;
	struct pw_adv a;
	size_t pos = 1, i;
	int lsrefs, rc = PW_EMORE;

	if (!size)
		return 0;
	lsrefs = data[0] & 2;
	pw_adv_init(&a);
	if (lsrefs)
		a.algo = (data[0] & 1) ? &pw_hash_sha256 : &pw_hash_sha1;
	while (pos < size && rc == PW_EMORE) {
		struct pw_pkt pkt;
		size_t used;

		if (pw_pkt_decode(data + pos, size - pos, &pkt, &used, &err))
			break;
		pos += used;
		rc = lsrefs ? pw_adv_feed_ls_refs(&a, &pkt, &err) : pw_adv_feed_v0(&a, &pkt, &err);
	}
	if (rc == PW_EMORE) {
		struct pw_pkt eof = {PW_PKT_EOF, NULL, 0};

		rc = lsrefs ? pw_adv_feed_ls_refs(&a, &eof, &err) : pw_adv_feed_v0(&a, &eof, &err);
	}
	if (!rc) {
		/* a complete advertisement is consistent */
		if (!a.algo)
			__builtin_trap();
		for (i = 0; i < a.nr; i++) {
			if (!a.refs[i].name || !a.refs[i].name[0])
				__builtin_trap();
			if (a.refs[i].oid.algo != a.algo->id && !a.refs[i].unborn)
				__builtin_trap();
			if (a.refs[i].has_peeled && a.refs[i].peeled.algo != a.algo->id)
				__builtin_trap();
		}
		for (i = 0; i < a.nr_shallow; i++)
			if (a.shallow[i].algo != a.algo->id)
				__builtin_trap();
		if (!lsrefs && (!a.caps || a.caps[a.caps_len] != 0))
			__builtin_trap();
		pw_adv_find(&a, "HEAD");
	}
	pw_adv_free(&a);
	return 0;
}
