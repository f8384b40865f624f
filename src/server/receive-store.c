/* receive-pack's updates through a ref store: see receive-store.h. */
#include "server/receive-store.h"

#include <stdlib.h>
#include <string.h>

int pw_rp_store_prepare(const struct pw_ref_store *st, struct pw_repo *repo, struct pw_error *err)
{
	pw_error_clear(err);
	if (!st->prepare)
		return 0;
	return st->prepare(st->data, repo, "receive-pack", err);
}

static int live(const struct pw_receive_cmd *c)
{
	return !c->error && !c->skip_update && !c->run_proc;
}

int pw_rp_store_commit(const struct pw_ref_store *st, struct pw_repo *repo, int atomic,
                       struct pw_receive_cmds *cmds, const struct pw_error *store_err,
                       struct pw_error *err)
{
	struct pw_store_update *u;
	size_t i, n = 0;
	int rc;

	for (i = 0; i < cmds->nr; i++)
		n += live(&cmds->v[i]);
	if (!n)
		return 0;
	if (store_err && store_err->code) {
		pw_error_copy(err, store_err);
		rc = store_err->code;
		goto fail_all;
	}
	if (!(u = calloc(n, sizeof(*u)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto fail_all;
	}
	for (i = 0, n = 0; i < cmds->nr; i++)
		if (live(&cmds->v[i])) {
			u[n].name = cmds->v[i].name;
			u[n].old_oid = cmds->v[i].old_oid;
			u[n].new_oid = cmds->v[i].new_oid;
			n++;
		}
	rc = st->commit(st->data, repo, atomic, u, n, err);
	/* on failure too: the store may say why each one failed */
	for (i = 0, n = 0; i < cmds->nr; i++)
		if (live(&cmds->v[i])) {
			cmds->v[i].error = u[n].error;
			if (rc && !cmds->v[i].error)
				cmds->v[i].error = "ref store unavailable";
			n++;
		}
	free(u);
	return rc;
fail_all:
	for (i = 0; i < cmds->nr; i++)
		if (live(&cmds->v[i]))
			cmds->v[i].error = "ref store unavailable";
	return rc ? rc : PW_ERROR;
}
