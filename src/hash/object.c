#include <stdio.h>
#include <string.h>

#include "hash/object-pair.h"
#include "hash/sha1dc-priv.h"
#include "packwire/object.h"

static const char *const type_names[] = {NULL, "commit", "tree", "blob", "tag"};

const char *pw_object_type_name(int type)
{
	if (type >= PW_OBJ_COMMIT && type <= PW_OBJ_TAG)
		return type_names[type];
	return NULL;
}

int pw_object_type_from_name(const char *name, size_t len)
{
	int t;

	for (t = PW_OBJ_COMMIT; t <= PW_OBJ_TAG; t++)
		if (strlen(type_names[t]) == len && !memcmp(type_names[t], name, len))
			return t;
	return PW_OBJ_NONE;
}

size_t pw_object_header(char *hdr, int type, uint64_t size)
{
	int n = snprintf(hdr, 32, "%s %llu", pw_object_type_name(type), (unsigned long long)size);

	return (size_t)n + 1;
}

int pw_object_hash(const struct pw_hash_algo *algo, int type, const void *data, size_t len,
                   struct pw_oid *out)
{
	struct pw_hash_ctx ctx;
	char hdr[32];
	size_t hlen = pw_object_header(hdr, type, len);

	if (algo->id == PW_HASH_SHA1) {
		/* header, content and padding in one pass of the detector */
		memset(out, 0, sizeof(*out));
		out->algo = PW_HASH_SHA1;
		return pw_sha1dc_oneshot(hdr, hlen, data, len, out->id) ? PW_ECOLLISION : 0;
	}
	pw_hash_init(&ctx, algo);
	pw_hash_update(&ctx, hdr, hlen);
	pw_hash_update(&ctx, data, len);
	return pw_hash_final(&ctx, out);
}

int pw_object_hash_pair(const struct pw_hash_algo *algo, const struct pw_object_bytes in[2],
                        struct pw_oid out[2], int rc[2])
{
	char hdr[2][32];
	struct pw_sha1dc_msg m[2];
	uint8_t id[2][20];
	int i, r;

	if (algo->id != PW_HASH_SHA1) {
		for (i = 0; i < 2; i++)
			rc[i] = pw_object_hash(algo, in[i].type, in[i].data, in[i].len, &out[i]);
		return rc[0] ? rc[0] : rc[1];
	}
	for (i = 0; i < 2; i++) {
		m[i].a = hdr[i];
		m[i].alen = pw_object_header(hdr[i], in[i].type, in[i].len);
		m[i].b = in[i].data;
		m[i].blen = in[i].len;
	}
	r = pw_sha1dc_oneshot2(m, id);
	for (i = 0; i < 2; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].algo = PW_HASH_SHA1;
		memcpy(out[i].id, id[i], 20);
		rc[i] = r >> i & 1 ? PW_ECOLLISION : 0;
	}
	return rc[0] ? rc[0] : rc[1];
}
