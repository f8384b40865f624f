/* receive-pack: the hooks (pre-receive, update, proc-receive,
 * post-receive, post-update, push-to-checkout's environment), the
 * push certificate's GIT_PUSH_CERT* variables, and auto gc. */
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
#include "util/fs.h"

int pw_rp__env_add(struct env *e, const char *fmt, ...)
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
const char *pw_rp__nonce_path(const struct rp *s)
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
	nc.path = pw_rp__nonce_path(s);
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
	rc = pw_rp__env_add(e, "GIT_PUSH_CERT=%s", pw_oid_to_hex(&s->cert_oid, hex)) ||
	     pw_rp__env_add(e, "GIT_PUSH_CERT_SIGNER=%s",
	                    s->cert_sig.signer ? s->cert_sig.signer : "") ||
	     pw_rp__env_add(e, "GIT_PUSH_CERT_KEY=%s", s->cert_sig.key ? s->cert_sig.key : "") ||
	     pw_rp__env_add(e, "GIT_PUSH_CERT_STATUS=%c", s->cert_sig.result);
	if (!rc && s->cert_nonce)
		rc = pw_rp__env_add(e, "GIT_PUSH_CERT_NONCE=%s", s->cert_nonce) ||
		     pw_rp__env_add(e, "GIT_PUSH_CERT_NONCE_STATUS=%s", s->nonce_status);
	if (!rc && s->cert_nonce && s->nonce_status == pw_nonce_slop)
		rc = pw_rp__env_add(e, "GIT_PUSH_CERT_NONCE_SLOP=%ld", s->nonce_slop);
	/* the certificate names the client's ids, which differ from the
	 * storage ids the hooks get on stdin when it pushed into the view */
	if (!rc)
		rc = pw_rp__env_add(e, "PACKWIRE_PUSH_CERT_OBJECT_FORMAT=%s", s->wire->name);
	return rc;
}

static int hook_env(struct rp *s, struct env *e, int quarantined)
{
	size_t i;
	int rc = pw_rp__env_add(e, "GIT_DIR=.") || cert_env(s, e);

	if (!rc && quarantined && s->qdir)
		rc = pw_rp__env_add(e, "GIT_QUARANTINE_PATH=%s", s->qdir) ||
		     pw_rp__env_add(e, "GIT_OBJECT_DIRECTORY=%s", s->qdir) ||
		     pw_rp__env_add(e, "GIT_ALTERNATE_OBJECT_DIRECTORIES=%s",
		                    pw_repo_objects_dir(s->repo));
	else if (!rc)
		rc = pw_rp__env_add(e, "GIT_QUARANTINE_PATH") ||
		     pw_rp__env_add(e, "GIT_OBJECT_DIRECTORY") ||
		     pw_rp__env_add(e, "GIT_ALTERNATE_OBJECT_DIRECTORIES");
	if (!rc && s->use_push_options) {
		rc = pw_rp__env_add(e, "GIT_PUSH_OPTION_COUNT=%zu", s->npopts);
		for (i = 0; i < s->npopts && !rc; i++)
			rc = pw_rp__env_add(e, "GIT_PUSH_OPTION_%zu=%s", i, s->popts[i]);
	} else if (!rc) {
		rc = pw_rp__env_add(e, "GIT_PUSH_OPTION_COUNT");
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
	char *path;

	if (s->opts->ref_store && s->opts->ref_store->objects_only)
		return 0; /* a cluster's peer: the hooks ran where the push came in */
	if (!(path = pw_hook_find(s->hooks_dir, name)))
		return 0;
	return run_program(s, path, args, input, input_len, quarantined);
}

/* Run path with args in cwd and the environment e (both freed here; a
 * non-zero env_failed means building e ran out of memory), output relayed
 * to the user: 0, 1 when it failed, negative when it could not run. */
int pw_rp__run_with_env(struct rp *s, char *path, const char *const *args, struct env *e,
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
	h.output = pw_rp__hook_output;
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

	return pw_rp__run_with_env(s, path, args, &e, hook_env(s, &e, quarantined),
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

void pw_rp__pre_receive(struct rp *s)
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

const char *pw_rp__update_hook(struct rp *s, struct pw_receive_cmd *c)
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

void pw_rp__post_hooks(struct rp *s)
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
void pw_rp__auto_gc(struct rp *s)
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
void pw_rp__proc_receive(struct rp *s)
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
		r.output = pw_rp__hook_output;
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

void pw_rp__fail_all(struct rp *s, const char *why)
{
	size_t i;

	for (i = 0; i < s->cmds.nr; i++)
		if (!s->cmds.v[i].error)
			s->cmds.v[i].error = why;
}
