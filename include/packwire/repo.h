/* A repository on disk: where its git dir, work tree and objects are, which
 * hash algorithm it uses, and its config. One handle per thread. */
#ifndef PACKWIRE_REPO_H
#define PACKWIRE_REPO_H

#include "packwire/export.h"

#include "packwire/config.h"
#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_repo;

/* Discover the repository containing `path` (a work tree or any directory
 * below it, a directory holding a ".git" file "gitdir: <path>", or a bare
 * repository), walking up to the root, as Git does from the current
 * directory. PW_ENOTFOUND when there is none; other errors (bad format
 * version, unknown extension, config syntax) name the file or extension. */
PW_API int pw_repo_open(struct pw_repo **out, const char *path, struct pw_error *err);
/* Enter a repository the way `git upload-pack DIR` does: try DIR/.git, DIR,
 * DIR.git/.git, DIR.git and nothing else (no walking up). */
PW_API int pw_repo_open_exact(struct pw_repo **out, const char *path, struct pw_error *err);
/* Open `git_dir` as the git directory itself (GIT_DIR), no discovery. */
PW_API int pw_repo_open_gitdir(struct pw_repo **out, const char *git_dir, struct pw_error *err);
/* The repository a command works in: git_dir (GIT_DIR or --git-dir; NULL or
 * "" when not given) opened as it is, else pw_repo_open from path (NULL =
 * "."). The library reads no environment: the caller passes GIT_DIR in.
 * PW_ENOTFOUND from the discovery means "not in a repository"; with git_dir
 * it means that directory is no repository. */
PW_API int pw_repo_discover(struct pw_repo **out, const char *git_dir, const char *path,
                            struct pw_error *err);
PW_API void pw_repo_free(struct pw_repo *repo);

/* Is `path` a git directory (HEAD naming a ref or an oid, objects/, refs/)? */
PW_API int pw_repo_is_git_dir(const char *path);

PW_API const struct pw_hash_algo *pw_repo_algo(const struct pw_repo *repo);
/* Absolute paths, borrowed. work_tree is NULL for a bare repository. */
PW_API const char *pw_repo_git_dir(const struct pw_repo *repo);
PW_API const char *pw_repo_work_tree(const struct pw_repo *repo);
PW_API const char *pw_repo_objects_dir(const struct pw_repo *repo);
PW_API int pw_repo_is_bare(const struct pw_repo *repo);
/* The repository's config (borrowed; reloaded by pw_repo_reload_config). */
PW_API const struct pw_config *pw_repo_config(const struct pw_repo *repo);
PW_API int pw_repo_reload_config(struct pw_repo *repo);
/* The error record of the handle: calls taking a repo put messages here. */
PW_API struct pw_error *pw_repo_error(struct pw_repo *repo);

/* Create (or re-initialize, as `git init` does) a repository at path.
 * bare: path is the git dir; else path/.git. algo NULL means sha1. */
struct pw_repo_init_opts {
	int bare;
	const struct pw_hash_algo *algo; /* NULL = sha1 (or the existing one on re-init) */
	const char *initial_branch;      /* NULL = "master", as Git 2.39 */
	int reinitialized;               /* out: 1 when the repository already existed */
};
PW_API int pw_repo_init(struct pw_repo **out, const char *path, int bare,
                        const struct pw_hash_algo *algo, struct pw_error *err);
PW_API int pw_repo_init_ext(struct pw_repo **out, const char *path, struct pw_repo_init_opts *opts,
                            struct pw_error *err);

/* Rewrite the repository format for algo (sha1: version 0 and no
 * extensions.objectFormat; sha256: version 1 + objectFormat) and switch the
 * handle to it. Only sensible before any object or ref is written (clone). */
PW_API int pw_repo_set_object_format(struct pw_repo *repo, const struct pw_hash_algo *algo,
                                     struct pw_error *err);

#endif
