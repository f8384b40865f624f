/* Fuzz capability handling: the input (after the first byte, which picks the
 * algorithm) is a v0 advertisement line for the list functions and a stream
 * of packets for the v2 advertisement parser. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "packwire/proto.h"

static const char *const keys[] = {"object-format", "symref", "agent", "ofs-delta", "", "a"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo, *got;
	struct pw_caps_iter it;
	struct pw_str head, caps, k, v;
	struct pw_v2_caps c;
	struct pw_error err;
	size_t i, used;

	if (!size)
		return 0;
	algo = (data[0] & 1) ? &pw_hash_sha256 : &pw_hash_sha1;
	data++;
	size--;

	pw_adv_line_split((const char *)data, size, &head, &caps);
	if (caps.len > size || head.len > size)
		__builtin_trap();
	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (!pw_caps_get(caps.p, caps.len, keys[i], &v) &&
		    (v.p && (v.p < caps.p || v.p + v.len > caps.p + caps.len)))
			__builtin_trap();
		pw_caps_has(caps.p, caps.len, keys[i]);
	}
	pw_caps_iter_init(&it, caps.p, caps.len);
	while (pw_caps_next(&it, &k, &v))
		if (!k.len && !v.p)
			__builtin_trap(); /* empty tokens are skipped */
	pw_caps_iter_init(&it, caps.p, caps.len);
	while (pw_caps_next_value(&it, "symref", &v))
		;
	if (!pw_object_format_from_caps(caps.p, caps.len, &got, &err) &&
	    !pw_object_format_caps_supports(caps.p, caps.len, got) &&
	    pw_caps_has(caps.p, caps.len, "object-format") == 0)
		__builtin_trap();
	pw_object_format_caps_supports(caps.p, caps.len, algo);

	pw_v2_caps_init(&c);
	if (!pw_v2_caps_parse(&c, data, size, &used, &err)) {
		pw_v2_caps_has_feature(&c, "fetch", "shallow");
		if (!pw_v2_caps_get(&c, "object-format", &v))
			pw_object_format_client_check(algo, &v, &err);
		else
			pw_object_format_client_check(algo, NULL, &err);
	}
	pw_v2_caps_free(&c);
	return 0;
}
