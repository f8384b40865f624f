/* Running a remote helper (git-remote-<name>, gitremote-helpers(7)): the
 * process, its line-oriented answers and its capabilities. The connect and
 * stateless-connect kinds become a struct pw_conn (helper.c); the others are
 * driven by the client (src/client/helper.c). */
#ifndef PW_TRANSPORT_HELPER_H
#define PW_TRANSPORT_HELPER_H

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/transport.h"

#define PW_HELPER_FETCH             0x001
#define PW_HELPER_PUSH              0x002
#define PW_HELPER_IMPORT            0x004
#define PW_HELPER_EXPORT            0x008
#define PW_HELPER_CONNECT           0x010
#define PW_HELPER_STATELESS_CONNECT 0x020
#define PW_HELPER_OPTION            0x040
#define PW_HELPER_CHECK_CONNECT     0x080
#define PW_HELPER_OBJECT_FORMAT     0x100
#define PW_HELPER_SIGNED_TAGS       0x200
#define PW_HELPER_NO_PRIVATE_UPDATE 0x400
#define PW_HELPER_BIDI_IMPORT       0x800

/* Longest line a helper may print. */
#define PW_HELPER_LINE_MAX 65536
/* Most refs a helper's "list" may name. */
#define PW_HELPER_MAX_REFS (1 << 22)

struct pw_helper {
	char *name;
	int pid;
	int in_fd;  /* the helper's stdout */
	int out_fd; /* the helper's stdin */
	unsigned caps;
	char **refspecs;
	size_t nr_refspecs;
	char *import_marks, *export_marks; /* capabilities: files for fast-export */
	struct pw_buf line;
	int status, reaped;
	/* remote.<name>.helperTimeout, else packwire.helperTimeout (seconds; 0,
	 * the default, waits as long as Git does: for ever): the longest the
	 * helper may take to print a line of an answer before it is stopped */
	int timeout_ms;
};

/* One line of the answer to "capabilities" (without its newline) into h.
 * An unknown capability marked '*' (mandatory) is an error. Pure. */
int pw_helper_parse_capability(struct pw_helper *h, const char *line, size_t len,
                               struct pw_error *err);

/* Find git-remote-<u->helper> (exec path, then PATH), start it with the
 * remote name and address, GIT_DIR and GIT_PROTOCOL=version=<version>
 * (when > 0) in its environment, and read its capabilities. */
int pw_helper_start(struct pw_helper **out, const struct pw_url *u,
                    const struct pw_transport_opts *opts, int version, struct pw_error *err);
/* Write s (a command, newline included). */
int pw_helper_write(struct pw_helper *h, const char *s, size_t n, struct pw_error *err);
/* The next line of output without its newline, in h->line. End of output is
 * an error naming the helper ("remote helper 'x' aborted session"). */
int pw_helper_read_line(struct pw_helper *h, struct pw_error *err);
/* Close the pipes, reap; *status gets the exit code. */
int pw_helper_finish(struct pw_helper *h, int *status, struct pw_error *err);
void pw_helper_free(struct pw_helper *h);

/* "option <name> <value>": 0 "ok", 1 "unsupported", else an error. */
int pw_helper_option(struct pw_helper *h, const char *name, const char *value,
                     struct pw_error *err);

#endif

/* One line of a helper's "list" answer. */
enum pw_helper_list_kind {
	PW_HLIST_REF = 1, /* "<oid> <name>[ <attr>...]" */
	PW_HLIST_SYMREF,  /* "@<target> <name>" */
	PW_HLIST_UNKNOWN, /* "? <name>": value not known to the helper */
	PW_HLIST_KEYWORD, /* ":<keyword> <value>" (":object-format sha256") */
};
struct pw_helper_list_line {
	enum pw_helper_list_kind kind;
	struct pw_oid oid;        /* PW_HLIST_REF */
	const char *name, *value; /* views: ref name or keyword; target or keyword value */
	size_t name_len, value_len;
};
/* Parse one non-empty line for algo (the ids' length). Pure. */
int pw_helper_parse_list_line(const char *line, size_t len, const struct pw_hash_algo *algo,
                              struct pw_helper_list_line *out, struct pw_error *err);

/* One line of a helper's answer to a push batch: "ok <ref>[ <msg>]" or
 * "error <ref>[ <msg>]". Pure. */
struct pw_helper_push_line {
	int ok;
	const char *ref, *msg; /* views; msg NULL when absent */
	size_t ref_len, msg_len;
};
int pw_helper_parse_push_line(const char *line, size_t len, struct pw_helper_push_line *out,
                              struct pw_error *err);
