#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fs.h"

int pw_fs_read_file(const char *path, struct pw_buf *out, size_t max, struct pw_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc;
	struct stat st;

	pw_buf_reset(out);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return pw_error_set(err, PW_ENOTFOUND, "%s: no such file", path);
		return pw_error_set(err, PW_EIO, "%s: cannot open: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) == 0 && st.st_size > 0) {
		if (max && (size_t)st.st_size > max) {
			close(fd);
			return pw_error_set(err, PW_ETOOBIG, "%s: file is larger than %zu bytes",
			                    path, max);
		}
		if ((rc = pw_buf_grow(out, (size_t)st.st_size))) {
			close(fd);
			return pw_error_set(err, rc, "%s: out of memory", path);
		}
	}
	for (;;) {
		ssize_t n;

		if ((rc = pw_buf_grow(out, 8192))) {
			close(fd);
			return pw_error_set(err, rc, "%s: file too large", path);
		}
		n = read(fd, out->data + out->len, out->cap - out->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = pw_error_set(err, PW_EIO, "%s: read error: %s", path, strerror(errno));
			close(fd);
			return rc;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		if (max && out->len > max) {
			close(fd);
			return pw_error_set(err, PW_ETOOBIG, "%s: file is larger than %zu bytes",
			                    path, max);
		}
	}
	out->data[out->len] = '\0';
	close(fd);
	return 0;
}

int pw_fs_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

int pw_fs_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int pw_fs_path_inside(const char *base, const char *path)
{
	char *rb = realpath(base, NULL), *rp = realpath(path, NULL);
	size_t n;
	int ok = 0;

	if (rb && rp) {
		n = strlen(rb);
		while (n > 1 && rb[n - 1] == '/')
			n--;
		ok = !strncmp(rb, rp, n) && (rp[n] == '/' || !rp[n] || n == 1);
	}
	free(rb);
	free(rp);
	return ok;
}

int pw_fs_mkdir_p(const char *path, struct pw_error *err)
{
	char *p = strdup(path), *s;

	if (!p)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (s = p + 1;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, 0777) && errno != EEXIST) {
				int rc = pw_error_set(err, PW_EIO, "cannot create directory %s: %s",
				                      p, strerror(errno));
				free(p);
				return rc;
			}
			*s = c;
			if (!c)
				break;
		}
	}
	free(p);
	return 0;
}

int pw_fs_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				/* a non-blocking pipe or socket: wait until it drains */
				struct pollfd pfd = {fd, POLLOUT, 0};

				poll(&pfd, 1, -1);
				continue;
			}
			return -1;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pw_fs_pwrite_all(int fd, const void *data, size_t len, uint64_t off)
{
	const char *p = data;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = EIO;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

int pw_fs_mkstemp_mode(char *tmpl, int mode)
{
	static const char chars[] =
	        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static unsigned long counter;
	size_t n = strlen(tmpl), i;
	int tries, fd;

	if (n < 6 || strcmp(tmpl + n - 6, "XXXXXX")) {
		errno = EINVAL;
		return -1;
	}
	for (tries = 0; tries < 100; tries++) {
		unsigned char r[6];

		if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
			struct timespec ts;
			unsigned long long x;

			clock_gettime(CLOCK_REALTIME, &ts);
			x = (unsigned long long)ts.tv_nsec ^ ((unsigned long long)getpid() << 32) ^
			    (__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) *
			     0x9E3779B97F4A7C15ull);
			for (i = 0; i < sizeof(r); i++, x >>= 8)
				r[i] = (unsigned char)x;
		}
		for (i = 0; i < 6; i++)
			tmpl[n - 6 + i] = chars[r[i] % (sizeof(chars) - 1)];
		fd = open(tmpl, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

int pw_fs_write_atomic(const char *path, const void *data, size_t len, struct pw_error *err)
{
	struct pw_lock lk;
	int rc = pw_lock_acquire(&lk, path, err);

	if (rc)
		return rc;
	if ((rc = pw_lock_write(&lk, data, len, err))) {
		pw_lock_rollback(&lk);
		return rc;
	}
	return pw_lock_commit(&lk, err);
}

char *pw_path_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = malloc(dl + nl + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, dl);
	if (dl && dir[dl - 1] != '/')
		p[dl++] = '/';
	memcpy(p + dl, name, nl + 1);
	return p;
}

int pw_lock_acquire(struct pw_lock *lk, const char *path, struct pw_error *err)
{
	size_t n = strlen(path);

	lk->fd = -1;
	lk->path = strdup(path);
	lk->lock_path = malloc(n + 6);
	if (!lk->path || !lk->lock_path) {
		free(lk->path);
		free(lk->lock_path);
		lk->path = lk->lock_path = NULL;
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	memcpy(lk->lock_path, path, n);
	memcpy(lk->lock_path + n, ".lock", 6);
	lk->fd = open(lk->lock_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (lk->fd < 0) {
		int e = errno, rc;

		if (e == EEXIST)
			rc = pw_error_set(err, PW_ELOCKED,
			                  "unable to create '%s': File exists. Another process "
			                  "seems to be updating it; if it crashed, remove the file",
			                  lk->lock_path);
		else
			rc = pw_error_set(err, PW_EIO, "unable to create '%s': %s", lk->lock_path,
			                  strerror(e));
		free(lk->path);
		free(lk->lock_path);
		lk->path = lk->lock_path = NULL;
		return rc;
	}
	return 0;
}

int pw_lock_write(struct pw_lock *lk, const void *data, size_t len, struct pw_error *err)
{
	if (lk->fd < 0 || pw_fs_write_all(lk->fd, data, len))
		return pw_error_set(err, PW_EIO, "cannot write %s: %s", lk->lock_path,
		                    strerror(errno));
	return 0;
}

int pw_lock_close(struct pw_lock *lk, struct pw_error *err)
{
	int e;

	if (lk->fd < 0)
		return 0;
	e = close(lk->fd) ? errno : 0;
	lk->fd = -1;
	if (e)
		return pw_error_set(err, PW_EIO, "cannot close %s: %s", lk->lock_path, strerror(e));
	return 0;
}

int pw_lock_commit(struct pw_lock *lk, struct pw_error *err)
{
	int rc = 0;

	if (!lk->lock_path)
		return pw_error_set(err, PW_EINVAL, "lock not held");
	if ((rc = pw_lock_close(lk, err))) {
		pw_lock_rollback(lk);
		return rc;
	}
	if (rename(lk->lock_path, lk->path)) {
		rc = pw_error_set(err, PW_EIO, "cannot rename %s to %s: %s", lk->lock_path,
		                  lk->path, strerror(errno));
		unlink(lk->lock_path);
	}
	free(lk->path);
	free(lk->lock_path);
	lk->path = lk->lock_path = NULL;
	return rc;
}

void pw_lock_rollback(struct pw_lock *lk)
{
	if (lk->fd >= 0) {
		close(lk->fd);
		lk->fd = -1;
	}
	if (lk->lock_path)
		unlink(lk->lock_path);
	free(lk->path);
	free(lk->lock_path);
	lk->path = lk->lock_path = NULL;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void pw_fs_remove_tree(const char *path, int keep_top)
{
	DIR *d;
	struct dirent *e;

	if (!keep_top) {
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		return;
	}
	if (!(d = opendir(path)))
		return;
	while ((e = readdir(d))) {
		char *p;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		p = pw_path_join(path, e->d_name);
		if (p)
			nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		free(p);
	}
	closedir(d);
}
