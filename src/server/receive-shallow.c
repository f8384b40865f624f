/* receive-pack: pushes from shallow repositories (the client's shallow
 * lines, Git's rule for refs whose history stops at one, and
 * receive.shallowUpdate writing our shallow file). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "hash/oidmap.h"
#include "odb/fsck.h"
#include "odb/idx.h"
#include "odb/quarantine.h"
#include "pack/index-pack.h"
#include "packwire/buf.h"
#include "packwire/compat.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/receive.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "packwire/server.h"
#include "packwire/version.h"
#include "proto/adv.h"
#include "refs/hide.h"
#include "refs/reflog.h"
#include "repo/hook.h"
#include "server/compat-receive.h"
#include "server/proc-receive.h"
#include "server/pushcert.h"
#include "server/receive-cmds.h"
#include "server/receive-priv.h"
#include "util/fs.h"

/* Our own shallow file, one oid per line (absent: not shallow). fn gets
 * each valid id. */
int pw_rp__foreach_our_shallow(struct rp *s, int (*fn)(struct rp *, const struct pw_oid *, void *),
                               void *data)
{
	struct pw_buf file = PW_BUF_INIT;
	struct pw_error e;
	char *path = pw_path_join(pw_repo_git_dir(s->repo), "shallow"), *line, *save = NULL;
	int rc = 0;

	if (!path)
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	if (!pw_fs_read_file(path, &file, 1u << 28, &e) && file.len)
		for (line = strtok_r(file.data, "\n", &save); line && !rc;
		     line = strtok_r(NULL, "\n", &save)) {
			struct pw_oid oid;

			if (strlen(line) == s->algo->hexsz &&
			    !pw_oid_from_hex(&oid, line, s->algo->hexsz, s->algo))
				rc = fn(s, &oid, data);
		}
	pw_buf_free(&file);
	free(path);
	return rc;
}
/* ---- shallow pushes -------------------------------------------------------- */

/* The client's shallow commits that this push brought (we did not have
 * them): history pushed on top of them is cut there. */
int pw_rp__find_theirs(struct rp *s)
{
	size_t i;
	int created;

	for (i = 0; i < s->nshallow; i++)
		if (!pw_odb_exists(s->main_odb, &s->shallow[i]) && s->q_odb &&
		    pw_odb_exists(s->q_odb, &s->shallow[i]) &&
		    !pw_oidmap_put(&s->theirs, &s->shallow[i], &created))
			return PW_ENOMEM;
	return 0;
}

static int push_oid(struct pw_oid_array *a, const struct pw_oid *oid)
{
	return pw_oid_array_push(a, oid);
}

/* Everything tip needs, down to what we already had and to the client's
 * shallow commits (whose parents are not sent); *hits gets the shallow
 * commits reached. 0, PW_ENOTFOUND (something missing) or PW_ENOMEM. */
static int shallow_walk(struct rp *s, const struct pw_oid *tip, struct pw_oid_array *hits,
                        struct pw_error *e)
{
	struct pw_oidmap seen = PW_OIDMAP_INIT;
	struct pw_oid_array todo = {NULL, 0, 0};
	struct pw_buf buf = PW_BUF_INIT;
	int rc = push_oid(&todo, tip);

	while (!rc && todo.nr) {
		struct pw_oid oid = todo.v[--todo.nr];
		int type, created;

		if (!pw_oidmap_put(&seen, &oid, &created)) {
			rc = PW_ENOMEM;
			break;
		}
		if (!created || pw_odb_exists(s->main_odb, &oid))
			continue;
		if (pw_odb_read(s->q_odb, &oid, &type, &buf)) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(e, PW_ENOTFOUND, "missing object %s",
			                  pw_oid_to_hex(&oid, hex));
			break;
		}
		if (type == PW_OBJ_COMMIT) {
			struct pw_commit_info ci;
			size_t i;

			if (pw_commit_parse(&ci, buf.data, buf.len, s->algo, e)) {
				rc = PW_ENOTFOUND;
				break;
			}
			rc = push_oid(&todo, &ci.tree);
			if (pw_oidmap_get(&s->theirs, &oid))
				rc = rc ? rc : push_oid(hits, &oid);
			else
				for (i = 0; i < ci.nr_parents && !rc; i++)
					rc = push_oid(&todo, &ci.parents[i]);
			pw_commit_info_free(&ci);
		} else if (type == PW_OBJ_TREE) {
			struct pw_tree_entry te;
			size_t pos = 0;
			int r;

			while (!rc &&
			       (r = pw_tree_next(buf.data, buf.len, &pos, s->algo, &te, e)) == 1)
				if (te.mode != 0160000)
					rc = push_oid(&todo, &te.oid);
			if (!rc && r < 0)
				rc = PW_ENOTFOUND;
		} else if (type == PW_OBJ_TAG) {
			struct pw_tag_info ti;

			if (pw_tag_parse(&ti, buf.data, buf.len, s->algo, e))
				rc = PW_ENOTFOUND;
			else
				rc = push_oid(&todo, &ti.object);
		}
	}
	if (rc == PW_ENOMEM)
		pw_error_set(e, rc, "out of memory");
	pw_buf_free(&buf);
	free(todo.v);
	pw_oidmap_free(&seen);
	return rc;
}

static int count_one(struct rp *s, const struct pw_oid *oid, void *data)
{
	(void)s;
	(void)oid;
	return ++*(int *)data > 0 ? 1 : 0;
}

int pw_rp__is_shallow_repo(struct rp *s)
{
	int n = 0;

	pw_rp__foreach_our_shallow(s, count_one, &n);
	return n > 0;
}

/* Git's rule for a push from a shallow repository: a ref whose new history
 * stops at one of the client's shallow commits is refused ("shallow update
 * not allowed") unless receive.shallowUpdate is on, in which case those
 * commits join our shallow file. Replaces the connectivity check. */
void pw_rp__check_shallow(struct rp *s)
{
	size_t i, j;

	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];
		struct pw_oid_array hits = {NULL, 0, 0};
		struct pw_error e;

		if (c->error || pw_rp__cmd_is_delete(c))
			continue;
		memset(&e, 0, sizeof(e));
		if (shallow_walk(s, &c->new_oid, &hits, &e)) {
			rp_error(s, "%s: %s", c->name, e.msg);
			c->error = "missing necessary objects";
		} else if (hits.nr && !s->shallow_update) {
			c->error = "shallow update not allowed";
		} else {
			for (j = 0; j < hits.nr; j++)
				if (pw_oid_array_push(&s->new_shallow, &hits.v[j]))
					c->error = "out of memory";
		}
		free(hits.v);
	}
}

static int collect_shallow(struct rp *s, const struct pw_oid *oid, void *data)
{
	int created;

	(void)s;
	return pw_oidmap_put(data, oid, &created) ? 0 : PW_ENOMEM;
}

static int cmp_oid(const void *a, const void *b)
{
	return memcmp(((const struct pw_oid *)a)->id, ((const struct pw_oid *)b)->id,
	              sizeof(((const struct pw_oid *)a)->id));
}

/* receive.shallowUpdate: add the new shallow commits to our shallow file
 * (sorted, under its lock) once a ref that needs them was updated. */
void pw_rp__write_shallow(struct rp *s)
{
	struct pw_oidmap all = PW_OIDMAP_INIT;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_oid *v = NULL;
	struct pw_lock lk;
	struct pw_error e;
	char *path = NULL, hex[PW_MAX_HEXSZ + 1];
	size_t i, n = 0, live = 0;
	int created;

	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error && !pw_rp__cmd_is_delete(&s->cmds.v[i]))
			live++;
	if (!s->new_shallow.nr || !live)
		return;
	memset(&e, 0, sizeof(e));
	if (!(path = pw_path_join(pw_repo_git_dir(s->repo), "shallow")) ||
	    pw_lock_acquire(&lk, path, &e)) {
		rp_error(s, "cannot update the shallow file: %s",
		         e.msg[0] ? e.msg : "out of memory");
		free(path);
		return;
	}
	if (pw_rp__foreach_our_shallow(s, collect_shallow, &all))
		goto fail;
	for (i = 0; i < s->new_shallow.nr; i++)
		if (!pw_oidmap_put(&all, &s->new_shallow.v[i], &created))
			goto fail;
	if (!(v = malloc((all.count + 1) * sizeof(*v))))
		goto fail;
	for (i = 0; i < all.cap; i++)
		if (all.slots[i].used)
			v[n++] = all.slots[i].oid;
	qsort(v, n, sizeof(*v), cmp_oid);
	for (i = 0; i < n; i++)
		if (pw_buf_addf(&out, "%s\n", pw_oid_to_hex(&v[i], hex)))
			goto fail;
	if (pw_lock_write(&lk, out.data, out.len, &e) || pw_lock_commit(&lk, &e))
		rp_error(s, "cannot update the shallow file: %s", e.msg);
	goto done;
fail:
	pw_lock_rollback(&lk);
	rp_error(s, "cannot update the shallow file: out of memory");
done:
	free(v);
	free(path);
	pw_buf_free(&out);
	pw_oidmap_free(&all);
}
