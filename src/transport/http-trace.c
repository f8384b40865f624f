/* GIT_TRACE_CURL: curl's debug callback turned into Git's trace lines
 * ("=> Send header: ...", "<= Recv data: ..."), Authorization and cookies
 * redacted as Git redacts them. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "packwire/buf.h"
#include "transport/http-priv.h"

static void trace_line(const struct http *h, struct pw_buf *b)
{
	while (b->len && (b->data[b->len - 1] == ' ' || b->data[b->len - 1] == '\t' ||
	                  b->data[b->len - 1] == '\r' || b->data[b->len - 1] == '\n'))
		b->len--;
	if (pw_buf_addch(b, '\n'))
		return;
	h->set.trace(h->set.trace_ctx, b->data, b->len);
}

static int iprefix(const char *s, size_t n, const char *p, size_t *skip)
{
	size_t k = strlen(p);

	if (n < k || strncasecmp(s, p, k))
		return 0;
	*skip = k;
	return 1;
}

/* One header line (no newline), Authorization and Cookie values hidden as
 * Git hides them. */
static void trace_header_line(const struct http *h, const char *text, const char *l, size_t n,
                              int redact)
{
	struct pw_buf b = PW_BUF_INIT;
	size_t k;

	if (pw_buf_addf(&b, "%s: ", text))
		goto out;
	if (redact && h->set.trace_redact &&
	    (iprefix(l, n, "Authorization:", &k) || iprefix(l, n, "Proxy-Authorization:", &k))) {
		while (k < n && (l[k] == ' ' || l[k] == '\t'))
			k++;
		while (k < n && l[k] != ' ' && l[k] != '\t' && l[k] != '\r')
			k++; /* the scheme may be shown */
		if (pw_buf_add(&b, l, k) || pw_buf_adds(&b, " <redacted>"))
			goto out;
	} else if (redact && h->set.trace_redact && iprefix(l, n, "Cookie:", &k)) {
		while (k < n && (l[k] == ' ' || l[k] == '\t'))
			k++;
		if (pw_buf_add(&b, l, k))
			goto out;
		while (k < n && l[k] != '\r') {
			size_t end = k, eq;

			while (end < n && l[end] != '\r' &&
			       !(l[end] == ';' && end + 1 < n && l[end + 1] == ' '))
				end++;
			for (eq = k; eq < end && l[eq] != '='; eq++)
				;
			if (pw_buf_add(&b, l + k, eq - k) || pw_buf_adds(&b, "=<redacted>"))
				goto out;
			if (end < n && l[end] == ';') {
				if (pw_buf_adds(&b, "; "))
					goto out;
				k = end + 2;
			} else {
				break;
			}
		}
	} else if (pw_buf_add(&b, l, n)) {
		goto out;
	}
	trace_line(h, &b);
out:
	pw_buf_free(&b);
}

int pw_http__curl_trace(CURL *c, curl_infotype type, char *data, size_t size, void *arg)
{
	struct http *h = arg;
	const char *text;
	struct pw_buf b = PW_BUF_INIT;
	int header = 0, redact = 0;
	size_t i, w;

	(void)c;
	switch (type) {
	case CURLINFO_TEXT:
		if (!pw_buf_adds(&b, "== Info: ") && !pw_buf_add(&b, data, size))
			trace_line(h, &b);
		pw_buf_free(&b);
		return 0;
	case CURLINFO_HEADER_OUT:
		text = "=> Send header", header = redact = 1;
		break;
	case CURLINFO_HEADER_IN:
		text = "<= Recv header", header = 1;
		break;
	case CURLINFO_DATA_OUT:
		text = "=> Send data";
		break;
	case CURLINFO_DATA_IN:
		text = "<= Recv data";
		break;
	case CURLINFO_SSL_DATA_OUT:
		text = "=> Send SSL data";
		break;
	case CURLINFO_SSL_DATA_IN:
		text = "<= Recv SSL data";
		break;
	default:
		return 0;
	}
	if (!header && !h->set.trace_data)
		return 0;
	if (pw_buf_addf(&b, "%s, %10.10ld bytes (0x%8.8lx)\n", text, (long)size,
	                (unsigned long)size))
		goto out;
	h->set.trace(h->set.trace_ctx, b.data, b.len);
	if (header) {
		for (i = 0; i < size;) {
			const char *nl = memchr(data + i, '\n', size - i);
			size_t n = nl ? (size_t)(nl - (data + i)) + 1 : size - i;

			trace_header_line(h, text, data + i, n, redact);
			i += n;
		}
		goto out;
	}
	for (i = 0; i < size; i += 60) {
		pw_buf_reset(&b);
		if (pw_buf_addf(&b, "%s: ", text))
			goto out;
		for (w = 0; w < 60 && i + w < size; w++) {
			unsigned char ch = (unsigned char)data[i + w];

			if (pw_buf_addch(&b, ch >= 0x20 && ch < 0x80 ? (char)ch : '.'))
				goto out;
		}
		if (pw_buf_addch(&b, '\n'))
			goto out;
		h->set.trace(h->set.trace_ctx, b.data, b.len);
	}
out:
	pw_buf_free(&b);
	return 0;
}
