/* GIT_TRACE_PACKET for the server commands: each pkt-line read and written,
 * in Git's "packet: <who>< line" shape, so scripts (and Git's tests) that
 * read the trace of a Git server read packwire's the same way. */
#ifndef PW_CLI_TRACE_PACKET_H
#define PW_CLI_TRACE_PACKET_H

#include <stddef.h>

struct pw_cli_trace_packet;
/* The destination GIT_TRACE_PACKET names as Git reads it ("1"/"true":
 * stderr, a digit: that fd, an absolute path: appended to), or NULL when
 * tracing is off; `who` is the name shown (e.g. "upload-pack"). Warns on
 * stderr, as Git does, for a value it cannot use. */
struct pw_cli_trace_packet *pw_cli_trace_packet_open(const char *who);
/* A pw_upload_pack_opts.trace_packet callback (ctx = the handle). */
void pw_cli_trace_packet(void *ctx, int write, const char *data, size_t len);
void pw_cli_trace_packet_close(struct pw_cli_trace_packet *t);
/* Show later lines as coming from `who` (a client changes roles: git
 * remote-http traces as "git", its fetch as "fetch-pack"). NULL t: no-op. */
void pw_cli_trace_packet_who(struct pw_cli_trace_packet *t, const char *who);
/* Trace each packet of a buffer of pkt-lines (write: 1 sent, 0 read). */
void pw_cli_trace_packet_buf(struct pw_cli_trace_packet *t, int write, const void *data,
                             size_t len);

/* GIT_TRACE for the server commands: the lines Git's own trace shows of the
 * commands it runs ("run_command: ...") and, for work packwire does
 * in-process where Git runs a child, what that child's command line would
 * have been ("in-process: git pack-objects ..."). NULL when GIT_TRACE is
 * off; closed with pw_cli_trace_packet_close. */
struct pw_cli_trace_packet *pw_cli_trace_open(void);
/* A pw_upload_pack_opts.trace_command callback (ctx = that handle; NULL is
 * fine): "trace: " and `line` after Git's prefix. */
void pw_cli_trace_line(void *ctx, const char *line);

/* Where Git's trace variable var (GIT_TRACE_PACKET, GIT_TRACE_CURL) with
 * value v sends its lines: stderr for "1"/"true", fd N for a digit, a file
 * opened for appending for an absolute path (*own = 1: the caller closes
 * it). -1 when tracing is off, or after a warning for a value that is
 * neither (as Git words it) or a file that cannot be opened. */
int pw_cli_trace_dest(const char *var, const char *v, int *own);
/* Git's time-and-place prefix of a trace line ("12:34:56.789012 <where>",
 * padded to 40 columns) written into buf; its length (0 when cap is too
 * small). */
size_t pw_cli_trace_prefix(char *buf, size_t cap, const char *where);
/* GIT_TRACE_BARE: trace lines without that prefix. */
int pw_cli_trace_bare(void);

#endif
