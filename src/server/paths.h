/* Path rules the git:// daemon and the HTTP handler share. */
#ifndef PW_SERVER_PATHS_H
#define PW_SERVER_PATHS_H

#include <stddef.h>

/* Git's daemon_avoid_alias: 1 when path does not start with '/' or '~', or
 * holds "//", "/./" or "/../", or ends in "/." or "/.."; else 0. */
int pw_srv_path_is_aliased(const char *path);

/* The weaker rule for a path the web server has already resolved
 * (PATH_TRANSLATED, which Git's http-backend trusts as it is): 1 when it
 * holds a ".." segment, else 0. */
int pw_srv_path_has_dotdot(const char *path);

/* The one check of where a repository really is, for the daemon, serve and
 * http-backend: 1 when `path` (the directory to be served), every symlink
 * resolved, is base (resolved too) or lies under it; 0 when it leads
 * outside ("resolves outside the base path") or either cannot be
 * resolved. */
int pw_srv_path_inside(const char *base, const char *path);

struct pw_buf;
/* Git's expansion of GIT_NAMESPACE, appended to out: "a/b" gives
 * "refs/namespaces/a/refs/namespaces/b/" (empty components are skipped, so
 * an empty namespace adds nothing). 0 or PW_ENOMEM. */
int pw_srv_namespace_prefix(struct pw_buf *out, const char *ns);

/* The other algorithm's view of a repository is named by its path followed
 * by "@sha1" or "@sha256" (docs/compat-map.md). When path (len bytes) ends
 * so: the algorithm's name ("sha1", "sha256"; static) and *base_len the
 * length of the repository's path before it. NULL otherwise. */
const char *pw_srv_path_view(const char *path, size_t len, size_t *base_len);
/* Does the directory a request resolved to carry the view's suffix itself
 * (a repository really named "x@sha1", or "x@sha1.git", "x@sha1/.git")?
 * Then it is served as it is, not as a view. */
int pw_srv_dir_is_view_name(const char *dir, const char *view);

#endif
