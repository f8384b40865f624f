/* Sessions through a remote helper that cannot connect (it offers "fetch"):
 * "list" gives the refs (":object-format" first when asked), "fetch" lines
 * make the helper store the objects in $GIT_DIR itself. Dispatched from
 * session.c and fetch.c by one line each. A "push" helper likewise reads
 * the objects from $GIT_DIR itself: push.c lists with "list for-push",
 * decides as for any server, and hands the batch to pw_client__helper_push. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client-priv.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/odb.h"
#include "packwire/proto.h"
#include "packwire/push.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "transport/helper.h"
#include "packwire/fs.h"
#include "util/fs.h"
#include "util/spawn.h"

/* A symref has its target's value (unborn when the target is absent). */
static void resolve_symrefs(struct pw_adv *adv)
{
	struct pw_remote_ref *r;
	size_t i, j;

	for (i = 0; i < adv->nr; i++) {
		r = &adv->refs[i];
		if (!r->symref_target)
			continue;
		r->unborn = 1;
		r->oid = *adv->algo->zero_oid;
		for (j = 0; j < adv->nr; j++)
			if (!adv->refs[j].symref_target &&
			    !strcmp(adv->refs[j].name, r->symref_target)) {
				r->oid = adv->refs[j].oid;
				r->unborn = 0;
			}
	}
}

/* Send cmd ("list\n" or "list for-push\n") and read the answer into adv;
 * ids are of dflt unless ":object-format" (asked for when the helper has the
 * capability) says otherwise. */
static int helper_list(struct pw_helper *h, const char *cmd, const struct pw_hash_algo *dflt,
                       int keep_unknown, struct pw_adv *adv, struct pw_error *err)
{
	struct pw_helper_list_line l;
	struct pw_remote_ref *r = NULL;
	const struct pw_hash_algo *algo = dflt;
	int rc, first = 1, advertised = 0;

	if ((h->caps & PW_HELPER_OBJECT_FORMAT) &&
	    (rc = pw_helper_option(h, "object-format", "true", err)) < 0)
		return rc;
	if ((rc = pw_helper_write(h, cmd, strlen(cmd), err)))
		return rc;
	pw_adv_free(adv);
	pw_adv_init(adv);
	for (;;) {
		if ((rc = pw_helper_read_line(h, err)))
			return rc;
		if (!h->line.len)
			break;
		if ((rc = pw_helper_parse_list_line(h->line.data, h->line.len, algo, &l, err)))
			return rc;
		if (l.kind == PW_HLIST_KEYWORD) {
			if (l.name_len == 13 && !memcmp(l.name, "object-format", 13)) {
				if (!first)
					return pw_error_set(
					        err, PW_EPROTO,
					        "remote helper '%s': :object-format after "
					        "the first ref",
					        h->name);
				if ((rc = pw_object_format_lookup(l.value, l.value_len, &algo,
				                                  err)))
					return rc;
				advertised = 1;
			}
			continue;
		}
		first = 0;
		if (l.kind == PW_HLIST_UNKNOWN && !keep_unknown)
			continue;
		/* "<oid> refs/tags/x^{}": the tag's peeled value, not a ref */
		if (l.kind == PW_HLIST_REF && l.name_len > 3 &&
		    !memcmp(l.name + l.name_len - 3, "^{}", 3)) {
			r = adv->nr ? &adv->refs[adv->nr - 1] : NULL;
			if (r && strlen(r->name) == l.name_len - 3 &&
			    !memcmp(r->name, l.name, l.name_len - 3)) {
				r->peeled = l.oid;
				r->has_peeled = 1;
			}
			continue;
		}
		if (adv->nr >= PW_HELPER_MAX_REFS)
			return pw_error_set(err, PW_ETOOBIG,
			                    "remote helper '%s' listed more than %d refs", h->name,
			                    PW_HELPER_MAX_REFS);
		if ((rc = pw_adv__add_ref(adv, l.name, l.name_len, &r, err)))
			return rc;
		if (l.kind == PW_HLIST_REF) {
			r->oid = l.oid;
		} else if (l.kind == PW_HLIST_UNKNOWN) {
			r->oid = *algo->zero_oid; /* an import helper's: known after import */
		} else if (!(r->symref_target = strndup(l.value, l.value_len))) {
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	}
	adv->algo = algo;
	resolve_symrefs(adv);
	adv->algo_advertised = advertised;
	adv->empty = adv->nr == 0;
	return 0;
}

/* ---- import and export: stock git fast-import / fast-export ---------------
 * Git pipes an import helper's stream into `git fast-import` and `git
 * fast-export`'s into an export helper; so do we. The import runs when the
 * refs are listed (their values are known only once imported), into a
 * repository of its own (alternates: the local objects) beside the local
 * one, whose pack the fetch then moves in: nothing reaches the repository
 * before the fetch, a clone can still set its object format, and a failed
 * import leaves it as it was. */

/* The helper's private name for a remote ref (its refspecs), malloc'd, or
 * NULL when none maps it. */
static char *private_name(const struct pw_helper *h, const char *name)
{
	size_t i;

	for (i = 0; i < h->nr_refspecs; i++) {
		struct pw_refspec rs;
		char *mapped = NULL;
		int m;

		if (pw_refspec_parse(&rs, h->refspecs[i], NULL))
			continue;
		m = rs.dst ? pw_refspec_match(&rs, name, 0, &mapped) : 0;
		pw_refspec_free(&rs);
		if (m == 1 && mapped && pw_refname_is_storable(mapped))
			return mapped;
		free(mapped);
	}
	return NULL;
}

/* git --git-dir=<git_dir> <args> (NULL-terminated): stdin in_fd, stdout
 * out_fd, fd 3 extra_fd (-1: inherited / none). */
static int spawn_git(pid_t *pid, const char *git_dir, const char *const *args, int in_fd,
                     int out_fd, int extra_fd, struct pw_error *err)
{
	struct pw_buf gd = PW_BUF_INIT;
	struct pw_spawn_fd map[3];
	struct pw_spawn sp;
	const char **argv;
	size_t n = 0, k;
	int rc;

	while (args[n])
		n++;
	if (!(argv = calloc(n + 3, sizeof(*argv))) || pw_buf_addf(&gd, "--git-dir=%s", git_dir)) {
		free(argv);
		pw_buf_free(&gd);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	argv[0] = "git";
	argv[1] = gd.data;
	for (k = 0; k < n; k++)
		argv[k + 2] = args[k];
	memset(&sp, 0, sizeof(sp));
	sp.argv = argv;
	sp.flags = PW_SPAWN_PATH;
	sp.fds = map;
	if (in_fd >= 0)
		map[sp.nr_fds++] = (struct pw_spawn_fd){0, in_fd};
	if (out_fd >= 0)
		map[sp.nr_fds++] = (struct pw_spawn_fd){1, out_fd};
	if (extra_fd >= 0)
		map[sp.nr_fds++] = (struct pw_spawn_fd){3, extra_fd};
	rc = pw_spawn_start(&sp, err);
	free(argv);
	pw_buf_free(&gd);
	if (rc)
		return rc;
	*pid = sp.pid;
	return 0;
}

static char *strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *strdupf(const char *fmt, ...)
{
	char *out = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&out, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : out;
}

static int wait_child(pid_t pid)
{
	int st;

	return pw_spawn_wait(pid, &st, NULL, NULL) ? 255 : st;
}

/* What an import killed by a signal left in base: packwire-import-<pid>-*
 * of a process that is gone. */
static void remove_stale_imports(const char *base)
{
	struct dirent *de;
	DIR *d = opendir(base);

	while (d && (de = readdir(d))) {
		struct pw_buf path = PW_BUF_INIT;
		char *end;
		long pid;

		if (strncmp(de->d_name, "packwire-import-", 16))
			continue;
		pid = strtol(de->d_name + 16, &end, 10);
		if (end == de->d_name + 16 || *end != '-' || pid <= 0 || pid == (long)getpid() ||
		    !kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		if (!pw_buf_addf(&path, "%s/%s", base, de->d_name))
			pw_fs_remove_tree(path.data, 0);
		pw_buf_free(&path);
	}
	if (d)
		closedir(d);
}

static int helper_import(struct pw_session *s, struct pw_helper *h, struct pw_error *err)
{
	/* a small import stays a pack (fast-import would loosen it): moved whole */
	const char *args[] = {"-c",      "fastimport.unpackLimit=0", "fast-import",
	                      "--quiet", "--allow-unsafe-features",  NULL,
	                      NULL};
	const char *base = "/tmp";
	struct pw_buf dir = PW_BUF_INIT, cmd = PW_BUF_INIT;
	struct pw_repo *tmp = NULL;
	char *objs = NULL;
	size_t i, nr = 0;
	pid_t pid;
	int rc = 0, st;

	for (i = 0; i < s->adv.nr; i++)
		if (!s->adv.refs[i].symref_target) {
			nr++;
			if (pw_buf_addf(&cmd, "import %s\n", s->adv.refs[i].name))
				return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	if (!nr)
		goto out;
	if (s->opts.git_dir && pw_fs_is_dir(s->opts.git_dir))
		base = s->opts.git_dir;
	remove_stale_imports(base);
	if (pw_buf_addf(&dir, "%s/packwire-import-%ld-XXXXXX", base, (long)getpid()) ||
	    pw_buf_addch(&cmd, '\n')) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (!mkdtemp(dir.data)) {
		rc = pw_error_set(err, PW_EIO, "cannot create %s: %s", dir.data, strerror(errno));
		goto out;
	}
	if (!(s->import_dir = strdup(dir.data))) {
		pw_fs_remove_tree(dir.data, 0);
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = pw_repo_init(&tmp, dir.data, 1, s->adv.algo, err)))
		goto out;
	pw_repo_free(tmp);
	tmp = NULL;
	/* the stream may build on what the repository has ("from <oid>") */
	if (s->opts.git_dir) {
		struct pw_buf p = PW_BUF_INIT, alt = PW_BUF_INIT;

		if (!pw_buf_addf(&p, "%s/objects", s->opts.git_dir) &&
		    (objs = realpath(p.data, NULL)) &&
		    !pw_buf_addf(&alt, "%s/objects/info/alternates", dir.data)) {
			char *line = NULL;

			if (asprintf(&line, "%s\n", objs) > 0)
				rc = pw_fs_write_atomic(alt.data, line, strlen(line), err);
			free(line);
		}
		pw_buf_free(&p);
		pw_buf_free(&alt);
		if (rc)
			goto out;
	}
	if (h->caps & PW_HELPER_BIDI_IMPORT)
		args[5] = "--cat-blob-fd=3";
	/* fast-import's stdout ("progress") goes to stderr, as for the helper */
	if ((rc = spawn_git(&pid, dir.data, args, h->in_fd, 2,
	                    (h->caps & PW_HELPER_BIDI_IMPORT) ? h->out_fd : -1, err)))
		goto out;
	rc = pw_helper_write(h, cmd.data, cmd.len, err);
	st = wait_child(pid);
	if (rc)
		goto out;
	if (st) {
		rc = pw_error_set(
		        err, PW_EPROTO,
		        "remote helper '%s': importing its stream failed (git fast-import "
		        "exited with status %d)",
		        h->name, st);
		goto out;
	}
	if ((rc = pw_repo_open_gitdir(&tmp, dir.data, err)))
		goto out;
	for (i = 0; i < s->adv.nr; i++) {
		struct pw_remote_ref *r = &s->adv.refs[i];
		char *priv;

		if (r->symref_target)
			continue;
		priv = private_name(h, r->name);
		if (pw_refs_resolve(tmp, priv ? priv : r->name, &r->oid, NULL)) {
			rc = pw_error_set(err, PW_EPROTO, "remote helper '%s' did not import %s",
			                  h->name, r->name);
			free(priv);
			goto out;
		}
		free(priv);
	}
	resolve_symrefs(&s->adv);
out:
	if (tmp)
		pw_repo_free(tmp);
	free(objs);
	pw_buf_free(&dir);
	pw_buf_free(&cmd);
	return rc;
}

/* Move the import's packs into repo (rename, else copy); the last one is
 * res's, for a rollback. Then the helper's private refs, as fast-import
 * writes them in Git. */
static int import_finish(struct pw_session *s, struct pw_repo *repo, struct pw_fetch_result *res,
                         struct pw_error *err)
{
	struct pw_helper *h = s->helper;
	struct pw_buf from = PW_BUF_INIT, to = PW_BUF_INIT;
	static const char *const exts[] = {".pack", ".idx"};
	struct pw_repo *tmp = NULL;
	struct dirent *de;
	DIR *d;
	size_t i, e;
	int rc = 0;

	if (pw_buf_addf(&from, "%s/objects/pack", s->import_dir))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	d = opendir(from.data);
	/* .pack before .idx: a pack without its index is not used */
	for (e = 0; d && e < 2 && !rc; e++) {
		rewinddir(d);
		while (!rc && (de = readdir(d))) {
			size_t nl = strlen(de->d_name), el = strlen(exts[e]);

			if (nl <= el || strcmp(de->d_name + nl - el, exts[e]))
				continue;
			pw_buf_reset(&from);
			pw_buf_reset(&to);
			if (pw_buf_addf(&from, "%s/objects/pack/%s", s->import_dir, de->d_name) ||
			    pw_buf_addf(&to, "%s/pack/%s", pw_repo_objects_dir(repo), de->d_name)) {
				rc = pw_error_set(err, PW_ENOMEM, "out of memory");
				break;
			}
			if (!access(to.data, F_OK))
				continue; /* we had it */
			if (rename(from.data, to.data)) {
				struct pw_buf data = PW_BUF_INIT;

				if ((rc = pw_fs_read_file(from.data, &data, SIZE_MAX, err)) ||
				    (rc = pw_fs_write_atomic(to.data, data.data, data.len, err))) {
					pw_buf_free(&data);
					break;
				}
				pw_buf_free(&data);
			}
			snprintf(e ? res->idx_path : res->pack_path, sizeof(res->pack_path), "%s",
			         to.data);
			res->got_pack = 1;
		}
	}
	if (d)
		closedir(d);
	pw_buf_free(&from);
	pw_buf_free(&to);
	if (rc || !h->nr_refspecs || (h->caps & PW_HELPER_NO_PRIVATE_UPDATE))
		return rc;
	if (pw_repo_open_gitdir(&tmp, s->import_dir, NULL))
		return 0;
	for (i = 0; i < s->adv.nr; i++) {
		char *priv =
		        s->adv.refs[i].symref_target ? NULL : private_name(h, s->adv.refs[i].name);
		struct pw_ref_tx *tx = NULL;

		if (priv && !pw_ref_tx_new(&tx, repo)) {
			pw_ref_tx_update(tx, priv, &s->adv.refs[i].oid, NULL, 0);
			pw_ref_tx_commit(tx);
			pw_ref_tx_free(tx);
		}
		free(priv);
	}
	pw_repo_free(tmp);
	return 0;
}

int pw_client__helper_open(struct pw_session *s, struct pw_helper *h, struct pw_error *err)
{
	int rc;

	if (!h)
		return pw_error_set(err, PW_EPROTO, "remote helper: no connection");
	s->helper = h;
	s->version = 0;
	s->algo = &pw_hash_sha1;
	if (!(h->caps & (PW_HELPER_FETCH | PW_HELPER_IMPORT)))
		return pw_error_set(
		        err, PW_EUNSUPPORTED,
		        "remote helper '%s' offers no connect, stateless-connect, fetch "
		        "or import",
		        h->name);
	if ((rc = helper_list(h, "list\n", &pw_hash_sha1, !(h->caps & PW_HELPER_FETCH), &s->adv,
	                      err)))
		return rc;
	/* an import helper's refs are known once imported */
	if (!(h->caps & PW_HELPER_FETCH) && (rc = helper_import(s, h, err)))
		return rc;
	s->algo = s->adv.algo;
	s->algo_advertised = s->adv.algo_advertised;
	s->listed = 1;
	if (!s->caps_joined && !(s->caps_joined = strdup("")))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	return 0;
}

int pw_client__helper_fetch(struct pw_session *s, struct pw_repo *repo,
                            const struct pw_fetch_request *req, struct pw_fetch_result *res,
                            struct pw_error *err)
{
	struct pw_helper *h = s->helper;
	struct pw_buf cmd = PW_BUF_INIT;
	struct pw_odb *odb = NULL;
	char hex[PW_MAX_HEXSZ + 1], num[32];
	size_t i, j;
	int rc;

	memset(res, 0, sizeof(*res));
	if ((rc = pw_session_check_algo(s, pw_repo_algo(repo), err)))
		return rc;
	if (!req->nr_wants)
		return 0;
	if (s->import_dir) {
		if ((rc = import_finish(s, repo, res, err)))
			return rc;
		goto check;
	}
	if (req->depth) {
		snprintf(num, sizeof(num), "%u", req->depth);
		if ((rc = pw_helper_option(h, "depth", num, err)) < 0)
			return rc;
		if (rc)
			return pw_error_set(err, PW_EUNSUPPORTED,
			                    "remote helper '%s' does not support depth", h->name);
	}
	if (req->deepen_since &&
	    (rc = pw_helper_option(h, "deepen-since", req->deepen_since, err)) != 0)
		return rc < 0 ? rc
		              : pw_error_set(err, PW_EUNSUPPORTED,
		                             "remote helper '%s' does not support 'deepen-since'",
		                             h->name);
	for (i = 0; i < req->nr_deepen_not; i++)
		if ((rc = pw_helper_option(h, "deepen-not", req->deepen_not[i], err)) != 0)
			return rc < 0 ? rc
			              : pw_error_set(
			                        err, PW_EUNSUPPORTED,
			                        "remote helper '%s' does not support 'deepen-not'",
			                        h->name);
	if (req->filter && (rc = pw_helper_option(h, "filter", req->filter, err)) != 0)
		return rc < 0 ? rc
		              : pw_error_set(err, PW_EUNSUPPORTED,
		                             "remote helper '%s' does not support filters",
		                             h->name);
	if ((req->include_tag && (rc = pw_helper_option(h, "followtags", "true", err)) < 0) ||
	    (req->no_haves && (rc = pw_helper_option(h, "cloning", "true", err)) < 0) ||
	    (rc = pw_helper_option(h, "progress", s->opts.progress ? "true" : "false", err)) < 0)
		return rc;
	for (i = 0; i < req->nr_wants; i++) {
		const char *name = NULL;

		for (j = 0; j < s->adv.nr && !name; j++)
			if (!s->adv.refs[j].symref_target &&
			    pw_oid_equal(&s->adv.refs[j].oid, &req->wants[i]))
				name = s->adv.refs[j].name;
		pw_oid_to_hex(&req->wants[i], hex);
		if (pw_buf_addf(&cmd, "fetch %s %s\n", hex, name ? name : hex)) {
			pw_buf_free(&cmd);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
	}
	rc = pw_buf_addch(&cmd, '\n') ? pw_error_set(err, PW_ENOMEM, "out of memory")
	                              : pw_helper_write(h, cmd.data, cmd.len, err);
	pw_buf_free(&cmd);
	if (rc)
		return rc;
	for (;;) {
		if ((rc = pw_helper_read_line(h, err)))
			return rc;
		if (!h->line.len)
			break;
		if (!strncmp(h->line.data, "lock ", 5)) {
			/* the pack is kept until the refs are written in Git; we
			 * write them right after, so the keep file goes now */
			if (strstr(h->line.data + 5, "/objects/pack/") && h->line.len > 10 &&
			    !strcmp(h->line.data + h->line.len - 5, ".keep"))
				unlink(h->line.data + 5);
		} else if (strcmp(h->line.data, "connectivity-ok")) {
			return pw_error_set(
			        err, PW_EPROTO,
			        "remote helper '%s': unexpected answer to fetch: %.200s", h->name,
			        h->line.data);
		}
	}
check:
	/* what the helper stored must be there */
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), err)))
		return rc;
	for (i = 0; i < req->nr_wants; i++)
		if (pw_odb_exists(odb, &req->wants[i]) != 1) {
			rc = pw_error_set(err, PW_EPROTO, "remote helper '%s' did not fetch %s",
			                  h->name, pw_oid_to_hex(&req->wants[i], hex));
			break;
		}
	pw_odb_free(odb);
	return rc;
}

int pw_client__helper_close(struct pw_session *s, struct pw_error *err)
{
	int status = 0;

	(void)err;
	/* an empty line ends the session; then the helper exits */
	pw_helper_write(s->helper, "\n", 1, NULL);
	pw_helper_finish(s->helper, &status, NULL);
	pw_helper_free(s->helper);
	s->helper = NULL;
	if (s->import_dir)
		pw_fs_remove_tree(s->import_dir, 0);
	free(s->import_dir);
	s->import_dir = NULL;
	return 0;
}

/* ---- push through the helper's "push" command ---------------------------- */

void pw_client__helper_end(struct pw_helper *h)
{
	if (!h)
		return;
	pw_helper_write(h, "\n", 1, NULL);
	pw_helper_finish(h, NULL, NULL);
	pw_helper_free(h);
}

int pw_client__helper_push_list(struct pw_helper *h, struct pw_repo *repo,
                                const struct pw_hash_algo *local, struct pw_adv *adv,
                                struct pw_error *err)
{
	int export = !(h->caps & PW_HELPER_PUSH);
	size_t i;
	int rc;

	if (!(h->caps & (PW_HELPER_PUSH | PW_HELPER_EXPORT)))
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "remote helper '%s' can neither connect, push nor export",
		                    h->name);
	if ((rc = helper_list(h, "list for-push\n", local, export, adv, err)))
		return rc;
	/* an export helper's values: what its private refs say we pushed */
	for (i = 0; export && i < adv->nr; i++) {
		struct pw_remote_ref *r = &adv->refs[i];
		char *priv;

		if (r->symref_target || !pw_oid_is_zero(&r->oid) ||
		    !(priv = private_name(h, r->name)))
			continue;
		if (pw_refs_resolve(repo, priv, &r->oid, NULL))
			r->oid = *local->zero_oid;
		free(priv);
	}
	/* the helper is asked for each of these, not told by capabilities;
	 * push.c compares adv->algo with the repository's */
	free(adv->caps);
	if (!(adv->caps = strdup("delete-refs atomic push-options")))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	adv->caps_len = strlen(adv->caps);
	adv->algo_advertised = 0;
	return 0;
}

static struct pw_push_ref *find_ref(struct pw_push_result *res, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < res->nr; i++)
		if (strlen(res->refs[i].dst) == len && !memcmp(res->refs[i].dst, name, len))
			return &res->refs[i];
	return NULL;
}

/* Git's meanings of an answer's <why>. */
static void push_status(struct pw_push_ref *r, int ok, const char *msg, size_t len)
{
	static const struct {
		const char *why;
		enum pw_push_status st;
	} known[] = {
	        {"up to date", PW_PUSH_UPTODATE},
	        {"non-fast forward", PW_PUSH_REJECT_NONFF},
	        {"non-fast-forward", PW_PUSH_REJECT_NONFF},
	        {"already exists", PW_PUSH_REJECT_EXISTS},
	        {"fetch first", PW_PUSH_REJECT_FETCH_FIRST},
	};
	size_t i;

	r->status = ok ? PW_PUSH_OK : PW_PUSH_REMOTE_REJECT;
	free(r->remote_msg);
	r->remote_msg = NULL;
	if (!msg)
		return;
	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strlen(known[i].why) == len && !memcmp(msg, known[i].why, len)) {
			r->status = known[i].st;
			return;
		}
	if (len == 13 && !memcmp(msg, "forced update", 13)) {
		r->forced_update = 1;
		return;
	}
	if (!ok)
		r->remote_msg = strndup(msg, len);
}

/* The helper's refspecs map a pushed ref to its private copy (Git updates it
 * unless the helper says no-private-update). */
static void update_private(struct pw_helper *h, struct pw_repo *repo, const struct pw_push_ref *r)
{
	struct pw_ref_tx *tx = NULL;
	char *priv;

	if ((h->caps & PW_HELPER_NO_PRIVATE_UPDATE) || !(priv = private_name(h, r->dst)))
		return;
	if (!pw_ref_tx_new(&tx, repo)) {
		if (r->is_delete)
			pw_ref_tx_delete(tx, priv, NULL);
		else
			pw_ref_tx_update(tx, priv, &r->new_oid, NULL, 0);
		pw_ref_tx_commit(tx);
		pw_ref_tx_free(tx);
	}
	free(priv);
}

/* An option the push needs: "unsupported" is Git's fatal error. */
static int push_option(struct pw_helper *h, const char *name, const char *value, const char *what,
                       struct pw_error *err)
{
	int rc = pw_helper_option(h, name, value, err);

	if (rc > 0)
		return pw_error_set(err, PW_EUNSUPPORTED, "helper %s does not support %s", h->name,
		                    what);
	return rc;
}

/* "export": the stream of `git fast-export` for the pending refs, minus
 * what the helper's private refs say the remote has (Git's
 * push_refs_with_export). */
static int run_export(struct pw_helper *h, struct pw_repo *repo, struct pw_push_result *res,
                      struct pw_error *err)
{
	const char **args = NULL;
	char **owned = NULL;
	size_t i, n = 0, no = 0, cap = 6 + 4 * res->nr;
	struct pw_buf tmpmarks = PW_BUF_INIT;
	pid_t pid;
	int rc = 0, st;

	if (!(args = calloc(cap, sizeof(*args))) || !(owned = calloc(cap, sizeof(*owned)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
#define OWN(x)                                                                                     \
	do {                                                                                       \
		if (!(owned[no] = (x))) {                                                          \
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");                        \
			goto out;                                                                  \
		}                                                                                  \
		args[n++] = owned[no++];                                                           \
	} while (0)
	args[n++] = "fast-export";
	args[n++] = "--use-done-feature";
	args[n++] = (h->caps & PW_HELPER_SIGNED_TAGS) ? "--signed-tags=verbatim"
	                                              : "--signed-tags=warn-strip";
	if (h->export_marks) {
		if (pw_buf_addf(&tmpmarks, "%s.tmp", h->export_marks)) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			goto out;
		}
		OWN(strdupf("--export-marks=%s", tmpmarks.data));
	}
	if (h->import_marks)
		OWN(strdupf("--import-marks=%s", h->import_marks));
	for (i = 0; i < res->nr; i++) {
		struct pw_push_ref *r = &res->refs[i];
		struct pw_oid oid;
		char *priv, *src = NULL;

		if (r->status != PW_PUSH_PENDING)
			continue;
		if (r->is_delete) {
			rc = pw_error_set(err, PW_EUNSUPPORTED,
			                  "remote helper '%s' cannot delete %s (an export helper "
			                  "cannot delete refs)",
			                  h->name, r->dst);
			goto out;
		}
		if (!r->src || pw_refs_resolve(repo, r->src, &oid, &src) || !src ||
		    strncmp(src, "refs/", 5)) {
			free(src);
			rc = pw_error_set(
			        err, PW_EUNSUPPORTED,
			        "remote helper '%s': an export helper pushes refs, not %s", h->name,
			        r->src ? r->src : "a commit id");
			goto out;
		}
		if ((priv = private_name(h, r->dst))) {
			/* (tags map to themselves: what is pushed is not to be cut) */
			if (strcmp(priv, src) && !pw_refs_resolve(repo, priv, &oid, NULL))
				OWN(strdupf("^%s", priv));
			free(priv);
		}
		if (strcmp(src, r->dst)) {
			args[n++] = "--refspec";
			OWN(strdupf("%s:%s", src, r->dst));
		}
		owned[no] = src;
		args[n++] = owned[no++];
	}
#undef OWN
	if ((rc = pw_helper_write(h, "export\n", 7, err)))
		goto out;
	if ((rc = spawn_git(&pid, pw_repo_git_dir(repo), args, -1, h->out_fd, -1, err)))
		goto out;
	if ((st = wait_child(pid))) {
		rc = pw_error_set(err, PW_EIO, "error while running fast-export (status %d)", st);
		goto out;
	}
out:
	for (i = 0; i < no; i++)
		free(owned[i]);
	free(owned);
	free(args);
	pw_buf_free(&tmpmarks);
	return rc;
}

int pw_client__helper_push(struct pw_helper *h, struct pw_repo *repo, const struct pw_push_opts *o,
                           struct pw_push_result *res, struct pw_error *err)
{
	struct pw_buf cmd = PW_BUF_INIT;
	struct pw_helper_push_line pl;
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0;

	for (i = 0; i < res->nr && !rc; i++) {
		struct pw_push_ref *r = &res->refs[i];
		const char *src = r->is_delete ? "" : r->src;

		if (r->status != PW_PUSH_PENDING)
			continue;
		if (!r->is_delete &&
		    (!src || (strcmp(src, "HEAD") && !pw_refname_is_storable(src))))
			src = pw_oid_to_hex(&r->new_oid, hex);
		if (pw_buf_addf(&cmd, "push %s%s:%s\n", r->force ? "+" : "", src, r->dst))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (rc || !cmd.len)
		goto out;
	/* a lease, for the helper to check again where the ref is (Git does
	 * not mind a helper that does not know "cas") */
	for (i = 0; i < res->nr && !rc; i++) {
		struct pw_push_ref *r = &res->refs[i];
		struct pw_buf cas = PW_BUF_INIT;

		if (r->status != PW_PUSH_PENDING || !r->lease)
			continue;
		if (pw_buf_addf(&cas, "%s:%s", r->dst, pw_oid_to_hex(&r->lease_expect, hex)))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		else if ((rc = pw_helper_option(h, "cas", cas.data, err)) > 0)
			rc = 0;
		pw_buf_free(&cas);
	}
	if (rc)
		goto out;
	/* options go before the batch that they change */
	if ((o->dry_run && (rc = push_option(h, "dry-run", "true", "dry-run", err))) ||
	    (o->atomic && (rc = push_option(h, "atomic", "true", "--atomic", err))) ||
	    (o->force && (rc = pw_helper_option(h, "force", "true", err)) < 0))
		goto out;
	rc = 0;
	for (i = 0; i < o->nr_push_options && !rc; i++)
		rc = push_option(h, "push-option", o->push_options[i], "'push-option'", err);
	if (rc)
		goto out;
	if (!(h->caps & PW_HELPER_PUSH))
		rc = run_export(h, repo, res, err);
	else if (pw_buf_addch(&cmd, '\n'))
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	else
		rc = pw_helper_write(h, cmd.data, cmd.len, err);
	if (rc)
		goto out;
	res->sent = 1;
	for (;;) {
		struct pw_push_ref *r;

		if ((rc = pw_helper_read_line(h, err)))
			goto out;
		if (!h->line.len)
			break;
		if (!strncmp(h->line.data, "option ", 7))
			continue; /* refname/old-oid/new-oid details of the last status */
		if ((rc = pw_helper_parse_push_line(h->line.data, h->line.len, &pl, NULL))) {
			rc = pw_error_set(err, rc,
			                  "remote helper '%s': unexpected push status '%.200s'",
			                  h->name, h->line.data);
			goto out;
		}
		if (!(r = find_ref(res, pl.ref, pl.ref_len)))
			continue; /* Git warns and goes on */
		push_status(r, pl.ok, pl.msg, pl.msg_len);
	}
	for (i = 0; i < res->nr; i++) {
		struct pw_push_ref *r = &res->refs[i];

		if (r->status == PW_PUSH_PENDING)
			r->status = PW_PUSH_NO_REPORT;
		else if (r->status == PW_PUSH_OK && !o->dry_run)
			update_private(h, repo, r);
	}
	/* Git keeps fast-export's marks only once the helper answered */
	if (!(h->caps & PW_HELPER_PUSH) && h->export_marks) {
		struct pw_buf t = PW_BUF_INIT;

		if (!pw_buf_addf(&t, "%s.tmp", h->export_marks))
			rename(t.data, h->export_marks);
		pw_buf_free(&t);
	}
out:
	pw_buf_free(&cmd);
	return rc;
}
