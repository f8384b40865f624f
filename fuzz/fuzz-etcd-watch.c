/* Fuzz etcd's watch stream (cluster/etcd.h): the bytes as the JSON
 * gateway's POST /v3/watch would send them, fed in small pieces, split into
 * messages and each decoded; and one message decoded alone. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cluster/etcd.h"

static int on_msg(void *ctx, const struct pw_etcd_watch_msg *m)
{
	size_t i, *seen = ctx;

	for (i = 0; i < m->nr; i++)
		if (!m->events[i].key || strlen(m->events[i].key) > m->events[i].key_len)
			__builtin_trap();
	*seen += m->nr;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_error err;
	struct pw_etcd_watch_msg m;
	size_t seen = 0;

	if (!size)
		return 0;
	if (data[0] & 1) {
		pw_etcd_watch_feed_test((const char *)data + 1, size - 1, on_msg, &seen, &err);
	} else if (!pw_etcd_parse_watch((const char *)data + 1, size - 1, &m, &err)) {
		on_msg(&seen, &m);
		pw_etcd_watch_msg_free(&m);
	}
	return 0;
}
