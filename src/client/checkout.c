/* A fresh checkout after clone: every blob of the commit's tree written to
 * the work tree (regular, executable, symlink; gitlinks as empty
 * directories), then .git/index v2 with the stat data of what was written,
 * sorted by path, hashed with the repository's algorithm. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-priv.h"
#include "odb/entry.h"
#include "packwire/buf.h"
#include "packwire/client.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/repo.h"
#include "util/fs.h"

struct ientry {
	char *path;
	unsigned mode;
	struct pw_oid oid;
	struct stat st;
};

struct co {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	const char *wt;
	struct ientry *v;
	size_t nr, alloc;
	struct pw_buf path; /* relative path being built */
	struct pw_buf full;
	struct pw_error *err;
};

static int name_ok(const char *p, size_t n)
{
	size_t i;

	if (!n || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
		return 0;
	if (n == 4 && !strncasecmp(p, ".git", 4))
		return 0;
	for (i = 0; i < n; i++)
		if (p[i] == '/' || p[i] == 0)
			return 0;
	return 1;
}

static int full_path(struct co *c)
{
	pw_buf_reset(&c->full);
	if (pw_buf_adds(&c->full, c->wt) || pw_buf_addch(&c->full, '/') ||
	    pw_buf_add(&c->full, c->path.data, c->path.len))
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	return 0;
}

static int add_entry(struct co *c, unsigned mode, const struct pw_oid *oid)
{
	struct ientry *e;

	if (c->nr == c->alloc) {
		size_t a = c->alloc ? c->alloc * 2 : 256;
		void *p = realloc(c->v, a * sizeof(*c->v));

		if (!p)
			return pw_error_set(c->err, PW_ENOMEM, "out of memory");
		c->v = p;
		c->alloc = a;
	}
	e = &c->v[c->nr];
	memset(e, 0, sizeof(*e));
	e->path = strndup(c->path.data, c->path.len);
	if (!e->path)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	e->mode = mode;
	e->oid = *oid;
	if (lstat(c->full.data, &e->st))
		return pw_error_set(c->err, PW_EIO, "cannot stat '%s': %s", c->full.data,
		                    strerror(errno));
	c->nr++;
	return 0;
}

static int write_blob(struct co *c, unsigned mode, const struct pw_oid *oid)
{
	struct pw_buf data = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1];
	int type, rc, fd;

	if ((rc = pw_odb_read(c->odb, oid, &type, &data)) || type != PW_OBJ_BLOB) {
		pw_buf_free(&data);
		return pw_error_set(c->err, rc ? rc : PW_ECORRUPT,
		                    "unable to read blob %s for '%s'", pw_oid_to_hex(oid, hex),
		                    c->path.data);
	}
	if (mode == 0120000) {
		if (symlink(data.data, c->full.data))
			rc = pw_error_set(c->err, PW_EIO, "cannot create symlink '%s': %s",
			                  c->full.data, strerror(errno));
	} else {
		fd = open(c->full.data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		          mode == 0100755 ? 0777 : 0666);
		if (fd < 0) {
			rc = pw_error_set(c->err, PW_EIO, "cannot create '%s': %s", c->full.data,
			                  strerror(errno));
		} else {
			rc = pw_write_full(fd, data.data, data.len, c->err);
			if (close(fd) && !rc)
				rc = pw_error_set(c->err, PW_EIO, "cannot write '%s': %s",
				                  c->full.data, strerror(errno));
		}
	}
	pw_buf_free(&data);
	return rc ? rc : add_entry(c, mode, oid);
}

static int walk_tree(struct co *c, const struct pw_oid *tree, int depth)
{
	struct pw_buf data = PW_BUF_INIT;
	struct pw_tree_entry te;
	char hex[PW_MAX_HEXSZ + 1];
	size_t pos = 0, base = c->path.len;
	int type, rc;

	if (depth > 4096)
		return pw_error_set(c->err, PW_ECORRUPT, "tree nesting too deep");
	if ((rc = pw_odb_read(c->odb, tree, &type, &data)) || type != PW_OBJ_TREE) {
		pw_buf_free(&data);
		return pw_error_set(c->err, rc ? rc : PW_ECORRUPT, "unable to read tree %s",
		                    pw_oid_to_hex(tree, hex));
	}
	while ((rc = pw_tree_next(data.data, data.len, &pos, c->algo, &te, c->err)) == 1) {
		unsigned mode;

		if (!name_ok(te.name, te.name_len)) {
			rc = pw_error_set(c->err, PW_ECORRUPT, "invalid path '%.*s'",
			                  (int)te.name_len, te.name);
			break;
		}
		pw_buf_setlen(&c->path, base);
		if ((base && pw_buf_addch(&c->path, '/')) ||
		    pw_buf_add(&c->path, te.name, te.name_len)) {
			rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
			break;
		}
		if ((rc = full_path(c)))
			break;
		if ((te.mode & 0170000) == 0040000) {
			if (mkdir(c->full.data, 0777) && errno != EEXIST) {
				rc = pw_error_set(c->err, PW_EIO,
				                  "cannot create directory '%s': %s", c->full.data,
				                  strerror(errno));
				break;
			}
			if ((rc = walk_tree(c, &te.oid, depth + 1)))
				break;
			continue;
		}
		if ((te.mode & 0170000) == 0160000) {
			if (mkdir(c->full.data, 0777) && errno != EEXIST) {
				rc = pw_error_set(c->err, PW_EIO,
				                  "cannot create directory '%s': %s", c->full.data,
				                  strerror(errno));
				break;
			}
			if ((rc = add_entry(c, 0160000, &te.oid)))
				break;
			continue;
		}
		if ((te.mode & 0170000) == 0120000)
			mode = 0120000;
		else if ((te.mode & 0170000) == 0100000)
			mode = (te.mode & 0111) ? 0100755 : 0100644;
		else {
			rc = pw_error_set(c->err, PW_ECORRUPT, "bad mode %o for '%s'", te.mode,
			                  c->path.data);
			break;
		}
		if ((rc = write_blob(c, mode, &te.oid)))
			break;
	}
	pw_buf_setlen(&c->path, base);
	pw_buf_free(&data);
	return rc < 0 ? rc : 0;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct ientry *x = a, *y = b;

	return strcmp(x->path, y->path);
}

static int put32(struct pw_buf *b, uint32_t v)
{
	unsigned char c[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16),
	                      (unsigned char)(v >> 8), (unsigned char)v};

	return pw_buf_add(b, c, 4);
}

static int write_index(struct co *c, const char *git_dir)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_hash_ctx ctx;
	uint8_t sum[PW_MAX_RAWSZ];
	struct pw_lock lk = {0};
	char *path;
	size_t i;
	int rc = 0;

	if (c->nr)
		qsort(c->v, c->nr, sizeof(*c->v), cmp_entry);
	rc = pw_buf_add(&b, "DIRC", 4);
	if (!rc)
		rc = put32(&b, 2);
	if (!rc)
		rc = put32(&b, (uint32_t)c->nr);
	for (i = 0; !rc && i < c->nr; i++) {
		const struct ientry *e = &c->v[i];
		size_t nl = strlen(e->path), fixed = 40 + c->algo->rawsz + 2;
		size_t total = (fixed + nl + 8) & ~(size_t)7;
		int is_link = e->mode == 0160000;
		unsigned char flags[2];

		rc = put32(&b, is_link ? 0 : (uint32_t)e->st.st_ctim.tv_sec);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_ctim.tv_nsec);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_mtim.tv_sec);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_mtim.tv_nsec);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_dev);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_ino);
		rc = rc ? rc : put32(&b, e->mode);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_uid);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_gid);
		rc = rc ? rc : put32(&b, is_link ? 0 : (uint32_t)e->st.st_size);
		rc = rc ? rc : pw_buf_add(&b, e->oid.id, c->algo->rawsz);
		flags[0] = (unsigned char)((nl < 0xfff ? nl : 0xfff) >> 8);
		flags[1] = (unsigned char)(nl < 0xfff ? nl : 0xfff);
		rc = rc ? rc : pw_buf_add(&b, flags, 2);
		rc = rc ? rc : pw_buf_add(&b, e->path, nl);
		for (size_t k = fixed + nl; !rc && k < total; k++)
			rc = pw_buf_addch(&b, 0);
	}
	if (rc) {
		pw_buf_free(&b);
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	}
	pw_hash_init_checksum(&ctx, c->algo); /* the index's trailer, not an object id */
	pw_hash_update(&ctx, b.data, b.len);
	pw_hash_final_checksum(&ctx, sum);
	if (pw_buf_add(&b, sum, c->algo->rawsz)) {
		pw_buf_free(&b);
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	}
	path = pw_path_join(git_dir, "index");
	if (!path) {
		pw_buf_free(&b);
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	}
	if (!(rc = pw_lock_acquire(&lk, path, c->err))) {
		rc = pw_lock_write(&lk, b.data, b.len, c->err);
		if (!rc)
			rc = pw_lock_commit(&lk, c->err);
		else
			pw_lock_rollback(&lk);
	}
	free(path);
	pw_buf_free(&b);
	return rc;
}

int pw_checkout_fresh(struct pw_repo *repo, const struct pw_oid *commit, struct pw_error *err)
{
	struct pw_commit_info ci;
	struct pw_buf data = PW_BUF_INIT;
	struct co c;
	size_t i;
	int type, rc;

	memset(&c, 0, sizeof(c));
	c.algo = pw_repo_algo(repo);
	c.wt = pw_repo_work_tree(repo);
	c.err = err;
	if (!c.wt)
		return pw_error_set(err, PW_EINVAL, "this operation must be run in a work tree");
	if ((rc = pw_odb_open(&c.odb, pw_repo_objects_dir(repo), c.algo, err)))
		return rc;
	if ((rc = pw_odb_read(c.odb, commit, &type, &data)) || type != PW_OBJ_COMMIT ||
	    pw_commit_parse(&ci, data.data, data.len, c.algo, err)) {
		char hex[PW_MAX_HEXSZ + 1];

		rc = pw_error_set(err, rc ? rc : PW_ECORRUPT, "unable to read commit %s",
		                  pw_oid_to_hex(commit, hex));
		goto out;
	}
	rc = walk_tree(&c, &ci.tree, 0);
	pw_commit_info_free(&ci);
	if (!rc)
		rc = write_index(&c, pw_repo_git_dir(repo));
out:
	for (i = 0; i < c.nr; i++)
		free(c.v[i].path);
	free(c.v);
	pw_buf_free(&data);
	pw_buf_free(&c.path);
	pw_buf_free(&c.full);
	pw_odb_free(c.odb);
	return rc;
}

/* ---- objects a checkout needs that a partial clone did not receive ------ */

struct missing {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	struct pw_oid *v;
	size_t nr, alloc;
	struct pw_error *err;
};

static int add_missing(struct missing *m, const struct pw_oid *oid)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (pw_oid_equal(&m->v[i], oid))
			return 0;
	if (m->nr == m->alloc) {
		size_t n = m->alloc ? 2 * m->alloc : 64;
		struct pw_oid *v = realloc(m->v, n * sizeof(*v));

		if (!v)
			return pw_error_set(m->err, PW_ENOMEM, "out of memory");
		m->v = v;
		m->alloc = n;
	}
	m->v[m->nr++] = *oid;
	return 0;
}

static int find_missing(struct missing *m, const struct pw_oid *tree, int depth)
{
	struct pw_buf data = PW_BUF_INIT;
	struct pw_tree_entry te;
	char hex[PW_MAX_HEXSZ + 1];
	size_t pos = 0;
	int type, rc;

	if (depth > 4096)
		return pw_error_set(m->err, PW_ECORRUPT, "tree nesting too deep");
	/* a missing tree (tree:<depth> filter) comes with everything below it */
	if (!pw_odb_exists(m->odb, tree))
		return add_missing(m, tree);
	if ((rc = pw_odb_read(m->odb, tree, &type, &data)) || type != PW_OBJ_TREE) {
		pw_buf_free(&data);
		return pw_error_set(m->err, rc ? rc : PW_ECORRUPT, "unable to read tree %s",
		                    pw_oid_to_hex(tree, hex));
	}
	while ((rc = pw_tree_next(data.data, data.len, &pos, m->algo, &te, m->err)) == 1) {
		unsigned kind = te.mode & 0170000;
		int r = 0;

		if (kind == 0040000)
			r = find_missing(m, &te.oid, depth + 1);
		else if ((kind == 0100000 || kind == 0120000) && !pw_odb_exists(m->odb, &te.oid))
			r = add_missing(m, &te.oid);
		if (r) {
			rc = r;
			break;
		}
	}
	pw_buf_free(&data);
	return rc < 0 ? rc : 0;
}

int pw_checkout__missing_blobs(struct pw_repo *repo, const struct pw_oid *commit,
                               struct pw_oid **out, size_t *nr, struct pw_error *err)
{
	struct pw_commit_info ci;
	struct pw_buf data = PW_BUF_INIT;
	struct missing m;
	int type, rc;

	memset(&m, 0, sizeof(m));
	m.algo = pw_repo_algo(repo);
	m.err = err;
	*out = NULL;
	*nr = 0;
	if ((rc = pw_odb_open(&m.odb, pw_repo_objects_dir(repo), m.algo, err)))
		return rc;
	if ((rc = pw_odb_read(m.odb, commit, &type, &data)) || type != PW_OBJ_COMMIT ||
	    pw_commit_parse(&ci, data.data, data.len, m.algo, err)) {
		char hex[PW_MAX_HEXSZ + 1];

		rc = pw_error_set(err, rc ? rc : PW_ECORRUPT, "unable to read commit %s",
		                  pw_oid_to_hex(commit, hex));
	} else {
		rc = find_missing(&m, &ci.tree, 0);
		pw_commit_info_free(&ci);
	}
	pw_buf_free(&data);
	pw_odb_free(m.odb);
	if (rc) {
		free(m.v);
		return rc;
	}
	*out = m.v;
	*nr = m.nr;
	return 0;
}
