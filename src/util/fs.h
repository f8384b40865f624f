/* File-system helpers: whole-file reads, lock files, atomic writes. */
#ifndef PW_UTIL_FS_H
#define PW_UTIL_FS_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/fs.h"

/* pw_fs_read_file, pw_fs_mkdir_p and pw_path_join are public (packwire/fs.h). */
int pw_fs_exists(const char *path);
int pw_fs_is_dir(const char *path);
/* 1 when path, every symlink resolved, is base (resolved too) or lies under
 * it; 0 when it leads outside or either cannot be resolved. The one
 * containment check of repositories found by name (servers' base paths,
 * submodules found through .gitmodules). */
int pw_fs_path_inside(const char *base, const char *path);
/* Write all of data to fd (retrying on EINTR and short writes, waiting on a
 * non-blocking fd that is full): 0, or -1 with errno set (EIO when write
 * makes no progress). Callers word the message, naming what they wrote. */
int pw_fs_write_all(int fd, const void *data, size_t len);
/* The same with pwrite at offset off (the file position does not move). */
int pw_fs_pwrite_all(int fd, const void *data, size_t len, uint64_t off);
/* mkstemp with the file's mode: tmpl ends in "XXXXXX", which is replaced;
 * the file is created (close-on-exec, read-write) with mode less the
 * process's umask, as Git's git_mkstemp_mode does, so that nothing needs
 * to read or change the umask. The descriptor, or -1 with errno set. */
int pw_fs_mkstemp_mode(char *tmpl, int mode);
/* Write data to path via a temporary file in the same directory + rename. */
int pw_fs_write_atomic(const char *path, const void *data, size_t len, struct pw_error *err);

/* A Git-style lock: "<path>.lock" created with O_EXCL, committed by rename.
 * Held while lock_path is set; its fd may be closed before the commit. */
struct pw_lock {
	char *path;      /* target */
	char *lock_path; /* target + ".lock"; NULL when not held */
	int fd;          /* -1 when not held or closed (pw_lock_close) */
};

/* PW_ELOCKED (with a message naming the lock file) when someone holds it. */
int pw_lock_acquire(struct pw_lock *lk, const char *path, struct pw_error *err);
int pw_lock_write(struct pw_lock *lk, const void *data, size_t len, struct pw_error *err);
/* Close the lock file once it is written, keeping the lock (as Git does):
 * a transaction of many locks does not hold a descriptor for each. */
int pw_lock_close(struct pw_lock *lk, struct pw_error *err);
/* fsync-less close + rename into place; releases the lock either way. */
int pw_lock_commit(struct pw_lock *lk, struct pw_error *err);
/* Remove the lock file without touching the target. Safe to call twice. */
void pw_lock_rollback(struct pw_lock *lk);

/* rm -rf path, best effort, without following symlinks; with keep_top the
 * directory itself stays (emptied). */
void pw_fs_remove_tree(const char *path, int keep_top);

#endif
