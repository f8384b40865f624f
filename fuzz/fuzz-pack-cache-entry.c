/* Fuzz the pack-cache entry decoder (a cache file is read while another
 * process may still be writing it, and may be damaged): the first byte
 * picks how the rest, the entry file, is fed. 0 in the low bit: whole;
 * else in growing pieces of (byte >> 1) + 1 bytes, as a reader sees a file
 * grow, each piece copied to a buffer of exactly its size so that a read
 * past it is caught. Every record is decoded until the end, a failure
 * record or an error; the data seen must add up to the end's total. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/pack-cache-entry.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

/* Decode in[0..len), len growing by step (0 = all at once). */
static void run(const uint8_t *in, size_t len, size_t step)
{
	struct pw_pc_reader r = {0};
	struct pw_pc_record rec;
	struct pw_error err;
	size_t off = 0, avail = step ? (step < len ? step : len) : len, used;
	uint64_t total = 0;
	uint8_t *buf;
	int rc;

	for (;;) {
		buf = malloc(avail - off ? avail - off : 1);
		if (!buf)
			return;
		memcpy(buf, in + off, avail - off);
		if (!r.have_header) {
			rc = pw_pc_read_header(&r, buf, avail - off, NULL, &used, &err);
			if (!rc) {
				check(used == PW_PC_HDR_SIZE);
				off += used;
				free(buf);
				continue;
			}
		} else {
			rc = pw_pc_read_record(&r, buf, avail - off, &rec, &err);
			if (!rc) {
				check(rec.size <= avail - off);
				off += rec.size;
				if (rec.kind == PW_PC_DATA) {
					check(rec.len >= 1 && rec.len <= r.record_size);
					total += rec.len;
				} else if (rec.kind == PW_PC_END) {
					check(rec.end.total == total);
				} else {
					check(rec.len <= PW_PC_MSG_MAX);
				}
				free(buf);
				if (rec.kind != PW_PC_DATA) {
					/* nothing may follow */
					if (off < len) {
						rc = pw_pc_read_record(&r, in + off, len - off,
						                       &rec, &err);
						check(rc == PW_ECORRUPT);
					}
					return;
				}
				continue;
			}
			if (rc == PW_EMORE)
				check(rec.size > avail - off);
		}
		free(buf);
		if (rc != PW_EMORE || avail == len)
			return;
		avail = step && len - avail > step ? avail + step : len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	run(data + 1, size - 1, data[0] & 1 ? (size_t)(data[0] >> 1) + 1 : 0);
	return 0;
}
