/* Fuzz the push client's reader of receive-pack's report (report-status and
 * report-status-v2: "unpack", "ok"/"ng" and "option" lines): the first byte
 * picks the algorithm, the rest is a list of lines read against three
 * commands, as packwire push reads them after sending its pack. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "client/client-priv.h"
#include "packwire/hash.h"
#include "packwire/push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = {"refs/heads/main", "refs/for/main", "refs/tags/v1"};
	const struct pw_hash_algo *algo;
	struct pw_push_result res;
	struct pw_push_report_state st = {0};
	struct pw_error err = {0};
	const char *p, *end;
	size_t i;

	if (!size)
		return 0;
	algo = (data[0] & 1) ? &pw_hash_sha256 : &pw_hash_sha1;
	memset(&res, 0, sizeof(res));
	if (!(res.refs = calloc(3, sizeof(*res.refs))))
		return 0;
	for (i = 0; i < 3; i++)
		if (!(res.refs[res.nr].dst = strdup(names[i])))
			goto out;
		else
			res.nr++;
	p = (const char *)data + 1;
	end = (const char *)data + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (pw_client__push_report_line(&res, algo, &st, p, len, &err))
			break; /* a protocol error ends the report, as in push.c */
		p += len + (nl ? 1 : 0);
	}
	for (i = 0; i < res.nr; i++)
		if (res.refs[i].nr_reports > 1024)
			__builtin_trap();
out:
	pw_error_clear(&err);
	pw_push_result_free(&res);
	return 0;
}
