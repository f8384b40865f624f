/* The v0/v1 ref advertisement as the two servers write it (upload-pack,
 * receive-pack): one pkt-line per ref, the capability list after a NUL on
 * the first one, and an empty repository's "capabilities^{}" line. */
#ifndef PW_PROTO_ADV_H
#define PW_PROTO_ADV_H

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/hash.h"

/* "<hex> <name>\n" as a pkt-line appended to out; with caps (not NULL),
 * "<hex> <name>\0<caps>\n", as the first line carries them. 0, or
 * pw_pkt_write's PW_ENOMEM or PW_ETOOBIG. */
int pw_adv__write_ref(struct pw_buf *out, const char *hex, const char *name, const char *caps,
                      size_t caps_len);
/* The line an advertisement without refs starts with: the all-zero id of
 * algo (the algorithm the client is served in) and "capabilities^{}",
 * then caps, so that an empty repository still tells its capabilities and
 * its object format. As pw_adv__write_ref. */
int pw_adv__write_no_refs(struct pw_buf *out, const struct pw_hash_algo *algo, const char *caps,
                          size_t caps_len);

#endif
