/* Fuzz the parser of the commands git writes to a remote helper's stdin
 * (packwire remote-http): every line of the input, checked to give views
 * inside the line and a known kind. */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/helper.h"

static void in_line(const char *p, size_t n, const char *line, size_t len)
{
	if (p && (p < line || p + n > line + len))
		__builtin_trap();
	if (!p && n)
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct pw_helper_cmd c;
	struct pw_error err;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (!pw_helper_cmd_parse(p, len, &c, &err)) {
			if (c.kind < PW_HCMD_END || c.kind > PW_HCMD_GET)
				__builtin_trap();
			in_line(c.arg, c.arg_len, p, len);
			in_line(c.arg2, c.arg2_len, p, len);
			if (c.arg2) { /* an option's value, unquoted as push-option's */
				size_t ulen;
				char *u = pw_helper_unquote(c.arg2, c.arg2_len, &ulen, &err);

				if (u && ulen > c.arg2_len)
					__builtin_trap();
				free(u);
			}
		}
		p += len + (nl ? 1 : 0);
	}
	return 0;
}
