/* A fetch's pack through the pack cache. The request's key is everything
 * that decides the pack's bytes; then one of:
 *  - hit: a complete entry, checked whole (every record's hash and the end)
 *    before its first byte goes out, and checked again record by record as
 *    it is sent;
 *  - miss: this request starts the generation, on a thread of its own that
 *    writes the entry, and reads the entry as every other reader does, so
 *    that neither a slow client nor one that leaves stops the others;
 *  - shared: the entry another request (thread or process) is writing,
 *    sent as it grows.
 * The pack goes out framed for this client (side-band or not, 1000 or 64K
 * packets): the entry holds the raw pack, so that is not part of the key.
 * A reader whose writer died, or who finds an entry damaged, drops it and
 * looks again; what it already sent is whole records, and the new stream
 * must reach the same chain hash at that point before it goes on (else the
 * client gets an error, never a mixed pack). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "packwire/pack-write.h"
#include "packwire/repo.h"
#include "packwire/version.h"
#include "server/pack-cache.h"
#include "server/session.h"
#include "server/upload-parts.h"

/* Bump when the pack made for the same key changes in what it holds. */
#define KEY_VERSION  "packwire pack-cache key 1"
#define MAX_ATTEMPTS 4
#define PROGRESS_MAX 16384 /* progress text waiting for the client */

/* ---- the key -------------------------------------------------------------- */

static void kbytes(struct pw_hash_ctx *h, const char *tag, const void *data, size_t len)
{
	uint8_t n[8];
	uint64_t v = len;
	int i;

	for (i = 7; i >= 0; i--, v >>= 8)
		n[i] = (uint8_t)v;
	pw_hash_update(h, tag, strlen(tag) + 1);
	pw_hash_update(h, n, sizeof(n));
	if (len)
		pw_hash_update(h, data, len);
}

static void kstr(struct pw_hash_ctx *h, const char *tag, const char *s)
{
	kbytes(h, tag, s ? s : "", s ? strlen(s) : 0);
}

static void knum(struct pw_hash_ctx *h, const char *tag, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	kstr(h, tag, b);
}

static void koid(struct pw_hash_ctx *h, const char *tag, const struct pw_oid *oid)
{
	kbytes(h, tag, oid->id, pw_oid_rawsz(oid));
}

static void koids(struct pw_hash_ctx *h, const char *tag, const struct pw_oid *v, size_t nr)
{
	size_t i;

	knum(h, tag, nr);
	for (i = 0; i < nr; i++)
		koid(h, tag, &v[i]);
}

/* A filter's structure; 1 when it names something by a ref (sparse:oid),
 * whose value the key would have to follow: not cached. */
static int kfilter(struct pw_hash_ctx *h, const struct pw_filter *f, int level)
{
	size_t i;

	knum(h, "filter-kind", (uint64_t)f->kind);
	knum(h, "filter-value", f->value);
	knum(h, "filter-level", (uint64_t)level);
	if (f->kind == PW_FILTER_SPARSE_OID || f->sparse_oid)
		return 1;
	knum(h, "filter-subs", f->nr_sub);
	for (i = 0; i < f->nr_sub; i++)
		if (kfilter(h, &f->sub[i], level + 1))
			return 1;
	return 0;
}

/* The state the shallow computation left on a client's shallow commit
 * (whether we have it decides whether it cuts the walk). */
static int kshallows(struct pw_upload_session *s, struct pw_hash_ctx *h)
{
	const struct pw_oid_array *a = &s->args.shallows;
	size_t i;
	int rc;

	knum(h, "shallows", a->nr);
	for (i = 0; i < a->nr; i++) {
		uint32_t idx;

		if ((rc = pw_graph_lookup(&s->graph, &a->v[i], &idx)))
			return rc;
		koid(h, "shallow", &a->v[i]);
		knum(h, "shallow-flags",
		     s->graph.v[idx].flags & (G_PARSED | G_MISSING | G_SHALLOW | G_NOT_SHALLOW |
		                              G_CLIENT_SHALLOW | G_CUT_SEND | G_CUT_HAVE));
	}
	return 0;
}

/* 0 with key, PW_SRV_CACHE_BYPASS (why says why), or an error. */
static int make_key(struct pw_upload_session *s, uint8_t key[PW_PC_KEY_SIZE], const char **why)
{
	const struct pw_fetch_args *a = &s->args;
	struct pw_hash_ctx h;
	char *gitdir, *objdir;
	size_t i, n;
	int rc;

	if (s->uri_protocols || s->packfile_pending) {
		*why = "packfile-uris";
		return PW_SRV_CACHE_BYPASS;
	}
	gitdir = realpath(pw_repo_git_dir(s->repo), NULL);
	objdir = realpath(pw_repo_objects_dir(s->repo), NULL);
	if (!gitdir || !objdir) {
		free(gitdir);
		free(objdir);
		*why = "the repository's real path is unknown";
		return PW_SRV_CACHE_BYPASS;
	}
	pw_hash_init_checksum(&h, &pw_hash_sha256);
	kstr(&h, "key", KEY_VERSION);
	kstr(&h, "packwire", PW_VERSION);
	kstr(&h, "repository", gitdir);
	kstr(&h, "objects", objdir);
	free(gitdir);
	free(objdir);
	kstr(&h, "object-format", s->algo->name);
	kstr(&h, "wire-format", s->wire->name);
	kstr(&h, "namespace", s->ns);
	knum(&h, "thin-pack", a->thin_pack);
	knum(&h, "ofs-delta", a->ofs_delta);
	knum(&h, "include-tag", a->include_tag);
	knum(&h, "filter", a->has_filter);
	if (a->has_filter && kfilter(&h, &a->filter, 0)) {
		*why = "sparse:oid filter";
		return PW_SRV_CACHE_BYPASS;
	}
	koids(&h, "wants", a->wants.v, a->wants.nr);
	koids(&h, "haves", s->have_objs.v, s->have_objs.nr);
	if ((rc = kshallows(s, &h)))
		return rc;
	koids(&h, "new-shallow", s->new_shallow.v, s->new_shallow.nr);
	koids(&h, "unshallow", s->unshallow.v, s->unshallow.nr);
	koids(&h, "server-shallow", s->srv_shallow.v, s->srv_shallow.nr);
	knum(&h, "depth", a->depth);
	knum(&h, "deepen-since", a->deepen_since);
	knum(&h, "deepen-relative", a->deepen_relative);
	knum(&h, "deepen-not", a->deepen_not.nr);
	for (i = 0; i < a->deepen_not.nr; i++)
		kstr(&h, "deepen-not", a->deepen_not.v[i]);
	/* include-tag adds the tags the server advertises whose object is in
	 * the pack: their names and values are part of the answer */
	if (a->include_tag) {
		for (i = n = 0; i < s->nr_refs; i++)
			n += !strncmp(s->refs[i].name, "refs/tags/", 10) && s->refs[i].has_peeled;
		knum(&h, "tags", n);
		for (i = 0; i < s->nr_refs; i++) {
			const struct pw_adv_ref *r = &s->refs[i];

			if (strncmp(r->name, "refs/tags/", 10) || !r->has_peeled)
				continue;
			kstr(&h, "tag", r->name);
			koid(&h, "tag-oid", &r->oid);
			koid(&h, "tag-peeled", &r->peeled);
		}
	}
	pw_hash_final_checksum(&h, key);
	return 0;
}

void pw_srv_pack_cache_bypass(struct pw_upload_session *s, const char *why)
{
	pw_pc_count(s->opts.pack_cache, PW_PC_N_BYPASS, 1);
	pw_srv_trace(s, "pack-cache", "bypass");
	if (why)
		pw_srv_trace(s, "pack-cache-bypass", why);
}

/* ---- the generation ---------------------------------------------------------- */

struct cgen {
	struct pw_upload_session *s;
	struct pw_pack_cache *c;
	struct pw_pc_slot slot; /* LEAD */
	struct pw_pc_writer w;
	uint8_t *rec; /* pending pack bytes, then the record made of them */
	size_t pending;
	uint64_t off; /* where the next record goes */
	pthread_t th;
	pthread_mutex_t mu;
	struct pw_buf progress; /* lines for our own client (under mu) */
	int finished;           /* atomic */
	int rc;
	struct pw_pack_write_stats st;
	uint32_t pack_reused;
};

static int cg_put(struct cgen *cg, const void *data, size_t len, struct pw_error *err)
{
	if (pw_pc_write_at(cg->c, &cg->slot, cg->off, data, len, err)) {
		/* a full disk fails this generation; the next requests go
		 * without the cache for a while */
		pw_pc_pause(cg->c, 60);
		return err->code;
	}
	cg->off += len;
	return 0;
}

void (*pw_pack_cache__test_record_written)(uint64_t end);

static int cg_record(struct cgen *cg, struct pw_error *err)
{
	/* encoded in place: the data moves 4 bytes up */
	uint8_t *buf = cg->rec;
	size_t n;
	int rc;

	memmove(buf + 4, buf, cg->pending);
	n = pw_pc_write_record(&cg->w, buf + 4, (uint32_t)cg->pending, buf);
	cg->pending = 0;
	rc = cg_put(cg, buf, n, err);
	if (!rc && pw_pack_cache__test_record_written)
		pw_pack_cache__test_record_written(cg->off);
	return rc;
}

static int cg_data(void *ctx, const void *data, size_t len, struct pw_error *err)
{
	struct cgen *cg = ctx;
	const uint8_t *p = data;
	size_t left = len;
	int rc;

	while (left) {
		size_t take = PW_PC_RECORD_SIZE - cg->pending;

		if (take > left)
			take = left;
		memcpy(cg->rec + cg->pending, p, take);
		cg->pending += take;
		p += take;
		left -= take;
		if (cg->pending == PW_PC_RECORD_SIZE && (rc = cg_record(cg, err)))
			return rc;
	}
	pw_pc_count(cg->c, PW_PC_N_GENERATED, len);
	return 0;
}

static int cg_progress(void *ctx, const char *line, size_t len)
{
	struct cgen *cg = ctx;

	pthread_mutex_lock(&cg->mu);
	if (cg->progress.len + len <= PROGRESS_MAX)
		pw_buf_add(&cg->progress, line, len);
	pthread_mutex_unlock(&cg->mu);
	return 0;
}

static const struct pw_srv_pack_sink cache_sink = {cg_data, cg_progress};

static void *cg_main(void *arg)
{
	struct cgen *cg = arg;
	struct pw_upload_session *s = cg->s;
	struct pw_error e;
	int rc;

	pw_error_clear(&e);
	rc = pw_srv_generate_pack(s, &cache_sink, cg, &cg->st, &cg->pack_reused);
	if (!rc && cg->pending)
		rc = cg_record(cg, &e);
	if (!rc) {
		struct pw_pc_trailer t;
		uint8_t end[PW_PC_END_SIZE];

		memset(&t, 0, sizeof(t));
		t.objects = cg->st.written;
		t.deltas = cg->st.deltas;
		t.reused = cg->st.reused;
		t.reused_deltas = cg->st.reused_deltas;
		t.pack_reused = cg->pack_reused;
		rc = cg_put(cg, end, pw_pc_write_end(&cg->w, &t, end), &e);
	}
	if (rc && !s->err.code)
		pw_error_set(&s->err, rc, "%s", e.code ? e.msg : pw_strerror(rc));
	if (!rc) {
		/* the readers have it all; not keeping it is no failure */
		pw_pc_publish(cg->c, &cg->slot, &e);
	} else {
		uint8_t failed[PW_PC_FAILED_MAX];

		/* the readers of this generation get its message */
		cg_put(cg, failed, pw_pc_write_failed(&cg->w, s->err.msg, failed), &e);
		pw_pc_abandon(cg->c, &cg->slot);
	}
	cg->rc = rc;
	__atomic_store_n(&cg->finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void cg_free(struct cgen *cg)
{
	if (!cg)
		return;
	pw_pc_slot_close(&cg->slot);
	pthread_mutex_destroy(&cg->mu);
	pw_buf_free(&cg->progress);
	free(cg->rec);
	free(cg);
}

/* Start the generation of a LEAD slot (taken over: *slot is closed). */
static int cg_start(struct pw_upload_session *s, struct pw_pc_slot *slot,
                    const uint8_t key[PW_PC_KEY_SIZE], struct cgen **out)
{
	struct cgen *cg = calloc(1, sizeof(*cg));
	uint8_t hdr[PW_PC_HDR_SIZE];

	*out = NULL;
	if (!cg || !(cg->rec = malloc(PW_PC_RECORD_SIZE + 4 + PW_PC_HASH_SIZE))) {
		free(cg);
		return PW_ENOMEM;
	}
	cg->s = s;
	cg->c = s->opts.pack_cache;
	cg->slot = *slot;
	slot->fd = -1;
	slot->role = PW_PC_BYPASS;
	pw_pc_writer_init(&cg->w, key, PW_PC_RECORD_SIZE, hdr);
	cg->off = PW_PC_HDR_SIZE;
	pthread_mutex_init(&cg->mu, NULL);
	pw_buf_init(&cg->progress, 0);
	if (pthread_create(&cg->th, NULL, cg_main, cg)) {
		pw_pc_abandon(cg->c, &cg->slot);
		cg_free(cg);
		return PW_EIO;
	}
	*out = cg;
	return 0;
}

/* ---- reading an entry ------------------------------------------------------------ */

enum {
	R_DONE = 0,
	R_GONE = 1,     /* the client is gone */
	R_DEAD = 2,     /* the writer died before the end */
	R_CORRUPT = 3,  /* damaged: drop it */
	R_FAILED = 4,   /* the generation failed: its message in err */
	R_MISMATCH = 5, /* a new stream does not continue what was sent */
};

struct reader {
	struct pw_upload_session *s;
	struct pw_pack_cache *c;
	struct pw_pc_slot *slot;
	const uint8_t *key;
	struct cgen *own; /* the generation this request runs, or NULL */
	int complete;     /* a complete entry: the end is there or it is damaged */
	int dry;          /* check only */
	/* what the client has had, over all attempts: whole records, and the
	 * chain after the last of them */
	uint64_t *sent;
	uint8_t *sent_chain;
	struct pw_pc_reader r;
	struct pw_pc_trailer end;
	struct pw_buf *out; /* frames not yet written */
	struct pw_error *err;
};

static int flush_client(struct reader *rd)
{
	if (!rd->out->len)
		return 0;
	return pw_pkt_send(rd->s->out_fd, rd->out, rd->err) ? R_GONE : 0;
}

static int send_client(struct reader *rd, const uint8_t *data, size_t len)
{
	struct pw_upload_session *s = rd->s;

	s->pack_started = 1;
	pw_pc_count(rd->c, PW_PC_N_SERVED, len);
	if (!s->sideband) {
		if (flush_client(rd))
			return R_GONE;
		return pw_write_full(s->out_fd, data, len, rd->err) ? R_GONE : 0;
	}
	if (pw_sideband_write(rd->out, PW_BAND_DATA, data, len, pw_sideband_max(s->sideband)))
		return pw_error_set(rd->err, PW_ENOMEM, "out of memory");
	return rd->out->len >= 65536 ? flush_client(rd) : 0;
}

/* Progress lines of our own generation, for a client that wants them. */
static int pass_progress(struct reader *rd)
{
	struct pw_upload_session *s = rd->s;
	int rc = 0;

	if (!rd->own || rd->dry)
		return 0;
	pthread_mutex_lock(&rd->own->mu);
	if (rd->own->progress.len && s->sideband && !s->args.no_progress)
		rc = pw_sideband_write(rd->out, PW_BAND_PROGRESS, rd->own->progress.data,
		                       rd->own->progress.len, pw_sideband_max(s->sideband));
	pw_buf_reset(&rd->own->progress);
	pthread_mutex_unlock(&rd->own->mu);
	return rc ? pw_error_set(rd->err, PW_ENOMEM, "out of memory") : 0;
}

static int use_record(struct reader *rd, const struct pw_pc_record *rec)
{
	if (rec->kind == PW_PC_FAILED) {
		pw_error_set(rd->err, PW_ERROR, "%.*s", (int)rec->len, (const char *)rec->data);
		return R_FAILED;
	}
	if (rd->dry)
		return 0;
	if (rec->kind == PW_PC_END) {
		if (rd->r.records < *rd->sent)
			return R_MISMATCH;
		rd->end = rec->end;
		return 0;
	}
	if (rd->r.records < *rd->sent)
		return 0; /* the client has it */
	if (rd->r.records == *rd->sent) {
		/* where the client is: this stream must have sent the same */
		if (*rd->sent && memcmp(rd->r.chain, rd->sent_chain, PW_PC_HASH_SIZE))
			return R_MISMATCH;
		return 0;
	}
	memcpy(rd->sent_chain, rd->r.chain, PW_PC_HASH_SIZE);
	(*rd->sent)++;
	return send_client(rd, rec->data, rec->len);
}

/* Is more to come? 1 when the writer is at work, 0 when it is done. */
static int writer_at_work(struct reader *rd)
{
	if (rd->complete)
		return 0;
	if (rd->own)
		return !__atomic_load_n(&rd->own->finished, __ATOMIC_ACQUIRE);
	return pw_pc_writer_alive(rd->slot);
}

static void nap(long *us)
{
	struct timespec ts = {0, *us * 1000};

	nanosleep(&ts, NULL);
	if (*us < 16000)
		*us *= 2;
}

/* Read the slot's entry from its start to its end, verifying each record
 * before using it. 0 (R_DONE) or an R_* outcome, < 0 for errors. */
static int read_entry(struct reader *rd)
{
	uint8_t *buf = NULL;
	size_t cap = PW_PC_HDR_SIZE, pos = 0, have = 0;
	uint64_t base = 0; /* file offset of buf[0] */
	long us = 250;
	int rc = 0, torn = 0, last_look = 0;

	if (!(buf = malloc(cap)))
		return pw_error_set(rd->err, PW_ENOMEM, "out of memory");
	for (;;) {
		struct pw_pc_record rec;
		size_t used = 0;
		ssize_t n = 0;

		if (!rd->r.have_header) {
			rc = pw_pc_read_header(&rd->r, buf + pos, have - pos, rd->key, &used,
			                       rd->err);
			if (!rc) {
				/* room for the largest record this entry may hold */
				size_t ncap = rd->r.record_size + PW_PC_FAILED_MAX + PW_PC_END_SIZE;
				uint8_t *nb = malloc(ncap);

				if (!nb) {
					rc = pw_error_set(rd->err, PW_ENOMEM, "out of memory");
					break;
				}
				pos += used;
				memcpy(nb, buf + pos, have - pos);
				free(buf);
				buf = nb;
				base += pos;
				have -= pos;
				pos = 0;
				cap = ncap;
				continue;
			}
		} else {
			rc = pw_pc_read_record(&rd->r, buf + pos, have - pos, &rec, rd->err);
			if (!rc) {
				pos += rec.size;
				torn = 0;
				rc = use_record(rd, &rec);
				if (rc || rec.kind != PW_PC_DATA)
					break;
				if ((rc = pass_progress(rd)))
					break;
				continue;
			}
		}
		if (rc == PW_ECORRUPT) {
			/* a record being written may show half of itself to a
			 * reader: look again while its writer works */
			if (torn++ < 3 && writer_at_work(rd)) {
				nap(&us);
				have = pos;
				continue;
			}
			rc = R_CORRUPT;
			break;
		}
		if (rc != PW_EMORE)
			break;
		/* more bytes: from the file, else wait for the writer */
		if (pos) {
			memmove(buf, buf + pos, have - pos);
			base += pos;
			have -= pos;
			pos = 0;
		}
		do
			n = pread(rd->slot->fd, buf + have, cap - have, (off_t)(base + have));
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			/* unreadable is damaged, as far as serving it goes */
			pw_error_set(rd->err, PW_EIO, "pack cache: cannot read %s: %s",
			             rd->slot->name, strerror(errno));
			rc = R_CORRUPT;
			break;
		}
		if (n > 0) {
			have += (size_t)n;
			us = 250;
			continue;
		}
		if (rd->complete) {
			rc = R_CORRUPT; /* truncated */
			break;
		}
		if ((rc = pass_progress(rd)) || (rc = flush_client(rd)))
			break;
		if (writer_at_work(rd)) {
			last_look = 0;
			nap(&us);
			continue;
		}
		/* the writer let go: what it wrote before is all there is */
		if (!last_look++)
			continue;
		rc = R_DEAD;
		break;
	}
	free(buf);
	if (!rc && !rd->dry) {
		if ((rc = pass_progress(rd)) == 0)
			rc = flush_client(rd);
	}
	return rc;
}

/* ---- the request ----------------------------------------------------------------- */

static int join(struct cgen **own)
{
	int rc;

	if (!*own)
		return 0;
	pthread_join((*own)->th, NULL);
	rc = (*own)->rc;
	cg_free(*own);
	*own = NULL;
	return rc;
}

static const char *role_name(enum pw_pc_role role)
{
	return role == PW_PC_HIT ? "hit" : role == PW_PC_LEAD ? "miss" : "shared";
}

/* One request's way through the cache, over its attempts. */
struct creq {
	struct pw_upload_session *s;
	struct pw_pack_cache *c;
	uint8_t key[PW_PC_KEY_SIZE], hdr[PW_PC_HDR_SIZE];
	uint64_t sent; /* whole records the client has */
	uint8_t sent_chain[PW_PC_HASH_SIZE];
	int counted;
	struct pw_buf out;
	struct pw_error e; /* what went wrong last (not s->err: a generation may be writing it) */
	struct pw_pc_trailer end;
};

enum { A_DONE, A_RETRY, A_BYPASS, A_ERROR };

static int attempt_error(struct creq *q, int rc)
{
	struct pw_upload_session *s = q->s;

	if (rc == R_GONE) {
		s->err_sent = 1; /* nobody to tell */
		pw_error_copy(&s->err, &q->e);
	} else if (rc == R_FAILED) {
		pw_error_copy(&s->err, &q->e);
	} else if (rc == R_MISMATCH) {
		pw_error_set(&s->err, PW_EMISMATCH,
		             "pack cache: the pack was made again after its writer stopped, and "
		             "differs from what was sent (the repository changed?); fetch again");
	} else if (!s->err.code) {
		pw_error_copy(&s->err, &q->e);
	}
	if (!s->err.code)
		pw_error_set(&s->err, PW_EIO, "pack cache: %s", pw_strerror(rc < 0 ? rc : PW_EIO));
	return A_ERROR;
}

/* No pack byte sent yet (they go out as whole records): the request may
 * still be served without the cache. */
static int untouched(const struct creq *q)
{
	return !q->sent;
}

static int attempt(struct creq *q)
{
	struct pw_upload_session *s = q->s;
	struct pw_pc_slot slot, rslot;
	struct cgen *own = NULL;
	struct reader rd;
	enum pw_pc_role role;
	int rc;

	if ((rc = pw_pc_lookup(q->c, q->key, q->hdr, &slot, &q->e)))
		return attempt_error(q, rc);
	if (slot.role == PW_PC_BYPASS)
		return untouched(q) ? A_BYPASS : attempt_error(q, PW_EIO);
	role = slot.role; /* the slot of a LEAD goes to its generation */
	memset(&rd, 0, sizeof(rd));
	rd.s = s;
	rd.c = q->c;
	rd.key = q->key;
	rd.sent = &q->sent;
	rd.sent_chain = q->sent_chain;
	rd.out = &q->out;
	rd.err = &q->e;
	rd.slot = &slot;
	rslot.fd = -1;
	if (slot.role == PW_PC_LEAD) {
		if ((rc = pw_pc_open_reader(q->c, &slot, &rslot, &q->e)) ||
		    (rc = cg_start(s, &slot, q->key, &own))) {
			pw_pc_abandon(q->c, &slot);
			pw_pc_slot_close(&rslot);
			if (rc == PW_ENOMEM)
				return attempt_error(q, pw_error_set(&q->e, rc, "out of memory"));
			if (untouched(q)) {
				pw_error_set(&q->e, rc, "pack cache: cannot start a generation");
				return A_BYPASS;
			}
			return A_RETRY;
		}
		rd.own = own;
		rd.slot = &rslot;
	} else if (slot.role == PW_PC_HIT) {
		struct stat before;

		/* all of it is checked before a byte goes out (once per change
		 * of the file: a storm does not hash it for every client) */
		rd.complete = 1;
		if (!pw_pc_is_checked(q->c, &slot)) {
			int stated = !fstat(slot.fd, &before);

			rd.dry = 1;
			rc = read_entry(&rd);
			if (rc > 0) { /* damaged (a failure record has no place here) */
				pw_pc_drop(q->c, &slot, 1);
				return A_RETRY;
			}
			if (rc) {
				pw_pc_slot_close(&slot);
				return attempt_error(q, rc);
			}
			if (stated)
				pw_pc_set_checked(q->c, &slot, &before);
			memset(&rd.r, 0, sizeof(rd.r));
			rd.dry = 0;
		}
	}
	if (!q->counted++) {
		pw_pc_count(q->c,
		            role == PW_PC_HIT    ? PW_PC_N_HIT
		            : role == PW_PC_LEAD ? PW_PC_N_MISS
		                                 : PW_PC_N_SHARED,
		            1);
		pw_srv_trace(s, "pack-cache", role_name(role));
	}
	rc = read_entry(&rd);
	if (own) {
		/* the generation goes on to its end, whatever our client does */
		int grc = join(&own);

		pw_pc_slot_close(&rslot);
		pw_pc_slot_close(&slot);
		if (grc)
			return attempt_error(q, grc); /* its message is in s->err */
	}
	if (rc == R_DEAD || rc == R_CORRUPT || (rc == R_FAILED && role == PW_PC_HIT)) {
		char why[64];

		snprintf(why, sizeof(why), "%s after %llu records",
		         rc == R_DEAD ? "writer gone" : "damaged", (unsigned long long)q->sent);
		pw_srv_trace(s, "pack-cache-retry", why);
		pw_pc_drop(q->c, &slot, rc != R_DEAD);
		return A_RETRY;
	}
	pw_pc_slot_close(&slot);
	if (rc)
		return attempt_error(q, rc);
	q->end = rd.end;
	return A_DONE;
}

int pw_srv_send_pack_cached(struct pw_upload_session *s)
{
	struct pw_pack_write_stats st;
	struct pw_pc_writer w0;
	struct creq *q;
	const char *why = NULL;
	char hex[2 * PW_PC_KEY_SIZE + 1];
	int rc, n, a = A_RETRY;
	size_t i;

	if (!(q = calloc(1, sizeof(*q))))
		return pw_srv_oom(s);
	q->s = s;
	q->c = s->opts.pack_cache;
	pw_buf_init(&q->out, 0);
	rc = make_key(s, q->key, &why);
	if (rc == PW_SRV_CACHE_BYPASS)
		pw_srv_pack_cache_bypass(s, why);
	if (rc)
		goto out;
	for (i = 0; i < PW_PC_KEY_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", q->key[i]);
	pw_srv_trace(s, "pack-cache-key", hex);
	pw_pc_writer_init(&w0, q->key, PW_PC_RECORD_SIZE, q->hdr);
	/* what the response holds so far goes out now: the pack is written
	 * past s->out, which a generation's thread must not see change */
	if ((rc = pw_srv_flush_out(s)))
		goto out;
	for (n = 0; n < MAX_ATTEMPTS && a == A_RETRY; n++)
		a = attempt(q);
	if (a == A_RETRY)
		rc = pw_error_set(&s->err, PW_EIO,
		                  "pack cache %s: no good entry after %d attempts (%s)",
		                  pw_pack_cache_dir(q->c), MAX_ATTEMPTS,
		                  q->e.code ? q->e.msg : "damaged entries, or writers gone");
	else if (a == A_ERROR)
		rc = s->err.code ? s->err.code : PW_EIO;
	else if (a == A_BYPASS) {
		if (!q->counted)
			pw_srv_pack_cache_bypass(s, q->e.msg);
		rc = PW_SRV_CACHE_BYPASS;
	} else {
		memset(&st, 0, sizeof(st));
		st.written = q->end.objects;
		st.deltas = q->end.deltas;
		st.reused = q->end.reused;
		st.reused_deltas = q->end.reused_deltas;
		st.bytes = q->end.total;
		rc = pw_srv_pack_done(s, &st, q->end.pack_reused);
	}
out:
	pw_buf_free(&q->out);
	free(q);
	return rc;
}
