/* Path rules the git:// daemon and the HTTP handler share. */
#ifndef PW_SERVER_PATHS_H
#define PW_SERVER_PATHS_H

/* Git's daemon_avoid_alias: 1 when path does not start with '/' or '~', or
 * holds "//", "/./" or "/../", or ends in "/." or "/.."; else 0. */
int pw_srv_path_is_aliased(const char *path);

struct pw_buf;
/* Git's expansion of GIT_NAMESPACE, appended to out: "a/b" gives
 * "refs/namespaces/a/refs/namespaces/b/" (empty components are skipped, so
 * an empty namespace adds nothing). 0 or PW_ENOMEM. */
int pw_srv_namespace_prefix(struct pw_buf *out, const char *ns);

#endif
