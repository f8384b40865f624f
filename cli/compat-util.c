/* The CLI's side of compatObjectFormat: ids given in the compat algorithm
 * (rev-parse, cat-file) and output in it (docs/compat-map.md). One map
 * handle per process, opened on first use. */
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "packwire/packwire.h"

static struct pw_compat_map *the_map;
static struct pw_repo *map_repo;

const struct pw_hash_algo *pw_cli_compat_algo(struct pw_repo *repo)
{
	const struct pw_hash_algo *s = pw_repo_algo(repo);

	if (pw_repo_compat_algo(repo))
		return pw_repo_compat_algo(repo);
	return s->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
}

static struct pw_compat_map *get_map(struct pw_repo *repo)
{
	struct pw_error err = {0};

	if (the_map && map_repo == repo)
		return the_map;
	pw_compat_map_free(the_map);
	the_map = NULL;
	map_repo = repo;
	if (pw_compat_map_open(&the_map, pw_repo_objects_dir(repo), pw_repo_algo(repo),
	                       pw_cli_compat_algo(repo), &err))
		pw_cli_error("%s", err.msg);
	return the_map;
}

int pw_cli_compat_resolve(struct pw_repo *repo, const char *arg, struct pw_oid *out)
{
	const struct pw_hash_algo *c = pw_cli_compat_algo(repo);
	struct pw_compat_map *m;
	struct pw_oid in;

	if (strlen(arg) != c->hexsz || pw_oid_from_hex(&in, arg, c->hexsz, c))
		return PW_ENOTFOUND;
	if (!(m = get_map(repo)))
		return PW_ENOTFOUND;
	return pw_compat_to_storage(m, &in, out);
}

int pw_cli_compat_map_oid(struct pw_repo *repo, const struct pw_oid *storage, struct pw_oid *out)
{
	struct pw_compat_map *m = get_map(repo);

	return m ? pw_compat_from_storage(m, storage, out) : PW_ENOTFOUND;
}

static int lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return pw_cli_compat_map_oid(data, from, out);
}

int pw_cli_compat_convert(struct pw_repo *repo, int type, const struct pw_buf *in,
                          struct pw_buf *out, struct pw_error *err)
{
	return pw_compat_convert(out, type, in->data, in->len, pw_repo_algo(repo),
	                         pw_cli_compat_algo(repo), lookup, repo, err);
}

int pw_cli_submodule_opt(struct pw_compat_submodules **s, const char *arg)
{
	const char *eq = strchr(arg, '=');
	struct pw_error err = {0};
	char *path;
	int rc;

	if (!eq || eq == arg || !eq[1])
		return pw_cli_fatal("--submodule=%s: expected <path>=<repository>", arg);
	if (!*s && pw_compat_submodules_new(s))
		return pw_cli_fatal("out of memory");
	if (!(path = strndup(arg, (size_t)(eq - arg))))
		return pw_cli_fatal("out of memory");
	rc = pw_compat_submodules_add(*s, path, eq + 1, &err);
	free(path);
	return rc ? pw_cli_fatal("--submodule=%s: %s", arg, err.msg) : 0;
}

int pw_cli_submodules_repo(struct pw_compat_submodules **s, struct pw_repo *repo, const char *base)
{
	struct pw_error err = {0};

	/* --submodule first (already in *s), then the config, then the
	 * .gitmodules URLs under base */
	if (pw_compat_submodules_for_repo(s, repo, base, NULL, &err))
		return pw_cli_fatal("%s", err.msg);
	return 0;
}
