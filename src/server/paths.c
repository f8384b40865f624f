/* Path and name rules the servers share (paths.h). */
#include <string.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "server/paths.h"

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
