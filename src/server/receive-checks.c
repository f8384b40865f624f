/* receive-pack: the checks of each command before any ref moves:
 * connectivity of the new history, hidden refs, ref names and the deny*
 * settings, fast-forwards, the old value, symrefs updated with their
 * target. */
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

int pw_rp__cmd_is_delete(const struct pw_receive_cmd *c)
{
	return pw_oid_is_zero(&c->new_oid);
}

static int walk_cb(const struct pw_revlist_obj *obj, void *data)
{
	(void)obj;
	(void)data;
	return 0;
}

/* A tip in a pushed pack that needs nothing from outside reaches only
 * objects of that pack. */
static int tip_in_pack(struct rp *s, const struct pw_oid *oid)
{
	uint32_t pos;

	return s->self_contained && pw_idx_find(s->self_contained, oid->id, &pos) == 1;
}

/* Everything reachable from tips exists, stopping at what the refs reach. */
static int connected(struct rp *s, const struct pw_oid *tips, size_t ntips, struct pw_error *e)
{
	struct pw_odb *odb = s->q_odb ? s->q_odb : s->main_odb;
	struct pw_revlist *rl = NULL;
	size_t i;
	int rc;

	if ((rc = pw_revlist_new(&rl, odb, PW_REVLIST_OBJECTS)))
		return pw_error_set(e, rc, "out of memory");
	for (i = 0; i < ntips && !rc; i++) {
		rc = pw_revlist_add(rl, &tips[i], NULL, 0);
		if (rc)
			pw_error_copy(e, pw_revlist_error(rl));
	}
	for (i = 0; i < s->nrefs && !rc; i++)
		if (pw_odb_exists(odb, &s->refs[i]))
			pw_revlist_add(rl, &s->refs[i], NULL, 1);
	if (!rc && (rc = pw_revlist_run(rl, walk_cb, NULL)))
		pw_error_copy(e, pw_revlist_error(rl));
	pw_revlist_free(rl);
	return rc;
}

/* A hidden ref is neither advertised nor updatable (Git's rule). */
void pw_rp__reject_hidden(struct rp *s)
{
	size_t i;

	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];

		if (c->error || !pw_hide_refs_match(&s->hidden, c->name, c->name))
			continue;
		c->error = pw_rp__cmd_is_delete(c) ? "deny deleting a hidden ref"
		                                   : "deny updating a hidden ref";
	}
}

void pw_rp__check_connectivity(struct rp *s)
{
	struct pw_oid *tips;
	struct pw_error e;
	size_t i, n = 0;

	tips = malloc((s->cmds.nr + 1) * sizeof(*tips));
	if (!tips) {
		for (i = 0; i < s->cmds.nr; i++)
			if (!s->cmds.v[i].error)
				s->cmds.v[i].error = "out of memory";
		return;
	}
	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error && !pw_rp__cmd_is_delete(&s->cmds.v[i]) &&
		    !tip_in_pack(s, &s->cmds.v[i].new_oid))
			tips[n++] = s->cmds.v[i].new_oid;
	if (n && connected(s, tips, n, &e)) {
		/* find the culprits one by one */
		for (i = 0; i < s->cmds.nr; i++) {
			struct pw_receive_cmd *c = &s->cmds.v[i];

			if (c->error || pw_rp__cmd_is_delete(c) || tip_in_pack(s, &c->new_oid))
				continue;
			if (connected(s, &c->new_oid, 1, &e)) {
				rp_error(s, "%s: %s", c->name, e.msg);
				c->error = "missing necessary objects";
			}
		}
	}
	free(tips);
}

static int object_type(struct pw_odb *odb, const struct pw_oid *oid)
{
	uint64_t size;
	int type;

	if (pw_odb_read_header(odb, oid, &type, &size))
		return 0;
	return type;
}

static void explain_current_branch(struct rp *s)
{
	rp_error(s, "The branch checked out in this non-bare repository cannot be updated by a "
	            "push:");
	rp_error(s, "its index and work tree would no longer match what was pushed (a 'git "
	            "reset --hard' would be needed).");
	rp_error(s, "Set receive.denyCurrentBranch to 'ignore' or 'warn' in the receiving "
	            "repository to allow it");
	rp_error(s, "(only if you keep its work tree up to date some other way), or to "
	            "'refuse' to keep this");
	rp_error(s, "behaviour without this explanation.");
}

/* Rules that do not need hooks: ref name, deny* settings, fast-forward. */
const char *pw_rp__check_rules(struct rp *s, struct pw_receive_cmd *c)
{
	struct pw_odb *odb = s->q_odb ? s->q_odb : s->main_odb;
	int is_head = s->head_target && !strcmp(c->name, s->head_target);
	char *wt = NULL, *gd = NULL;
	int in_wt = pw_rp__checked_out(s, c->name, &wt, &gd);

	if (in_wt < 0)
		return "out of memory";
	if (in_wt && s->deny_current == DENY_UPDATE_INSTEAD && !pw_rp__cmd_is_delete(c)) {
		if (!wt || !gd) {
			free(wt);
			free(gd);
			return "denyCurrentBranch = updateInstead needs a worktree";
		}
		c->worktree = wt;
		c->worktree_git_dir = gd;
	} else {
		free(wt);
		free(gd);
	}

	if (strncmp(c->name, "refs/", 5) || !pw_refname_is_valid(c->name + 5, 0)) {
		rp_error(s, "refusing to create funny ref '%s' remotely", c->name);
		return "funny refname";
	}
	if (pw_rp__cmd_is_delete(c)) {
		if (s->deny_deletes && !strncmp(c->name, "refs/heads/", 11)) {
			rp_error(s, "denying ref deletion for %s", c->name);
			return "deletion prohibited";
		}
		if (is_head || in_wt) {
			switch (s->deny_delete_current) {
			case DENY_IGNORE:
				break;
			case DENY_WARN:
				rp_warning(s, "deleting the current branch");
				break;
			default:
				if (s->deny_delete_current == DENY_UNSET)
					rp_error(s,
					         "Deleting the branch HEAD points to would leave "
					         "the repository without a current branch; set "
					         "receive.denyDeleteCurrent to 'warn' or 'ignore' "
					         "to "
					         "allow it.");
				rp_error(s, "refusing to delete the current branch: %s", c->name);
				return "deletion of the current branch prohibited";
			}
		}
		return NULL;
	}
	if (in_wt) {
		switch (s->deny_current) {
		case DENY_IGNORE:
			break;
		case DENY_WARN:
			rp_warning(s, "updating the current branch");
			break;
		case DENY_UPDATE_INSTEAD:
			break; /* the work tree is updated with the ref (pw_rp__update_worktree) */
		default:
			rp_error(s, "refusing to update checked out branch: %s", c->name);
			if (s->deny_current == DENY_UNSET)
				explain_current_branch(s);
			return "branch is currently checked out";
		}
	}
	if (s->deny_nff && !pw_oid_is_zero(&c->old_oid) && !strncmp(c->name, "refs/heads/", 11)) {
		int r;

		if (object_type(odb, &c->old_oid) != PW_OBJ_COMMIT ||
		    object_type(odb, &c->new_oid) != PW_OBJ_COMMIT) {
			rp_error(s, "bad sha1 objects for %s", c->name);
			return "bad ref";
		}
		r = pw_odb_is_ancestor(odb, &c->old_oid, &c->new_oid, NULL);
		if (r < 0) {
			rp_error(s, "cannot walk the history of %s", c->name);
			return "bad ref";
		}
		if (!r) {
			rp_error(s, "denying non-fast-forward %s (you should pull first)", c->name);
			return "non-fast-forward";
		}
	}
	return NULL;
}

/* The ref must still hold what the client thinks it holds. */
const char *pw_rp__check_old_value(struct rp *s, struct pw_receive_cmd *c)
{
	struct pw_oid cur;
	char *sym = NULL;
	char a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1];
	int rc = pw_refs_read(s->repo, c->name, &cur, &sym);

	if (rc == 0 && sym) {
		free(sym);
		rc = pw_refs_resolve(s->repo, c->name, &cur, NULL);
	}
	if (rc == PW_ENOTFOUND)
		pw_oid_zero(&cur, s->algo);
	else if (rc) {
		rp_error(s, "cannot read ref '%s': %s", c->name, pw_repo_error(s->repo)->msg);
		return pw_rp__cmd_is_delete(c) ? "failed to delete" : "failed to update ref";
	}
	if (pw_rp__cmd_is_delete(c) && pw_oid_is_zero(&cur)) {
		rp_warning(s, "deleting a non-existent ref");
		c->did_not_exist = 1;
		return NULL;
	}
	if (pw_oid_equal(&cur, &c->old_oid))
		return NULL;
	if (pw_oid_is_zero(&cur))
		rp_error(s, "cannot lock ref '%s': unable to resolve reference '%s'", c->name,
		         c->name);
	else if (pw_oid_is_zero(&c->old_oid))
		rp_error(s, "cannot lock ref '%s': reference already exists", c->name);
	else
		rp_error(s, "cannot lock ref '%s': is at %s but expected %s", c->name,
		         pw_oid_to_hex(&cur, a), pw_oid_to_hex(&c->old_oid, b));
	return pw_rp__cmd_is_delete(c) ? "failed to delete" : "failed to update ref";
}

/* ---- aliased updates ----------------------------------------------------- */

/* A push that names both a symref and its target (refs/heads/bar -> foo):
 * Git updates the target once and skips the symref when both ask for the
 * same change, and refuses both when they disagree. */
void pw_rp__check_aliased(struct rp *s)
{
	size_t i, j;

	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i], *dst = NULL;
		struct pw_oid o;
		char *sym = NULL, *target = NULL;
		char a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1];
		char x[PW_MAX_HEXSZ + 1], y[PW_MAX_HEXSZ + 1];
		int rc;

		if (c->error || pw_refs_read(s->repo, c->name, &o, &sym) || !sym)
			continue;
		free(sym);
		rc = pw_refs_resolve(s->repo, c->name, &o, &target);
		if (!target || (rc && rc != PW_ENOTFOUND)) {
			free(target);
			rp_error(s, "refusing update to broken symref '%s'", c->name);
			c->skip_update = 1;
			c->error = "broken symref";
			continue;
		}
		for (j = 0; j < s->cmds.nr; j++)
			if (!s->cmds.v[j].error && !strcmp(s->cmds.v[j].name, target))
				dst = &s->cmds.v[j];
		free(target);
		if (!dst)
			continue;
		c->skip_update = 1;
		if (pw_oid_equal(&c->old_oid, &dst->old_oid) &&
		    pw_oid_equal(&c->new_oid, &dst->new_oid))
			continue;
		dst->skip_update = 1;
		pw_oid_to_hex(&c->old_oid, a);
		pw_oid_to_hex(&c->new_oid, b);
		pw_oid_to_hex(&dst->old_oid, x);
		pw_oid_to_hex(&dst->new_oid, y);
		rp_error(s,
		         "refusing inconsistent update between symref '%s' (%.7s..%.7s) and its "
		         "target '%s' (%.7s..%.7s)",
		         c->name, a, b, dst->name, x, y);
		c->error = dst->error = "inconsistent aliased update";
	}
}
