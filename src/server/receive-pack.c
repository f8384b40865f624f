/* receive-pack: one push session (see packwire/receive.h).
 *
 * Order of work, chosen so that a refused push leaves nothing behind:
 *   advertise -> commands (object-format checked first) -> push options ->
 *   pack indexed into a quarantine directory -> connectivity -> fsck ->
 *   pre-receive -> per-ref rules, update hook, old-value check -> (atomic:
 *   all or nothing) -> move objects in -> ref transaction(s) -> report ->
 *   post-receive, post-update.
 * Objects only reach the repository when at least one ref will be updated;
 * every earlier failure removes the quarantine. */
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
#include "odb/idx.h"
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
#include "packwire/server.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "packwire/version.h"
#include "refs/hide.h"
#include "refs/reflog.h"
#include "server/compat-receive.h"
#include "server/fsck.h"
#include "server/hook.h"
#include "server/proc-receive.h"
#include "server/pushcert.h"
#include "server/quarantine.h"
#include "server/receive-cmds.h"
#include "util/fs.h"

#define MAX_PUSH_OPTION_BYTES (1u << 20)

enum deny { DENY_UNSET = -1, DENY_IGNORE = 0, DENY_WARN, DENY_REFUSE, DENY_UPDATE_INSTEAD };

struct rp {
	struct pw_repo *repo;
	struct pw_compat_submodules *subs; /* rp_submodules */
	const struct pw_hash_algo *algo;
	const struct pw_receive_opts *opts;
	struct pw_error *err;
	int in_fd, out_fd;
	struct pw_pkt_reader rd;
	int rd_init;

	/* negotiated */
	int caps_taken, report, report_v2, sideband, quiet, atomic, use_push_options;
	struct pw_receive_cmds cmds;
	char **popts;
	size_t npopts, popts_bytes;
	size_t nshallow;
	struct pw_oid *shallow;          /* the client's shallow commits */
	struct pw_oidmap theirs;         /* of those, the ones this push brought */
	struct pw_oid_array new_shallow; /* receive.shallowUpdate: to add to our shallow file */
	int shallow_update, bad_shallow;
	int shallow_xlated; /* across algorithms: s->shallow holds storage ids */

	/* config */
	int deny_nff, deny_deletes, fsck, adv_push_options, adv_atomic, auto_gc, adv_sid;
	int update_server_info; /* receive.updateServerInfo */
	enum deny deny_current, deny_delete_current;
	int64_t max_input;
	char *hooks_dir;
	char *head_target;             /* HEAD's symref target, or NULL */
	struct pw_hide_refs hidden;    /* transfer.hideRefs + receive.hideRefs */
	struct pw_fsck_opts fsck_opts; /* receive.fsck.<msg-id>, receive.fsck.skipList */
	struct pw_proc_refs proc_refs; /* receive.procReceiveRefs */
	const char *cert_seed;         /* receive.certNonceSeed (borrowed from the config) */
	long cert_slop_limit;          /* receive.certNonceSlop */

	/* push certificate (git push --signed) */
	char *cert_nonce;   /* the nonce we gave out (or adopted), NULL without a seed */
	struct pw_buf cert; /* as received, NUL-free lines */
	int cert_prepared, have_cert_oid;
	int no_cert_env; /* running something that is not a hook (git gc) */
	struct pw_oid cert_oid;
	struct pw_sigcheck cert_sig;
	const char *nonce_status;
	long nonce_slop;
	char *fsck_config_error; /* reported when a pack is checked, as Git does */

	/* state */
	struct pw_oid *refs; /* values of the refs at the start, for exclusion */
	size_t nrefs, alloc_refs;
	struct pw_odb *main_odb, *q_odb;
	char *qdir;
	char *unpack_error; /* NULL = unpack ok */
	/* The pushed pack, when everything its objects refer to is in it: its
	 * objects need no connectivity walk (until check_connectivity). */
	struct pw_idx *self_contained;
	int io_failed;        /* writing to the client failed: stop talking */
	int64_t unpack_limit; /* fewer objects than this: loose objects */
	uint32_t pack_nr;     /* objects in the pushed pack */

	/* a client of the other algorithm (opts->object_format): ids on the
	 * wire are wire's, translated at the edge (compat-receive.h) */
	struct pw_rp_compat *compat;
	const struct pw_hash_algo *wire; /* the client's algorithm (= algo natively) */
};

void pw_receive_opts_init(struct pw_receive_opts *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->err_fd = 2;
}

/* ---- output -------------------------------------------------------------- */

static int send_buf(struct rp *s, struct pw_buf *b)
{
	struct pw_error e;

	if (s->io_failed) {
		pw_buf_reset(b);
		return PW_EIO;
	}
	if (pw_pkt_send(s->out_fd, b, &e)) {
		s->io_failed = 1;
		pw_buf_reset(b);
		return PW_EIO;
	}
	return 0;
}

/* Text for the user: side-band 2 when negotiated, else err_fd. */
static void to_user(struct rp *s, const char *data, size_t len)
{
	if (!len)
		return;
	if (s->sideband) {
		struct pw_buf b = PW_BUF_INIT;

		if (!pw_sideband_write(&b, PW_BAND_PROGRESS, data, len, PW_SIDEBAND_64K_MAX))
			send_buf(s, &b);
		pw_buf_free(&b);
	} else if (s->opts->err_fd >= 0) {
		struct pw_error e;

		pw_write_full(s->opts->err_fd, data, len, &e);
	}
}

static void rp_msg(struct rp *s, const char *prefix, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void rp_msg(struct rp *s, const char *prefix, const char *fmt, ...)
{
	struct pw_buf b = PW_BUF_INIT;
	va_list ap;
	char line[2048];

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!pw_buf_addf(&b, "%s%s\n", prefix, line))
		to_user(s, b.data, b.len);
	pw_buf_free(&b);
}

#define rp_error(s, ...)   rp_msg(s, "error: ", __VA_ARGS__)
#define rp_warning(s, ...) rp_msg(s, "warning: ", __VA_ARGS__)

static void hook_output(void *ctx, const char *data, size_t len)
{
	to_user(ctx, data, len);
}

/* A fatal problem with the request: tell the client in a way its reader
 * shows (band 3 or an ERR packet), then fail the session. */
static int fatal(struct rp *s, int code)
{
	struct pw_buf b = PW_BUF_INIT;

	if (s->sideband) {
		if (!pw_buf_addf(&b, "%s\n", s->err->msg)) {
			struct pw_buf p = PW_BUF_INIT;

			if (!pw_sideband_write(&p, PW_BAND_ERROR, b.data, b.len,
			                       PW_SIDEBAND_64K_MAX))
				send_buf(s, &p);
			pw_buf_free(&p);
		}
	} else if (!pw_pkt_write_err(&b, "%s", s->err->msg)) {
		send_buf(s, &b);
	}
	pw_buf_free(&b);
	return code;
}

/* ---- configuration ------------------------------------------------------- */

static int cfg_bool(struct rp *s, const char *key, int def)
{
	int v;

	if (pw_config_get_bool(pw_repo_config(s->repo), key, &v, NULL))
		return def;
	return v;
}

static enum deny cfg_deny(struct rp *s, const char *key)
{
	const char *v;
	int b;

	if (pw_config_get_string(pw_repo_config(s->repo), key, &v, NULL))
		return DENY_UNSET;
	if (!v)
		return DENY_REFUSE;
	if (!strcasecmp(v, "ignore"))
		return DENY_IGNORE;
	if (!strcasecmp(v, "warn"))
		return DENY_WARN;
	if (!strcasecmp(v, "refuse"))
		return DENY_REFUSE;
	if (!strcasecmp(v, "updateinstead"))
		return DENY_UPDATE_INSTEAD;
	if (!pw_config_parse_bool(v, &b))
		return b ? DENY_REFUSE : DENY_IGNORE;
	return DENY_UNSET;
}

static void fsck_warn(void *ctx, const char *msg)
{
	rp_warning(ctx, "%s", msg);
}

/* receive.fsck.*: Git hands these to index-pack, which fails on a bad one
 * when it checks a pack; unknown ids are skipped with a warning at once. */
static int fsck_config_one(const struct pw_config_entry *e, void *data)
{
	struct rp *s = data;
	struct pw_error err;
	const char *id;
	int rc;

	if (strncmp(e->key, "receive.fsck.", 13))
		return 0;
	id = e->key + 13;
	memset(&err, 0, sizeof(err));
	if (!strcmp(id, "skiplist")) {
		char *path = NULL;

		if (!e->value)
			rc = pw_error_set(&err, PW_EINVAL, "missing value for '%s'", e->key);
		else if (!(path = e->value[0] == '/'
		                          ? strdup(e->value)
		                          : pw_path_join(pw_repo_git_dir(s->repo), e->value)))
			rc = pw_error_set(&err, PW_ENOMEM, "out of memory");
		else
			rc = pw_fsck_opts_skiplist(&s->fsck_opts, path, s->algo, &err);
		/* name the file as configured (relative to the repository) */
		if (rc && e->value && rc != PW_ENOMEM && rc != PW_EINVAL)
			pw_error_set(&err, rc, "could not open object name list: %s", e->value);
		free(path);
	} else {
		rc = pw_fsck_opts_set(&s->fsck_opts, id, e->value, &err);
		if (rc == PW_ENOTFOUND) {
			rp_warning(s, "%s", err.msg);
			return 0;
		}
	}
	if (rc == PW_ENOMEM)
		return pw_error_set(s->err, rc, "out of memory");
	if (rc && !s->fsck_config_error && !(s->fsck_config_error = strdup(err.msg)))
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	return 0;
}

static int proc_ref_one(const struct pw_config_entry *e, void *data)
{
	struct rp *s = data;
	int rc;

	if (!e->value)
		return 0;
	rc = pw_proc_refs_add(&s->proc_refs, e->value);
	if (rc == PW_ETOOBIG)
		return pw_error_set(s->err, rc, "too many receive.procReceiveRefs values (over %d)",
		                    PW_PROC_MAX_REFS);
	return rc ? pw_error_set(s->err, rc, "out of memory") : 0;
}

static int load_config(struct rp *s)
{
	const struct pw_config *cfg = pw_repo_config(s->repo);
	const char *hp = NULL;
	int64_t v;
	int tf;

	s->deny_nff = cfg_bool(s, "receive.denyNonFastForwards", 0);
	s->deny_deletes = cfg_bool(s, "receive.denyDeletes", 0);
	tf = cfg_bool(s, "transfer.fsckObjects", 0);
	s->fsck = cfg_bool(s, "receive.fsckObjects", tf);
	s->adv_push_options = cfg_bool(s, "receive.advertisePushOptions", 0);
	s->adv_atomic = cfg_bool(s, "receive.advertiseAtomic", 1);
	s->adv_sid = cfg_bool(s, "transfer.advertiseSID", 0) && s->opts->session_id &&
	             *s->opts->session_id && !strpbrk(s->opts->session_id, " \n");
	s->deny_current = cfg_deny(s, "receive.denyCurrentBranch");
	s->deny_delete_current = cfg_deny(s, "receive.denyDeleteCurrent");
	s->auto_gc = cfg_bool(s, "receive.autogc", 1);
	s->update_server_info = cfg_bool(s, "receive.updateServerInfo", 0);
	s->shallow_update = cfg_bool(s, "receive.shallowUpdate", 0);
	if (!pw_config_get_string(cfg, "receive.certNonceSeed", &s->cert_seed, NULL) &&
	    s->cert_seed && !*s->cert_seed)
		s->cert_seed = NULL;
	if (!pw_config_get_int64(cfg, "receive.certNonceSlop", &v, NULL) && v > 0 && v < LONG_MAX)
		s->cert_slop_limit = (long)v;
	/* transfer.unpackLimit wins over receive.unpackLimit; Git's default 100 */
	s->unpack_limit = 100;
	if (!pw_config_get_int64(cfg, "transfer.unpackLimit", &v, NULL) && v >= 0)
		s->unpack_limit = v;
	else if (!pw_config_get_int64(cfg, "receive.unpackLimit", &v, NULL) && v >= 0)
		s->unpack_limit = v;
	if (!pw_config_get_int64(cfg, "receive.maxInputSize", &v, NULL) && v > 0)
		s->max_input = v;
	if (!pw_config_get_string(cfg, "core.hooksPath", &hp, NULL) && hp && *hp) {
		if (hp[0] == '/')
			s->hooks_dir = strdup(hp);
		else if (pw_repo_work_tree(s->repo))
			s->hooks_dir = pw_path_join(pw_repo_work_tree(s->repo), hp);
		else
			s->hooks_dir = pw_path_join(pw_repo_git_dir(s->repo), hp);
	} else {
		s->hooks_dir = pw_path_join(pw_repo_git_dir(s->repo), "hooks");
	}
	if (!s->hooks_dir)
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	if (pw_hide_refs_load(&s->hidden, cfg, "receive", s->err))
		return s->err->code;
	pw_fsck_opts_init(&s->fsck_opts);
	s->fsck_opts.warn = fsck_warn;
	s->fsck_opts.ctx = s;
	if (pw_config_foreach(cfg, fsck_config_one, s))
		return s->err->code;
	{
		int rc = pw_config_get_all(cfg, "receive.procreceiverefs", proc_ref_one, s);

		if (rc && rc != PW_ENOTFOUND)
			return rc;
	}
	{
		struct pw_oid o;
		char *target = NULL;

		if (!pw_refs_read(s->repo, "HEAD", &o, &target))
			s->head_target = target;
	}
	return 0;
}

/* ---- advertisement ------------------------------------------------------- */

static int add_ref_value(struct rp *s, const struct pw_oid *oid)
{
	if (s->nrefs == s->alloc_refs) {
		size_t n = s->alloc_refs ? s->alloc_refs * 2 : 32;
		struct pw_oid *v = realloc(s->refs, n * sizeof(*v));

		if (!v)
			return PW_ENOMEM;
		s->refs = v;
		s->alloc_refs = n;
	}
	s->refs[s->nrefs++] = *oid;
	return 0;
}

struct adv_state {
	struct rp *s;
	struct pw_buf *out;
	const char *caps;
	int first, collect_only;
	struct pw_oidmap seen; /* advertised values: one ".have" per object */
};

/* The hex of a storage id in the client's algorithm: 0, or PW_ENOTFOUND
 * when the compat map does not know it. */
static int wire_hex(struct rp *s, const struct pw_oid *oid, char *hex)
{
	struct pw_oid w;

	if (!s->compat) {
		pw_oid_to_hex(oid, hex);
		return 0;
	}
	if (pw_rp_compat_to_wire(s->compat, oid, &w))
		return PW_ENOTFOUND;
	pw_oid_to_hex(&w, hex);
	return 0;
}

static int adv_line(struct adv_state *a, const struct pw_oid *oid, const char *name)
{
	char hex[PW_MAX_HEXSZ + 1];
	int rc;

	if (wire_hex(a->s, oid, hex)) {
		if (!strcmp(name, ".have"))
			return 0; /* only a hint */
		return pw_error_set(a->s->err, PW_ENOTFOUND,
		                    "ref %s: object %s has no %s id: run 'packwire compat build "
		                    "--object-format=%s'",
		                    name, pw_oid_to_hex(oid, hex), a->s->wire->name,
		                    a->s->wire->name);
	}
	if (a->first)
		rc = pw_pkt_writef(a->out, "%s %s%c%s\n", hex, name, '\0', a->caps);
	else
		rc = pw_pkt_writef(a->out, "%s %s\n", hex, name);
	a->first = 0;
	if (rc)
		return pw_error_set(a->s->err, rc, "cannot advertise ref %.200s", name);
	/* keep the buffer small on repositories with many refs */
	if (a->out->len > 65536 && send_buf(a->s, a->out))
		return pw_error_set(a->s->err, PW_EIO, "cannot send the ref advertisement");
	return 0;
}

static int adv_one(const struct pw_ref *ref, void *data)
{
	struct adv_state *a = data;
	int created;

	if (pw_oid_is_zero(&ref->oid))
		return 0;
	if (add_ref_value(a->s, &ref->oid))
		return pw_error_set(a->s->err, PW_ENOMEM, "out of memory");
	if (a->collect_only || pw_hide_refs_match(&a->s->hidden, ref->name, ref->name))
		return 0;
	if (!pw_oidmap_put(&a->seen, &ref->oid, &created))
		return pw_error_set(a->s->err, PW_ENOMEM, "out of memory");
	return adv_line(a, &ref->oid, ref->name);
}

/* The refs of the repositories our objects borrow from (objects/info/
 * alternates, followed as the object store follows it) are advertised as
 * ".have", once per value and never repeating one of our own refs, so
 * that the client does not send what is already there. */
static int adv_have(const struct pw_ref *ref, void *data)
{
	struct adv_state *a = data;
	int created;

	if (pw_oid_is_zero(&ref->oid))
		return 0;
	if (!pw_oidmap_put(&a->seen, &ref->oid, &created))
		return pw_error_set(a->s->err, PW_ENOMEM, "out of memory");
	return created ? adv_line(a, &ref->oid, ".have") : 0;
}

#define MAX_ALTERNATE_DEPTH 5

static int adv_alternates(struct adv_state *a, const char *objects_dir, int depth)
{
	struct pw_buf file = PW_BUF_INIT, path = PW_BUF_INIT;
	struct pw_error e;
	char *line, *save = NULL;
	int rc = 0;

	if (depth > MAX_ALTERNATE_DEPTH || pw_buf_addf(&path, "%s/info/alternates", objects_dir))
		return 0;
	if (pw_fs_read_file(path.data, &file, 1 << 20, &e) || !file.len)
		goto done;
	for (line = strtok_r(file.data, "\n", &save); line && !rc;
	     line = strtok_r(NULL, "\n", &save)) {
		char real[4096];
		size_t len = strlen(line);
		struct pw_repo *alt = NULL;

		if (len && line[len - 1] == '\r')
			line[--len] = '\0';
		if (!len || line[0] == '#')
			continue;
		pw_buf_reset(&path);
		if (line[0] == '/' ? pw_buf_adds(&path, line)
		                   : pw_buf_addf(&path, "%s/%s", objects_dir, line)) {
			rc = pw_error_set(a->s->err, PW_ENOMEM, "out of memory");
			break;
		}
		if (!realpath(path.data, real))
			continue;
		len = strlen(real);
		/* only an objects directory of a repository has refs to offer */
		if (len > 8 && !strcmp(real + len - 8, "/objects")) {
			real[len - 8] = '\0';
			if (!pw_repo_open_gitdir(&alt, real, &e)) {
				rc = pw_refs_foreach(alt, "refs/", 0, adv_have, a);
				/* a broken alternate only costs us its .have lines */
				if (rc && !a->s->err->msg[0])
					rc = 0;
				pw_repo_free(alt);
			}
			real[len - 8] = '/';
		}
		if (!rc)
			rc = adv_alternates(a, real, depth + 1);
	}
done:
	pw_buf_free(&file);
	pw_buf_free(&path);
	return rc;
}

/* Our own shallow file, one oid per line (absent: not shallow). fn gets
 * each valid id. */
static int foreach_our_shallow(struct rp *s, int (*fn)(struct rp *, const struct pw_oid *, void *),
                               void *data)
{
	struct pw_buf file = PW_BUF_INIT;
	struct pw_error e;
	char *path = pw_path_join(pw_repo_git_dir(s->repo), "shallow"), *line, *save = NULL;
	int rc = 0;

	if (!path)
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	if (!pw_fs_read_file(path, &file, 1u << 28, &e) && file.len)
		for (line = strtok_r(file.data, "\n", &save); line && !rc;
		     line = strtok_r(NULL, "\n", &save)) {
			struct pw_oid oid;

			if (strlen(line) == s->algo->hexsz &&
			    !pw_oid_from_hex(&oid, line, s->algo->hexsz, s->algo))
				rc = fn(s, &oid, data);
		}
	pw_buf_free(&file);
	free(path);
	return rc;
}

static int adv_shallow_one(struct rp *s, const struct pw_oid *oid, void *data)
{
	char hex[PW_MAX_HEXSZ + 1];

	if (wire_hex(s, oid, hex))
		return 0; /* the client cannot name it either */
	if (pw_pkt_writef(data, "shallow %s\n", hex))
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	return 0;
}

/* A shallow repository says so after its refs, as Git's does. */
static int adv_shallow(struct rp *s, struct pw_buf *out)
{
	return foreach_our_shallow(s, adv_shallow_one, out);
}

static int advertise(struct rp *s, int collect_only)
{
	struct pw_buf caps = PW_BUF_INIT, out = PW_BUF_INIT;
	struct adv_state a = {s, &out, NULL, 1, collect_only, PW_OIDMAP_INIT};
	char agent[128];
	int rc;

	snprintf(agent, sizeof(agent), "%s",
	         s->opts->agent ? s->opts->agent : "packwire/" PW_VERSION);
	if (pw_caps_add(&caps, "report-status", NULL) ||
	    pw_caps_add(&caps, "report-status-v2", NULL) ||
	    pw_caps_add(&caps, "delete-refs", NULL) || pw_caps_add(&caps, "side-band-64k", NULL) ||
	    pw_caps_add(&caps, "quiet", NULL) ||
	    (s->adv_atomic && pw_caps_add(&caps, "atomic", NULL)) ||
	    pw_caps_add(&caps, "ofs-delta", NULL) ||
	    (s->cert_nonce && pw_caps_add(&caps, "push-cert", s->cert_nonce)) ||
	    (s->adv_push_options && pw_caps_add(&caps, "push-options", NULL)) ||
	    (s->adv_sid && pw_caps_add(&caps, "session-id", s->opts->session_id)) ||
	    pw_caps_add(&caps, "object-format", s->wire->name) ||
	    pw_caps_add(&caps, "agent", agent)) {
		rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	a.caps = caps.data;
	if (!collect_only && s->opts->protocol_version == 1 && pw_pkt_writes(&out, "version 1\n")) {
		rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	rc = pw_refs_foreach(s->repo, "refs/", 0, adv_one, &a);
	if (rc) {
		if (!s->err->msg[0])
			pw_error_copy(s->err, pw_repo_error(s->repo));
		goto out;
	}
	if (collect_only)
		goto out;
	if ((rc = adv_alternates(&a, pw_repo_objects_dir(s->repo), 0)))
		goto out;
	if (a.first) {
		char zero[PW_MAX_HEXSZ + 1];
		struct pw_oid z;

		pw_oid_zero(&z, s->wire);
		pw_oid_to_hex(&z, zero);
		if (pw_pkt_writef(&out, "%s capabilities^{}%c%s\n", zero, '\0', caps.data)) {
			rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
			goto out;
		}
	}
	if ((rc = adv_shallow(s, &out)))
		goto out;
	if (pw_pkt_flush(&out)) {
		rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (send_buf(s, &out))
		rc = pw_error_set(s->err, PW_EIO,
		                  "cannot send the ref advertisement (client gone)");
out:
	pw_oidmap_free(&a.seen);
	pw_buf_free(&caps);
	pw_buf_free(&out);
	return rc;
}

/* ---- request ------------------------------------------------------------- */

static int read_pkt(struct rp *s, struct pw_pkt *pkt)
{
	int rc = pw_pkt_read(&s->rd, pkt, s->err);

	if (rc)
		return rc;
	return 0;
}

/* The first command's capabilities: object format first of all. */
static int take_caps(struct rp *s, const char *line, size_t len)
{
	struct pw_str caps, v;
	const struct pw_hash_algo *client;
	int rc;

	pw_receive_line_caps(line, len, &caps);
	/* side-band first, so that a refusal below reaches the user */
	s->sideband = pw_caps_has(caps.p, caps.len, "side-band-64k");
	if (pw_caps_get(caps.p, caps.len, "object-format", &v))
		rc = pw_object_format_server_check(s->wire, NULL, &client, s->err);
	else
		rc = pw_object_format_server_check(s->wire, &v, &client, s->err);
	if (rc)
		return rc;
	s->report_v2 = pw_caps_has(caps.p, caps.len, "report-status-v2");
	s->report = pw_caps_has(caps.p, caps.len, "report-status") || s->report_v2;
	s->quiet = pw_caps_has(caps.p, caps.len, "quiet");
	s->atomic = s->adv_atomic && pw_caps_has(caps.p, caps.len, "atomic");
	s->use_push_options = s->adv_push_options && pw_caps_has(caps.p, caps.len, "push-options");
	/* the client's session id, for the trace (Git logs it as client-sid) */
	if (s->adv_sid && s->opts->trace_data && !pw_caps_get(caps.p, caps.len, "session-id", &v)) {
		char sid[256];

		snprintf(sid, sizeof(sid), "%.*s", (int)(v.len < 255 ? v.len : 255), v.p);
		s->opts->trace_data(s->opts->trace_ctx, "transfer", "client-sid", sid);
	}
	return 0;
}

/* "shallow <oid>": one of the client's shallow commits. Parsed with the
 * client's algorithm (the view's, across algorithms: translated once the
 * pack is in); a client of another one fails on its commands' object
 * format (checked first), so a bad line is only an error after those. */
static int add_shallow_line(struct rp *s, const char *p, size_t len)
{
	struct pw_oid *v;

	while (len && (p[len - 1] == '\n' || p[len - 1] == '\r'))
		len--;
	if (s->nshallow >= PW_RECEIVE_MAX_CMDS)
		return pw_error_set(s->err, PW_ETOOBIG, "too many shallow lines");
	v = realloc(s->shallow, (s->nshallow + 1) * sizeof(*v));
	if (!v)
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	s->shallow = v;
	if (len != s->wire->hexsz || pw_oid_from_hex(&v[s->nshallow], p, len, s->wire)) {
		s->bad_shallow = 1;
		return 0;
	}
	s->nshallow++;
	return 0;
}

/* The certificate after "push-cert", up to "push-cert-end" (0) or a flush
 * that also ends the command list (1). */
static int read_cert(struct rp *s)
{
	struct pw_pkt pkt;
	int rc;

	pw_buf_init(&s->cert, PW_PUSH_CERT_MAX);
	for (;;) {
		if ((rc = read_pkt(s, &pkt)))
			return rc;
		if (pkt.kind == PW_PKT_FLUSH)
			return 1;
		if (pkt.kind != PW_PKT_DATA)
			return pw_error_set(s->err, PW_EPROTO,
			                    "protocol error: got an unexpected packet");
		if (pkt.len == 14 && !memcmp(pkt.data, "push-cert-end\n", 14))
			return 0;
		rc = pw_buf_add(&s->cert, pkt.data, strnlen(pkt.data, pkt.len));
		if (rc == PW_ETOOBIG)
			return pw_error_set(s->err, rc,
			                    "push certificate too large (over %u bytes)",
			                    PW_PUSH_CERT_MAX);
		if (rc)
			return pw_error_set(s->err, rc, "out of memory");
	}
}

/* Returns 1 when the client sent nothing (no commands), 0 with commands. */
static int read_commands(struct rp *s)
{
	struct pw_pkt pkt;
	int rc, first = 1;

	for (;;) {
		if ((rc = read_pkt(s, &pkt)))
			return rc;
		/* Git's clients end even an empty command list with a flush (or
		 * send no request at all over HTTP): a hang-up is fatal, as in Git */
		if (pkt.kind == PW_PKT_EOF)
			return pw_error_set(s->err, PW_EPROTO,
			                    first ? "the remote end hung up unexpectedly"
			                          : "the remote end hung up in the middle of its "
			                            "commands");
		if (pkt.kind == PW_PKT_FLUSH)
			break;
		if (pkt.kind != PW_PKT_DATA)
			return pw_error_set(s->err, PW_EPROTO,
			                    "protocol error: unexpected control packet in the "
			                    "command list");
		first = 0;
		if (pkt.len >= 8 && !memcmp(pkt.data, "shallow ", 8)) {
			if (s->cmds.nr)
				return pw_error_set(s->err, PW_EPROTO,
				                    "protocol error: shallow line after commands");
			if ((rc = add_shallow_line(s, pkt.data + 8, pkt.len - 8)))
				return rc;
			continue;
		}
		if (!s->caps_taken && (rc = take_caps(s, pkt.data, pkt.len)))
			return rc;
		s->caps_taken = 1;
		if (pkt.len >= 9 && !memcmp(pkt.data, "push-cert", 9) &&
		    (pkt.len == 9 || pkt.data[9] == '\0' || pkt.data[9] == '\n')) {
			if ((rc = read_cert(s)) == 1)
				break; /* the certificate ended with the command list */
			if (rc)
				return rc;
			continue;
		}
		if ((rc = pw_receive_cmds_add_line(&s->cmds, pkt.data, pkt.len, s->err)))
			return rc;
	}
	if (s->cert.len) {
		if (s->cmds.nr)
			return pw_error_set(
			        s->err, PW_EPROTO,
			        "protocol error: got both push certificate and unsigned "
			        "commands");
		if ((rc = pw_push_cert_commands(s->cert.data, s->cert.len, &s->cmds, s->err)))
			return rc;
	}
	if (!s->cmds.nr)
		return 1;
	if (s->bad_shallow)
		return pw_error_set(s->err, PW_EPROTO,
		                    "protocol error: expected shallow sha, got a "
		                    "malformed line");
	/* a ref named twice is not refused here: Git runs the commands in
	 * order and the second one fails on its ref's lock */
	return 0;
}

static int read_push_options(struct rp *s)
{
	struct pw_pkt pkt;
	int rc;

	for (;;) {
		char **v;

		if ((rc = read_pkt(s, &pkt)))
			return rc;
		if (pkt.kind == PW_PKT_FLUSH)
			return 0;
		if (pkt.kind != PW_PKT_DATA)
			return pw_error_set(s->err, PW_EPROTO,
			                    "protocol error: the push options end without a flush");
		pw_pkt_chomp(&pkt);
		if (s->npopts >= PW_RECEIVE_MAX_PUSH_OPTIONS ||
		    s->popts_bytes + pkt.len > MAX_PUSH_OPTION_BYTES)
			return pw_error_set(s->err, PW_ETOOBIG, "too many push options");
		if (memchr(pkt.data, '\0', pkt.len))
			return pw_error_set(s->err, PW_EPROTO,
			                    "protocol error: NUL in a push option");
		v = realloc(s->popts, (s->npopts + 1) * sizeof(*v));
		if (!v)
			return pw_error_set(s->err, PW_ENOMEM, "out of memory");
		s->popts = v;
		if (!(v[s->npopts] = strndup(pkt.data, pkt.len)))
			return pw_error_set(s->err, PW_ENOMEM, "out of memory");
		s->npopts++;
		s->popts_bytes += pkt.len;
	}
}

/* ---- pack ---------------------------------------------------------------- */

static int read_main(void *ctx, const struct pw_oid *oid, int *type, struct pw_buf *out)
{
	int rc = pw_odb_read(ctx, oid, type, out);

	return rc == PW_ENOTFOUND ? PW_ENOTFOUND : rc;
}

static int has_main(void *ctx, const struct pw_oid *oid)
{
	return pw_odb_exists(ctx, oid);
}

static void set_unpack_error(struct rp *s, const char *msg)
{
	char *nl;

	free(s->unpack_error);
	s->unpack_error = strdup(msg && *msg ? msg : "unpacker error");
	if (s->unpack_error)
		while ((nl = strchr(s->unpack_error, '\n')))
			*nl = ' ';
}

/* receive.unpackLimit / transfer.unpackLimit: like Git's unpack-objects, a
 * small push becomes loose objects in the quarantine instead of a pack. The
 * pack is moved aside and read from there; what the repository already has
 * (bases --fix-thin appended) is not written again. */
static int explode_pack(struct rp *s, const char *pack_dir, const char *hex, struct pw_error *e)
{
	static const char *const exts[] = {"pack", "idx", "rev"};
	char *aside = pw_path_join(s->qdir, "unpack"), *aside_pack = NULL;
	struct pw_odb *rd = NULL;
	struct pw_idx *ix = NULL;
	struct pw_buf buf = PW_BUF_INIT;
	char from[4096], to[4096];
	size_t k;
	uint32_t i;
	int rc = PW_ENOMEM;

	if (!aside || !(aside_pack = pw_path_join(aside, "pack")) || pw_fs_mkdir_p(aside_pack, e))
		goto out;
	for (k = 0; k < sizeof(exts) / sizeof(exts[0]); k++) {
		snprintf(from, sizeof(from), "%s/pack-%s.%s", pack_dir, hex, exts[k]);
		snprintf(to, sizeof(to), "%s/pack-%s.%s", aside_pack, hex, exts[k]);
		if (rename(from, to) && errno != ENOENT) {
			rc = pw_error_set(e, PW_EIO, "cannot move %s aside: %s", from,
			                  strerror(errno));
			goto out;
		}
	}
	snprintf(to, sizeof(to), "%s/pack-%s.idx", aside_pack, hex);
	if ((rc = pw_odb_open(&rd, aside, s->algo, e)) || (rc = pw_idx_open(&ix, to, s->algo, e)))
		goto out;
	pw_odb_free(s->q_odb);
	s->q_odb = NULL;
	if ((rc = pw_odb_open(&s->q_odb, s->qdir, s->algo, e)))
		goto out;
	for (i = 0; i < ix->nr; i++) {
		struct pw_oid oid, written;
		int type;

		pw_idx_nth_oid(ix, i, &oid);
		if (pw_odb_exists(s->main_odb, &oid))
			continue;
		if ((rc = pw_odb_read(rd, &oid, &type, &buf)) ||
		    (rc = pw_odb_write_loose(s->q_odb, type, buf.data, buf.len, &written))) {
			pw_error_copy(e, rd && !pw_odb_error(s->q_odb)->msg[0]
			                         ? pw_odb_error(rd)
			                         : pw_odb_error(s->q_odb));
			goto out;
		}
	}
	rc = 0;
out:
	if (rc == PW_ENOMEM && !e->msg[0])
		pw_error_set(e, rc, "out of memory");
	pw_buf_free(&buf);
	pw_idx_free(ix);
	pw_odb_free(rd);
	if (aside_pack) {
		for (k = 0; k < sizeof(exts) / sizeof(exts[0]); k++) {
			snprintf(to, sizeof(to), "%s/pack-%s.%s", aside_pack, hex, exts[k]);
			unlink(to);
		}
		rmdir(aside_pack);
	}
	if (aside)
		rmdir(aside);
	free(aside_pack);
	free(aside);
	return rc;
}

/* The client's shallow commits, from its algorithm into storage ids once
 * the pushed objects are translated; those that are neither pushed nor
 * known are dropped (as Git drops the "theirs" it did not receive), so are
 * those the import left out (pw_rp_compat_cut_off: their refs are
 * refused). Then, as natively, their parents need not exist for fsck. */
static int compat_shallow(struct rp *s)
{
	size_t i, n = 0;
	int created;

	if (!s->compat || s->shallow_xlated)
		return 0;
	s->shallow_xlated = 1;
	for (i = 0; i < s->nshallow; i++) {
		struct pw_oid st;

		if (!pw_rp_compat_to_storage(s->compat, &s->shallow[i], &st))
			s->shallow[n++] = st;
	}
	s->nshallow = n;
	for (i = 0; i < s->nshallow; i++)
		if (!pw_oidmap_put(&s->fsck_opts.shallow, &s->shallow[i], &created))
			return PW_ENOMEM;
	return 0;
}

/* Where the submodules of the repository are, for the gitlinks of pushed
 * trees (made on first use; NULL, with a warning, when it cannot be). */
static struct pw_compat_submodules *rp_submodules(struct rp *s)
{
	struct pw_error e = {0};

	if (!s->subs && pw_rp_submodules_new(&s->subs, s->repo, s->opts->submodule_base, &e))
		rp_warning(s, "submodules: %s", e.msg);
	return s->subs;
}

/* A client of the other algorithm: its pack is indexed in its algorithm
 * in <quarantine>/wire (never migrated), then translated into a storage
 * pack in <quarantine>/pack with its side file; hex gets that pack's name
 * ("" when every pushed object was known). */
static int receive_compat_pack(struct rp *s, const char *pack_dir, char *hex, struct pw_error *e)
{
	struct pw_index_pack_args args;
	char wire_hex[PW_MAX_HEXSZ + 1], *wire_dir = pw_path_join(s->qdir, "wire"), *wire_pack;
	int kept = 0, rc;

	hex[0] = '\0';
	if (!wire_dir || !(wire_pack = pw_path_join(wire_dir, "pack"))) {
		free(wire_dir);
		set_unpack_error(s, "out of memory");
		return PW_ENOMEM;
	}
	if ((rc = pw_fs_mkdir_p(wire_pack, e))) {
		set_unpack_error(s, e->msg);
		goto out;
	}
	memset(&args, 0, sizeof(args));
	args.opts.algo = s->wire;
	args.opts.fix_thin = 1;
	args.opts.read_object = pw_rp_compat_read_base;
	args.opts.has_object = pw_rp_compat_has_base;
	args.opts.odb_ctx = s->compat;
	args.opts.max_input = (uint64_t)s->max_input;
	rc = pw_index_pack_stream(&args, s->in_fd, wire_pack, NULL, NULL, wire_hex, &kept, e);
	if (rc) {
		rp_error(s, "%s", e->msg);
		set_unpack_error(s, rc == PW_ETOOBIG ? "pack exceeds maximum allowed size"
		                                     : "index-pack failed");
		goto out;
	}
	if (pw_rp_compat_set_shallow(s->compat, s->shallow, s->nshallow)) {
		rc = PW_ENOMEM;
		set_unpack_error(s, "out of memory");
		goto out;
	}
	pw_rp_compat_set_submodules(s->compat, rp_submodules(s));
	rc = pw_rp_compat_import(s->compat, wire_dir, pack_dir, s->opts->before_map_publish,
	                         s->opts->before_map_publish_data, hex, &s->pack_nr, e);
	if (rc) {
		rp_error(s, "cannot translate the pushed %s objects into %s: %s", s->wire->name,
		         s->algo->name, e->msg);
		set_unpack_error(s, "cannot translate the pushed objects");
	}
out:
	pw_fs_remove_tree(wire_dir, 0);
	free(wire_pack);
	free(wire_dir);
	return rc;
}

/* Receive and index the pack into the quarantine; fsck when configured. */
static int receive_pack_data(struct rp *s)
{
	struct pw_index_pack_args args;
	struct pw_error e;
	char hex[PW_MAX_HEXSZ + 1], *pack_dir = NULL, *idx = NULL;
	int kept = 0, rc, self_contained = 0;

	memset(&e, 0, sizeof(e));
	if ((rc = pw_quarantine_create(&s->qdir, pw_repo_objects_dir(s->repo), &e))) {
		set_unpack_error(s, e.msg);
		return rc;
	}
	if (s->compat) {
		if (!(pack_dir = pw_path_join(s->qdir, "pack"))) {
			set_unpack_error(s, "out of memory");
			return PW_ENOMEM;
		}
		if ((rc = receive_compat_pack(s, pack_dir, hex, &e)))
			goto out;
		if ((rc = compat_shallow(s))) {
			set_unpack_error(s, "out of memory");
			goto out;
		}
		if ((rc = pw_odb_open(&s->q_odb, s->qdir, s->algo, &e))) {
			set_unpack_error(s, e.msg);
			goto out;
		}
		if (s->fsck && hex[0]) {
			size_t n = strlen(pack_dir) + PW_MAX_HEXSZ + 16;

			if (!(idx = malloc(n))) {
				rc = PW_ENOMEM;
				set_unpack_error(s, "out of memory");
				goto out;
			}
			snprintf(idx, n, "%s/pack-%s.idx", pack_dir, hex);
			if ((rc = pw_fsck_pack(s->q_odb, idx, &s->fsck_opts, &e))) {
				rp_error(s, "%s", e.msg);
				set_unpack_error(s, "fsck error in the pushed objects");
			}
		}
		goto out;
	}
	memset(&args, 0, sizeof(args));
	args.opts.algo = s->algo;
	args.opts.fix_thin = 1;
	args.opts.read_object = read_main;
	args.opts.has_object = has_main;
	args.opts.odb_ctx = s->main_odb;
	args.opts.max_input = (uint64_t)s->max_input;
	args.opts.report_links = 1;
	args.self_contained = &self_contained;
	pack_dir = pw_path_join(s->qdir, "pack");
	if (!pack_dir) {
		set_unpack_error(s, "out of memory");
		return PW_ENOMEM;
	}
	rc = pw_index_pack_stream(&args, s->in_fd, pack_dir, NULL, NULL, hex, &kept, &e);
	if (rc) {
		rp_error(s, "%s", e.msg);
		set_unpack_error(s, rc == PW_ETOOBIG ? "pack exceeds maximum allowed size"
		                                     : "index-pack failed");
		goto out;
	}
	{
		/* the bases --fix-thin read sit in main_odb's cache: start an
		 * empty one before the connectivity walk fills a cache of its own */
		struct pw_odb *fresh = NULL;

		if (!pw_odb_open(&fresh, pw_repo_objects_dir(s->repo), s->algo, &e)) {
			pw_odb_free(s->main_odb);
			s->main_odb = fresh;
		}
	}
	{
		size_t n = strlen(pack_dir) + PW_MAX_HEXSZ + 16;
		struct pw_idx *ix = NULL;

		idx = malloc(n);
		if (!idx) {
			rc = PW_ENOMEM;
			set_unpack_error(s, "out of memory");
			goto out;
		}
		snprintf(idx, n, "%s/pack-%s.idx", pack_dir, hex);
		/* an empty pack (new ref to an existing object) is not kept */
		if (!pw_idx_open(&ix, idx, s->algo, &e) && ix->nr == 0) {
			char *pack = malloc(n);

			if (pack)
				snprintf(pack, n, "%s/pack-%s.pack", pack_dir, hex);
			pw_idx_free(ix);
			ix = NULL;
			if (!pack || unlink(idx) || unlink(pack)) {
				free(pack);
				rc = PW_EIO;
				set_unpack_error(s, "cannot remove an empty pack");
				goto out;
			}
			free(pack);
		}
		s->pack_nr = ix ? ix->nr : 0;
		if (ix && self_contained)
			s->self_contained = ix;
		else
			pw_idx_free(ix);
	}
	if ((rc = pw_odb_open(&s->q_odb, s->qdir, s->algo, &e))) {
		set_unpack_error(s, e.msg);
		goto out;
	}
	if (s->fsck && s->fsck_config_error) {
		rp_msg(s, "fatal: ", "%s", s->fsck_config_error);
		set_unpack_error(s, "index-pack abnormal exit");
		rc = PW_EINVAL;
		goto out;
	}
	if (s->fsck && pw_fs_exists(idx)) {
		if ((rc = pw_fsck_pack(s->q_odb, idx, &s->fsck_opts, &e))) {
			rp_error(s, "%s", e.msg);
			set_unpack_error(s, "fsck error in the pushed objects");
			goto out;
		}
	}
	if (pw_repo_compat_algo(s->repo) && pw_fs_exists(idx)) {
		/* the map follows the objects in: their side file migrates with
		 * the pack (a repository with a compat map keeps pushes packed) */
		if (pw_rp_compat_note_quarantine(s->repo, s->qdir, pack_dir, rp_submodules(s),
		                                 s->opts->before_map_publish,
		                                 s->opts->before_map_publish_data, &e))
			rp_warning(s, "compat map not updated (run 'packwire compat build'): %s",
			           e.msg);
	} else if (s->pack_nr < s->unpack_limit && pw_fs_exists(idx) &&
	           (rc = explode_pack(s, pack_dir, hex, &e))) {
		rp_error(s, "%s", e.msg);
		set_unpack_error(s, "unpack-objects abnormal exit");
		goto out;
	}
out:
	if (rc) {
		pw_idx_free(s->self_contained);
		s->self_contained = NULL;
	}
	free(pack_dir);
	free(idx);
	return rc;
}

/* ---- checks -------------------------------------------------------------- */

static int cmd_is_delete(const struct pw_receive_cmd *c)
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

/* ---- shallow pushes -------------------------------------------------------- */

/* The client's shallow commits that this push brought (we did not have
 * them): history pushed on top of them is cut there. */
static int find_theirs(struct rp *s)
{
	size_t i;
	int created;

	for (i = 0; i < s->nshallow; i++)
		if (!pw_odb_exists(s->main_odb, &s->shallow[i]) && s->q_odb &&
		    pw_odb_exists(s->q_odb, &s->shallow[i]) &&
		    !pw_oidmap_put(&s->theirs, &s->shallow[i], &created))
			return PW_ENOMEM;
	return 0;
}

static int push_oid(struct pw_oid_array *a, const struct pw_oid *oid)
{
	return pw_oid_array_push(a, oid);
}

/* Everything tip needs, down to what we already had and to the client's
 * shallow commits (whose parents are not sent); *hits gets the shallow
 * commits reached. 0, PW_ENOTFOUND (something missing) or PW_ENOMEM. */
static int shallow_walk(struct rp *s, const struct pw_oid *tip, struct pw_oid_array *hits,
                        struct pw_error *e)
{
	struct pw_oidmap seen = PW_OIDMAP_INIT;
	struct pw_oid_array todo = {NULL, 0, 0};
	struct pw_buf buf = PW_BUF_INIT;
	int rc = push_oid(&todo, tip);

	while (!rc && todo.nr) {
		struct pw_oid oid = todo.v[--todo.nr];
		int type, created;

		if (!pw_oidmap_put(&seen, &oid, &created)) {
			rc = PW_ENOMEM;
			break;
		}
		if (!created || pw_odb_exists(s->main_odb, &oid))
			continue;
		if (pw_odb_read(s->q_odb, &oid, &type, &buf)) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = pw_error_set(e, PW_ENOTFOUND, "missing object %s",
			                  pw_oid_to_hex(&oid, hex));
			break;
		}
		if (type == PW_OBJ_COMMIT) {
			struct pw_commit_info ci;
			size_t i;

			if (pw_commit_parse(&ci, buf.data, buf.len, s->algo, e)) {
				rc = PW_ENOTFOUND;
				break;
			}
			rc = push_oid(&todo, &ci.tree);
			if (pw_oidmap_get(&s->theirs, &oid))
				rc = rc ? rc : push_oid(hits, &oid);
			else
				for (i = 0; i < ci.nr_parents && !rc; i++)
					rc = push_oid(&todo, &ci.parents[i]);
			pw_commit_info_free(&ci);
		} else if (type == PW_OBJ_TREE) {
			struct pw_tree_entry te;
			size_t pos = 0;
			int r;

			while (!rc &&
			       (r = pw_tree_next(buf.data, buf.len, &pos, s->algo, &te, e)) == 1)
				if (te.mode != 0160000)
					rc = push_oid(&todo, &te.oid);
			if (!rc && r < 0)
				rc = PW_ENOTFOUND;
		} else if (type == PW_OBJ_TAG) {
			struct pw_tag_info ti;

			if (pw_tag_parse(&ti, buf.data, buf.len, s->algo, e))
				rc = PW_ENOTFOUND;
			else
				rc = push_oid(&todo, &ti.object);
		}
	}
	if (rc == PW_ENOMEM)
		pw_error_set(e, rc, "out of memory");
	pw_buf_free(&buf);
	free(todo.v);
	pw_oidmap_free(&seen);
	return rc;
}

static int count_one(struct rp *s, const struct pw_oid *oid, void *data)
{
	(void)s;
	(void)oid;
	return ++*(int *)data > 0 ? 1 : 0;
}

static int is_shallow_repo(struct rp *s)
{
	int n = 0;

	foreach_our_shallow(s, count_one, &n);
	return n > 0;
}

/* Git's rule for a push from a shallow repository: a ref whose new history
 * stops at one of the client's shallow commits is refused ("shallow update
 * not allowed") unless receive.shallowUpdate is on, in which case those
 * commits join our shallow file. Replaces the connectivity check. */
static void check_shallow(struct rp *s)
{
	size_t i, j;

	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];
		struct pw_oid_array hits = {NULL, 0, 0};
		struct pw_error e;

		if (c->error || cmd_is_delete(c))
			continue;
		memset(&e, 0, sizeof(e));
		if (shallow_walk(s, &c->new_oid, &hits, &e)) {
			rp_error(s, "%s: %s", c->name, e.msg);
			c->error = "missing necessary objects";
		} else if (hits.nr && !s->shallow_update) {
			c->error = "shallow update not allowed";
		} else {
			for (j = 0; j < hits.nr; j++)
				if (pw_oid_array_push(&s->new_shallow, &hits.v[j]))
					c->error = "out of memory";
		}
		free(hits.v);
	}
}

static int collect_shallow(struct rp *s, const struct pw_oid *oid, void *data)
{
	int created;

	(void)s;
	return pw_oidmap_put(data, oid, &created) ? 0 : PW_ENOMEM;
}

static int cmp_oid(const void *a, const void *b)
{
	return memcmp(((const struct pw_oid *)a)->id, ((const struct pw_oid *)b)->id,
	              sizeof(((const struct pw_oid *)a)->id));
}

/* receive.shallowUpdate: add the new shallow commits to our shallow file
 * (sorted, under its lock) once a ref that needs them was updated. */
static void write_shallow(struct rp *s)
{
	struct pw_oidmap all = PW_OIDMAP_INIT;
	struct pw_buf out = PW_BUF_INIT;
	struct pw_oid *v = NULL;
	struct pw_lock lk;
	struct pw_error e;
	char *path = NULL, hex[PW_MAX_HEXSZ + 1];
	size_t i, n = 0, live = 0;
	int created;

	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error && !cmd_is_delete(&s->cmds.v[i]))
			live++;
	if (!s->new_shallow.nr || !live)
		return;
	memset(&e, 0, sizeof(e));
	if (!(path = pw_path_join(pw_repo_git_dir(s->repo), "shallow")) ||
	    pw_lock_acquire(&lk, path, &e)) {
		rp_error(s, "cannot update the shallow file: %s",
		         e.msg[0] ? e.msg : "out of memory");
		free(path);
		return;
	}
	if (foreach_our_shallow(s, collect_shallow, &all))
		goto fail;
	for (i = 0; i < s->new_shallow.nr; i++)
		if (!pw_oidmap_put(&all, &s->new_shallow.v[i], &created))
			goto fail;
	if (!(v = malloc((all.count + 1) * sizeof(*v))))
		goto fail;
	for (i = 0; i < all.cap; i++)
		if (all.slots[i].used)
			v[n++] = all.slots[i].oid;
	qsort(v, n, sizeof(*v), cmp_oid);
	for (i = 0; i < n; i++)
		if (pw_buf_addf(&out, "%s\n", pw_oid_to_hex(&v[i], hex)))
			goto fail;
	if (pw_lock_write(&lk, out.data, out.len, &e) || pw_lock_commit(&lk, &e))
		rp_error(s, "cannot update the shallow file: %s", e.msg);
	goto done;
fail:
	pw_lock_rollback(&lk);
	rp_error(s, "cannot update the shallow file: out of memory");
done:
	free(v);
	free(path);
	pw_buf_free(&out);
	pw_oidmap_free(&all);
}

/* A hidden ref is neither advertised nor updatable (Git's rule). */
static void reject_hidden(struct rp *s)
{
	size_t i;

	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];

		if (c->error || !pw_hide_refs_match(&s->hidden, c->name, c->name))
			continue;
		c->error = cmd_is_delete(c) ? "deny deleting a hidden ref"
		                            : "deny updating a hidden ref";
	}
}

static void check_connectivity(struct rp *s)
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
		if (!s->cmds.v[i].error && !cmd_is_delete(&s->cmds.v[i]) &&
		    !tip_in_pack(s, &s->cmds.v[i].new_oid))
			tips[n++] = s->cmds.v[i].new_oid;
	if (n && connected(s, tips, n, &e)) {
		/* find the culprits one by one */
		for (i = 0; i < s->cmds.nr; i++) {
			struct pw_receive_cmd *c = &s->cmds.v[i];

			if (c->error || cmd_is_delete(c) || tip_in_pack(s, &c->new_oid))
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

/* "ref: <name>" in the HEAD file at path. */
static int head_file_is(const char *path, const char *name)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error e;
	size_t n = strlen(name);
	int r = 0;

	if (!pw_fs_read_file(path, &b, 4096, &e) && b.len >= 5 + n && !memcmp(b.data, "ref: ", 5) &&
	    !memcmp(b.data + 5, name, n) &&
	    (b.len == 5 + n || b.data[5 + n] == '\n' || b.data[5 + n] == '\r'))
		r = 1;
	pw_buf_free(&b);
	return r;
}

/* Where branch `name` is checked out, as Git's find_shared_symref sees it:
 * the main work tree of a non-bare repository, or a linked work tree
 * (<git-dir>/worktrees/<id>/HEAD, its path in .../gitdir). 1 with *wt and
 * *gd (absolute, malloc'd), 0 when nowhere, negative on ENOMEM. */
static int checked_out(struct rp *s, const char *name, char **wt, char **gd)
{
	char real[PATH_MAX], *dir;
	DIR *d;
	struct dirent *de;
	int found = 0;

	*wt = *gd = NULL;
	if (!pw_repo_is_bare(s->repo) && s->head_target && !strcmp(name, s->head_target)) {
		const char *w = pw_repo_work_tree(s->repo), *cw = NULL;
		char *tmp = NULL;
		size_t n;

		/* opened by its git dir: core.worktree, else the parent of ".git" */
		if (!w &&
		    !pw_config_get_string(pw_repo_config(s->repo), "core.worktree", &cw, NULL) &&
		    cw)
			w = tmp = cw[0] == '/' ? strdup(cw)
			                       : pw_path_join(pw_repo_git_dir(s->repo), cw);
		if (!w && realpath(pw_repo_git_dir(s->repo), real) && (n = strlen(real)) > 5 &&
		    !strcmp(real + n - 5, "/.git")) {
			real[n - 5] = '\0';
			w = tmp = strdup(real);
		}
		if (w && realpath(w, real))
			*wt = strdup(real);
		free(tmp);
		if (realpath(pw_repo_git_dir(s->repo), real))
			*gd = strdup(real);
		return 1;
	}
	if (!(dir = pw_path_join(pw_repo_git_dir(s->repo), "worktrees")))
		return PW_ENOMEM;
	d = opendir(dir);
	while (d && !found && (de = readdir(d))) {
		char path[PATH_MAX];
		struct pw_buf b = PW_BUF_INIT;
		struct pw_error e;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/HEAD", dir, de->d_name);
		if (!head_file_is(path, name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/gitdir", dir, de->d_name);
		if (!pw_fs_read_file(path, &b, PATH_MAX, &e)) {
			while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r'))
				b.data[--b.len] = '\0';
			if (b.len > 5 && !strcmp(b.data + b.len - 5, "/.git"))
				b.data[b.len -= 5] = '\0';
			*wt = strdup(b.data);
		}
		pw_buf_free(&b);
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (realpath(path, real))
			*gd = strdup(real);
		found = 1;
	}
	if (d)
		closedir(d);
	free(dir);
	return found;
}

/* Rules that do not need hooks: ref name, deny* settings, fast-forward. */
static const char *check_rules(struct rp *s, struct pw_receive_cmd *c)
{
	struct pw_odb *odb = s->q_odb ? s->q_odb : s->main_odb;
	int is_head = s->head_target && !strcmp(c->name, s->head_target);
	char *wt = NULL, *gd = NULL;
	int in_wt = checked_out(s, c->name, &wt, &gd);

	if (in_wt < 0)
		return "out of memory";
	if (in_wt && s->deny_current == DENY_UPDATE_INSTEAD && !cmd_is_delete(c)) {
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
	if (cmd_is_delete(c)) {
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
			break; /* the work tree is updated with the ref (update_worktree) */
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
static const char *check_old_value(struct rp *s, struct pw_receive_cmd *c)
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
		return cmd_is_delete(c) ? "failed to delete" : "failed to update ref";
	}
	if (cmd_is_delete(c) && pw_oid_is_zero(&cur)) {
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
	return cmd_is_delete(c) ? "failed to delete" : "failed to update ref";
}

/* ---- aliased updates ----------------------------------------------------- */

/* A push that names both a symref and its target (refs/heads/bar -> foo):
 * Git updates the target once and skips the symref when both ask for the
 * same change, and refuses both when they disagree. */
static void check_aliased(struct rp *s)
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

/* ---- hooks --------------------------------------------------------------- */

struct env {
	char **v;
	size_t nr;
};

static int env_add(struct env *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int env_add(struct env *e, const char *fmt, ...)
{
	char **v = realloc(e->v, (e->nr + 2) * sizeof(*v));
	va_list ap;
	int n;

	if (!v)
		return PW_ENOMEM;
	e->v = v;
	va_start(ap, fmt);
	n = vasprintf(&v[e->nr], fmt, ap);
	va_end(ap);
	if (n < 0)
		return PW_ENOMEM;
	v[++e->nr] = NULL;
	return 0;
}

static void env_free(struct env *e)
{
	size_t i;

	for (i = 0; i < e->nr; i++)
		free(e->v[i]);
	free(e->v);
}

/* What nonces are signed over: the path the client named, as Git does, so a
 * stateless server checks a nonce another instance gave out for that path. */
static const char *nonce_path(const struct rp *s)
{
	return s->opts->service_path ? s->opts->service_path : pw_repo_git_dir(s->repo);
}

/* The certificate's blob gets its map entry like any object that arrives
 * (its id in the other algorithm: the same bytes hashed there). */
static void map_cert(struct rp *s)
{
	const struct pw_hash_algo *compat = pw_repo_compat_algo(s->repo);
	struct pw_compat_map *map = NULL;
	struct pw_error e;

	if (!compat)
		return;
	memset(&e, 0, sizeof(e));
	if (pw_compat_map_open(&map, pw_repo_objects_dir(s->repo), s->algo, compat, &e) ||
	    pw_compat_map_add_objects(map, NULL, &s->cert_oid, 1, &e))
		rp_warning(s, "compat map not updated (run 'packwire compat build'): %s", e.msg);
	pw_compat_map_free(map);
}

/* Once, before the first hook: store the certificate as a blob, check
 * its signature and nonce (Git does it when a hook is about to see them). */
static void prepare_cert(struct rp *s)
{
	struct pw_nonce_check nc;
	size_t bogs;

	if (!s->cert.len || s->cert_prepared)
		return;
	s->cert_prepared = 1;
	s->have_cert_oid =
	        s->main_odb && !pw_odb_write_loose(s->main_odb, PW_OBJ_BLOB, s->cert.data,
	                                           s->cert.len, &s->cert_oid);
	if (s->have_cert_oid)
		map_cert(s);
	bogs = pw_push_cert_sig_start(s->cert.data, s->cert.len);
	if (pw_push_cert_verify(&s->cert_sig, pw_repo_config(s->repo), NULL, s->cert.data, bogs,
	                        s->cert.data + bogs, s->cert.len - bogs))
		s->cert_sig.result = 'N';
	memset(&nc, 0, sizeof(nc));
	nc.algo = s->algo;
	nc.seed = s->cert_seed;
	nc.path = nonce_path(s);
	nc.issued = s->cert_nonce;
	nc.stateless = s->opts->stateless_rpc;
	nc.slop_limit = s->cert_slop_limit;
	if (pw_push_cert_check_nonce(&nc, s->cert.data, bogs)) {
		s->nonce_status = pw_nonce_bad;
		return;
	}
	s->nonce_status = nc.status;
	s->nonce_slop = nc.slop;
	if (nc.adopted) {
		free(s->cert_nonce);
		s->cert_nonce = nc.adopted;
	}
}

/* GIT_PUSH_CERT*: what the hooks learn about a signed push. */
static int cert_env(struct rp *s, struct env *e)
{
	char hex[PW_MAX_HEXSZ + 1];
	int rc;

	if (s->no_cert_env)
		return 0;
	prepare_cert(s);
	if (!s->have_cert_oid)
		return 0;
	rc = env_add(e, "GIT_PUSH_CERT=%s", pw_oid_to_hex(&s->cert_oid, hex)) ||
	     env_add(e, "GIT_PUSH_CERT_SIGNER=%s", s->cert_sig.signer ? s->cert_sig.signer : "") ||
	     env_add(e, "GIT_PUSH_CERT_KEY=%s", s->cert_sig.key ? s->cert_sig.key : "") ||
	     env_add(e, "GIT_PUSH_CERT_STATUS=%c", s->cert_sig.result);
	if (!rc && s->cert_nonce)
		rc = env_add(e, "GIT_PUSH_CERT_NONCE=%s", s->cert_nonce) ||
		     env_add(e, "GIT_PUSH_CERT_NONCE_STATUS=%s", s->nonce_status);
	if (!rc && s->cert_nonce && s->nonce_status == pw_nonce_slop)
		rc = env_add(e, "GIT_PUSH_CERT_NONCE_SLOP=%ld", s->nonce_slop);
	/* the certificate names the client's ids, which differ from the
	 * storage ids the hooks get on stdin when it pushed into the view */
	if (!rc)
		rc = env_add(e, "PACKWIRE_PUSH_CERT_OBJECT_FORMAT=%s", s->wire->name);
	return rc;
}

static int hook_env(struct rp *s, struct env *e, int quarantined)
{
	size_t i;
	int rc = env_add(e, "GIT_DIR=.") || cert_env(s, e);

	if (!rc && quarantined && s->qdir)
		rc = env_add(e, "GIT_QUARANTINE_PATH=%s", s->qdir) ||
		     env_add(e, "GIT_OBJECT_DIRECTORY=%s", s->qdir) ||
		     env_add(e, "GIT_ALTERNATE_OBJECT_DIRECTORIES=%s",
		             pw_repo_objects_dir(s->repo));
	else if (!rc)
		rc = env_add(e, "GIT_QUARANTINE_PATH") || env_add(e, "GIT_OBJECT_DIRECTORY") ||
		     env_add(e, "GIT_ALTERNATE_OBJECT_DIRECTORIES");
	if (!rc && s->use_push_options) {
		rc = env_add(e, "GIT_PUSH_OPTION_COUNT=%zu", s->npopts);
		for (i = 0; i < s->npopts && !rc; i++)
			rc = env_add(e, "GIT_PUSH_OPTION_%zu=%s", i, s->popts[i]);
	} else if (!rc) {
		rc = env_add(e, "GIT_PUSH_OPTION_COUNT");
	}
	return rc;
}

/* Run hook `name` if present: 0 when absent or it succeeded, 1 when it
 * failed (declined), negative when it could not run. */
static int run_program(struct rp *s, char *path, const char *const *args, const char *input,
                       size_t input_len, int quarantined);

static int run_hook(struct rp *s, const char *name, const char *const *args, const char *input,
                    size_t input_len, int quarantined)
{
	char *path = pw_hook_find(s->hooks_dir, name);

	if (!path)
		return 0;
	return run_program(s, path, args, input, input_len, quarantined);
}

/* Run path with args in cwd and the environment e (both freed here; a
 * non-zero env_failed means building e ran out of memory), output relayed
 * to the user: 0, 1 when it failed, negative when it could not run. */
static int run_with_env(struct rp *s, char *path, const char *const *args, struct env *e,
                        int env_failed, const char *cwd, const char *input, size_t input_len)
{
	struct pw_hook_run h;
	struct pw_error err;
	int status = 0, rc;

	if (env_failed) {
		free(path);
		env_free(e);
		return PW_ENOMEM;
	}
	memset(&h, 0, sizeof(h));
	h.path = path;
	h.args = args;
	h.env = (const char *const *)e->v;
	h.cwd = cwd;
	h.input = input;
	h.input_len = input_len;
	h.output = hook_output;
	h.ctx = s;
	rc = pw_hook_run(&h, &status, &err);
	if (rc)
		rp_error(s, "%s", err.msg);
	free(path);
	env_free(e);
	return rc ? rc : status ? 1 : 0;
}

/* Run path (freed here) in the repository with the hooks' environment, its
 * output relayed to the user; 0, 1 when it failed, negative when it could
 * not run. */
static int run_program(struct rp *s, char *path, const char *const *args, const char *input,
                       size_t input_len, int quarantined)
{
	struct env e = {NULL, 0};

	return run_with_env(s, path, args, &e, hook_env(s, &e, quarantined),
	                    pw_repo_git_dir(s->repo), input, input_len);
}

/* "<old> <new> <ref>\n" for every command that is still going (and, for
 * the post hooks, that changed something: skip_missing). */
static int hook_input(struct rp *s, struct pw_buf *b, int skip_missing)
{
	char o[PW_MAX_HEXSZ + 1], n[PW_MAX_HEXSZ + 1];
	size_t i;

	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];

		const struct pw_receive_report *r;

		if (c->error || (skip_missing && c->did_not_exist))
			continue;
		if (!c->reports && pw_buf_addf(b, "%s %s %s\n", pw_oid_to_hex(&c->old_oid, o),
		                               pw_oid_to_hex(&c->new_oid, n), c->name))
			return PW_ENOMEM;
		/* what a proc-receive hook says it did, one line per ref it names */
		for (r = c->reports; r; r = r->next)
			if (pw_buf_addf(b, "%s %s %s\n",
			                pw_oid_to_hex(r->has_old ? &r->old_oid : &c->old_oid, o),
			                pw_oid_to_hex(r->has_new ? &r->new_oid : &c->new_oid, n),
			                r->ref_name ? r->ref_name : c->name))
				return PW_ENOMEM;
	}
	return 0;
}

static void pre_receive(struct rp *s)
{
	struct pw_buf in = PW_BUF_INIT;
	size_t i;
	int rc;

	if (hook_input(s, &in, 0))
		rc = PW_ENOMEM;
	else if (!in.len)
		rc = 0;
	else
		rc = run_hook(s, "pre-receive", NULL, in.data, in.len, 1);
	pw_buf_free(&in);
	if (!rc)
		return;
	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error)
			s->cmds.v[i].error = "pre-receive hook declined";
}

static const char *update_hook(struct rp *s, struct pw_receive_cmd *c)
{
	char o[PW_MAX_HEXSZ + 1], n[PW_MAX_HEXSZ + 1];
	const char *args[4];

	args[0] = c->name;
	args[1] = pw_oid_to_hex(&c->old_oid, o);
	args[2] = pw_oid_to_hex(&c->new_oid, n);
	args[3] = NULL;
	if (!run_hook(s, "update", args, NULL, 0, 1))
		return NULL;
	rp_error(s, "hook declined to update %s", c->name);
	return "hook declined";
}

static void post_hooks(struct rp *s)
{
	struct pw_buf in = PW_BUF_INIT;
	const char **args;
	size_t i, n = 0;

	if (!hook_input(s, &in, 1) && in.len)
		run_hook(s, "post-receive", NULL, in.data, in.len, 0);
	pw_buf_free(&in);
	args = calloc(s->cmds.nr + 1, sizeof(*args));
	if (!args)
		return;
	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error && !s->cmds.v[i].did_not_exist)
			args[n++] = s->cmds.v[i].name;
	if (n)
		run_hook(s, "post-update", args, NULL, 0, 0);
	free(args);
}

/* receive.autogc: Git runs "git gc --auto --quiet" after every push that
 * sent commands, its output going to the client; so do we, with stock git
 * (when it is on the PATH). */
static void auto_gc(struct rp *s)
{
	static const char *const args[] = {"gc", "--auto", "--quiet", NULL};
	char *git;

	/* "git" is found in PATH when it runs; without one nothing happens.
	 * Stock git refuses a repository with extensions.compatObjectFormat
	 * (and would not keep its map): no gc there. */
	if (!s->auto_gc || s->io_failed || pw_repo_compat_algo(s->repo) || !(git = strdup("git")))
		return;
	s->no_cert_env = 1;
	run_program(s, git, args, NULL, 0, 0);
	s->no_cert_env = 0;
}

/* receive.procReceiveRefs: the proc-receive hook handles the commands
 * marked for it (after the objects moved in); when it fails, what it did
 * not report on fails with it, and with --atomic everything still going. */
static void proc_receive(struct rp *s)
{
	char *path = pw_hook_find(s->hooks_dir, "proc-receive");
	struct pw_proc_receive r;
	struct env e = {NULL, 0};
	struct pw_buf msg = PW_BUF_INIT;
	size_t i;
	int rc = 1;

	if (!path) {
		rp_error(s, "cannot find hook 'proc-receive'");
	} else if (hook_env(s, &e, 0)) {
		rc = PW_ENOMEM;
	} else {
		memset(&r, 0, sizeof(r));
		r.path = path;
		r.env = (const char *const *)e.v;
		r.cwd = pw_repo_git_dir(s->repo);
		r.cmds = &s->cmds;
		r.atomic = s->atomic;
		r.push_options = s->use_push_options;
		r.popts = s->popts;
		r.npopts = s->npopts;
		r.output = hook_output;
		r.ctx = s;
		rc = pw_proc_receive_run(&r, &msg);
		if (rc == PW_ENOMEM)
			rp_error(s, "proc-receive: out of memory");
		else if (msg.len)
			rp_error(s, "%s", msg.data);
	}
	free(path);
	env_free(&e);
	pw_buf_free(&msg);
	if (!rc)
		return;
	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];

		if (!c->error && !(c->run_proc & PW_RECEIVE_PROC_RETURNED) &&
		    (c->run_proc || s->atomic))
			c->error = "fail to run proc-receive hook";
	}
}

static void fail_all(struct rp *s, const char *why)
{
	size_t i;

	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error)
			s->cmds.v[i].error = why;
}

/* ---- receive.denyCurrentBranch=updateInstead ------------------------------ */

/* Run path (freed here) with args in cwd, with GIT_DIR=git_dir (and
 * GIT_WORK_TREE when work_tree), output relayed: 0, 1 failed, <0. */
static int run_in_worktree(struct rp *s, char *path, const char *const *args, const char *cwd,
                           const char *git_dir, const char *work_tree)
{
	struct env e = {NULL, 0};
	int rc;

	rc = env_add(&e, "GIT_DIR=%s", git_dir) || env_add(&e, "GIT_QUARANTINE_PATH") ||
	     env_add(&e, "GIT_OBJECT_DIRECTORY") ||
	     env_add(&e, "GIT_ALTERNATE_OBJECT_DIRECTORIES") || env_add(&e, "GIT_INDEX_FILE") ||
	     (work_tree ? env_add(&e, "GIT_WORK_TREE=%s", work_tree)
	                : env_add(&e, "GIT_WORK_TREE"));
	return run_with_env(s, path, args, &e, rc, cwd, NULL, 0);
}

/* Git's push_to_checkout / push_to_deploy: the push-to-checkout hook when
 * there is one, else (with stock git, as Git runs its own commands) refresh
 * the index, require a clean work tree and index, and read-tree -u -m the
 * new commit. NULL when the work tree now matches, else the "ng" reason. */
static const char *update_worktree(struct rp *s, struct pw_receive_cmd *c)
{
	char hex[PW_MAX_HEXSZ + 1], base[PW_MAX_HEXSZ + 1];
	char *hook = pw_hook_find(s->hooks_dir, "push-to-checkout"), *git;
	const char *hook_args[] = {hex, NULL};
	const char *refresh[] = {"update-index", "-q", "--ignore-submodules", "--refresh", NULL};
	const char *files[] = {"diff-files", "--quiet", "--ignore-submodules", "--", NULL};
	const char *index[] = {"diff-index", "--quiet", "--cached", "--ignore-submodules",
	                       base,         "--",      NULL};
	const char *rtree[] = {"read-tree", "-u", "-m", hex, NULL};
	struct {
		const char *const *args;
		const char *why;
	} steps[] = {{refresh, "Up-to-date check failed"},
	             {files, "Working directory has unstaged changes"},
	             {index, "Working directory has staged changes"},
	             {rtree, "Could not update working tree to new HEAD"}};
	size_t i;

	pw_oid_to_hex(&c->new_oid, hex);
	if (hook)
		return run_in_worktree(s, hook, hook_args, pw_repo_git_dir(s->repo),
		                       c->worktree_git_dir, c->worktree)
		               ? "push-to-checkout hook declined"
		               : NULL;
	/* diff-index against HEAD, or the empty tree on an unborn branch */
	if (pw_oid_is_zero(&c->old_oid))
		pw_oid_to_hex(s->algo->empty_tree, base);
	else
		snprintf(base, sizeof(base), "HEAD");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (!(git = strdup("git")))
			return "Up-to-date check failed";
		if (run_in_worktree(s, git, steps[i].args, c->worktree, c->worktree_git_dir, NULL))
			return steps[i].why;
	}
	return NULL;
}

/* ---- ref updates --------------------------------------------------------- */

static int queue_cmd(struct pw_ref_tx *tx, struct pw_receive_cmd *c)
{
	if (cmd_is_delete(c))
		return pw_ref_tx_delete(tx, c->name,
		                        pw_oid_is_zero(&c->old_oid) ? NULL : &c->old_oid);
	return pw_ref_tx_update(tx, c->name, &c->new_oid, &c->old_oid, 0);
}

/* The reflog entry Git's files backend writes for a push ("push"), also
 * for HEAD when it points at the ref; a deleted ref loses its log. */
static void log_update(struct rp *s, struct pw_receive_cmd *c)
{
	struct pw_reflog_ident who;
	struct pw_error e;

	if (cmd_is_delete(c)) {
		pw_reflog_delete(s->repo, c->name);
		return;
	}
	memset(&e, 0, sizeof(e));
	who.name = s->opts->committer_name;
	who.email = s->opts->committer_email;
	who.date = s->opts->committer_date;
	who.default_email = s->opts->default_email;
	if (pw_reflog_append(s->repo, c->name, &c->old_oid, &c->new_oid, "push", &who, &e) ||
	    (s->head_target && !strcmp(c->name, s->head_target) &&
	     pw_reflog_append(s->repo, "HEAD", &c->old_oid, &c->new_oid, "push", &who, &e)))
		rp_warning(s, "%s", e.msg);
}

static void update_refs(struct rp *s)
{
	struct pw_ref_tx *tx = NULL;
	size_t i;

	if (s->atomic) {
		int rc;

		for (i = 0; i < s->cmds.nr; i++) {
			struct pw_receive_cmd *c = &s->cmds.v[i];

			if (c->error || c->skip_update || c->run_proc || !c->worktree ||
			    !(c->error = update_worktree(s, c)))
				continue;
			fail_all(s, "atomic push failure");
			return;
		}
		rc = pw_ref_tx_new(&tx, s->repo);

		for (i = 0; i < s->cmds.nr && !rc; i++)
			if (!s->cmds.v[i].error && !s->cmds.v[i].skip_update &&
			    !s->cmds.v[i].run_proc)
				rc = queue_cmd(tx, &s->cmds.v[i]);
		if (!rc)
			rc = pw_ref_tx_commit(tx);
		if (rc) {
			rp_error(s, "%s", tx ? pw_ref_tx_error(tx)->msg : "out of memory");
			for (i = 0; i < s->cmds.nr; i++)
				if (!s->cmds.v[i].error)
					s->cmds.v[i].error = "atomic transaction failed";
		} else {
			for (i = 0; i < s->cmds.nr; i++)
				if (!s->cmds.v[i].error && !s->cmds.v[i].skip_update &&
				    !s->cmds.v[i].run_proc)
					log_update(s, &s->cmds.v[i]);
		}
		pw_ref_tx_free(tx);
		return;
	}
	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];
		int rc;

		if (c->error || c->skip_update || c->run_proc)
			continue;
		if (c->worktree && (c->error = update_worktree(s, c)))
			continue;
		tx = NULL;
		rc = pw_ref_tx_new(&tx, s->repo);
		if (!rc)
			rc = queue_cmd(tx, c);
		if (!rc)
			rc = pw_ref_tx_commit(tx);
		if (rc) {
			rp_error(s, "%s", tx ? pw_ref_tx_error(tx)->msg : "out of memory");
			c->error = cmd_is_delete(c) ? "failed to delete" : "failed to update ref";
		} else {
			log_update(s, c);
		}
		pw_ref_tx_free(tx);
	}
}

/* ---- report -------------------------------------------------------------- */

static int send_report(struct rp *s)
{
	struct pw_buf r = PW_BUF_INIT, out = PW_BUF_INIT;
	size_t i;
	int rc = 0;

	if (s->unpack_error)
		rc = pw_pkt_writef(&r, "unpack %s\n", s->unpack_error);
	else
		rc = pw_pkt_writes(&r, "unpack ok\n");
	for (i = 0; i < s->cmds.nr && !rc; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];

		const struct pw_receive_report *rr;
		char hex[PW_MAX_HEXSZ + 1];

		if (c->error) {
			rc = pw_pkt_writef(&r, "ng %s %s\n", c->name, c->error);
			continue;
		}
		rc = pw_pkt_writef(&r, "ok %s\n", c->name);
		if (!s->report_v2)
			continue;
		/* report-status-v2: what a proc-receive hook did instead */
		for (rr = c->reports; rr && !rc; rr = rr->next) {
			if (rr != c->reports)
				rc = pw_pkt_writef(&r, "ok %s\n", c->name);
			if (!rc && rr->ref_name)
				rc = pw_pkt_writef(&r, "option refname %s\n", rr->ref_name);
			if (!rc && rr->has_old && !wire_hex(s, &rr->old_oid, hex))
				rc = pw_pkt_writef(&r, "option old-oid %s\n", hex);
			if (!rc && rr->has_new && !wire_hex(s, &rr->new_oid, hex))
				rc = pw_pkt_writef(&r, "option new-oid %s\n", hex);
			if (!rc && rr->forced_update)
				rc = pw_pkt_writes(&r, "option forced-update\n");
		}
	}
	if (!rc)
		rc = pw_pkt_flush(&r);
	if (!rc && s->sideband)
		rc = pw_sideband_write(&out, PW_BAND_DATA, r.data, r.len, PW_SIDEBAND_64K_MAX);
	if (!rc)
		rc = send_buf(s, s->sideband ? &out : &r);
	pw_buf_free(&r);
	pw_buf_free(&out);
	return rc;
}

/* ---- the session --------------------------------------------------------- */

/* The per-ref rules, the update hook and the old value; with --atomic a
 * refusal fails everything (returns 1). */
static int check_ref(struct rp *s, struct pw_receive_cmd *c)
{
	if ((c->error = check_rules(s, c)) || (c->error = update_hook(s, c)) ||
	    (c->error = check_old_value(s, c))) {
		if (s->atomic) {
			fail_all(s, "atomic push failure");
			return 1;
		}
	}
	return 0;
}

static void execute(struct rp *s)
{
	size_t i, live = 0, nproc = 0;
	int need_pack = 0;
	struct pw_error e;

	for (i = 0; i < s->cmds.nr; i++)
		if (!cmd_is_delete(&s->cmds.v[i]))
			need_pack = 1;
	/* the parents of the client's shallow commits are not sent (across
	 * algorithms: once translated, compat_shallow) */
	for (i = 0; i < s->nshallow && !s->compat; i++) {
		int created;

		if (!pw_oidmap_put(&s->fsck_opts.shallow, &s->shallow[i], &created)) {
			fail_all(s, "out of memory");
			return;
		}
	}
	if (need_pack && receive_pack_data(s)) {
		fail_all(s, "unpacker error");
		return;
	}
	/* from here on every id is a storage id (hooks see those) */
	if (compat_shallow(s)) {
		fail_all(s, "out of memory");
		return;
	}
	for (i = 0; i < s->cmds.nr && s->compat; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];
		const char *why;

		memset(&e, 0, sizeof(e));
		if (!c->error && !cmd_is_delete(c) &&
		    pw_rp_compat_cut_off(s->compat, &c->new_oid)) {
			/* natively refused without receive.shallowUpdate; with it,
			 * Git would take the client's shallow roots, which have no
			 * id in our algorithm without their parents */
			if (s->shallow_update) {
				rp_error(s,
				         "%s: its history ends at a shallow commit whose parents "
				         "this repository lacks: it has no %s id (push from a "
				         "clone that has those parents)",
				         c->name, s->algo->name);
				c->error = "shallow update not possible across object formats";
			} else {
				c->error = "shallow update not allowed";
			}
			continue;
		}
		if (!c->error && (why = pw_rp_compat_cmd(s->compat, c, &e))) {
			rp_error(s, "%s", e.msg);
			c->error = why;
		}
	}
	if (s->nshallow && find_theirs(s)) {
		fail_all(s, "out of memory");
		return;
	}
	/* a shallow push, or into a shallow repository: history ends at
	 * shallow commits, which the walk knows and the rev-list does not */
	if (s->theirs.count || is_shallow_repo(s))
		check_shallow(s);
	else
		check_connectivity(s);
	pw_idx_free(s->self_contained);
	s->self_contained = NULL;
	reject_hidden(s);
	for (i = 0; i < s->cmds.nr && s->proc_refs.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];

		if (!c->error && !c->skip_update && pw_proc_refs_match(&s->proc_refs, c)) {
			c->run_proc = PW_RECEIVE_PROC_SCHEDULED;
			nproc++;
		}
	}
	if (s->atomic)
		for (i = 0; i < s->cmds.nr; i++)
			if (s->cmds.v[i].error) {
				fail_all(s, "atomic push failure");
				return;
			}
	pre_receive(s);
	check_aliased(s);
	for (i = 0; i < s->cmds.nr; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];

		if (c->error || c->skip_update)
			continue;
		/* the proc-receive hook's commands skip the ref checks (Git's way) */
		if (!c->run_proc && check_ref(s, c))
			return;
		if (!c->error)
			live++;
	}
	if (!live)
		return;
	if (s->qdir && pw_quarantine_migrate(s->qdir, pw_repo_objects_dir(s->repo), &e)) {
		rp_error(s, "%s", e.msg);
		fail_all(s, "unable to migrate objects to permanent storage");
		return;
	}
	if (nproc) {
		proc_receive(s);
		/* what the hook handed back goes the ordinary way */
		for (i = 0; i < s->cmds.nr; i++) {
			struct pw_receive_cmd *c = &s->cmds.v[i];

			if (c->proc_fell_through && !c->error && !c->skip_update && !c->run_proc &&
			    check_ref(s, c))
				return;
		}
	}
	update_refs(s);
	write_shallow(s);
}

static void session_free(struct rp *s)
{
	size_t i;

	if (s->q_odb)
		pw_odb_free(s->q_odb);
	if (s->qdir) {
		pw_quarantine_remove(s->qdir);
		free(s->qdir);
	}
	if (s->main_odb)
		pw_odb_free(s->main_odb);
	if (s->rd_init)
		pw_pkt_reader_free(&s->rd);
	pw_receive_cmds_free(&s->cmds);
	for (i = 0; i < s->npopts; i++)
		free(s->popts[i]);
	free(s->popts);
	free(s->refs);
	free(s->hooks_dir);
	free(s->head_target);
	free(s->shallow);
	pw_oidmap_free(&s->theirs);
	free(s->new_shallow.v);
	pw_rp_compat_free(s->compat);
	pw_compat_submodules_free(s->subs);
	pw_hide_refs_free(&s->hidden);
	pw_fsck_opts_free(&s->fsck_opts);
	pw_proc_refs_free(&s->proc_refs);
	free(s->cert_nonce);
	pw_buf_free(&s->cert);
	pw_sigcheck_free(&s->cert_sig);
	free(s->fsck_config_error);
	free(s->unpack_error);
}

int pw_receive_pack(struct pw_repo *repo, int in_fd, int out_fd, const struct pw_receive_opts *opts,
                    struct pw_error *err)
{
	struct pw_receive_opts defaults;
	struct rp s;
	int rc;

	if (!opts) {
		pw_receive_opts_init(&defaults);
		opts = &defaults;
	}
	memset(&s, 0, sizeof(s));
	pw_error_clear(err);
	s.repo = repo;
	s.algo = pw_repo_algo(repo);
	s.opts = opts;
	s.err = err;
	s.in_fd = in_fd;
	s.out_fd = out_fd;
	s.wire = s.algo;
	if ((rc = pw_rp_compat_open(&s.compat, repo, opts->object_format, err)))
		goto out;
	if (s.compat)
		s.wire = pw_rp_compat_wire(s.compat);
	pw_receive_cmds_init(&s.cmds, s.wire);
	if ((rc = load_config(&s)))
		goto out;
	if (s.cert_seed && !(s.cert_nonce = pw_push_cert_nonce(s.algo, s.cert_seed, nonce_path(&s),
	                                                       (uint64_t)time(NULL)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (opts->advertise_refs || !opts->stateless_rpc) {
		if ((rc = advertise(&s, 0)))
			goto out;
		if (opts->advertise_refs)
			goto out;
	} else if ((rc = advertise(&s, 1))) {
		goto out;
	}
	/* The pack follows the pkt-lines on the same fd: never read past them. */
	if ((rc = pw_pkt_reader_init(&s.rd, in_fd, PW_PKT_READ_NO_AHEAD))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto out;
	}
	s.rd_init = 1;
	s.rd.timeout_ms = opts->timeout_ms;
	rc = read_commands(&s);
	if (rc == 1) {
		rc = 0;
		goto out;
	}
	if (rc) {
		if (!s.rd.eof) /* a client that hung up is not told (Git dies quietly) */
			rc = fatal(&s, rc);
		goto out;
	}
	if (s.use_push_options && (rc = read_push_options(&s))) {
		rc = fatal(&s, rc);
		goto out;
	}
	/* a signed push names its push options in the certificate too */
	if (!pw_push_cert_options_match(s.cert.data, s.cert.len, s.popts, s.npopts)) {
		size_t i;

		for (i = 0; i < s.cmds.nr; i++)
			s.cmds.v[i].error = "inconsistent push options";
	}
	{
		struct pw_error e;

		if (pw_odb_open(&s.main_odb, pw_repo_objects_dir(repo), s.algo, &e)) {
			pw_error_copy(err, &e);
			rc = fatal(&s, e.code ? e.code : PW_ERROR);
			goto out;
		}
	}
	execute(&s);
	/* drop the quarantine before anyone hears the result */
	if (s.q_odb) {
		pw_odb_free(s.q_odb);
		s.q_odb = NULL;
	}
	if (s.qdir) {
		pw_quarantine_remove(s.qdir);
		free(s.qdir);
		s.qdir = NULL;
	}
	if (s.report)
		send_report(&s);
	post_hooks(&s);
	auto_gc(&s);
	if (s.update_server_info && s.cmds.nr) { /* as Git, after gc; a failure is not the push's */
		struct pw_error e;

		pw_update_server_info(repo, 0, &e);
	}
	if (s.sideband) {
		struct pw_buf b = PW_BUF_INIT;

		if (!pw_pkt_flush(&b))
			send_buf(&s, &b);
		pw_buf_free(&b);
	}
	if (s.io_failed)
		rc = pw_error_set(err, PW_EIO, "the client hung up before the report was sent");
	else if (s.unpack_error)
		pw_error_set(err, 0, "unpack failed: %s", s.unpack_error);
out:
	if (opts->result) {
		size_t i;

		memset(opts->result, 0, sizeof(*opts->result));
		opts->result->commands = s.cmds.nr;
		for (i = 0; i < s.cmds.nr; i++)
			opts->result->refused += s.cmds.v[i].error != NULL;
		opts->result->failed = rc != 0 || s.unpack_error != NULL;
	}
	session_free(&s);
	return rc;
}
