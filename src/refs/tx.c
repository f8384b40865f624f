/* Ref transactions, all or nothing: take every "<ref>.lock" (O_EXCL), check
 * old values while holding the locks, write the new values into the lock
 * files, rewrite packed-refs under its own lock when a packed ref is
 * deleted, and only then rename/unlink. Any failure before that point
 * removes every lock and leaves the refs untouched. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "refs/refs-priv.h"
#include "util/fs.h"

struct upd {
	char *name;   /* as given */
	char *target; /* after following symrefs (the file we lock) */
	struct pw_oid new_oid, old_oid;
	int has_old, del;
	unsigned flags;
	struct pw_lock lk;
	int locked;
	int exists_loose, exists_packed;
};

struct pw_ref_tx {
	struct pw_repo *repo;
	struct upd *v;
	size_t nr, alloc;
	int done;
	struct pw_error err;
};

int pw_ref_tx_new(struct pw_ref_tx **out, struct pw_repo *repo)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return pw_error_set(pw_repo_error(repo), PW_ENOMEM, "out of memory");
	(*out)->repo = repo;
	return 0;
}

const struct pw_error *pw_ref_tx_error(const struct pw_ref_tx *tx)
{
	return &tx->err;
}

void pw_ref_tx_free(struct pw_ref_tx *tx)
{
	size_t i;

	if (!tx)
		return;
	for (i = 0; i < tx->nr; i++) {
		if (tx->v[i].locked)
			pw_lock_rollback(&tx->v[i].lk);
		free(tx->v[i].name);
		free(tx->v[i].target);
	}
	free(tx->v);
	free(tx);
}

static int queue(struct pw_ref_tx *tx, const char *name, const struct pw_oid *new_oid,
                 const struct pw_oid *old_oid, unsigned flags, int del)
{
	const struct pw_hash_algo *algo = pw_repo_algo(tx->repo);
	struct upd *u;

	if (tx->done)
		return pw_error_set(&tx->err, PW_EINVAL, "transaction already committed");
	if (!pw_refname_is_storable(name))
		return pw_error_set(&tx->err, PW_EINVAL,
		                    "refusing to update ref with bad name '%s'", name);
	if ((new_oid && new_oid->algo != algo->id) || (old_oid && old_oid->algo != algo->id))
		return pw_error_set(&tx->err, PW_EINVAL,
		                    "ref '%s': object id is not a %s id (repository format)", name,
		                    algo->name);
	if (!del && pw_oid_is_zero(new_oid))
		return pw_error_set(&tx->err, PW_EINVAL,
		                    "ref '%s': refusing to write the null object id (use delete)",
		                    name);
	if (tx->nr == tx->alloc) {
		size_t n = tx->alloc ? tx->alloc * 2 : 8;
		struct upd *v = realloc(tx->v, n * sizeof(*v));

		if (!v)
			return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
		tx->v = v;
		tx->alloc = n;
	}
	u = &tx->v[tx->nr];
	memset(u, 0, sizeof(*u));
	u->lk.fd = -1;
	if (!(u->name = strdup(name)))
		return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	if (new_oid)
		u->new_oid = *new_oid;
	if (old_oid) {
		u->old_oid = *old_oid;
		u->has_old = 1;
	}
	u->del = del;
	u->flags = flags;
	tx->nr++;
	return 0;
}

int pw_ref_tx_update(struct pw_ref_tx *tx, const char *name, const struct pw_oid *new_oid,
                     const struct pw_oid *old_oid, unsigned flags)
{
	if (!new_oid)
		return pw_error_set(&tx->err, PW_EINVAL, "ref '%s': no new value", name);
	return queue(tx, name, new_oid, old_oid, flags, 0);
}

int pw_ref_tx_delete(struct pw_ref_tx *tx, const char *name, const struct pw_oid *old_oid)
{
	return queue(tx, name, NULL, old_oid, 0, 1);
}

static int cmp_upd(const void *a, const void *b)
{
	return strcmp(((const struct upd *)a)->target, ((const struct upd *)b)->target);
}

/* The name the update really writes: follow symrefs unless NO_DEREF. */
static int find_target(struct pw_ref_tx *tx, struct upd *u)
{
	struct pw_oid oid;
	char *cur = strdup(u->name), *t;
	int depth;

	if (!cur)
		return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	for (depth = 0; !(u->flags & PW_REF_NO_DEREF) && !u->del; depth++) {
		int rc = pw_refs__loose_read(tx->repo, cur, &oid, &t);

		if (rc == PW_ENOTFOUND || (!rc && !t))
			break;
		if (rc) {
			free(cur);
			return pw_error_copy(&tx->err, pw_repo_error(tx->repo));
		}
		free(cur);
		cur = t;
		if (depth >= PW_REFS_MAX_DEPTH) {
			free(cur);
			return pw_error_set(&tx->err, PW_ECORRUPT,
			                    "cannot lock ref '%s': symbolic refs nested too deeply",
			                    u->name);
		}
	}
	u->target = cur;
	return 0;
}

static int sorted_has(char **names, size_t nr, const char *name, size_t len, int as_prefix)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(names[mid], name, len);

		if (!c && !as_prefix && names[mid][len])
			c = 1;
		if (!c)
			return (int)mid + 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int being_deleted(struct pw_ref_tx *tx, const char *name)
{
	size_t i;

	for (i = 0; i < tx->nr; i++)
		if (tx->v[i].del && !strcmp(tx->v[i].target, name))
			return 1;
	return 0;
}

/* A new ref "a/b" cannot coexist with "a" or "a/b/c" (file vs directory). */
static int check_df(struct pw_ref_tx *tx, struct upd *u, char **names, size_t nr)
{
	const char *t = u->target, *s;
	struct pw_buf pre = PW_BUF_INIT;
	int idx;

	for (s = strchr(t, '/'); s; s = strchr(s + 1, '/')) {
		idx = sorted_has(names, nr, t, (size_t)(s - t), 0);
		if (idx && !being_deleted(tx, names[idx - 1]))
			return pw_error_set(&tx->err, PW_EEXISTS,
			                    "cannot lock ref '%s': '%s' exists; cannot create '%s'",
			                    u->name, names[idx - 1], t);
	}
	if (pw_buf_addf(&pre, "%s/", t))
		return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	idx = sorted_has(names, nr, pre.data, pre.len, 1);
	pw_buf_free(&pre);
	if (idx && !being_deleted(tx, names[idx - 1]))
		return pw_error_set(&tx->err, PW_EEXISTS,
		                    "cannot lock ref '%s': '%s' exists; cannot create '%s'",
		                    u->name, names[idx - 1], t);
	return 0;
}

/* Remove empty directories under dir (left by deleted refs). */
static void remove_empty_dirs(const char *dir)
{
	rmdir(dir);
}

/* Try to remove now-empty parent directories of a deleted loose ref, but
 * keep refs/ and its direct children (refs/heads, refs/tags). */
static void prune_parents(struct pw_repo *repo, const char *name)
{
	char *p = strdup(name), *slash;

	if (!p)
		return;
	while ((slash = strrchr(p, '/'))) {
		char *full;

		*slash = '\0';
		if (!strchr(p, '/'))
			break; /* "refs" */
		if (!strchr(strchr(p, '/') + 1, '/'))
			break; /* "refs/heads" */
		if (!(full = pw_path_join(pw_repo_git_dir(repo), p)))
			break;
		if (rmdir(full)) {
			free(full);
			break;
		}
		free(full);
	}
	free(p);
}

static int lock_one(struct pw_ref_tx *tx, struct upd *u)
{
	char *path = pw_path_join(pw_repo_git_dir(tx->repo), u->target), *slash;
	struct pw_error e = {0};
	struct stat st;
	int rc;

	if (!path)
		return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	slash = strrchr(path, '/');
	*slash = '\0';
	rc = pw_fs_mkdir_p(path, &e);
	*slash = '/';
	if (rc) {
		free(path);
		return pw_error_set(&tx->err, PW_EEXISTS, "cannot lock ref '%s': %s", u->name,
		                    e.msg);
	}
	if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
		/* a leftover empty directory where the ref file goes */
		remove_empty_dirs(path);
		if (!stat(path, &st) && S_ISDIR(st.st_mode)) {
			rc = pw_error_set(&tx->err, PW_EEXISTS,
			                  "cannot lock ref '%s': there is a non-empty directory "
			                  "'%s' blocking reference '%s'",
			                  u->name, path, u->target);
			free(path);
			return rc;
		}
	}
	rc = pw_lock_acquire(&u->lk, path, &e);
	free(path);
	if (rc)
		return pw_error_set(&tx->err, rc, "cannot lock ref '%s': %s", u->name, e.msg);
	u->locked = 1;
	return 0;
}

/* Compare the current value (read under the lock) with the expected one. */
static int check_old(struct pw_ref_tx *tx, struct upd *u, struct pw_packed *packed)
{
	struct pw_oid cur;
	char *sym = NULL, hex1[PW_MAX_HEXSZ + 1], hex2[PW_MAX_HEXSZ + 1];
	struct pw_packed_ref *pr = pw_refs__packed_find(packed, u->target);
	int rc = pw_refs__loose_read(tx->repo, u->target, &cur, &sym), exists;

	if (rc && rc != PW_ENOTFOUND)
		return pw_error_set(&tx->err, rc, "cannot lock ref '%s': %s", u->name,
		                    pw_repo_error(tx->repo)->msg);
	u->exists_loose = !rc;
	u->exists_packed = pr != NULL;
	if (rc && pr)
		cur = pr->oid;
	exists = u->exists_loose || u->exists_packed;
	free(sym);
	if (!u->has_old)
		return 0;
	if (pw_oid_is_zero(&u->old_oid)) {
		if (exists)
			return pw_error_set(&tx->err, PW_EMISMATCH,
			                    "cannot lock ref '%s': reference already exists",
			                    u->name);
		return 0;
	}
	if (!exists)
		return pw_error_set(&tx->err, PW_EMISMATCH,
		                    "cannot lock ref '%s': reference is missing but expected %s",
		                    u->name, pw_oid_to_hex(&u->old_oid, hex1));
	if (sym || !pw_oid_equal(&cur, &u->old_oid)) {
		if (sym)
			pw_oid_zero(&cur, pw_repo_algo(tx->repo));
		return pw_error_set(&tx->err, PW_EMISMATCH,
		                    "cannot lock ref '%s': is at %s but expected %s", u->name,
		                    pw_oid_to_hex(&cur, hex1), pw_oid_to_hex(&u->old_oid, hex2));
	}
	return 0;
}

/* Write packed-refs without the refs this transaction deletes. */
static int rewrite_packed(struct pw_ref_tx *tx, struct pw_packed *p, struct pw_lock *lk)
{
	struct pw_buf b = PW_BUF_INIT;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = pw_buf_adds(&b, "# pack-refs with:");

	if (!rc && p->peeled)
		rc = pw_buf_adds(&b, " peeled");
	if (!rc && p->fully_peeled)
		rc = pw_buf_adds(&b, " fully-peeled");
	if (!rc)
		rc = pw_buf_adds(&b, " sorted \n");
	for (i = 0; !rc && i < p->nr; i++) {
		if (being_deleted(tx, p->v[i].name))
			continue;
		rc = pw_buf_addf(&b, "%s %s\n", pw_oid_to_hex(&p->v[i].oid, hex), p->v[i].name);
		if (!rc && p->v[i].has_peeled)
			rc = pw_buf_addf(&b, "^%s\n", pw_oid_to_hex(&p->v[i].peeled, hex));
	}
	if (rc) {
		pw_buf_free(&b);
		return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	}
	rc = pw_lock_write(lk, b.data, b.len, &tx->err);
	pw_buf_free(&b);
	return rc;
}

static void rollback_all(struct pw_ref_tx *tx)
{
	size_t i;

	for (i = 0; i < tx->nr; i++) {
		if (tx->v[i].locked) {
			pw_lock_rollback(&tx->v[i].lk);
			tx->v[i].locked = 0;
		}
	}
}

int pw_ref_tx_commit(struct pw_ref_tx *tx)
{
	struct pw_packed *packed;
	struct pw_lock plk = {NULL, NULL, -1};
	char **names = NULL, hex[PW_MAX_HEXSZ + 2];
	size_t nr = 0, i;
	int rc = 0, need_packed = 0, first_error;
	struct pw_repo *repo = tx->repo;

	if (tx->done)
		return pw_error_set(&tx->err, PW_EINVAL, "transaction already committed");
	tx->done = 1;
	pw_error_clear(&tx->err);
	for (i = 0; i < tx->nr; i++)
		if ((rc = find_target(tx, &tx->v[i])))
			return rc;
	if (tx->nr > 1)
		qsort(tx->v, tx->nr, sizeof(tx->v[0]), cmp_upd);
	for (i = 1; i < tx->nr; i++)
		if (!strcmp(tx->v[i - 1].target, tx->v[i].target))
			return pw_error_set(&tx->err, PW_EINVAL,
			                    "multiple updates for ref '%s' not allowed",
			                    tx->v[i].target);
	if ((rc = pw_refs__all_names(repo, &names, &nr)))
		return pw_error_copy(&tx->err, pw_repo_error(repo));

	/* 1. lock everything, each lock written with its new value and closed
	 * at once (a transaction of 100000 refs holds no 100000 descriptors;
	 * nothing is visible before the renames of step 4) */
	for (i = 0; i < tx->nr && !rc; i++) {
		struct upd *u = &tx->v[i];
		size_t n;

		if (!u->del && !sorted_has(names, nr, u->target, strlen(u->target), 0) &&
		    (rc = check_df(tx, u, names, nr)))
			break;
		if ((rc = lock_one(tx, u)))
			break;
		if (!u->del) {
			pw_oid_to_hex(&u->new_oid, hex);
			n = strlen(hex);
			hex[n] = '\n';
			rc = pw_lock_write(&u->lk, hex, n + 1, &tx->err);
		}
		if (!rc)
			rc = pw_lock_close(&u->lk, &tx->err);
	}
	pw_refs__free_names(names, nr);
	if (!rc && (rc = pw_refs__packed(repo, &packed)))
		pw_error_copy(&tx->err, pw_repo_error(repo));
	/* 2. verify the old values, read under the locks */
	for (i = 0; i < tx->nr && !rc; i++) {
		rc = check_old(tx, &tx->v[i], packed);
		if (tx->v[i].del)
			need_packed |= tx->v[i].exists_packed;
	}
	/* 3. packed-refs without the deleted refs */
	if (!rc && need_packed) {
		char *pp = pw_path_join(pw_repo_git_dir(repo), "packed-refs");
		struct pw_error e = {0};

		if (!pp) {
			rc = pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
		} else if ((rc = pw_lock_acquire(&plk, pp, &e))) {
			pw_error_set(&tx->err, rc, "cannot lock packed-refs: %s", e.msg);
		} else {
			/* re-read under the lock: another writer may have repacked */
			pw_refs__packed_invalidate(repo);
			if ((rc = pw_refs__packed(repo, &packed)))
				pw_error_copy(&tx->err, pw_repo_error(repo));
			else
				rc = rewrite_packed(tx, packed, &plk);
			if (rc)
				pw_lock_rollback(&plk);
		}
		free(pp);
	}
	if (rc) {
		rollback_all(tx);
		return rc;
	}
	/* 4. point of no return: publish */
	first_error = 0;
	if (need_packed) {
		rc = pw_lock_commit(&plk, &tx->err);
		pw_refs__packed_invalidate(repo);
		if (rc) {
			rollback_all(tx);
			return rc;
		}
	}
	for (i = 0; i < tx->nr; i++) {
		struct upd *u = &tx->v[i];

		if (u->del) {
			if (u->exists_loose) {
				char *path = pw_path_join(pw_repo_git_dir(repo), u->target);

				if (!path || (unlink(path) && errno != ENOENT)) {
					if (!first_error)
						first_error = pw_error_set(
						        &tx->err, PW_EIO,
						        "cannot delete ref '%s': %s", u->name,
						        path ? strerror(errno) : "out of memory");
				}
				free(path);
			}
			pw_lock_rollback(&u->lk);
			u->locked = 0;
			prune_parents(repo, u->target);
		} else {
			rc = pw_lock_commit(&u->lk, &tx->err);
			u->locked = 0;
			if (rc && !first_error)
				first_error = rc;
		}
	}
	return first_error;
}

int pw_ref_tx_commit_initial(struct pw_ref_tx *tx)
{
	struct pw_repo *repo = tx->repo;
	struct pw_lock lk = {NULL, NULL, -1};
	struct pw_buf b = PW_BUF_INIT;
	char **names = NULL, hex[PW_MAX_HEXSZ + 1], *pp;
	size_t nr = 0, i;
	int rc;

	if (tx->done)
		return pw_error_set(&tx->err, PW_EINVAL, "transaction already committed");
	for (i = 0; i < tx->nr; i++) {
		const struct upd *u = &tx->v[i];

		if (u->del || strncmp(u->name, "refs/", 5) ||
		    (u->has_old && !pw_oid_is_zero(&u->old_oid)))
			return pw_ref_tx_commit(tx);
	}
	if ((rc = pw_refs__all_names(repo, &names, &nr)))
		return pw_error_copy(&tx->err, pw_repo_error(repo));
	pw_refs__free_names(names, nr);
	if (nr)
		return pw_ref_tx_commit(tx); /* not the first refs after all */
	tx->done = 1;
	pw_error_clear(&tx->err);
	for (i = 0; i < tx->nr; i++)
		if (!(tx->v[i].target = strdup(tx->v[i].name)))
			return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	if (tx->nr > 1)
		qsort(tx->v, tx->nr, sizeof(tx->v[0]), cmp_upd);
	for (i = 1; i < tx->nr; i++) {
		const char *a = tx->v[i - 1].target, *c = tx->v[i].target;
		size_t la = strlen(a);

		if (!strcmp(a, c))
			return pw_error_set(&tx->err, PW_EINVAL,
			                    "multiple updates for ref '%s' not allowed", c);
		/* "a" and "a/b": sorted, the one is right before the other */
		if (!strncmp(a, c, la) && c[la] == '/')
			return pw_error_set(&tx->err, PW_EEXISTS,
			                    "cannot lock ref '%s': '%s' exists; cannot create '%s'",
			                    c, a, c);
	}
	rc = pw_buf_adds(&b, "# pack-refs with: sorted \n");
	for (i = 0; !rc && i < tx->nr; i++)
		rc = pw_buf_addf(&b, "%s %s\n", pw_oid_to_hex(&tx->v[i].new_oid, hex),
		                 tx->v[i].target);
	if (rc) {
		pw_buf_free(&b);
		return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	}
	if (!(pp = pw_path_join(pw_repo_git_dir(repo), "packed-refs"))) {
		pw_buf_free(&b);
		return pw_error_set(&tx->err, PW_ENOMEM, "out of memory");
	}
	if ((rc = pw_lock_acquire(&lk, pp, &tx->err)))
		pw_error_wrap(&tx->err, "cannot lock packed-refs");
	else if ((rc = pw_lock_write(&lk, b.data, b.len, &tx->err)))
		pw_lock_rollback(&lk);
	else
		rc = pw_lock_commit(&lk, &tx->err);
	pw_refs__packed_invalidate(repo);
	free(pp);
	pw_buf_free(&b);
	return rc;
}
