/* TEMPORARY (see tmp-discover.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tmp-discover.h"
#include "util/fs.h"

static int is_git_dir(const char *dir)
{
	struct pw_buf p = PW_BUF_INIT;
	int ok;

	pw_buf_addf(&p, "%s/HEAD", dir);
	ok = pw_fs_exists(p.data);
	pw_buf_reset(&p);
	pw_buf_addf(&p, "%s/objects", dir);
	ok = ok && pw_fs_is_dir(p.data);
	pw_buf_free(&p);
	return ok;
}

static const struct pw_hash_algo *read_format(const char *git_dir)
{
	struct pw_buf cfg = PW_BUF_INIT, path = PW_BUF_INIT;
	const struct pw_hash_algo *algo = &pw_hash_sha1;
	char *line, *save = NULL;
	int in_ext = 0;

	pw_buf_addf(&path, "%s/config", git_dir);
	if (pw_fs_read_file(path.data, &cfg, 1 << 20, NULL))
		goto done;
	for (line = strtok_r(cfg.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *v, *e;

		while (isspace((unsigned char)*p))
			p++;
		if (*p == '[') {
			in_ext = !strncasecmp(p, "[extensions]", 12);
			continue;
		}
		if (!in_ext || strncasecmp(p, "objectformat", 12))
			continue;
		v = strchr(p, '=');
		if (!v)
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		e = v + strlen(v);
		while (e > v && isspace((unsigned char)e[-1]))
			e--;
		algo = pw_hash_by_name(v, (size_t)(e - v));
	}
done:
	pw_buf_free(&cfg);
	pw_buf_free(&path);
	return algo;
}

int pw_cli_tmp_discover(struct pw_cli_repo *repo)
{
	const char *env = getenv("GIT_DIR"), *obj = getenv("GIT_OBJECT_DIRECTORY");
	char *cwd = getcwd(NULL, 0);
	int found = 0;

	pw_buf_init(&repo->git_dir, 0);
	pw_buf_init(&repo->objects_dir, 0);
	repo->algo = NULL;
	if (env && *env) {
		pw_buf_adds(&repo->git_dir, env);
		found = 1;
	} else if (cwd) {
		struct pw_buf dir = PW_BUF_INIT, cand = PW_BUF_INIT;

		pw_buf_adds(&dir, cwd);
		for (;;) {
			pw_buf_reset(&cand);
			pw_buf_addf(&cand, "%s/.git", dir.data);
			if (is_git_dir(cand.data)) {
				pw_buf_adds(&repo->git_dir, cand.data);
				found = 1;
				break;
			}
			if (is_git_dir(dir.data)) {
				pw_buf_adds(&repo->git_dir, dir.data);
				found = 1;
				break;
			}
			{
				char *slash = strrchr(dir.data, '/');

				if (!slash || slash == dir.data)
					break;
				pw_buf_setlen(&dir, (size_t)(slash - dir.data));
			}
		}
		pw_buf_free(&dir);
		pw_buf_free(&cand);
	}
	free(cwd);
	if (!found)
		return PW_ENOTFOUND;
	repo->algo = read_format(repo->git_dir.data);
	if (obj && *obj)
		pw_buf_adds(&repo->objects_dir, obj);
	else
		pw_buf_addf(&repo->objects_dir, "%s/objects", repo->git_dir.data);
	return repo->algo ? 0 : PW_EUNSUPPORTED;
}

void pw_cli_tmp_repo_free(struct pw_cli_repo *repo)
{
	pw_buf_free(&repo->git_dir);
	pw_buf_free(&repo->objects_dir);
}

static int read_ref(struct pw_cli_repo *repo, const char *ref, struct pw_oid *out, int depth)
{
	struct pw_buf path = PW_BUF_INIT, data = PW_BUF_INIT;
	size_t hexsz = repo->algo->hexsz;
	int rc = PW_ENOTFOUND;

	if (depth > 5)
		return PW_ENOTFOUND;
	pw_buf_addf(&path, "%s/%s", repo->git_dir.data, ref);
	if (!pw_fs_read_file(path.data, &data, 4096, NULL)) {
		while (data.len && isspace((unsigned char)data.data[data.len - 1]))
			data.data[--data.len] = '\0';
		if (!strncmp(data.data, "ref: ", 5))
			rc = read_ref(repo, data.data + 5, out, depth + 1);
		else if (data.len == hexsz && !pw_oid_from_hex(out, data.data, hexsz, repo->algo))
			rc = 0;
	} else {
		char *line, *save = NULL;

		pw_buf_reset(&path);
		pw_buf_addf(&path, "%s/packed-refs", repo->git_dir.data);
		if (!pw_fs_read_file(path.data, &data, 0, NULL))
			for (line = strtok_r(data.data, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save))
				if (strlen(line) > hexsz + 1 && line[hexsz] == ' ' &&
				    !strcmp(line + hexsz + 1, ref) &&
				    !pw_oid_from_hex(out, line, hexsz, repo->algo)) {
					rc = 0;
					break;
				}
	}
	pw_buf_free(&path);
	pw_buf_free(&data);
	return rc;
}

int pw_cli_tmp_resolve(struct pw_cli_repo *repo, const char *name, struct pw_oid *out)
{
	static const char *const rules[] = {"%s", "refs/%s", "refs/tags/%s", "refs/heads/%s",
	                                    "refs/remotes/%s"};
	size_t i;

	if (strlen(name) == repo->algo->hexsz &&
	    !pw_oid_from_hex(out, name, repo->algo->hexsz, repo->algo))
		return 0;
	if (strstr(name, ".."))
		return PW_ENOTFOUND;
	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		char ref[1024];

		snprintf(ref, sizeof(ref), rules[i], name);
		if (!read_ref(repo, ref, out, 0))
			return 0;
	}
	return PW_ENOTFOUND;
}
