#include <stdio.h>
#include <string.h>

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
