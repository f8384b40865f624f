/* TEMPORARY: a minimal repository discovery for cat-file and show-index until
 * the repo layer (pw_repo_open) is merged; then this file goes away. */
#ifndef PW_CLI_TMP_DISCOVER_H
#define PW_CLI_TMP_DISCOVER_H

#include "packwire/buf.h"
#include "packwire/hash.h"

struct pw_cli_repo {
	struct pw_buf git_dir;
	struct pw_buf objects_dir;
	const struct pw_hash_algo *algo;
};

/* 0 when a repository was found (GIT_DIR, ./.git upwards, or a bare repo),
 * PW_ENOTFOUND when there is none, PW_EUNSUPPORTED for an unknown format. */
int pw_cli_tmp_discover(struct pw_cli_repo *repo);
void pw_cli_tmp_repo_free(struct pw_cli_repo *repo);
/* Resolve HEAD, refs/..., heads/tags shorthand via loose refs and packed-refs
 * (no peeling, no revision syntax). 0 or PW_ENOTFOUND. */
int pw_cli_tmp_resolve(struct pw_cli_repo *repo, const char *name, struct pw_oid *out);

#endif
