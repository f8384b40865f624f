#include <stdlib.h>
#include <string.h>

#include "odb/entry.h"
#include "pack/idx-write.h"
#include "pack/verify-pack.h"
#include "util/fs.h"

/* Does an index of `len` bytes fit `rawsz`-byte ids? */
static int fits(const uint8_t *idx, size_t len, size_t rawsz)
{
	uint64_t n, fixed;

	if (len >= 8 && pw_get_be32(idx) == PW_IDX_SIGNATURE) {
		if (len < 8 + 1024)
			return 0;
		n = pw_get_be32(idx + 8 + 255 * 4);
		fixed = 8 + 1024 + n * (rawsz + 8) + 2 * rawsz;
		return len >= fixed && (len - fixed) % 8 == 0 && (len - fixed) / 8 <= n;
	}
	if (len < 1024)
		return 0;
	n = pw_get_be32(idx + 255 * 4);
	return len == 1024 + n * (rawsz + 4) + 2 * rawsz;
}

const struct pw_hash_algo *pw_idx_guess_algo(const uint8_t *idx, size_t len)
{
	int a = fits(idx, len, 20), b = fits(idx, len, 32);

	if (a && !b)
		return &pw_hash_sha1;
	if (b && !a)
		return &pw_hash_sha256;
	if (a && b)
		return &pw_hash_sha1; /* only an empty index fits both */
	return NULL;
}

int pw_idx_verify(const struct pw_ipack *ip, const struct pw_hash_algo *algo, const uint8_t *idx,
                  size_t len, const char *name, struct pw_error *err)
{
	const struct pw_idx_entry *const *e = pw_ipack_sorted(ip);
	uint32_t nr = pw_ipack_nr_objects(ip), i, n;
	size_t rawsz = algo->rawsz;
	const uint8_t *fan, *names, *crcs = NULL, *offs, *large = NULL, *trailer;
	int v2 = len >= 8 && pw_get_be32(idx) == PW_IDX_SIGNATURE;
	uint8_t sum[PW_MAX_RAWSZ];
	uint32_t fanout[256] = {0};

	if (!fits(idx, len, rawsz))
		return pw_error_set(err, PW_ECORRUPT,
		                    "%s: not a %s pack index (wrong size or version)", name,
		                    algo->name);
	if (v2 && pw_get_be32(idx + 4) != 2)
		return pw_error_set(err, PW_EUNSUPPORTED, "%s: index version %u is not supported",
		                    name, pw_get_be32(idx + 4));
	trailer = idx + len - 2 * rawsz;
	{
		struct pw_hash_ctx h;

		pw_hash_init_checksum(&h, algo); /* the .idx trailer */
		pw_hash_update(&h, idx, len - rawsz);
		pw_hash_final_checksum(&h, sum);
	}
	if (memcmp(sum, trailer + rawsz, rawsz))
		return pw_error_set(err, PW_ECORRUPT, "%s: index checksum mismatch (index corrupt)",
		                    name);
	if (memcmp(trailer, pw_ipack_checksum(ip), rawsz))
		return pw_error_set(err, PW_EMISMATCH,
		                    "%s: the index was made for another pack (pack checksum "
		                    "differs)",
		                    name);
	fan = v2 ? idx + 8 : idx;
	n = pw_get_be32(fan + 255 * 4);
	if (n != nr)
		return pw_error_set(err, PW_EMISMATCH,
		                    "%s: the index lists %u objects, the pack holds %u", name, n,
		                    nr);
	for (i = 0; i < nr; i++)
		fanout[e[i]->oid.id[0]]++;
	for (i = 0; i < 256; i++) {
		if (i)
			fanout[i] += fanout[i - 1];
		if (pw_get_be32(fan + i * 4) != fanout[i])
			return pw_error_set(err, PW_ECORRUPT, "%s: bad fan-out table", name);
	}
	if (v2) {
		names = fan + 1024;
		crcs = names + (size_t)nr * rawsz;
		offs = crcs + (size_t)nr * 4;
		large = offs + (size_t)nr * 4;
	} else {
		names = fan + 1024 + 4;
		offs = fan + 1024;
	}
	for (i = 0; i < nr; i++) {
		const uint8_t *id =
		        v2 ? names + (size_t)i * rawsz : names + (size_t)i * (rawsz + 4);
		uint64_t off;
		char hex[PW_MAX_HEXSZ + 1];

		if (v2) {
			off = pw_get_be32(offs + (size_t)i * 4);
			if (off & 0x80000000u) {
				uint64_t k = off & 0x7fffffffu;

				if (large + (k + 1) * 8 > trailer)
					return pw_error_set(err, PW_ECORRUPT,
					                    "%s: bad 64-bit offset index", name);
				off = pw_get_be64(large + k * 8);
			}
		} else {
			off = pw_get_be32(offs + (size_t)i * (rawsz + 4));
		}
		if (memcmp(id, e[i]->oid.id, rawsz))
			return pw_error_set(err, PW_EMISMATCH,
			                    "%s: object %s of the pack is not where the index "
			                    "lists it",
			                    name, pw_oid_to_hex(&e[i]->oid, hex));
		if (off != e[i]->offset)
			return pw_error_set(err, PW_EMISMATCH,
			                    "%s: object %s is at offset %llu, the index says %llu",
			                    name, pw_oid_to_hex(&e[i]->oid, hex),
			                    (unsigned long long)e[i]->offset,
			                    (unsigned long long)off);
		if (crcs && pw_get_be32(crcs + (size_t)i * 4) != e[i]->crc32)
			return pw_error_set(err, PW_EMISMATCH,
			                    "%s: CRC mismatch for object %s (pack entry damaged)",
			                    name, pw_oid_to_hex(&e[i]->oid, hex));
	}
	return 0;
}

static char *with_suffix(const char *path, const char *suffix)
{
	size_t n = strlen(path);
	char *out;

	if (n > 4 && !strcmp(path + n - 4, ".idx"))
		n -= 4;
	else if (n > 5 && !strcmp(path + n - 5, ".pack"))
		n -= 5;
	out = malloc(n + strlen(suffix) + 1);
	if (out) {
		memcpy(out, path, n);
		strcpy(out + n, suffix);
	}
	return out;
}

int pw_verify_pack(const char *path, const struct pw_hash_algo *algo, int stat_only,
                   struct pw_ipack **out, char **pack_path, struct pw_error *err)
{
	struct pw_buf idx = PW_BUF_INIT;
	struct pw_ipack_opts opts;
	struct pw_ipack *ip = NULL;
	char *idx_path = with_suffix(path, ".idx");
	int rc;

	*out = NULL;
	*pack_path = with_suffix(path, ".pack");
	if (!idx_path || !*pack_path) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto done;
	}
	if ((rc = pw_fs_read_file(idx_path, &idx, 0, err)))
		goto done;
	if (!algo)
		algo = pw_idx_guess_algo((uint8_t *)idx.data, idx.len);
	if (!algo) {
		rc = pw_error_set(err, PW_ECORRUPT, "%s: not a pack index (size fits no format)",
		                  idx_path);
		goto done;
	}
	memset(&opts, 0, sizeof(opts));
	opts.algo = algo;
	if ((rc = pw_ipack_new(&ip, &opts, err)))
		goto done;
	if ((rc = pw_ipack_parse_file(ip, *pack_path)) || (rc = pw_ipack_resolve(ip))) {
		pw_error_copy(err, pw_ipack_error(ip));
		if (rc != PW_ENOTFOUND)
			pw_error_wrap(err, "%s", *pack_path);
		goto done;
	}
	if (!stat_only &&
	    (rc = pw_idx_verify(ip, algo, (uint8_t *)idx.data, idx.len, idx_path, err)))
		goto done;
	*out = ip;
	ip = NULL;
done:
	pw_ipack_free(ip);
	pw_buf_free(&idx);
	free(idx_path);
	return rc;
}
