#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"

char pw_buf__empty[1];

void pw_buf_init(struct pw_buf *b, size_t max)
{
	b->data = pw_buf__empty;
	b->len = b->cap = 0;
	b->max = max;
}

void pw_buf_free(struct pw_buf *b)
{
	if (b->cap)
		free(b->data);
	b->data = pw_buf__empty;
	b->len = b->cap = 0;
}

void pw_buf_reset(struct pw_buf *b)
{
	b->len = 0;
	if (b->cap)
		b->data[0] = '\0';
}

int pw_buf_grow(struct pw_buf *b, size_t extra)
{
	size_t need, ncap;
	char *p;

	if (extra > SIZE_MAX - b->len - 1)
		return PW_ETOOBIG;
	need = b->len + extra + 1;
	if (b->max && need - 1 > b->max)
		return PW_ETOOBIG;
	if (need <= b->cap)
		return 0;
	ncap = b->cap ? b->cap : 64;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	p = b->cap ? realloc(b->data, ncap) : malloc(ncap);
	if (!p)
		return PW_ENOMEM;
	if (!b->cap)
		p[0] = '\0';
	b->data = p;
	b->cap = ncap;
	return 0;
}

int pw_buf_add(struct pw_buf *b, const void *data, size_t len)
{
	int rc = pw_buf_grow(b, len);

	if (rc)
		return rc;
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

int pw_buf_adds(struct pw_buf *b, const char *s)
{
	return pw_buf_add(b, s, strlen(s));
}

int pw_buf_addch(struct pw_buf *b, char c)
{
	return pw_buf_add(b, &c, 1);
}

int pw_buf_addf(struct pw_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return PW_EINVAL;
	rc = pw_buf_grow(b, (size_t)n);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int pw_buf_setlen(struct pw_buf *b, size_t len)
{
	if (!b->cap) {
		if (len)
			return PW_EINVAL;
		return 0;
	}
	if (len >= b->cap)
		return PW_EINVAL;
	b->len = len;
	b->data[len] = '\0';
	return 0;
}

char *pw_buf_detach(struct pw_buf *b, size_t *len)
{
	char *p;

	if (len)
		*len = b->len;
	if (!b->cap) {
		p = malloc(1);
		if (p)
			p[0] = '\0';
		return p;
	}
	p = b->data;
	b->data = pw_buf__empty;
	b->len = b->cap = 0;
	return p;
}
