/* packwire convert: a repository migrated into the other algorithm (see
 * packwire/convert.h). The objects are translated in memory as compat
 * build does, then written by the pack writer in translating mode (blob
 * deltas reused from the source's packs, tree/commit/tag deltas searched on
 * the translated content) straight into the new repository's pack, whose
 * compat side file maps every new id back to the old one. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat/map-priv.h"
#include "packwire/config.h"
#include "packwire/convert.h"
#include "packwire/fs.h"
#include "packwire/object.h"
#include "packwire/odb.h"
#include "packwire/pack-write.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "util/fs.h"

/* ---- reflogs ---------------------------------------------------------- */

static int reflog_id(const char *p, const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                     pw_compat_lookup_fn lookup, void *ldata, struct pw_oid *out)
{
	struct pw_oid in;

	if (pw_oid_from_hex(&in, p, from->hexsz, from))
		return PW_ECORRUPT;
	if (pw_oid_is_zero(&in)) {
		pw_oid_zero(out, to);
		return 0;
	}
	return lookup(ldata, &in, out) ? PW_ENOTFOUND : 0;
}

int pw_convert_reflog(struct pw_buf *out, const char *data, size_t len,
                      const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                      pw_compat_lookup_fn lookup, void *lookup_data, size_t *dropped,
                      struct pw_error *err)
{
	size_t at = 0, lineno = 0, hx = from->hexsz;
	char a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1];

	while (at < len) {
		const char *line = data + at, *eol = memchr(line, '\n', len - at);
		size_t n = eol ? (size_t)(eol - line) + 1 : len - at;
		struct pw_oid o, nw;
		int rc;

		lineno++;
		at += n;
		if (n < 2 * hx + 2 || line[hx] != ' ' || line[2 * hx + 1] != ' ')
			return pw_error_set(err, PW_ECORRUPT,
			                    "reflog line %zu: not '<old> <new> ...'", lineno);
		rc = reflog_id(line, from, to, lookup, lookup_data, &o);
		if (!rc)
			rc = reflog_id(line + hx + 1, from, to, lookup, lookup_data, &nw);
		if (rc == PW_ECORRUPT)
			return pw_error_set(err, rc, "reflog line %zu: bad object id", lineno);
		if (rc) {
			(*dropped)++;
			continue;
		}
		if (pw_buf_addf(out, "%s %s", pw_oid_to_hex(&o, a), pw_oid_to_hex(&nw, b)) ||
		    pw_buf_add(out, line + 2 * hx + 1, n - 2 * hx - 1))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	return 0;
}

/* ---- the conversion ---------------------------------------------------- */

struct conv {
	struct pw_repo *src, *dst;
	const struct pw_hash_algo *from, *to;
	struct pw_odb *odb;
	struct pw_compat_pairs pairs; /* the objects, then the gitlinks */
	size_t nobj;                  /* how many are objects */
	struct pw_convert_opts *opts;
	struct pw_error *err;
	struct pw_ref_tx *tx;
	struct pw_revlist *rl;
	uint8_t checksum[PW_MAX_RAWSZ];
	char pack_hex[PW_MAX_HEXSZ + 1];
};

static int lookup_cb(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	const struct pw_compat_pair *p = pw_compat_pairs_by_storage(data, from);

	if (!p)
		return PW_ENOTFOUND;
	*out = p->compat;
	return 0;
}

static void progress(struct conv *c, const char *title, uint64_t n, uint64_t total, int done)
{
	if (c->opts->progress)
		c->opts->progress(c->opts->progress_data, title, n, total, done);
}

static int translate_progress(void *data, const char *what, uint64_t done, uint64_t total)
{
	(void)what;
	progress(data, "Translating objects", done, total, done == total);
	return 0;
}

static int map_oid(struct conv *c, const struct pw_oid *in, struct pw_oid *out, const char *what)
{
	char hex[PW_MAX_HEXSZ + 1];

	if (!lookup_cb(&c->pairs, in, out))
		return 0;
	return pw_error_set(c->err, PW_ENOTFOUND, "%s: object %s is missing", what,
	                    pw_oid_to_hex(in, hex));
}

static int add_tip(const struct pw_ref *ref, void *data)
{
	struct conv *c = data;

	if (pw_oid_is_zero(&ref->oid))
		return 0;
	if (pw_revlist_add(c->rl, &ref->oid, NULL, 0))
		return pw_error_copy(c->err, pw_revlist_error(c->rl));
	return 0;
}

static int add_walked(const struct pw_revlist_obj *o, void *data)
{
	struct pw_pack_writer *w = data;

	return pw_pack_writer_add(w, &o->oid, o->type, o->path,
	                          o->type == PW_OBJ_TAG ? 0 : o->path_len);
}

/* Every object into one pack of dst, written in `to`. Reachable objects
 * come from a walk of the refs (their paths guide the delta search), the
 * others (reflogs, unreachable) after them. */
static int write_pack(struct conv *c)
{
	struct pw_pack_write_opts po;
	struct pw_pack_writer *w = NULL;
	struct pw_compat_pack *cp = NULL;
	struct pw_pack_translate t;
	struct pw_pack_write_stats st;
	struct pw_oid head;
	char *base = pw_path_join(pw_repo_objects_dir(c->dst), "pack/pack");
	int rc;

	if (!base)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	pw_pack_write_opts_init(&po);
	pw_pack_write_opts_from_config(&po, pw_repo_config(c->src));
	po.objects_dir = pw_repo_objects_dir(c->src);
	po.progress = c->opts->progress;
	po.progress_data = c->opts->progress_data;
	if ((rc = pw_pack_writer_new(&w, c->odb, &po)) ||
	    (rc = pw_compat_pack__from_pairs(&cp, &c->pairs, c->from, c->to, c->err))) {
		if (rc == PW_ENOMEM)
			pw_error_set(c->err, rc, "out of memory");
		goto out;
	}
	pw_compat_pack_translation(cp, &t);
	if ((rc = pw_pack_writer_set_translate(w, &t)))
		goto werr;
	if ((rc = pw_revlist_new(&c->rl, c->odb, PW_REVLIST_OBJECTS))) {
		pw_error_set(c->err, rc, "out of memory");
		goto out;
	}
	rc = pw_refs_foreach(c->src, NULL, 0, add_tip, c);
	if (!rc && !pw_refs_resolve(c->src, "HEAD", &head, NULL))
		rc = add_tip(&(struct pw_ref){.name = "HEAD", .oid = head}, c);
	if (rc) {
		if (!c->err->code)
			pw_error_copy(c->err, pw_repo_error(c->src));
		goto out;
	}
	if ((rc = pw_revlist_run(c->rl, add_walked, w))) {
		if (pw_pack_writer_error(w)->code)
			goto werr;
		pw_error_copy(c->err, pw_revlist_error(c->rl));
		goto out;
	}
	for (size_t i = 0; i < c->nobj; i++)
		if ((rc = pw_pack_writer_add(w, &c->pairs.pairs[i].storage, PW_OBJ_NONE, NULL, 0)))
			goto werr;
	if ((rc = pw_pack_writer_write_files(w, base, 2, c->pack_hex)))
		goto werr;
	pw_pack_writer_stats(w, &st);
	c->opts->objects = st.written;
	c->opts->deltas = st.deltas;
	c->opts->pack_bytes = st.bytes;
	if (st.written != c->nobj) {
		rc = pw_error_set(c->err, PW_ERROR,
		                  "internal error: %u objects written for %zu translated",
		                  st.written, c->nobj);
		goto out;
	}
	{
		struct pw_oid sum;

		pw_oid_from_hex(&sum, c->pack_hex, c->to->hexsz, c->to);
		memcpy(c->checksum, sum.id, c->to->rawsz);
	}
	goto out;
werr:
	pw_error_copy(c->err, pw_pack_writer_error(w));
out:
	pw_revlist_free(c->rl);
	c->rl = NULL;
	pw_pack_writer_free(w);
	pw_compat_pack_free(cp);
	free(base);
	return rc;
}

static int by_new_id(const void *a, const void *b)
{
	const struct pw_compat_pair *x = *(const struct pw_compat_pair *const *)a;
	const struct pw_compat_pair *y = *(const struct pw_compat_pair *const *)b;

	return memcmp(x->compat.id, y->compat.id, sizeof(x->compat.id));
}

/* pack-<hex>.compat of the new pack: its objects in .idx order (sorted new
 * ids), each with its old id. */
static int write_side_file(struct conv *c)
{
	size_t n = c->nobj, raw = c->from->rawsz;
	const struct pw_compat_pair **order = malloc((n ? n : 1) * sizeof(*order));
	uint8_t *ids = malloc((n ? n : 1) * raw);
	struct pw_buf file = PW_BUF_INIT, path = PW_BUF_INIT;
	int rc;

	if (!order || !ids) {
		rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		order[i] = &c->pairs.pairs[i];
	qsort(order, n, sizeof(*order), by_new_id);
	for (size_t i = 0; i < n; i++)
		memcpy(ids + i * raw, order[i]->storage.id, raw);
	rc = pw_compat_pack_map_encode(&file, c->to, c->checksum, ids, (uint32_t)n, c->err);
	if (!rc &&
	    pw_buf_addf(&path, "%s/pack/pack-%s.compat", pw_repo_objects_dir(c->dst), c->pack_hex))
		rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
	if (!rc)
		rc = pw_compat_write_durable(path.data, file.data, file.len, NULL, NULL, c->err);
out:
	free(order);
	free(ids);
	pw_buf_free(&file);
	pw_buf_free(&path);
	return rc;
}

/* The submodule commits' pairs, turned around (dst is stored in `to`), in
 * dst's loose-object-idx: its view and its own conversion back need them. */
static int write_gitlinks(struct conv *c)
{
	struct pw_buf add = PW_BUF_INIT;
	int rc = 0;

	for (size_t i = c->nobj; i < c->pairs.nr && !rc; i++) {
		char a[PW_MAX_HEXSZ + 1], b[PW_MAX_HEXSZ + 1];

		if (pw_buf_addf(&add, "%s %s\n", pw_oid_to_hex(&c->pairs.pairs[i].compat, a),
		                pw_oid_to_hex(&c->pairs.pairs[i].storage, b)))
			rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
	}
	if (!rc && add.len)
		rc = pw_compat__loose_idx_publish(pw_repo_objects_dir(c->dst), &add, NULL, NULL,
		                                  NULL, c->err);
	pw_buf_free(&add);
	return rc;
}

static int set_config(struct conv *c)
{
	char *cfg = pw_path_join(pw_repo_git_dir(c->dst), "config");
	int rc;

	if (!cfg)
		return pw_error_set(c->err, PW_ENOMEM, "out of memory");
	rc = pw_config_set_in_file(cfg, "core.repositoryformatversion", "1", c->err);
	if (!rc)
		rc = pw_config_set_in_file(cfg, "extensions.compatObjectFormat", c->from->name,
		                           c->err);
	free(cfg);
	return rc;
}

static int convert_ref(const struct pw_ref *ref, void *data)
{
	struct conv *c = data;
	struct pw_oid oid;
	int rc;

	c->opts->refs++;
	if (ref->symref_target) {
		if (pw_refs_create_symref(c->dst, ref->name, ref->symref_target))
			return pw_error_copy(c->err, pw_repo_error(c->dst));
		return 0;
	}
	if ((rc = map_oid(c, &ref->oid, &oid, ref->name)))
		return rc;
	if ((rc = pw_ref_tx_update(c->tx, ref->name, &oid, NULL, PW_REF_NO_DEREF)))
		return pw_error_copy(c->err, pw_ref_tx_error(c->tx));
	return 0;
}

static int convert_refs(struct conv *c)
{
	struct pw_oid oid;
	char *target = NULL;
	int rc;

	if ((rc = pw_ref_tx_new(&c->tx, c->dst)))
		return pw_error_copy(c->err, pw_repo_error(c->dst));
	rc = pw_refs_foreach(c->src, NULL, PW_REFS_INCLUDE_BROKEN, convert_ref, c);
	if (rc && !c->err->code)
		pw_error_copy(c->err, pw_repo_error(c->src));
	if (!rc && (rc = pw_refs_read(c->src, "HEAD", &oid, &target)))
		pw_error_copy(c->err, pw_repo_error(c->src));
	if (!rc && target && pw_refs_create_symref(c->dst, "HEAD", target))
		rc = pw_error_copy(c->err, pw_repo_error(c->dst));
	if (!rc && !target && !(rc = map_oid(c, &oid, &oid, "HEAD")) &&
	    pw_ref_tx_update(c->tx, "HEAD", &oid, NULL, PW_REF_NO_DEREF))
		rc = pw_error_copy(c->err, pw_ref_tx_error(c->tx));
	if (!rc && pw_ref_tx_commit(c->tx))
		rc = pw_error_copy(c->err, pw_ref_tx_error(c->tx));
	free(target);
	pw_ref_tx_free(c->tx);
	c->tx = NULL;
	return rc;
}

/* logs/<rel> of src, translated, into dst; directories recursively. */
static int convert_logs(struct conv *c, const char *src_dir, const char *dst_dir)
{
	DIR *d = opendir(src_dir);
	struct dirent *de;
	struct pw_buf data = PW_BUF_INIT, out = PW_BUF_INIT;
	int rc = 0;

	if (!d)
		return errno == ENOENT
		               ? 0
		               : pw_error_set(c->err, PW_EIO, "%s: %s", src_dir, strerror(errno));
	while (!rc && (de = readdir(d))) {
		char *s, *t;
		struct stat st;
		size_t dropped = 0;

		if (de->d_name[0] == '.')
			continue;
		s = pw_path_join(src_dir, de->d_name);
		t = pw_path_join(dst_dir, de->d_name);
		if (!s || !t) {
			rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
		} else if (lstat(s, &st)) {
			rc = pw_error_set(c->err, PW_EIO, "%s: %s", s, strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			rc = convert_logs(c, s, t);
		} else if (S_ISREG(st.st_mode)) {
			pw_buf_reset(&data);
			pw_buf_reset(&out);
			rc = pw_fs_read_file(s, &data, (size_t)1 << 30, c->err);
			if (!rc &&
			    (rc = pw_convert_reflog(&out, data.data, data.len, c->from, c->to,
			                            lookup_cb, &c->pairs, &dropped, c->err)))
				pw_error_wrap(c->err, "%s", s);
			if (!rc)
				rc = pw_fs_mkdir_p(dst_dir, c->err);
			if (!rc)
				rc = pw_fs_write_atomic(t, out.data, out.len, c->err);
			c->opts->reflogs++;
		}
		free(s);
		free(t);
	}
	closedir(d);
	pw_buf_free(&data);
	pw_buf_free(&out);
	return rc;
}

static int convert_reflogs(struct conv *c)
{
	char *s = pw_path_join(pw_repo_git_dir(c->src), "logs");
	char *t = pw_path_join(pw_repo_git_dir(c->dst), "logs");
	int rc;

	if (!s || !t) {
		rc = pw_error_set(c->err, PW_ENOMEM, "out of memory");
	} else {
		/* the ref updates above may have logged themselves */
		pw_fs_remove_tree(t, 0);
		rc = convert_logs(c, s, t);
	}
	free(s);
	free(t);
	return rc;
}

/* dst must be absent or an empty directory; *created says whether we made it. */
static int prepare_dst(const char *dst, int *created, struct pw_error *err)
{
	DIR *d;
	struct dirent *de;
	int empty = 1;

	*created = 0;
	if (!pw_fs_exists(dst)) {
		if (pw_fs_mkdir_p(dst, err))
			return err->code;
		*created = 1;
		return 0;
	}
	if (!pw_fs_is_dir(dst) || !(d = opendir(dst)))
		return pw_error_set(err, PW_EEXISTS,
		                    "destination path '%s' already exists and is not an empty "
		                    "directory",
		                    dst);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	if (!empty)
		return pw_error_set(err, PW_EEXISTS,
		                    "destination path '%s' already exists and is not an empty "
		                    "directory",
		                    dst);
	return 0;
}

/* A shallow repository's commits name parents it does not have: their
 * translation cannot be computed. */
static int refuse_shallow(struct pw_repo *repo, const char *src, struct pw_error *err)
{
	char *path = pw_path_join(pw_repo_git_dir(repo), "shallow");
	struct stat st;
	int shallow;

	if (!path)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	shallow = !stat(path, &st) && st.st_size > 0;
	free(path);
	if (shallow)
		return pw_error_set(
		        err, PW_EUNSUPPORTED,
		        "'%s' is a shallow repository: its oldest commits cannot be "
		        "translated without their parents (git fetch --unshallow first)",
		        src);
	return 0;
}

int pw_convert_repo(const char *src, const char *dst, const struct pw_hash_algo *to,
                    struct pw_convert_opts *opts, struct pw_error *err)
{
	struct pw_convert_opts dflt;
	struct pw_compat_build_opts bo;
	struct pw_repo_init_opts io;
	struct conv c;
	int rc, created = 0, prepared = 0;

	memset(&dflt, 0, sizeof(dflt));
	memset(&c, 0, sizeof(c));
	if (!opts)
		opts = &dflt;
	opts->objects = opts->refs = opts->reflogs = opts->pack_bytes = 0;
	opts->deltas = 0;
	c.opts = opts;
	c.err = err;
	c.to = to;
	if ((rc = pw_repo_open(&c.src, src, err)))
		return rc;
	c.from = pw_repo_algo(c.src);
	if (c.from == to) {
		rc = pw_error_set(err, PW_EINVAL, "'%s' is already a %s repository", src, to->name);
		goto out;
	}
	if ((rc = refuse_shallow(c.src, src, err)) || (rc = prepare_dst(dst, &created, err)))
		goto out;
	prepared = 1;
	memset(&bo, 0, sizeof(bo));
	bo.progress = translate_progress;
	bo.progress_data = &c;
	bo.submodules = opts->submodules;
	if ((rc = pw_compat__translate_objects(&c.pairs, pw_repo_objects_dir(c.src), c.from, to,
	                                       &bo, err)))
		goto out;
	c.nobj = c.pairs.nr - bo.gitlinks;
	if ((rc = pw_odb_open(&c.odb, pw_repo_objects_dir(c.src), c.from, err)))
		goto out;
	memset(&io, 0, sizeof(io));
	io.bare = pw_repo_is_bare(c.src);
	io.algo = to;
	if ((rc = pw_repo_init_ext(&c.dst, dst, &io, err)))
		goto out;
	if ((rc = write_pack(&c)) || (rc = write_side_file(&c)) || (rc = write_gitlinks(&c)) ||
	    (rc = set_config(&c)))
		goto out;
	progress(&c, "Converting refs", 0, 0, 0);
	if ((rc = convert_refs(&c)) || (rc = convert_reflogs(&c)))
		goto out;
	progress(&c, "Converting refs", opts->refs, 0, 1);
out:
	if (rc && prepared)
		pw_fs_remove_tree(dst, !created);
	pw_repo_free(c.dst);
	pw_odb_free(c.odb);
	pw_compat_pairs_free(&c.pairs);
	pw_repo_free(c.src);
	return rc;
}

void pw_convert_discard(const char *dst, int keep_dir)
{
	pw_fs_remove_tree(dst, keep_dir);
}
