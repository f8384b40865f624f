/* The pure parts of finding a submodule's repository (submodule.c): the
 * .gitmodules reader and where a submodule URL points below a server's
 * base path. Both read bytes a client may push: bounded, no I/O. */
#ifndef PW_COMPAT_SUBMODULE_H
#define PW_COMPAT_SUBMODULE_H

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"

/* Bounds (docs/limits.md). */
#define PW_GITMODULES_MAX      ((size_t)1 << 20) /* bytes of a .gitmodules read */
#define PW_GITMODULES_ENTRIES  256               /* submodules of one .gitmodules */
#define PW_SUBMODULE_URL_MAX   4096              /* bytes of a URL considered */
#define PW_SUBMODULE_REPOS_MAX 64                /* repositories one resolver opens */

struct pw_gitmodule {
	char *name, *path, *url; /* url may be NULL */
};
struct pw_gitmodules {
	struct pw_gitmodule *v;
	size_t nr;
};

/* The submodules of a .gitmodules text that have a path (at most
 * PW_GITMODULES_ENTRIES; later ones are ignored). PW_ECORRUPT for a text
 * that is not config syntax, PW_ENOMEM. Free with pw_compat__gitmodules_free. */
int pw_compat__gitmodules_parse(struct pw_gitmodules *out, const char *data, size_t len,
                                struct pw_error *err);
void pw_compat__gitmodules_free(struct pw_gitmodules *g);

/* What a submodule URL names (pw_compat__submodule_url). */
enum pw_suburl {
	PW_SUBURL_NONE = 0, /* nothing a server can look up (an empty, ~user or bare path) */
	PW_SUBURL_REL,      /* out: a path relative to the base ("a/b.git") */
	PW_SUBURL_ABS,      /* out: an absolute local path ("/srv/git/b.git") */
	PW_SUBURL_NET       /* out: a URL's path, relative ("git/b.git"), host unknown */
};
/* Where url (len bytes) points: a relative URL ("./x", "../x") resolved
 * against super_rel (the superproject's path under the base, "g/super.git";
 * NULL: relative URLs name nothing), "/path" and "file:///path" as local
 * paths, "scheme://host/path" and "host:path" by their path. Components "."
 * and ".." are resolved ("..": PW_SUBURL_NONE when it would climb above
 * the base or the root), a view suffix "@sha1"/"@sha256" of the last
 * component is dropped. PW_ENOMEM or the kind. */
int pw_compat__submodule_url(struct pw_buf *out, const char *super_rel, const char *url,
                             size_t len);

#endif
