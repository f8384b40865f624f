/* A growable byte buffer whose data pointer is never NULL. */
#ifndef PACKWIRE_BUF_H
#define PACKWIRE_BUF_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>
#include "packwire/error.h"

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

PW_API void pw_buf_init(struct pw_buf *b, size_t max);
PW_API void pw_buf_free(struct pw_buf *b);
PW_API void pw_buf_reset(struct pw_buf *b); /* len = 0, keeps memory */
/* Make room for `extra` more bytes (plus the terminating NUL). */
PW_API int pw_buf_grow(struct pw_buf *b, size_t extra);
PW_API int pw_buf_add(struct pw_buf *b, const void *data, size_t len);
PW_API int pw_buf_adds(struct pw_buf *b, const char *s);
PW_API int pw_buf_addch(struct pw_buf *b, char c);
PW_API int pw_buf_addf(struct pw_buf *b, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
PW_API int pw_buf_setlen(struct pw_buf *b, size_t len); /* len <= cap, re-terminates */
/* Hand the memory to the caller (malloc'd, NUL-terminated); b becomes empty. */
PW_API char *pw_buf_detach(struct pw_buf *b, size_t *len);

/* A borrowed view into someone else's bytes. */
struct pw_str {
	const char *p;
	size_t len;
};

#endif
