/* pw_convert_reflog, packwire convert's reader of reflog files: ids
 * translated in both directions, the zero id kept zero, lines with unknown
 * ids dropped, malformed lines refused with their number. */
#include <stdio.h>
#include <string.h>

#include "packwire/convert.h"
#include "packwire/packwire.h"
#include "test.h"

/* The id in the other algorithm is the hash of the raw id; ids starting
 * with 0xee are unknown. */
static int fake_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	const struct pw_hash_algo *to = data;

	if (from->id[0] == 0xee)
		return PW_ENOTFOUND;
	CHECK_EQ_INT(pw_hash_buf(to, from->id, pw_oid_rawsz(from), out), 0);
	return 0;
}

static void test_algo(const struct pw_hash_algo *from, const struct pw_hash_algo *to)
{
	char a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1], ma[PW_MAX_HEXSZ + 1], zt[PW_MAX_HEXSZ + 1];
	char in[1024], want[1024];
	struct pw_oid oa, ob, m;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err;
	size_t dropped = 0;

	CHECK_EQ_INT(pw_hash_buf(from, "a", 1, &oa), 0);
	CHECK_EQ_INT(pw_hash_buf(from, "b", 1, &ob), 0);
	ob.id[0] = 0xee; /* unknown */
	pw_oid_to_hex(&oa, a);
	pw_oid_to_hex(&ob, b);
	fake_lookup((void *)to, &oa, &m);
	pw_oid_to_hex(&m, ma);
	pw_oid_to_hex(to->zero_oid, zt);
	snprintf(in, sizeof(in),
	         "%s %s A U Thor <a@example.com> 1 +0000\tcommit (initial): x\n"
	         "%s %s A U Thor <a@example.com> 2 +0000\tcommit: y\n"
	         "%s %s A U Thor <a@example.com> 3 +0000",
	         pw_oid_to_hex(from->zero_oid, zt), a, a, b, a, a);
	CHECK_EQ_INT(pw_convert_reflog(&out, in, strlen(in), from, to, fake_lookup, (void *)to,
	                               &dropped, &err),
	             0);
	pw_oid_to_hex(to->zero_oid, zt);
	snprintf(want, sizeof(want),
	         "%s %s A U Thor <a@example.com> 1 +0000\tcommit (initial): x\n"
	         "%s %s A U Thor <a@example.com> 3 +0000",
	         zt, ma, ma, ma);
	CHECK_STR(out.data, want);
	CHECK_EQ_INT((int)dropped, 1);

	/* malformed: short line, missing space, bad hex */
	pw_buf_reset(&out);
	snprintf(in, sizeof(in), "%s %s x\nshort\n", a, a);
	CHECK_EQ_INT(pw_convert_reflog(&out, in, strlen(in), from, to, fake_lookup, (void *)to,
	                               &dropped, &err),
	             PW_ECORRUPT);
	CHECK(strstr(err.msg, "line 2") != NULL);
	snprintf(in, sizeof(in), "%s-%s x\n", a, a);
	CHECK_EQ_INT(pw_convert_reflog(&out, in, strlen(in), from, to, fake_lookup, (void *)to,
	                               &dropped, &err),
	             PW_ECORRUPT);
	snprintf(in, sizeof(in), "%s %s x\n", a, a);
	in[3] = 'g';
	CHECK_EQ_INT(pw_convert_reflog(&out, in, strlen(in), from, to, fake_lookup, (void *)to,
	                               &dropped, &err),
	             PW_ECORRUPT);
	/* a line cut inside the second id */
	CHECK_EQ_INT(pw_convert_reflog(&out, in, from->hexsz + 5, from, to, fake_lookup, (void *)to,
	                               &dropped, &err),
	             PW_ECORRUPT);
	/* empty input: nothing */
	pw_buf_reset(&out);
	CHECK_EQ_INT(
	        pw_convert_reflog(&out, "", 0, from, to, fake_lookup, (void *)to, &dropped, &err),
	        0);
	CHECK_EQ_INT((int)out.len, 0);
	pw_buf_free(&out);
}

int main(void)
{
	test_algo(&pw_hash_sha1, &pw_hash_sha256);
	test_algo(&pw_hash_sha256, &pw_hash_sha1);
	return pw_test_done();
}
