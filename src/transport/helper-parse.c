/* Pure parsers of what a remote helper prints: list lines and push
 * statuses (capabilities are in helper.c). Every view stays inside the line. */
#include <string.h>

#include "transport/helper.h"

static int is_refname_char(unsigned char c)
{
	return c > 0x20 && c != 0x7f;
}

static int check_name(const char *p, size_t n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		if (!is_refname_char((unsigned char)p[i]))
			return 0;
	return 1;
}

int pw_helper_parse_list_line(const char *line, size_t len, const struct pw_hash_algo *algo,
                              struct pw_helper_list_line *out, struct pw_error *err)
{
	const char *sp;
	size_t first;

	memset(out, 0, sizeof(*out));
	if (!len)
		return pw_error_set(err, PW_EPROTO, "empty line in a helper's ref list");
	sp = memchr(line, ' ', len);
	if (!sp)
		goto bad;
	first = (size_t)(sp - line);
	if (line[0] == ':') {
		out->kind = PW_HLIST_KEYWORD;
		out->name = line + 1;
		out->name_len = first - 1;
		out->value = sp + 1;
		out->value_len = len - first - 1;
		if (!out->name_len)
			goto bad;
		return 0;
	}
	/* the name ends at the next space: attributes may follow */
	out->name = sp + 1;
	sp = memchr(out->name, ' ', len - first - 1);
	out->name_len = sp ? (size_t)(sp - out->name) : len - first - 1;
	if (!check_name(out->name, out->name_len))
		goto bad;
	if (line[0] == '@') {
		out->kind = PW_HLIST_SYMREF;
		out->value = line + 1;
		out->value_len = first - 1;
		if (!check_name(out->value, out->value_len))
			goto bad;
		return 0;
	}
	if (first == 1 && line[0] == '?') {
		out->kind = PW_HLIST_UNKNOWN;
		return 0;
	}
	if (first != algo->hexsz || pw_oid_from_hex(&out->oid, line, first, algo))
		return pw_error_set(
		        err, PW_EPROTO,
		        "remote helper listed a ref with a malformed %s object id: %.*s",
		        algo->name, (int)(len > 200 ? 200 : len), line);
	out->kind = PW_HLIST_REF;
	return 0;
bad:
	return pw_error_set(err, PW_EPROTO, "malformed line in a helper's ref list: %.*s",
	                    (int)(len > 200 ? 200 : len), line);
}

int pw_helper_parse_push_line(const char *line, size_t len, struct pw_helper_push_line *out,
                              struct pw_error *err)
{
	const char *rest, *sp;
	size_t rl;

	memset(out, 0, sizeof(*out));
	if (len > 3 && !memcmp(line, "ok ", 3)) {
		out->ok = 1;
		rest = line + 3;
		rl = len - 3;
	} else if (len > 6 && !memcmp(line, "error ", 6)) {
		rest = line + 6;
		rl = len - 6;
	} else {
		return pw_error_set(err, PW_EPROTO, "remote helper: unexpected push status '%.*s'",
		                    (int)(len > 200 ? 200 : len), line);
	}
	sp = memchr(rest, ' ', rl);
	out->ref = rest;
	out->ref_len = sp ? (size_t)(sp - rest) : rl;
	if (sp) {
		out->msg = sp + 1;
		out->msg_len = rl - out->ref_len - 1;
	}
	if (!check_name(out->ref, out->ref_len))
		return pw_error_set(err, PW_EPROTO, "remote helper: malformed push status '%.*s'",
		                    (int)(len > 200 ? 200 : len), line);
	return 0;
}
