/* Dumb HTTP, the client side: refs from info/refs and HEAD, objects found by
 * walking from the wanted tips, each one fetched loose (checked against its
 * id) or, failing that, from the first pack whose .idx lists it (the pack is
 * then indexed by index-pack, which checks every object), in the repository
 * and then in its alternates. Everything lands in a quarantine directory
 * (objects/incoming-dumb-XXXXXX, with the real store as its alternate) that
 * is moved into place only once the walk is complete: a failed fetch leaves
 * the repository's objects as they were. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/client-priv.h"
#include "client/dumb.h"
#include "hash/oidmap.h"
#include "odb/idx.h"
#include "odb/loose.h"
#include "packwire/buf.h"
#include "packwire/fs.h"
#include "packwire/idx.h"
#include "packwire/index-pack.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/repo.h"
#include "transport/transport-priv.h"
#include "util/fs.h"

/* One object store: the repository's objects/ or an alternate's. */
struct store {
	char *url;     /* ".../objects", no trailing '/' */
	size_t parent; /* index of the store that listed it (itself for the first) */
	int depth;
	int packs_loaded, alts_loaded;
	char **packs;
	size_t nr_packs;
	struct pw_idx **idx;   /* NULL until fetched */
	struct pw_buf *idxbuf; /* what idx maps */
	uint8_t *got;          /* pack downloaded */
};

struct pw_dumb_remote {
	struct pw_conn *conn; /* the session's */
	struct pw_client_opts opts;
	const struct pw_hash_algo *algo; /* NULL: no ids seen */
	struct pw_adv adv;
	int head_done;
	struct store *st;
	size_t nr_st;
};

static void warn(struct pw_dumb_remote *d, const char *fmt, const char *arg)
{
	char msg[1024];

	if (d->opts.quiet || !d->opts.report.warning)
		return;
	snprintf(msg, sizeof(msg), fmt, arg);
	d->opts.report.warning(d->opts.report.data, msg);
}

struct membuf {
	struct pw_buf *b;
	size_t max;
	const char *url;
	struct pw_error *err;
};

static int mem_sink(void *ctx, const void *p, size_t n)
{
	struct membuf *m = ctx;

	if (m->b->len + n > m->max)
		return pw_error_set(m->err, PW_ETOOBIG, "dumb HTTP: %s is larger than %zu bytes",
		                    m->url, m->max);
	return pw_buf_add(m->b, p, n) ? pw_error_set(m->err, PW_ENOMEM, "out of memory") : 0;
}

/* GET url into b (replaced), at most max bytes. */
static int get_mem(struct pw_dumb_remote *d, const char *url, struct pw_buf *b, size_t max,
                   struct pw_error *err)
{
	struct membuf m = {b, max, url, err};

	pw_buf_reset(b);
	return pw_http__get(d->conn, url, mem_sink, &m, err);
}

int pw_dumb_is(struct pw_conn *conn)
{
	const uint8_t *p;
	size_t n;

	return pw_http__dumb_refs(conn, &p, &n);
}

struct adv_refs {
	struct pw_adv *a;
	struct pw_error *err;
};

static int adv_ref(void *ctx, const char *name, size_t len, const struct pw_oid *oid, int peeled)
{
	struct adv_refs *t = ctx;
	struct pw_remote_ref *r = NULL;
	int rc;

	if (peeled) { /* the parser saw its ref just before */
		t->a->refs[t->a->nr - 1].peeled = *oid;
		t->a->refs[t->a->nr - 1].has_peeled = 1;
		return 0;
	}
	if ((rc = pw_adv__add_ref(t->a, name, len, &r, t->err)))
		return rc;
	r->oid = *oid;
	return 0;
}

int pw_dumb_parse_info_refs(const uint8_t *p, size_t n, struct pw_adv *a,
                            const struct pw_hash_algo **algo, struct pw_error *err)
{
	struct adv_refs t = {a, err};
	int rc = pw_dumb_parse_refs(p, n, adv_ref, &t, algo, err);

	if (rc)
		return rc;
	a->algo = *algo ? *algo : &pw_hash_sha1;
	a->empty = a->nr == 0;
	a->state = PW_ADV_DONE;
	return 0;
}

int pw_dumb_open(struct pw_dumb_remote **out, struct pw_conn *conn,
                 const struct pw_client_opts *opts, struct pw_error *err)
{
	struct pw_dumb_remote *d;
	const uint8_t *p;
	size_t n;
	int rc;

	*out = NULL;
	if (!pw_http__dumb_refs(conn, &p, &n))
		return pw_error_set(err, PW_EINVAL, "not a dumb HTTP connection");
	if (!(d = calloc(1, sizeof(*d))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	d->conn = conn;
	if (opts)
		d->opts = *opts;
	pw_adv_init(&d->adv);
	if ((rc = pw_dumb_parse_info_refs(p, n, &d->adv, &d->algo, err))) {
		/* Git's words, with what was wrong */
		if (rc == PW_EPROTO) {
			char why[sizeof(err->msg)];

			snprintf(why, sizeof(why), "%s", err->msg);
			pw_error_set(err, rc,
			             "%s (%s/info/refs not valid: is this a git repository?)", why,
			             pw_http__base(conn));
		}
		pw_dumb_free(d);
		return rc;
	}
	if (!(d->st = calloc(1, sizeof(*d->st))) ||
	    !(d->st[0].url = malloc(strlen(pw_http__base(conn)) + 9))) {
		pw_dumb_free(d);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	strcpy(d->st[0].url, pw_http__base(conn));
	strcat(d->st[0].url, "/objects");
	d->nr_st = 1;
	*out = d;
	return 0;
}

static void store_free(struct store *s)
{
	size_t i;

	for (i = 0; i < s->nr_packs; i++) {
		if (s->idx)
			pw_idx_free(s->idx[i]);
		if (s->idxbuf)
			pw_buf_free(&s->idxbuf[i]);
	}
	free(s->idx);
	free(s->idxbuf);
	free(s->got);
	pw_dumb_free_names(s->packs, s->nr_packs);
	free(s->url);
}

void pw_dumb_free(struct pw_dumb_remote *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->nr_st; i++)
		store_free(&d->st[i]);
	free(d->st);
	pw_adv_free(&d->adv);
	free(d);
}

const struct pw_hash_algo *pw_dumb_algo(const struct pw_dumb_remote *d)
{
	return d->algo ? d->algo : &pw_hash_sha1;
}

int pw_dumb_check_algo(struct pw_dumb_remote *d, const struct pw_hash_algo *local,
                       struct pw_error *err)
{
	if (!d->algo || d->algo == local)
		return 0;
	return pw_error_set(err, PW_EUNSUPPORTED,
	                    "the dumb HTTP server's object ids are %s, but this repository "
	                    "uses %s",
	                    d->algo->name, local->name);
}

/* HEAD first, as Git's remote-curl lists it: its target's id when it is a
 * symref to a listed ref, or its own id when detached. */
static int add_head(struct pw_dumb_remote *d, struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT, url = PW_BUF_INIT;
	struct pw_remote_ref head;
	struct pw_oid oid;
	char *symref = NULL;
	size_t i;
	int rc;

	memset(&head, 0, sizeof(head));
	if (pw_buf_addf(&url, "%s/HEAD", pw_http__base(d->conn))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	rc = get_mem(d, url.data, &b, PW_DUMB_MAX_SMALL, err);
	if (rc == PW_ENOTFOUND) {
		rc = 0; /* no HEAD: the refs alone, as Git */
		goto out;
	}
	if (rc ||
	    (rc = pw_dumb_parse_head((const uint8_t *)b.data, b.len, d->algo, &symref, &oid, err)))
		goto out;
	if (symref) {
		const struct pw_remote_ref *t = pw_adv_find(&d->adv, symref);

		if (!t) /* unborn, or a target it does not list: no HEAD */
			goto out;
		head.oid = t->oid;
		head.symref_target = symref;
		symref = NULL;
	} else {
		if (!d->algo) {
			d->algo = pw_oid_algo(&oid);
			d->adv.algo = d->algo;
		}
		head.oid = oid;
	}
	if (!(head.name = strdup("HEAD"))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (d->adv.nr == d->adv.alloc) {
		size_t k = d->adv.alloc ? d->adv.alloc * 2 : 8;
		void *q = realloc(d->adv.refs, k * sizeof(*d->adv.refs));

		if (!q) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto out;
		}
		d->adv.refs = q;
		d->adv.alloc = k;
	}
	for (i = d->adv.nr; i > 0; i--)
		d->adv.refs[i] = d->adv.refs[i - 1];
	d->adv.refs[0] = head;
	d->adv.nr++;
	d->adv.empty = 0;
	memset(&head, 0, sizeof(head));
out:
	free(head.name);
	free(head.symref_target);
	free(symref);
	pw_buf_free(&b);
	pw_buf_free(&url);
	return rc;
}

int pw_dumb_list_refs(struct pw_dumb_remote *d, const struct pw_adv **out, struct pw_error *err)
{
	int rc;

	*out = NULL;
	if (!d->head_done) {
		if ((rc = add_head(d, err)))
			return rc;
		d->head_done = 1;
	}
	*out = &d->adv;
	return 0;
}

/* ---- the walk ----------------------------------------------------------- */

struct item {
	struct pw_oid oid;
	int type; /* 0: not known yet */
};

struct walk {
	struct pw_dumb_remote *d;
	const struct pw_hash_algo *algo;
	struct pw_odb *local; /* the repository as it was */
	struct pw_odb *q;     /* the quarantine, with local as its alternate */
	char *qdir;
	struct pw_oidmap seen;
	struct item *stack;
	size_t nr, alloc;
	struct pw_buf obj, tmp, url;
	uint64_t walked, fetched;
	int got_pack;
	struct pw_error *err;
};

static void progress(struct walk *w, const char *title, uint64_t n, uint64_t total, int done)
{
	if (w->d->opts.progress && w->d->opts.report.progress)
		w->d->opts.report.progress(w->d->opts.report.data, title, n, total, done);
}

static int push(struct walk *w, const struct pw_oid *oid, int type)
{
	struct pw_oidmap_entry *e;
	int created;

	if (!(e = pw_oidmap_put(&w->seen, oid, &created)))
		return pw_error_set(w->err, PW_ENOMEM, "out of memory");
	if (!created)
		return 0;
	if (w->nr == w->alloc) {
		size_t k = w->alloc ? w->alloc * 2 : 1024;
		void *p = realloc(w->stack, k * sizeof(*w->stack));

		if (!p)
			return pw_error_set(w->err, PW_ENOMEM, "out of memory");
		w->stack = p;
		w->alloc = k;
	}
	w->stack[w->nr].oid = *oid;
	w->stack[w->nr].type = type;
	w->nr++;
	return 0;
}

/* A loose object as it downloads: the compressed bytes go to a temporary
 * file in the quarantine (stored as they came once checked) and through the
 * streaming decoder, which hashes them while inflating into a fixed buffer
 * and stops at the first byte past the declared size: no object is held
 * whole, however large its header says it is (issue 26). */
struct loose_sink {
	struct pw_loose_stream z;
	int fd;
	uint64_t n; /* compressed bytes */
	const char *url;
	struct pw_error *err;
};

static int loose_sink(void *ctx, const void *p, size_t n)
{
	struct loose_sink *l = ctx;

	if (l->n + n > PW_DUMB_MAX_LOOSE)
		return pw_error_set(l->err, PW_ETOOBIG, "dumb HTTP: %s is larger than %llu bytes",
		                    l->url, (unsigned long long)PW_DUMB_MAX_LOOSE);
	l->n += n;
	if (pw_fs_write_all(l->fd, p, n))
		return pw_error_set(l->err, PW_EIO, "writing %s into the quarantine: %s", l->url,
		                    strerror(errno));
	return pw_loose_stream_feed(&l->z, p, n, l->err);
}

/* objects/xx/yyyy of store s: 1 when it was there (checked and stored in
 * the quarantine), 0 when the server has no such file. */
static int try_loose(struct walk *w, struct store *s, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];
	struct loose_sink l;
	struct pw_buf tmp = PW_BUF_INIT;
	struct pw_oid got;
	uint64_t size;
	int type, rc;

	pw_oid_to_hex(oid, hex);
	pw_buf_reset(&w->url);
	if (pw_buf_addf(&w->url, "%s/%.2s/%s", s->url, hex, hex + 2) ||
	    pw_buf_addf(&tmp, "%s/tmp_obj_XXXXXX", w->qdir))
		return pw_error_set(w->err, PW_ENOMEM, "out of memory");
	memset(&l, 0, sizeof(l));
	l.url = w->url.data;
	l.err = w->err;
	if ((rc = pw_loose_stream_init(&l.z, w->algo, 0, w->url.data, w->err))) {
		pw_buf_free(&tmp);
		return rc;
	}
	/* read-only as every loose object, under the umask */
	if ((l.fd = pw_fs_mkstemp_mode(tmp.data, 0444)) < 0) {
		rc = pw_error_set(w->err, PW_EIO, "cannot create a file in %s: %s", w->qdir,
		                  strerror(errno));
		pw_buf_reset(&tmp);
		goto out;
	}
	rc = pw_http__get(w->d->conn, w->url.data, loose_sink, &l, w->err);
	if (close(l.fd) && !rc)
		rc = pw_error_set(w->err, PW_EIO, "writing %s into the quarantine: %s", w->url.data,
		                  strerror(errno));
	if (rc == PW_ENOTFOUND) {
		rc = 0;
		goto out;
	}
	if (rc || (rc = pw_loose_stream_finish(&l.z, &got, &type, &size, w->err)))
		goto out;
	if (!pw_oid_equal(&got, oid)) {
		char ghex[PW_MAX_HEXSZ + 1];

		rc = pw_error_set(w->err, PW_ECORRUPT,
		                  "dumb HTTP: %s holds object %s, not %s (corrupt or lying server)",
		                  w->url.data, pw_oid_to_hex(&got, ghex), hex);
		goto out;
	}
	pw_buf_reset(&w->url);
	if (pw_buf_addf(&w->url, "%s/%.2s", w->qdir, hex)) {
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (mkdir(w->url.data, 0777) && errno != EEXIST) {
		rc = pw_error_set(w->err, PW_EIO, "cannot create %s: %s", w->url.data,
		                  strerror(errno));
		goto out;
	}
	if (pw_buf_addf(&w->url, "/%s", hex + 2)) {
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	/* the bytes were checked (the decoder is strict): stored as they came */
	if (rename(tmp.data, w->url.data)) {
		rc = pw_error_set(w->err, PW_EIO, "cannot store %s: %s", w->url.data,
		                  strerror(errno));
		goto out;
	}
	pw_buf_reset(&tmp);
	w->fetched++;
	rc = 1;
out:
	if (tmp.len)
		unlink(tmp.data);
	pw_buf_free(&tmp);
	pw_loose_stream_free(&l.z);
	return rc;
}

static int load_packs(struct walk *w, struct store *s)
{
	size_t j;
	int rc;

	if (s->packs_loaded)
		return 0;
	pw_buf_reset(&w->url);
	if (pw_buf_addf(&w->url, "%s/info/packs", s->url))
		return pw_error_set(w->err, PW_ENOMEM, "out of memory");
	rc = get_mem(w->d, w->url.data, &w->tmp, PW_DUMB_MAX_SMALL, w->err);
	if (rc == PW_ENOTFOUND) {
		s->packs_loaded = 1;
		return 0;
	}
	if (rc || (rc = pw_dumb_parse_packs((const uint8_t *)w->tmp.data, w->tmp.len, w->algo,
	                                    &s->packs, &s->nr_packs, w->err)))
		return rc;
	if (s->nr_packs && (!(s->idx = calloc(s->nr_packs, sizeof(*s->idx))) ||
	                    !(s->idxbuf = calloc(s->nr_packs, sizeof(*s->idxbuf))) ||
	                    !(s->got = calloc(s->nr_packs, 1))))
		return pw_error_set(w->err, PW_ENOMEM, "out of memory");
	for (j = 0; j < s->nr_packs; j++)
		pw_buf_init(&s->idxbuf[j], 0);
	s->packs_loaded = 1;
	return 0;
}

static int load_idx(struct walk *w, struct store *s, size_t j)
{
	const struct pw_hash_algo *other;
	struct pw_idx *probe = NULL;
	char *name = s->packs[j];
	size_t base = strlen(name) - 5;
	int rc;

	if (s->idx[j])
		return 0;
	pw_buf_reset(&w->url);
	if (pw_buf_addf(&w->url, "%s/pack/%.*s.idx", s->url, (int)base, name))
		return pw_error_set(w->err, PW_ENOMEM, "out of memory");
	if ((rc = get_mem(w->d, w->url.data, &s->idxbuf[j], PW_DUMB_MAX_IDX, w->err)))
		return rc;
	rc = pw_idx_open_memory(&s->idx[j], s->idxbuf[j].data, s->idxbuf[j].len, w->url.data,
	                        w->algo, w->err);
	if (!rc)
		return 0;
	/* say so when it is an index of the other algorithm */
	other = w->algo == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;
	if (!pw_idx_open_memory(&probe, s->idxbuf[j].data, s->idxbuf[j].len, NULL, other, NULL)) {
		pw_idx_free(probe);
		return pw_error_set(w->err, PW_EMISMATCH,
		                    "dumb HTTP: %s indexes %s objects, but the repository's refs "
		                    "are %s",
		                    w->url.data, other->name, w->algo->name);
	}
	return rc;
}

static int idx_has(const struct pw_idx *ix, const struct pw_oid *oid)
{
	uint32_t pos;

	/* the index of the algorithm of the refs (load_idx), as oid's */
	return pw_idx_find(ix, oid->id, &pos);
}

struct filesink {
	int fd;
	uint64_t n, shown;
	struct walk *w;
	const char *url;
};

static int file_sink(void *ctx, const void *p, size_t n)
{
	struct filesink *f = ctx;

	if (f->n + n > PW_DUMB_MAX_PACK)
		return pw_error_set(f->w->err, PW_ETOOBIG,
		                    "dumb HTTP: %s is larger than %llu bytes", f->url,
		                    (unsigned long long)PW_DUMB_MAX_PACK);
	if (pw_fs_write_all(f->fd, p, n))
		return pw_error_set(f->w->err, PW_EIO, "writing the pack from %s: %s", f->url,
		                    strerror(errno));
	f->n += n;
	if (f->n - f->shown >= (1u << 20)) {
		f->shown = f->n;
		progress(f->w, "Downloading pack", f->n >> 10, 0, 0);
	}
	return 0;
}

static void ip_progress(void *ctx, int phase, uint64_t done, uint64_t total)
{
	struct walk *w = ctx;

	if (phase == PW_IPACK_RESOLVING && (done == total || !(done & 1023)))
		progress(w, "Resolving deltas", done, total, done == total);
}

/* Download pack j of store s into the quarantine and index it. */
static int get_pack(struct walk *w, struct store *s, size_t j, const struct pw_oid *want)
{
	struct pw_buf tp = PW_BUF_INIT, ti = PW_BUF_INIT, fp = PW_BUF_INIT, fi = PW_BUF_INIT;
	struct pw_index_pack_args args;
	struct filesink f = {-1, 0, 0, w, NULL};
	char hex[PW_MAX_HEXSZ + 1], *url = NULL;
	int rc;

	pw_buf_reset(&w->url);
	if (pw_buf_addf(&w->url, "%s/pack/%s", s->url, s->packs[j]) ||
	    !(url = strdup(w->url.data)) || pw_buf_addf(&tp, "%s/pack/tmp_dumb_XXXXXX", w->qdir)) {
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	f.url = url;
	if ((f.fd = pw_fs_mkstemp_mode(tp.data, 0444)) < 0) {
		rc = pw_error_set(w->err, PW_EIO, "cannot create a file in %s/pack: %s", w->qdir,
		                  strerror(errno));
		pw_buf_reset(&tp);
		goto out;
	}
	rc = pw_http__get(w->d->conn, url, file_sink, &f, w->err);
	if (close(f.fd) && !rc)
		rc = pw_error_set(w->err, PW_EIO, "writing the pack from %s: %s", url,
		                  strerror(errno));
	f.fd = -1;
	if (rc == PW_ENOTFOUND)
		rc = pw_error_set(w->err, PW_EPROTO,
		                  "dumb HTTP: %s is listed in objects/info/packs but missing", url);
	if (rc)
		goto out;
	if (f.shown)
		progress(w, "Downloading pack", f.n >> 10, 0, 1);
	if (pw_buf_addf(&ti, "%s.idx", tp.data)) {
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	memset(&args, 0, sizeof(args));
	args.opts.algo = w->algo;
	args.opts.progress = ip_progress;
	args.opts.progress_ctx = w;
	args.idx_version = 2;
	if ((rc = pw_index_pack_file(&args, tp.data, ti.data, hex, w->err))) {
		pw_buf_reset(&ti);
		pw_error_wrap(w->err, "dumb HTTP: pack %s", url);
		goto out;
	}
	if (pw_buf_addf(&fp, "%s/pack/pack-%s.pack", w->qdir, hex) ||
	    pw_buf_addf(&fi, "%s/pack/pack-%s.idx", w->qdir, hex)) {
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (rename(tp.data, fp.data) || rename(ti.data, fi.data)) {
		rc = pw_error_set(w->err, PW_EIO, "cannot store %s: %s", fp.data, strerror(errno));
		goto out;
	}
	pw_buf_reset(&tp);
	pw_buf_reset(&ti);
	s->got[j] = 1;
	w->got_pack = 1;
	pw_odb_refresh(w->q);
	if (!pw_odb_exists(w->q, want)) {
		char h[PW_MAX_HEXSZ + 1];

		rc = pw_error_set(w->err, PW_EPROTO,
		                  "dumb HTTP: %s does not hold %s, which its .idx lists", url,
		                  pw_oid_to_hex(want, h));
	}
out:
	if (f.fd >= 0)
		close(f.fd);
	if (tp.len)
		unlink(tp.data);
	if (ti.len)
		unlink(ti.data);
	pw_buf_free(&tp);
	pw_buf_free(&ti);
	pw_buf_free(&fp);
	pw_buf_free(&fi);
	free(url);
	return rc;
}

/* Is the store (index k) an ancestor in the alternates chain of store i? */
static int on_chain(struct pw_dumb_remote *d, size_t i, const char *url)
{
	for (;;) {
		if (!strcmp(d->st[i].url, url))
			return 1;
		if (d->st[i].parent == i)
			return 0;
		i = d->st[i].parent;
	}
}

static int load_alternates(struct walk *w, size_t si)
{
	struct pw_dumb_remote *d = w->d;
	char **urls = NULL;
	size_t nr = 0, skipped = 0, k, i;
	const char *files[] = {"http-alternates", "alternates"};
	int rc = 0;

	if (d->st[si].alts_loaded)
		return 0;
	d->st[si].alts_loaded = 1;
	for (k = 0; k < 2; k++) {
		pw_buf_reset(&w->url);
		if (pw_buf_addf(&w->url, "%s/info/%s", d->st[si].url, files[k]))
			return pw_error_set(w->err, PW_ENOMEM, "out of memory");
		rc = get_mem(d, w->url.data, &w->tmp, PW_DUMB_MAX_SMALL, w->err);
		if (rc == PW_ENOTFOUND) {
			rc = 0;
			continue;
		}
		if (rc)
			return rc;
		rc = pw_dumb_parse_alternates((const uint8_t *)w->tmp.data, w->tmp.len,
		                              d->st[si].url, &urls, &nr, &skipped, w->err);
		if (rc)
			return pw_error_wrap(w->err, "%s", w->url.data);
		break;
	}
	if (skipped)
		warn(d, "ignoring alternates of an unsupported protocol in %s", w->url.data);
	for (i = 0; i < nr && !rc; i++) {
		size_t j;

		if (!pw_http__follow_all(d->conn)) {
			warn(d, "alternate disabled by http.followRedirects: %s", urls[i]);
			continue;
		}
		/* the server chose it, not the user: Git's from_user=0 policy */
		if (!pw_http__server_may_use(d->conn, urls[i])) {
			warn(d, "ignoring alternate with restricted protocol: %s", urls[i]);
			continue;
		}
		if (on_chain(d, si, urls[i])) {
			rc = pw_error_set(w->err, PW_EPROTO,
			                  "dumb HTTP: alternates loop: %s lists %s, which lists it "
			                  "again",
			                  d->st[si].url, urls[i]);
			break;
		}
		for (j = 0; j < d->nr_st; j++)
			if (!strcmp(d->st[j].url, urls[i]))
				break;
		if (j < d->nr_st)
			continue; /* known by another path */
		if (d->st[si].depth + 1 > PW_DUMB_MAX_ALT_DEPTH) {
			rc = pw_error_set(w->err, PW_ETOOBIG,
			                  "dumb HTTP: alternates nested deeper than %d at %s",
			                  PW_DUMB_MAX_ALT_DEPTH, urls[i]);
			break;
		}
		if (d->nr_st >= PW_DUMB_MAX_ALTERNATES) {
			rc = pw_error_set(w->err, PW_ETOOBIG,
			                  "dumb HTTP: more than %d object stores in alternates",
			                  PW_DUMB_MAX_ALTERNATES);
			break;
		}
		{
			struct store *p = realloc(d->st, (d->nr_st + 1) * sizeof(*d->st));

			if (!p) {
				rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
				break;
			}
			d->st = p;
			memset(&d->st[d->nr_st], 0, sizeof(*d->st));
			d->st[d->nr_st].url = urls[i];
			urls[i] = NULL;
			d->st[d->nr_st].parent = si;
			d->st[d->nr_st].depth = d->st[si].depth + 1;
			d->nr_st++;
		}
	}
	pw_dumb_free_names(urls, nr);
	return rc;
}

/* Find the object on the server: loose, then in a pack, in the repository
 * and then in its alternates (read when the first object is missing). */
static int fetch_object(struct walk *w, const struct pw_oid *oid)
{
	struct pw_dumb_remote *d = w->d;
	char hex[PW_MAX_HEXSZ + 1];
	size_t si, j;
	int rc;

	for (si = 0; si < d->nr_st; si++) {
		struct store *s = &d->st[si];

		if ((rc = try_loose(w, s, oid)))
			return rc < 0 ? rc : 0;
		if ((rc = load_packs(w, s)))
			return rc;
		s = &d->st[si];
		for (j = 0; j < s->nr_packs; j++) {
			if (s->got[j])
				continue;
			if ((rc = load_idx(w, s, j)))
				return rc;
			if (idx_has(s->idx[j], oid))
				return get_pack(w, s, j, oid);
		}
		if ((rc = load_alternates(w, si)))
			return rc;
	}
	return pw_error_set(w->err, PW_ENOTFOUND, "dumb HTTP: unable to find %s under %s",
	                    pw_oid_to_hex(oid, hex), pw_http__base(d->conn));
}

static int visit(struct walk *w, const struct item *it)
{
	char hex[PW_MAX_HEXSZ + 1];
	int type, rc;

	if (pw_odb_exists(w->local, &it->oid))
		return 0; /* the repository has it, and so what it reaches */
	if (!pw_odb_exists(w->q, &it->oid) && (rc = fetch_object(w, &it->oid)))
		return rc;
	if (++w->walked % 1024 == 0)
		progress(w, "Walking objects", w->walked, 0, 0);
	if (it->type == PW_OBJ_BLOB)
		return 0;
	if (!it->type) {
		/* a wanted tip of unknown type: a blob is not read whole */
		uint64_t size;

		if (!pw_odb_read_header(w->q, &it->oid, &type, &size) && type == PW_OBJ_BLOB)
			return 0;
	}
	if (pw_odb_read(w->q, &it->oid, &type, &w->obj))
		return pw_error_set(w->err, PW_ECORRUPT, "dumb HTTP: cannot read %s: %s",
		                    pw_oid_to_hex(&it->oid, hex), pw_odb_error(w->q)->msg);
	if (it->type && type != it->type)
		return pw_error_set(w->err, PW_ECORRUPT, "dumb HTTP: %s is a %s, expected a %s",
		                    pw_oid_to_hex(&it->oid, hex), pw_object_type_name(type),
		                    pw_object_type_name(it->type));
	if (type == PW_OBJ_COMMIT) {
		struct pw_commit_info c;
		size_t i;

		if ((rc = pw_commit_parse(&c, w->obj.data, w->obj.len, w->algo, w->err)))
			return rc;
		rc = push(w, &c.tree, PW_OBJ_TREE);
		for (i = 0; !rc && i < c.nr_parents; i++)
			rc = push(w, &c.parents[i], PW_OBJ_COMMIT);
		pw_commit_info_free(&c);
		return rc;
	}
	if (type == PW_OBJ_TREE) {
		struct pw_tree_entry e;
		size_t pos = 0;

		while ((rc = pw_tree_next(w->obj.data, w->obj.len, &pos, w->algo, &e, w->err)) ==
		       1) {
			if (e.mode == 0160000)
				continue; /* a submodule's commit lives elsewhere */
			if ((rc = push(w, &e.oid,
			               (e.mode & 0170000) == 040000 ? PW_OBJ_TREE : PW_OBJ_BLOB)))
				return rc;
		}
		return rc;
	}
	if (type == PW_OBJ_TAG) {
		struct pw_tag_info t;

		if ((rc = pw_tag_parse(&t, w->obj.data, w->obj.len, w->algo, w->err)))
			return rc;
		return push(w, &t.object, t.type);
	}
	return 0;
}

static int walk_all(struct walk *w)
{
	int rc = 0;

	while (!rc && w->nr) {
		struct item it = w->stack[--w->nr];

		rc = visit(w, &it);
	}
	return rc;
}

/* Move what the quarantine holds into objects_dir: packs (.pack before
 * .idx, so no reader sees an index without its pack), then loose objects. */
static int migrate(struct walk *w, const char *objects_dir)
{
	struct pw_buf src = PW_BUF_INIT, dst = PW_BUF_INIT;
	const char *exts[] = {".pack", ".idx"};
	DIR *dir;
	struct dirent *e;
	int rc = 0, k;

	for (k = 0; k < 2 && !rc; k++) {
		pw_buf_reset(&src);
		if (pw_buf_addf(&src, "%s/pack", w->qdir) || !(dir = opendir(src.data)))
			break;
		while (!rc && (e = readdir(dir))) {
			size_t l = strlen(e->d_name), el = strlen(exts[k]);

			if (strncmp(e->d_name, "pack-", 5) || l <= el ||
			    strcmp(e->d_name + l - el, exts[k]))
				continue;
			pw_buf_reset(&src);
			pw_buf_reset(&dst);
			if (pw_buf_addf(&src, "%s/pack/%s", w->qdir, e->d_name) ||
			    pw_buf_addf(&dst, "%s/pack", objects_dir) ||
			    (rc = pw_fs_mkdir_p(dst.data, w->err)) ||
			    pw_buf_addf(&dst, "/%s", e->d_name)) {
				rc = rc ? rc : pw_error_set(w->err, PW_ENOMEM, "out of memory");
				break;
			}
			if (!access(dst.data, F_OK))
				continue; /* the same pack is there already */
			if (rename(src.data, dst.data))
				rc = pw_error_set(w->err, PW_EIO, "cannot move %s into place: %s",
				                  src.data, strerror(errno));
		}
		closedir(dir);
	}
	if (!rc && (dir = opendir(w->qdir))) {
		while (!rc && (e = readdir(dir))) {
			DIR *sub;
			struct dirent *f;

			if (strlen(e->d_name) != 2 || pw_hexval(e->d_name[0]) < 0 ||
			    pw_hexval(e->d_name[1]) < 0)
				continue;
			pw_buf_reset(&src);
			if (pw_buf_addf(&src, "%s/%s", w->qdir, e->d_name) ||
			    !(sub = opendir(src.data)))
				continue;
			while (!rc && (f = readdir(sub))) {
				if (f->d_name[0] == '.')
					continue;
				pw_buf_reset(&src);
				pw_buf_reset(&dst);
				if (pw_buf_addf(&src, "%s/%s/%s", w->qdir, e->d_name, f->d_name) ||
				    pw_buf_addf(&dst, "%s/%s", objects_dir, e->d_name)) {
					rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
					break;
				}
				if (mkdir(dst.data, 0777) && errno != EEXIST) {
					rc = pw_error_set(w->err, PW_EIO, "cannot create %s: %s",
					                  dst.data, strerror(errno));
					break;
				}
				if (pw_buf_addf(&dst, "/%s", f->d_name)) {
					rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
					break;
				}
				if (access(dst.data, F_OK) && rename(src.data, dst.data))
					rc = pw_error_set(w->err, PW_EIO,
					                  "cannot move %s into place: %s", src.data,
					                  strerror(errno));
			}
			closedir(sub);
		}
		closedir(dir);
	}
	pw_buf_free(&src);
	pw_buf_free(&dst);
	return rc;
}

static int make_quarantine(struct walk *w, const char *objects_dir)
{
	struct pw_buf p = PW_BUF_INIT, alt = PW_BUF_INIT;
	char real[PATH_MAX];
	int rc = 0;

	if (!realpath(objects_dir, real))
		return pw_error_set(w->err, PW_EIO, "cannot resolve %s: %s", objects_dir,
		                    strerror(errno));
	if (pw_buf_addf(&p, "%s/incoming-dumb-XXXXXX", real) || pw_buf_addf(&alt, "%s\n", real)) {
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (!mkdtemp(p.data)) {
		rc = pw_error_set(w->err, PW_EIO, "cannot create a quarantine directory in %s: %s",
		                  real, strerror(errno));
		goto out;
	}
	if (!(w->qdir = strdup(p.data))) {
		rmdir(p.data);
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	pw_buf_reset(&p);
	if (pw_buf_addf(&p, "%s/pack", w->qdir) || (rc = pw_fs_mkdir_p(p.data, w->err)))
		goto nomem;
	pw_buf_reset(&p);
	if (pw_buf_addf(&p, "%s/info", w->qdir) || (rc = pw_fs_mkdir_p(p.data, w->err)))
		goto nomem;
	if (pw_buf_adds(&p, "/alternates"))
		goto nomem;
	rc = pw_fs_write_atomic(p.data, alt.data, alt.len, w->err);
	goto out;
nomem:
	if (!rc)
		rc = pw_error_set(w->err, PW_ENOMEM, "out of memory");
out:
	pw_buf_free(&p);
	pw_buf_free(&alt);
	return rc;
}

int pw_dumb_fetch(struct pw_dumb_remote *d, struct pw_repo *repo,
                  const struct pw_fetch_request *req, struct pw_fetch_result *res,
                  struct pw_error *err)
{
	struct walk w;
	size_t i;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = pw_dumb_check_algo(d, pw_repo_algo(repo), err)))
		return rc;
	if (!req->nr_wants)
		return 0;
	if (req->depth)
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "dumb http transport does not support shallow capabilities");
	if (req->filter)
		warn(d, "%s", "filtering not recognized by server, ignoring");
	memset(&w, 0, sizeof(w));
	w.d = d;
	w.algo = pw_repo_algo(repo);
	w.err = err;
	if ((rc = pw_odb_open(&w.local, pw_repo_objects_dir(repo), w.algo, err)))
		return rc;
	if ((rc = make_quarantine(&w, pw_repo_objects_dir(repo))) ||
	    (rc = pw_odb_open(&w.q, w.qdir, w.algo, err)))
		goto out;
	for (i = 0; i < req->nr_wants && !rc; i++)
		rc = push(&w, &req->wants[i], 0);
	rc = rc ? rc : walk_all(&w);
	/* include-tag: annotated tags whose object is here now come along, as
	 * a smart server sends them */
	for (i = 0; !rc && req->include_tag && i < d->adv.nr; i++) {
		const struct pw_remote_ref *r = &d->adv.refs[i];

		if (strncmp(r->name, "refs/tags/", 10) || !r->has_peeled ||
		    pw_odb_exists(w.q, &r->oid) ||
		    (!pw_odb_exists(w.q, &r->peeled) && !pw_odb_exists(w.local, &r->peeled)))
			continue;
		if (!(rc = push(&w, &r->oid, PW_OBJ_TAG)))
			rc = walk_all(&w);
	}
	if (!rc && w.walked)
		progress(&w, "Walking objects", w.walked, 0, 1);
	if (!rc)
		rc = migrate(&w, pw_repo_objects_dir(repo));
	if (!rc) {
		res->got_pack = w.got_pack;
		res->nr_objects = (uint32_t)w.walked;
	}
out:
	if (w.qdir)
		pw_fs_remove_tree(w.qdir, 0);
	free(w.qdir);
	pw_odb_free(w.q);
	pw_odb_free(w.local);
	pw_oidmap_free(&w.seen);
	free(w.stack);
	pw_buf_free(&w.obj);
	pw_buf_free(&w.tmp);
	pw_buf_free(&w.url);
	return rc;
}
