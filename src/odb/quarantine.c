/* Quarantine object directories: see quarantine.h. */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "odb/quarantine.h"
#include "packwire/buf.h"
#include "util/fs.h"

int pw_quarantine_create(char **dir, const char *objects_dir, struct pw_error *err)
{
	struct pw_buf p = PW_BUF_INIT, alt = PW_BUF_INIT;
	char real[PATH_MAX];
	int rc = 0;

	*dir = NULL;
	if (!realpath(objects_dir, real))
		return pw_error_set(err, PW_EIO, "cannot resolve %s: %s", objects_dir,
		                    strerror(errno));
	if (pw_buf_addf(&p, "%s/tmp_objdir-incoming-XXXXXX", real)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	if (!mkdtemp(p.data)) {
		rc = pw_error_set(err, PW_EIO, "cannot create a quarantine directory in %s: %s",
		                  real, strerror(errno));
		goto fail;
	}
	*dir = strdup(p.data);
	if (!*dir) {
		rmdir(p.data);
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	pw_buf_reset(&p);
	if (pw_buf_addf(&p, "%s/pack", *dir) || pw_buf_addf(&alt, "%s\n", real)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = pw_fs_mkdir_p(p.data, err)))
		goto fail;
	pw_buf_reset(&p);
	if (pw_buf_addf(&p, "%s/info", *dir)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = pw_fs_mkdir_p(p.data, err)))
		goto fail;
	if (pw_buf_adds(&p, "/alternates")) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail;
	}
	if ((rc = pw_fs_write_atomic(p.data, alt.data, alt.len, err)))
		goto fail;
	pw_buf_free(&p);
	pw_buf_free(&alt);
	return 0;
fail:
	if (*dir) {
		pw_quarantine_remove(*dir);
		free(*dir);
		*dir = NULL;
	}
	pw_buf_free(&p);
	pw_buf_free(&alt);
	return rc;
}

/* Put src at dst: a hard link keeps an existing dst untouched (Git does the
 * same: an object file of that name already has that content). */
static int move_file(const char *src, const char *dst, struct pw_error *err)
{
	if (!link(src, dst) || errno == EEXIST) {
		unlink(src);
		return 0;
	}
	if (!rename(src, dst))
		return 0;
	return pw_error_set(err, PW_EIO, "cannot move %s to %s: %s", src, dst, strerror(errno));
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* Move the regular files of src into dst (created when needed); with
 * idx_last, ".idx" files go after all others. */
static int move_dir(const char *src, const char *dst, int idx_last, struct pw_error *err)
{
	int pass, rc = 0;

	for (pass = 0; pass < (idx_last ? 2 : 1) && !rc; pass++) {
		DIR *d = opendir(src);
		struct dirent *e;

		if (!d)
			return errno == ENOENT ? 0
			                       : pw_error_set(err, PW_EIO, "cannot read %s: %s",
			                                      src, strerror(errno));
		while (!rc && (e = readdir(d))) {
			char *s, *t;
			struct stat st;

			if (e->d_name[0] == '.')
				continue;
			if (idx_last && (pass == 0) == ends_with(e->d_name, ".idx"))
				continue;
			s = pw_path_join(src, e->d_name);
			t = pw_path_join(dst, e->d_name);
			if (!s || !t)
				rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			else if (lstat(s, &st) || !S_ISREG(st.st_mode))
				; /* only regular files are objects */
			else if (!(rc = pw_fs_mkdir_p(dst, err)))
				rc = move_file(s, t, err);
			free(s);
			free(t);
		}
		closedir(d);
	}
	return rc;
}

static int is_hex2(const char *s)
{
	static const char hex[] = "0123456789abcdef";

	return s[0] && s[1] && !s[2] && strchr(hex, s[0]) && strchr(hex, s[1]);
}

int pw_quarantine_migrate(const char *dir, const char *objects_dir, struct pw_error *err)
{
	char *src = pw_path_join(dir, "pack"), *dst = pw_path_join(objects_dir, "pack");
	DIR *d;
	struct dirent *e;
	int rc;

	if (!src || !dst) {
		free(src);
		free(dst);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	rc = move_dir(src, dst, 1, err);
	free(src);
	free(dst);
	if (rc)
		return rc;
	/* loose objects, if anything wrote some */
	d = opendir(dir);
	if (!d)
		return pw_error_set(err, PW_EIO, "cannot read %s: %s", dir, strerror(errno));
	while (!rc && (e = readdir(d))) {
		if (!is_hex2(e->d_name))
			continue;
		src = pw_path_join(dir, e->d_name);
		dst = pw_path_join(objects_dir, e->d_name);
		if (!src || !dst)
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		else
			rc = move_dir(src, dst, 0, err);
		free(src);
		free(dst);
	}
	closedir(d);
	return rc;
}

void pw_quarantine_remove(const char *dir)
{
	if (dir && *dir)
		pw_fs_remove_tree(dir, 0);
}
