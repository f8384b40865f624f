/* hideRefs matching (see hide.h). */
#include <stdlib.h>
#include <string.h>

#include "refs/hide.h"

struct load_ctx {
	struct pw_hide_refs *h;
	const char *section;
	struct pw_error *err;
};

static int is_hide_key(const char *key, const char *section)
{
	size_t n;

	if (!strcmp(key, "transfer.hiderefs"))
		return 1;
	if (!section)
		return 0;
	n = strlen(section);
	/* "<section>.hiderefs" only: a subsection does not count */
	return !strncmp(key, section, n) && !strcmp(key + n, ".hiderefs");
}

static int load_one(const struct pw_config_entry *e, void *data)
{
	struct load_ctx *c = data;
	char **v, *val;
	size_t len;

	if (!is_hide_key(e->key, c->section))
		return 0;
	if (!e->value)
		return pw_error_set(c->err, PW_EINVAL, "missing value for '%s' (%s:%d)", e->key,
		                    e->origin ? e->origin : "config", e->line);
	v = realloc(c->h->v, (c->h->nr + 1) * sizeof(*v));
	if (!v)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	c->h->v = v;
	if (!(val = strdup(e->value)))
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	len = strlen(val);
	while (len && val[len - 1] == '/')
		val[--len] = '\0';
	v[c->h->nr++] = val;
	return 0;
}

int pw_hide_refs_load(struct pw_hide_refs *h, const struct pw_config *cfg, const char *section,
                      struct pw_error *err)
{
	struct load_ctx c = {h, section, err};
	int rc;

	if (!cfg)
		return 0;
	rc = pw_config_foreach(cfg, load_one, &c);
	if (rc)
		pw_hide_refs_free(h);
	return rc;
}

static int prefix_match(const char *subject, const char *prefix)
{
	size_t n = strlen(prefix);

	return !strncmp(subject, prefix, n) && (subject[n] == '\0' || subject[n] == '/');
}

int pw_hide_refs_match(const struct pw_hide_refs *h, const char *name, const char *full)
{
	size_t i;

	for (i = h->nr; i-- > 0;) {
		const char *m = h->v[i], *subject = name;
		int neg = 0;

		if (*m == '!') {
			neg = 1;
			m++;
		}
		if (*m == '^') {
			subject = full;
			m++;
		}
		if (subject && prefix_match(subject, m))
			return !neg;
	}
	return 0;
}

void pw_hide_refs_free(struct pw_hide_refs *h)
{
	size_t i;

	for (i = 0; i < h->nr; i++)
		free(h->v[i]);
	free(h->v);
	h->v = NULL;
	h->nr = 0;
}
