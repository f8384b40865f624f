/* The parts of an upload-pack session that upload.c (v0/v1) and serve.c
 * (v2) drive: negotiation (negotiate.c), shallow computation (shallow.c),
 * pack generation (packgen.c) and the v2 command loop (serve.c). */
#ifndef PW_SERVER_UPLOAD_PARTS_H
#define PW_SERVER_UPLOAD_PARTS_H

#include "packwire/hash.h"

struct pw_upload_session;

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
