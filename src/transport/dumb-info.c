/* update-server-info: the files a dumb HTTP client reads, written as Git
 * writes them (byte for byte): $GIT_DIR/info/refs ("<id>\t<name>" for every
 * ref under refs/, sorted, with "<peeled>\t<name>^{}" after an annotated
 * tag) and objects/info/packs ("P <pack>" for each local pack, then an
 * empty line). A file whose content would not change is left alone unless
 * forced, as Git does. http-backend serves the same files (and HEAD) from
 * the same writers (server/http.c), and the WebDAV push rewrites info/refs
 * with pw_dumb_info_refs_line and objects/info/packs with
 * pw_dumb_info_packs_add (client/dav-push.c). */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "packwire/buf.h"
#include "packwire/dumb.h"
#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "transport/dumb.h"
#include "util/fs.h"

int pw_dumb_info_refs_line(struct pw_buf *out, const struct pw_oid *oid, const char *name,
                           const struct pw_oid *peeled)
{
	char hex[PW_MAX_HEXSZ + 1];

	if (pw_buf_addf(out, "%s\t%s\n", pw_oid_to_hex(oid, hex), name))
		return PW_ENOMEM;
	if (peeled && pw_buf_addf(out, "%s\t%s^{}\n", pw_oid_to_hex(peeled, hex), name))
		return PW_ENOMEM;
	return 0;
}

int pw_dumb_head(struct pw_repo *repo, const char *ns_prefix, struct pw_buf *out)
{
	struct pw_buf head = PW_BUF_INIT;
	struct pw_oid oid, tip;
	char *target = NULL, hex[PW_MAX_HEXSZ + 1];
	size_t ns_len = strlen(ns_prefix);
	int rc = 0;

	if (pw_buf_addf(&head, "%sHEAD", ns_prefix))
		return PW_ENOMEM;
	/* Git writes HEAD only when it resolves (an unborn HEAD gives "") */
	if (!pw_refs_read(repo, head.data, &oid, &target)) {
		if (target && !pw_refs_resolve(repo, head.data, &tip, NULL))
			rc = pw_buf_addf(out, "ref: %s\n",
			                 strncmp(target, ns_prefix, ns_len) ? target
			                                                    : target + ns_len);
		else if (!target)
			rc = pw_buf_addf(out, "%s\n", pw_oid_to_hex(&oid, hex));
	}
	pw_buf_free(&head);
	free(target);
	return rc ? PW_ENOMEM : 0;
}

struct info_refs {
	struct pw_odb *odb;
	struct pw_buf *out;
	struct pw_error *err;
	size_t strip;
	int skip_missing;
};

static int info_ref(const struct pw_ref *ref, void *data)
{
	struct info_refs *t = data;
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid peeled;
	uint64_t size;
	int type, tags = 0;

	/* a ref to a missing object fails update-server-info (Git's
	 * add_info_ref) and is left out by http-backend (show_text_ref) */
	if (pw_odb_read_header(t->odb, &ref->oid, &type, &size))
		return t->skip_missing ? 0
		                       : pw_error_set(t->err, PW_ENOTFOUND, "%s: bad object %s",
		                                      ref->name, pw_oid_to_hex(&ref->oid, hex));
	/* a broken tag chain: no peeled line (deref_tag fails) */
	if (type == PW_OBJ_TAG)
		tags = pw_odb_peel(t->odb, &ref->oid, &peeled, NULL, NULL);
	if (pw_dumb_info_refs_line(t->out, &ref->oid, ref->name + t->strip,
	                           tags > 0 ? &peeled : NULL))
		return pw_error_set(t->err, PW_ENOMEM, "out of memory");
	return 0;
}

int pw_dumb_info_refs(struct pw_repo *repo, struct pw_odb *odb, const char *prefix, size_t strip,
                      int skip_missing, struct pw_buf *out, struct pw_error *err)
{
	struct info_refs t = {odb, out, err, strip, skip_missing};
	int rc = pw_refs_foreach(repo, prefix, 0, info_ref, &t);

	if (rc && rc != PW_ENOTFOUND && rc != PW_ENOMEM)
		pw_error_set(err, rc, "listing refs: %s", pw_repo_error(repo)->msg);
	return rc;
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
	time_t mtime;
};

static void free_packs(struct pack_name *v, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(v[i].name);
	free(v);
}

/* The local packs that have both their .idx and .pack, in readdir order:
 * 0 or PW_ENOMEM. */
static int list_packs(const char *objects, struct pack_name **out, size_t *nr_out)
{
	struct pw_buf path = PW_BUF_INIT, pack = PW_BUF_INIT;
	struct pack_name *v = NULL;
	size_t nr = 0;
	struct dirent *e;
	DIR *d;
	int rc = 0;

	*out = NULL;
	*nr_out = 0;
	if (pw_buf_addf(&path, "%s/pack", objects))
		return PW_ENOMEM;
	d = opendir(path.data);
	while (d && !rc && (e = readdir(d))) {
		size_t l = strlen(e->d_name);
		struct stat st;
		void *q;

		if (l <= 9 || strncmp(e->d_name, "pack-", 5) || strcmp(e->d_name + l - 4, ".idx"))
			continue;
		pw_buf_reset(&pack);
		if (pw_buf_addf(&pack, "%s/%.*s.pack", path.data, (int)(l - 4), e->d_name)) {
			rc = PW_ENOMEM;
			break;
		}
		if (stat(pack.data, &st))
			continue;
		if (!(q = realloc(v, (nr + 1) * sizeof(*v)))) {
			rc = PW_ENOMEM;
			break;
		}
		v = q;
		v[nr].old_num = -1;
		v[nr].order = nr;
		v[nr].mtime = st.st_mtime;
		if (!(v[nr].name = malloc(l + 2))) {
			rc = PW_ENOMEM;
			break;
		}
		memcpy(v[nr].name, e->d_name, l - 4);
		memcpy(v[nr].name + l - 4, ".pack", 6);
		nr++;
	}
	if (d)
		closedir(d);
	pw_buf_free(&path);
	pw_buf_free(&pack);
	if (rc) {
		free_packs(v, nr);
		return rc;
	}
	*out = v;
	*nr_out = nr;
	return 0;
}

/* "P <name>" lines, then an empty line. */
static int format_packs(const struct pack_name *v, size_t nr, struct pw_buf *out)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (pw_buf_addf(out, "P %s\n", v[i].name))
			return PW_ENOMEM;
	return pw_buf_addch(out, '\n') ? PW_ENOMEM : 0;
}

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

static int cmp_newest(const void *a_, const void *b_)
{
	const struct pack_name *a = a_, *b = b_;

	if (a->mtime != b->mtime)
		return a->mtime < b->mtime ? 1 : -1;
	return strcmp(a->name, b->name);
}

int pw_dumb_info_packs(const char *objects_dir, struct pw_buf *out)
{
	struct pack_name *v;
	size_t nr;
	int rc = list_packs(objects_dir, &v, &nr);

	if (rc)
		return rc;
	if (nr)
		qsort(v, nr, sizeof(*v), cmp_newest);
	rc = format_packs(v, nr, out);
	free_packs(v, nr);
	return rc;
}

int pw_dumb_info_packs_add(const char *old, size_t len, const char *name, struct pw_buf *out)
{
	size_t n = strlen(name);

	if (old && n && memmem(old, len, name, n))
		return 1;
	if (pw_buf_addf(out, "P %s\n", name) || pw_buf_add(out, old, len))
		return PW_ENOMEM;
	return 0;
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
	int rc;

	if (list_packs(objects, &v, &nr) || pw_buf_addf(&path, "%s/info", objects))
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
	if (format_packs(v, nr, &out))
		goto nomem;
	rc = update_file(path.data, &out, force, err);
	goto out;
nomem:
	rc = pw_error_set(err, PW_ENOMEM, "out of memory");
out:
	free_packs(v, nr);
	pw_buf_free(&path);
	pw_buf_free(&out);
	return rc;
}

int pw_update_server_info(struct pw_repo *repo, int force, struct pw_error *err)
{
	struct pw_buf out = PW_BUF_INIT, path = PW_BUF_INIT;
	struct pw_odb *odb = NULL;
	int rc;

	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err)))
		return rc;
	rc = pw_dumb_info_refs(repo, odb, "refs/", 0, 0, &out, err);
	pw_odb_free(odb);
	if (rc)
		goto out;
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
