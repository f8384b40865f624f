/* Fuzz the client's parsers of a remote helper's answers: the first byte
 * picks the algorithm, the rest is split into lines, each fed to the
 * capability, list and push-status parsers (as a helper could print them). */
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "transport/helper.h"

static void in_line(const char *p, size_t n, const char *line, size_t len)
{
	if (p && (p < line || p + n > line + len))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_helper h;
	struct pw_error err;
	const char *p, *end;
	size_t i;

	if (!size)
		return 0;
	algo = (data[0] & 1) ? &pw_hash_sha256 : &pw_hash_sha1;
	p = (const char *)data + 1;
	end = (const char *)data + size;
	memset(&h, 0, sizeof(h));
	h.name = "fuzz";
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct pw_helper_list_line l;
		struct pw_helper_push_line s;

		pw_helper_parse_capability(&h, p, len, &err);
		if (len && !pw_helper_parse_list_line(p, len, algo, &l, &err)) {
			in_line(l.name, l.name_len, p, len);
			in_line(l.value, l.value_len, p, len);
			if (l.kind == PW_HLIST_REF && l.oid.algo != algo->id)
				__builtin_trap();
		}
		if (!pw_helper_parse_push_line(p, len, &s, &err)) {
			in_line(s.ref, s.ref_len, p, len);
			in_line(s.msg, s.msg_len, p, len);
			if (!s.ref_len)
				__builtin_trap();
		}
		p += len + (nl ? 1 : 0);
	}
	for (i = 0; i < h.nr_refspecs; i++)
		free(h.refspecs[i]);
	free(h.refspecs);
	free(h.import_marks);
	free(h.export_marks);
	return 0;
}
