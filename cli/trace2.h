/* GIT_TRACE2_EVENT for the server commands: Git's trace2 "data" events as
 * JSON lines, so that tools reading Git's event stream (and Git's tests)
 * see the negotiated version and the session ids. */
#ifndef PW_CLI_TRACE2_H
#define PW_CLI_TRACE2_H

/* The destination GIT_TRACE2_EVENT names (an absolute file, appended to; a
 * directory, a file per session; or a file descriptor 1..9), or NULL when
 * it is unset or not one of those. */
struct pw_cli_trace2;
/* A session id in the shape of Git's (time, then the process). */
void pw_cli_sid_make(char *buf, size_t size);
struct pw_cli_trace2 *pw_cli_trace2_open(const char *sid);
/* A pw_upload_pack_opts.trace_data callback (ctx = the handle; NULL is fine). */
void pw_cli_trace2_data(void *ctx, const char *category, const char *key, const char *value);
void pw_cli_trace2_close(struct pw_cli_trace2 *t);

#endif
