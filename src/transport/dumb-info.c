/* update-server-info: the files a dumb HTTP client reads, written as Git
 * writes them (byte for byte): $GIT_DIR/info/refs ("<id>\t<name>" for every
 * ref under refs/, sorted, with "<peeled>\t<name>^{}" after an annotated
 * tag) and objects/info/packs ("P <pack>" for each local pack, then an
 * empty line). A file whose content would not change is left alone unless
 * forced, as Git does. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/buf.h"
#include "packwire/dumb.h"
#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "util/fs.h"

struct info_refs {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	struct pw_buf *out;
	struct pw_error *err;
};

static int info_ref(const struct pw_ref *ref, void *data)
{
	struct info_refs *t = data;
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid peeled;
	uint64_t size;
	int type, rc;

	/* Git's add_info_ref: a ref to a missing object fails the update */
	if (pw_odb_read_header(t->odb, &ref->oid, &type, &size))
		return pw_error_set(t->err, PW_ENOTFOUND, "%s: bad object %s", ref->name,
		                    pw_oid_to_hex(&ref->oid, hex));
	if (pw_buf_addf(t->out, "%s\t%s\n", pw_oid_to_hex(&ref->oid, hex), ref->name))
		return pw_error_set(t->err, PW_ENOMEM, "out of memory");
	if (type != PW_OBJ_TAG)
		return 0;
	rc = pw_odb_peel(t->odb, &ref->oid, &peeled, NULL, NULL);
	if (rc < 0)
		return 0; /* a broken tag chain: no peeled line (deref_tag fails) */
	if (pw_buf_addf(t->out, "%s\t%s^{}\n", pw_oid_to_hex(&peeled, hex), ref->name))
		return pw_error_set(t->err, PW_ENOMEM, "out of memory");
	return 0;
}

/* Write path unless it holds data already (and !force). */
static int update_file(const char *path, const struct pw_buf *data, int force, struct pw_error *err)
{
	struct pw_buf old = PW_BUF_INIT;

	if (!force && !pw_fs_read_file(path, &old, data->len + 1, NULL) && old.len == data->len &&
	    !memcmp(old.data, data->data, data->len)) {
		pw_buf_free(&old);
		return 0;
	}
	pw_buf_free(&old);
	return pw_fs_write_atomic(path, data->data, data->len, err);
}

struct pack_name {
	char *name; /* "pack-<hex>.pack" */
	int old_num;
	size_t order; /* readdir order */
};

static int cmp_pack(const void *a_, const void *b_)
{
	const struct pack_name *a = a_, *b = b_;

	/* Git's compare_info: the old file's order first, then the rest */
	if (a->old_num >= 0 && b->old_num >= 0)
		return a->old_num - b->old_num;
	if (a->old_num >= 0)
		return -1;
	if (b->old_num >= 0)
		return 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* The old objects/info/packs: sets old_num of the packs it names; 1 when it
 * is stale (names a pack that is gone, or has "D"/"T" lines), as Git. */
static int read_old(const char *path, struct pack_name *v, size_t nr)
{
	struct pw_buf b = PW_BUF_INIT;
	char *line, *next;
	int cnt = 0;
	size_t i;

	if (pw_fs_read_file(path, &b, 1u << 24, NULL)) {
		pw_buf_free(&b);
		return 1;
	}
	for (line = b.data; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (!*line)
			continue;
		if (!strncmp(line, "P ", 2)) {
			for (i = 0; i < nr; i++)
				if (!strcmp(v[i].name, line + 2))
					break;
			if (i == nr) {
				pw_buf_free(&b);
				return 1;
			}
			v[i].old_num = cnt++;
		} else if (line[0] == 'D' || line[0] == 'T') {
			pw_buf_free(&b);
			return 1;
		}
	}
	pw_buf_free(&b);
	return 0;
}

static int info_packs(struct pw_repo *repo, int force, struct pw_error *err)
{
	const char *objects = pw_repo_objects_dir(repo);
	struct pw_buf path = PW_BUF_INIT, out = PW_BUF_INIT;
	struct pack_name *v = NULL;
	size_t nr = 0, i;
	DIR *d;
	struct dirent *e;
	int rc = 0;

	if (pw_buf_addf(&path, "%s/pack", objects))
		goto nomem;
	if ((d = opendir(path.data))) {
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			struct pw_buf pack = PW_BUF_INIT;
			void *q;

			if (l <= 9 || strncmp(e->d_name, "pack-", 5) ||
			    strcmp(e->d_name + l - 4, ".idx"))
				continue;
			/* a pack counts when both its .idx and .pack are there */
			if (pw_buf_addf(&pack, "%s/%.*s.pack", path.data, (int)(l - 4),
			                e->d_name)) {
				closedir(d);
				goto nomem;
			}
			if (!pw_fs_exists(pack.data)) {
				pw_buf_free(&pack);
				continue;
			}
			pw_buf_free(&pack);
			if (!(q = realloc(v, (nr + 1) * sizeof(*v)))) {
				closedir(d);
				goto nomem;
			}
			v = q;
			v[nr].old_num = -1;
			v[nr].order = nr;
			if (!(v[nr].name = malloc(l + 2))) {
				closedir(d);
				goto nomem;
			}
			memcpy(v[nr].name, e->d_name, l - 4);
			memcpy(v[nr].name + l - 4, ".pack", 6);
			nr++;
		}
		closedir(d);
	}
	pw_buf_reset(&path);
	if (pw_buf_addf(&path, "%s/info", objects))
		goto nomem;
	if ((rc = pw_fs_mkdir_p(path.data, err)))
		goto out;
	if (pw_buf_adds(&path, "/packs"))
		goto nomem;
	if (!force && read_old(path.data, v, nr))
		for (i = 0; i < nr; i++)
			v[i].old_num = -1;
	if (nr)
		qsort(v, nr, sizeof(*v), cmp_pack);
	for (i = 0; i < nr; i++)
		if (pw_buf_addf(&out, "P %s\n", v[i].name))
			goto nomem;
	if (pw_buf_addch(&out, '\n'))
		goto nomem;
	rc = update_file(path.data, &out, force, err);
	goto out;
nomem:
	rc = pw_error_set(err, PW_ENOMEM, "out of memory");
out:
	for (i = 0; i < nr; i++)
		free(v[i].name);
	free(v);
	pw_buf_free(&path);
	pw_buf_free(&out);
	return rc;
}

int pw_update_server_info(struct pw_repo *repo, int force, struct pw_error *err)
{
	struct pw_buf out = PW_BUF_INIT, path = PW_BUF_INIT;
	struct info_refs t = {NULL, pw_repo_algo(repo), &out, err};
	int rc;

	if ((rc = pw_odb_open(&t.odb, pw_repo_objects_dir(repo), t.algo, err)))
		return rc;
	rc = pw_refs_foreach(repo, "refs/", 0, info_ref, &t);
	pw_odb_free(t.odb);
	if (rc) {
		if (rc != PW_ENOTFOUND && rc != PW_ENOMEM)
			pw_error_set(err, rc, "listing refs: %s", pw_repo_error(repo)->msg);
		goto out;
	}
	if (pw_buf_addf(&path, "%s/info", pw_repo_git_dir(repo))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = pw_fs_mkdir_p(path.data, err)))
		goto out;
	if (pw_buf_adds(&path, "/refs")) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = update_file(path.data, &out, force, err)))
		goto out;
	rc = info_packs(repo, force, err);
out:
	pw_buf_free(&out);
	pw_buf_free(&path);
	return rc;
}
