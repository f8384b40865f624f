/* The pack a fetch sends: the object walk (rev-list for ordinary fetches, a
 * shallow-aware commit walk feeding rev-list's tree walk when boundaries are
 * involved), partial-clone filters, include-tag, and the pack writer's
 * stream carried over side-band with progress on band 2. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "odb/commit-queue.h"
#include "odb/odb-priv.h"
#include "pack/bitmap.h"
#include "packwire/config.h"
#include "packwire/object.h"
#include "packwire/pack-write.h"
#include "packwire/revlist.h"
#include "server/filter.h"
#include "server/session.h"
#include "server/upload-parts.h"

struct gen {
	struct pw_upload_session *s;
	struct pw_pack_writer *w;
	struct pw_oidmap wants; /* explicitly wanted: never filtered out */
	struct pw_srv_filter filter;
	int rc;
	/* uploadpack.blobPackfileUri entries whose URI the client can fetch:
	 * left out of the pack, named in the packfile-uris section if met */
	struct excl {
		struct pw_oid oid;
		char *line; /* "<pack-hash> <uri>" */
		int met;
	} * excl;
	size_t nexcl;
	struct pw_oidmap excl_map; /* oid -> &excl[i] */
	/* progress throttle */
	struct timespec last;
	int last_pct;
	const char *last_title;
	/* where the pack and its progress lines go: the client (direct) or a
	 * pack-cache entry being written (pw_srv_generate_pack) */
	const struct pw_srv_pack_sink *sink;
	void *sink_ctx;
	int started; /* pack bytes went to the sink */
};

static int nomem(struct pw_upload_session *s)
{
	return pw_error_set(&s->err, PW_ENOMEM, "out of memory");
}

static int add_obj(struct gen *g, const struct pw_oid *oid, int type, const char *path,
                   size_t path_len)
{
	int rc;
	struct pw_oidmap_entry *ex;

	if (g->nexcl && (ex = pw_oidmap_get(&g->excl_map, oid))) {
		((struct excl *)ex->value)->met = 1; /* the client downloads it */
		return 0;
	}
	rc = pw_pack_writer_add(g->w, oid, type, path, path_len);
	if (rc)
		return pw_error_copy(&g->s->err, pw_pack_writer_error(g->w));
	return 0;
}

static int walk_cb(const struct pw_revlist_obj *obj, void *data)
{
	struct gen *g = data;

	if (obj->excluded) {
		if (pw_pack_writer_add_base(g->w, &obj->oid, obj->type, obj->path, obj->path_len))
			return pw_error_copy(&g->s->err, pw_pack_writer_error(g->w));
		return 0;
	}
	if (!pw_oidmap_get(&g->wants, &obj->oid) &&
	    !pw_srv_filter_keeps(&g->filter, &obj->oid, obj->type, obj->path, obj->path_len))
		return 0;
	return add_obj(g, &obj->oid, obj->type, obj->type == PW_OBJ_TAG ? NULL : obj->path,
	               obj->type == PW_OBJ_TAG ? 0 : obj->path_len);
}

static int revlist_err(struct gen *g, struct pw_revlist *rl, int rc)
{
	if (g->s->err.code) /* the callback's own error */
		return g->s->err.code;
	pw_error_copy(&g->s->err, pw_revlist_error(rl));
	return g->s->err.code ? g->s->err.code : rc;
}

/* ---- ordinary fetches: rev-list does it all -------------------------------- */

static int walk_plain(struct gen *g)
{
	struct pw_upload_session *s = g->s;
	struct pw_revlist *rl;
	unsigned flags = PW_REVLIST_OBJECTS | (s->args.thin_pack ? PW_REVLIST_EDGES : 0);
	size_t i;
	int rc;

	if ((rc = pw_revlist_new(&rl, s->odb, flags)))
		return pw_error_set(&s->err, rc, "rev-list: %s", pw_strerror(rc));
	/* a clone meets about every packed object: tables made once, not
	 * grown through every power of two (a fifth of a v2.0.0 clone's walk) */
	if (!s->have_objs.nr) {
		size_t hint = pw_odb_packed_count(s->odb);

		if (pw_revlist_reserve(rl, hint) || pw_pack_writer_reserve(g->w, hint))
			rc = pw_error_set(&s->err, PW_ENOMEM, "rev-list: out of memory");
	}
	for (i = 0; !rc && i < s->args.wants.nr; i++)
		rc = pw_revlist_add(rl, &s->args.wants.v[i], NULL, 0);
	for (i = 0; !rc && i < s->have_objs.nr; i++)
		rc = pw_revlist_add(rl, &s->have_objs.v[i], NULL, 1);
	if (!rc)
		rc = pw_revlist_run(rl, walk_cb, g);
	if (rc)
		rc = revlist_err(g, rl, rc);
	pw_revlist_free(rl);
	return rc;
}

/* ---- shallow fetches ---------------------------------------------------------- */

/* Spread "the client has it" down the ancestry, stopping where the client's
 * history is cut. */
static int mark_unint(struct gen *g, uint32_t start)
{
	struct pw_graph *gr = &g->s->graph;
	uint32_t *stack;
	size_t nr = 0, alloc = 64;

	if (gr->v[start].flags & G_UNINT)
		return 0;
	if (!(stack = malloc(alloc * sizeof(*stack))))
		return nomem(g->s);
	gr->v[start].flags |= G_UNINT;
	stack[nr++] = start;
	while (nr) {
		uint32_t c = stack[--nr], j;

		if (!(gr->v[c].flags & G_PARSED) || (gr->v[c].flags & G_CUT_HAVE))
			continue;
		for (j = 0; j < gr->v[c].nparents; j++) {
			uint32_t p = pw_graph_parent(gr, c, j);

			if (gr->v[p].flags & G_UNINT)
				continue;
			gr->v[p].flags |= G_UNINT;
			if (nr == alloc) {
				uint32_t *ns = realloc(stack, alloc * 2 * sizeof(*ns));

				if (!ns) {
					free(stack);
					return nomem(g->s);
				}
				stack = ns;
				alloc *= 2;
			}
			stack[nr++] = p;
		}
	}
	free(stack);
	return 0;
}

static int queue(struct gen *g, struct pw_commit_queue *q, uint32_t idx)
{
	struct pw_graph *gr = &g->s->graph;

	if (gr->v[idx].flags & G_QUEUED)
		return 0;
	if (pw_commit_queue_push(q, idx, gr->v[idx].date))
		return nomem(g->s);
	gr->v[idx].flags |= G_QUEUED;
	return 0;
}

static int all_unint(struct gen *g, const struct pw_commit_queue *q)
{
	size_t i;

	for (i = 0; i < q->nr; i++)
		if (!(g->s->graph.v[q->v[i].item].flags & G_UNINT))
			return 0;
	return 1;
}

/* The state of a shallow walk: the commit queue, the walk that lists trees
 * and blobs, and the commits listed so far (in order). */
struct shallow_walk {
	struct gen *g;
	struct pw_graph *gr;
	struct pw_commit_queue q;
	struct pw_revlist *rl;
	uint32_t *listed;
	size_t nlisted, alloc_listed;
};

static int sw_revlist_add(struct shallow_walk *w, const struct pw_oid *oid, const char *name,
                          int exclude)
{
	int rc = pw_revlist_add(w->rl, oid, name, exclude);

	return rc ? revlist_err(w->g, w->rl, rc) : 0;
}

/* What the client has: commits are uninteresting, trees and blobs excluded. */
static int sw_add_haves(struct shallow_walk *w)
{
	struct pw_upload_session *s = w->g->s;
	size_t i;
	int rc;

	for (i = 0; i < s->have_objs.nr; i++) {
		uint32_t idx;

		if ((rc = pw_graph_lookup(w->gr, &s->have_objs.v[i], &idx)))
			return rc;
		if (pw_graph_parse(w->gr, idx)) {
			/* a tree or blob the client has */
			if ((rc = sw_revlist_add(w, &s->have_objs.v[i], NULL, 1)))
				return rc;
			continue;
		}
		if ((rc = mark_unint(w->g, idx)) || (rc = queue(w->g, &w->q, idx)))
			return rc;
		/* a thin shallow pack leaves out every have's tree, also below a
		 * new boundary (Git's --objects-edge-aggressive) */
		if (s->args.thin_pack && !pw_graph_parse(w->gr, idx) &&
		    (rc = sw_revlist_add(w, &w->gr->v[idx].tree, NULL, 1)))
			return rc;
	}
	return 0;
}

/* Send every tag of the chain starting at *cur, one level at a time; *cur
 * ends at the first object that is not a tag. */
static int sw_send_tags(struct shallow_walk *w, struct pw_oid *cur)
{
	struct pw_upload_session *s = w->g->s;
	int rc;

	for (;;) {
		struct pw_buf b = PW_BUF_INIT;
		struct pw_tag_info ti;
		uint64_t size;
		int t;

		if ((rc = pw_odb_read_header(s->odb, cur, &t, &size)))
			return pw_error_copy(&s->err, pw_odb_error(s->odb));
		if (t != PW_OBJ_TAG)
			return 0;
		if ((rc = add_obj(w->g, cur, PW_OBJ_TAG, NULL, 0)))
			return rc;
		rc = pw_odb_read(s->odb, cur, &t, &b);
		if (!rc)
			rc = pw_tag_parse(&ti, b.data, b.len, s->algo, &s->err);
		if (!rc)
			*cur = ti.object;
		pw_buf_free(&b);
		if (rc)
			return rc;
	}
}

/* What the client wants: tags are sent here, commits walked, the rest
 * listed by rev-list. */
static int sw_add_wants(struct shallow_walk *w)
{
	struct pw_upload_session *s = w->g->s;
	size_t i;
	int rc;

	for (i = 0; i < s->args.wants.nr; i++) {
		struct pw_oid cur = s->args.wants.v[i];
		uint32_t idx;

		if ((rc = sw_send_tags(w, &cur)))
			return rc;
		if ((rc = pw_graph_lookup(w->gr, &cur, &idx)))
			return rc;
		if (pw_graph_parse(w->gr, idx) == 0)
			rc = queue(w->g, &w->q, idx);
		else
			rc = sw_revlist_add(w, &cur, NULL, 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* Commits that stop being shallow: their parents are now wanted. */
static int sw_add_unshallow(struct shallow_walk *w)
{
	struct pw_upload_session *s = w->g->s;
	size_t i;
	int rc;

	for (i = 0; i < s->unshallow.nr; i++) {
		uint32_t idx, j;

		if ((rc = pw_graph_lookup(w->gr, &s->unshallow.v[i], &idx)))
			return rc;
		if ((rc = pw_graph_parse(w->gr, idx)))
			return rc;
		for (j = 0; j < w->gr->v[idx].nparents; j++)
			if ((rc = queue(w->g, &w->q, pw_graph_parent(w->gr, idx, j))))
				return rc;
	}
	return 0;
}

static int sw_list(struct shallow_walk *w, uint32_t c)
{
	if (w->gr->v[c].flags & G_LISTED)
		return 0;
	w->gr->v[c].flags |= G_LISTED;
	if (w->nlisted == w->alloc_listed) {
		size_t na = w->alloc_listed ? w->alloc_listed * 2 : 256;
		uint32_t *nv = realloc(w->listed, na * sizeof(*nv));

		if (!nv)
			return nomem(w->g->s);
		w->listed = nv;
		w->alloc_listed = na;
	}
	w->listed[w->nlisted++] = c;
	return 0;
}

/* One commit off the queue: an uninteresting one spreads its mark to its
 * parents (unless the client's shallow boundary cuts it), an interesting one
 * is listed and its parents queued (unless the new boundary cuts it). */
static int sw_step(struct shallow_walk *w, uint32_t c)
{
	struct pw_graph *gr = w->gr;
	char hex[PW_MAX_HEXSZ + 1];
	uint32_t j;
	int rc = pw_graph_parse(gr, c);

	if (rc == PW_ENOTFOUND && (gr->v[c].flags & G_UNINT))
		return 0;
	if (rc == PW_ENOTFOUND)
		return pw_srv_fail(w->g->s, PW_ENOTFOUND, "missing commit %s",
		                   pw_oid_to_hex(&gr->v[c].oid, hex));
	if (rc)
		return rc;
	if (gr->v[c].flags & G_UNINT) {
		if (!(gr->v[c].flags & G_CUT_HAVE))
			for (j = 0; j < gr->v[c].nparents; j++) {
				uint32_t p = pw_graph_parent(gr, c, j);

				if ((rc = mark_unint(w->g, p)) || (rc = queue(w->g, &w->q, p)))
					return rc;
			}
		return 0;
	}
	if ((rc = sw_list(w, c)))
		return rc;
	if (!(gr->v[c].flags & G_CUT_SEND))
		for (j = 0; j < gr->v[c].nparents; j++)
			if ((rc = queue(w->g, &w->q, pw_graph_parent(gr, c, j))))
				return rc;
	return 0;
}

/* Newest first until only uninteresting commits remain (a few extra steps
 * against clock skew). */
static int sw_walk(struct shallow_walk *w)
{
	int rc, slop = 5;

	while (w->q.nr) {
		if ((rc = sw_step(w, (uint32_t)pw_commit_queue_pop(&w->q, NULL))))
			return rc;
		if (all_unint(w->g, &w->q)) {
			if (--slop <= 0)
				break;
		} else {
			slop = 5;
		}
	}
	return 0;
}

/* The client's side of the boundary: the trees it has (parents of listed
 * commits it has, and the commits it unshallows) are excluded. */
static int sw_exclude_boundary(struct shallow_walk *w)
{
	struct pw_upload_session *s = w->g->s;
	struct pw_graph *gr = w->gr;
	size_t i;
	int rc;

	for (i = 0; i < w->nlisted; i++) {
		uint32_t c = w->listed[i], j;

		if (gr->v[c].flags & (G_UNINT | G_CUT_SEND))
			continue;
		for (j = 0; j < gr->v[c].nparents; j++) {
			uint32_t p = pw_graph_parent(gr, c, j);

			if ((gr->v[p].flags & (G_UNINT | G_PARSED)) == (G_UNINT | G_PARSED) &&
			    (rc = sw_revlist_add(w, &gr->v[p].tree, NULL, 1)))
				return rc;
		}
	}
	for (i = 0; i < s->unshallow.nr; i++) {
		uint32_t idx;

		if ((rc = pw_graph_lookup(gr, &s->unshallow.v[i], &idx)))
			return rc;
		if ((rc = sw_revlist_add(w, &gr->v[idx].tree, NULL, 1)))
			return rc;
	}
	return 0;
}

/* The listed commits into the pack, their trees into rev-list. */
static int sw_send_listed(struct shallow_walk *w)
{
	size_t i;
	int rc;

	for (i = 0; i < w->nlisted; i++) {
		uint32_t c = w->listed[i];

		if (w->gr->v[c].flags & G_UNINT)
			continue;
		if ((rc = add_obj(w->g, &w->gr->v[c].oid, PW_OBJ_COMMIT, NULL, 0)))
			return rc;
		if ((rc = sw_revlist_add(w, &w->gr->v[c].tree, "", 0)))
			return rc;
	}
	return 0;
}

static int walk_shallow(struct gen *g)
{
	struct shallow_walk w;
	size_t i;
	int rc;

	memset(&w, 0, sizeof(w));
	w.g = g;
	w.gr = &g->s->graph;
	for (i = 0; i < w.gr->nr; i++)
		w.gr->v[i].flags &= ~(G_QUEUED | G_UNINT | G_LISTED);
	if ((rc = pw_revlist_new(&w.rl, g->s->odb, PW_REVLIST_OBJECTS)))
		return pw_error_set(&g->s->err, rc, "rev-list: %s", pw_strerror(rc));
	if (!(rc = sw_add_haves(&w)) && !(rc = sw_add_wants(&w)) && !(rc = sw_add_unshallow(&w)) &&
	    !(rc = sw_walk(&w)) && !(rc = sw_exclude_boundary(&w)) && !(rc = sw_send_listed(&w)) &&
	    (rc = pw_revlist_run(w.rl, walk_cb, g)))
		rc = revlist_err(g, w.rl, rc);
	pw_revlist_free(w.rl);
	pw_commit_queue_free(&w.q);
	free(w.listed);
	return rc;
}

/* ---- include-tag --------------------------------------------------------------- */

static int include_tags(struct gen *g)
{
	struct pw_upload_session *s = g->s;
	size_t i;
	int rc;

	for (i = 0; i < s->nr_refs; i++) {
		const struct pw_adv_ref *r = &s->refs[i];
		struct pw_oid cur;

		if (strncmp(r->name, "refs/tags/", 10) || !r->has_peeled ||
		    pw_pack_writer_contains(g->w, &r->oid) ||
		    !pw_pack_writer_contains(g->w, &r->peeled))
			continue;
		/* the tag and every tag between it and the object */
		cur = r->oid;
		for (;;) {
			struct pw_buf b = PW_BUF_INIT;
			struct pw_tag_info ti;
			int ty;

			rc = pw_odb_read(s->odb, &cur, &ty, &b);
			if (rc) {
				pw_buf_free(&b);
				return pw_error_copy(&s->err, pw_odb_error(s->odb));
			}
			if (ty != PW_OBJ_TAG) {
				pw_buf_free(&b);
				break;
			}
			if (!pw_pack_writer_contains(g->w, &cur) &&
			    (rc = add_obj(g, &cur, PW_OBJ_TAG, NULL, 0))) {
				pw_buf_free(&b);
				return rc;
			}
			rc = pw_tag_parse(&ti, b.data, b.len, s->algo, &s->err);
			pw_buf_free(&b);
			if (rc)
				return rc;
			cur = ti.object;
		}
	}
	return 0;
}

/* ---- output ---------------------------------------------------------------------- */

static int send_band(struct pw_upload_session *s, int band, const void *data, size_t len)
{
	int rc = pw_sideband_write(&s->out, band, data, len, pw_sideband_max(s->sideband));

	if (rc)
		return pw_error_set(&s->err, rc, "side-band: %s", pw_strerror(rc));
	if (s->out.len >= 65536)
		return pw_srv_flush_out(s);
	return 0;
}

/* The direct sink: the pack to the client, side-band or raw. */
static int client_data(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	struct pw_upload_session *s = ctx;
	int rc;

	if (s->sideband) {
		if (!s->pack_started && s->out.len && (rc = pw_srv_flush_out(s)))
			return pw_error_copy(err, &s->err);
		s->pack_started = 1;
		rc = send_band(s, PW_BAND_DATA, data, len);
		return rc ? pw_error_copy(err, &s->err) : 0;
	}
	if (s->out.len && (rc = pw_srv_flush_out(s)))
		return pw_error_copy(err, &s->err);
	s->pack_started = 1;
	rc = pw_write_full(s->out_fd, data, len, err);
	if (rc)
		s->err_sent = 1;
	return rc;
}

static int client_progress(void *ctx, const char *line, size_t len)
{
	return send_band(ctx, PW_BAND_PROGRESS, line, len);
}

static const struct pw_srv_pack_sink client_sink = {client_data, client_progress};

static int out_fn(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	struct gen *g = ctx;

	if (!len)
		return 0;
	g->started = 1;
	return g->sink->data(g->sink_ctx, data, len, err);
}

static void progress_fn(void *data, const char *title, uint64_t n, uint64_t total, int done)
{
	struct gen *g = data;
	struct pw_upload_session *s = g->s;
	struct timespec now;
	char line[200];
	int pct = total ? (int)(n * 100 / total) : -1, len;

	if (s->args.no_progress || !s->sideband || g->rc)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!done && g->last_title == title && pct == g->last_pct &&
	    (now.tv_sec - g->last.tv_sec) * 1000 + (now.tv_nsec - g->last.tv_nsec) / 1000000 < 500)
		return;
	g->last = now;
	g->last_pct = pct;
	g->last_title = title;
	if (total)
		len = snprintf(line, sizeof(line), "%s: %3d%% (%llu/%llu)%s", title, pct,
		               (unsigned long long)n, (unsigned long long)total,
		               done ? ", done.\n" : "\r");
	else
		len = snprintf(line, sizeof(line), "%s: %llu%s", title, (unsigned long long)n,
		               done ? ", done.\n" : "\r");
	if (len > 0 && (size_t)len < sizeof(line))
		g->rc = g->sink->progress(g->sink_ctx, line, (size_t)len);
}

/* ---- packfile-uris ---------------------------------------------------------------- */

/* Does uri use one of the comma-separated protocols ("<proto>:...")? */
static int uri_protocol_ok(const char *protocols, const char *uri)
{
	const char *p = protocols;

	while (*p) {
		size_t n = strcspn(p, ",");

		if (n && !strncmp(uri, p, n) && uri[n] == ':')
			return 1;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

struct excl_load {
	struct gen *g;
	size_t alloc;
};

/* "<object-hash> <pack-hash> <uri>", as Git's pack-objects reads it. */
static int excl_one(const struct pw_config_entry *e, void *data)
{
	struct excl_load *l = data;
	struct gen *g = l->g;
	struct pw_upload_session *s = g->s;
	size_t hx = s->algo->hexsz;
	const char *v = e->value ? e->value : "";
	struct pw_oid oid, pack;
	struct pw_oidmap_entry *ent;
	int created;

	if (strlen(v) < 2 * hx + 3 || v[hx] != ' ' || v[2 * hx + 1] != ' ' ||
	    pw_oid_from_hex(&oid, v, hx, s->algo) ||
	    pw_oid_from_hex(&pack, v + hx + 1, hx, s->algo))
		return pw_error_set(&s->err, PW_EINVAL,
		                    "value of uploadpack.blobpackfileuri must be of the form "
		                    "'<object-hash> <pack-hash> <uri>' (got '%.200s')",
		                    v);
	if (pw_oidmap_get(&g->excl_map, &oid))
		return pw_error_set(&s->err, PW_EINVAL,
		                    "object already configured in another "
		                    "uploadpack.blobpackfileuri (got '%.200s')",
		                    v);
	if (!uri_protocol_ok(s->uri_protocols, v + 2 * hx + 2))
		return 0;
	if (g->nexcl == l->alloc) {
		size_t n = l->alloc ? 2 * l->alloc : 8;
		struct excl *x = realloc(g->excl, n * sizeof(*x));

		if (!x)
			return nomem(s);
		g->excl = x;
		l->alloc = n;
		/* the map points into the array: rebuild it */
		for (size_t i = 0; i < g->nexcl; i++)
			pw_oidmap_get(&g->excl_map, &g->excl[i].oid)->value = &g->excl[i];
	}
	if (!(ent = pw_oidmap_put(&g->excl_map, &oid, &created)))
		return nomem(s);
	g->excl[g->nexcl].oid = oid;
	g->excl[g->nexcl].met = 0;
	if (!(g->excl[g->nexcl].line = strdup(v + hx + 1)))
		return nomem(s);
	ent->value = &g->excl[g->nexcl++];
	return 0;
}

static int load_exclusions(struct gen *g)
{
	struct excl_load l = {g, 0};
	int rc;

	if (!g->s->uri_protocols)
		return 0;
	rc = pw_config_get_all(pw_repo_config(g->s->repo), "uploadpack.blobpackfileuri", excl_one,
	                       &l);
	return rc == PW_ENOTFOUND ? 0 : rc;
}

static void free_exclusions(struct gen *g)
{
	for (size_t i = 0; i < g->nexcl; i++)
		free(g->excl[i].line);
	free(g->excl);
	pw_oidmap_free(&g->excl_map);
}

/* v2 with packfile-uris: the URIs of the objects left out, then the
 * "packfile" header (Git writes them as its pack-objects names them). */
static int packfile_header(struct gen *g)
{
	struct pw_upload_session *s = g->s;
	int rc, any = 0;

	if (!s->packfile_pending)
		return 0;
	s->packfile_pending = 0;
	for (size_t i = 0; i < g->nexcl; i++) {
		if (!g->excl[i].met)
			continue;
		if (!any++ && (rc = pw_srv_line(s, "packfile-uris")))
			return rc;
		if ((rc = pw_srv_line(s, "%s", g->excl[i].line)))
			return rc;
	}
	if (any && pw_pkt_delim(&s->out))
		return nomem(s);
	return pw_srv_line(s, "packfile");
}

/* ---- the bitmap path ------------------------------------------------------------ */

/* The tips and exclusions of the walk: the wants and haves, in the
 * client's ids for the stored view (PW_ENOTFOUND when one has none). */
static int bm_add_tips(struct pw_upload_session *s, struct pw_bitmap_walk *bw, int view)
{
	const struct pw_oid_array *lists[2] = {&s->args.wants, &s->have_objs};
	struct pw_oid w;
	size_t i;
	int rc = 0;

	for (int ex = 0; ex < 2; ex++)
		for (i = 0; !rc && i < lists[ex]->nr; i++) {
			const struct pw_oid *oid = &lists[ex]->v[i];

			if (view && pw_srv_compat_out(s, oid, &w))
				return PW_ENOTFOUND;
			rc = pw_bitmap_walk_add(bw, view ? &w : oid, ex);
		}
	return rc;
}

static int bm_include_tags(struct pw_upload_session *s, struct pw_bitmap_walk *bw, int view)
{
	struct pw_oid tag, peeled;
	size_t i;
	int rc = 0;

	for (i = 0; !rc && s->args.include_tag && i < s->nr_refs; i++) {
		const struct pw_adv_ref *r = &s->refs[i];

		if (strncmp(r->name, "refs/tags/", 10) || !r->has_peeled)
			continue;
		tag = r->oid;
		peeled = r->peeled;
		if (view && (pw_srv_compat_out(s, &r->oid, &tag) ||
		             pw_srv_compat_out(s, &r->peeled, &peeled)))
			continue;
		rc = pw_bitmap_walk_include_tag(bw, &tag, &peeled);
	}
	return rc;
}

/* Enumerate with the repository's reachability bitmap (view: the stored
 * view's, in the client's ids) and copy entries of the bitmapped pack.
 * PW_ENOTFOUND (s->err untouched) when the bitmap cannot answer this
 * request: nothing was sent, the caller walks instead. */
/* The bitmap walk over the repository's packs, or (view) over the stored
 * view's pack. The view's .idx, pack and .bitmap are mapped when this
 * returns: a rewrite that removes their generation later does not reach
 * them (docs/compat-map.md, "Readers and rewrites"). One that removed it
 * after `current` was read but before they were open gets `current` read
 * again, once. */
static int open_walk(struct gen *g, int view, struct pw_bitmap_walk **bw, struct pw_error *e)
{
	struct pw_odb *odb = view ? pw_srv_compat_view(g->s) : g->s->odb;
	int rc;

	if (!odb)
		return PW_ENOTFOUND;
	if (view && pw_srv__test_view_opened)
		pw_srv__test_view_opened();
	rc = pw_bitmap_walk_new(bw, odb, e);
	if (rc && rc != PW_ENOMEM && view) {
		pw_srv_compat_view_drop(g->s);
		if (!(odb = pw_srv_compat_view(g->s)))
			return PW_ENOTFOUND;
		pw_error_clear(e);
		rc = pw_bitmap_walk_new(bw, odb, e);
	}
	return rc;
}

static int send_bitmap(struct gen *g, struct pw_pack_write_stats *st, int view)
{
	struct pw_upload_session *s = g->s;
	struct pw_bitmap_walk *bw = NULL;
	struct pw_bitmap_write_opts wo;
	struct pw_error e = {0};
	int rc;

	const struct pw_config *cfg = pw_repo_config(s->repo);
	int use = 1;

	if (view && !pw_srv_compat_view(s))
		return PW_ENOTFOUND;
	if (s->args.has_filter && s->args.filter.kind != PW_FILTER_BLOB_NONE &&
	    s->args.filter.kind != PW_FILTER_BLOB_LIMIT)
		return PW_ENOTFOUND;
	if (cfg && !pw_config_get_bool(cfg, "pack.usebitmaps", &use, NULL) && !use)
		return PW_ENOTFOUND;
	if ((rc = open_walk(g, view, &bw, &e)))
		return rc == PW_ENOMEM ? pw_error_copy(&s->err, &e) : PW_ENOTFOUND;
	rc = bm_add_tips(s, bw, view);
	if (!rc)
		rc = pw_bitmap_walk_run(bw);
	if (!rc && s->args.has_filter && s->args.filter.kind == PW_FILTER_BLOB_NONE)
		pw_bitmap_walk_drop_blobs(bw);
	if (!rc && s->args.has_filter && s->args.filter.kind == PW_FILTER_BLOB_LIMIT)
		rc = pw_bitmap_walk_drop_large_blobs(bw, s->args.filter.value);
	if (!rc)
		rc = bm_include_tags(s, bw, view);
	if (rc) {
		/* anything the bitmap cannot answer: the walk will (and will
		 * report real problems with a better message) */
		if (rc == PW_ENOMEM)
			pw_error_copy(&s->err, pw_bitmap_walk_error(bw));
		pw_bitmap_walk_free(bw);
		return rc == PW_ENOMEM ? rc : PW_ENOTFOUND;
	}
	progress_fn(g, "Enumerating objects", pw_bitmap_walk_count(bw), 0, 1);
	memset(&wo, 0, sizeof(wo));
	wo.ofs_delta = s->args.ofs_delta;
	wo.thin = s->args.thin_pack;
	wo.progress = progress_fn;
	wo.progress_data = g;
	wo.trust_reused = 1; /* the client checks every object, as with git */
	rc = pw_bitmap_walk_write(bw, &wo, out_fn, g, NULL, st);
	if (rc && !g->started) {
		/* a damaged entry found before any byte went out */
		pw_bitmap_walk_free(bw);
		return rc == PW_ENOMEM ? nomem(s) : PW_ENOTFOUND;
	}
	if (rc && !s->err.code)
		pw_error_copy(&s->err, pw_bitmap_walk_error(bw));
	pw_bitmap_walk_free(bw);
	return rc;
}

int pw_srv_generate_pack(struct pw_upload_session *s, const struct pw_srv_pack_sink *sink,
                         void *sink_ctx, struct pw_pack_write_stats *st, uint32_t *pack_reused)
{
	struct pw_pack_write_opts opts;
	struct gen g;
	size_t i;
	int rc, created, shallow;

	memset(&g, 0, sizeof(g));
	memset(st, 0, sizeof(*st));
	*pack_reused = 0;
	g.s = s;
	g.sink = sink;
	g.sink_ctx = sink_ctx;
	if ((rc = load_exclusions(&g)) || (!g.nexcl && (rc = packfile_header(&g)))) {
		free_exclusions(&g);
		return rc;
	}
	g.last_pct = -2;
	for (i = 0; i < s->args.wants.nr; i++)
		if (!pw_oidmap_put(&g.wants, &s->args.wants.v[i], &created)) {
			pw_oidmap_free(&g.wants);
			free_exclusions(&g);
			return nomem(s);
		}
	if ((rc = pw_srv_filter_init(&g.filter, s))) {
		pw_srv_filter_free(&g.filter);
		pw_oidmap_free(&g.wants);
		free_exclusions(&g);
		return rc;
	}

	shallow = s->args.shallows.nr || s->new_shallow.nr || s->unshallow.nr;
	s->stats.shallow = shallow;
	/* a shallow repository's history ends at its own boundary: the graph
	 * walk knows it, rev-list and the bitmap do not */
	shallow = shallow || s->srv_shallow.nr;
	if (!shallow && !g.nexcl) { /* the bitmap does not leave objects out */
		/* a client of the other algorithm: the stored view's bitmap */
		rc = send_bitmap(&g, st, s->compat != NULL);
		if (s->compat)
			pw_srv_trace(s, "compat-view", rc ? "translated" : "stored-pack");
		if (!rc) {
			*pack_reused = st->reused; /* copied from the bitmapped pack */
			goto sent;
		}
		if (rc != PW_ENOTFOUND)
			goto out;
	} else if (s->compat) {
		pw_srv_trace(s, "compat-view", "translated");
	}

	pw_pack_write_opts_init(&opts);
	pw_pack_write_opts_from_config(&opts, pw_repo_config(s->repo));
	opts.thin = s->args.thin_pack;
	opts.ofs_delta = s->args.ofs_delta;
	/* as git's pack-objects --stdout: the client hashes every object it
	 * receives, so reused entries are not checked here first */
	opts.verify_reuse = 0;
	opts.objects_dir = pw_repo_objects_dir(s->repo);
	opts.progress = progress_fn;
	opts.progress_data = &g;
	if ((rc = pw_pack_writer_new(&g.w, s->odb, &opts))) {
		pw_error_set(&s->err, rc, "pack writer: %s", pw_strerror(rc));
		goto out;
	}
	if (s->compat && (rc = pw_srv_compat_translate(s, g.w)))
		goto out;
	/* git's write order: the targets of refs/tags early */
	if ((rc = pw_pack_writer_add_tag_refs(g.w, s->repo))) {
		pw_error_copy(&s->err, pw_pack_writer_error(g.w));
		goto out;
	}
	rc = shallow ? walk_shallow(&g) : walk_plain(&g);
	if (!rc && s->args.include_tag)
		rc = include_tags(&g);
	if (!rc)
		rc = packfile_header(&g);
	if (rc)
		goto out;
	rc = pw_pack_writer_write(g.w, out_fn, &g, NULL);
	if (rc) {
		if (!s->err.code)
			pw_error_copy(&s->err, pw_pack_writer_error(g.w));
		goto out;
	}
	pw_pack_writer_stats(g.w, st);
sent:
	rc = g.rc;
out:
	pw_pack_writer_free(g.w);
	pw_oidmap_free(&g.wants);
	pw_srv_filter_free(&g.filter);
	free_exclusions(&g);
	return rc;
}

int pw_srv_pack_done(struct pw_upload_session *s, const struct pw_pack_write_stats *st,
                     uint32_t pack_reused)
{
	int rc;

	s->stats.objects = st->written;
	s->stats.bytes = st->bytes;
	if (s->sideband && !s->args.no_progress) {
		char line[200];
		int len = snprintf(line, sizeof(line),
		                   "Total %u (delta %u), reused %u (delta %u), pack-reused %u\n",
		                   st->written, st->deltas, st->reused, st->reused_deltas,
		                   pack_reused);

		if ((rc = send_band(s, PW_BAND_PROGRESS, line, (size_t)len)))
			return rc;
	}
	if (!s->v2 && s->sideband && pw_pkt_flush(&s->out))
		return nomem(s);
	return pw_srv_flush_out(s);
}

int pw_srv_send_pack(struct pw_upload_session *s)
{
	struct pw_pack_write_stats st;
	uint32_t pack_reused;
	const char *hook = pw_srv_pack_objects_hook(s);
	int rc;

	if (hook && !s->compat) {
		struct gen g;

		memset(&g, 0, sizeof(g));
		g.s = s;
		if (s->opts.pack_cache)
			pw_srv_pack_cache_bypass(s, "uploadpack.packObjectsHook");
		/* the hook's pack-objects is not told of packfile URIs */
		if ((rc = packfile_header(&g)))
			return rc;
		return pw_srv_send_pack_hook(s, hook);
	}
	pw_srv_trace_pack(s);
	if (s->opts.pack_cache && (rc = pw_srv_send_pack_cached(s)) != PW_SRV_CACHE_BYPASS)
		return rc;
	if ((rc = pw_srv_generate_pack(s, &client_sink, s, &st, &pack_reused)))
		return rc;
	return pw_srv_pack_done(s, &st, pack_reused);
}
