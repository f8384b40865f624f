/* Error codes and the error record that every fallible call fills. */
#ifndef PACKWIRE_ERROR_H
#define PACKWIRE_ERROR_H

#include "packwire/export.h"

#include <stddef.h>

/*
 * Contract of every call in the library: 0 (or a documented count or
 * boolean) on success, a negative code below on failure, with the message
 * either in the handle the call worked on (pw_repo_error, pw_upload_session_error,
 * ...) or in the struct pw_error the caller passed (NULL drops it). The
 * message is for people; decide on the code. A record is plain data owned
 * by whoever declared it: no allocation, nothing to free, and the functions
 * below may run on different records in different threads at once.
 */

/* Every fallible function returns 0 or one of these (negative). */
enum pw_errcode {
	PW_OK = 0,
	PW_ERROR = -1,         /* generic failure, see the message */
	PW_ENOMEM = -2,        /* out of memory */
	PW_ENOTFOUND = -3,     /* object, ref, file or key not found */
	PW_EPROTO = -4,        /* protocol violation by the peer */
	PW_EMORE = -5,         /* a decoder needs more input bytes */
	PW_EIO = -6,           /* read/write/system call failed */
	PW_EINVAL = -7,        /* bad argument or malformed value */
	PW_ECORRUPT = -8,      /* on-disk or wire data is damaged */
	PW_EEXISTS = -9,       /* target already exists */
	PW_ELOCKED = -10,      /* lock held by another process */
	PW_EMISMATCH = -11,    /* old value / algorithm / checksum mismatch */
	PW_EUNSUPPORTED = -12, /* known but unsupported feature or format */
	PW_ETOOBIG = -13,      /* a bounded buffer or size limit was exceeded */
	PW_ECOLLISION = -14,   /* SHA-1 data is part of a collision attack (hash.h) */
};

#define PW_ERROR_MSG_MAX 1024

/*
 * A per-handle (or caller-owned) error record, SQLite style: whoever did the
 * work owns the record, so many sessions can run on one thread.
 */
struct pw_error {
	int code;
	char msg[PW_ERROR_MSG_MAX];
};

/* Record an error and return its code, so callers can `return pw_error_set(...)`.
 * `err` may be NULL (the message is then dropped). */
PW_API int pw_error_set(struct pw_error *err, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Prefix the existing message with more context ("reading x: <old>"). */
/* Returns err's code (PW_ERROR when it has none or err is NULL). */
PW_API int pw_error_wrap(struct pw_error *err, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* code 0, empty message; NULL is fine. */
PW_API void pw_error_clear(struct pw_error *err);

/* Copy src into dst (either may be NULL); returns src's code. */
/* (PW_ERROR when src is NULL.) */
PW_API int pw_error_copy(struct pw_error *dst, const struct pw_error *src);

/* A fixed English name of a code, for messages ("out of memory"). */
/* Static storage, never NULL, any thread. */
PW_API const char *pw_strerror(int code);

#endif
