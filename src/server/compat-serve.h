/* Serving a client of the other algorithm (compat-serve.c): a repository
 * stored in one algorithm answers a client of the other through its compat
 * map (docs/compat-map.md). Ids are translated where they cross the wire:
 * the advertisement and shallow lines go out in the client's algorithm,
 * wants, haves and shallows come back to storage ids, and the pack
 * writer translates the pack (pw_compat_pack_translation). The rest of the session works in the
 * storage algorithm, unchanged. */
#ifndef PW_SERVER_COMPAT_SERVE_H
#define PW_SERVER_COMPAT_SERVE_H

#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/pack-write.h"

struct pw_upload_session;

/* Set s->wire from opts.object_format and open the map when it is not the
 * storage algorithm. Error in err (unknown algorithm, unreadable map). */
int pw_srv_compat_setup(struct pw_upload_session *s, struct pw_error *err);
void pw_srv_compat_free(struct pw_upload_session *s);

/* Every advertised id (and peeled value, and the repository's shallow
 * commits) has an id in the client's algorithm; else an error telling to
 * build the map. Called once the refs are loaded. */
int pw_srv_compat_check_refs(struct pw_upload_session *s);

/* The hex of a storage id in the client's algorithm (hex holds
 * PW_MAX_HEXSZ + 1). Without a map: pw_oid_to_hex. An id the map lacks
 * (checked before by pw_srv_compat_check_refs) gives the zero id. */
const char *pw_srv_hex(struct pw_upload_session *s, const struct pw_oid *oid, char *hex);

/* The client's wants and shallows (s->args) in place to storage ids: an
 * unknown want is "not our ref", an unknown shallow is dropped. */
int pw_srv_compat_in(struct pw_upload_session *s);

/* A have of the client's algorithm as a storage id: 0, or PW_ENOTFOUND when
 * the map does not know it (not common). */
int pw_srv_compat_have(struct pw_upload_session *s, const struct pw_oid *oid,
                       struct pw_oid *storage);

/* packgen: make w write in the client's algorithm (before any object is
 * added). Error in s->err. */
int pw_srv_compat_translate(struct pw_upload_session *s, struct pw_pack_writer *w);

/* The stored view (packwire compat build --view-pack): an odb over the
 * pack of the client's algorithm, opened once per session; NULL when there
 * is none or it cannot be opened (the request is then translated). */
struct pw_odb *pw_srv_compat_view(struct pw_upload_session *s);
/* Forget the stored view opened (the next pw_srv_compat_view reads
 * compat-view/current again): its generation was gone before its pack and
 * bitmap were open. */
void pw_srv_compat_view_drop(struct pw_upload_session *s);
/* Test seam (tests/hooks/view-open.c, in packwire-test-hooks only): called
 * when a request has the stored view's odb and is about to open its pack
 * and bitmap (the moment a rewrite may remove that generation). */
extern void (*pw_srv__test_view_opened)(void);

/* The client's id of a storage id: 0, or PW_ENOTFOUND. */
int pw_srv_compat_out(struct pw_upload_session *s, const struct pw_oid *oid, struct pw_oid *out);

#endif
