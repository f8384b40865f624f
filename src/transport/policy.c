/* Git's protocol policy (protocol.allow, protocol.<name>.allow,
 * GIT_ALLOW_PROTOCOL, GIT_PROTOCOL_FROM_USER): one check every transport
 * goes through before anything is started. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "packwire/config.h"
#include "packwire/transport.h"

enum policy { ALLOW_NEVER, ALLOW_USER, ALLOW_ALWAYS, ALLOW_UNSET };

static enum policy parse_policy(const char *v)
{
	if (!v)
		return ALLOW_UNSET;
	if (!strcasecmp(v, "always"))
		return ALLOW_ALWAYS;
	if (!strcasecmp(v, "never"))
		return ALLOW_NEVER;
	if (!strcasecmp(v, "user"))
		return ALLOW_USER;
	return ALLOW_UNSET;
}

static enum policy config_policy(const struct pw_config *cfg, const char *key, int *bad,
                                 const char **badv)
{
	const struct pw_config_entry *e = cfg ? pw_config_get_entry(cfg, key) : NULL;
	enum policy p;

	if (!e)
		return ALLOW_UNSET;
	p = parse_policy(e->value);
	if (p == ALLOW_UNSET) {
		*bad = 1;
		*badv = e->value ? e->value : "";
	}
	return p;
}

/* Is name in the colon-separated list? */
static int in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	while (*p) {
		const char *end = strchr(p, ':');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return 1;
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}

int pw_protocol_check_allowed(const char *name, const struct pw_config *cfg,
                              const struct pw_protocol_env *env, struct pw_error *err)
{
	char key[300];
	enum policy p;
	const char *badv = NULL;
	int bad = 0, from_user = 1;

	if (env && env->allow_protocol) {
		if (in_list(env->allow_protocol, name))
			return 0;
		return pw_error_set(err, PW_EUNSUPPORTED, "transport '%s' not allowed", name);
	}
	if (snprintf(key, sizeof(key), "protocol.%s.allow", name) >= (int)sizeof(key))
		return pw_error_set(err, PW_EUNSUPPORTED, "transport '%s' not allowed", name);
	p = config_policy(cfg, key, &bad, &badv);
	if (bad)
		return pw_error_set(err, PW_EINVAL, "unknown value for config '%s': %s", key, badv);
	if (p == ALLOW_UNSET) {
		p = config_policy(cfg, "protocol.allow", &bad, &badv);
		if (bad)
			return pw_error_set(err, PW_EINVAL,
			                    "unknown value for config 'protocol.allow': %s", badv);
	}
	if (p == ALLOW_UNSET) {
		/* Git's defaults: the known-safe transports always, ext never */
		if (!strcmp(name, "http") || !strcmp(name, "https") || !strcmp(name, "git") ||
		    !strcmp(name, "ssh") || !strcmp(name, "file"))
			p = ALLOW_ALWAYS;
		else if (!strcmp(name, "ext"))
			p = ALLOW_NEVER;
		else
			p = ALLOW_USER;
	}
	if (p == ALLOW_USER && env && env->protocol_from_user &&
	    pw_config_parse_bool(env->protocol_from_user, &from_user))
		from_user = 1;
	if (p == ALLOW_ALWAYS || (p == ALLOW_USER && from_user))
		return 0;
	return pw_error_set(err, PW_EUNSUPPORTED, "transport '%s' not allowed", name);
}
