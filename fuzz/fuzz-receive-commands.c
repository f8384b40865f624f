/* Fuzz the receive-pack command list: the first byte picks the session's
 * algorithm, the rest is a pkt-line stream read the way receive-pack reads
 * its request (commands until a flush; the first command's capabilities go
 * through the object-format check first), then push options until a flush. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "server/receive-cmds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo, *client;
	struct pw_receive_cmds cmds;
	struct pw_error err;
	size_t pos = 0, used;
	int phase = 0;

	if (!size)
		return 0;
	algo = (data[0] & 1) ? &pw_hash_sha256 : &pw_hash_sha1;
	pos = 1;
	pw_receive_cmds_init(&cmds, algo);
	while (pos < size) {
		struct pw_pkt pkt;

		if (pw_pkt_decode(data + pos, size - pos, &pkt, &used, &err))
			break;
		pos += used;
		if (pkt.kind == PW_PKT_FLUSH) {
			if (++phase > 1)
				break;
			continue;
		}
		if (pkt.kind != PW_PKT_DATA)
			break;
		if (phase == 1) {
			pw_pkt_chomp(&pkt);
			continue;
		}
		if (!cmds.seen_caps) {
			struct pw_str caps, v;
			int rc;

			pw_receive_line_caps(pkt.data, pkt.len, &caps);
			if (pw_caps_get(caps.p, caps.len, "object-format", &v))
				rc = pw_object_format_server_check(algo, NULL, &client, &err);
			else
				rc = pw_object_format_server_check(algo, &v, &client, &err);
			if (rc)
				break;
			(void)pw_caps_has(caps.p, caps.len, "report-status");
		}
		if (pw_receive_cmds_add_line(&cmds, pkt.data, pkt.len, &err))
			break;
	}
	pw_receive_cmds_free(&cmds);
	return 0;
}
