/* Protocol vocabulary above pkt-lines: v0/v1 capability lists, v2 capability
 * advertisements and command requests, object-format negotiation, and the
 * argument lines of a fetch request. Pure decode/encode: no I/O. All views
 * point into the caller's bytes or into storage owned by the struct filled. */
#ifndef PACKWIRE_PROTO_H
#define PACKWIRE_PROTO_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>
#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/pkt.h"

/*
 * Contract: everything here is pure: no I/O, no global state, any thread on
 * data that thread owns. Structs with an _init/_free pair (pw_v2_caps,
 * pw_v2_request, pw_fetch_args) are the caller's: _init before use, _free
 * after (also after a failure), views they hand out live until _free.
 * Messages go to the err given (may be NULL) and are worded for the peer
 * (they can be sent as an ERR packet as they are).
 */

/* ---- v0/v1 capability lists --------------------------------------------- */
/*
 * The text after the NUL of the first advertisement line (or after the oid of
 * the first want line): tokens separated by spaces (LF also ends a token),
 * each `key` or `key=value`. Keys may repeat (object-format, symref). Keys
 * match whole tokens only: "ofs-delta" never matches "ofs-deltax".
 */

/* First occurrence of key. 0 and *val (may be NULL) set: val->p is NULL for
 * a bare `key`, points after '=' for `key=value`. PW_ENOTFOUND otherwise. */
PW_API int pw_caps_get(const char *caps, size_t len, const char *key, struct pw_str *val);
/* 1 when key occurs (bare or with a value), else 0. */
PW_API int pw_caps_has(const char *caps, size_t len, const char *key);

struct pw_caps_iter {
	const char *p, *end;
};
PW_API void pw_caps_iter_init(struct pw_caps_iter *it, const char *caps, size_t len);
/* Next token; 1 with key/val set (val->p NULL when bare), 0 at the end. */
PW_API int pw_caps_next(struct pw_caps_iter *it, struct pw_str *key, struct pw_str *val);
/* Next occurrence of `key` (every symref=..., say); 1 or 0 at the end. */
PW_API int pw_caps_next_value(struct pw_caps_iter *it, const char *key, struct pw_str *val);

/* Append "key" or "key=value" (value may be NULL), preceded by a space unless
 * out is empty or ends in NUL (as after "<oid> HEAD\0"). */
PW_API int pw_caps_add(struct pw_buf *out, const char *key, const char *value);

/* Split a v0 advertisement line at its NUL: head is "<oid> <refname>", caps
 * what follows (LF stripped). Returns 1 when there was a NUL, else 0 (caps
 * then empty). */
PW_API int pw_adv_line_split(const char *line, size_t len, struct pw_str *head,
                             struct pw_str *caps);

/* ---- v2 capability advertisement ---------------------------------------- */

#define PW_V2_CAPS_MAX 1024 /* lines in one advertisement */

/* Split a v2 line at its first '=': key, and value (val->p NULL when none). */
PW_API void pw_v2_split(struct pw_str line, struct pw_str *key, struct pw_str *val);

struct pw_v2_caps {
	struct pw_str *lines; /* "key" or "key=value", LF stripped; valid once complete */
	size_t nr;
	/* private */
	struct pw_buf store_;
	size_t *off_, *len_, alloc_;
	int state_;
};

PW_API void pw_v2_caps_init(struct pw_v2_caps *c);
PW_API void pw_v2_caps_free(struct pw_v2_caps *c);
/* Feed packets one by one (copied, so reader views may go away): PW_EMORE
 * until the closing flush, then 0. PW_EPROTO when the first line is not
 * "version 2" or on delim / response-end / empty lines, PW_ETOOBIG past
 * PW_V2_CAPS_MAX lines. */
PW_API int pw_v2_caps_feed(struct pw_v2_caps *c, const struct pw_pkt *pkt, struct pw_error *err);
/* The same over a buffer of packets; *used = bytes up to and with the flush. */
PW_API int pw_v2_caps_parse(struct pw_v2_caps *c, const uint8_t *in, size_t len, size_t *used,
                            struct pw_error *err);
/* First line whose key is `key`: 0 with *val (may be NULL) or PW_ENOTFOUND. */
PW_API int pw_v2_caps_get(const struct pw_v2_caps *c, const char *key, struct pw_str *val);
PW_API int pw_v2_caps_has(const struct pw_v2_caps *c, const char *key);
/* Does `key`'s value list (space separated, "fetch=shallow wait-for-done")
 * contain `feature`? */
PW_API int pw_v2_caps_has_feature(const struct pw_v2_caps *c, const char *key, const char *feature);
/* Write "version 2\n", each line + "\n", and a flush. */
PW_API int pw_v2_adv_write(struct pw_buf *out, const char *const *lines, size_t n);

/* ---- v2 command request ------------------------------------------------- */

#define PW_V2_REQUEST_MAX_BYTES (64u << 20) /* default bound on stored lines */
#define PW_V2_REQUEST_MAX_LINES (1u << 21)

struct pw_v2_request {
	struct pw_str command; /* "fetch", "ls-refs", ...; empty if `empty` */
	struct pw_str *caps;   /* capability lines as sent ("agent=git/2.39.5") */
	size_t ncaps;
	struct pw_str *args; /* argument lines after the delim */
	size_t nargs;
	int empty;        /* a lone flush: the client ends the session */
	size_t max_bytes; /* 0 = PW_V2_REQUEST_MAX_BYTES; set after init */
	/* private */
	struct pw_buf store_;
	size_t *off_, *len_, alloc_, nlines_;
	size_t ncaps_, cmd_off_, cmd_len_;
	int state_, has_cmd_;
};

PW_API void pw_v2_request_init(struct pw_v2_request *req);
PW_API void pw_v2_request_free(struct pw_v2_request *req);
/*
 * Feed packets of one request: PW_EMORE until the closing flush, then 0 with
 * the fields set (views into the request's own storage; one trailing LF is
 * stripped from every line). Errors (PW_EPROTO unless said):
 *   "no command requested"; "command 'X' requested after already requesting
 *   command 'Y'"; "invalid command ''"; "expected flush after <cmd>
 *   arguments" for a second delim; "protocol error: unexpected response-end
 *   packet"; "protocol error: empty capability line"; PW_ETOOBIG "request too
 *   large" past max_bytes or PW_V2_REQUEST_MAX_LINES lines.
 * After 0 or an error, pw_v2_request_free + init before the next request.
 */
PW_API int pw_v2_request_feed(struct pw_v2_request *req, const struct pw_pkt *pkt,
                              struct pw_error *err);
PW_API int pw_v2_request_parse(struct pw_v2_request *req, const uint8_t *in, size_t len,
                               size_t *used, struct pw_error *err);
/* First capability line of the request with this key. */
PW_API int pw_v2_request_cap(const struct pw_v2_request *req, const char *key, struct pw_str *val);
/* Check against what the server offers (NULL-terminated name lists):
 * "invalid command 'X'", "unknown capability 'X'" (PW_EPROTO). */
PW_API int pw_v2_request_check(const struct pw_v2_request *req, const char *const *commands,
                               const char *const *caps, struct pw_error *err);

/* ---- object-format ------------------------------------------------------ */

/* Name -> algorithm; PW_EPROTO "unknown object format '<name>'". */
PW_API int pw_object_format_lookup(const char *name, size_t len, const struct pw_hash_algo **out,
                                   struct pw_error *err);
/*
 * Server side of a v2 request: `requested` is the client's object-format
 * value, NULL when it sent none (which means sha1). On success *client (may
 * be NULL) is set. PW_EPROTO "unknown object format '<name>'", PW_EMISMATCH
 * "mismatched object format: server <X>; client <Y>". Messages are ready to
 * go out as ERR packets.
 */
PW_API int pw_object_format_server_check(const struct pw_hash_algo *server,
                                         const struct pw_str *requested,
                                         const struct pw_hash_algo **client, struct pw_error *err);
/* The same, taking the first object-format capability line of req. */
PW_API int pw_v2_request_object_format(const struct pw_v2_request *req,
                                       const struct pw_hash_algo *server,
                                       const struct pw_hash_algo **client, struct pw_error *err);
/* v0/v1 advertisement: the algorithm of the first object-format capability,
 * sha1 when there is none; PW_EPROTO for an unknown name. */
PW_API int pw_object_format_from_caps(const char *caps, size_t len, const struct pw_hash_algo **out,
                                      struct pw_error *err);
/* Does a v0/v1 capability list allow `algo` (any object-format value equal;
 * no object-format at all allows sha1 only)? 1 or 0. */
PW_API int pw_object_format_caps_supports(const char *caps, size_t len,
                                          const struct pw_hash_algo *algo);
/*
 * Client side of v2: the server advertised `advertised` (NULL when it did not
 * advertise object-format). PW_EMISMATCH "mismatched algorithms: client <L>;
 * server <R>" or PW_EUNSUPPORTED "the server does not support algorithm
 * '<L>'" (the wording of Git's fetch-pack).
 */
PW_API int pw_object_format_client_check(const struct pw_hash_algo *local,
                                         const struct pw_str *advertised, struct pw_error *err);

/* ---- fetch request arguments -------------------------------------------- */

enum pw_filter_kind {
	PW_FILTER_NONE = 0,
	PW_FILTER_BLOB_NONE,  /* blob:none */
	PW_FILTER_BLOB_LIMIT, /* blob:limit=<n>[kmg]; value = bytes */
	PW_FILTER_TREE_DEPTH, /* tree:<depth>; value = depth */
	PW_FILTER_SPARSE_OID, /* sparse:oid=<blob-ish>; sparse_oid = the name */
	PW_FILTER_COMBINE,    /* combine:<f1>+<f2>...; sub[0..nr_sub) */
};

/* combine: nests at most this deep */
#define PW_FILTER_MAX_NESTING 8

struct pw_filter {
	enum pw_filter_kind kind;
	uint64_t value;
	char *sparse_oid;      /* malloc'd, NUL-terminated (sparse:oid) */
	struct pw_filter *sub; /* malloc'd (combine) */
	size_t nr_sub;
};

/* PW_EINVAL "invalid filter-spec '...'" for a malformed spec of a known kind
 * (combine: Git's "expected something after combine:" and "must escape char
 * in sub-filter-spec: 'c'" too; sub-specs are %-decoded), PW_EUNSUPPORTED
 * "unsupported filter-spec '...'" for other kinds (sparse:path=,
 * object:type=). Free *out with pw_filter_free (also after an error). */
PW_API int pw_filter_parse(struct pw_filter *out, const char *spec, size_t len,
                           struct pw_error *err);
PW_API void pw_filter_free(struct pw_filter *f);
/* The name a filter kind has in uploadpackfilter.<name>.allow. */
PW_API const char *pw_filter_config_name(enum pw_filter_kind kind);

#define PW_FETCH_MAX_IDS (1u << 22) /* per list (wants, haves, shallows, ...) */

struct pw_oid_array {
	struct pw_oid *v;
	size_t nr, alloc;
};

/* Append oid (the array grows by doubling); 0 or PW_ENOMEM. */
/* The array is the caller's: start it zeroed, free(arr->v) when done. */
PW_API int pw_oid_array_push(struct pw_oid_array *arr, const struct pw_oid *oid);

struct pw_str_array {
	char **v; /* malloc'd, NUL-terminated */
	size_t nr, alloc;
};

struct pw_fetch_args {
	const struct pw_hash_algo *algo; /* the session's algorithm */
	struct pw_oid_array wants, haves, shallows;
	struct pw_str_array want_refs; /* v2 want-ref */
	struct pw_str_array deepen_not;
	unsigned depth;        /* deepen N; 0 = not given */
	uint64_t deepen_since; /* 0 = not given */
	struct pw_filter filter;
	unsigned has_filter : 1, done : 1, deepen_relative : 1;
	/* v2 argument flags (v0: the same names from the want-line capabilities) */
	unsigned thin_pack : 1, ofs_delta : 1, no_progress : 1, include_tag : 1;
	unsigned sideband_all : 1, wait_for_done : 1, packfile_uris : 1;
	/* v0 capabilities */
	unsigned multi_ack : 1, multi_ack_detailed : 1, side_band : 1, side_band_64k : 1;
	unsigned no_done : 1, allow_tip_sha1 : 1, allow_reachable_sha1 : 1;
	char *v0_caps; /* capabilities of the first want line that had some, or NULL */
};

PW_API void pw_fetch_args_init(struct pw_fetch_args *a, const struct pw_hash_algo *algo);
PW_API void pw_fetch_args_free(struct pw_fetch_args *a);

/*
 * One v2 fetch argument line (LF already stripped or not). Ids must be
 * exactly a->algo->hexsz hex digits: PW_EPROTO "protocol error: expected
 * 'want <sha256 id>', got 'want 1234'" and alike; "unexpected line: '...'"
 * for unknown lines; filter errors as pw_filter_parse. packfile-uris is
 * accepted and ignored (flag set).
 */
PW_API int pw_fetch_args_v2_line(struct pw_fetch_args *a, const char *line, size_t len,
                                 struct pw_error *err);
/* All argument lines of a parsed v2 fetch request, then pw_fetch_args_check. */
PW_API int pw_fetch_args_v2_request(struct pw_fetch_args *a, const struct pw_v2_request *req,
                                    struct pw_error *err);
/* v0/v1, first phase (until the client's flush): want (capabilities after the
 * oid), shallow, deepen, deepen-since, deepen-not, filter. */
PW_API int pw_fetch_args_v0_want_line(struct pw_fetch_args *a, const char *line, size_t len,
                                      struct pw_error *err);
/* v0/v1 negotiation: have <oid> or done. */
PW_API int pw_fetch_args_v0_have_line(struct pw_fetch_args *a, const char *line, size_t len,
                                      struct pw_error *err);
/* Cross-line rules: deepen with deepen-since/deepen-not. */
PW_API int pw_fetch_args_check(const struct pw_fetch_args *a, struct pw_error *err);

#endif
