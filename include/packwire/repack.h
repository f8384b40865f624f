/* Repacking a repository: every object reachable from its refs and HEAD into
 * one new pack (with its .idx and, on request, a reachability .bitmap), then
 * the old packs and the loose objects now packed deleted. Crash-safe: the
 * new pack is complete and renamed into place before anything is deleted,
 * so a repack killed at any point leaves a valid repository. Packs with a
 * ".keep" file are neither repacked nor deleted, and their objects are not
 * copied. One thread at a time per repository handle. */
#ifndef PACKWIRE_REPACK_H
#define PACKWIRE_REPACK_H

#include "packwire/export.h"

#include "packwire/error.h"
#include "packwire/pack-write.h"
#include "packwire/repo.h"
#include "packwire/report.h"

struct pw_repack_opts {
	/* 1 yes, 0 no, -1: repack.writeBitmaps, else (as Git) yes in a bare
	 * repository when possible, without a warning when not */
	int write_bitmap;
	int delete_old; /* -d: delete the packs and loose objects now redundant */
	/* pack.* settings of the repository are applied first, then these when
	 * not -2: */
	int window, depth, threads;
	/* Called when the new pack (and its .bitmap) is in place, before
	 * anything old is deleted, with the new .idx's path: a repository
	 * with a compat map writes the new pack's side file here, so that
	 * the map is whole at every step of the deletion. Non-zero keeps
	 * the old packs and loose objects (the hook says why). May be NULL. */
	int (*before_delete)(void *data, const char *idx_path);
	/* Called after each step that changes objects/ ("pack written",
	 * "ready to delete", "deleted <old pack base>", "pruned loose"), so
	 * that a test can stop the process between any two. May be NULL. */
	void (*step)(void *data, const char *what);
	pw_progress_fn progress;                      /* may be NULL */
	void (*warning)(void *data, const char *msg); /* may be NULL */
	void *data;                                   /* for progress and warning */
};

struct pw_repack_result {
	char hex[PW_MAX_HEXSZ + 1]; /* checksum of the new pack ("" when none) */
	uint32_t objects;           /* in the new pack */
	int bitmap;                 /* 1 when a .bitmap was written */
	unsigned packs_deleted, loose_deleted;
};

/* Fill opts with: write_bitmap -1, delete_old 0, window/depth/threads -2. */
PW_API void pw_repack_opts_init(struct pw_repack_opts *opts);
/* Repack repo. result (may be NULL) says what was done. A repository with no
 * object to pack gets no new pack (and nothing is deleted). Errors: the
 * message in err; nothing old is deleted unless the new pack is in place. */
PW_API int pw_repack(struct pw_repo *repo, const struct pw_repack_opts *opts,
                     struct pw_repack_result *result, struct pw_error *err);

#endif
