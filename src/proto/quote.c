#include <stdio.h>

#include "proto/quote.h"

char *pw_proto__quote(char *dst, size_t dstsz, const char *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	if (!dstsz)
		return dst;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)p[i];
		size_t need = (c >= 0x20 && c < 0x7f) ? 1 : 4;

		/* keep room for "..." and the NUL */
		if (o + need + 4 > dstsz) {
			if (o + 4 <= dstsz) {
				dst[o++] = '.';
				dst[o++] = '.';
				dst[o++] = '.';
			}
			break;
		}
		if (need == 1) {
			dst[o++] = (char)c;
		} else {
			dst[o++] = '\\';
			dst[o++] = 'x';
			dst[o++] = hex[c >> 4];
			dst[o++] = hex[c & 15];
		}
	}
	dst[o] = '\0';
	return dst;
}
