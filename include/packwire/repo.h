/* A repository on disk: where its git dir, work tree and objects are, which
 * hash algorithm it uses, and its config. One handle per thread. */
#ifndef PACKWIRE_REPO_H
#define PACKWIRE_REPO_H

#include "packwire/export.h"

#include "packwire/config.h"
#include "packwire/error.h"
#include "packwire/hash.h"

/*
 * Contract: a struct pw_repo is created by the open and init calls below and
 * owned by the caller, who frees it with pw_repo_free (NULL is fine); *out
 * is NULL after a failure. Strings, the config and the algorithm it returns
 * are borrowed: valid while the handle lives (the config until the next
 * pw_repo_reload_config or pw_repo_set_object_format). Errors of open/init
 * go to err (may be NULL); calls on a handle (refs, fetch, push, ...) leave
 * their message in pw_repo_error(repo) unless they take an err of their own.
 * Threads: one thread at a time per handle, including calls that borrow it
 * (an upload session, a fetch). Handles opened on the same repository are
 * independent and may be used in parallel; on-disk updates between them
 * (and other processes, Git included) go through lock files.
 */

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

/* What a caller may add to an open; the library reads no environment
 * variable (pw_options_from_env in packwire/env.h reads Git's). A zeroed
 * struct (or NULL) is what the functions above use. */
struct pw_repo_opts {
	/* System, global and command-line config around the repository's own
	 * file: pw_repo_config then shows all of them, as Git's config does.
	 * Command-line settings also apply to the repository format, the other
	 * layers never do. Borrowed: must outlive the handle. NULL = the
	 * repository's file alone. */
	const struct pw_config_layers *config;
	/* Discovery stops below these (absolute paths separated by ':', as
	 * GIT_CEILING_DIRECTORIES). NULL = none. */
	const char *ceiling_dirs;
	/* The work tree (GIT_WORK_TREE / --work-tree), replacing the one found
	 * (a git dir opened directly has none); NULL = as found. */
	const char *work_tree;
};
PW_API int pw_repo_open_opts(struct pw_repo **out, const char *path, const struct pw_repo_opts *o,
                             struct pw_error *err);
PW_API int pw_repo_open_exact_opts(struct pw_repo **out, const char *path,
                                   const struct pw_repo_opts *o, struct pw_error *err);
PW_API int pw_repo_open_gitdir_opts(struct pw_repo **out, const char *git_dir,
                                    const struct pw_repo_opts *o, struct pw_error *err);
/* The repository a command works in: git_dir (GIT_DIR or --git-dir; NULL or
 * "" when not given) opened as it is, else pw_repo_open from path (NULL =
 * "."), with the options o (may be NULL). The library reads no environment: the caller passes
 * GIT_DIR in. PW_ENOTFOUND from the discovery means "not in a repository"; with git_dir it means
 * that directory is no repository. */
PW_API int pw_repo_discover(struct pw_repo **out, const char *git_dir, const char *path,
                            const struct pw_repo_opts *o, struct pw_error *err);
PW_API void pw_repo_free(struct pw_repo *repo);

/* Is `path` a git directory (HEAD naming a ref or an oid, objects/, refs/)? */
/* (1 or 0; reads the file system only, any thread.) */
PW_API int pw_repo_is_git_dir(const char *path);

PW_API const struct pw_hash_algo *pw_repo_algo(const struct pw_repo *repo);
/* The algorithm of extensions.compatObjectFormat (the other one; a value
 * equal to the storage algorithm is refused at open), or NULL. */
PW_API const struct pw_hash_algo *pw_repo_compat_algo(const struct pw_repo *repo);
/* Absolute paths, borrowed. work_tree is NULL for a bare repository. */
PW_API const char *pw_repo_git_dir(const struct pw_repo *repo);
PW_API const char *pw_repo_work_tree(const struct pw_repo *repo);
PW_API const char *pw_repo_objects_dir(const struct pw_repo *repo);
PW_API int pw_repo_is_bare(const struct pw_repo *repo);
/* The repository's config (borrowed; reloaded by pw_repo_reload_config). */
PW_API const struct pw_config *pw_repo_config(const struct pw_repo *repo);
/* Re-reads the config and the repository format; 0 or a code with the
 * message in pw_repo_error(repo). Invalidates the pointer pw_repo_config gave. */
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
	/* config layers of the handle returned (see pw_repo_opts.config); NULL = none */
	const struct pw_config_layers *config;
};
PW_API int pw_repo_init(struct pw_repo **out, const char *path, int bare,
                        const struct pw_hash_algo *algo, struct pw_error *err);
/* opts is read, and opts->reinitialized written. */
PW_API int pw_repo_init_ext(struct pw_repo **out, const char *path, struct pw_repo_init_opts *opts,
                            struct pw_error *err);

/* Rewrite the repository format for algo (sha1: version 0 and no
 * extensions.objectFormat; sha256: version 1 + objectFormat) and switch the
 * handle to it. Only sensible before any object or ref is written (clone). */
/* The message goes to err; the config pointer of the handle is replaced. */
PW_API int pw_repo_set_object_format(struct pw_repo *repo, const struct pw_hash_algo *algo,
                                     struct pw_error *err);

#endif
