/* The bounded JSON reader: see json.h. */
#include "util/json.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct parser {
	struct pw_json *j;
	const char *p;
	size_t len, pos;
	unsigned depth, max_depth;
	size_t max_nodes;
	struct pw_error *err;
};

void pw_json_init(struct pw_json *j)
{
	memset(j, 0, sizeof(*j));
}

void pw_json_free(struct pw_json *j)
{
	free(j->nodes);
	j->nodes = NULL;
	j->nr = j->alloc = 0;
}

static int bad(struct parser *ps, const char *what)
{
	return pw_error_set(ps->err, PW_EINVAL, "malformed JSON at byte %zu: %s", ps->pos, what);
}

static void skip_ws(struct parser *ps)
{
	while (ps->pos < ps->len && (ps->p[ps->pos] == ' ' || ps->p[ps->pos] == '\t' ||
	                             ps->p[ps->pos] == '\n' || ps->p[ps->pos] == '\r'))
		ps->pos++;
}

static int new_node(struct parser *ps, int type, int *out)
{
	struct pw_json *j = ps->j;
	struct pw_json_node *n;

	if (j->nr >= ps->max_nodes || j->nr >= INT_MAX)
		return pw_error_set(ps->err, PW_ETOOBIG,
		                    "JSON answer has more than %zu values (limit)", ps->max_nodes);
	if (j->nr == j->alloc) {
		size_t na = j->alloc ? j->alloc * 2 : 16;
		struct pw_json_node *nn;

		if (na > ps->max_nodes)
			na = ps->max_nodes;
		nn = realloc(j->nodes, na * sizeof(*nn));
		if (!nn)
			return pw_error_set(ps->err, PW_ENOMEM, "out of memory parsing JSON");
		j->nodes = nn;
		j->alloc = na;
	}
	n = &j->nodes[j->nr];
	memset(n, 0, sizeof(*n));
	n->type = (uint8_t)type;
	n->child = n->next = -1;
	*out = (int)j->nr++;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* At the opening quote: check the string, leave pos after the closing one,
 * and give the span between the quotes. */
static int scan_string(struct parser *ps, size_t *start, size_t *len)
{
	size_t i;

	ps->pos++;
	*start = ps->pos;
	while (ps->pos < ps->len) {
		unsigned char c = (unsigned char)ps->p[ps->pos];

		if (c == '"') {
			*len = ps->pos - *start;
			ps->pos++;
			return 0;
		}
		if (c < 0x20)
			return bad(ps, "control character in a string");
		if (c == '\\') {
			if (++ps->pos >= ps->len)
				break;
			c = (unsigned char)ps->p[ps->pos];
			if (c == 'u') {
				if (ps->len - ps->pos < 5)
					break;
				for (i = 1; i <= 4; i++)
					if (hexval(ps->p[ps->pos + i]) < 0)
						return bad(ps, "bad \\u escape");
				ps->pos += 4;
			} else if (!strchr("\"\\/bfnrt", c) || !c) {
				return bad(ps, "bad escape in a string");
			}
		}
		ps->pos++;
	}
	return bad(ps, "unterminated string");
}

static int scan_number(struct parser *ps)
{
	size_t d;

	if (ps->pos < ps->len && ps->p[ps->pos] == '-')
		ps->pos++;
	if (ps->pos >= ps->len)
		return bad(ps, "truncated number");
	if (ps->p[ps->pos] == '0') {
		ps->pos++;
	} else if (ps->p[ps->pos] >= '1' && ps->p[ps->pos] <= '9') {
		while (ps->pos < ps->len && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9')
			ps->pos++;
	} else {
		return bad(ps, "bad number");
	}
	if (ps->pos < ps->len && ps->p[ps->pos] == '.') {
		ps->pos++;
		d = ps->pos;
		while (ps->pos < ps->len && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9')
			ps->pos++;
		if (d == ps->pos)
			return bad(ps, "no digits after the decimal point");
	}
	if (ps->pos < ps->len && (ps->p[ps->pos] == 'e' || ps->p[ps->pos] == 'E')) {
		ps->pos++;
		if (ps->pos < ps->len && (ps->p[ps->pos] == '+' || ps->p[ps->pos] == '-'))
			ps->pos++;
		d = ps->pos;
		while (ps->pos < ps->len && ps->p[ps->pos] >= '0' && ps->p[ps->pos] <= '9')
			ps->pos++;
		if (d == ps->pos)
			return bad(ps, "no digits in the exponent");
	}
	return 0;
}

static int parse_value(struct parser *ps, int *out);

/* Elements or members up to the closing bracket; pos is after the opener. */
static int parse_container(struct parser *ps, int node, int object)
{
	int prev = -1, rc, child;
	size_t ks = 0, kl = 0;
	char close = object ? '}' : ']';

	if (++ps->depth > ps->max_depth)
		return pw_error_set(ps->err, PW_ETOOBIG,
		                    "JSON nested deeper than %u levels (limit) at byte %zu",
		                    ps->max_depth, ps->pos);
	skip_ws(ps);
	if (ps->pos < ps->len && ps->p[ps->pos] == close) {
		ps->pos++;
		ps->depth--;
		return 0;
	}
	for (;;) {
		skip_ws(ps);
		if (object) {
			if (ps->pos >= ps->len || ps->p[ps->pos] != '"')
				return bad(ps, "expected a member name");
			if ((rc = scan_string(ps, &ks, &kl)))
				return rc;
			skip_ws(ps);
			if (ps->pos >= ps->len || ps->p[ps->pos] != ':')
				return bad(ps, "expected ':'");
			ps->pos++;
		}
		if ((rc = parse_value(ps, &child)))
			return rc;
		ps->j->nodes[child].key_start = ks;
		ps->j->nodes[child].key_len = kl;
		if (prev < 0)
			ps->j->nodes[node].child = child;
		else
			ps->j->nodes[prev].next = child;
		prev = child;
		skip_ws(ps);
		if (ps->pos >= ps->len)
			return bad(ps, object ? "unterminated object" : "unterminated array");
		if (ps->p[ps->pos] == ',') {
			ps->pos++;
			continue;
		}
		if (ps->p[ps->pos] == close) {
			ps->pos++;
			ps->depth--;
			return 0;
		}
		return bad(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int literal(struct parser *ps, const char *word)
{
	size_t n = strlen(word);

	if (ps->len - ps->pos < n || memcmp(ps->p + ps->pos, word, n))
		return bad(ps, "unexpected character");
	ps->pos += n;
	return 0;
}

static int parse_value(struct parser *ps, int *out)
{
	int rc, node = 0, type;
	size_t start, len;
	char c;

	skip_ws(ps);
	if (ps->pos >= ps->len)
		return bad(ps, "expected a value");
	c = ps->p[ps->pos];
	switch (c) {
	case '{':
		type = PW_JSON_OBJECT;
		break;
	case '[':
		type = PW_JSON_ARRAY;
		break;
	case '"':
		type = PW_JSON_STRING;
		break;
	case 't':
		type = PW_JSON_TRUE;
		break;
	case 'f':
		type = PW_JSON_FALSE;
		break;
	case 'n':
		type = PW_JSON_NULL;
		break;
	default:
		if (c != '-' && (c < '0' || c > '9'))
			return bad(ps, "unexpected character");
		type = PW_JSON_NUMBER;
	}
	if ((rc = new_node(ps, type, &node)))
		return rc;
	start = ps->pos;
	switch (type) {
	case PW_JSON_OBJECT:
	case PW_JSON_ARRAY:
		ps->pos++;
		rc = parse_container(ps, node, type == PW_JSON_OBJECT);
		len = ps->pos - start;
		break;
	case PW_JSON_STRING:
		rc = scan_string(ps, &start, &len);
		break;
	case PW_JSON_TRUE:
		rc = literal(ps, "true");
		len = 4;
		break;
	case PW_JSON_FALSE:
		rc = literal(ps, "false");
		len = 5;
		break;
	case PW_JSON_NULL:
		rc = literal(ps, "null");
		len = 4;
		break;
	default:
		rc = scan_number(ps);
		len = ps->pos - start;
	}
	if (rc)
		return rc;
	ps->j->nodes[node].start = start;
	ps->j->nodes[node].len = len;
	*out = node;
	return 0;
}

int pw_json_parse(struct pw_json *j, const char *text, size_t len, struct pw_error *err)
{
	struct parser ps;
	int root = 0, rc;

	j->nr = 0;
	j->text = text;
	j->len = len;
	memset(&ps, 0, sizeof(ps));
	ps.j = j;
	ps.p = text;
	ps.len = len;
	ps.err = err;
	ps.max_depth = j->max_depth ? j->max_depth : PW_JSON_DEFAULT_DEPTH;
	ps.max_nodes = j->max_nodes ? j->max_nodes : PW_JSON_DEFAULT_NODES;
	if ((rc = parse_value(&ps, &root)))
		goto fail;
	skip_ws(&ps);
	if (ps.pos != len) {
		rc = bad(&ps, "text after the value");
		goto fail;
	}
	return 0;
fail:
	j->nr = 0;
	return rc;
}

int pw_json_type(const struct pw_json *j, int node)
{
	if (node < 0 || (size_t)node >= j->nr)
		return 0;
	return j->nodes[node].type;
}

/* Unescape s[0..len) (already checked by scan_string) into out. */
static int unescape(const char *s, size_t len, struct pw_buf *out, struct pw_error *err)
{
	size_t i = 0;
	int rc = 0;

	while (i < len && !rc) {
		size_t run = i;
		unsigned long cp, lo;
		char u8[4];
		size_t n;

		while (run < len && s[run] != '\\')
			run++;
		if (run > i && (rc = pw_buf_add(out, s + i, run - i)))
			break;
		i = run;
		if (i >= len)
			break;
		i++; /* the backslash */
		switch (s[i]) {
		case 'b':
			rc = pw_buf_addch(out, '\b');
			break;
		case 'f':
			rc = pw_buf_addch(out, '\f');
			break;
		case 'n':
			rc = pw_buf_addch(out, '\n');
			break;
		case 'r':
			rc = pw_buf_addch(out, '\r');
			break;
		case 't':
			rc = pw_buf_addch(out, '\t');
			break;
		case 'u':
			cp = (unsigned long)(hexval(s[i + 1]) << 12 | hexval(s[i + 2]) << 8 |
			                     hexval(s[i + 3]) << 4 | hexval(s[i + 4]));
			i += 4;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return pw_error_set(err, PW_EINVAL,
				                    "malformed JSON: lone low surrogate");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (len - i < 7 || s[i + 1] != '\\' || s[i + 2] != 'u')
					return pw_error_set(err, PW_EINVAL,
					                    "malformed JSON: lone high surrogate");
				lo = (unsigned long)(hexval(s[i + 3]) << 12 |
				                     hexval(s[i + 4]) << 8 | hexval(s[i + 5]) << 4 |
				                     hexval(s[i + 6]));
				if (lo < 0xdc00 || lo > 0xdfff)
					return pw_error_set(err, PW_EINVAL,
					                    "malformed JSON: bad surrogate pair");
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i += 6;
			}
			if (cp < 0x80) {
				u8[0] = (char)cp;
				n = 1;
			} else if (cp < 0x800) {
				u8[0] = (char)(0xc0 | (cp >> 6));
				u8[1] = (char)(0x80 | (cp & 0x3f));
				n = 2;
			} else if (cp < 0x10000) {
				u8[0] = (char)(0xe0 | (cp >> 12));
				u8[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
				u8[2] = (char)(0x80 | (cp & 0x3f));
				n = 3;
			} else {
				u8[0] = (char)(0xf0 | (cp >> 18));
				u8[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
				u8[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
				u8[3] = (char)(0x80 | (cp & 0x3f));
				n = 4;
			}
			rc = pw_buf_add(out, u8, n);
			break;
		default: /* " \ / */
			rc = pw_buf_addch(out, s[i]);
		}
		i++;
	}
	if (rc)
		return pw_error_set(err, rc, "JSON string too long or out of memory");
	return 0;
}

int pw_json_get(const struct pw_json *j, int obj, const char *key)
{
	int c, found = -1;
	size_t klen = strlen(key);

	if (pw_json_type(j, obj) != PW_JSON_OBJECT)
		return -1;
	for (c = j->nodes[obj].child; c >= 0; c = j->nodes[c].next) {
		const struct pw_json_node *n = &j->nodes[c];
		const char *k = j->text + n->key_start;

		if (memchr(k, '\\', n->key_len)) {
			struct pw_buf b = PW_BUF_INIT;

			b.max = 4096;
			if (!unescape(k, n->key_len, &b, NULL) && b.len == klen &&
			    !memcmp(b.data, key, klen))
				found = c;
			pw_buf_free(&b);
		} else if (n->key_len == klen && !memcmp(k, key, klen)) {
			found = c;
		}
	}
	return found;
}

int pw_json_string(const struct pw_json *j, int node, struct pw_buf *out, struct pw_error *err)
{
	if (pw_json_type(j, node) != PW_JSON_STRING)
		return pw_error_set(err, PW_EINVAL, "JSON value is not a string");
	return unescape(j->text + j->nodes[node].start, j->nodes[node].len, out, err);
}

int pw_json_int(const struct pw_json *j, int node, int64_t *out, struct pw_error *err)
{
	const char *s;
	size_t len, i = 0;
	int neg = 0;
	uint64_t v = 0, lim;
	int t = pw_json_type(j, node);

	if (t != PW_JSON_NUMBER && t != PW_JSON_STRING)
		return pw_error_set(err, PW_EINVAL, "JSON value is not an integer");
	s = j->text + j->nodes[node].start;
	len = j->nodes[node].len;
	if (len && s[0] == '-') {
		neg = 1;
		i = 1;
	}
	if (i == len)
		return pw_error_set(err, PW_EINVAL, "JSON value is not an integer");
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return pw_error_set(err, PW_EINVAL, "JSON value is not an integer");
		if (v > (lim - (uint64_t)(s[i] - '0')) / 10)
			return pw_error_set(err, PW_EINVAL, "JSON integer out of range");
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
	return 0;
}

int pw_json_bool(const struct pw_json *j, int node, int def)
{
	int t = pw_json_type(j, node);

	return t == PW_JSON_TRUE ? 1 : t == PW_JSON_FALSE ? 0 : def;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int pw_base64_decode(struct pw_buf *out, const char *text, size_t len, struct pw_error *err)
{
	size_t i, pad = 0;
	int rc;

	if (len % 4)
		return pw_error_set(err, PW_EINVAL, "bad base64: length %zu is not a multiple of 4",
		                    len);
	if (len && text[len - 1] == '=')
		pad = (len >= 2 && text[len - 2] == '=') ? 2 : 1;
	if ((rc = pw_buf_grow(out, len / 4 * 3)))
		return pw_error_set(err, rc, "base64 value too long or out of memory");
	for (i = 0; i < len; i += 4) {
		int v[4], k, last = i + 4 == len;
		unsigned long w;

		for (k = 0; k < 4; k++) {
			v[k] = b64val(text[i + k]);
			if (v[k] < 0 && !(last && text[i + k] == '=' && k >= 4 - (int)pad))
				return pw_error_set(err, PW_EINVAL, "bad base64 character at %zu",
				                    i + (size_t)k);
			if (v[k] < 0)
				v[k] = 0;
		}
		w = (unsigned long)v[0] << 18 | (unsigned long)v[1] << 12 |
		    (unsigned long)v[2] << 6 | (unsigned long)v[3];
		out->data[out->len++] = (char)(w >> 16);
		if (!last || pad < 2)
			out->data[out->len++] = (char)(w >> 8);
		if (!last || pad < 1)
			out->data[out->len++] = (char)w;
	}
	out->data[out->len] = '\0';
	return 0;
}

int pw_json_base64(const struct pw_json *j, int node, struct pw_buf *out, struct pw_error *err)
{
	if (pw_json_type(j, node) != PW_JSON_STRING)
		return pw_error_set(err, PW_EINVAL, "JSON value is not a base64 string");
	/* base64 has no characters that JSON escapes, except that '/' may come
	 * as "\/": unescape first when there is a backslash */
	if (memchr(j->text + j->nodes[node].start, '\\', j->nodes[node].len)) {
		struct pw_buf tmp = PW_BUF_INIT;
		int rc;

		tmp.max = out->max;
		rc = pw_json_string(j, node, &tmp, err);
		if (!rc)
			rc = pw_base64_decode(out, tmp.data, tmp.len, err);
		pw_buf_free(&tmp);
		return rc;
	}
	return pw_base64_decode(out, j->text + j->nodes[node].start, j->nodes[node].len, err);
}

int pw_json_add_string(struct pw_buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;
	int rc = pw_buf_addch(out, '"');

	for (i = 0; i < len && !rc; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			rc = pw_buf_add(out, e, 2);
		} else if (c < 0x20) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			rc = pw_buf_add(out, e, 6);
		} else {
			rc = pw_buf_addch(out, (char)c);
		}
	}
	return rc ? rc : pw_buf_addch(out, '"');
}

int pw_json_add_base64(struct pw_buf *out, const void *data, size_t len)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *d = data;
	size_t i;
	int rc = pw_buf_grow(out, len / 3 * 4 + 6);

	if (rc)
		return rc;
	out->data[out->len++] = '"';
	for (i = 0; i + 2 < len; i += 3) {
		unsigned long w =
		        (unsigned long)d[i] << 16 | (unsigned long)d[i + 1] << 8 | d[i + 2];
		out->data[out->len++] = al[(w >> 18) & 63];
		out->data[out->len++] = al[(w >> 12) & 63];
		out->data[out->len++] = al[(w >> 6) & 63];
		out->data[out->len++] = al[w & 63];
	}
	if (len - i == 1) {
		unsigned long w = (unsigned long)d[i] << 16;
		out->data[out->len++] = al[(w >> 18) & 63];
		out->data[out->len++] = al[(w >> 12) & 63];
		out->data[out->len++] = '=';
		out->data[out->len++] = '=';
	} else if (len - i == 2) {
		unsigned long w = (unsigned long)d[i] << 16 | (unsigned long)d[i + 1] << 8;
		out->data[out->len++] = al[(w >> 18) & 63];
		out->data[out->len++] = al[(w >> 12) & 63];
		out->data[out->len++] = al[(w >> 6) & 63];
		out->data[out->len++] = '=';
	}
	out->data[out->len++] = '"';
	out->data[out->len] = '\0';
	return 0;
}
