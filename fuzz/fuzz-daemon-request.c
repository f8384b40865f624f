/* Fuzz the git:// daemon's request line: the decoder, then the path rules
 * (aliases, base path, interpolated path, whitelist) on what it decoded.
 * The first byte picks the rules; the paths lead nowhere on disk, and no
 * rule that looks up users or host names is enabled. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/daemon.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const whitelist[] = {"/nonexistent-pw-fuzz/a", NULL};
	struct pw_daemon_request req;
	struct pw_daemon_opts o;
	struct pw_error err;
	const char *msg;
	char *dir;
	uint8_t mode;

	if (!size)
		return 0;
	mode = data[0];
	data++;
	size--;
	if (pw_daemon_request_parse(&req, data, size, &err)) {
		if (!err.msg[0])
			__builtin_trap();
		return 0;
	}
	if (!req.path || (req.protocol && !req.protocol[0]) ||
	    (unsigned)req.service >= PW_DAEMON_NR_SERVICES || req.version < 0 || req.version > 2)
		__builtin_trap();
	pw_daemon_opts_init(&o);
	o.export_all = 1;
	if (mode & 1)
		o.base_path = "/nonexistent-pw-fuzz";
	if (mode & 2)
		o.interpolated_path = "/nonexistent-pw-fuzz/%H/%P/%D%%%x";
	if (mode & 4) {
		o.whitelist = whitelist;
		o.strict_paths = (mode & 8) != 0;
	}
	if (mode & 16)
		o.base_path_relaxed = 1;
	o.informative_errors = (mode & 32) != 0;
	if (!pw_daemon_resolve(&o, &req, "127.0.0.1", "1", &dir, &msg, &err))
		free(dir);
	else if (!msg && err.code != PW_ENOMEM)
		__builtin_trap();
	pw_daemon_request_free(&req);
	return 0;
}
