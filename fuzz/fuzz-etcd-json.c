/* Fuzz the JSON reader and the etcd answer decoders: the first byte picks
 * what the rest is read as (a range answer, a txn answer of 1-3 groups, or
 * any JSON whose strings, integers and base64 are then decoded). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cluster/etcd.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_error err;
	struct pw_etcd_range r;
	struct pw_etcd_group g[3];
	struct pw_json j;
	const char *text;
	int64_t rev;
	size_t i;

	if (!size)
		return 0;
	text = (const char *)data + 1;
	switch (data[0] % 3) {
	case 0:
		if (!pw_etcd_parse_range(text, size - 1, &r, &err)) {
			for (i = 0; i < r.nr; i++)
				if (strlen(r.kvs[i].key) > r.kvs[i].key_len)
					__builtin_trap();
			pw_etcd_range_free(&r);
		}
		break;
	case 1:
		memset(g, 0, sizeof(g));
		pw_etcd_parse_txn(text, size - 1, g, 1 + data[0] / 3 % 3, &rev, &err);
		break;
	default:
		pw_json_init(&j);
		j.max_depth = 16;
		j.max_nodes = 4096;
		if (!pw_json_parse(&j, text, size - 1, &err)) {
			for (i = 0; i < j.nr; i++) {
				struct pw_buf b = PW_BUF_INIT;
				int64_t v;

				if (j.nodes[i].start > size ||
				    j.nodes[i].len > size - 1 - j.nodes[i].start + 1)
					__builtin_trap();
				b.max = 1 << 16;
				pw_json_string(&j, (int)i, &b, &err);
				pw_buf_reset(&b);
				pw_json_base64(&j, (int)i, &b, &err);
				pw_json_int(&j, (int)i, &v, &err);
				pw_json_get(&j, (int)i, "key");
				pw_buf_free(&b);
			}
		}
		pw_json_free(&j);
	}
	return 0;
}
