/* The index-pack engine's phase 2: every delta resolved from its base on
 * the resolver threads, the thin pack completed, the ids checked. */
#include <errno.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "odb/delta.h"
#include "odb/entry.h"
#include "hash/object-pair.h"
#include "pack/index-pack-priv.h"
#include "packwire/object.h"
#include "util/fs.h"

/* ---- phase 2 ------------------------------------------------------------ */

/* The first error of any thread wins. */
static int fail_from(struct pw_ipack *ip, const struct pw_error *e)
{
	pthread_mutex_lock(&ip->err_lock);
	if (!ip->err.code)
		pw_error_copy(&ip->err, e);
	pthread_mutex_unlock(&ip->err_lock);
	__atomic_store_n(&ip->failed, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&ip->q_lock);
	pthread_cond_broadcast(&ip->q_cond);
	pthread_mutex_unlock(&ip->q_lock);
	return e->code ? e->code : PW_ERROR;
}

static int cmp_ofs(const void *a, const void *b)
{
	const struct ofs_child *x = a, *y = b;

	if (x->base != y->base)
		return x->base < y->base ? -1 : 1;
	return x->obj < y->obj ? -1 : x->obj > y->obj;
}

static int cmp_ref(const void *a, const void *b)
{
	const struct ref_child *x = a, *y = b;
	int c = memcmp(x->base.id, y->base.id, PW_MAX_RAWSZ);

	if (c)
		return c;
	return x->obj < y->obj ? -1 : x->obj > y->obj;
}

static void ofs_range(const struct pw_ipack *ip, uint32_t base, uint32_t *lo, uint32_t *hi)
{
	uint32_t a = 0, b = ip->nr_ofs;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;

		if (ip->ofs[m].base < base)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	while (a < ip->nr_ofs && ip->ofs[a].base == base)
		a++;
	*hi = a;
}

static void ref_range(const struct pw_ipack *ip, const struct pw_oid *oid, uint32_t *lo,
                      uint32_t *hi)
{
	uint32_t a = 0, b = ip->nr_refs;

	while (a < b) {
		uint32_t m = a + (b - a) / 2;

		if (memcmp(ip->refs[m].base.id, oid->id, PW_MAX_RAWSZ) < 0)
			a = m + 1;
		else
			b = m;
	}
	*lo = a;
	while (a < ip->nr_refs && pw_oid_equal(&ip->refs[a].base, oid))
		a++;
	*hi = a;
}

/* A base whose children were split between resolvers: read-only, freed by
 * the last one done with it. */
struct shared {
	uint8_t *data;
	int refs; /* atomic */
};

struct frame {
	uint32_t obj;
	int type;
	uint32_t depth;
	uint8_t *data; /* NULL when dropped to save memory */
	size_t len;
	uint32_t ofs_i, ofs_end, ref_i, ref_end;
	struct shared *sh; /* data belongs to sh when set */
};

/* Children of a base handed to an idle resolver. */
struct work_item {
	struct shared *sh;
	size_t len;
	uint32_t obj, depth;
	int type;
	uint32_t ofs_i, ofs_end, ref_i, ref_end;
};

struct worker {
	struct pw_ipack *ip;
	int id;
	struct libdeflate_decompressor *ld;
	struct frame *st;
	size_t nr, alloc;
	size_t held;
	struct pw_buf delta, result, comp; /* comp: the pack's bytes from win_off */
	uint64_t win_off;
	int pair; /* ids two at a time (resolved) */
	struct pending {
		uint8_t *data; /* NULL: none waiting */
		size_t len;
		uint32_t obj, depth, base;
		int type;
	} pend;
	struct pw_error err;
	struct ip_links links;
};

/* Bytes of the pack read at once when an entry is not in the window: a
 * pread per entry was a system call per object (164k for Git's history to
 * v2.0.0), which a virtual machine makes dear. Measured there against 64
 * KiB and a map of the whole pack: the same CPU, and a map adds the pack to
 * the peak RSS. */
#define READ_AHEAD ((size_t)16384)

/* Inflate entry i from the pack into out (replaced). */
static int reinflate(struct worker *w, uint32_t i, struct pw_buf *out)
{
	const struct pw_ipack *ip = w->ip;
	const struct ip_obj *o = &ip->objs[i];
	uint64_t start = o->e.offset + o->hdr_len, end = pw_ipack__entry_end(ip, i);
	const uint8_t *src;
	size_t used = 0;
	int rc;

	if (o->appended || end > ip->map_len || start > end)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "object at offset %llu is not in the pack",
		                    (unsigned long long)o->e.offset);
	if (o->size > (end - start) * MAX_RATIO + 64)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "object at offset %llu: size %llu is impossible",
		                    (unsigned long long)o->e.offset, (unsigned long long)o->size);
	if (ip->map) {
		src = ip->map + start;
	} else if (start >= w->win_off && end <= w->win_off + w->comp.len) {
		src = (const uint8_t *)w->comp.data + (start - w->win_off);
	} else {
		/* read ahead: a delta's children and their own deltas come after
		 * it in the pack, often within the window */
		size_t n = (size_t)(end - start), got = 0;

		if (n < READ_AHEAD)
			n = ip->map_len - start < READ_AHEAD ? (size_t)(ip->map_len - start)
			                                     : READ_AHEAD;
		pw_buf_reset(&w->comp);
		if ((rc = pw_buf_grow(&w->comp, n)))
			return pw_error_set(&w->err, rc, "out of memory reading %zu bytes", n);
		while (got < n) {
			ssize_t r = pread(ip->pack_fd, w->comp.data + got, n - got,
			                  (off_t)(start + got));

			if (r <= 0) {
				if (r < 0 && errno == EINTR)
					continue;
				return pw_error_set(&w->err, PW_EIO,
				                    "cannot read back the pack: %s",
				                    r < 0 ? strerror(errno) : "file shrank");
			}
			got += (size_t)r;
		}
		w->comp.len = n;
		w->win_off = start;
		src = (const uint8_t *)w->comp.data;
	}
	pw_buf_reset(out);
	if ((rc = pw_buf_grow(out, (size_t)o->size)))
		return pw_error_set(&w->err, rc, "out of memory inflating %llu bytes",
		                    (unsigned long long)o->size);
	if (libdeflate_zlib_decompress_ex(w->ld, src, (size_t)(end - start), out->data,
	                                  (size_t)o->size, &used, NULL) != LIBDEFLATE_SUCCESS)
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "object at offset %llu: corrupt zlib stream on second read",
		                    (unsigned long long)o->e.offset);
	out->len = (size_t)o->size;
	out->data[out->len] = '\0';
	return 0;
}

/* Before allocating a large declared result, check the delta can produce it. */
static int delta_size_plausible(const uint8_t *d, size_t len, uint64_t rsize)
{
	uint64_t bsize, rs, total = 0;
	size_t hdr;
	const uint8_t *p, *end = d + len;

	if (rsize <= ((uint64_t)1 << 20))
		return 1;
	if (pw_delta_sizes(d, len, &bsize, &rs, &hdr))
		return 0;
	for (p = d + hdr; p < end;) {
		uint8_t op = *p++;

		if (op & 0x80) {
			uint64_t size = 0;
			int k;

			for (k = 0; k < 4; k++)
				if (op & (1u << k))
					p++;
			for (k = 0; k < 3; k++)
				if (op & (0x10u << k)) {
					if (p >= end)
						return 0;
					size |= (uint64_t)*p++ << (8 * k);
				}
			total += size ? size : 0x10000;
		} else {
			total += op;
			p += op;
		}
		if (total > rsize)
			return 0;
	}
	return total == rsize;
}

/* Apply the delta of object c to base data into w->result. */
static int apply(struct worker *w, uint32_t c, const uint8_t *base, size_t base_len)
{
	struct pw_ipack *ip = w->ip;
	const struct ip_obj *o = &ip->objs[c];
	uint64_t bs, rs;
	size_t hl;
	int rc;

	if ((rc = reinflate(w, c, &w->delta)))
		return rc;
	if (pw_delta_sizes((uint8_t *)w->delta.data, w->delta.len, &bs, &rs, &hl) ||
	    !delta_size_plausible((uint8_t *)w->delta.data, w->delta.len, rs))
		return pw_error_set(&w->err, PW_ECORRUPT,
		                    "delta at offset %llu: its instructions do not produce the "
		                    "result size its header declares",
		                    (unsigned long long)o->e.offset);
	rc = pw_delta_apply(base, base_len, (uint8_t *)w->delta.data, w->delta.len, &w->result,
	                    &w->err);
	if (rc)
		return pw_error_wrap(&w->err, "delta at offset %llu",
		                     (unsigned long long)o->e.offset);
	return 0;
}

static void release_shared(struct shared *sh)
{
	if (__atomic_sub_fetch(&sh->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(sh->data);
		free(sh);
	}
}

static void frame_release(struct frame *f)
{
	if (f->sh)
		release_shared(f->sh);
	else
		free(f->data);
	f->data = NULL;
	f->sh = NULL;
}

/* Drop the data of ancestors (not the root, not the top) while over budget. */
static void trim(struct worker *w)
{
	size_t limit = w->ip->opts.cache_limit ? w->ip->opts.cache_limit : CACHE_LIMIT, k;

	for (k = 1; k + 1 < w->nr && w->held > limit; k++) {
		if (!w->st[k].data || w->st[k].sh)
			continue;
		w->held -= w->st[k].len;
		free(w->st[k].data);
		w->st[k].data = NULL;
	}
}

/* Rebuild dropped data of frame k from the nearest ancestor that has it. */
static int regenerate(struct worker *w, size_t k)
{
	int rc;

	if (w->st[k].data)
		return 0;
	if (k == 0)
		return pw_error_set(&w->err, PW_ERROR, "internal error: root data dropped");
	if ((rc = regenerate(w, k - 1)))
		return rc;
	if ((rc = apply(w, w->st[k].obj, w->st[k - 1].data, w->st[k - 1].len)))
		return rc;
	w->st[k].len = w->result.len;
	w->st[k].data = (uint8_t *)pw_buf_detach(&w->result, NULL);
	w->held += w->st[k].len;
	return 0;
}

static int push(struct worker *w, uint32_t obj, int type, uint32_t depth, uint8_t *data, size_t len)
{
	struct pw_ipack *ip = w->ip;
	struct frame *f;

	if (!data)
		return pw_error_set(&w->err, PW_ENOMEM, "out of memory");
	if (w->nr == w->alloc) {
		size_t n = w->alloc ? w->alloc * 2 : 16;
		struct frame *p = realloc(w->st, n * sizeof(*p));

		if (!p) {
			free(data);
			return pw_error_set(&w->err, PW_ENOMEM, "out of memory");
		}
		w->st = p;
		w->alloc = n;
	}
	f = &w->st[w->nr++];
	f->obj = obj;
	f->type = type;
	f->depth = depth;
	f->data = data;
	f->len = len;
	f->sh = NULL;
	if (obj != NO_OBJ && !ip->objs[obj].appended)
		ofs_range(ip, obj, &f->ofs_i, &f->ofs_end);
	else
		f->ofs_i = f->ofs_end = 0;
	ref_range(ip, &ip->objs[obj].e.oid, &f->ref_i, &f->ref_end);
	w->held += len;
	trim(w);
	return 0;
}

static int has_children(const struct pw_ipack *ip, uint32_t obj)
{
	uint32_t lo, hi;

	if (!ip->objs[obj].appended) {
		ofs_range(ip, obj, &lo, &hi);
		if (lo < hi)
			return 1;
	}
	ref_range(ip, &ip->objs[obj].e.oid, &lo, &hi);
	return lo < hi;
}

/* Another resolver is idle: hand it half of this base's remaining children. */
static void split(struct worker *w, struct frame *f)
{
	struct pw_ipack *ip = w->ip;
	uint32_t rem_ofs = f->ofs_end - f->ofs_i, rem_ref = f->ref_end - f->ref_i;
	struct work_item it;

	if (rem_ofs + rem_ref < 2 || __atomic_load_n(&ip->q_nr, __ATOMIC_RELAXED))
		return;
	memset(&it, 0, sizeof(it));
	if (!f->sh) {
		struct shared *sh = malloc(sizeof(*sh));

		if (!sh)
			return; /* resolve them ourselves */
		sh->data = f->data;
		sh->refs = 1;
		f->sh = sh;
	}
	pthread_mutex_lock(&ip->q_lock);
	if (ip->q_nr == ip->q_alloc) {
		size_t n = ip->q_alloc ? ip->q_alloc * 2 : 16;
		struct work_item *q = realloc(ip->q, n * sizeof(*q));

		if (!q) {
			pthread_mutex_unlock(&ip->q_lock);
			return;
		}
		ip->q = q;
		ip->q_alloc = n;
	}
	if (rem_ofs >= 2) {
		it.ofs_end = f->ofs_end;
		it.ofs_i = f->ofs_end - rem_ofs / 2;
		f->ofs_end = it.ofs_i;
	} else if (rem_ofs == 1) {
		it.ref_i = f->ref_i;
		it.ref_end = f->ref_end;
		f->ref_end = f->ref_i;
	} else {
		it.ref_end = f->ref_end;
		it.ref_i = f->ref_end - rem_ref / 2;
		f->ref_end = it.ref_i;
	}
	__atomic_add_fetch(&f->sh->refs, 1, __ATOMIC_ACQ_REL);
	it.sh = f->sh;
	it.len = f->len;
	it.obj = f->obj;
	it.depth = f->depth;
	it.type = f->type;
	ip->q[ip->q_nr] = it;
	__atomic_store_n(&ip->q_nr, ip->q_nr + 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&ip->q_cond);
	pthread_mutex_unlock(&ip->q_lock);
}

/* Object c is made (its data in `data`): its depth and base, the checks
 * that need its id, and the count. */
static int finish(struct worker *w, uint32_t c, int type, uint32_t depth, uint32_t base,
                  const char *data, size_t len)
{
	struct pw_ipack *ip = w->ip;
	struct ip_obj *o = &ip->objs[c];
	uint32_t done;
	int rc;

	o->depth = depth;
	o->base = base;
	if ((ip->opts.check_objects || pw_ipack__wants_links(ip)) && type != PW_OBJ_BLOB &&
	    (rc = pw_ipack__check_obj(ip, &w->links, type, data, len, &o->e.oid, &w->err)))
		return rc;
	__atomic_store_n(&o->real_type, (uint8_t)type, __ATOMIC_RELEASE);
	done = __atomic_add_fetch(&ip->resolved_nr, 1, __ATOMIC_RELAXED);
	if (w->id == 0)
		pw_ipack__report(ip, PW_IPACK_RESOLVING, done, ip->nr_deltas);
	return 0;
}

static int has_ofs_children(const struct pw_ipack *ip, uint32_t obj)
{
	uint32_t lo, hi;

	if (ip->objs[obj].appended)
		return 0;
	ofs_range(ip, obj, &lo, &hi);
	return lo < hi;
}

/* The object waiting for a partner, if any: its id alone. */
static int flush_pending(struct worker *w)
{
	struct pending *p = &w->pend;
	struct pw_oid *oid;
	int rc;

	if (!p->data)
		return 0;
	oid = &w->ip->objs[p->obj].e.oid;
	if (pw_object_hash(w->ip->algo, p->type, p->data, p->len, oid))
		rc = pw_hash_collision_error(&w->err, oid);
	else
		rc = finish(w, p->obj, p->type, p->depth, p->base, (const char *)p->data, p->len);
	free(p->data);
	p->data = NULL;
	return rc;
}

/* Object c came out of a delta into w->result: its id, its checks, and
 * its own deltas onto the stack. Ids are computed two at a time where
 * they can be (pw_object_hash_pair): an object that is no delta's base
 * waits in w->pend for the next one. Not with REF_DELTAs in the pack,
 * whose bases are found by id as soon as they are made. */
static int resolved(struct worker *w, uint32_t c, int type, uint32_t depth, uint32_t base)
{
	struct pw_ipack *ip = w->ip;
	struct ip_obj *o = &ip->objs[c];
	int rc;

	if (w->pair && !w->pend.data && !has_ofs_children(ip, c)) {
		struct pending *p = &w->pend;

		p->len = w->result.len;
		p->obj = c;
		p->type = type;
		p->depth = depth;
		p->base = base;
		p->data = (uint8_t *)pw_buf_detach(&w->result, NULL);
		return p->data ? 0 : pw_error_set(&w->err, PW_ENOMEM, "out of memory");
	}
	if (w->pend.data) {
		struct pending *p = &w->pend;
		struct pw_object_bytes in[2] = {{p->type, p->data, p->len},
		                                {type, w->result.data, w->result.len}};
		struct pw_oid out[2];
		int hrc[2];

		pw_object_hash_pair(ip->algo, in, out, hrc);
		ip->objs[p->obj].e.oid = out[0];
		o->e.oid = out[1];
		if (hrc[0] || hrc[1])
			return pw_hash_collision_error(&w->err, hrc[0] ? &out[0] : &out[1]);
		rc = finish(w, p->obj, p->type, p->depth, p->base, (const char *)p->data, p->len);
		free(p->data);
		p->data = NULL;
		if (rc)
			return rc;
	} else if (pw_object_hash(ip->algo, type, w->result.data, w->result.len, &o->e.oid)) {
		return pw_hash_collision_error(&w->err, &o->e.oid);
	}
	if ((rc = finish(w, c, type, depth, base, w->result.data, w->result.len)))
		return rc;
	if (has_children(ip, c)) {
		size_t len = w->result.len;
		uint8_t *data = (uint8_t *)pw_buf_detach(&w->result, NULL);

		if ((rc = push(w, c, type, depth, data, len)))
			return rc;
	}
	return 0;
}

/* Resolve every delta below the object at the bottom of the stack. */
static int run_stack(struct worker *w)
{
	struct pw_ipack *ip = w->ip;
	int rc;

	while (w->nr) {
		struct frame *f = &w->st[w->nr - 1];
		uint32_t c;
		struct ip_obj *o;

		if (__atomic_load_n(&ip->idle, __ATOMIC_RELAXED) && f->data)
			split(w, f);
		if (f->ofs_i < f->ofs_end)
			c = ip->ofs[f->ofs_i++].obj;
		else if (f->ref_i < f->ref_end)
			c = ip->refs[f->ref_i++].obj;
		else {
			w->held -= f->data ? f->len : 0;
			frame_release(f);
			w->nr--;
			continue;
		}
		o = &ip->objs[c];
		if (__atomic_exchange_n(&o->claimed, 1, __ATOMIC_ACQ_REL))
			continue;
		if (__atomic_load_n(&ip->failed, __ATOMIC_RELAXED))
			return PW_ERROR;
		if ((rc = regenerate(w, w->nr - 1)))
			return rc;
		f = &w->st[w->nr - 1];
		if ((rc = apply(w, c, f->data, f->len)))
			return rc;
		/* the last child taken: this base is not needed any more (the
		 * bottom frame stays, it may be shared or an appended object) */
		if (w->nr > 1 && f->ofs_i == f->ofs_end && f->ref_i == f->ref_end) {
			w->held -= f->len;
			frame_release(f);
		}
		if ((rc = resolved(w, c, f->type, f->depth + 1, f->obj)))
			return rc;
	}
	return 0;
}

static void clear_stack(struct worker *w)
{
	while (w->nr) {
		frame_release(&w->st[w->nr - 1]);
		w->nr--;
	}
	w->held = 0;
}

/* Resolve the subtree of a whole object in the pack. */
static int resolve_root(struct worker *w, uint32_t i)
{
	struct pw_ipack *ip = w->ip;
	size_t len;
	uint8_t *data;
	int rc;

	if ((rc = reinflate(w, i, &w->result)))
		return rc;
	len = w->result.len;
	data = (uint8_t *)pw_buf_detach(&w->result, NULL);
	if ((rc = push(w, i, ip->objs[i].real_type, 0, data, len)))
		return rc;
	rc = run_stack(w);
	clear_stack(w);
	return rc;
}

static int run_item(struct worker *w, struct work_item *it)
{
	struct frame *f;
	int rc;

	if ((rc = push(w, it->obj, it->type, it->depth, it->sh->data, it->len))) {
		release_shared(it->sh);
		return rc;
	}
	f = &w->st[w->nr - 1];
	f->sh = it->sh;
	f->ofs_i = it->ofs_i;
	f->ofs_end = it->ofs_end;
	f->ref_i = it->ref_i;
	f->ref_end = it->ref_end;
	rc = run_stack(w);
	clear_stack(w);
	return rc;
}

/* Roots done: take split-off work until every resolver is idle. */
static void steal_loop(struct worker *w)
{
	struct pw_ipack *ip = w->ip;

	pthread_mutex_lock(&ip->q_lock);
	__atomic_add_fetch(&ip->idle, 1, __ATOMIC_RELAXED);
	for (;;) {
		if (ip->q_nr && !__atomic_load_n(&ip->failed, __ATOMIC_RELAXED)) {
			struct work_item it = ip->q[ip->q_nr - 1];
			int rc;

			__atomic_store_n(&ip->q_nr, ip->q_nr - 1, __ATOMIC_RELAXED);
			__atomic_sub_fetch(&ip->idle, 1, __ATOMIC_RELAXED);
			pthread_mutex_unlock(&ip->q_lock);
			rc = run_item(w, &it);
			if (!rc)
				rc = flush_pending(w);
			if (rc)
				fail_from(ip, &w->err);
			pthread_mutex_lock(&ip->q_lock);
			__atomic_add_fetch(&ip->idle, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (ip->idle == ip->nthreads || __atomic_load_n(&ip->failed, __ATOMIC_RELAXED)) {
			pthread_cond_broadcast(&ip->q_cond);
			break;
		}
		pthread_cond_wait(&ip->q_cond, &ip->q_lock);
	}
	pthread_mutex_unlock(&ip->q_lock);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pw_ipack *ip = w->ip;

	for (;;) {
		uint32_t i = __atomic_fetch_add(&ip->next_root, 1, __ATOMIC_RELAXED);

		if (i >= ip->nr || __atomic_load_n(&ip->failed, __ATOMIC_RELAXED))
			break;
		if (ip->objs[i].type == PW_OBJ_OFS_DELTA || ip->objs[i].type == PW_OBJ_REF_DELTA)
			continue;
		if (!has_children(ip, i))
			continue;
		if (resolve_root(w, i)) {
			fail_from(ip, &w->err);
			break;
		}
	}
	if (flush_pending(w))
		fail_from(ip, &w->err);
	if (ip->nthreads > 1)
		steal_loop(w);
	return NULL;
}

static int worker_init(struct worker *w, struct pw_ipack *ip, int id)
{
	memset(w, 0, sizeof(*w));
	w->ip = ip;
	w->id = id;
	pw_buf_init(&w->delta, 0);
	pw_buf_init(&w->result, 0);
	pw_buf_init(&w->comp, 0);
	pw_ip_links_init(&w->links, &ip->linkset);
	w->ld = libdeflate_alloc_decompressor();
	/* REF_DELTA bases are found by id: with them, every id at once */
	w->pair = !ip->nr_refs;
	return w->ld ? 0 : PW_ENOMEM;
}

static void worker_free(struct worker *w)
{
	clear_stack(w);
	free(w->st);
	if (w->ld)
		libdeflate_free_decompressor(w->ld);
	pw_buf_free(&w->delta);
	pw_buf_free(&w->result);
	pw_buf_free(&w->comp);
	pw_ip_links_free(&w->links);
	free(w->pend.data);
}

static int nr_threads(const struct pw_ipack *ip)
{
	long n = ip->opts.threads;

	if (n <= 0) {
		n = sysconf(_SC_NPROCESSORS_ONLN);
		if (n > 3)
			n = 3;
	}
	if (n < 1)
		n = 1;
	if (n > 64)
		n = 64;
	if (ip->nr_deltas < 64)
		n = 1;
	return (int)n;
}

/* ---- thin packs --------------------------------------------------------- */

static int pwrite_all(int fd, const void *data, size_t len, uint64_t off, struct pw_error *err)
{
	if (pw_fs_pwrite_all(fd, data, len, off))
		return pw_error_set(err, PW_EIO, "cannot write the pack: %s", strerror(errno));
	return 0;
}

/* Append a whole object at *end; deflated in one go at level 1 (Git's
 * core.compression default for these) so that
 * the bytes (and so the pack name) match Git's for the same zlib. */
static int append_object(struct pw_ipack *ip, const struct pw_oid *oid, int type,
                         const struct pw_buf *data, uint64_t *end)
{
	uint8_t hdr[16];
	size_t hl = pw_pack_entry_hdr_encode(hdr, type, data->len);
	uLong bound = compressBound((uLong)data->len);
	uint8_t *z = malloc(bound + hl);
	z_stream zs;
	struct ip_obj *o;
	size_t zlen;
	int rc;

	if (!z)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	memcpy(z, hdr, hl);
	memset(&zs, 0, sizeof(zs));
	if (deflateInit(&zs, Z_BEST_SPEED) != Z_OK) {
		free(z);
		return pw_error_set(&ip->err, PW_ENOMEM, "cannot initialise zlib");
	}
	zs.next_in = (Bytef *)data->data;
	zs.avail_in = (uInt)data->len;
	zs.next_out = z + hl;
	zs.avail_out = (uInt)bound;
	rc = deflate(&zs, Z_FINISH);
	zlen = zs.total_out;
	deflateEnd(&zs);
	if (rc != Z_STREAM_END) {
		free(z);
		return pw_error_set(&ip->err, PW_ERROR, "cannot compress a thin-pack base");
	}
	if ((rc = pwrite_all(ip->out_fd, z, hl + zlen, *end, &ip->err))) {
		free(z);
		return rc;
	}
	if ((rc = pw_ipack__grow_objs(ip, ip->nr + 1))) {
		free(z);
		return rc;
	}
	o = &ip->objs[ip->nr++];
	memset(o, 0, sizeof(*o));
	o->e.oid = *oid;
	o->e.offset = *end;
	o->e.crc32 = (uint32_t)libdeflate_crc32(0, z, hl + zlen);
	o->size = data->len;
	o->hdr_len = (uint32_t)hl;
	o->type = o->real_type = (uint8_t)type;
	o->base = NO_OBJ;
	o->claimed = 1;
	o->appended = 1;
	*end += hl + zlen;
	ip->nr_appended++;
	free(z);
	return 0;
}

/* Git appends thin-pack bases in the order of the deltas that need them. */
static int cmp_ref_by_obj(const void *a, const void *b, void *ctx)
{
	const struct pw_ipack *ip = ctx;
	uint32_t x = ip->refs[*(const uint32_t *)a].obj, y = ip->refs[*(const uint32_t *)b].obj;

	return x < y ? -1 : x > y;
}

/* Rewrite the object count and the trailing checksum after appending. */
static int rewrite_trailer(struct pw_ipack *ip, uint64_t end)
{
	uint8_t hdr[PW_PACK_HEADER_SIZE], *buf;
	struct pw_hash_ctx h;
	uint64_t off = 0;
	int rc;

	pw_pack_header_encode(hdr, ip->nr);
	if ((rc = pwrite_all(ip->out_fd, hdr + 8, 4, 8, &ip->err)))
		return rc;
	buf = malloc(1 << 20);
	if (!buf)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	pw_hash_init_checksum(&h, ip->algo); /* the new trailer of a fixed thin pack */
	while (off < end) {
		size_t want = end - off > (1 << 20) ? (1 << 20) : (size_t)(end - off);
		ssize_t n = pread(ip->out_fd, buf, want, (off_t)off);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			free(buf);
			return pw_error_set(&ip->err, PW_EIO, "cannot read back the pack: %s",
			                    n < 0 ? strerror(errno) : "short file");
		}
		pw_hash_update(&h, buf, (size_t)n);
		off += (uint64_t)n;
	}
	free(buf);
	pw_hash_final_checksum(&h, ip->checksum);
	if ((rc = pwrite_all(ip->out_fd, ip->checksum, ip->algo->rawsz, end, &ip->err)))
		return rc;
	if (ftruncate(ip->out_fd, (off_t)(end + ip->algo->rawsz)))
		return pw_error_set(&ip->err, PW_EIO, "cannot truncate the pack: %s",
		                    strerror(errno));
	return 0;
}

static int fix_thin(struct pw_ipack *ip, struct worker *w)
{
	uint32_t *pending, n = 0, k, nr_pack = ip->nr;
	uint64_t end = ip->pack_end;
	struct pw_buf data = PW_BUF_INIT;
	int rc = 0;

	pending = malloc(((size_t)ip->nr_refs + 1) * sizeof(*pending));
	if (!pending)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	for (k = 0; k < ip->nr_refs; k++)
		if (!ip->objs[ip->refs[k].obj].real_type)
			pending[n++] = k;
	if (n)
		qsort_r(pending, n, sizeof(*pending), cmp_ref_by_obj, ip);
	for (k = 0; k < n && !rc; k++) {
		struct ip_obj *o = &ip->objs[ip->refs[pending[k]].obj];
		struct pw_oid base = ip->refs[pending[k]].base, check;
		int type = 0;
		uint32_t idx;

		if (o->real_type)
			continue;
		if (ip->opts.read_object(ip->opts.odb_ctx, &base, &type, &data))
			continue;
		if (pw_object_hash(ip->algo, type, data.data, data.len, &check)) {
			rc = pw_hash_collision_error(&ip->err, &check);
			break;
		}
		if (!pw_oid_equal(&check, &base)) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(&ip->err, PW_ECORRUPT,
			                  "repository object %s is corrupt (its content hashes "
			                  "differently)",
			                  pw_oid_to_hex(&base, hex));
			break;
		}
		if ((rc = append_object(ip, &base, type, &data, &end)))
			break;
		idx = ip->nr - 1;
		rc = push(w, idx, type, 0, (uint8_t *)pw_buf_detach(&data, NULL),
		          ip->objs[idx].size);
		if (!rc)
			rc = run_stack(w);
		clear_stack(w);
		if (rc)
			rc = pw_error_copy(&ip->err, &w->err);
	}
	pw_buf_free(&data);
	free(pending);
	ip->data_end = end;
	if (!rc && ip->nr != nr_pack)
		rc = rewrite_trailer(ip, end);
	return rc;
}

/* ---- the whole of phase 2 ----------------------------------------------- */

static int unresolved_error(struct pw_ipack *ip)
{
	uint32_t i, nr = 0, first = NO_OBJ;
	char hex[PW_MAX_HEXSZ + 1];

	for (i = 0; i < ip->nr; i++)
		if (!ip->objs[i].real_type) {
			if (first == NO_OBJ)
				first = i;
			nr++;
		}
	if (!nr)
		return 0;
	if (ip->objs[first].type == PW_OBJ_REF_DELTA) {
		const struct ip_obj *o = &ip->objs[first];
		struct pw_oid base = {0};
		uint32_t k;

		for (k = 0; k < ip->nr_refs; k++)
			if (ip->refs[k].obj == first)
				base = ip->refs[k].base;
		return pw_error_set(&ip->err, PW_ECORRUPT,
		                    "pack has %u unresolved delta%s: the base %s of the delta at "
		                    "offset %llu is not in the pack%s",
		                    nr, nr == 1 ? "" : "s", pw_oid_to_hex(&base, hex),
		                    (unsigned long long)o->e.offset,
		                    ip->opts.fix_thin ? " nor in the repository"
		                                      : " (a thin pack needs --fix-thin)");
	}
	return pw_error_set(&ip->err, PW_ECORRUPT,
	                    "pack has %u unresolved delta%s (first at offset %llu: its base "
	                    "never resolves)",
	                    nr, nr == 1 ? "" : "s", (unsigned long long)ip->objs[first].e.offset);
}

static int check_duplicates(struct pw_ipack *ip)
{
	size_t rawsz = ip->algo->rawsz;
	uint32_t i;

	for (i = 1; i < ip->nr; i++) {
		const struct pw_idx_entry *a = ip->sorted[i - 1], *b = ip->sorted[i];

		if (!memcmp(a->oid.id, b->oid.id, rawsz)) {
			char hex[PW_MAX_HEXSZ + 1];

			return pw_error_set(&ip->err, PW_ECORRUPT,
			                    "object %s appears twice in the pack (offsets %llu "
			                    "and %llu)",
			                    pw_oid_to_hex(&a->oid, hex),
			                    (unsigned long long)a->offset,
			                    (unsigned long long)b->offset);
		}
	}
	return 0;
}

static int in_pack(void *ctx, const struct pw_oid *oid)
{
	const struct pw_ipack *ip = ctx;
	size_t lo = 0, hi = ip->nr;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;
		int c = memcmp(ip->sorted[m]->oid.id, oid->id, PW_MAX_RAWSZ);

		if (!c)
			return 1;
		if (c < 0)
			lo = m + 1;
		else
			hi = m;
	}
	return 0;
}

int pw_ipack_resolve(struct pw_ipack *ip)
{
	struct worker *ws = NULL;
	pthread_t *tids = NULL;
	int n, k, rc = 0;
	uint32_t i;

	if (!ip->parsed || ip->resolved || ip->err.code)
		return pw_error_set(&ip->err, ip->err.code ? ip->err.code : PW_EINVAL, "%s",
		                    ip->err.code ? ip->err.msg : "pack not parsed");
	ip->resolved = 1;
	if (ip->nr_ofs)
		qsort(ip->ofs, ip->nr_ofs, sizeof(*ip->ofs), cmp_ofs);
	if (ip->nr_refs)
		qsort(ip->refs, ip->nr_refs, sizeof(*ip->refs), cmp_ref);

	n = nr_threads(ip);
	ws = calloc((size_t)n, sizeof(*ws));
	tids = calloc((size_t)n, sizeof(*tids));
	if (!ws || !tids) {
		free(ws);
		free(tids);
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	}
	for (k = 0; k < n; k++)
		if (worker_init(&ws[k], ip, k))
			rc = pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	if (!rc && ip->nr_deltas) {
		pw_ipack__report(ip, PW_IPACK_RESOLVING, 0, ip->nr_deltas);
		ip->nthreads = n;
		for (k = 1; k < n; k++)
			if (pthread_create(&tids[k], NULL, worker_main, &ws[k]))
				break;
		if (k < n) { /* fewer threads than planned: let the steal loop know */
			pthread_mutex_lock(&ip->q_lock);
			ip->nthreads = k;
			pthread_mutex_unlock(&ip->q_lock);
		}
		worker_main(&ws[0]);
		while (--k > 0)
			pthread_join(tids[k], NULL);
		ip->nthreads = 1;
		ip->idle = 0;
		while (ip->q_nr)
			release_shared(ip->q[--ip->q_nr].sh);
		if (ip->failed)
			rc = ip->err.code ? ip->err.code : PW_ERROR;
	}
	if (!rc && ip->opts.fix_thin && ip->opts.read_object && ip->out_fd >= 0 &&
	    ip->resolved_nr < ip->nr_deltas)
		rc = fix_thin(ip, &ws[0]);
	if (!rc && ip->nr_deltas)
		pw_ipack__report(ip, PW_IPACK_RESOLVING, ip->resolved_nr, ip->nr_deltas);
	if (!rc)
		rc = unresolved_error(ip);
	for (k = 0; k < n; k++) {
		if (!rc && (rc = pw_ip_links_flush(&ws[k].links)))
			pw_error_set(&ip->err, rc, "out of memory");
		worker_free(&ws[k]);
	}
	free(ws);
	free(tids);
	if (rc)
		return rc;

	ip->sorted = malloc(((size_t)ip->nr + 1) * sizeof(*ip->sorted));
	if (!ip->sorted)
		return pw_error_set(&ip->err, PW_ENOMEM, "out of memory");
	for (i = 0; i < ip->nr; i++)
		ip->sorted[i] = &ip->objs[i].e;
	qsort(ip->sorted, ip->nr, sizeof(*ip->sorted), pw_idx_entry_cmp);
	if ((rc = check_duplicates(ip)))
		return rc;
	if (pw_ipack__wants_links(ip)) {
		int sc = 0;

		if ((rc = pw_ip_links_flush(&ip->links)))
			return pw_error_set(&ip->err, rc, "out of memory");
		rc = pw_ip_linkset_verify(&ip->linkset, in_pack, ip, ip->opts.has_object,
		                          ip->opts.odb_ctx, ip->opts.check_links, &sc, &ip->err);
		/* an object taken from the repository (--fix-thin) was not read
		 * for links: its history is the repository's */
		ip->self_contained = !rc && sc && !ip->nr_appended &&
		                     !__atomic_load_n(&ip->links_broken, __ATOMIC_RELAXED);
		/* not needed any more: give the memory back before the idx */
		pw_ip_links_free(&ip->links);
		free(ip->linkset.slots);
		ip->linkset.slots = NULL;
		ip->linkset.cap = ip->linkset.nr = 0;
		return rc;
	}
	return 0;
}
