/* Fuzz what the browse pages make of a repository's bytes: a commit object
 * parsed for its row (pw_browse_commit_parse, pw_browse_format_date) and
 * every string escaped for HTML (pw_browse_escape). The output must be
 * valid UTF-8 with no byte that HTML reads as markup or as a control: no
 * '<', '>', '"', '\'', no control byte, and every '&' one of the entities
 * the escaper writes. Any violation aborts.
 *
 * First byte: bits 0-1 the escape bound (8, 64, 200, unbounded); the rest
 * is the commit object (also escaped whole, as a name would be). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "server/browse.h"

static void check_utf8(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = p[i];
		size_t len, k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			len = 2, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			len = 3, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			len = 4, cp = c & 0x07;
		else
			abort();
		if (i + len > n)
			abort();
		for (k = 1; k < len; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				abort();
			cp = cp << 6 | (p[i + k] & 0x3f);
		}
		if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp < 0xa0) ||
		    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
			abort();
		i += len;
	}
}

static void check_html(const struct pw_buf *b)
{
	static const char *const entities[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;"};
	const unsigned char *p = (const unsigned char *)b->data;
	size_t i, k;

	for (i = 0; i < b->len; i++) {
		if (p[i] < 0x20 || p[i] == 0x7f || p[i] == '<' || p[i] == '>' || p[i] == '"' ||
		    p[i] == '\'')
			abort();
		if (p[i] == '&') {
			for (k = 0; k < 5; k++)
				if (!strncmp((const char *)p + i, entities[k], strlen(entities[k])))
					break;
			if (k == 5)
				abort();
		}
	}
	check_utf8(p, b->len);
}

static void escape(const char *s, size_t len, size_t shown)
{
	struct pw_buf b;

	pw_buf_init(&b, 0);
	if (pw_browse_escape(&b, s, len, shown))
		abort(); /* no bound on b: only out of memory could fail */
	check_html(&b);
	/* never more than a few bytes per input byte, and the bound holds */
	if (b.len > 6 * (len < shown ? len : shown) + 3)
		abort();
	pw_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t bounds[] = {8, 64, 200, (size_t)-1};
	struct pw_browse_commit c;
	const char *text;
	size_t shown;
	char date[64];

	if (!size)
		return 0;
	shown = bounds[data[0] & 3];
	text = (const char *)data + 1;
	size--;
	escape(text, size, shown);
	pw_browse_commit_parse(&c, text, size);
	if (c.author < text || c.author + c.author_len > text + size || c.subject < text ||
	    c.subject + c.subject_len > text + size || memchr(c.subject, '\n', c.subject_len))
		abort();
	escape(c.author, c.author_len, shown);
	escape(c.subject, c.subject_len, shown);
	if (c.has_time) {
		if (c.author_tz <= -24 * 60 || c.author_tz >= 24 * 60)
			abort();
		pw_browse_format_date(date, c.author_time, c.author_tz);
		if (strlen(date) >= sizeof(date))
			abort();
	}
	return 0;
}
