/* Path and name rules the servers share (paths.h). */
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "server/paths.h"
#include "util/fs.h"

/* Git's daemon_avoid_alias: the path starts with '/' or '~' and has no
 * "//", "/./", "/../", and does not end in "/." or "/..". */
int pw_srv_path_is_aliased(const char *p)
{
	int sl = 1, ndot = 0;

	if (!p || (*p != '/' && *p != '~'))
		return 1;
	for (p++;; p++) {
		char ch = *p;

		if (sl) {
			if (ch == '.')
				ndot++;
			else if (ch == '/') {
				if (ndot < 3)
					return 1;
				ndot = 0;
			} else if (!ch) {
				return ndot > 0 && ndot < 3 ? 1 : 0;
			} else {
				sl = ndot = 0;
			}
		} else if (!ch) {
			return 0;
		} else if (ch == '/') {
			sl = 1;
			ndot = 0;
		}
	}
}

int pw_srv_path_has_dotdot(const char *path)
{
	const char *p = path;

	while ((p = strstr(p, ".."))) {
		if ((p == path || p[-1] == '/') && (!p[2] || p[2] == '/'))
			return 1;
		p += 2;
	}
	return 0;
}

int pw_srv_path_inside(const char *base, const char *path)
{
	return pw_fs_path_inside(base, path);
}

int pw_srv_namespace_prefix(struct pw_buf *out, const char *ns)
{
	while (*ns) {
		const char *slash = strchr(ns, '/');
		size_t n = slash ? (size_t)(slash - ns) : strlen(ns);

		if (n && pw_buf_addf(out, "refs/namespaces/%.*s/", (int)n, ns))
			return PW_ENOMEM;
		ns += n;
		while (*ns == '/')
			ns++;
	}
	return 0;
}

const char *pw_srv_path_view(const char *path, size_t len, size_t *base_len)
{
	static const char *const views[] = {"sha1", "sha256"};
	size_t i;

	while (len > 1 && path[len - 1] == '/')
		len--;
	for (i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
		size_t n = strlen(views[i]);

		/* at least one byte of repository path before the '@' */
		if (len > n + 2 && path[len - n - 1] == '@' &&
		    !memcmp(path + len - n, views[i], n) && path[len - n - 2] != '/') {
			*base_len = len - n - 1;
			return views[i];
		}
	}
	return NULL;
}

static int strip(const char *s, size_t *len, const char *suffix)
{
	size_t n = strlen(suffix);

	if (*len < n || memcmp(s + *len - n, suffix, n))
		return 0;
	*len -= n;
	return 1;
}

int pw_srv_dir_is_view_name(const char *dir, const char *view)
{
	size_t len = strlen(dir), base;
	const char *v;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	strip(dir, &len, "/.git");
	strip(dir, &len, ".git");
	v = pw_srv_path_view(dir, len, &base);
	return v && !strcmp(v, view);
}
