/* index-pack as a command: temporary files, renames, .keep files. Nothing is
 * renamed into place before every check has passed; on any failure the
 * temporary files are removed. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odb/entry.h"
#include "pack/index-pack.h"
#include "util/fs.h"

/* "dir/name" of a path (malloc'd), "." when it has no slash. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* path with `from` suffix replaced by `to`; NULL when it does not end so. */
static char *swap_suffix(const char *path, const char *from, const char *to)
{
	size_t n = strlen(path), f = strlen(from);
	char *out;

	if (n < f || strcmp(path + n - f, from))
		return NULL;
	out = malloc(n - f + strlen(to) + 1);
	if (out) {
		memcpy(out, path, n - f);
		strcpy(out + n - f, to);
	}
	return out;
}

static int make_tmp(const char *dir, const char *prefix, char **path, int *fd, struct pw_error *err)
{
	size_t n = strlen(dir) + strlen(prefix) + 16;
	char *p = malloc(n);

	if (!p)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	snprintf(p, n, "%s/%sXXXXXX", dir, prefix);
	/* read-only, as Git makes packs and indexes: 0444 less the umask (the
	 * descriptor we write through is read-write all the same) */
	*fd = pw_fs_mkstemp_mode(p, 0444);
	if (*fd < 0) {
		int rc = pw_error_set(err, PW_EIO, "cannot create a temporary file in %s: %s", dir,
		                      strerror(errno));

		free(p);
		return rc;
	}
	*path = p;
	return 0;
}

static int write_idx_tmp(struct pw_ipack *ip, const struct pw_index_pack_args *args,
                         const char *dir, char **tmp, struct pw_error *err)
{
	struct pw_idx_write_opts wo = {args->idx_version ? args->idx_version : 2,
	                               args->off32_limit};
	int fd, rc;

	if ((rc = make_tmp(dir, "tmp_idx_", tmp, &fd, err)))
		return rc;
	rc = pw_idx_write_fd(args->opts.algo, pw_ipack_sorted(ip), pw_ipack_nr_objects(ip),
	                     pw_ipack_checksum(ip), &wo, fd, NULL, err);
	if (close(fd) && !rc)
		rc = pw_error_set(err, PW_EIO, "cannot write %s: %s", *tmp, strerror(errno));
	return rc;
}

/* --verify: the index we would write must equal the existing one. */
static int verify_idx(struct pw_ipack *ip, const struct pw_index_pack_args *args,
                      const char *idx_path, struct pw_error *err)
{
	struct pw_buf have = PW_BUF_INIT, want = PW_BUF_INIT;
	struct pw_idx_write_opts wo = {2, args->off32_limit};
	int rc;

	rc = pw_fs_read_file(idx_path, &have, 0, err);
	if (rc)
		goto out;
	if (have.len >= 8 && pw_get_be32((uint8_t *)have.data) == PW_IDX_SIGNATURE)
		wo.version = (int)pw_get_be32((uint8_t *)have.data + 4);
	else
		wo.version = 1;
	rc = pw_idx_write_buf(args->opts.algo, pw_ipack_sorted(ip), pw_ipack_nr_objects(ip),
	                      pw_ipack_checksum(ip), &wo, &want, NULL, err);
	if (rc)
		goto out;
	if (have.len != want.len || memcmp(have.data, want.data, have.len))
		rc = pw_error_set(err, PW_EMISMATCH,
		                  "%s does not match the pack (index damaged, or made for "
		                  "another pack)",
		                  idx_path);
out:
	pw_buf_free(&have);
	pw_buf_free(&want);
	return rc;
}

static void to_hex(const struct pw_ipack *ip, const struct pw_hash_algo *algo, char *hex)
{
	struct pw_oid oid;

	pw_oid_from_raw(&oid, pw_ipack_checksum(ip), algo);
	pw_oid_to_hex(&oid, hex);
}

int pw_index_pack_file(const struct pw_index_pack_args *args, const char *pack_path,
                       const char *idx_path, char *hex, struct pw_error *err)
{
	const struct pw_hash_algo *algo = args->opts.algo;
	struct pw_ipack *ip = NULL;
	char *own_idx = NULL, *tmp = NULL, *dir = NULL;
	int rc;

	if (args->self_contained)
		*args->self_contained = 0;
	if (!idx_path) {
		idx_path = own_idx = swap_suffix(pack_path, ".pack", ".idx");
		if (!idx_path)
			return pw_error_set(err, PW_EINVAL,
			                    "packfile name '%s' does not end with '.pack'",
			                    pack_path);
	}
	if ((rc = pw_ipack_new(&ip, &args->opts, err)))
		goto out;
	if ((rc = pw_ipack_parse_file(ip, pack_path)) || (rc = pw_ipack_resolve(ip))) {
		pw_error_copy(err, pw_ipack_error(ip));
		if (rc != PW_ENOTFOUND)
			pw_error_wrap(err, "%s", pack_path);
		goto out;
	}
	to_hex(ip, algo, hex);
	if (args->self_contained)
		*args->self_contained = pw_ipack_self_contained(ip);
	if (args->verify) {
		rc = verify_idx(ip, args, idx_path, err);
		goto out;
	}
	dir = dir_of(idx_path);
	if (!dir) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = write_idx_tmp(ip, args, dir, &tmp, err)))
		goto out;
	if (rename(tmp, idx_path)) {
		rc = pw_error_set(err, PW_EIO, "cannot rename %s to %s: %s", tmp, idx_path,
		                  strerror(errno));
		goto out;
	}
	free(tmp);
	tmp = NULL;
out:
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	pw_ipack_free(ip);
	free(dir);
	free(own_idx);
	return rc;
}

/* Where the pack and its index go: pack_path (else pack-<hex>.pack in dir),
 * idx_path (else the pack's name with .idx), and the index's folder. */
static int final_names(const char *dir, const char *pack_path, const char *idx_path,
                       const char *hex, char **final_pack, char **final_idx, char **idx_dir,
                       struct pw_error *err)
{
	if (pack_path) {
		*final_pack = strdup(pack_path);
	} else {
		size_t n = strlen(dir) + PW_MAX_HEXSZ + 16;

		*final_pack = malloc(n);
		if (*final_pack)
			snprintf(*final_pack, n, "%s/pack-%s.pack", dir, hex);
	}
	if (!*final_pack)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	*final_idx = idx_path ? strdup(idx_path) : swap_suffix(*final_pack, ".pack", ".idx");
	if (!*final_idx)
		return pw_error_set(err, PW_EINVAL, "packfile name '%s' does not end with '.pack'",
		                    *final_pack);
	if (!(*idx_dir = dir_of(*final_idx)))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

/* The .keep file (--keep): *made says whether we created it (an existing
 * one is left as it is). */
static int write_keep(const char *keep, const char *msg, int *made, struct pw_error *err)
{
	int kfd = open(keep, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	size_t ml = strlen(msg);
	int bad = 0;

	if (kfd < 0) {
		if (errno == EEXIST)
			return 0;
		return pw_error_set(err, PW_EIO, "cannot create keep file '%s': %s", keep,
		                    strerror(errno));
	}
	if (ml && (write(kfd, msg, ml) != (ssize_t)ml || write(kfd, "\n", 1) != 1))
		bad = 1;
	if (close(kfd) || bad) {
		unlink(keep);
		return pw_error_set(err, PW_EIO, "cannot write keep file '%s'", keep);
	}
	*made = 1;
	return 0;
}

int pw_index_pack_stream(const struct pw_index_pack_args *args, int in_fd, const char *pack_dir,
                         const char *pack_path, const char *idx_path, char *hex, int *kept,
                         struct pw_error *err)
{
	const struct pw_hash_algo *algo = args->opts.algo;
	struct pw_ipack *ip = NULL;
	char *tmp_pack = NULL, *tmp_idx = NULL, *final_pack = NULL, *final_idx = NULL;
	char *keep = NULL, *dir = NULL, *idx_dir = NULL;
	int fd = -1, rc, keep_made = 0;

	*kept = 0;
	if (args->self_contained)
		*args->self_contained = 0;
	dir = pack_path ? dir_of(pack_path) : strdup(pack_dir);
	if (!dir)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if ((rc = make_tmp(dir, "tmp_pack_", &tmp_pack, &fd, err)))
		goto out;
	if ((rc = pw_ipack_new(&ip, &args->opts, err)))
		goto out;
	if ((rc = pw_ipack_parse_fd(ip, in_fd, fd)) || (rc = pw_ipack_resolve(ip))) {
		pw_error_copy(err, pw_ipack_error(ip));
		goto out;
	}
	to_hex(ip, algo, hex);
	if (args->self_contained)
		*args->self_contained = pw_ipack_self_contained(ip);
	if ((rc = final_names(dir, pack_path, idx_path, hex, &final_pack, &final_idx, &idx_dir,
	                      err)))
		goto out;
	if (close(fd)) {
		fd = -1;
		rc = pw_error_set(err, PW_EIO, "cannot write %s: %s", tmp_pack, strerror(errno));
		goto out;
	}
	fd = -1;
	if ((rc = write_idx_tmp(ip, args, idx_dir, &tmp_idx, err)))
		goto out;
	if (args->keep_msg) {
		keep = swap_suffix(final_pack, ".pack", ".keep");
		if (!keep) {
			rc = pw_error_set(err, PW_EINVAL, "cannot name a .keep file for %s",
			                  final_pack);
			goto out;
		}
		if ((rc = write_keep(keep, args->keep_msg, &keep_made, err)))
			goto out;
	}
	if (rename(tmp_pack, final_pack)) {
		rc = pw_error_set(err, PW_EIO, "cannot store pack file %s: %s", final_pack,
		                  strerror(errno));
		goto out;
	}
	free(tmp_pack);
	tmp_pack = NULL;
	if (rename(tmp_idx, final_idx)) {
		rc = pw_error_set(err, PW_EIO, "cannot store index file %s: %s", final_idx,
		                  strerror(errno));
		goto out;
	}
	free(tmp_idx);
	tmp_idx = NULL;
	*kept = keep_made;
	keep_made = 0;
out:
	if (fd >= 0)
		close(fd);
	if (tmp_pack)
		unlink(tmp_pack);
	if (tmp_idx)
		unlink(tmp_idx);
	if (keep_made)
		unlink(keep);
	free(tmp_pack);
	free(tmp_idx);
	free(final_pack);
	free(final_idx);
	free(keep);
	free(dir);
	free(idx_dir);
	pw_ipack_free(ip);
	return rc;
}
