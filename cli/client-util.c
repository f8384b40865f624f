/* Helpers shared by ls-remote, clone and fetch: "-c key=value" overrides
 * given before the subcommand, the protocol version to ask for, and turning
 * a remote name into its URL. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/packwire.h"

#define MAX_OVERRIDES 64

static struct {
	char *key; /* canonical */
	char *value;
} overrides[MAX_OVERRIDES];
static int nr_overrides;

/* Append 'kv' to GIT_CONFIG_PARAMETERS, as git -c does, so the repository
 * layer (every command) and the processes packwire starts see it. */
static int export_override(const char *kv)
{
	const char *old = getenv("GIT_CONFIG_PARAMETERS");
	struct pw_buf v = PW_BUF_INIT;
	const char *p;
	int rc = 0;

	if (old && *old && pw_buf_addf(&v, "%s ", old))
		rc = -1;
	if (!rc && pw_buf_add(&v, "'", 1))
		rc = -1;
	for (p = kv; !rc && *p; p++)
		if (*p == '\'' ? pw_buf_add(&v, "'\\''", 4) : pw_buf_add(&v, p, 1))
			rc = -1;
	if (!rc && (pw_buf_add(&v, "'", 1) || setenv("GIT_CONFIG_PARAMETERS", (char *)v.data, 1)))
		rc = -1;
	pw_buf_free(&v);
	return rc;
}

int pw_cli_config_override(const char *kv)
{
	const char *eq = strchr(kv, '=');
	char *key;

	if (nr_overrides >= MAX_OVERRIDES)
		return -1;
	key = eq ? strndup(kv, (size_t)(eq - kv)) : strdup(kv);
	if (!key)
		return -1;
	overrides[nr_overrides].key = pw_config_canonical_key(key);
	free(key);
	if (!overrides[nr_overrides].key)
		return -1;
	overrides[nr_overrides].value = eq ? strdup(eq + 1) : NULL;
	nr_overrides++;
	return export_override(kv);
}

const char *pw_cli_config_get(const struct pw_repo *repo, const char *key, int *found)
{
	char *canon = pw_config_canonical_key(key);
	const char *v = NULL;
	int i;

	*found = 0;
	for (i = nr_overrides - 1; canon && i >= 0; i--)
		if (!strcmp(overrides[i].key, canon)) {
			free(canon);
			*found = 1;
			return overrides[i].value;
		}
	free(canon);
	if (repo && !pw_config_get_string(pw_repo_config(repo), key, &v, NULL)) {
		*found = 1;
		return v;
	}
	return NULL;
}

/* protocol.version from -c, the repository, or ~/.gitconfig; default 2. */
int pw_cli_protocol_version(const struct pw_repo *repo)
{
	const char *v;
	int found, n = 2;

	v = pw_cli_config_get(repo, "protocol.version", &found);
	if (!found) {
		const char *home = getenv("HOME");
		struct pw_config *cfg = NULL;
		char path[4096];

		if (home &&
		    snprintf(path, sizeof(path), "%s/.gitconfig", home) < (int)sizeof(path) &&
		    !pw_config_load_file(&cfg, path, NULL)) {
			const char *hv;

			if (!pw_config_get_string(cfg, "protocol.version", &hv, NULL) && hv)
				n = atoi(hv);
			pw_config_free(cfg);
		}
		return n >= 0 && n <= 2 ? n : 2;
	}
	if (v && (!strcmp(v, "0") || !strcmp(v, "1") || !strcmp(v, "2")))
		return v[0] - '0';
	fprintf(stderr, "warning: unknown value for protocol.version: %s\n", v ? v : "");
	return 2;
}

void pw_cli_client_signals(void)
{
	/* a server that goes away must be an error code, not a dead client */
	signal(SIGPIPE, SIG_IGN);
}
