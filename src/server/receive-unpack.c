/* receive-pack: the pushed pack, read into the quarantine (index-pack, or
 * loose objects under receive.unpackLimit), checked (receive.fsckObjects)
 * and, for a client of the other algorithm, translated. */
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
int pw_rp__compat_shallow(struct rp *s)
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
/* A client of the other algorithm: its pack translated into the
 * quarantine (pack_dir), then its shallow commits, then fsck. */
static int receive_compat(struct rp *s, const char *pack_dir, char *hex, char **idx,
                          struct pw_error *e)
{
	int rc;

	if ((rc = receive_compat_pack(s, pack_dir, hex, e)))
		return rc;
	if ((rc = pw_rp__compat_shallow(s))) {
		set_unpack_error(s, "out of memory");
		return rc;
	}
	if ((rc = pw_odb_open(&s->q_odb, s->qdir, s->algo, e))) {
		set_unpack_error(s, e->msg);
		return rc;
	}
	if (s->fsck && hex[0]) {
		size_t n = strlen(pack_dir) + PW_MAX_HEXSZ + 16;

		if (!(*idx = malloc(n))) {
			set_unpack_error(s, "out of memory");
			return PW_ENOMEM;
		}
		snprintf(*idx, n, "%s/pack-%s.idx", pack_dir, hex);
		if ((rc = pw_fsck_pack(s->q_odb, *idx, &s->fsck_opts, e))) {
			rp_error(s, "%s", e->msg);
			set_unpack_error(s, "fsck error in the pushed objects");
		}
	}
	return rc;
}

/* The indexed pack's .idx path into *idx; an empty pack (a new ref to an
 * existing object) is removed, else its object count is kept and, when it
 * needs nothing from outside, its index (s->self_contained). */
static int keep_pack(struct rp *s, const char *pack_dir, const char *hex, int self_contained,
                     char **idx, struct pw_error *e)
{
	size_t n = strlen(pack_dir) + PW_MAX_HEXSZ + 16;
	struct pw_idx *ix = NULL;

	if (!(*idx = malloc(n))) {
		set_unpack_error(s, "out of memory");
		return PW_ENOMEM;
	}
	snprintf(*idx, n, "%s/pack-%s.idx", pack_dir, hex);
	if (!pw_idx_open(&ix, *idx, s->algo, e) && ix->nr == 0) {
		char *pack = malloc(n);

		if (pack)
			snprintf(pack, n, "%s/pack-%s.pack", pack_dir, hex);
		pw_idx_free(ix);
		ix = NULL;
		if (!pack || unlink(*idx) || unlink(pack)) {
			free(pack);
			set_unpack_error(s, "cannot remove an empty pack");
			return PW_EIO;
		}
		free(pack);
	}
	s->pack_nr = ix ? ix->nr : 0;
	if (ix && self_contained)
		s->self_contained = ix;
	else
		pw_idx_free(ix);
	return 0;
}

int pw_rp__receive_pack_data(struct rp *s)
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
	if (!(pack_dir = pw_path_join(s->qdir, "pack"))) {
		set_unpack_error(s, "out of memory");
		return PW_ENOMEM;
	}
	if (s->compat) {
		rc = receive_compat(s, pack_dir, hex, &idx, &e);
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
	if ((rc = keep_pack(s, pack_dir, hex, self_contained, &idx, &e)))
		goto out;
	if ((rc = pw_odb_open(&s->q_odb, s->qdir, s->algo, &e))) {
		set_unpack_error(s, e.msg);
		goto out;
	}
	if (s->fsck && s->fsck_config_error) {
		pw_rp__msg(s, "fatal: ", "%s", s->fsck_config_error);
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
