/* Writing the v0/v1 ref advertisement: see adv.h. */
#include <string.h>

#include "packwire/pkt.h"
#include "proto/adv.h"

int pw_adv__write_ref(struct pw_buf *out, const char *hex, const char *name, const char *caps,
                      size_t caps_len)
{
	struct pw_buf line = PW_BUF_INIT;
	int rc;

	if (!caps)
		return pw_pkt_writef(out, "%s %s\n", hex, name);
	if (pw_buf_addf(&line, "%s %s", hex, name) || pw_buf_addch(&line, '\0') ||
	    pw_buf_add(&line, caps, caps_len) || pw_buf_addch(&line, '\n'))
		rc = PW_ENOMEM;
	else
		rc = pw_pkt_write(out, line.data, line.len);
	pw_buf_free(&line);
	return rc;
}

int pw_adv__write_no_refs(struct pw_buf *out, const struct pw_hash_algo *algo, const char *caps,
                          size_t caps_len)
{
	char hex[PW_MAX_HEXSZ + 1];

	return pw_adv__write_ref(out, pw_oid_to_hex(algo->zero_oid, hex), "capabilities^{}", caps,
	                         caps_len);
}
