/* Fuzz the cluster state record's parser (src/cluster/state.h): the first
 * byte picks the algorithm; a file that parses must format back to bytes
 * that parse to the same record. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cluster/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_cstate st, again;
	struct pw_error err;
	struct pw_buf b = PW_BUF_INIT;
	size_t i;

	if (!size)
		return 0;
	algo = data[0] & 1 ? pw_hash_by_name("sha256", 6) : pw_hash_by_name("sha1", 4);
	if (pw_cstate_parse((const char *)data + 1, size - 1, algo, &st, &err))
		return 0;
	for (i = 0; i < st.nr; i++)
		if (!st.refs[i].name || strncmp(st.refs[i].name, "refs/", 5) ||
		    (i && strcmp(st.refs[i - 1].name, st.refs[i].name) >= 0))
			__builtin_trap();
	pw_buf_init(&b, PW_CSTATE_MAX);
	if (!pw_cstate_format(&st, algo, &b)) {
		if (pw_cstate_parse(b.data, b.len, algo, &again, &err) || again.nr != st.nr ||
		    again.revision != st.revision)
			__builtin_trap();
		pw_cstate_free(&again);
	}
	pw_buf_free(&b);
	pw_cstate_free(&st);
	return 0;
}
