/* Finding, opening and creating repositories, and the repository format
 * rules (core.repositoryformatversion + extensions.*) of
 * technical/repository-version: version 0 or 1 only; in version 1 every
 * extension must be understood; objectFormat is a version-1-only extension. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packwire/hash.h"
#include "packwire/repo.h"
#include "repo/repo-priv.h"
#include "util/fs.h"

struct pw_repo {
	char *git_dir;
	char *work_tree;
	char *objects_dir;
	char *config_path;
	int bare;
	int format_version;
	const struct pw_hash_algo *algo;
	const struct pw_hash_algo *compat_algo; /* extensions.compatObjectFormat; NULL = none */
	struct pw_config *config;
	struct pw_error err;
	struct pw_repo_slot refs_cache;
	const struct pw_config_layers *layers; /* borrowed from the opener */
};

struct pw_repo_slot *pw_repo__refs_slot(struct pw_repo *repo)
{
	return &repo->refs_cache;
}

const struct pw_hash_algo *pw_repo_algo(const struct pw_repo *repo)
{
	return repo->algo;
}

const struct pw_hash_algo *pw_repo_compat_algo(const struct pw_repo *repo)
{
	return repo->compat_algo;
}

const char *pw_repo_git_dir(const struct pw_repo *repo)
{
	return repo->git_dir;
}

const char *pw_repo_work_tree(const struct pw_repo *repo)
{
	return repo->work_tree;
}

const char *pw_repo_objects_dir(const struct pw_repo *repo)
{
	return repo->objects_dir;
}

int pw_repo_is_bare(const struct pw_repo *repo)
{
	return repo->bare;
}

const struct pw_config *pw_repo_config(const struct pw_repo *repo)
{
	return repo->config;
}

struct pw_error *pw_repo_error(struct pw_repo *repo)
{
	return &repo->err;
}

void pw_repo_free(struct pw_repo *repo)
{
	if (!repo)
		return;
	if (repo->refs_cache.free_fn)
		repo->refs_cache.free_fn(repo->refs_cache.data);
	pw_config_free(repo->config);
	free(repo->git_dir);
	free(repo->work_tree);
	free(repo->objects_dir);
	free(repo->config_path);
	free(repo);
}

/* HEAD must name a ref ("ref: refs/...") or hold an oid; a symlink HEAD is
 * accepted as Git still does. */
static int head_looks_valid(const char *git_dir)
{
	char *path = pw_path_join(git_dir, "HEAD");
	struct stat st;
	struct pw_buf b = PW_BUF_INIT;
	int ok = 0;

	if (!path)
		return 0;
	if (lstat(path, &st))
		goto out;
	if (S_ISLNK(st.st_mode)) {
		ok = 1;
		goto out;
	}
	if (!S_ISREG(st.st_mode) || pw_fs_read_file(path, &b, 4096, NULL))
		goto out;
	if (b.len >= 10 && !memcmp(b.data, "ref: refs/", 10)) {
		ok = 1;
	} else {
		size_t n = 0;

		while (n < b.len && pw_hexval((unsigned char)b.data[n]) >= 0)
			n++;
		ok = pw_hash_guess_from_hexlen(n) &&
		     (n == b.len || isspace((unsigned char)b.data[n]));
	}
out:
	pw_buf_free(&b);
	free(path);
	return ok;
}

int pw_repo_is_git_dir(const char *path)
{
	char *o = pw_path_join(path, "objects"), *r = pw_path_join(path, "refs");
	int ok = o && r && pw_fs_is_dir(o) && pw_fs_is_dir(r) && head_looks_valid(path);

	free(o);
	free(r);
	return ok;
}

/* ---- repository format ------------------------------------------------ */

struct fmt_scan {
	struct pw_buf unknown, v1only;
	const struct pw_hash_algo *algo, *compat;
	int bad_value;
	const struct pw_config_entry *bad, *bad_compat;
};

static int scan_extension(const struct pw_config_entry *e, void *data)
{
	struct fmt_scan *fs = data;
	const char *ext;

	if (strncmp(e->key, "extensions.", 11))
		return 0;
	ext = e->key + 11;
	/* respected (and harmless to us) in any version */
	if (!strcmp(ext, "noop") || !strcmp(ext, "preciousobjects") ||
	    !strcmp(ext, "partialclone") || !strcmp(ext, "worktreeconfig"))
		return 0;
	if (!strcmp(ext, "objectformat")) {
		const struct pw_hash_algo *a =
		        e->value ? pw_hash_by_name(e->value, strlen(e->value)) : NULL;

		if (!a) {
			fs->bad = e;
			return 1;
		}
		fs->algo = a;
		return pw_buf_addf(&fs->v1only, "\n\t%s", ext) ? PW_ENOMEM : 0;
	}
	if (!strcmp(ext, "compatobjectformat")) {
		fs->compat = e->value ? pw_hash_by_name(e->value, strlen(e->value)) : NULL;
		if (!fs->compat)
			fs->bad_compat = e;
		return pw_buf_addf(&fs->v1only, "\n\t%s", ext) ? PW_ENOMEM : 0;
	}
	if (!strcmp(ext, "noop-v1"))
		return pw_buf_addf(&fs->v1only, "\n\t%s", ext) ? PW_ENOMEM : 0;
	return pw_buf_addf(&fs->unknown, "\n\t%s", ext) ? PW_ENOMEM : 0;
}

/* Load config and apply the format rules; sets version, algo and bare. */
static int load_format(struct pw_repo *repo, struct pw_error *err)
{
	struct pw_config *cfg = NULL;
	struct fmt_scan fs = {PW_BUF_INIT, PW_BUF_INIT, NULL, NULL, 0, NULL, NULL};
	int rc, version = 0, bare;

	rc = pw_config_load_file(&cfg, repo->config_path, err);
	if (rc == PW_ENOTFOUND)
		rc = pw_config_new(&cfg) ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
	if (rc)
		return rc;
	/* the format comes from the repository's file (and -c), never from
	 * the system or global files */
	if ((rc = pw_config_apply_overrides(cfg, repo->layers, err))) {
		pw_config_free(cfg);
		return rc;
	}
	rc = pw_config_get_int(cfg, "core.repositoryformatversion", &version, err);
	if (rc == PW_ENOTFOUND) {
		version = 0;
	} else if (rc) {
		pw_config_free(cfg);
		return rc;
	}
	if (version < 0 || version > 1) {
		pw_config_free(cfg);
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "Expected git repo version <= 1, found %d (in %s)", version,
		                    repo->config_path);
	}
	rc = pw_config_foreach(cfg, scan_extension, &fs);
	if (rc == PW_ENOMEM) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	} else if (fs.bad) {
		rc = pw_error_set(err, PW_EUNSUPPORTED,
		                  "invalid value for 'extensions.objectformat': '%s' "
		                  "(line %d in file %s)",
		                  fs.bad->value ? fs.bad->value : "", fs.bad->line, fs.bad->origin);
	} else if (fs.bad_compat ||
	           (fs.compat && fs.compat == (fs.algo ? fs.algo : &pw_hash_sha1))) {
		const struct pw_config_entry *e = fs.bad_compat;

		rc = e ? pw_error_set(err, PW_EUNSUPPORTED,
		                      "invalid value for 'extensions.compatobjectformat': '%s' "
		                      "(line %d in file %s)",
		                      e->value ? e->value : "", e->line, e->origin)
		       : pw_error_set(
		                 err, PW_EUNSUPPORTED,
		                 "extensions.compatobjectformat is %s, the storage format of %s: "
		                 "it must name the other algorithm",
		                 fs.compat->name, repo->config_path);
	} else if (version >= 1 && fs.unknown.len) {
		rc = pw_error_set(err, PW_EUNSUPPORTED,
		                  "unknown repository extension%s found in %s:%s",
		                  strchr(fs.unknown.data + 1, '\n') ? "s" : "", repo->config_path,
		                  fs.unknown.data);
	} else if (version == 0 && fs.v1only.len) {
		rc = pw_error_set(err, PW_EUNSUPPORTED,
		                  "repo version is 0, but v1-only extension%s found in %s:%s",
		                  strchr(fs.v1only.data + 1, '\n') ? "s" : "", repo->config_path,
		                  fs.v1only.data);
	}
	pw_buf_free(&fs.unknown);
	pw_buf_free(&fs.v1only);
	if (rc) {
		pw_config_free(cfg);
		return rc;
	}
	repo->format_version = version;
	repo->algo = fs.algo ? fs.algo : &pw_hash_sha1;
	repo->compat_algo = fs.compat;
	if (pw_config_get_bool(cfg, "core.bare", &bare, NULL))
		bare = repo->work_tree == NULL;
	repo->bare = repo->work_tree ? 0 : bare;
	if (repo->layers && (repo->layers->system || repo->layers->xdg || repo->layers->global)) {
		pw_config_free(cfg);
		if ((rc = pw_config_load_layers(&cfg, repo->layers, repo->config_path, err)))
			return rc;
	}
	pw_config_free(repo->config);
	repo->config = cfg;
	return 0;
}

int pw_repo_reload_config(struct pw_repo *repo)
{
	return load_format(repo, &repo->err);
}

static int finish_open(struct pw_repo **out, char *git_dir, char *work_tree,
                       const struct pw_repo_opts *o, struct pw_error *err)
{
	struct pw_repo *repo = calloc(1, sizeof(*repo));
	int rc;

	*out = NULL;
	if (o && o->work_tree) { /* GIT_WORK_TREE: replaces what was found */
		char *wt = realpath(o->work_tree, NULL);

		if (!wt) {
			free(repo);
			free(git_dir);
			free(work_tree);
			return pw_error_set(err, PW_ENOTFOUND, "cannot access work tree '%s': %s",
			                    o->work_tree, strerror(errno));
		}
		free(work_tree);
		work_tree = wt;
	}
	if (!repo) {
		free(git_dir);
		free(work_tree);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	repo->git_dir = git_dir;
	repo->work_tree = work_tree;
	repo->layers = o ? o->config : NULL;
	repo->objects_dir = pw_path_join(git_dir, "objects");
	repo->config_path = pw_path_join(git_dir, "config");
	if (!repo->objects_dir || !repo->config_path) {
		pw_repo_free(repo);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if ((rc = load_format(repo, err))) {
		pw_repo_free(repo);
		return rc;
	}
	*out = repo;
	return 0;
}

/* Read a ".git" file: "gitdir: <path>", relative to the file's directory.
 * Returns the absolute, resolved git dir or NULL with err set. */
static char *read_gitfile(const char *file, const char *dir, struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	char *path = NULL, *real = NULL;
	size_t n;

	if (pw_fs_read_file(file, &b, 1 << 16, err)) {
		pw_buf_free(&b);
		return NULL;
	}
	n = b.len;
	while (n && isspace((unsigned char)b.data[n - 1]))
		n--;
	b.data[n] = '\0';
	if (n < 8 || memcmp(b.data, "gitdir: ", 8) || memchr(b.data, '\0', n)) {
		pw_error_set(err, PW_ECORRUPT, "invalid gitfile format: %s", file);
		pw_buf_free(&b);
		return NULL;
	}
	path = b.data[8] == '/' ? strdup(b.data + 8) : pw_path_join(dir, b.data + 8);
	pw_buf_free(&b);
	if (!path) {
		pw_error_set(err, PW_ENOMEM, "out of memory");
		return NULL;
	}
	real = realpath(path, NULL);
	if (!real || !pw_repo_is_git_dir(real)) {
		pw_error_set(err, PW_ENOTFOUND, "not a git repository: %s (named by %s)", path,
		             file);
		free(real);
		real = NULL;
	}
	free(path);
	return real;
}

int pw_repo_open_gitdir_opts(struct pw_repo **out, const char *git_dir,
                             const struct pw_repo_opts *o, struct pw_error *err)
{
	char *real = realpath(git_dir, NULL);

	*out = NULL;
	if (!real || !pw_repo_is_git_dir(real)) {
		free(real);
		return pw_error_set(err, PW_ENOTFOUND, "not a git repository: '%s'", git_dir);
	}
	return finish_open(out, real, NULL, o, err);
}

int pw_repo_open_gitdir(struct pw_repo **out, const char *git_dir, struct pw_error *err)
{
	return pw_repo_open_gitdir_opts(out, git_dir, NULL, err);
}

/* Try dir as a work tree (dir/.git dir or file) and then as a git dir.
 * 1 = found (*out set), 0 = not here, < 0 = error. */
static int try_dir(struct pw_repo **out, const char *dir, const struct pw_repo_opts *o,
                   struct pw_error *err)
{
	char *dotgit = pw_path_join(dir, ".git"), *gd, *wt;
	struct stat st;
	int rc;

	if (!dotgit)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (!stat(dotgit, &st)) {
		if (S_ISREG(st.st_mode)) {
			gd = read_gitfile(dotgit, dir, err);
			free(dotgit);
			if (!gd)
				return err ? err->code : PW_ERROR;
			if (!(wt = strdup(dir))) {
				free(gd);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			return (rc = finish_open(out, gd, wt, o, err)) ? rc : 1;
		}
		if (S_ISDIR(st.st_mode) && pw_repo_is_git_dir(dotgit)) {
			if (!(wt = strdup(dir))) {
				free(dotgit);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			return (rc = finish_open(out, dotgit, wt, o, err)) ? rc : 1;
		}
	}
	free(dotgit);
	if (pw_repo_is_git_dir(dir)) {
		if (!(gd = strdup(dir)))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		return (rc = finish_open(out, gd, NULL, o, err)) ? rc : 1;
	}
	return 0;
}

/* Length of the longest ceiling entry (absolute paths separated by ':', as
 * in GIT_CEILING_DIRECTORIES) that dir lies strictly below; -1 when there
 * is none. Discovery never climbs into such a directory, as with Git. */
static long ceiling_len(const char *dir, const char *env)
{
	const char *p, *end;
	long best = -1;

	if (!env)
		return -1;
	for (p = env; *p; p = *end ? end + 1 : end) {
		char one[4096], *real;
		size_t n, rn;

		end = strchr(p, ':');
		if (!end)
			end = p + strlen(p);
		n = (size_t)(end - p);
		if (!n || *p != '/' || n >= sizeof(one))
			continue;
		memcpy(one, p, n);
		one[n] = '\0';
		real = realpath(one, NULL);
		if (!real)
			continue;
		rn = strlen(real);
		while (rn > 1 && real[rn - 1] == '/')
			rn--;
		if (rn == 1 ? dir[1] != '\0' : !strncmp(dir, real, rn) && dir[rn] == '/') {
			long len = rn == 1 ? 0 : (long)rn;

			if (len > best)
				best = len;
		}
		free(real);
	}
	return best;
}

int pw_repo_open_opts(struct pw_repo **out, const char *path, const struct pw_repo_opts *o,
                      struct pw_error *err)
{
	char *dir = realpath(path, NULL);
	long ceiling;
	int rc;

	*out = NULL;
	if (!dir)
		return pw_error_set(err, PW_ENOTFOUND, "cannot access '%s': %s", path,
		                    strerror(errno));
	ceiling = ceiling_len(dir, o ? o->ceiling_dirs : NULL);
	for (;;) {
		char *slash;

		rc = try_dir(out, dir, o, err);
		if (rc)
			break;
		slash = strrchr(dir, '/');
		if (!slash || (slash == dir && !dir[1]) ||
		    (ceiling >= 0 && (slash == dir ? 0 : (long)(slash - dir)) <= ceiling)) {
			rc = pw_error_set(err, PW_ENOTFOUND,
			                  "not a git repository (or any of the parent "
			                  "directories): .git");
			break;
		}
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free(dir);
	return rc < 0 ? rc : 0;
}

int pw_repo_open(struct pw_repo **out, const char *path, struct pw_error *err)
{
	return pw_repo_open_opts(out, path, NULL, err);
}

int pw_repo_open_exact_opts(struct pw_repo **out, const char *path, const struct pw_repo_opts *o,
                            struct pw_error *err)
{
	static const char *const suffix[] = {"/.git", "", ".git/.git", ".git"};
	size_t i, n = strlen(path);
	struct stat st;

	*out = NULL;
	while (n > 1 && path[n - 1] == '/')
		n--;
	for (i = 0; i < sizeof(suffix) / sizeof(suffix[0]); i++) {
		char *cand = malloc(n + strlen(suffix[i]) + 1), *real, *gd = NULL;

		if (!cand)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		memcpy(cand, path, n);
		strcpy(cand + n, suffix[i]);
		if (stat(cand, &st) || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
			free(cand);
			continue;
		}
		if (S_ISDIR(st.st_mode) && !pw_repo_is_git_dir(cand)) {
			free(cand);
			continue;
		}
		real = realpath(cand, NULL);
		free(cand);
		if (!real)
			continue;
		if (S_ISREG(st.st_mode)) {
			char *dir = strdup(real), *slash = dir ? strrchr(dir, '/') : NULL;

			if (slash)
				*slash = slash == dir ? (slash[1] = '\0', '/') : '\0';
			gd = dir ? read_gitfile(real, dir, err) : NULL;
			free(dir);
			free(real);
			if (!gd)
				return err ? err->code : PW_ENOTFOUND;
			real = gd;
		}
		return finish_open(out, real, NULL, o, err);
	}
	return pw_error_set(err, PW_ENOTFOUND, "'%.*s' does not appear to be a git repository",
	                    (int)n, path);
}

int pw_repo_open_exact(struct pw_repo **out, const char *path, struct pw_error *err)
{
	return pw_repo_open_exact_opts(out, path, NULL, err);
}

/* ---- creating --------------------------------------------------------- */

static int mkdirs(const char *git_dir, struct pw_error *err)
{
	static const char *const dirs[] = {"objects/info", "objects/pack", "refs/heads",
	                                   "refs/tags"};
	size_t i;
	int rc;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char *p = pw_path_join(git_dir, dirs[i]);

		if (!p)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		rc = pw_fs_mkdir_p(p, err);
		free(p);
		if (rc)
			return rc;
	}
	return 0;
}

/* Does the file system keep the executable bit? (Git's core.filemode probe.) */
static int probe_filemode(const char *file)
{
	struct stat st1, st2;
	int ok;

	if (stat(file, &st1))
		return 1;
	if (chmod(file, st1.st_mode ^ S_IXUSR))
		return 0;
	ok = !stat(file, &st2) && st1.st_mode != st2.st_mode;
	chmod(file, st1.st_mode);
	return ok;
}

int pw_repo_init_ext(struct pw_repo **out, const char *path, struct pw_repo_init_opts *opts,
                     struct pw_error *err)
{
	const struct pw_hash_algo *algo = opts->algo;
	const char *branch = opts->initial_branch ? opts->initial_branch : "master";
	char *git_dir = NULL, *real = NULL, *p = NULL, *wt = NULL;
	struct pw_repo_opts ro = {0};
	struct pw_buf b = PW_BUF_INIT;
	int rc;

	*out = NULL;
	opts->reinitialized = 0;
	ro.config = opts->config;
	if ((rc = pw_fs_mkdir_p(path, err)))
		return rc;
	wt = realpath(path, NULL);
	if (!wt)
		return pw_error_set(err, PW_EIO, "cannot access '%s': %s", path, strerror(errno));
	if (opts->bare) {
		git_dir = wt;
		wt = NULL;
	} else if (!(git_dir = pw_path_join(wt, ".git"))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (pw_repo_is_git_dir(git_dir)) {
		struct pw_repo *repo;

		if ((rc = pw_repo_open_gitdir_opts(&repo, git_dir, &ro, err)))
			goto out;
		if (algo && algo != repo->algo) {
			pw_repo_free(repo);
			rc = pw_error_set(err, PW_EMISMATCH,
			                  "attempt to reinitialize repository with different hash");
			goto out;
		}
		if ((rc = mkdirs(git_dir, err))) {
			pw_repo_free(repo);
			goto out;
		}
		if (wt) {
			repo->work_tree = wt;
			repo->bare = 0;
			wt = NULL;
		}
		opts->reinitialized = 1;
		*out = repo;
		goto out;
	}
	if (!algo)
		algo = &pw_hash_sha1;
	if ((rc = pw_buf_addf(&b, "refs/heads/%s", branch)) || !pw_repo__refname_ok(b.data, 0)) {
		rc = pw_error_set(err, PW_EINVAL, "invalid initial branch name: '%s'", branch);
		goto out;
	}
	if ((rc = pw_fs_mkdir_p(git_dir, err)) || (rc = mkdirs(git_dir, err)))
		goto out;
	real = realpath(git_dir, NULL);
	if (!real) {
		rc = pw_error_set(err, PW_EIO, "cannot access '%s': %s", git_dir, strerror(errno));
		goto out;
	}
	pw_buf_reset(&b);
	if (!(p = pw_path_join(real, "HEAD")) || pw_buf_addf(&b, "ref: refs/heads/%s\n", branch)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = pw_fs_write_atomic(p, b.data, b.len, err)))
		goto out;
	pw_buf_reset(&b);
	rc = pw_buf_addf(&b,
	                 "[core]\n\trepositoryformatversion = %d\n\tfilemode = %s\n\tbare = %s\n",
	                 algo->id == PW_HASH_SHA1 ? 0 : 1, probe_filemode(p) ? "true" : "false",
	                 opts->bare ? "true" : "false");
	if (!rc && !opts->bare)
		rc = pw_buf_adds(&b, "\tlogallrefupdates = true\n");
	if (!rc && algo->id != PW_HASH_SHA1)
		rc = pw_buf_addf(&b, "[extensions]\n\tobjectformat = %s\n", algo->name);
	free(p);
	if (rc || !(p = pw_path_join(real, "config"))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = pw_fs_write_atomic(p, b.data, b.len, err)))
		goto out;
	rc = finish_open(out, real, wt, &ro, err);
	real = wt = NULL;
out:
	pw_buf_free(&b);
	free(git_dir);
	free(real);
	free(wt);
	free(p);
	return rc;
}

int pw_repo_init(struct pw_repo **out, const char *path, int bare, const struct pw_hash_algo *algo,
                 struct pw_error *err)
{
	struct pw_repo_init_opts o = {bare, algo, NULL, 0, NULL};

	return pw_repo_init_ext(out, path, &o, err);
}

static int other_extension(const struct pw_config_entry *e, void *data)
{
	(void)data;
	return !strncmp(e->key, "extensions.", 11) && strcmp(e->key, "extensions.objectformat");
}

int pw_repo_set_object_format(struct pw_repo *repo, const struct pw_hash_algo *algo,
                              struct pw_error *err)
{
	int rc;

	if (algo->id == PW_HASH_SHA1) {
		rc = pw_config_set_in_file(repo->config_path, "extensions.objectformat", NULL, err);
		if (!rc && !pw_config_foreach(repo->config, other_extension, NULL))
			rc = pw_config_set_in_file(repo->config_path,
			                           "core.repositoryformatversion", "0", err);
	} else {
		rc = pw_config_set_in_file(repo->config_path, "core.repositoryformatversion", "1",
		                           err);
		if (!rc)
			rc = pw_config_set_in_file(repo->config_path, "extensions.objectformat",
			                           algo->name, err);
	}
	if (!rc)
		rc = load_format(repo, err);
	return rc;
}
