/* The pack writer's delta search: candidates sorted by type, path name
 * hash and size, each tried against the previous `window` ones on the
 * writer's threads, the smallest delta within the depth limit kept and
 * compressed at once (pack-write.c's comment has the whole picture). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "odb/odb-priv.h"
#include "pack/delta-create.h"
#include "pack/pack-write-priv.h"

struct cand {
	uint32_t idx;
	uint8_t type;
	uint8_t base_only;
	uint32_t hash;
	uint64_t size;
};

static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;

	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	if (a->base_only != b->base_only) /* bases first: they can only be bases */
		return a->base_only ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->idx < b->idx ? 1 : (a->idx > b->idx ? -1 : 0); /* newest last */
}

struct slot {
	int32_t obj;
	int loaded; /* 1: data holds the object, -1: it could not be read */
	struct pw_buf data;
	struct pw_delta_index *index;
};

/* The sorted list is cut into segments that the threads take in turn; a
 * window never crosses a segment boundary. */
struct segment {
	size_t start, end;
};

struct worker {
	struct pw_pack_writer *w;
	struct pw_odb *odb;
	const struct cand *list;
	const struct segment *segs;
	size_t nsegs;
	atomic_size_t *next_seg;
	struct libdeflate_compressor *comp;
	void *tr_data;          /* the translation's data for this thread */
	struct pw_buf tr_buf;   /* its scratch */
	struct pw_buf base_buf; /* a mirrored delta's base */
	/* translations along the current chain of mirrored deltas */
	struct tr_entry {
		int32_t obj;
		struct pw_buf data;
		struct pw_delta_index *index; /* of data, once a child needed it */
	} * chain;
	size_t chain_len, chain_cap;
	struct pw_error err;
	int rc;
};

int pw_pack_writer__compress_into(struct libdeflate_compressor *c, const void *in, size_t len,
                                  uint8_t **out, size_t *outlen)
{
	size_t cap = libdeflate_zlib_compress_bound(c, len);
	uint8_t *p = malloc(cap ? cap : 1);
	size_t n;

	if (!p)
		return PW_ENOMEM;
	n = libdeflate_zlib_compress(c, in, len, p, cap);
	if (!n) {
		free(p);
		return PW_ERROR;
	}
	*out = p;
	*outlen = n;
	return 0;
}

static void search_progress(struct pw_pack_writer *w)
{
	uint64_t n = atomic_fetch_add(&w->search_done, 1) + 1;

	if (!w->opts.progress || (n % 256 && n != w->search_total))
		return;
	pthread_mutex_lock(&w->progress_lock);
	pw_pack_writer__progress(w, "Compressing objects", n, w->search_total, 0);
	pthread_mutex_unlock(&w->progress_lock);
}

/* Read a slot's object on first use. 0, 1 when unusable (a base we cannot
 * read), or an error. */
static int load_slot(struct worker *wk, struct slot *s)
{
	struct wobj *o = &wk->w->objs[s->obj];
	char hex[PW_MAX_HEXSZ + 1];
	int type, rc;

	if (s->loaded)
		return s->loaded < 0;
	rc = pw_odb_read(wk->odb, &o->oid, &type, &s->data);
	if (rc) {
		if (o->flags & W_BASE_ONLY) {
			s->loaded = -1;
			return 1;
		}
		return pw_error_copy(&wk->err, pw_odb_error(wk->odb));
	}
	if (type != o->type || (!(o->flags & W_TSIZE) && s->data.len != o->size))
		return pw_error_set(&wk->err, PW_ECORRUPT,
		                    "object %s: type or size differ from its header",
		                    pw_oid_to_hex(&o->oid, hex));
	if (pw_pack_writer__w_translates(wk->w, type)) {
		if ((rc = pw_pack_writer__translate_content(wk->w, wk->tr_data, type, &s->data,
		                                            &wk->tr_buf, &o->oid, &wk->err)))
			return rc;
		/* only this thread touches the objects of its segment */
		o->size = s->data.len;
		o->flags |= W_TSIZE;
	}
	s->loaded = 1;
	return 0;
}

/* The mirrored deltas appended to list in depth-first order from their
 * chains' roots (so that an object's base is on the worker's stack of
 * translations when its turn comes), cut into segments of 256. */
static int mirror_order(struct pw_pack_writer *w, struct cand *list, size_t *n,
                        struct segment *segs, size_t *nsegs)
{
	int32_t *first = malloc((w->nr ? w->nr : 1) * sizeof(*first));
	int32_t *next = malloc((w->nr ? w->nr : 1) * sizeof(*next));
	int32_t *stack = malloc((w->nr ? w->nr : 1) * sizeof(*stack));
	size_t i, start = *n, sp;

	if (!first || !next || !stack) {
		free(first);
		free(next);
		free(stack);
		return pw_pack_writer__nomem(w);
	}
	for (i = 0; i < w->nr; i++)
		first[i] = next[i] = -1;
	for (i = w->nr; i-- > 0;) {
		if (!(w->objs[i].flags & W_MIRROR))
			continue;
		next[i] = first[w->objs[i].base];
		first[w->objs[i].base] = (int32_t)i;
	}
	for (i = 0; i < w->nr; i++) {
		if ((w->objs[i].flags & W_MIRROR) || first[i] < 0)
			continue;
		/* preorder: a node, then each child's subtree */
		sp = 0;
		for (int32_t c = first[i]; c >= 0; c = next[c])
			stack[sp++] = c;
		while (sp) {
			int32_t o = stack[--sp];

			memset(&list[*n], 0, sizeof(list[*n]));
			list[(*n)++].idx = (uint32_t)o;
			w->search_total++;
			for (int32_t c = first[o]; c >= 0; c = next[c])
				stack[sp++] = c;
		}
	}
	for (i = start; i < *n; i += 256) {
		segs[*nsegs].start = i;
		segs[*nsegs].end = i + 256 < *n ? i + 256 : *n;
		(*nsegs)++;
	}
	free(first);
	free(next);
	free(stack);
	return 0;
}

/* A mirrored delta (W_MIRROR): t (in slot s) against its base's
 * translation. Without a delta worth it, t is written whole (what is based
 * on it stays so). */
static int mirror_delta(struct worker *wk, struct slot *s, struct wobj *t, struct pw_buf *delta)
{
	struct pw_pack_writer *w = wk->w;
	struct wobj *b = &w->objs[t->base];
	const struct pw_buf *base;
	struct tr_entry *top;
	int rc, type;

	if ((rc = load_slot(wk, s)))
		return rc < 0 ? rc : 0;
	/* the base is on the chain unless this segment starts below it */
	while (wk->chain_len && wk->chain[wk->chain_len - 1].obj != t->base) {
		wk->chain_len--;
		pw_delta_index_free(wk->chain[wk->chain_len].index);
		wk->chain[wk->chain_len].index = NULL;
	}
	if (wk->chain_len) {
		top = &wk->chain[wk->chain_len - 1];
		base = &top->data;
		/* indexed once for all its children */
		if (!top->index && (rc = pw_delta_index_new(&top->index, base->data, base->len)) &&
		    rc != PW_ETOOBIG)
			return pw_error_set(&wk->err, rc, "delta search: out of memory");
	} else {
		rc = pw_odb_read(wk->odb, &b->oid, &type, &wk->base_buf);
		if (rc)
			return pw_error_copy(&wk->err, pw_odb_error(wk->odb));
		if ((rc = pw_pack_writer__translate_content(w, wk->tr_data, type, &wk->base_buf,
		                                            &wk->tr_buf, &b->oid, &wk->err)))
			return rc;
		base = &wk->base_buf;
	}
	if (wk->chain_len && wk->chain[wk->chain_len - 1].index)
		rc = pw_delta_create_from_index(wk->chain[wk->chain_len - 1].index, s->data.data,
		                                s->data.len, s->data.len, delta);
	else
		rc = pw_delta_create(base->data, base->len, s->data.data, s->data.len, s->data.len,
		                     delta);
	if (rc && rc != PW_ETOOBIG)
		return pw_error_set(&wk->err, rc, "delta search: out of memory");
	free(t->zdata);
	t->zdata = NULL;
	t->zdelta = !rc;
	if (rc) {
		t->flags &= ~(uint32_t)W_MIRROR;
		t->base = -1;
		delta = &s->data;
	}
	if ((rc = pw_pack_writer__compress_into(wk->comp, delta->data, delta->len, &t->zdata,
	                                        &t->zlen)))
		return pw_error_set(&wk->err, rc, "delta search: compression failed");
	t->zsize = delta->len;
	/* t's translation goes on the chain for its children (the slot's
	 * buffer is swapped, not copied; the slot is loaded afresh next time) */
	if (!wk->chain_len && wk->chain_cap) {
		top = &wk->chain[0];
		top->obj = (int32_t)(b - w->objs);
		{
			struct pw_buf tmp = top->data;

			top->data = wk->base_buf;
			wk->base_buf = tmp;
		}
		wk->chain_len = 1;
	}
	if (wk->chain_len == wk->chain_cap) {
		size_t ncap = wk->chain_cap ? 2 * wk->chain_cap : 16;
		struct tr_entry *nc = realloc(wk->chain, ncap * sizeof(*nc));

		if (!nc)
			return pw_error_set(&wk->err, PW_ENOMEM, "delta search: out of memory");
		for (size_t k = wk->chain_cap; k < ncap; k++) {
			pw_buf_init(&nc[k].data, 0);
			nc[k].index = NULL;
		}
		wk->chain = nc;
		wk->chain_cap = ncap;
	}
	top = &wk->chain[wk->chain_len++];
	top->obj = (int32_t)(t - w->objs);
	{
		struct pw_buf tmp = top->data;

		top->data = s->data;
		s->data = tmp;
	}
	s->loaded = 0;
	return 0;
}

/* The search of t (in slot s) is over: its best delta (against
 * best_base, in best) compressed, or, written whole, its data compressed
 * here in parallel while the cache has room. */
static int settle(struct worker *wk, struct slot *s, struct wobj *t, const struct pw_buf *best,
                  int32_t best_base)
{
	struct pw_pack_writer *w = wk->w;
	int rc;

	if (best_base >= 0) {
		free(t->zdata);
		t->zdata = NULL;
		if ((rc = pw_pack_writer__compress_into(wk->comp, best->data, best->len, &t->zdata,
		                                        &t->zlen)))
			return pw_error_set(&wk->err, rc, "delta search: compression failed");
		t->zsize = best->len;
		t->zdelta = 1;
		t->base = best_base;
		t->depth = (uint16_t)(w->objs[best_base].depth + 1);
		t->flags &= ~(uint32_t)W_REUSE;
	} else if (!(t->flags & W_REUSE) && !t->zdata &&
	           atomic_load(&w->zcache) + t->size < ZCACHE_LIMIT) {
		if ((rc = load_slot(wk, s)) < 0)
			return rc;
		if ((rc = pw_pack_writer__compress_into(wk->comp, s->data.data, s->data.len,
		                                        &t->zdata, &t->zlen)))
			return pw_error_set(&wk->err, rc, "delta search: compression failed");
		atomic_fetch_add(&w->zcache, t->zlen);
		t->zsize = s->data.len;
		t->zdelta = 0;
	}
	return 0;
}

static int search_segment(struct worker *wk, struct slot *slots, size_t nslots, size_t start,
                          size_t end, struct pw_buf *delta, struct pw_buf *best)
{
	struct pw_pack_writer *w = wk->w;
	size_t window = nslots - 1, i, k;
	int rc = 0, max_depth = w->opts.depth;

	for (i = 0; i < nslots; i++) {
		pw_delta_index_free(slots[i].index);
		slots[i].index = NULL;
		slots[i].obj = -1;
		slots[i].loaded = 0;
	}
	for (i = start; i < end; i++) {
		size_t pos = i - start;
		struct slot *s = &slots[pos % nslots];
		struct wobj *t = &w->objs[wk->list[i].idx];
		int32_t best_base = -1;
		uint64_t max_size;

		pw_delta_index_free(s->index);
		s->index = NULL;
		s->loaded = 0;
		s->obj = (int32_t)wk->list[i].idx;
		if (t->flags & W_BASE_ONLY)
			continue;
		if (t->flags & W_MIRROR) {
			search_progress(w);
			if ((rc = mirror_delta(wk, s, t, delta)))
				return rc;
			continue;
		}
		search_progress(w);
		/* a translated object's size is known once it is read */
		if (pw_pack_writer__w_translates(w, t->type) && (rc = load_slot(wk, s)) < 0)
			return rc;
		rc = 0;
		max_size = t->size / 2 - w->out_algo->rawsz;
		if (t->child_depth >= max_depth)
			max_size = 0;
		for (k = 1; k <= window && k <= pos && max_size; k++) {
			struct slot *bs = &slots[(pos - k) % nslots];
			struct wobj *b;
			uint64_t limit;

			if (bs->obj < 0 || bs->loaded < 0)
				continue;
			b = &w->objs[bs->obj];
			if (b->type != t->type)
				break;
			/* Two objects of one pack, the target stored whole: whoever
			 * packed them found no delta worth it; do not try again. */
			if (w->opts.reuse_delta && t->pack && t->pack == b->pack &&
			    !pw_pack_writer__is_delta_type(t->raw_type) &&
			    !(b->flags & W_BASE_ONLY))
				continue;
			if (b->depth + 1 + t->child_depth > max_depth)
				continue;
			/* deeper bases must earn their place with smaller deltas */
			limit = max_size * (uint64_t)(max_depth - b->depth) /
			        (uint64_t)(max_depth + 1);
			if (best_base >= 0 && limit > best->len - 1)
				limit = best->len - 1;
			if (!limit || b->size < t->size / 32 ||
			    (t->size > b->size && t->size - b->size >= limit))
				continue;
			if ((rc = load_slot(wk, s)) < 0)
				return rc;
			if ((rc = load_slot(wk, bs)) < 0)
				return rc;
			if (rc)
				continue;
			if (!bs->index) {
				rc = pw_delta_index_new(&bs->index, bs->data.data, bs->data.len);
				if (rc == PW_ETOOBIG)
					continue;
				if (rc)
					return pw_error_set(&wk->err, rc,
					                    "delta search: out of memory");
			}
			rc = pw_delta_create_from_index(bs->index, s->data.data, s->data.len,
			                                (size_t)limit, delta);
			if (rc == PW_ETOOBIG)
				continue;
			if (rc)
				return pw_error_set(&wk->err, rc, "delta search: out of memory");
			best_base = bs->obj;
			{
				struct pw_buf tmp = *best;

				*best = *delta;
				*delta = tmp;
			}
		}
		if ((rc = settle(wk, s, t, best, best_base)))
			return rc;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct pw_pack_writer *w = wk->w;
	/* a window wider than the objects would be memory no search uses */
	size_t nslots = ((size_t)w->opts.window < w->nr ? (size_t)w->opts.window : w->nr) + 1, i,
	       seg;
	struct slot *slots = calloc(nslots, sizeof(*slots));
	struct pw_buf delta = PW_BUF_INIT, best = PW_BUF_INIT;

	if (!slots) {
		wk->rc = pw_error_set(&wk->err, PW_ENOMEM, "delta search: out of memory");
		return NULL;
	}
	for (i = 0; i < nslots; i++)
		pw_buf_init(&slots[i].data, 0);
	pw_buf_init(&wk->tr_buf, 0);
	pw_buf_init(&wk->base_buf, 0);
	while (!wk->rc && (seg = atomic_fetch_add(wk->next_seg, 1)) < wk->nsegs)
		wk->rc = search_segment(wk, slots, nslots, wk->segs[seg].start, wk->segs[seg].end,
		                        &delta, &best);
	for (i = 0; i < nslots; i++) {
		pw_delta_index_free(slots[i].index);
		pw_buf_free(&slots[i].data);
	}
	free(slots);
	pw_buf_free(&wk->tr_buf);
	pw_buf_free(&wk->base_buf);
	for (i = 0; i < wk->chain_cap; i++) {
		pw_buf_free(&wk->chain[i].data);
		pw_delta_index_free(wk->chain[i].index);
	}
	free(wk->chain);
	pw_buf_free(&delta);
	pw_buf_free(&best);
	return NULL;
}

int pw_pack_writer__search_deltas(struct pw_pack_writer *w)
{
	struct cand *list;
	struct segment *segs;
	size_t n = 0, i, nsegs = 0, nthreads, seg_len, start;
	struct worker wk[2];
	pthread_t tid;
	int rc = 0, started = 0;
	struct pw_odb *odb2 = NULL;
	atomic_size_t next_seg;

	if (!w->opts.window)
		return 0;
	/* one entry and at most one segment per object */
	list = malloc((w->nr ? w->nr : 1) * sizeof(*list));
	segs = malloc((w->nr ? w->nr : 1) * sizeof(*segs));
	if (!list || !segs) {
		free(list);
		free(segs);
		return pw_pack_writer__nomem(w);
	}
	for (i = 0; i < w->nr; i++) {
		struct wobj *o = &w->objs[i];

		if (pw_pack_writer__chained(o) || (o->flags & W_MISSING) || o->size > BIG_FILE ||
		    o->size < MIN_DELTA_SIZE || !o->type)
			continue;
		list[n].idx = (uint32_t)i;
		list[n].type = o->type;
		list[n].base_only = !!(o->flags & W_BASE_ONLY);
		list[n].hash = o->hash;
		list[n].size = o->size;
		if (!(o->flags & W_BASE_ONLY))
			w->search_total++;
		n++;
	}
	qsort(list, n, sizeof(*list), cand_cmp);

	nthreads = w->opts.threads ? (size_t)w->opts.threads : 2;
	if (nthreads > 2)
		nthreads = 2;
	/* a second thread pays off only on longer lists, unless asked for */
	if (!w->opts.objects_dir || (!w->opts.threads && n < 4 * (size_t)w->opts.window + 256) ||
	    (w->translating && !w->translate.data2))
		nthreads = 1;
	/* Segments of about n/32 objects (at least a few windows), cut where the
	 * name hash changes so that files of one name share a window. */
	seg_len = n / 32;
	if (seg_len < 16 * (size_t)w->opts.window + 64)
		seg_len = 16 * (size_t)w->opts.window + 64;
	for (start = 0; start < n;) {
		size_t end = start + seg_len;

		if (nthreads == 1 || end >= n) {
			end = n;
		} else {
			while (end < n && list[end].hash == list[end - 1].hash &&
			       list[end].type == list[end - 1].type && end - start < 4 * seg_len)
				end++;
		}
		segs[nsegs].start = start;
		segs[nsegs].end = end;
		nsegs++;
		start = end;
	}
	/* then the mirrored deltas, in segments of their own */
	if ((rc = mirror_order(w, list, &n, segs, &nsegs))) {
		free(list);
		free(segs);
		return rc;
	}
	memset(wk, 0, sizeof(wk));
	atomic_init(&next_seg, 0);
	for (i = 0; i < 2; i++) {
		wk[i].w = w;
		wk[i].list = list;
		wk[i].segs = segs;
		wk[i].nsegs = nsegs;
		wk[i].next_seg = &next_seg;
		wk[i].tr_data = i ? w->translate.data2 : w->translate.data;
		wk[i].comp = libdeflate_alloc_compressor(w->opts.compression);
		if (!wk[i].comp)
			rc = pw_pack_writer__nomem(w);
	}
	if (!rc && nthreads == 2 && pw_odb_open(&odb2, w->opts.objects_dir, w->algo, &w->err)) {
		nthreads = 1;
		pw_error_clear(&w->err);
	}
	if (!rc) {
		wk[0].odb = w->odb;
		wk[1].odb = odb2;
		pw_pack_writer__progress(w, "Compressing objects", 0, w->search_total, 0);
		if (nthreads == 2 && !pthread_create(&tid, NULL, worker_main, &wk[1]))
			started = 1;
		worker_main(&wk[0]);
		if (started)
			pthread_join(tid, NULL);
		if (wk[0].rc)
			rc = pw_error_copy(&w->err, &wk[0].err);
		else if (started && wk[1].rc)
			rc = pw_error_copy(&w->err, &wk[1].err);
		if (!rc)
			pw_pack_writer__progress(w, "Compressing objects", w->search_total,
			                         w->search_total, 1);
	}
	for (i = 0; i < 2; i++)
		libdeflate_free_compressor(wk[i].comp);
	pw_odb_free(odb2);
	free(list);
	free(segs);
	return rc;
}
