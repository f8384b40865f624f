/* The writers' lock of the compat map and the stored view:
 * <objects>/compat-view.lock, created with O_EXCL as Git creates its locks
 * (util/fs.c's pw_lock). `compat build` holds it while it rewrites the side
 * files, loose-object-idx and the view; `repack` while it writes the new
 * pack's side file, deletes the old packs and rewrites the view. A second
 * writer fails at once. Nothing removes a lock left by a crashed writer:
 * the message says to remove it when no writer runs. */
#include <stdlib.h>
#include <string.h>

#include "packwire/compat.h"
#include "util/fs.h"

struct pw_compat_lock {
	struct pw_lock lk;
};

int pw_compat_lock(struct pw_compat_lock **out, const char *objects_dir, struct pw_error *err)
{
	struct pw_compat_lock *l = calloc(1, sizeof(*l));
	char *path = pw_path_join(objects_dir, "compat-view");
	int rc;

	*out = NULL;
	if (!l || !path) {
		free(l);
		free(path);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	rc = pw_lock_acquire(&l->lk, path, err);
	if (rc == PW_ELOCKED)
		pw_error_set(err, PW_ELOCKED,
		             "unable to create '%s.lock': File exists. Another 'packwire compat "
		             "build' or 'packwire repack' seems to be rewriting the compat map and "
		             "stored view of this repository. If no such process is running (one "
		             "may have crashed), remove the file and try again",
		             path);
	free(path);
	if (rc) {
		free(l);
		return rc;
	}
	/* nothing is written to it: its existence is the lock */
	if ((rc = pw_lock_close(&l->lk, err))) {
		pw_lock_rollback(&l->lk);
		free(l);
		return rc;
	}
	*out = l;
	return 0;
}

void pw_compat_unlock(struct pw_compat_lock *l)
{
	if (!l)
		return;
	pw_lock_rollback(&l->lk);
	free(l);
}
