/* Negotiation: which haves we share with the client, whether its haves
 * already cover every want ("ready"), and which wants a client may ask for. */
#include <stdlib.h>
#include <string.h>

#include "packwire/object.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "server/session.h"
#include "server/upload-parts.h"

int pw_srv_got_have(struct pw_upload_session *s, const struct pw_oid *oid)
{
	struct pw_graph *g = &s->graph;
	uint64_t size;
	uint32_t idx, i;
	int type, rc;
	struct pw_oid storage;

	/* a client of the other algorithm: its have as our id, unknown = not common */
	if (s->compat && (rc = pw_srv_compat_have(s, oid, &storage)))
		return rc == PW_ENOTFOUND ? 0 : rc;
	if (s->compat)
		oid = &storage;
	rc = pw_odb_read_header(s->odb, oid, &type, &size);
	if (rc == PW_ENOTFOUND)
		return 0;
	if (rc)
		return pw_error_copy(&s->err, pw_odb_error(s->odb));
	if (type != PW_OBJ_COMMIT) {
		rc = pw_srv__push_oid(s, &s->have_objs, oid);
		return rc ? rc : 1;
	}
	if ((rc = pw_graph_lookup(g, oid, &idx)))
		return rc;
	rc = pw_graph_parse(g, idx);
	if (rc == PW_ENOTFOUND)
		return 0;
	if (rc)
		return rc;
	if (!(g->v[idx].flags & G_HAVE_LISTED)) {
		g->v[idx].flags |= G_HAVE_LISTED | G_THEY_HAVE;
		if ((rc = pw_srv__push_oid(s, &s->have_objs, oid)))
			return rc;
		if (!s->have_oldest || g->v[idx].date < s->oldest_have) {
			s->oldest_have = g->v[idx].date;
			s->have_oldest = 1;
		}
		for (i = 0; i < g->v[idx].nparents; i++)
			g->v[pw_graph_parent(g, idx, i)].flags |= G_THEY_HAVE;
	}
	return 1;
}

/* Is commit `want` reachable from a commit the client has, looking no
 * further back than the oldest have? */
/* Push c's parents not yet marked in this epoch onto the stack (marking
 * them); PW_ENOMEM when the stack cannot grow. */
static int push_parents(struct pw_graph *g, uint32_t c, uint32_t epoch, uint32_t **stack,
                        size_t *nr, size_t *alloc)
{
	uint32_t i;

	for (i = 0; i < g->v[c].nparents; i++) {
		uint32_t p = pw_graph_parent(g, c, i);

		if (g->v[p].mark == epoch)
			continue;
		g->v[p].mark = epoch;
		if (*nr == *alloc) {
			uint32_t *ns = realloc(*stack, *alloc * 2 * sizeof(*ns));

			if (!ns)
				return PW_ENOMEM;
			*stack = ns;
			*alloc *= 2;
		}
		(*stack)[(*nr)++] = p;
	}
	return 0;
}

static int reaches_have(struct pw_upload_session *s, uint32_t want)
{
	struct pw_graph *g = &s->graph;
	uint32_t *stack = NULL, epoch = ++g->epoch;
	size_t nr = 0, alloc = 0;
	int found = 0, rc = 0;

	g->v[want].mark = epoch;
	if (!(stack = malloc(64 * sizeof(*stack))))
		return pw_error_set(&s->err, PW_ENOMEM, "out of memory");
	alloc = 64;
	stack[nr++] = want;
	while (nr && !found) {
		uint32_t c = stack[--nr];

		if (g->v[c].flags & (G_THEY_HAVE | G_COMMON_KNOWN)) {
			found = 1;
			break;
		}
		rc = pw_graph_parse(g, c);
		if (rc == PW_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			break;
		if (c != want && g->v[c].date < s->oldest_have)
			continue;
		if (push_parents(g, c, epoch, &stack, &nr, &alloc)) {
			rc = pw_error_set(&s->err, PW_ENOMEM, "out of memory");
			goto out;
		}
	}
out:
	free(stack);
	return rc ? rc : found;
}

int pw_srv_ok_to_give_up(struct pw_upload_session *s)
{
	size_t i;
	int rc;

	if (!s->have_objs.nr)
		return 0;
	for (i = 0; i < s->args.wants.nr; i++) {
		struct pw_oid peeled;
		uint32_t idx;

		if ((rc = pw_srv_peel(s, &s->args.wants.v[i], &peeled)) < 0)
			return rc;
		if ((rc = pw_graph_lookup(&s->graph, &peeled, &idx)))
			return rc;
		rc = pw_graph_parse(&s->graph, idx);
		if (rc == PW_ENOTFOUND)
			continue; /* not a commit: ancestry says nothing, as Git */
		if (rc)
			return rc;
		if (s->graph.v[idx].flags & G_COMMON_KNOWN)
			continue;
		rc = reaches_have(s, idx);
		if (rc <= 0)
			return rc;
		s->graph.v[idx].flags |= G_COMMON_KNOWN;
	}
	return 1;
}

/* Are all these commits reachable from our refs? Walks back from the ref
 * tips no further than a day before the oldest of them. */
static int reachable_from_refs(struct pw_upload_session *s, uint32_t *todo, size_t n)
{
	struct pw_graph *g = &s->graph;
	uint32_t *stack = NULL, epoch = ++g->epoch;
	size_t nr = 0, alloc = 0, left = n, i;
	int64_t cutoff = INT64_MAX;
	int rc = 0;

	for (i = 0; i < n; i++) {
		if ((rc = pw_graph_parse(g, todo[i])))
			return rc == PW_ENOTFOUND ? 0 : rc;
		g->v[todo[i]].flags |= G_QUEUED; /* "to be found" */
		if (g->v[todo[i]].date < cutoff)
			cutoff = g->v[todo[i]].date;
	}
	cutoff -= 86400;
	alloc = s->nr_refs + 64;
	if (!(stack = malloc(alloc * sizeof(*stack))))
		return pw_error_set(&s->err, PW_ENOMEM, "out of memory");
	for (i = 0; i < s->nr_refs; i++) {
		const struct pw_oid *o =
		        s->refs[i].has_peeled ? &s->refs[i].peeled : &s->refs[i].oid;
		uint32_t idx;

		if ((rc = pw_graph_lookup(g, o, &idx)))
			goto out;
		if (g->v[idx].mark != epoch) {
			g->v[idx].mark = epoch;
			stack[nr++] = idx;
		}
	}
	while (nr && left) {
		uint32_t c = stack[--nr];

		rc = pw_graph_parse(g, c);
		if (rc == PW_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			goto out;
		if (g->v[c].flags & G_QUEUED) {
			g->v[c].flags &= ~G_QUEUED;
			left--;
		}
		if (g->v[c].date < cutoff)
			continue;
		if (push_parents(g, c, epoch, &stack, &nr, &alloc)) {
			rc = pw_error_set(&s->err, PW_ENOMEM, "out of memory");
			goto out;
		}
	}
out:
	for (i = 0; i < n; i++)
		g->v[todo[i]].flags &= ~G_QUEUED;
	free(stack);
	return rc ? rc : left == 0;
}

static int not_our_ref(struct pw_upload_session *s, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];

	return pw_srv_fail(s, PW_EPROTO, "upload-pack: not our ref %s", pw_oid_to_hex(oid, hex));
}

struct tip_ctx {
	const struct pw_oid *want;
	int found;
};

static int tip_cb(const struct pw_ref *ref, void *data)
{
	struct tip_ctx *c = data;

	if (!pw_oid_equal(&ref->oid, c->want))
		return 0;
	c->found = 1;
	return 1;
}

/* Is oid the tip of any ref, advertised or hidden? 1/0, <0 on errors. */
static int is_any_ref_tip(struct pw_upload_session *s, const struct pw_oid *oid)
{
	struct tip_ctx c = {oid, 0};
	int rc = pw_refs_foreach(s->repo, NULL, 0, tip_cb, &c);

	if (c.found)
		return 1;
	if (rc)
		return pw_error_copy(&s->err, pw_repo_error(s->repo));
	return 0;
}

int pw_srv_check_wants(struct pw_upload_session *s)
{
	uint32_t *todo = NULL;
	size_t n = 0, i;
	int rc = 0;

	for (i = 0; i < s->args.wants.nr; i++) {
		const struct pw_oid *w = &s->args.wants.v[i];
		uint64_t size;
		int type;

		rc = pw_odb_read_header(s->odb, w, &type, &size);
		if (rc == PW_ENOTFOUND) {
			rc = not_our_ref(s, w);
			goto out;
		}
		if (rc) {
			rc = pw_error_copy(&s->err, pw_odb_error(s->odb));
			goto out;
		}
		if (s->allow_any || pw_oidmap_get(&s->our_refs, w))
			continue;
		/* allow-tip (and allow-reachable) also let the tips of hidden
		 * refs be asked for, as Git does */
		if (s->allow_tip || s->allow_reachable) {
			if ((rc = is_any_ref_tip(s, w)) < 0)
				goto out;
			if (rc) {
				rc = 0;
				continue;
			}
		}
		if (type != PW_OBJ_COMMIT || !(s->allow_reachable || s->opts.stateless_rpc)) {
			rc = not_our_ref(s, w);
			goto out;
		}
		if (!todo && !(todo = malloc(s->args.wants.nr * sizeof(*todo)))) {
			rc = pw_error_set(&s->err, PW_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = pw_graph_lookup(&s->graph, w, &todo[n])))
			goto out;
		n++;
	}
	if (n) {
		rc = reachable_from_refs(s, todo, n);
		if (rc == 0) {
			/* name the first one that was not found */
			for (i = 0; i < n; i++)
				if (s->graph.v[todo[i]].mark != s->graph.epoch)
					break;
			rc = not_our_ref(s, &s->graph.v[todo[i < n ? i : 0]].oid);
		} else if (rc == 1) {
			rc = 0;
		}
	}
out:
	free(todo);
	return rc;
}
