/* Writing .bitmap files (format version 1, as Git 2.39 writes them: full
 * DAG and the name-hash cache, no lookup table) for a pack just written.
 *
 * 1. Every commit of the pack is parsed (tree, parents, date) and the
 *    commits are put in topological order. A pack that is not closed under
 *    reachability (a parent, tree or blob missing) gets no bitmap.
 * 2. Selection as Git's: the newest commits, then one commit (a merge when
 *    there is one) per window along the date order, the windows ever wider.
 * 3. The selected commits are walked in topological order: each walk stops
 *    at objects already in the set and ORs in the bitmap of any selected
 *    commit it meets. Commits are taken newest (highest topological number)
 *    first, so a bitmapped commit is met before the history under it.
 * 4. The entries are written newest first, each XORed with one of the ten
 *    written before it when that is smaller (chains of any length, as Git). */
#include <stdlib.h>
#include <string.h>

#include "pack/bitmap.h"
#include "odb/commit-queue.h"
#include "odb/entry.h"
#include "packwire/object.h"
#include "hash/oidmap.h"

#define XOR_WINDOW 10
#define RUN_MAX    0xffffffffu
#define LIT_MAX    0x7fffffffu

/* A growable vector of 64-bit words (an EWAH being built). */
struct words {
	uint64_t *v;
	size_t n, alloc;
};

static int words_push(struct words *w, uint64_t x)
{
	if (w->n == w->alloc) {
		size_t na = w->alloc ? w->alloc * 2 : 64;
		uint64_t *nv = realloc(w->v, na * sizeof(*nv));

		if (!nv)
			return PW_ENOMEM;
		w->v = nv;
		w->alloc = na;
	}
	w->v[w->n++] = x;
	return 0;
}

/* An EWAH: its words and the position of its last run-length word. */
struct ewah_enc {
	struct words w;
	uint32_t rlw;
	uint32_t bit_size;
};

static int is_clean(uint64_t x)
{
	return x == 0 || x == ~(uint64_t)0;
}

/* Compress n plain words: run-length words (bit 0: the run's bit, bits 1-32:
 * run length, bits 33-63: literal words following) and literal words. Zero
 * words at the end are left out; an empty set is one empty marker word. */
static int ewah_encode(struct ewah_enc *out, const uint64_t *src, size_t n)
{
	size_t i = 0;

	out->w.n = 0;
	out->rlw = 0;
	while (n && !src[n - 1])
		n--;
	out->bit_size = n ? (uint32_t)(n * 64 - (size_t)__builtin_clzll(src[n - 1])) : 0;
	do {
		size_t at = out->w.n;
		uint64_t run = 0, lit = 0, bit = 0;

		if (words_push(&out->w, 0))
			return PW_ENOMEM;
		out->rlw = (uint32_t)at;
		if (i < n && is_clean(src[i])) {
			uint64_t kind = src[i];

			bit = kind & 1;
			while (i < n && src[i] == kind && run < RUN_MAX) {
				run++;
				i++;
			}
		}
		while (i < n && !is_clean(src[i]) && lit < LIT_MAX) {
			if (words_push(&out->w, src[i]))
				return PW_ENOMEM;
			lit++;
			i++;
		}
		out->w.v[at] = bit | run << 1 | lit << 33;
	} while (i < n);
	return 0;
}

/* OR an EWAH of ours into a plain set. */
static void ewah_or(const struct ewah_enc *e, struct pw_bitset *dst)
{
	size_t i = 0, pos = 0;

	while (i < e->w.n) {
		uint64_t rlw = e->w.v[i++], run = (rlw >> 1) & RUN_MAX, lit = rlw >> 33, k;

		if (rlw & 1)
			for (k = 0; k < run; k++)
				dst->w[pos + k] = ~(uint64_t)0;
		pos += run;
		for (k = 0; k < lit; k++)
			dst->w[pos++] |= e->w.v[i++];
	}
}

static size_t ewah_serialized_size(const struct ewah_enc *e)
{
	return 8 + e->w.n * 8 + 4;
}

static int ewah_serialize(struct pw_buf *b, const struct ewah_enc *e)
{
	uint8_t hdr[8];
	size_t i, at;
	int rc;

	pw_put_be32(hdr, e->bit_size);
	pw_put_be32(hdr + 4, (uint32_t)e->w.n);
	if ((rc = pw_buf_grow(b, ewah_serialized_size(e))))
		return rc;
	pw_buf_add(b, hdr, 8);
	at = b->len;
	for (i = 0; i < e->w.n; i++)
		pw_put_be64((uint8_t *)b->data + at + i * 8, e->w.v[i]);
	pw_buf_setlen(b, at + e->w.n * 8);
	pw_put_be32(hdr, e->rlw);
	return pw_buf_add(b, hdr, 4);
}

/* ---- the writer ------------------------------------------------------------ */

struct bcommit {
	uint32_t pos;     /* pack position */
	uint32_t tree;    /* pack position of the root tree */
	uint32_t parents; /* first parent in bw.parents */
	uint32_t nparents;
	uint32_t topo;  /* rank in topological order, parents first */
	int32_t stored; /* entry number when selected and built, else -1 */
	int64_t time;
	uint8_t selected;
	uint8_t preferred;
};

struct stored {
	uint32_t commit;      /* commit number */
	struct ewah_enc full; /* for later walks */
	struct ewah_enc out;  /* as written: full or XORed */
	uint8_t xor ;         /* 0 or how many entries back */
};

/* Trees walked lately, by pack position (direct-mapped): the reference of
 * a tree walked next is mostly its previous version, walked just before. */
#define TREE_CACHE 512
/* Deepest tree nesting the walk follows (as rev-list's). */
#define MAX_TREE_DEPTH 4096

/* A tree read, and the end offset of each of its entries (uint32 each),
 * complete once it has been walked to its end. */
struct wtree {
	struct pw_buf data, ends;
};

struct tree_slot {
	uint32_t key; /* pack position + 1, 0 when empty */
	struct wtree t;
};

/* One depth of the walk: the tree and its reference. */
struct level {
	struct wtree cur, ref;
};

struct bw {
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	const struct pw_bitmap_obj *objs;
	uint32_t nr;
	struct pw_error *err;
	const struct pw_bitmap_write_index_opts *opts;
	struct pw_oidmap map; /* oid -> pack position + 1 */
	uint32_t *commit_of;  /* pack position -> commit number or UINT32_MAX */
	struct bcommit *c;
	uint32_t nc;
	uint32_t *parents;
	size_t nparents, aparents;
	uint32_t *by_topo; /* commit numbers in topological order */
	struct stored *st;
	uint32_t nst, nsel;
	struct pw_bitset set;
	struct pw_commit_queue queue; /* commit numbers, by topological rank */
	uint32_t *order;              /* write order: entry numbers, newest commit first */
	uint32_t *queued;             /* per commit: the number of the walk that queued it */
	uint32_t walk;
	uint32_t *walked; /* commits a build walks, newest first */
	size_t nwalked;
	struct level **lv; /* per tree depth */
	size_t ndepth;
	struct tree_slot *cache; /* TREE_CACHE trees walked lately */
	pw_bitmap_pos_fn pos_fn; /* the caller's lookup, else map */
	void *pos_ctx;
	struct pw_buf obuf;
};

static void progress(struct bw *b, const char *title, uint64_t n, uint64_t total, int done)
{
	if (b->opts && b->opts->progress)
		b->opts->progress(b->opts->progress_data, title, n, total, done);
}

static int nomem(struct bw *b)
{
	return pw_error_set(b->err, PW_ENOMEM, "bitmap: out of memory");
}

static int not_closed(struct bw *b, const struct pw_oid *oid, const char *what)
{
	char hex[PW_MAX_HEXSZ + 1];

	return pw_error_set(b->err, PW_ENOTFOUND,
	                    "bitmap: %s %s is not in the pack (the pack is not closed "
	                    "under reachability); no bitmap written",
	                    what, pw_oid_to_hex(oid, hex));
}

static int64_t pos_of(struct bw *b, const struct pw_oid *oid)
{
	struct pw_oidmap_entry *e;

	if (b->pos_fn)
		return b->pos_fn(b->pos_ctx, oid);
	e = pw_oidmap_get(&b->map, oid);

	return e ? (int64_t)((uintptr_t)e->value - 1) : -1;
}

/* A commit's tree, parents and date: from the caller's walk, else read. */
static int commit_info(struct bw *b, const struct pw_oid *oid, struct pw_commit_info *ci,
                       struct pw_buf *buf)
{
	int type, rc = 0;

	if (b->opts && b->opts->commit &&
	    (rc = b->opts->commit(b->opts->commit_data, oid, ci)) != 0)
		return rc == 1 ? 0 : rc == PW_ENOMEM ? nomem(b) : rc;
	if (pw_odb_read(b->odb, oid, &type, buf))
		return pw_error_copy(b->err, pw_odb_error(b->odb));
	return pw_commit_parse(ci, buf->data, buf->len, b->algo, b->err);
}

static int load_commits(struct bw *b)
{
	struct pw_buf buf = PW_BUF_INIT;
	uint32_t i, n = 0;
	int rc = 0;

	if (!b->pos_fn && pw_oidmap_reserve(&b->map, b->nr))
		return nomem(b);
	if (!(b->commit_of = malloc(((size_t)b->nr + 1) * sizeof(*b->commit_of))))
		return nomem(b);
	for (i = 0; i < b->nr; i++) {
		if (!b->pos_fn) {
			int created;
			struct pw_oidmap_entry *e =
			        pw_oidmap_put(&b->map, &b->objs[i].oid, &created);

			if (!e)
				return nomem(b);
			e->value = (void *)(uintptr_t)(i + 1);
		}
		b->commit_of[i] = UINT32_MAX;
		if (b->objs[i].type == PW_OBJ_COMMIT)
			b->commit_of[i] = n++;
	}
	if (!(b->c = calloc(n ? n : 1, sizeof(*b->c))))
		return nomem(b);
	b->nc = n;
	for (i = 0; i < b->nr && !rc; i++) {
		struct pw_commit_info ci;
		struct bcommit *c;
		int64_t p;
		size_t k;

		if (b->commit_of[i] == UINT32_MAX)
			continue;
		c = &b->c[b->commit_of[i]];
		c->pos = i;
		c->stored = -1;
		if ((rc = commit_info(b, &b->objs[i].oid, &ci, &buf)))
			break;
		c->time = ci.commit_time;
		if ((p = pos_of(b, &ci.tree)) < 0)
			rc = not_closed(b, &ci.tree, "tree");
		c->tree = (uint32_t)p;
		c->parents = (uint32_t)b->nparents;
		for (k = 0; k < ci.nr_parents && !rc; k++) {
			if ((p = pos_of(b, &ci.parents[k])) < 0 || b->commit_of[p] == UINT32_MAX) {
				rc = not_closed(b, &ci.parents[k], "commit");
				break;
			}
			if (b->nparents == b->aparents) {
				size_t na = b->aparents ? b->aparents * 2 : 1024;
				uint32_t *np = realloc(b->parents, na * sizeof(*np));

				if (!np) {
					rc = nomem(b);
					break;
				}
				b->parents = np;
				b->aparents = na;
			}
			b->parents[b->nparents++] = b->commit_of[p];
		}
		c->nparents = (uint32_t)(b->nparents - c->parents);
		pw_commit_info_free(&ci);
		if (i % 1024 == 0)
			progress(b, "Reading commits for bitmaps", i, b->nr, 0);
	}
	pw_buf_free(&buf);
	return rc;
}

/* Parents before children: an iterative depth-first post-order. */
static int topo_sort(struct bw *b)
{
	uint32_t *stack, *next, i, n = 0;
	uint8_t *state; /* 0 new, 1 on the stack, 2 done */
	size_t sp;

	stack = malloc(((size_t)b->nc + 1) * sizeof(*stack));
	next = calloc((size_t)b->nc + 1, sizeof(*next));
	state = calloc((size_t)b->nc + 1, 1);
	b->by_topo = malloc(((size_t)b->nc + 1) * sizeof(*b->by_topo));
	if (!stack || !next || !state || !b->by_topo) {
		free(stack);
		free(next);
		free(state);
		return nomem(b);
	}
	for (i = 0; i < b->nc; i++) {
		if (state[i])
			continue;
		sp = 0;
		stack[sp++] = i;
		state[i] = 1;
		while (sp) {
			uint32_t c = stack[sp - 1];
			struct bcommit *bc = &b->c[c];

			if (next[c] < bc->nparents) {
				uint32_t p = b->parents[bc->parents + next[c]++];

				if (!state[p]) {
					state[p] = 1;
					stack[sp++] = p;
				}
				continue;
			}
			state[c] = 2;
			bc->topo = n;
			b->by_topo[n++] = c;
			sp--;
		}
	}
	free(stack);
	free(next);
	free(state);
	return 0;
}

struct by_date {
	int64_t time;
	uint32_t topo, c;
};

/* Newest first; among equal dates, children first. */
static int date_cmp(const void *pa, const void *pb)
{
	const struct by_date *a = pa, *b = pb;

	if (a->time != b->time)
		return a->time < b->time ? 1 : -1;
	return a->topo < b->topo ? 1 : a->topo > b->topo ? -1 : 0;
}

/* Git's spacing of bitmapped commits along the date order: how far past
 * the i-th commit the next window ends. Each of the newest 100 commits, then
 * one in each window of a width growing to 100, and past 20000 commits one
 * in windows growing to 5000, so that old history costs few bitmaps. */
static uint32_t window_after(uint32_t i)
{
	if (i <= 100)
		return 0;
	if (i <= 20000)
		return i - 100 < 100 ? i - 100 : 100;
	return i - 20000 < 100 ? 100 : i - 20000 < 5000 ? i - 20000 : 5000;
}

/* The commits Git 2.39 selects (pack-bitmap-write's select_commits): all of
 * them in a pack of fewer than 100, else by windows along the date order,
 * newest first; in each window the last merge, or else the window's last
 * commit, unless a preferred commit is in it. The last, partial window gets
 * none. Tips are not favoured otherwise (Git neither): a walk from a tip
 * meets a bitmapped commit within one window. */
static int select_commits(struct bw *b, const struct pw_oid *prefer, size_t nprefer)
{
	struct by_date *order;
	uint32_t i, j, next;
	size_t k;

	/* preferred commits (pack.preferBitmapTips) win their window */
	for (k = 0; k < nprefer; k++) {
		struct pw_oid peeled;
		struct pw_error e = {0};
		int type = PW_OBJ_NONE;
		int64_t p;

		if (pw_odb_peel(b->odb, &prefer[k], &peeled, &type, &e) < 0 ||
		    type != PW_OBJ_COMMIT)
			continue;
		if ((p = pos_of(b, &peeled)) >= 0 && b->commit_of[p] != UINT32_MAX)
			b->c[b->commit_of[p]].preferred = 1;
	}
	if (!(order = malloc(((size_t)b->nc + 1) * sizeof(*order))))
		return nomem(b);
	for (i = 0; i < b->nc; i++) {
		order[i].time = b->c[i].time;
		order[i].topo = b->c[i].topo;
		order[i].c = i;
	}
	qsort(order, b->nc, sizeof(*order), date_cmp);
	if (b->nc < 100) {
		for (i = 0; i < b->nc; i++)
			b->c[i].selected = 1;
		free(order);
		return 0;
	}
	for (i = 0;; i += next + 1) {
		uint32_t chosen;

		next = window_after(i);
		if ((uint64_t)i + next >= b->nc)
			break;
		chosen = order[i + next].c;
		for (j = 0; next && j <= next; j++) {
			const struct bcommit *c = &b->c[order[i + j].c];

			if (c->preferred) {
				chosen = order[i + j].c;
				break;
			}
			if (c->nparents > 1)
				chosen = order[i + j].c;
		}
		b->c[chosen].selected = 1;
	}
	free(order);
	return 0;
}

/* Queue a commit once per walk: a merge's parents are reached from several
 * children, and the queue (room for every commit, made in build_all) holds
 * at most one entry per commit, so the push cannot fail. Highest rank
 * first: descendants before their ancestors. */
static void queue_commit(struct bw *b, uint32_t c)
{
	if (b->queued[c] == b->walk)
		return;
	b->queued[c] = b->walk;
	(void)pw_commit_queue_push(&b->queue, c, b->c[c].topo);
}

static void wtree_init(struct wtree *t)
{
	pw_buf_init(&t->data, 0);
	pw_buf_init(&t->ends, 0);
}

static void wtree_free(struct wtree *t)
{
	pw_buf_free(&t->data);
	pw_buf_free(&t->ends);
}

static void wtree_swap(struct wtree *x, struct wtree *y)
{
	struct wtree t = *x;

	*x = *y;
	*y = t;
}

/* The walk's level at depth, made on first use (each one on its own: a
 * deeper level must not move a caller's). */
static int level_at(struct bw *b, size_t depth, struct level **out)
{
	struct level **nl;
	size_t n;

	if (depth >= MAX_TREE_DEPTH)
		return pw_error_set(b->err, PW_ECORRUPT, "bitmap: trees nested too deeply");
	if (depth >= b->ndepth) {
		n = b->ndepth ? b->ndepth * 2 : 16;
		if (!(nl = realloc(b->lv, n * sizeof(*nl))))
			return nomem(b);
		b->lv = nl;
		for (; b->ndepth < n; b->ndepth++)
			b->lv[b->ndepth] = NULL;
	}
	if (!b->lv[depth]) {
		if (!(b->lv[depth] = malloc(sizeof(struct level))))
			return nomem(b);
		wtree_init(&b->lv[depth]->cur);
		wtree_init(&b->lv[depth]->ref);
	}
	*out = b->lv[depth];
	return 0;
}

static struct tree_slot *slot_of(struct bw *b, uint32_t pos)
{
	return &b->cache[(pos * 2654435761u) >> 23 & (TREE_CACHE - 1)];
}

/* Take the tree at pos from the cache into t: 1, or 0 when not there. */
static int take_cached(struct bw *b, uint32_t pos, struct wtree *t)
{
	struct tree_slot *sl = slot_of(b, pos);

	if (sl->key != pos + 1)
		return 0;
	wtree_swap(&sl->t, t);
	sl->key = 0;
	return 1;
}

/* The tree at pack position pos into t->data: from the cache, or read. */
static int read_tree(struct bw *b, uint32_t pos, struct wtree *t)
{
	int type;

	if (take_cached(b, pos, t))
		return 0;
	if (pw_odb_read(b->odb, &b->objs[pos].oid, &type, &t->data))
		return pw_error_copy(b->err, pw_odb_error(b->odb));
	if (type != PW_OBJ_TREE || b->objs[pos].type != PW_OBJ_TREE)
		return pw_error_set(b->err, PW_ECORRUPT, "bitmap: object is not a tree");
	return 0;
}

/* Keep the tree at pos, walked to its end (t gets the buffers it evicts,
 * to reuse). */
static void keep_tree(struct bw *b, uint32_t pos, struct wtree *t)
{
	struct tree_slot *sl = slot_of(b, pos);

	wtree_swap(&sl->t, t);
	sl->key = pos + 1;
}

static int is_tree_mode(unsigned mode)
{
	return (mode & 0170000) == 040000;
}

/* Git's order of tree entries: by name, a tree's name as if it ended in
 * '/'. */
static int entry_cmp(const struct pw_tree_entry *x, const struct pw_tree_entry *y)
{
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	unsigned cx, cy;

	if (c)
		return c;
	cx = x->name_len > n ? (uint8_t)x->name[n] : is_tree_mode(x->mode) ? '/' : 0;
	cy = y->name_len > n ? (uint8_t)y->name[n] : is_tree_mode(y->mode) ? '/' : 0;
	return cx < cy ? -1 : cx > cy;
}

/* How many bytes a and b have in common from their start. */
static size_t common_len(const char *a, const char *b, size_t n)
{
	size_t i = 0;
	uint64_t x, y;

	while (i + 256 <= n && !memcmp(a + i, b + i, 256))
		i += 256;
	while (i + 8 <= n) {
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			break;
		i += 8;
	}
	while (i < n && a[i] == b[i])
		i++;
	return i;
}

static size_t nends(const struct wtree *t)
{
	return t->ends.len / sizeof(uint32_t);
}

/* Where entry j of t ends (its next entry's offset). */
static size_t end_of(const struct wtree *t, size_t j)
{
	uint32_t v;

	memcpy(&v, t->ends.data + j * sizeof(v), sizeof(v));
	return v;
}

static int add_end(struct bw *b, struct wtree *t, size_t at)
{
	uint32_t v = (uint32_t)at;

	return pw_buf_add(&t->ends, &v, sizeof(v)) ? nomem(b) : 0;
}

/* A walk over a tree and its reference: cursors at an entry's start. */
struct tree_pair {
	struct wtree *t, *r;
	size_t tp; /* offset in t */
	size_t rq; /* entry number in r */
};

/* Past the entries of t that are, byte for byte, the reference's next ones:
 * the same bytes make the same entries, whose ends the reference knows. */
static int skip_same(struct bw *b, struct tree_pair *w)
{
	size_t n = nends(w->r), rp = w->rq ? end_of(w->r, w->rq - 1) : 0, lo = w->rq, hi = n, m;
	size_t left = w->t->data.len - w->tp, at;

	if (rp > w->r->data.len)
		return 0;
	m = common_len(w->t->data.data + w->tp, w->r->data.data + rp,
	               left < w->r->data.len - rp ? left : w->r->data.len - rp);
	while (lo < hi) { /* the first of r's entries not within the bytes in common */
		size_t mid = lo + (hi - lo) / 2;

		if (end_of(w->r, mid) <= rp + m)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == w->rq)
		return 0;
	at = w->t->ends.len;
	if (pw_buf_grow(&w->t->ends, (lo - w->rq) * sizeof(uint32_t)))
		return nomem(b);
	for (; w->rq < lo; w->rq++, at += sizeof(uint32_t)) {
		uint32_t v = (uint32_t)(end_of(w->r, w->rq) - rp + w->tp);

		memcpy(w->t->ends.data + at, &v, sizeof(v));
	}
	pw_buf_setlen(&w->t->ends, at);
	w->tp += end_of(w->r, lo - 1) - rp;
	return 0;
}

/* The entry te of a tree against its reference, whose cursor is at the
 * first entry not yet met: 1 when the reference has it (same name, mode
 * and id), 2 when it has a tree of that name (rte: that entry), else 0.
 * The reference's whole closure is in the set, so an entry it has is in
 * the set too. */
static int in_ref(struct bw *b, struct tree_pair *w, struct pw_tree_entry *rte,
                  const struct pw_tree_entry *te)
{
	int c;

	while (w->rq < nends(w->r)) {
		size_t at = w->rq ? end_of(w->r, w->rq - 1) : 0;

		if (pw_tree_next(w->r->data.data, w->r->data.len, &at, b->algo, rte, b->err) != 1)
			break;
		if ((c = entry_cmp(rte, te)) > 0)
			return 0;
		w->rq++;
		if (c < 0)
			continue;
		if (rte->mode == te->mode && pw_oid_equal(&rte->oid, &te->oid))
			return 1;
		return is_tree_mode(rte->mode) && is_tree_mode(te->mode) ? 2 : 0;
	}
	w->rq = nends(w->r); /* a bad reference only loses the shortcut */
	return 0;
}

/* The reference tree at pos with its entries' ends: from the cache, else
 * read and parsed (a tree walked long ago: cheaper than a lookup of each of
 * its entries). 0, or an error (then there is no reference). */
static int read_ref(struct bw *b, uint32_t pos, struct wtree *r)
{
	struct pw_tree_entry e;
	size_t at = 0;
	int rc;

	if (take_cached(b, pos, r))
		return 0;
	if ((rc = read_tree(b, pos, r)))
		return rc;
	pw_buf_reset(&r->ends);
	while ((rc = pw_tree_next(r->data.data, r->data.len, &at, b->algo, &e, b->err)) == 1)
		if ((rc = add_end(b, r, at)))
			return rc;
	return rc;
}

/* Set the tree at pos and everything under it not yet in the set. ref
 * (-1 for none) is a tree whose closure is in the set, mostly the same
 * path's previous version: the runs of
 * entries the two share are skipped without a lookup, and a subtree
 * changed under the same name is walked against the reference's. Depth
 * first, so a tree in the set between two calls from walk_roots has all
 * its closure there. */
static int walk_tree(struct bw *b, uint32_t pos, int64_t ref, size_t depth)
{
	struct level *lv = NULL;
	struct pw_tree_entry te, rte;
	struct tree_pair w;
	int r, have, rc;

	if ((rc = level_at(b, depth, &lv)))
		return rc;
	pw_bitset_set(&b->set, pos);
	if ((rc = read_tree(b, pos, &lv->cur)))
		return rc;
	pw_buf_reset(&lv->cur.ends);
	have = ref >= 0 && !read_ref(b, (uint32_t)ref, &lv->ref);
	w.t = &lv->cur;
	w.r = &lv->ref;
	w.tp = w.rq = 0;
	for (;;) {
		int64_t p, sub = -1;
		int same = 0;

		if (have && w.rq < nends(w.r) && (rc = skip_same(b, &w)))
			return rc;
		r = pw_tree_next(w.t->data.data, w.t->data.len, &w.tp, b->algo, &te, b->err);
		if (r != 1)
			break;
		if ((rc = add_end(b, w.t, w.tp)))
			return rc;
		if (have && w.rq < nends(w.r))
			same = in_ref(b, &w, &rte, &te);
		if (same == 1 || te.mode == 0160000)
			continue; /* in the set already; a submodule commit: not ours */
		if ((p = pos_of(b, &te.oid)) < 0)
			return not_closed(b, &te.oid, is_tree_mode(te.mode) ? "tree" : "blob");
		if (pw_bitset_get(&b->set, (uint32_t)p))
			continue;
		if (!is_tree_mode(te.mode)) {
			pw_bitset_set(&b->set, (uint32_t)p);
			continue;
		}
		if (same == 2 && (sub = pos_of(b, &rte.oid)) >= 0 &&
		    !pw_bitset_get(&b->set, (uint32_t)sub))
			sub = -1;
		if ((rc = walk_tree(b, (uint32_t)p, sub, depth + 1)))
			return rc;
	}
	if (r < 0)
		return r;
	keep_tree(b, pos, &lv->cur);
	if (have)
		keep_tree(b, (uint32_t)ref, &lv->ref);
	return 0;
}

/* The trees of the commits a build walked, oldest first, each against its
 * first parent's when that one is in the set (walked before it, or in a
 * bitmap ORed in). */
static int walk_roots(struct bw *b)
{
	size_t i;
	int rc;

	for (i = b->nwalked; i--;) {
		const struct bcommit *bc = &b->c[b->walked[i]];
		int64_t ref = -1;

		if (pw_bitset_get(&b->set, bc->tree))
			continue;
		if (bc->nparents) {
			uint32_t pt = b->c[b->parents[bc->parents]].tree;

			if (pw_bitset_get(&b->set, pt))
				ref = pt;
		}
		if ((rc = walk_tree(b, bc->tree, ref, 0)))
			return rc;
	}
	return 0;
}

/* The full bitmap of commit c (selected, its selected ancestors done) in b->set. */
static int build_one(struct bw *b, uint32_t c)
{
	memset(b->set.w, 0, b->set.nwords * sizeof(*b->set.w));
	pw_commit_queue_clear(&b->queue);
	b->walk++; /* starts at 1: queued[] is zeroed */
	b->nwalked = 0;
	queue_commit(b, c);
	while (b->queue.nr) {
		uint32_t x = (uint32_t)pw_commit_queue_pop(&b->queue, NULL), k;
		struct bcommit *bc = &b->c[x];

		if (pw_bitset_get(&b->set, bc->pos))
			continue;
		if (x != c && bc->stored >= 0) {
			ewah_or(&b->st[bc->stored].full, &b->set);
			continue;
		}
		pw_bitset_set(&b->set, bc->pos);
		b->walked[b->nwalked++] = x; /* once per commit: room for all */
		for (k = 0; k < bc->nparents; k++) {
			uint32_t p = b->parents[bc->parents + k];

			if (!pw_bitset_get(&b->set, b->c[p].pos))
				queue_commit(b, p);
		}
	}
	return walk_roots(b);
}

static void stored_free(struct stored *s)
{
	free(s->full.w.v);
	free(s->out.w.v);
}

/* Build every selected commit's bitmap, ancestors first (a walk stops at
 * the bitmaps built before it). */
static int build_all(struct bw *b)
{
	uint32_t t, nsel = 0;
	int rc = 0;

	for (t = 0; t < b->nc; t++)
		nsel += b->c[t].selected;
	b->nsel = nsel;
	if (!(b->st = calloc(nsel ? nsel : 1, sizeof(*b->st))) ||
	    pw_commit_queue_reserve(&b->queue, (size_t)b->nc + 1) ||
	    !(b->queued = calloc((size_t)b->nc + 1, sizeof(*b->queued))) ||
	    !(b->walked = malloc(((size_t)b->nc + 1) * sizeof(*b->walked))) ||
	    !(b->cache = calloc(TREE_CACHE, sizeof(*b->cache))) || pw_bitset_init(&b->set, b->nr))
		rc = nomem(b);
	for (t = 0; b->cache && t < TREE_CACHE; t++)
		wtree_init(&b->cache[t].t);
	for (t = 0; t < b->nc && !rc; t++) {
		uint32_t c = b->by_topo[t], n = b->nst;

		if (!b->c[c].selected)
			continue;
		if ((rc = build_one(b, c)))
			break;
		b->st[n].commit = c;
		if (ewah_encode(&b->st[n].full, b->set.w, b->set.nwords)) {
			rc = nomem(b);
			break;
		}
		b->c[c].stored = (int32_t)n;
		b->nst++;
		progress(b, "Building bitmaps", b->nst, nsel, 0);
	}
	if (!rc)
		progress(b, "Building bitmaps", b->nst, nsel, 1);
	return rc;
}

/* The entries are written newest first, by date, as Git writes them: the
 * newest commits reach nearly every object and pack order follows recency,
 * so their bitmaps are long runs, and each older one differs little from
 * one of the ten written before it (by date, not by topology: the old roots
 * of merged-in projects would sit among recent commits). */
static struct stored *written(struct bw *b, uint32_t j)
{
	return &b->st[b->order[j]];
}

/* The write order: newest commit first (children first among equal dates). */
static int order_entries(struct bw *b)
{
	struct by_date *d = malloc(((size_t)b->nst + 1) * sizeof(*d));
	uint32_t i;

	b->order = malloc(((size_t)b->nst + 1) * sizeof(*b->order));
	if (!d || !b->order) {
		free(d);
		return nomem(b);
	}
	for (i = 0; i < b->nst; i++) {
		d[i].time = b->c[b->st[i].commit].time;
		d[i].topo = b->c[b->st[i].commit].topo;
		d[i].c = i;
	}
	qsort(d, b->nst, sizeof(*d), date_cmp);
	for (i = 0; i < b->nst; i++)
		b->order[i] = d[i].c;
	free(d);
	return 0;
}

static int choose_xor(struct bw *b)
{
	struct pw_bitset ring[XOR_WINDOW + 1], tmp = {0};
	struct ewah_enc trial = {{NULL, 0, 0}, 0, 0};
	uint32_t j;
	int rc = 0, r;

	memset(ring, 0, sizeof(ring));
	if (pw_bitset_init(&tmp, b->nr))
		rc = nomem(b);
	for (r = 0; r <= XOR_WINDOW && !rc; r++)
		if (pw_bitset_init(&ring[r], b->nr))
			rc = nomem(b);
	for (j = 0; j < b->nst && !rc; j++) {
		struct stored *s = written(b, j);
		struct pw_bitset *cur = &ring[j % (XOR_WINDOW + 1)];
		size_t best, i;
		uint32_t k;

		memset(cur->w, 0, cur->nwords * sizeof(*cur->w));
		ewah_or(&s->full, cur);
		if (ewah_encode(&s->out, cur->w, cur->nwords)) {
			rc = nomem(b);
			break;
		}
		best = ewah_serialized_size(&s->out);
		for (k = 1; k <= XOR_WINDOW && k <= j; k++) {
			const struct pw_bitset *prev = &ring[(j - k) % (XOR_WINDOW + 1)];

			for (i = 0; i < tmp.nwords; i++)
				tmp.w[i] = cur->w[i] ^ prev->w[i];
			if (ewah_encode(&trial, tmp.w, tmp.nwords)) {
				rc = nomem(b);
				break;
			}
			if (ewah_serialized_size(&trial) < best) {
				struct ewah_enc sw = s->out;

				best = ewah_serialized_size(&trial);
				s->out = trial;
				trial = sw;
				s->xor = (uint8_t)k;
			}
		}
	}
	for (r = 0; r <= XOR_WINDOW; r++)
		pw_bitset_free(&ring[r]);
	pw_bitset_free(&tmp);
	free(trial.w.v);
	return rc;
}

struct idx_sort {
	struct pw_oid oid;
	uint32_t pos;
};

static int idx_sort_cmp(const void *a, const void *b)
{
	return pw_oid_cmp(&((const struct idx_sort *)a)->oid, &((const struct idx_sort *)b)->oid);
}

/* The position in the .idx (oid order) of each stored commit (out, by
 * entry number): how many objects have a smaller id. Only the stored
 * commits are sorted; each object finds by binary search (on the ids'
 * first 8 bytes, then the whole) the first of them it sorts before. */
static int idx_positions(struct bw *b, uint32_t *out)
{
	struct idx_sort *is = malloc(((size_t)b->nst + 1) * sizeof(*is));
	uint64_t *keys = malloc(((size_t)b->nst + 1) * sizeof(*keys));
	uint32_t *cnt = calloc((size_t)b->nst + 1, sizeof(*cnt)), i, k, sum = 0;

	if (!is || !keys || !cnt) {
		free(is);
		free(keys);
		free(cnt);
		return nomem(b);
	}
	for (k = 0; k < b->nst; k++) {
		is[k].oid = b->objs[b->c[b->st[k].commit].pos].oid;
		is[k].pos = k;
	}
	qsort(is, b->nst, sizeof(*is), idx_sort_cmp);
	for (k = 0; k < b->nst; k++)
		keys[k] = pw_get_be64(is[k].oid.id);
	for (i = 0; i < b->nr; i++) {
		const struct pw_oid *x = &b->objs[i].oid;
		uint64_t kx = pw_get_be64(x->id);
		uint32_t lo = 0, hi = b->nst;

		while (lo < hi) {
			uint32_t mid = lo + (hi - lo) / 2;

			if (keys[mid] > kx || (keys[mid] == kx && pw_oid_cmp(&is[mid].oid, x) > 0))
				hi = mid;
			else
				lo = mid + 1;
		}
		cnt[lo]++;
	}
	for (k = 0; k < b->nst; k++) {
		sum += cnt[k];
		out[is[k].pos] = sum;
	}
	free(is);
	free(keys);
	free(cnt);
	return 0;
}

static int serialize(struct bw *b, const uint8_t *pack_checksum)
{
	struct pw_buf *o = &b->obuf;
	struct ewah_enc e = {{NULL, 0, 0}, 0, 0};
	uint32_t *idx_of, i;
	uint8_t hdr[12], sum[PW_MAX_RAWSZ];
	struct pw_hash_ctx h;
	static const int types[4] = {PW_OBJ_COMMIT, PW_OBJ_TREE, PW_OBJ_BLOB, PW_OBJ_TAG};
	int t, rc = 0;

	memcpy(hdr, "BITM", 4);
	pw_put_be32(hdr + 4, 1u << 16 | PW_BITMAP_OPT_FULL_DAG | PW_BITMAP_OPT_HASH_CACHE);
	pw_put_be32(hdr + 8, b->nst);
	if (pw_buf_add(o, hdr, 12) || pw_buf_add(o, pack_checksum, b->algo->rawsz))
		return nomem(b);
	for (t = 0; t < 4 && !rc; t++) {
		memset(b->set.w, 0, b->set.nwords * sizeof(*b->set.w));
		for (i = 0; i < b->nr; i++)
			if (b->objs[i].type == types[t])
				pw_bitset_set(&b->set, i);
		if (ewah_encode(&e, b->set.w, b->set.nwords) || ewah_serialize(o, &e))
			rc = nomem(b);
	}
	free(e.w.v);
	if (rc)
		return rc;

	/* entries name their commit by its position in the .idx (oid order) */
	if (!(idx_of = malloc(((size_t)b->nst + 1) * sizeof(*idx_of))))
		return nomem(b);
	if ((rc = idx_positions(b, idx_of))) {
		free(idx_of);
		return rc;
	}
	for (i = 0; i < b->nst && !rc; i++) {
		const struct stored *s = written(b, i);
		uint8_t eh[6];

		pw_put_be32(eh, idx_of[b->order[i]]);
		eh[4] = s->xor ;
		eh[5] = 0;
		if (pw_buf_add(o, eh, 6) || ewah_serialize(o, &s->out))
			rc = nomem(b);
	}
	free(idx_of);
	if (rc)
		return rc;
	if (pw_buf_grow(o, (size_t)b->nr * 4 + PW_MAX_RAWSZ))
		return nomem(b);
	for (i = 0; i < b->nr; i++) {
		uint8_t hb[4];

		pw_put_be32(hb, b->objs[i].hash);
		pw_buf_add(o, hb, 4);
	}
	pw_hash_init_checksum(&h, b->algo); /* the .bitmap trailer */
	pw_hash_update(&h, o->data, o->len);
	pw_hash_final_checksum(&h, sum);
	return pw_buf_add(o, sum, b->algo->rawsz) ? nomem(b) : 0;
}

static void walk_free(struct bw *b)
{
	size_t i;

	for (i = 0; i < b->ndepth; i++)
		if (b->lv[i]) {
			wtree_free(&b->lv[i]->cur);
			wtree_free(&b->lv[i]->ref);
			free(b->lv[i]);
		}
	free(b->lv);
	if (b->cache)
		for (i = 0; i < TREE_CACHE; i++)
			wtree_free(&b->cache[i].t);
	free(b->cache);
	free(b->walked);
}

int pw_bitmap_write(struct pw_odb *odb, const struct pw_bitmap_obj *objs, uint32_t nr,
                    const uint8_t *pack_checksum, const struct pw_oid *tips, size_t ntips,
                    const struct pw_bitmap_write_index_opts *opts, pw_pack_out_fn fn, void *ctx,
                    struct pw_error *err)
{
	struct bw b;
	uint32_t i;
	int rc;

	memset(&b, 0, sizeof(b));
	b.odb = odb;
	b.algo = pw_odb_algo(odb);
	b.objs = objs;
	b.nr = nr;
	b.err = err;
	b.opts = opts;
	b.obuf = (struct pw_buf)PW_BUF_INIT;
	if (opts) {
		b.pos_fn = opts->pos;
		b.pos_ctx = opts->pos_data;
	}
	if (!(rc = load_commits(&b)) && !(rc = topo_sort(&b)) &&
	    !(rc = select_commits(&b, tips, ntips)) && !(rc = build_all(&b)) &&
	    !(rc = order_entries(&b)) && !(rc = choose_xor(&b)) &&
	    !(rc = serialize(&b, pack_checksum)))
		rc = fn(ctx, b.obuf.data, b.obuf.len, err);
	pw_oidmap_free(&b.map);
	free(b.commit_of);
	free(b.c);
	free(b.parents);
	free(b.by_topo);
	for (i = 0; i < b.nst; i++)
		stored_free(&b.st[i]);
	if (b.st && b.nst < b.nsel) /* a partly built entry */
		stored_free(&b.st[b.nst]);
	free(b.st);
	pw_bitset_free(&b.set);
	pw_commit_queue_free(&b.queue);
	free(b.queued);
	free(b.order);
	walk_free(&b);
	pw_buf_free(&b.obuf);
	return rc;
}
