/* The commands Git writes to a remote helper, parsed into views. */
#include <stdlib.h>
#include <string.h>

#include "packwire/helper.h"

/* Does line start with the word w followed by a space (or end, when
 * bare_ok)? *rest gets what follows the space. */
static int word(const char *line, size_t len, const char *w, int bare_ok, const char **rest,
                size_t *rest_len)
{
	size_t n = strlen(w);

	if (len < n || memcmp(line, w, n))
		return 0;
	if (len == n) {
		*rest = NULL;
		*rest_len = 0;
		return bare_ok ? 1 : -1;
	}
	if (line[n] != ' ')
		return 0;
	*rest = line + n + 1;
	*rest_len = len - n - 1;
	return 1;
}

static int has_ctl(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 && p[i] != '\t')
			return 1;
	return 0;
}

int pw_helper_cmd_parse(const char *line, size_t len, struct pw_helper_cmd *out,
                        struct pw_error *err)
{
	const char *rest, *sp;
	size_t rl;
	int w;

	memset(out, 0, sizeof(*out));
	if (!len) {
		out->kind = PW_HCMD_END;
		return 0;
	}
	if (memchr(line, 0, len) || has_ctl(line, len))
		return pw_error_set(err, PW_EPROTO, "malformed command (control characters)");
	if (len == 12 && !memcmp(line, "capabilities", 12)) {
		out->kind = PW_HCMD_CAPABILITIES;
		return 0;
	}
	if (len == 4 && !memcmp(line, "list", 4)) {
		out->kind = PW_HCMD_LIST;
		return 0;
	}
	if (len == 13 && !memcmp(line, "list for-push", 13)) {
		out->kind = PW_HCMD_LIST_FOR_PUSH;
		return 0;
	}
	if (len == 6 && !memcmp(line, "export", 6)) {
		out->kind = PW_HCMD_EXPORT;
		return 0;
	}
	if ((w = word(line, len, "option", 0, &rest, &rl))) {
		if (w < 0 || !rl || rest[0] == ' ')
			goto malformed_option;
		out->kind = PW_HCMD_OPTION;
		out->arg = rest;
		sp = memchr(rest, ' ', rl);
		if (!sp) {
			out->arg_len = rl;
			return 0;
		}
		out->arg_len = (size_t)(sp - rest);
		out->arg2 = sp + 1;
		out->arg2_len = rl - out->arg_len - 1;
		return 0;
	}
	if ((w = word(line, len, "fetch", 0, &rest, &rl))) {
		if (w < 0 || !(sp = memchr(rest, ' ', rl)) || sp == rest || sp + 1 == rest + rl)
			return pw_error_set(err, PW_EPROTO, "malformed 'fetch' command");
		out->kind = PW_HCMD_FETCH;
		out->arg = rest;
		out->arg_len = (size_t)(sp - rest);
		out->arg2 = sp + 1;
		out->arg2_len = rl - out->arg_len - 1;
		return 0;
	}
	if ((w = word(line, len, "push", 0, &rest, &rl))) {
		if (w < 0 || !rl || !memchr(rest, ':', rl))
			return pw_error_set(err, PW_EPROTO, "malformed 'push' command");
		out->kind = PW_HCMD_PUSH;
		out->arg = rest;
		out->arg_len = rl;
		return 0;
	}
	if ((w = word(line, len, "stateless-connect", 0, &rest, &rl)) ||
	    (w = word(line, len, "connect", 0, &rest, &rl))) {
		if (w < 0 || !rl || memchr(rest, ' ', rl))
			return pw_error_set(err, PW_EPROTO, "malformed 'connect' command");
		out->kind = line[0] == 's' ? PW_HCMD_STATELESS_CONNECT : PW_HCMD_CONNECT;
		out->arg = rest;
		out->arg_len = rl;
		return 0;
	}
	if ((w = word(line, len, "get", 0, &rest, &rl))) {
		if (w < 0 || !(sp = memchr(rest, ' ', rl)) || sp == rest || sp + 1 == rest + rl)
			return pw_error_set(err, PW_EPROTO,
			                    "malformed 'get' command (expected '<url> <path>')");
		out->kind = PW_HCMD_GET;
		out->arg = rest;
		out->arg_len = (size_t)(sp - rest);
		out->arg2 = sp + 1;
		out->arg2_len = rl - out->arg_len - 1;
		return 0;
	}
	if ((w = word(line, len, "import", 0, &rest, &rl))) {
		if (w < 0 || !rl)
			return pw_error_set(err, PW_EPROTO, "malformed 'import' command");
		out->kind = PW_HCMD_IMPORT;
		out->arg = rest;
		out->arg_len = rl;
		return 0;
	}
	return pw_error_set(err, PW_EPROTO, "unknown command '%.*s'", (int)(len > 100 ? 100 : len),
	                    line);
malformed_option:
	return pw_error_set(err, PW_EPROTO, "malformed 'option' command");
}

char *pw_helper_unquote(const char *s, size_t len, size_t *out_len, struct pw_error *err)
{
	static const char esc[] = "abfnrtv\\\"", val[] = "\a\b\f\n\r\t\v\\\"";
	char *out = malloc(len + 1), *w = out;
	size_t i;

	if (!out) {
		pw_error_set(err, PW_ENOMEM, "out of memory");
		return NULL;
	}
	if (!len || s[0] != '"') {
		memcpy(out, s, len);
		out[len] = 0;
		*out_len = len;
		return out;
	}
	for (i = 1; i < len && s[i] != '"'; i++) {
		const char *e;

		if (s[i] != '\\') {
			*w++ = s[i];
			continue;
		}
		if (++i >= len)
			break;
		if ((e = memchr(esc, s[i], sizeof(esc) - 1))) {
			*w++ = val[e - esc];
		} else if (s[i] >= '0' && s[i] <= '3' && i + 2 < len && s[i + 1] >= '0' &&
		           s[i + 1] <= '7' && s[i + 2] >= '0' && s[i + 2] <= '7') {
			*w++ = (char)(((s[i] - '0') << 6) | ((s[i + 1] - '0') << 3) |
			              (s[i + 2] - '0'));
			i += 2;
		} else {
			break;
		}
	}
	if (i != len - 1 || s[i] != '"') {
		free(out);
		pw_error_set(err, PW_EPROTO, "invalid quoting in '%.*s'",
		             (int)(len > 200 ? 200 : len), s);
		return NULL;
	}
	*w = 0;
	*out_len = (size_t)(w - out);
	return out;
}
