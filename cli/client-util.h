#ifndef PW_CLI_CLIENT_UTIL_H
#define PW_CLI_CLIENT_UTIL_H

#include "packwire/report.h"

struct pw_repo;
struct pw_env_options;
struct pw_repo_opts;

/* The GIT_* environment as library options, read once (fatal on a bogus
 * GIT_CONFIG_COUNT). */
const struct pw_env_options *pw_cli_env(void);
/* Record one "-c key=value" given before the subcommand (in
 * GIT_CONFIG_PARAMETERS, as git). -1 when the key is malformed. */
int pw_cli_config_override(const char *kv);
/* The value of key in the layered config: the repository's (every layer)
 * or, with repo NULL, system, global and -c. *found says whether it is set
 * at all (value may be NULL). */
/* The config a command sees (the repository's, else the layers without one). */
const struct pw_config *pw_cli_config(const struct pw_repo *repo);
const char *pw_cli_config_get(const struct pw_repo *repo, const char *key, int *found);
int pw_cli_protocol_version(const struct pw_repo *repo);
void pw_cli_client_signals(void);
/* The pack cache uploadpack.packCache names (size bound
 * uploadpack.packCacheMax), read from the system and global files and -c
 * only, as uploadpack.packObjectsHook; NULL when unset, or with a warning
 * on stderr when it cannot be used (the fetch goes on without it). */
struct pw_pack_cache;
struct pw_pack_cache *pw_cli_pack_cache_from_config(void);
/* Callbacks that render the library's reports on stderr as git does:
 * progress (fetch's meters when NULL), "warning: ..." and the server's
 * band-2 text. */
void pw_cli_report(struct pw_report *r, pw_progress_fn progress);

#endif
