/* A small bounded JSON reader (RFC 8259) for answers we do not trust, such
 * as etcd's JSON gateway, and the few writers those requests need.
 *
 * The parse is one pass over the caller's bytes into a flat array of nodes
 * (no copies of strings: nodes point into the text); strings are unescaped
 * on demand. Bounds: the nesting depth and the number of nodes, both set by
 * the caller (docs/limits.md); past them the parse fails with PW_ETOOBIG.
 * Anything that is not JSON is PW_EINVAL with the offset in the message.
 * No I/O, no globals: one handle per thread. */
#ifndef PW_UTIL_JSON_H
#define PW_UTIL_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"

enum pw_json_type {
	PW_JSON_NULL = 1,
	PW_JSON_FALSE,
	PW_JSON_TRUE,
	PW_JSON_NUMBER,
	PW_JSON_STRING,
	PW_JSON_ARRAY,
	PW_JSON_OBJECT,
};

struct pw_json_node {
	uint8_t type;
	size_t start, len;         /* the value's text (a string's without its quotes) */
	size_t key_start, key_len; /* an object member's key (escaped text, no quotes) */
	int child;                 /* first element or member; -1 = none */
	int next;                  /* next sibling; -1 = none */
};

#define PW_JSON_DEFAULT_DEPTH 32
#define PW_JSON_DEFAULT_NODES (1u << 20)

struct pw_json {
	const char *text; /* borrowed: must outlive the handle's use */
	size_t len;
	struct pw_json_node *nodes; /* nodes[0] is the top-level value */
	size_t nr, alloc;
	unsigned max_depth; /* 0 = PW_JSON_DEFAULT_DEPTH */
	size_t max_nodes;   /* 0 = PW_JSON_DEFAULT_NODES */
};

/* Zero the handle (limits to their defaults). */
void pw_json_init(struct pw_json *j);
void pw_json_free(struct pw_json *j);

/* Parse text[0..len): one value, optional white space around it. 0, or
 * PW_EINVAL (not JSON), PW_ETOOBIG (a bound), PW_ENOMEM; err says where. */
int pw_json_parse(struct pw_json *j, const char *text, size_t len, struct pw_error *err);

/* The member `key` of object node obj, or -1 (obj not an object, no such
 * member). With repeated keys, the last one wins (as most readers do). */
int pw_json_get(const struct pw_json *j, int obj, const char *key);
/* Node type, 0 for an index that is not a node. */
int pw_json_type(const struct pw_json *j, int node);

/* A string node, unescaped into out (appended; \u escapes become UTF-8,
 * surrogate pairs joined; a lone surrogate is PW_EINVAL). */
int pw_json_string(const struct pw_json *j, int node, struct pw_buf *out, struct pw_error *err);
/* An integer: a number node without fraction or exponent, or a string of
 * one (protobuf's JSON writes int64 as strings), in int64 range. */
int pw_json_int(const struct pw_json *j, int node, int64_t *out, struct pw_error *err);
/* A string node holding base64 (standard alphabet, padded), decoded into
 * out (appended). */
int pw_json_base64(const struct pw_json *j, int node, struct pw_buf *out, struct pw_error *err);
/* true / false node: 1 / 0; anything else (absent too): def. */
int pw_json_bool(const struct pw_json *j, int node, int def);

/* Writers: a JSON string literal of s[0..len) (quotes included), and the
 * base64 of data[0..len) as a JSON string literal. */
int pw_json_add_string(struct pw_buf *out, const char *s, size_t len);
int pw_json_add_base64(struct pw_buf *out, const void *data, size_t len);

/* Plain base64 decoding of text[0..len) into out (appended): PW_EINVAL on a
 * character outside the alphabet or bad padding. */
int pw_base64_decode(struct pw_buf *out, const char *text, size_t len, struct pw_error *err);

#endif
