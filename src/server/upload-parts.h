/* The parts of an upload-pack session that upload.c (v0/v1) and serve.c
 * (v2) drive: negotiation (negotiate.c), shallow computation (shallow.c),
 * pack generation (packgen.c) and the v2 command loop (serve.c). */
#ifndef PW_SERVER_UPLOAD_PARTS_H
#define PW_SERVER_UPLOAD_PARTS_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_upload_session;
struct pw_pack_write_stats;

/* Record a have: 1 when we have it (now in have_objs), 0 when not, <0 on error. */
int pw_srv_got_have(struct pw_upload_session *s, const struct pw_oid *oid);
/* Is every want reachable from something the client has? 1/0, <0 on error. */
int pw_srv_ok_to_give_up(struct pw_upload_session *s);
/* Check the wants against what this server lets clients ask for (v0). */
int pw_srv_check_wants(struct pw_upload_session *s);
/* Compute new_shallow / unshallow from the deepen arguments; 1 when the
 * request deepens (lines to send), 0 when not. */
int pw_srv_compute_shallow(struct pw_upload_session *s);

/* pack generation (packgen.c): wants, haves, shallows of s->args */
int pw_srv_send_pack(struct pw_upload_session *s);

/* Where a pack being made goes: its bytes (data; an error stops the
 * writer) and its progress lines (progress; sent only for a client that
 * has side-band and wants progress). */
struct pw_srv_pack_sink {
	int (*data)(void *ctx, const void *data, size_t len, struct pw_error *err);
	int (*progress)(void *ctx, const char *line, size_t len);
};
/* Make the pack of the request in s->args (the session's graph, refs and
 * shallow state as negotiation left them) into sink; errors in s->err.
 * Only the session's pack state is touched, never its output: this runs
 * on a thread of its own when the pack cache writes an entry. */
int pw_srv_generate_pack(struct pw_upload_session *s, const struct pw_srv_pack_sink *sink,
                         void *sink_ctx, struct pw_pack_write_stats *st, uint32_t *pack_reused);
/* After the pack: the "Total" progress line, v0's closing flush, and out. */
int pw_srv_pack_done(struct pw_upload_session *s, const struct pw_pack_write_stats *st,
                     uint32_t pack_reused);

/* The pack through s->opts.pack_cache (pack-cache-serve.c): 0 when sent,
 * PW_SRV_CACHE_BYPASS when the request is not for the cache (nothing was
 * sent: the caller makes the pack itself), else an error in s->err. */
#define PW_SRV_CACHE_BYPASS 1
int pw_srv_send_pack_cached(struct pw_upload_session *s);
/* Count (and trace) a request served without the cache. */
void pw_srv_pack_cache_bypass(struct pw_upload_session *s, const char *why);

/* uploadpack.packObjectsHook from trusted configuration, or NULL; the pack
 * made by that hook instead of ours (packhook.c). */
const char *pw_srv_pack_objects_hook(struct pw_upload_session *s);
int pw_srv_send_pack_hook(struct pw_upload_session *s, const char *hook);
/* Tell opts.trace_command of the pack made here, as the pack-objects
 * command Git's upload-pack would run for this request. */
void pw_srv_trace_pack(struct pw_upload_session *s);

/* Protocol v2 (serve.c): the capability advertisement and the command loop. */
int pw_srv__serve_v2(struct pw_upload_session *s);

#endif
