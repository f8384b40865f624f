/* uploadpack.packObjectsHook: when the system or global configuration (or
 * the command line; never the repository's own file, which whoever can push
 * may control) names a hook, the pack comes from it instead of from us. As
 * Git does, it runs as `<hook> git pack-objects <options>` in the git dir,
 * gets Git's pack-objects input on stdin (wants, --not, haves), and its
 * stdout is the pack (band 1), its stderr the progress (band 2). */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "packwire/config.h"
#include "packwire/fs.h"
#include "packwire/repo.h"
#include "packwire/transport.h"
#include "server/session.h"
#include "server/upload-parts.h"
#include "util/spawn.h"

struct hook_ctx {
	struct stat repo_cfg;
	int have_repo_cfg;
	const char *value;
};

static int hook_cb(const struct pw_config_entry *e, void *data)
{
	struct hook_ctx *c = data;
	struct stat st;

	if (c->have_repo_cfg && e->origin && !stat(e->origin, &st) &&
	    st.st_dev == c->repo_cfg.st_dev && st.st_ino == c->repo_cfg.st_ino)
		return 0; /* the repository's own file is not trusted with it */
	c->value = e->value;
	return 0;
}

const char *pw_srv_pack_objects_hook(struct pw_upload_session *s)
{
	struct hook_ctx c;
	char *path = pw_path_join(pw_repo_git_dir(s->repo), "config");

	memset(&c, 0, sizeof(c));
	c.have_repo_cfg = path && !stat(path, &c.repo_cfg);
	free(path);
	pw_config_get_all(pw_repo_config(s->repo), "uploadpack.packobjectshook", hook_cb, &c);
	return c.value && *c.value ? c.value : NULL;
}

/* Git's own spelling of a filter for pack-objects' --filter=. */
static int filter_spec(struct pw_buf *b, const struct pw_filter *f)
{
	static const char reserved[] = "~`!@#$^&*()[]{}\\;'\",<>?";
	struct pw_buf sub = PW_BUF_INIT;
	size_t i, j;
	int rc = 0;

	switch (f->kind) {
	case PW_FILTER_BLOB_NONE:
		return pw_buf_adds(b, "blob:none");
	case PW_FILTER_BLOB_LIMIT:
		return pw_buf_addf(b, "blob:limit=%llu", (unsigned long long)f->value);
	case PW_FILTER_TREE_DEPTH:
		return pw_buf_addf(b, "tree:%llu", (unsigned long long)f->value);
	case PW_FILTER_SPARSE_OID:
		return pw_buf_addf(b, "sparse:oid=%s", f->sparse_oid);
	case PW_FILTER_COMBINE:
		rc = pw_buf_adds(b, "combine:");
		for (i = 0; !rc && i < f->nr_sub; i++) {
			pw_buf_reset(&sub);
			if (i)
				rc = pw_buf_addch(b, '+');
			if (!rc)
				rc = filter_spec(&sub, &f->sub[i]);
			for (j = 0; !rc && j < sub.len; j++) {
				unsigned char c = (unsigned char)sub.data[j];

				if (c <= ' ' || c == '%' || c == '+' || strchr(reserved, c))
					rc = pw_buf_addf(b, "%%%02x", c);
				else
					rc = pw_buf_addch(b, (char)c);
			}
		}
		pw_buf_free(&sub);
		return rc;
	default:
		return 0;
	}
}

static int add_arg(struct pw_upload_session *s, char **argv, size_t *n, const char *a)
{
	if (!(argv[*n] = strdup(a)))
		return pw_srv_oom(s);
	(*n)++;
	return 0;
}

static int shallow_lines(struct pw_buf *in, const struct pw_oid_array *a)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0;

	for (i = 0; !rc && i < a->nr; i++)
		rc = pw_buf_addf(in, "--shallow %s\n", pw_oid_to_hex(&a->v[i], hex));
	return rc;
}

/* Git's pack-objects input: the boundary ("--shallow <oid>": ours, the
 * client's remaining one and the new one), wants, "--not", haves and the
 * commits the client stops being shallow at. */
static int hook_input(struct pw_upload_session *s, struct pw_buf *in, int shallow)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i, j;
	int rc = 0;

	if (shallow) {
		struct pw_oid_array client = {0};

		/* the client's boundary minus what it unshallows */
		for (i = 0; !rc && i < s->args.shallows.nr; i++) {
			for (j = 0; j < s->unshallow.nr; j++)
				if (pw_oid_equal(&s->unshallow.v[j], &s->args.shallows.v[i]))
					break;
			if (j == s->unshallow.nr)
				rc = pw_oid_array_push(&client, &s->args.shallows.v[i]);
		}
		if (!rc)
			rc = shallow_lines(in, &s->srv_shallow);
		if (!rc)
			rc = shallow_lines(in, &client);
		if (!rc)
			rc = shallow_lines(in, &s->new_shallow);
		free(client.v);
	}
	for (i = 0; !rc && i < s->unshallow.nr; i++) {
		struct pw_oid p;
		uint32_t idx, k;

		/* the parents of an unshallowed commit are wanted */
		if (pw_graph_lookup(&s->graph, &s->unshallow.v[i], &idx) ||
		    pw_graph_parse(&s->graph, idx))
			continue;
		for (k = 0; !rc && k < s->graph.v[idx].nparents; k++) {
			p = s->graph.v[pw_graph_parent(&s->graph, idx, k)].oid;
			rc = pw_buf_addf(in, "%s\n", pw_oid_to_hex(&p, hex));
		}
	}
	for (i = 0; !rc && i < s->args.wants.nr; i++)
		rc = pw_buf_addf(in, "%s\n", pw_oid_to_hex(&s->args.wants.v[i], hex));
	if (!rc)
		rc = pw_buf_adds(in, "--not\n");
	for (i = 0; !rc && i < s->have_objs.nr; i++)
		rc = pw_buf_addf(in, "%s\n", pw_oid_to_hex(&s->have_objs.v[i], hex));
	for (i = 0; !rc && i < s->unshallow.nr; i++)
		rc = pw_buf_addf(in, "%s\n", pw_oid_to_hex(&s->unshallow.v[i], hex));
	if (!rc)
		rc = pw_buf_adds(in, "\n");
	return rc ? pw_srv_oom(s) : 0;
}

static int send_band(struct pw_upload_session *s, int band, const void *data, size_t len)
{
	int rc = pw_sideband_write(&s->out, band, data, len, pw_sideband_max(s->sideband));

	if (rc)
		return pw_error_set(&s->err, rc, "side-band: %s", pw_strerror(rc));
	return pw_srv_flush_out(s);
}

/* Pump: stdin from `in`, stdout to the client (band 1, or raw without
 * side-band), stderr to band 2 (dropped without side-band). Closes the
 * three descriptors. */
static int pump(struct pw_upload_session *s, int fd_in, int fd_out, int fd_err,
                const struct pw_buf *in)
{
	size_t off = 0;
	char buf[65000];
	int rc = 0;

	while (fd_out >= 0 || fd_err >= 0) {
		struct pollfd p[3];
		nfds_t n = 0;
		int i_in = -1, i_out = -1, i_err = -1;

		if (fd_in >= 0) {
			p[n] = (struct pollfd){fd_in, POLLOUT, 0};
			i_in = (int)n++;
		}
		if (fd_out >= 0) {
			p[n] = (struct pollfd){fd_out, POLLIN, 0};
			i_out = (int)n++;
		}
		if (fd_err >= 0) {
			p[n] = (struct pollfd){fd_err, POLLIN, 0};
			i_err = (int)n++;
		}
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = pw_error_set(&s->err, PW_EIO, "pack-objects hook: poll: %s",
			                  strerror(errno));
			break;
		}
		if (i_in >= 0 && p[i_in].revents) {
			ssize_t w = write(fd_in, in->data + off, in->len - off);

			if (w > 0)
				off += (size_t)w;
			if (w < 0 || off == in->len) {
				close(fd_in);
				fd_in = -1;
			}
		}
		if (i_out >= 0 && p[i_out].revents) {
			ssize_t r = read(fd_out, buf, sizeof(buf));

			if (r <= 0) {
				close(fd_out);
				fd_out = -1;
			} else if (!rc) {
				if (!s->pack_started && s->out.len && (rc = pw_srv_flush_out(s)))
					continue;
				s->pack_started = 1;
				if (s->sideband)
					rc = send_band(s, PW_BAND_DATA, buf, (size_t)r);
				else if (pw_write_full(s->out_fd, buf, (size_t)r, &s->err))
					rc = s->err.code;
			}
		}
		if (i_err >= 0 && p[i_err].revents) {
			ssize_t r = read(fd_err, buf, sizeof(buf));

			if (r <= 0) {
				close(fd_err);
				fd_err = -1;
			} else if (!rc && s->sideband) {
				rc = send_band(s, PW_BAND_PROGRESS, buf, (size_t)r);
			}
		}
	}
	if (fd_in >= 0)
		close(fd_in);
	if (fd_out >= 0)
		close(fd_out);
	if (fd_err >= 0)
		close(fd_err);
	return rc;
}

/* pack-objects and the options Git's upload-pack gives it for this
 * request, appended to argv (room for PACK_ARGS_MAX more). */
#define PACK_ARGS_MAX 10
static int pack_args(struct pw_upload_session *s, char **argv, size_t *n, int shallow)
{
	struct pw_buf f = PW_BUF_INIT;
	int rc;

	if ((rc = add_arg(s, argv, n, "pack-objects")) || (rc = add_arg(s, argv, n, "--revs")) ||
	    (s->args.thin_pack && (rc = add_arg(s, argv, n, "--thin"))) ||
	    (rc = add_arg(s, argv, n, "--stdout")) ||
	    (shallow && (rc = add_arg(s, argv, n, "--shallow"))) ||
	    (!s->args.no_progress && (rc = add_arg(s, argv, n, "--progress"))) ||
	    (s->args.ofs_delta && (rc = add_arg(s, argv, n, "--delta-base-offset"))) ||
	    (s->args.include_tag && (rc = add_arg(s, argv, n, "--include-tag"))))
		return rc;
	if (!s->args.has_filter)
		return 0;
	rc = pw_buf_adds(&f, "--filter=");
	if (!rc)
		rc = filter_spec(&f, &s->args.filter);
	rc = rc ? pw_srv_oom(s) : add_arg(s, argv, n, f.data);
	pw_buf_free(&f);
	return rc;
}

static int is_shallow(const struct pw_upload_session *s)
{
	return s->args.shallows.nr || s->new_shallow.nr || s->srv_shallow.nr;
}

/* One GIT_TRACE-style line: prefix, then argv, each quoted as Git's trace
 * quotes it (pw_sq_quote when it holds anything but [A-Za-z0-9,./:=@_+-]). */
static void trace_argv(struct pw_upload_session *s, const char *prefix, char **argv, size_t n)
{
	static const char plain[] = ",./:=@_+-";
	struct pw_buf b = PW_BUF_INIT;
	size_t i;
	const char *p;
	int rc = pw_buf_adds(&b, prefix);

	for (i = 0; !rc && i < n; i++) {
		int quote = !*argv[i];

		for (p = argv[i]; *p; p++)
			if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			      (*p >= '0' && *p <= '9') || strchr(plain, *p)))
				quote = 1;
		rc = pw_buf_addch(&b, ' ');
		if (!rc)
			rc = quote ? pw_sq_quote(&b, argv[i]) : pw_buf_adds(&b, argv[i]);
	}
	if (!rc)
		s->opts.trace_command(s->opts.trace_command_ctx, b.data);
	pw_buf_free(&b);
}

void pw_srv_trace_pack(struct pw_upload_session *s)
{
	char *argv[PACK_ARGS_MAX + 1] = {0};
	size_t n = 0, i;

	if (!s->opts.trace_command)
		return;
	if (!add_arg(s, argv, &n, "git") && !pack_args(s, argv, &n, is_shallow(s)))
		trace_argv(s, "in-process:", argv, n);
	for (i = 0; i < n; i++)
		free(argv[i]);
}

int pw_srv_send_pack_hook(struct pw_upload_session *s, const char *hook)
{
	static const char *const env[] = {"GIT_DIR=.", NULL};
	char *argv[PACK_ARGS_MAX + 8] = {0};
	int shallow = is_shallow(s);
	struct pw_buf in = PW_BUF_INIT, cmd = PW_BUF_INIT;
	struct pw_spawn sp;
	struct pw_error e;
	int rc, status = 0;
	size_t n = 0, i;

	/* sh -c '<hook> "$@"' <hook> git pack-objects ... */
	if ((rc = pw_buf_adds(&cmd, hook)) || (rc = pw_buf_adds(&cmd, " \"$@\""))) {
		rc = pw_srv_oom(s);
		goto out;
	}
	if ((rc = add_arg(s, argv, &n, "/bin/sh")) || (rc = add_arg(s, argv, &n, "-c")) ||
	    (rc = add_arg(s, argv, &n, cmd.data)) || (rc = add_arg(s, argv, &n, hook)) ||
	    (rc = add_arg(s, argv, &n, "git")) ||
	    (shallow &&
	     ((rc = add_arg(s, argv, &n, "--shallow-file")) || (rc = add_arg(s, argv, &n, "")))) ||
	    (rc = pack_args(s, argv, &n, shallow)))
		goto out;
	if (s->opts.trace_command)
		trace_argv(s, "run_command:", argv + 3, n - 3);
	if ((rc = hook_input(s, &in, shallow)))
		goto out;
	/* in the git dir, with GIT_DIR=. and SIGPIPE at its default, as Git
	 * runs it */
	memset(&sp, 0, sizeof(sp));
	sp.argv = (const char *const *)argv;
	sp.flags = PW_SPAWN_PIPE_IN | PW_SPAWN_PIPE_OUT | PW_SPAWN_PIPE_ERR | PW_SPAWN_NONBLOCK_IN |
	           PW_SPAWN_SIGPIPE_DFL;
	sp.env = env;
	sp.dir = pw_repo_git_dir(s->repo);
	if ((rc = pw_spawn_start(&sp, &e))) {
		if (rc == PW_ENOMEM)
			rc = pw_srv_oom(s);
		else if (!sp.errnum || sp.errnum == EAGAIN)
			rc = pw_error_set(&s->err, rc, "pack-objects hook: %s", e.msg);
		else /* the shell could not be run there: as a hook that failed */
			rc = pw_srv_fail(s, PW_EIO,
			                 "git upload-pack: git-pack-objects died with error.");
		goto out;
	}
	rc = pump(s, sp.in_fd, sp.out_fd, sp.err_fd, &in); /* closes the three */
	pw_spawn_wait(sp.pid, &status, NULL, NULL);
	if (!rc && status != 0)
		rc = pw_srv_fail(s, PW_EIO, "git upload-pack: git-pack-objects died with error.");
	if (!rc && !s->v2 && s->sideband && (rc = pw_pkt_flush(&s->out)))
		rc = pw_srv_oom(s);
	if (!rc)
		rc = pw_srv_flush_out(s);
out:
	for (i = 0; i < n; i++)
		free(argv[i]);
	pw_buf_free(&in);
	pw_buf_free(&cmd);
	return rc;
}
