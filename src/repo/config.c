/* Git config-file syntax: a small hand-written scanner that keeps, for every
 * key, where its line starts and ends so the writer can edit the file in
 * place. [include] is deliberately not followed (repositories we serve must
 * not read files named by their own config). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "util/fs.h"

/* Larger config files than this are refused (Git's are kilobytes). */
#define PW_CONFIG_MAX_FILE (16u << 20)

struct ent {
	struct pw_config_entry e;
	size_t start, end; /* byte range of the line(s) in the parsed text */
};

struct pw_config {
	struct ent *ents;
	size_t nr, alloc;
	char **origins;
	size_t nr_origins;
};

/* A section header seen while parsing, for the writer. */
struct sect {
	char *name;      /* canonical "section" or "section.sub" */
	size_t hdr_end;  /* offset just after ']' */
	size_t last_end; /* end of its last entry, or hdr_end */
};

struct sects {
	struct sect *v;
	size_t nr, alloc;
};

static void sects_free(struct sects *s)
{
	size_t i;

	for (i = 0; s && i < s->nr; i++)
		free(s->v[i].name);
	if (s)
		free(s->v);
}

int pw_config_new(struct pw_config **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : PW_ENOMEM;
}

void pw_config_free(struct pw_config *cfg)
{
	size_t i;

	if (!cfg)
		return;
	for (i = 0; i < cfg->nr; i++) {
		free((char *)cfg->ents[i].e.key);
		free((char *)cfg->ents[i].e.value);
	}
	for (i = 0; i < cfg->nr_origins; i++)
		free(cfg->origins[i]);
	free(cfg->origins);
	free(cfg->ents);
	free(cfg);
}

static int iskeychar(int c)
{
	return isalnum(c) || c == '-';
}

/* ---- scanner --------------------------------------------------------- */

struct scan {
	const char *d;
	size_t len, pos;
	int line;
	size_t line_start;
};

/* Next character with CRLF folded to LF; -1 at the end. */
static int next_char(struct scan *s)
{
	int c;

	if (s->pos >= s->len)
		return -1;
	c = (unsigned char)s->d[s->pos++];
	if (c == '\r' && s->pos < s->len && s->d[s->pos] == '\n')
		c = (unsigned char)s->d[s->pos++];
	if (c == '\n') {
		s->line++;
		s->line_start = s->pos;
	}
	return c;
}

static int peek_char(const struct scan *s)
{
	if (s->pos >= s->len)
		return -1;
	if (s->d[s->pos] == '\r' && s->pos + 1 < s->len && s->d[s->pos + 1] == '\n')
		return '\n';
	return (unsigned char)s->d[s->pos];
}

/* Parse "[name]", "[name "sub"]" or "[name.sub]" after the '['. */
static int parse_section(struct scan *s, struct pw_buf *name)
{
	int c;

	pw_buf_reset(name);
	for (;;) {
		c = next_char(s);
		if (c < 0 || c == '\n')
			return -1;
		if (c == ']')
			return name->len ? 0 : -1;
		if (isspace(c))
			break;
		if (!iskeychar(c) && c != '.')
			return -1;
		if (pw_buf_addch(name, (char)tolower(c)))
			return PW_ENOMEM;
	}
	/* extended form: [section "subsection"] */
	if (!name->len || memchr(name->data, '.', name->len))
		return -1;
	do
		c = next_char(s);
	while (c == ' ' || c == '\t');
	if (c != '"')
		return -1;
	if (pw_buf_addch(name, '.'))
		return PW_ENOMEM;
	for (;;) {
		c = next_char(s);
		if (c < 0 || c == '\n' || c == 0)
			return -1;
		if (c == '"')
			break;
		if (c == '\\') {
			c = next_char(s);
			if (c < 0 || c == '\n' || c == 0)
				return -1;
		}
		if (pw_buf_addch(name, (char)c))
			return PW_ENOMEM;
	}
	return next_char(s) == ']' ? 0 : -1;
}

/* The value after '=' up to the end of the logical line (newline eaten). */
static int parse_value(struct scan *s, struct pw_buf *v)
{
	int quote = 0, comment = 0, c;
	size_t space = 0;

	pw_buf_reset(v);
	for (;;) {
		c = next_char(s);
		if (c < 0 || c == '\n') {
			if (quote)
				return -1;
			return 0;
		}
		if (comment)
			continue;
		if (c == 0)
			return -1;
		if (isspace(c) && !quote) {
			if (v->len)
				space++;
			continue;
		}
		if (!quote && (c == ';' || c == '#')) {
			comment = 1;
			continue;
		}
		for (; space; space--)
			if (pw_buf_addch(v, ' '))
				return PW_ENOMEM;
		if (c == '\\') {
			c = next_char(s);
			switch (c) {
			case -1:
			case '\n':
				continue; /* line continuation */
			case 't':
				c = '\t';
				break;
			case 'b':
				c = '\b';
				break;
			case 'n':
				c = '\n';
				break;
			case '\\':
			case '"':
				break;
			default:
				return -1;
			}
			if (pw_buf_addch(v, (char)c))
				return PW_ENOMEM;
			continue;
		}
		if (c == '"') {
			quote = !quote;
			continue;
		}
		if (pw_buf_addch(v, (char)c))
			return PW_ENOMEM;
	}
}

static int add_entry(struct pw_config *cfg, char *key, char *value, const char *origin, int line,
                     size_t start, size_t end)
{
	if (cfg->nr == cfg->alloc) {
		size_t n = cfg->alloc ? cfg->alloc * 2 : 16;
		struct ent *e = realloc(cfg->ents, n * sizeof(*e));

		if (!e)
			return PW_ENOMEM;
		cfg->ents = e;
		cfg->alloc = n;
	}
	cfg->ents[cfg->nr].e.key = key;
	cfg->ents[cfg->nr].e.value = value;
	cfg->ents[cfg->nr].e.origin = origin;
	cfg->ents[cfg->nr].e.line = line;
	cfg->ents[cfg->nr].start = start;
	cfg->ents[cfg->nr].end = end;
	cfg->nr++;
	return 0;
}

static int sects_add(struct sects *ss, const char *name, size_t hdr_end)
{
	if (ss->nr == ss->alloc) {
		size_t n = ss->alloc ? ss->alloc * 2 : 8;
		struct sect *v = realloc(ss->v, n * sizeof(*v));

		if (!v)
			return PW_ENOMEM;
		ss->v = v;
		ss->alloc = n;
	}
	if (!(ss->v[ss->nr].name = strdup(name)))
		return PW_ENOMEM;
	ss->v[ss->nr].hdr_end = ss->v[ss->nr].last_end = hdr_end;
	ss->nr++;
	return 0;
}

/* Where the text of an entry starts: its line's start when only blanks
 * precede the key on that line, else the key itself. */
static size_t entry_start(const char *data, size_t key_start)
{
	size_t ls = key_start;

	while (ls > 0 && (data[ls - 1] == ' ' || data[ls - 1] == '\t'))
		ls--;
	return ls == 0 || data[ls - 1] == '\n' ? ls : key_start;
}

/* One "name [= value]" line of the current section into cfg. 0, -1 for a
 * syntax error (*err_line says where) or PW_ENOMEM. */
static int parse_entry(struct pw_config *cfg, struct scan *s, const struct pw_buf *section,
                       struct pw_buf *name, struct pw_buf *value, const char *origin, int *err_line)
{
	size_t key_start = s->pos;
	int key_line = s->line, c, rc;
	char *key, *val = NULL;

	pw_buf_reset(name);
	while ((c = peek_char(s)) >= 0 && iskeychar(c)) {
		next_char(s);
		if ((rc = pw_buf_addch(name, (char)tolower(c))))
			return rc;
	}
	while ((c = peek_char(s)) == ' ' || c == '\t')
		next_char(s);
	if (c == '=') {
		next_char(s);
		if ((rc = parse_value(s, value))) {
			*err_line = s->line - (s->pos > 0 && s->d[s->pos - 1] == '\n' ? 1 : 0);
			return rc;
		}
		if (!(val = strdup(value->data)))
			return PW_ENOMEM;
	} else if (c < 0 || c == '\n') {
		next_char(s);
	} else {
		return -1;
	}
	key = malloc(section->len + name->len + 2);
	if (!key) {
		free(val);
		return PW_ENOMEM;
	}
	memcpy(key, section->data, section->len);
	key[section->len] = '.';
	memcpy(key + section->len + 1, name->data, name->len + 1);
	if ((rc = add_entry(cfg, key, val, origin, key_line, entry_start(s->d, key_start),
	                    s->pos))) {
		free(key);
		free(val);
	}
	return rc;
}

static int do_parse(struct pw_config *cfg, const char *data, size_t len, const char *origin_in,
                    struct pw_error *err, struct sects *ss)
{
	struct scan s = {data, len, 0, 1, 0};
	struct pw_buf section = PW_BUF_INIT, name = PW_BUF_INIT, value = PW_BUF_INIT;
	size_t first_new = cfg->nr, i;
	int have_section = 0, rc = 0, err_line = 0;
	char *origin = strdup(origin_in ? origin_in : "(unknown)"), **origins;

	if (!origin)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	origins = realloc(cfg->origins, (cfg->nr_origins + 1) * sizeof(*origins));
	if (!origins) {
		free(origin);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	cfg->origins = origins;
	cfg->origins[cfg->nr_origins++] = origin;

	if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
		s.pos = 3; /* UTF-8 byte order mark */
	for (;;) {
		int c = peek_char(&s);

		if (c < 0)
			break;
		if (isspace(c)) {
			next_char(&s);
			continue;
		}
		if (c == '#' || c == ';') {
			while ((c = next_char(&s)) >= 0 && c != '\n')
				;
			continue;
		}
		if (c == '[') {
			next_char(&s);
			err_line = s.line;
			if ((rc = parse_section(&s, &section)))
				goto fail;
			have_section = 1;
			if (ss && (rc = sects_add(ss, section.data, s.pos)))
				goto fail;
			continue;
		}
		err_line = s.line;
		if (!isalpha(c) || !have_section) {
			rc = -1;
			goto fail;
		}
		if ((rc = parse_entry(cfg, &s, &section, &name, &value, origin, &err_line)))
			goto fail;
		if (ss && ss->nr)
			ss->v[ss->nr - 1].last_end = s.pos;
	}
	pw_buf_free(&section);
	pw_buf_free(&name);
	pw_buf_free(&value);
	return 0;
fail:
	pw_buf_free(&section);
	pw_buf_free(&name);
	pw_buf_free(&value);
	for (i = first_new; i < cfg->nr; i++) {
		free((char *)cfg->ents[i].e.key);
		free((char *)cfg->ents[i].e.value);
	}
	cfg->nr = first_new;
	if (rc == PW_ENOMEM)
		return pw_error_set(err, PW_ENOMEM, "out of memory parsing %s", origin);
	return pw_error_set(err, PW_EINVAL, "bad config line %d in file %s", err_line, origin);
}

int pw_config_parse_into(struct pw_config *cfg, const char *data, size_t len, const char *origin,
                         struct pw_error *err)
{
	return do_parse(cfg, data, len, origin, err, NULL);
}

int pw_config_parse(struct pw_config **out, const char *data, size_t len, const char *origin,
                    struct pw_error *err)
{
	struct pw_config *cfg;
	int rc;

	*out = NULL;
	if (pw_config_new(&cfg))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if ((rc = do_parse(cfg, data, len, origin, err, NULL))) {
		pw_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}

int pw_config_load_file(struct pw_config **out, const char *path, struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	int rc;

	*out = NULL;
	if ((rc = pw_fs_read_file(path, &b, PW_CONFIG_MAX_FILE, err))) {
		pw_buf_free(&b);
		return rc;
	}
	rc = pw_config_parse(out, b.data, b.len, path, err);
	pw_buf_free(&b);
	return rc;
}

/* ---- look-ups --------------------------------------------------------- */

char *pw_config_canonical_key(const char *key)
{
	const char *first = strchr(key, '.'), *last = strrchr(key, '.');
	char *out;
	size_t i, n = strlen(key);

	if (!first || first == key || !last[1])
		return NULL;
	if (!(out = strdup(key)))
		return NULL;
	for (i = 0; i < (size_t)(first - key); i++)
		out[i] = (char)tolower((unsigned char)out[i]);
	for (i = (size_t)(last - key) + 1; i < n; i++)
		out[i] = (char)tolower((unsigned char)out[i]);
	return out;
}

/* Compare a caller's key (any case) with a canonical one without allocating. */
static int key_matches(const char *canon, const char *key)
{
	const char *first = strchr(key, '.'), *last = strrchr(key, '.');
	size_t n = strlen(key), i;

	if (!first || strlen(canon) != n)
		return 0;
	for (i = 0; i < n; i++) {
		int a = (unsigned char)canon[i], b = (unsigned char)key[i];

		if (i < (size_t)(first - key) || i > (size_t)(last - key))
			b = tolower(b);
		if (a != b)
			return 0;
	}
	return 1;
}

const struct pw_config_entry *pw_config_get_entry(const struct pw_config *cfg, const char *key)
{
	size_t i;

	for (i = cfg ? cfg->nr : 0; i > 0; i--)
		if (key_matches(cfg->ents[i - 1].e.key, key))
			return &cfg->ents[i - 1].e;
	return NULL;
}

int pw_config_get_string(const struct pw_config *cfg, const char *key, const char **out,
                         struct pw_error *err)
{
	const struct pw_config_entry *e = pw_config_get_entry(cfg, key);

	*out = NULL;
	if (!e)
		return PW_ENOTFOUND;
	if (!e->value)
		return pw_error_set(err, PW_EINVAL, "missing value for '%s' (line %d in file %s)",
		                    e->key, e->line, e->origin);
	*out = e->value;
	return 0;
}

int pw_config_parse_bool(const char *v, int *out)
{
	int64_t n;

	if (!v) {
		*out = 1;
		return 0;
	}
	if (!strcasecmp(v, "true") || !strcasecmp(v, "yes") || !strcasecmp(v, "on")) {
		*out = 1;
		return 0;
	}
	if (!*v || !strcasecmp(v, "false") || !strcasecmp(v, "no") || !strcasecmp(v, "off")) {
		*out = 0;
		return 0;
	}
	if (pw_config_parse_int64(v, &n))
		return PW_EINVAL;
	*out = n != 0;
	return 0;
}

/* 0, or -1 for a bad unit / syntax, -2 when out of range for [min, max]. */
static int parse_signed(const char *v, int64_t *out, int64_t max)
{
	char *end;
	intmax_t val;
	int64_t factor = 1;

	if (!v || !*v)
		return -1;
	errno = 0;
	val = strtoimax(v, &end, 0);
	if (errno == ERANGE)
		return -2;
	if (end == v)
		return -1;
	if (*end) {
		switch (*end) {
		case 'k':
		case 'K':
			factor = 1024;
			break;
		case 'm':
		case 'M':
			factor = 1024 * 1024;
			break;
		case 'g':
		case 'G':
			factor = 1024 * 1024 * 1024;
			break;
		default:
			return -1;
		}
		if (end[1])
			return -1;
	}
	if ((val < 0 && (-max - 1) / factor > val) || (val > 0 && max / factor < val))
		return -2;
	*out = (int64_t)val * factor;
	return 0;
}

int pw_config_parse_int64(const char *value, int64_t *out)
{
	return parse_signed(value, out, INT64_MAX) ? PW_EINVAL : 0;
}

int pw_config_get_bool(const struct pw_config *cfg, const char *key, int *out, struct pw_error *err)
{
	const struct pw_config_entry *e = pw_config_get_entry(cfg, key);

	if (!e)
		return PW_ENOTFOUND;
	if (pw_config_parse_bool(e->value, out))
		return pw_error_set(err, PW_EINVAL,
		                    "bad boolean config value '%s' for '%s' in file %s", e->value,
		                    e->key, e->origin);
	return 0;
}

static int get_signed(const struct pw_config *cfg, const char *key, int64_t *out, int64_t max,
                      struct pw_error *err)
{
	const struct pw_config_entry *e = pw_config_get_entry(cfg, key);
	int r;

	if (!e)
		return PW_ENOTFOUND;
	if (!e->value)
		return pw_error_set(err, PW_EINVAL, "missing value for '%s' in file %s", e->key,
		                    e->origin);
	r = parse_signed(e->value, out, max);
	if (r)
		return pw_error_set(
		        err, PW_EINVAL, "bad numeric config value '%s' for '%s' in file %s: %s",
		        e->value, e->key, e->origin, r == -2 ? "out of range" : "invalid unit");
	return 0;
}

int pw_config_get_int64(const struct pw_config *cfg, const char *key, int64_t *out,
                        struct pw_error *err)
{
	return get_signed(cfg, key, out, INT64_MAX, err);
}

int pw_config_get_int(const struct pw_config *cfg, const char *key, int *out, struct pw_error *err)
{
	int64_t v;
	int rc = get_signed(cfg, key, &v, INT_MAX, err);

	if (!rc)
		*out = (int)v;
	return rc;
}

int pw_config_get_all(const struct pw_config *cfg, const char *key,
                      int (*fn)(const struct pw_config_entry *e, void *data), void *data)
{
	size_t i;
	int found = 0, rc;

	for (i = 0; cfg && i < cfg->nr; i++) {
		if (!key_matches(cfg->ents[i].e.key, key))
			continue;
		found = 1;
		if ((rc = fn(&cfg->ents[i].e, data)))
			return rc;
	}
	return found ? 0 : PW_ENOTFOUND;
}

int pw_config_foreach(const struct pw_config *cfg,
                      int (*fn)(const struct pw_config_entry *e, void *data), void *data)
{
	size_t i;
	int rc;

	for (i = 0; cfg && i < cfg->nr; i++)
		if ((rc = fn(&cfg->ents[i].e, data)))
			return rc;
	return 0;
}

size_t pw_config_count(const struct pw_config *cfg)
{
	return cfg ? cfg->nr : 0;
}

const struct pw_config_entry *pw_config_at(const struct pw_config *cfg, size_t i)
{
	return cfg && i < cfg->nr ? &cfg->ents[i].e : NULL;
}

/* ---- writer ----------------------------------------------------------- */

static int add_quoted_value(struct pw_buf *b, const char *v)
{
	size_t n = strlen(v);
	int quote = n && (v[0] == ' ' || v[0] == '\t' || v[n - 1] == ' ' || v[n - 1] == '\t' ||
	                  strpbrk(v, ";#"));
	int rc = quote ? pw_buf_addch(b, '"') : 0;

	for (; !rc && *v; v++) {
		switch (*v) {
		case '\n':
			rc = pw_buf_adds(b, "\\n");
			break;
		case '\t':
			rc = pw_buf_adds(b, "\\t");
			break;
		case '\b':
			rc = pw_buf_adds(b, "\\b");
			break;
		case '"':
			rc = pw_buf_adds(b, "\\\"");
			break;
		case '\\':
			rc = pw_buf_adds(b, "\\\\");
			break;
		default:
			rc = pw_buf_addch(b, *v);
		}
	}
	if (!rc && quote)
		rc = pw_buf_addch(b, '"');
	return rc;
}

/* The section and name parts of a canonical key follow Git's rules. */
static int key_is_valid(const char *key, const char *first, const char *last)
{
	const char *p;

	for (p = key; p < first; p++)
		if (!iskeychar((unsigned char)*p))
			return 0;
	if (!isalpha((unsigned char)last[1]))
		return 0;
	for (p = last + 1; *p; p++)
		if (!iskeychar((unsigned char)*p))
			return 0;
	for (p = first; p < last; p++)
		if (*p == '\n' || *p == '\r')
			return 0;
	return 1;
}

/* The new "\tname = value\n" line. */
static int value_line(struct pw_buf *line, const char *name, const char *value)
{
	int rc = pw_buf_addf(line, "\t%s", name);

	if (!rc)
		rc = pw_buf_adds(line, " = ");
	if (!rc)
		rc = add_quoted_value(line, value);
	if (!rc)
		rc = pw_buf_addch(line, '\n');
	return rc;
}

/* Where a new line goes when the key is not replaced: after the key's last
 * entry (add), else at the end of the last section of that name (after its
 * header line when it is empty); (size_t)-1 when there is none. */
static size_t insert_point(const struct pw_config *cfg, const struct sects *ss,
                           const struct pw_buf *in, const char *sectname, int add,
                           const char *value, size_t last_match)
{
	size_t i, at;

	if (add && last_match != (size_t)-1)
		return cfg->ents[last_match].end;
	if (last_match != (size_t)-1 || !value)
		return (size_t)-1;
	for (i = ss->nr; i > 0; i--) {
		if (strcmp(ss->v[i - 1].name, sectname))
			continue;
		at = ss->v[i - 1].last_end;
		if (at == ss->v[i - 1].hdr_end) {
			while (at < in->len && in->data[at] != '\n')
				at++;
			if (at < in->len)
				at++;
		}
		return at;
	}
	return (size_t)-1;
}

/* "[section]" or "[section \"sub\"]" and the line, at the end of out. */
static int append_section(struct pw_buf *out, const char *key, const char *first, const char *last,
                          const struct pw_buf *line)
{
	const char *p;
	int rc = 0;

	if (out->len && out->data[out->len - 1] != '\n')
		rc = pw_buf_addch(out, '\n');
	if (!rc)
		rc = pw_buf_addch(out, '[');
	if (!rc)
		rc = pw_buf_add(out, key, (size_t)(first - key));
	if (!rc && first != last) {
		rc = pw_buf_adds(out, " \"");
		for (p = first + 1; !rc && p < last; p++) {
			if (*p == '"' || *p == '\\')
				rc = pw_buf_addch(out, '\\');
			if (!rc)
				rc = pw_buf_addch(out, *p);
		}
		if (!rc)
			rc = pw_buf_addch(out, '"');
	}
	if (!rc)
		rc = pw_buf_adds(out, "]\n");
	if (!rc)
		rc = pw_buf_add(out, line->data, line->len);
	return rc;
}

/* The edited text: every entry of key dropped (the last one replaced by
 * line when setting), or line inserted at insert_at. 0 or PW_ENOMEM. */
static int rewrite(struct pw_buf *out, const struct pw_buf *in, const struct pw_config *cfg,
                   const char *key, const struct pw_buf *line, const char *value, int add,
                   size_t last_match, size_t insert_at)
{
	size_t i, pos = 0;
	int rc;

	if (!add && last_match != (size_t)-1) {
		for (i = 0; i <= last_match; i++) {
			const struct ent *e = &cfg->ents[i];

			if (strcmp(e->e.key, key))
				continue;
			if ((rc = pw_buf_add(out, in->data + pos, e->start - pos)))
				return rc;
			if (i == last_match && value &&
			    (rc = pw_buf_add(out, line->data, line->len)))
				return rc;
			pos = e->end;
		}
	} else if (value && insert_at != (size_t)-1) {
		if ((rc = pw_buf_add(out, in->data, insert_at)))
			return rc;
		if (out->len && out->data[out->len - 1] != '\n' && (rc = pw_buf_addch(out, '\n')))
			return rc;
		if ((rc = pw_buf_add(out, line->data, line->len)))
			return rc;
		pos = insert_at;
	}
	return pw_buf_add(out, in->data + pos, in->len - pos);
}

static int edit_file(const char *path, const char *key_in, const char *value, int add,
                     struct pw_error *err)
{
	struct pw_lock lk;
	struct pw_buf in = PW_BUF_INIT, out = PW_BUF_INIT, line = PW_BUF_INIT;
	struct pw_config *cfg = NULL;
	struct sects ss = {0};
	char *key = pw_config_canonical_key(key_in), *sectname = NULL;
	const char *first, *last;
	size_t i, insert_at, last_match = (size_t)-1;
	int rc;

	if (!key)
		return pw_error_set(err, PW_EINVAL, "invalid config key '%s'", key_in);
	first = strchr(key, '.');
	last = strrchr(key, '.');
	if (!key_is_valid(key, first, last)) {
		free(key);
		return pw_error_set(err, PW_EINVAL, "invalid config key '%s'", key_in);
	}
	if (!(sectname = strndup(key, (size_t)(last - key)))) {
		free(key);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if ((rc = pw_lock_acquire(&lk, path, err))) {
		free(key);
		free(sectname);
		return rc;
	}
	rc = pw_fs_read_file(path, &in, PW_CONFIG_MAX_FILE, err);
	if (rc == PW_ENOTFOUND)
		rc = 0;
	if (!rc && !(rc = pw_config_new(&cfg) ? PW_ENOMEM : 0))
		rc = do_parse(cfg, in.data, in.len, path, err, &ss);
	if (rc)
		goto done;
	if (value && value_line(&line, last + 1, value))
		goto oom;
	for (i = 0; i < cfg->nr; i++)
		if (!strcmp(cfg->ents[i].e.key, key))
			last_match = i;
	insert_at = insert_point(cfg, &ss, &in, sectname, add, value, last_match);
	if (rewrite(&out, &in, cfg, key, &line, value, add, last_match, insert_at))
		goto oom;
	/* a new section at the end */
	if (value && last_match == (size_t)-1 && insert_at == (size_t)-1 &&
	    append_section(&out, key, first, last, &line))
		goto oom;
	if ((rc = pw_lock_write(&lk, out.data, out.len, err)))
		goto done;
	rc = pw_lock_commit(&lk, err);
	goto cleanup;
oom:
	rc = pw_error_set(err, PW_ENOMEM, "out of memory");
done:
	pw_lock_rollback(&lk);
cleanup:
	pw_config_free(cfg);
	sects_free(&ss);
	pw_buf_free(&in);
	pw_buf_free(&out);
	pw_buf_free(&line);
	free(key);
	free(sectname);
	return rc;
}

int pw_config_set_in_file(const char *path, const char *key, const char *value,
                          struct pw_error *err)
{
	return edit_file(path, key, value, 0, err);
}

int pw_config_add_in_file(const char *path, const char *key, const char *value,
                          struct pw_error *err)
{
	if (!value)
		return pw_error_set(err, PW_EINVAL, "no value to add for '%s'", key);
	return edit_file(path, key, value, 1, err);
}

/* One "key=value" (or "key" alone, a true boolean) from the command line. */
static int add_override(struct pw_config *cfg, const char *kv, size_t n)
{
	const char *eq = memchr(kv, '=', n);
	char *name = strndup(kv, eq ? (size_t)(eq - kv) : n), *key, *value = NULL;

	if (!name)
		return PW_ENOMEM;
	key = pw_config_canonical_key(name);
	free(name);
	if (!key || !strchr(key, '.') || key[0] == '.' || key[strlen(key) - 1] == '.') {
		free(key);
		return PW_EINVAL;
	}
	if (eq && !(value = strndup(eq + 1, n - (size_t)(eq + 1 - kv)))) {
		free(key);
		return PW_ENOMEM;
	}
	if (add_entry(cfg, key, value, "command line", 0, 0, 0)) {
		free(key);
		free(value);
		return PW_ENOMEM;
	}
	return 0;
}

/* GIT_CONFIG_PARAMETERS holds shell-quoted words: 'key=value', or 'key'='value'
 * as newer Git writes them, separated by blanks; inside quotes '\'' ends the
 * quote, adds a quote and reopens. */
static int apply_parameters(struct pw_config *cfg, const char *s, struct pw_error *err)
{
	struct pw_buf word = PW_BUF_INIT;
	int rc = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\n')
			s++;
		if (!*s)
			break;
		pw_buf_reset(&word);
		/* one word: quoted pieces, '\'' escapes and '=' glued together */
		while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
			if (*s == '\'') {
				const char *end = strchr(s + 1, '\'');

				if (!end)
					goto bad;
				if (pw_buf_add(&word, s + 1, (size_t)(end - s - 1)))
					goto nomem;
				s = end + 1;
			} else if (*s == '\\' && s[1] == '\'') {
				if (pw_buf_add(&word, "'", 1))
					goto nomem;
				s += 2;
			} else if (*s == '=') {
				if (pw_buf_add(&word, "=", 1))
					goto nomem;
				s++;
			} else {
				goto bad;
			}
		}
		rc = add_override(cfg, (const char *)word.data, word.len);
		if (rc == PW_ENOMEM)
			goto nomem;
		if (rc)
			goto bad;
	}
	pw_buf_free(&word);
	return 0;
bad:
	pw_buf_free(&word);
	return pw_error_set(err, PW_EINVAL, "bogus format in GIT_CONFIG_PARAMETERS");
nomem:
	pw_buf_free(&word);
	return pw_error_set(err, PW_ENOMEM, "out of memory");
}

int pw_config_apply_overrides(struct pw_config *cfg, const struct pw_config_layers *l,
                              struct pw_error *err)
{
	size_t i;
	int rc;

	if (!l)
		return 0;
	if (l->parameters && *l->parameters && (rc = apply_parameters(cfg, l->parameters, err)))
		return rc;
	for (i = 0; i < l->nr_pairs; i++) {
		const char *k = l->keys[i], *v = l->values[i];
		struct pw_buf kv = PW_BUF_INIT;

		if (!k || !*k)
			return pw_error_set(err, PW_EINVAL, "missing config key GIT_CONFIG_KEY_%zu",
			                    i);
		if (!v)
			return pw_error_set(err, PW_EINVAL,
			                    "missing config value GIT_CONFIG_VALUE_%zu", i);
		if (pw_buf_addf(&kv, "%s=%s", k, v)) {
			pw_buf_free(&kv);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		rc = add_override(cfg, (const char *)kv.data, kv.len);
		pw_buf_free(&kv);
		if (rc)
			return pw_error_set(
			        err, rc, rc == PW_ENOMEM ? "out of memory" : "bogus config key %s",
			        k);
	}
	return 0;
}

/* Parse path into cfg when it exists. */
static int load_layer(struct pw_config *cfg, const char *path, struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	int rc;

	if (!path || !*path)
		return 0;
	rc = pw_fs_read_file(path, &b, PW_CONFIG_MAX_FILE, err);
	if (rc == PW_ENOTFOUND) {
		pw_error_clear(err);
		pw_buf_free(&b);
		return 0;
	}
	if (!rc)
		rc = pw_config_parse_into(cfg, b.data ? b.data : "", b.len, path, err);
	pw_buf_free(&b);
	return rc;
}

int pw_config_load_layers(struct pw_config **out, const struct pw_config_layers *l,
                          const char *repo_config, struct pw_error *err)
{
	struct pw_config *cfg;
	int rc = 0;

	*out = NULL;
	if (pw_config_new(&cfg))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	if (l && !(rc = load_layer(cfg, l->system, err)) && !(rc = load_layer(cfg, l->xdg, err)))
		rc = load_layer(cfg, l->global, err);
	if (!rc)
		rc = load_layer(cfg, repo_config, err);
	if (!rc)
		rc = pw_config_apply_overrides(cfg, l, err);
	if (rc) {
		pw_config_free(cfg);
		return rc;
	}
	*out = cfg;
	return 0;
}

char *pw_config_parameters_add(const char *params, const char *kv)
{
	struct pw_buf v = PW_BUF_INIT;
	const char *p;
	int rc = 0;

	if (params && *params && pw_buf_addf(&v, "%s ", params))
		rc = -1;
	if (!rc && pw_buf_addch(&v, '\''))
		rc = -1;
	for (p = kv; !rc && *p; p++)
		if (*p == '\'' ? pw_buf_add(&v, "'\\''", 4) : pw_buf_addch(&v, *p))
			rc = -1;
	if (!rc && pw_buf_addch(&v, '\''))
		rc = -1;
	if (rc) {
		pw_buf_free(&v);
		return NULL;
	}
	return pw_buf_detach(&v, NULL);
}
