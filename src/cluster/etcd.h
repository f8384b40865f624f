/* A small etcd v3 client over etcd's JSON gateway (HTTP/1.1 POSTs to
 * /v3/kv/range, /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive), with
 * libcurl loaded at run time. Keys and values are bytes (base64 on the
 * wire). Several endpoints: a request that cannot reach one (connection
 * refused, timeout, HTTP 5xx) goes to the next; the first that answered
 * is tried first the next time. Every answer goes through the bounded JSON
 * reader (util/json.h); at most PW_ETCD_MAX_ANSWER bytes are read.
 * Thread-safe: any number of requests at once on one handle. */
#ifndef PW_CLUSTER_ETCD_H
#define PW_CLUSTER_ETCD_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"

#define PW_ETCD_MAX_ENDPOINTS 16
#define PW_ETCD_MAX_ANSWER    (64u << 20) /* bytes of one answer */
#define PW_ETCD_MAX_TXN_OPS   128         /* etcd's default --max-txn-ops */
#define PW_ETCD_MAX_WATCH_MSG (8u << 20)  /* bytes of one watch message */

struct pw_etcd;

/* endpoints: "http://127.0.0.1:2379,http://10.0.0.2:2379" (an "etcd:"
 * prefix is allowed). timeout_ms: one request to one endpoint, 0 = 2000. */
int pw_etcd_new(struct pw_etcd **out, const char *endpoints, unsigned timeout_ms,
                struct pw_error *err);
void pw_etcd_free(struct pw_etcd *e);

struct pw_etcd_kv {
	char *key, *value; /* NUL-terminated copies (the bytes may hold NULs too) */
	size_t key_len, value_len;
	int64_t create_revision, mod_revision, version, lease;
};

struct pw_etcd_range {
	struct pw_etcd_kv *kvs;
	size_t nr;
	int64_t revision; /* the store's revision the answer reflects */
	int more;
};

/* Every key with this prefix (prefix_len 0: key alone, exactly). Linearizable
 * unless serializable. PW_EIO when no endpoint answered. */
int pw_etcd_range(struct pw_etcd *e, const char *key, int prefix, int serializable,
                  struct pw_etcd_range *out, struct pw_error *err);
void pw_etcd_range_free(struct pw_etcd_range *r);

/* One compare: key's value equals value, or (value NULL) key is absent. */
struct pw_etcd_cmp {
	const char *key;
	const char *value;
};
/* One write: put value (lease 0 = none), or delete when value is NULL. */
struct pw_etcd_op {
	const char *key;
	const char *value;
	int64_t lease;
};
/* A conditional group: ops apply when every cmp holds. */
struct pw_etcd_group {
	const struct pw_etcd_cmp *cmps;
	size_t ncmps;
	const struct pw_etcd_op *ops;
	size_t nops;
	int succeeded; /* out */
};

/* One transaction. With one group, its compares are the transaction's (all
 * or nothing). With several, each is a nested transaction of its own inside
 * one request: each group applies or not on its own, all at one revision.
 * *revision (may be NULL) gets the store's revision after it. */
int pw_etcd_txn(struct pw_etcd *e, struct pw_etcd_group *groups, size_t ngroups, int64_t *revision,
                struct pw_error *err);

int pw_etcd_lease_grant(struct pw_etcd *e, int64_t ttl, int64_t *id, struct pw_error *err);
/* *ttl gets the seconds left; 0 when the lease has expired. */
int pw_etcd_lease_keepalive(struct pw_etcd *e, int64_t id, int64_t *ttl, struct pw_error *err);

/* One message of a watch stream. */
struct pw_etcd_watch_msg {
	int64_t revision;          /* the header's */
	int created, canceled;     /* the watch began / etcd ended it */
	int64_t compact_revision;  /* canceled: the start revision is compacted */
	struct pw_etcd_kv *events; /* each event's kv (a delete: empty value) */
	size_t nr;
};
void pw_etcd_watch_msg_free(struct pw_etcd_watch_msg *m);

/*
 * Watch every key with prefix, from start_revision (0: from now), through
 * the JSON gateway's POST /v3/watch: a stream of JSON objects, one per
 * message, each at most PW_ETCD_MAX_WATCH_MSG bytes (a longer one cuts the
 * stream: PW_ETOOBIG). on_msg gets each; non-zero from it ends the watch
 * with that code. Returns 0 once *stop is non-zero (looked at about once a
 * second), else why the stream ended (PW_EIO: it broke or closed).
 */
int pw_etcd_watch(struct pw_etcd *e, const char *prefix, int64_t start_revision,
                  int (*on_msg)(void *ctx, const struct pw_etcd_watch_msg *m), void *ctx,
                  const int *stop, struct pw_error *err);
/* For tests and fuzzing: decode one message; feed bytes as the stream
 * would (in small pieces, split into messages, each decoded). */
int pw_etcd_parse_watch(const char *text, size_t len, struct pw_etcd_watch_msg *out,
                        struct pw_error *err);
int pw_etcd_watch_feed_test(const char *data, size_t len,
                            int (*on_msg)(void *ctx, const struct pw_etcd_watch_msg *m), void *ctx,
                            struct pw_error *err);

/* Monotonic milliseconds now, and of the last request that etcd answered
 * with 200 on this handle (0: none yet). */
int64_t pw_etcd_now_ms(void);
int64_t pw_etcd_last_ok_ms(struct pw_etcd *e);

/* GET url (a peer's status), the body dropped: *status gets the HTTP
 * status; PW_EIO when no answer came within timeout_ms. */
int pw_etcd_get_status(const char *url, unsigned timeout_ms, long *status, struct pw_error *err);

/* Exposed for tests and fuzzing: decode a range answer / a txn answer. */
int pw_etcd_parse_range(const char *text, size_t len, struct pw_etcd_range *out,
                        struct pw_error *err);
int pw_etcd_parse_txn(const char *text, size_t len, struct pw_etcd_group *groups, size_t ngroups,
                      int64_t *revision, struct pw_error *err);

#endif
