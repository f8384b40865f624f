/* Delta application and pack entry headers, including malformed input. */
#include <stdlib.h>

#include "odb/delta.h"
#include "odb/entry.h"
#include "packwire/packwire.h"
#include "test.h"

static size_t build(uint8_t *d, uint64_t bsz, uint64_t rsz)
{
	size_t n = pw_delta_encode_size(d, bsz);

	return n + pw_delta_encode_size(d + n, rsz);
}

static void test_apply_ok(void)
{
	const char *base = "hello, world";
	uint8_t d[64];
	size_t n = build(d, 12, 11);
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};

	d[n++] = 0x91; /* copy: offset1, size1 */
	d[n++] = 7;    /* "world" */
	d[n++] = 5;
	d[n++] = 6; /* insert 6 bytes */
	memcpy(d + n, " again", 6);
	n += 6;
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), 0);
	CHECK_EQ_INT(out.len, 11);
	CHECK_STR(out.data, "world again");
	pw_buf_free(&out);
}

static void test_apply_bad(void)
{
	const char *base = "hello, world";
	uint8_t d[64];
	size_t n;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};

	/* copy out of range */
	n = build(d, 12, 5);
	d[n++] = 0x91;
	d[n++] = 10;
	d[n++] = 5;
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "outside") != NULL);

	/* result shorter than declared */
	n = build(d, 12, 10);
	d[n++] = 0x91;
	d[n++] = 0;
	d[n++] = 5;
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "header says") != NULL);

	/* result longer than declared */
	n = build(d, 12, 3);
	d[n++] = 0x91;
	d[n++] = 0;
	d[n++] = 5;
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ECORRUPT);

	/* base size mismatch */
	n = build(d, 11, 1);
	d[n++] = 1;
	d[n++] = 'x';
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ECORRUPT);

	/* truncated insert */
	n = build(d, 12, 5);
	d[n++] = 5;
	d[n++] = 'x';
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ECORRUPT);

	/* truncated copy arguments */
	n = build(d, 12, 5);
	d[n++] = 0x91;
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ECORRUPT);

	/* reserved opcode */
	n = build(d, 12, 5);
	d[n++] = 0;
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ECORRUPT);

	/* truncated size header */
	d[0] = 0x80;
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, 1, &out, &err), PW_ECORRUPT);
	/* absurd result size */
	n = build(d, 12, (uint64_t)1 << 40);
	CHECK_EQ_INT(pw_delta_apply((const uint8_t *)base, 12, d, n, &out, &err), PW_ETOOBIG);
	pw_buf_free(&out);
}

/* A header's result size justifies no memory: only instructions that really
 * produce it do (fuzz-delta's out-of-memory finding, issue 17). */
static void test_apply_no_upfront_alloc(void)
{
	/* fuzz-delta input 00 00 a8 f8 c0 f8 08 f5 62: empty base, 2.4 GB claimed */
	static const uint8_t claim[] = {0x00, 0xa8, 0xf8, 0xc0, 0xf8, 0x08, 0xf5, 0x62};
	static uint8_t base[1 << 16], d[64];
	struct pw_buf out = PW_BUF_INIT;
	struct pw_error err = {0};
	size_t n, i;

	CHECK_EQ_INT(pw_delta_apply(base, 0, claim, sizeof(claim), &out, &err), PW_ECORRUPT);
	CHECK_EQ_INT(out.cap, 0);

	/* a 1 GiB claim over a real base with one short copy */
	n = build(d, sizeof(base), (uint64_t)1 << 30);
	d[n++] = 0x91;
	d[n++] = 0;
	d[n++] = 5;
	CHECK_EQ_INT(pw_delta_apply(base, sizeof(base), d, n, &out, &err), PW_ECORRUPT);
	CHECK(strstr(err.msg, "header says") != NULL);
	CHECK_EQ_INT(out.cap, 0);

	/* what copies really produce is still built: 16 full copies of 64 KiB */
	for (i = 0; i < sizeof(base); i++)
		base[i] = (uint8_t)(i * 7);
	n = build(d, sizeof(base), 16 * sizeof(base));
	for (i = 0; i < 16; i++)
		d[n++] = 0x80; /* offset 0, size 0 = 0x10000 */
	CHECK_EQ_INT(pw_delta_apply(base, sizeof(base), d, n, &out, &err), 0);
	CHECK_EQ_INT(out.len, 16 * sizeof(base));
	CHECK(!memcmp(out.data + 15 * sizeof(base), base, sizeof(base)));
	pw_buf_free(&out);
}

static void test_entry_header(void)
{
	uint8_t buf[64];
	struct pw_pack_entry_hdr h;
	struct pw_error err = {0};
	size_t n;
	uint64_t sizes[] = {0, 15, 16, 127, 128, 1000000, (uint64_t)1 << 40};
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		n = pw_pack_entry_hdr_encode(buf, PW_OBJ_BLOB, sizes[i]);
		CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, n, 20, 100, &h, &err), 0);
		CHECK_EQ_INT(h.type, PW_OBJ_BLOB);
		CHECK(h.size == sizes[i]);
		CHECK_EQ_INT(h.hdr_len, n);
		if (n > 1)
			CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, n - 1, 20, 100, &h, &err),
			             PW_EMORE);
	}
	/* OFS_DELTA round trip */
	for (i = 1; i < 100000; i = i * 3 + 1) {
		n = pw_pack_entry_hdr_encode(buf, PW_OBJ_OFS_DELTA, 5);
		n += pw_pack_ofs_encode(buf + n, i);
		CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, n, 32, 200000, &h, &err), 0);
		CHECK(h.base_ofs == i);
		/* pointing before the pack start */
		CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, n, 32, i - 1, &h, &err), PW_ECORRUPT);
	}
	/* REF_DELTA needs rawsz more bytes */
	n = pw_pack_entry_hdr_encode(buf, PW_OBJ_REF_DELTA, 5);
	memset(buf + n, 0xab, 32);
	CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, n + 20, 32, 100, &h, &err), PW_EMORE);
	CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, n + 32, 32, 100, &h, &err), 0);
	CHECK_EQ_INT(h.hdr_len, n + 32);
	/* unknown type 5 */
	buf[0] = 5 << 4;
	CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, 1, 20, 100, &h, &err), PW_ECORRUPT);
	/* endless size varint */
	memset(buf, 0xff, sizeof(buf));
	CHECK_EQ_INT(pw_pack_entry_hdr_decode(buf, sizeof(buf), 20, 100, &h, &err), PW_ECORRUPT);
}

int main(void)
{
	test_apply_ok();
	test_apply_bad();
	test_apply_no_upfront_alloc();
	test_entry_header();
	return pw_test_done();
}
