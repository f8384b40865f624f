/* Fuzz v2 command requests and fetch arguments. The first byte picks the
 * session's algorithm; the rest is a packet stream parsed as one request,
 * whose arguments go through the v2 fetch parser, and whose lines also go
 * through the v0 want/have parsers. */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "packwire/proto.h"

static const char *const commands[] = {"ls-refs", "fetch", "object-info", NULL};
static const char *const capabilities[] = {"agent", "object-format", "server-option", "session-id",
                                           NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo, *client;
	struct pw_v2_request req;
	struct pw_fetch_args a;
	struct pw_error err;
	size_t i, used;

	if (!size)
		return 0;
	algo = (data[0] & 1) ? &pw_hash_sha256 : &pw_hash_sha1;
	data++;
	size--;

	pw_v2_request_init(&req);
	if (algo && (data[-1] & 2))
		req.max_bytes = 4096;
	if (!pw_v2_request_parse(&req, data, size, &used, &err)) {
		if (used > size)
			__builtin_trap();
		pw_v2_request_check(&req, commands, capabilities, &err);
		if (!pw_v2_request_object_format(&req, algo, &client, &err) && client != algo)
			__builtin_trap();
		pw_fetch_args_init(&a, algo);
		if (!pw_fetch_args_v2_request(&a, &req, &err)) {
			for (i = 0; i < a.wants.nr; i++)
				if (a.wants.v[i].algo != algo->id)
					__builtin_trap();
		}
		pw_fetch_args_free(&a);

		pw_fetch_args_init(&a, algo);
		for (i = 0; i < req.ncaps + req.nargs; i++) {
			const struct pw_str *l =
			        i < req.ncaps ? &req.caps[i] : &req.args[i - req.ncaps];

			pw_fetch_args_v0_want_line(&a, l->p, l->len, &err);
			pw_fetch_args_v0_have_line(&a, l->p, l->len, &err);
		}
		pw_fetch_args_check(&a, &err);
		pw_fetch_args_free(&a);
	}
	pw_v2_request_free(&req);
	return 0;
}
