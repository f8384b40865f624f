#ifndef PW_CLI_CLIENT_UTIL_H
#define PW_CLI_CLIENT_UTIL_H

struct pw_repo;

/* Record one "-c key=value" given before the subcommand. */
int pw_cli_config_override(const char *kv);
/* The value of key: -c overrides first, then the repository's config (repo
 * may be NULL). *found says whether it is set at all (value may be NULL). */
const char *pw_cli_config_get(const struct pw_repo *repo, const char *key, int *found);
int pw_cli_protocol_version(const struct pw_repo *repo);
void pw_cli_client_signals(void);

#endif
