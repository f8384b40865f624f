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
#include "odb/fsck.h"
#include "odb/idx.h"
#include "odb/quarantine.h"
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
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "packwire/revlist.h"
#include "packwire/server.h"
#include "packwire/version.h"
#include "proto/adv.h"
#include "refs/hide.h"
#include "refs/reflog.h"
#include "repo/hook.h"
#include "server/compat-receive.h"
#include "server/proc-receive.h"
#include "server/pushcert.h"
#include "server/receive-cmds.h"
#include "server/receive-priv.h"
#include "server/receive-store.h"
#include "util/fs.h"

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

void pw_rp__msg(struct rp *s, const char *prefix, const char *fmt, ...)
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

void pw_rp__hook_output(void *ctx, const char *data, size_t len)
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
int pw_rp__wire_hex(struct rp *s, const struct pw_oid *oid, char *hex)
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

	if (pw_rp__wire_hex(a->s, oid, hex)) {
		if (!strcmp(name, ".have"))
			return 0; /* only a hint */
		return pw_error_set(a->s->err, PW_ENOTFOUND,
		                    "ref %s: object %s has no %s id: run 'packwire compat build "
		                    "--object-format=%s'",
		                    name, pw_oid_to_hex(oid, hex), a->s->wire->name,
		                    a->s->wire->name);
	}
	rc = pw_adv__write_ref(a->out, hex, name, a->first ? a->caps : NULL,
	                       a->first ? strlen(a->caps) : 0);
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

static int adv_shallow_one(struct rp *s, const struct pw_oid *oid, void *data)
{
	char hex[PW_MAX_HEXSZ + 1];

	if (pw_rp__wire_hex(s, oid, hex))
		return 0; /* the client cannot name it either */
	if (pw_pkt_writef(data, "shallow %s\n", hex))
		return pw_error_set(s->err, PW_ENOMEM, "out of memory");
	return 0;
}

/* A shallow repository says so after its refs, as Git's does. */
static int adv_shallow(struct rp *s, struct pw_buf *out)
{
	return pw_rp__foreach_our_shallow(s, adv_shallow_one, out);
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
	if (a.first && pw_adv__write_no_refs(&out, s->wire, caps.data, caps.len)) {
		rc = pw_error_set(s->err, PW_ENOMEM, "out of memory");
		goto out;
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

/* ---- ref updates --------------------------------------------------------- */

static int queue_cmd(struct pw_ref_tx *tx, struct pw_receive_cmd *c)
{
	if (pw_rp__cmd_is_delete(c))
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

	if (pw_rp__cmd_is_delete(c)) {
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
			    !(c->error = pw_rp__update_worktree(s, c)))
				continue;
			pw_rp__fail_all(s, "atomic push failure");
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
		if (c->worktree && (c->error = pw_rp__update_worktree(s, c)))
			continue;
		tx = NULL;
		rc = pw_ref_tx_new(&tx, s->repo);
		if (!rc)
			rc = queue_cmd(tx, c);
		if (!rc)
			rc = pw_ref_tx_commit(tx);
		if (rc) {
			rp_error(s, "%s", tx ? pw_ref_tx_error(tx)->msg : "out of memory");
			c->error = pw_rp__cmd_is_delete(c) ? "failed to delete"
			                                   : "failed to update ref";
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
			if (!rc && rr->has_old && !pw_rp__wire_hex(s, &rr->old_oid, hex))
				rc = pw_pkt_writef(&r, "option old-oid %s\n", hex);
			if (!rc && rr->has_new && !pw_rp__wire_hex(s, &rr->new_oid, hex))
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
	if ((c->error = pw_rp__check_rules(s, c)) || (c->error = pw_rp__update_hook(s, c)) ||
	    (c->error = pw_rp__check_old_value(s, c))) {
		if (s->atomic) {
			pw_rp__fail_all(s, "atomic push failure");
			return 1;
		}
	}
	return 0;
}

/* The updates through opts->ref_store (a cluster's): it applies them. */
static void store_refs(struct rp *s)
{
	struct pw_error e;
	size_t i;

	if (pw_rp_store_commit(s->opts->ref_store, s->repo, s->atomic, &s->cmds, &s->store_err,
	                       &e)) {
		rp_error(s, "%s", e.msg);
		return;
	}
	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error && !s->cmds.v[i].skip_update && !s->cmds.v[i].run_proc)
			log_update(s, &s->cmds.v[i]);
}

static void execute(struct rp *s)
{
	size_t i, live = 0, nproc = 0;
	int need_pack = 0;
	struct pw_error e;

	for (i = 0; i < s->cmds.nr; i++)
		if (!pw_rp__cmd_is_delete(&s->cmds.v[i]))
			need_pack = 1;
	/* the parents of the client's shallow commits are not sent (across
	 * algorithms: once translated, pw_rp__compat_shallow) */
	for (i = 0; i < s->nshallow && !s->compat; i++) {
		int created;

		if (!pw_oidmap_put(&s->fsck_opts.shallow, &s->shallow[i], &created)) {
			pw_rp__fail_all(s, "out of memory");
			return;
		}
	}
	if (need_pack && pw_rp__receive_pack_data(s)) {
		pw_rp__fail_all(s, "unpacker error");
		return;
	}
	/* from here on every id is a storage id (hooks see those) */
	if (pw_rp__compat_shallow(s)) {
		pw_rp__fail_all(s, "out of memory");
		return;
	}
	for (i = 0; i < s->cmds.nr && s->compat; i++) {
		struct pw_receive_cmd *c = &s->cmds.v[i];
		const char *why;

		memset(&e, 0, sizeof(e));
		if (!c->error && !pw_rp__cmd_is_delete(c) &&
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
	if (s->nshallow && pw_rp__find_theirs(s)) {
		pw_rp__fail_all(s, "out of memory");
		return;
	}
	/* a shallow push, or into a shallow repository: history ends at
	 * shallow commits, which the walk knows and the rev-list does not */
	if (s->theirs.count || pw_rp__is_shallow_repo(s))
		pw_rp__check_shallow(s);
	else
		pw_rp__check_connectivity(s);
	pw_idx_free(s->self_contained);
	s->self_contained = NULL;
	pw_rp__reject_hidden(s);
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
				pw_rp__fail_all(s, "atomic push failure");
				return;
			}
	pw_rp__pre_receive(s);
	pw_rp__check_aliased(s);
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
		pw_rp__fail_all(s, "unable to migrate objects to permanent storage");
		return;
	}
	if (nproc) {
		pw_rp__proc_receive(s);
		/* what the hook handed back goes the ordinary way */
		for (i = 0; i < s->cmds.nr; i++) {
			struct pw_receive_cmd *c = &s->cmds.v[i];

			if (c->proc_fell_through && !c->error && !c->skip_update && !c->run_proc &&
			    check_ref(s, c))
				return;
		}
	}
	if (s->opts->ref_store)
		store_refs(s);
	else
		update_refs(s);
	pw_rp__write_shallow(s);
}

/* The pushed objects' quarantine, its odb and directory, gone. */
static void drop_quarantine(struct rp *s)
{
	if (s->q_odb) {
		pw_odb_free(s->q_odb);
		s->q_odb = NULL;
	}
	if (s->qdir) {
		pw_quarantine_remove(s->qdir);
		free(s->qdir);
		s->qdir = NULL;
	}
}

static void session_free(struct rp *s)
{
	size_t i;

	drop_quarantine(s);
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
	if (opts->ref_store)
		pw_rp_store_prepare(opts->ref_store, repo, &s.store_err);
	if (s.cert_seed &&
	    !(s.cert_nonce = pw_push_cert_nonce(s.algo, s.cert_seed, pw_rp__nonce_path(&s),
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
	drop_quarantine(&s); /* before anyone hears the result */
	if (s.report)
		send_report(&s);
	pw_rp__post_hooks(&s);
	pw_rp__auto_gc(&s);
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
