/* The remote-helper protocol (gitremote-helpers(7)) as packwire speaks it
 * when it is the helper (`packwire remote-http`): the parser of the commands
 * Git writes to a helper's stdin. Pure: no I/O, any thread. */
#ifndef PACKWIRE_HELPER_H
#define PACKWIRE_HELPER_H

#include <stddef.h>

#include "packwire/export.h"

#include "packwire/error.h"

enum pw_helper_cmd_kind {
	PW_HCMD_END = 1,           /* an empty line: end of a batch, or of the session */
	PW_HCMD_CAPABILITIES,      /* "capabilities" */
	PW_HCMD_LIST,              /* "list" */
	PW_HCMD_LIST_FOR_PUSH,     /* "list for-push" */
	PW_HCMD_OPTION,            /* "option <name> [<value>]": arg, arg2 */
	PW_HCMD_FETCH,             /* "fetch <oid> <name>": arg, arg2 */
	PW_HCMD_PUSH,              /* "push [+]<src>:<dst>": arg */
	PW_HCMD_CONNECT,           /* "connect <service>": arg */
	PW_HCMD_STATELESS_CONNECT, /* "stateless-connect <service>": arg */
	PW_HCMD_IMPORT,            /* "import <name>": arg */
	PW_HCMD_EXPORT,            /* "export" */
	PW_HCMD_GET,               /* "get <url> <path>": arg, arg2 (the path may hold spaces) */
};

/* A parsed command; the arguments are views into the line (not
 * NUL-terminated; NULL with length 0 when absent). */
struct pw_helper_cmd {
	enum pw_helper_cmd_kind kind;
	const char *arg, *arg2;
	size_t arg_len, arg2_len;
};

/* One line (without its newline; a trailing CR is not stripped) into *out.
 * PW_EPROTO "unknown command '<line>'" or "malformed '<verb>' command". */
PW_API int pw_helper_cmd_parse(const char *line, size_t len, struct pw_helper_cmd *out,
                               struct pw_error *err);

/* An option value as Git's transport writes it: C-quoted ("...", with
 * backslash escapes and octal bytes) when it holds special characters, else
 * as is. The value unquoted into a malloc'd string (NUL-terminated; *out_len
 * its length, which a \000 can make shorter than strlen sees), or NULL when
 * the quoting is malformed (err: PW_EPROTO) or memory is short (PW_ENOMEM). */
PW_API char *pw_helper_unquote(const char *s, size_t len, size_t *out_len, struct pw_error *err);

#endif
