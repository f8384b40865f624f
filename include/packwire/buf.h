/* A growable byte buffer whose data pointer is never NULL. */
#ifndef PACKWIRE_BUF_H
#define PACKWIRE_BUF_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>
#include "packwire/error.h"

/*
 * Ownership: a pw_buf belongs to whoever declared it; pw_buf_free releases
 * its memory and leaves it empty and reusable (max kept). Until the first
 * growth, data points at a shared static empty string: write through data
 * only when cap > 0. Errors: the adders return 0, PW_ENOMEM or PW_ETOOBIG
 * (past max) and leave the buffer as it was on failure; they write no
 * message anywhere. Threads: one thread at a time per buffer; different
 * buffers are independent.
 */

struct pw_buf {
	char *data; /* always NUL-terminated, never NULL */
	size_t len;
	size_t cap; /* 0 while data points at the shared empty string */
	size_t max; /* growth beyond this is PW_ETOOBIG; 0 = no limit */
};

#define PW_BUF_INIT                                                                                \
	{                                                                                          \
		pw_buf__empty, 0, 0, 0                                                             \
	}
PW_API extern char pw_buf__empty[1];

/* An empty buffer that may grow to max bytes (0 = no limit); allocates nothing. */
PW_API void pw_buf_init(struct pw_buf *b, size_t max);
PW_API void pw_buf_free(struct pw_buf *b);
PW_API void pw_buf_reset(struct pw_buf *b); /* len = 0, keeps memory */
/* Make room for `extra` more bytes (plus the terminating NUL). */
PW_API int pw_buf_grow(struct pw_buf *b, size_t extra);
PW_API int pw_buf_add(struct pw_buf *b, const void *data, size_t len);
PW_API int pw_buf_adds(struct pw_buf *b, const char *s);
PW_API int pw_buf_addch(struct pw_buf *b, char c);
/* PW_EINVAL when the format cannot be expanded. */
PW_API int pw_buf_addf(struct pw_buf *b, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* PW_EINVAL when len does not fit (len >= cap, or any len > 0 before growth). */
PW_API int pw_buf_setlen(struct pw_buf *b, size_t len); /* len <= cap, re-terminates */
/* Hand the memory to the caller (malloc'd, NUL-terminated); b becomes empty. */
/* (Returns NULL only when out of memory; len may be NULL.) */
PW_API char *pw_buf_detach(struct pw_buf *b, size_t *len);

/* A borrowed view into someone else's bytes. */
/* Never owns its bytes: valid as long as what it points into. */
struct pw_str {
	const char *p;
	size_t len;
};

#endif
