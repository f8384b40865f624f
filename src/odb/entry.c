#include "odb/entry.h"
#include "packwire/object.h"

int pw_pack_entry_hdr_decode(const uint8_t *p, size_t avail, size_t rawsz, uint64_t offset,
                             struct pw_pack_entry_hdr *out, struct pw_error *err)
{
	size_t i = 0;
	uint64_t size;
	unsigned shift = 4;
	uint8_t c;

	if (!avail)
		return PW_EMORE;
	c = p[i++];
	out->type = (c >> 4) & 7;
	size = c & 15;
	while (c & 0x80) {
		if (i >= avail)
			return PW_EMORE;
		if (shift > 57)
			return pw_error_set(err, PW_ECORRUPT,
			                    "pack entry at offset %llu: size varint too long",
			                    (unsigned long long)offset);
		c = p[i++];
		size |= (uint64_t)(c & 0x7f) << shift;
		shift += 7;
	}
	out->size = size;
	out->base_ofs = 0;
	out->base_raw = NULL;
	switch (out->type) {
	case PW_OBJ_COMMIT:
	case PW_OBJ_TREE:
	case PW_OBJ_BLOB:
	case PW_OBJ_TAG:
		break;
	case PW_OBJ_OFS_DELTA: {
		uint64_t ofs;

		if (i >= avail)
			return PW_EMORE;
		c = p[i++];
		ofs = c & 0x7f;
		while (c & 0x80) {
			if (i >= avail)
				return PW_EMORE;
			if (ofs > (UINT64_MAX >> 7) - 1)
				return pw_error_set(err, PW_ECORRUPT,
				                    "pack entry at offset %llu: delta base offset "
				                    "overflows",
				                    (unsigned long long)offset);
			c = p[i++];
			ofs = ((ofs + 1) << 7) | (c & 0x7f);
		}
		if (ofs == 0)
			return pw_error_set(err, PW_ECORRUPT,
			                    "pack entry at offset %llu: delta base offset 0 makes "
			                    "the delta its own base",
			                    (unsigned long long)offset);
		if (ofs > offset)
			return pw_error_set(err, PW_ECORRUPT,
			                    "pack entry at offset %llu: delta base offset %llu "
			                    "points outside the pack",
			                    (unsigned long long)offset, (unsigned long long)ofs);
		out->base_ofs = ofs;
		break;
	}
	case PW_OBJ_REF_DELTA:
		if (avail - i < rawsz)
			return PW_EMORE;
		out->base_raw = p + i;
		i += rawsz;
		break;
	default:
		return pw_error_set(err, PW_ECORRUPT,
		                    "pack entry at offset %llu: unknown object type %d",
		                    (unsigned long long)offset, out->type);
	}
	out->hdr_len = i;
	return 0;
}

size_t pw_pack_entry_hdr_encode(uint8_t *out, int type, uint64_t size)
{
	size_t n = 0;
	uint8_t c = (uint8_t)((type & 7) << 4 | (size & 15));

	size >>= 4;
	while (size) {
		out[n++] = c | 0x80;
		c = size & 0x7f;
		size >>= 7;
	}
	out[n++] = c;
	return n;
}

size_t pw_pack_ofs_encode(uint8_t *out, uint64_t distance)
{
	uint8_t tmp[10];
	size_t pos = sizeof(tmp) - 1, n;

	tmp[pos] = distance & 0x7f;
	while (distance >>= 7)
		tmp[--pos] = 0x80 | (--distance & 0x7f);
	n = sizeof(tmp) - pos;
	for (size_t i = 0; i < n; i++)
		out[i] = tmp[pos + i];
	return n;
}

int pw_pack_header_decode(const uint8_t *p, size_t avail, uint32_t *nr_objects,
                          struct pw_error *err)
{
	uint32_t version;

	if (avail < PW_PACK_HEADER_SIZE)
		return PW_EMORE;
	if (pw_get_be32(p) != PW_PACK_SIGNATURE)
		return pw_error_set(err, PW_ECORRUPT, "not a pack: bad signature");
	version = pw_get_be32(p + 4);
	if (version != 2 && version != 3)
		return pw_error_set(err, PW_EUNSUPPORTED, "pack version %u is not supported",
		                    version);
	*nr_objects = pw_get_be32(p + 8);
	return 0;
}

void pw_pack_header_encode(uint8_t *out, uint32_t nr_objects)
{
	pw_put_be32(out, PW_PACK_SIGNATURE);
	pw_put_be32(out + 4, 2);
	pw_put_be32(out + 8, nr_objects);
}
