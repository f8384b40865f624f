/* Fuzz the compat readers: byte 0 chooses what the rest is. Its low two
 * bits: 0 = a loose-object-idx, 1 = a pack side file (the next 4 bytes give
 * the pack's object count), 2 and 3 = an object's content to translate
 * (bits 2-3 give its type). Bit 7 chooses sha1 rather than sha256 storage. */
#include <stddef.h>
#include <stdint.h>

#include "packwire/compat.h"
#include "packwire/object.h"

static int any_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	const struct pw_hash_algo *to = data;

	/* ids starting with 0xff are unknown */
	if (from->id[0] == 0xff)
		return PW_ENOTFOUND;
	(void)!pw_hash_buf(to, from->id, pw_oid_rawsz(from), out);
	return 0;
}

static int count(void *data, const struct pw_oid *oid)
{
	(void)oid;
	(*(int *)data)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *s, *c;
	struct pw_error err;
	struct pw_buf out = PW_BUF_INIT;
	uint8_t sel;
	int n = 0;

	if (!size)
		return 0;
	sel = data[0];
	s = sel & 0x80 ? &pw_hash_sha1 : &pw_hash_sha256;
	c = sel & 0x80 ? &pw_hash_sha256 : &pw_hash_sha1;
	data++;
	size--;
	switch (sel & 3) {
	case 0:
		pw_compat_loose_idx_parse((const char *)data, size, s, c, NULL, NULL, &err);
		break;
	case 1:
		if (size >= 4) {
			uint32_t nr = (uint32_t)data[0] << 24 | (uint32_t)data[1] << 16 |
			              (uint32_t)data[2] << 8 | data[3];

			pw_compat_pack_map_check(data + 4, size - 4, s, nr, NULL, 1, &err);
		}
		break;
	default: {
		static const int types[4] = {PW_OBJ_TREE, PW_OBJ_COMMIT, PW_OBJ_TAG, PW_OBJ_BLOB};
		int type = types[(sel >> 2) & 3];

		pw_buf_init(&out, (size_t)1 << 24);
		pw_compat_convert(&out, type, data, size, s, c, any_lookup, (void *)c, &err);
		pw_compat_references(type, data, size, s, count, &n, &err);
		pw_buf_free(&out);
		break;
	}
	}
	return 0;
}
