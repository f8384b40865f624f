/* Push certificates' pusher and GPG signature (push-sign.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "client-util.h"
#include "push-sign.h"

extern char **environ;

#define SIG_MAX (1u << 20) /* a signature is a few KiB: more is not one */

static const char *cfg(const struct pw_repo *repo, const char *key)
{
	int found;
	const char *v = pw_cli_config_get(repo, key, &found);

	return found && v && *v ? v : NULL;
}

/* "Name <email>" (Git's committer ident without its date). */
static int ident(const struct pw_repo *repo, char *out, size_t n)
{
	const char *name = getenv("GIT_COMMITTER_NAME"), *mail = getenv("GIT_COMMITTER_EMAIL");
	int k;

	if (!name || !*name)
		name = cfg(repo, "user.name");
	if (!mail || !*mail)
		mail = cfg(repo, "user.email");
	if (!mail || !*mail)
		mail = getenv("EMAIL");
	if (!mail || !*mail)
		return -1;
	k = snprintf(out, n, "%s <%s>", name ? name : "", mail);
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* The key gpg signs with: user.signingKey, else the committer ident. */
static int signing_key(const struct pw_repo *repo, char *out, size_t n)
{
	const char *k = cfg(repo, "user.signingkey");

	if (k) {
		int m = snprintf(out, n, "%s", k);

		return m < 0 || (size_t)m >= n ? -1 : 0;
	}
	return ident(repo, out, n);
}

int pw_cli_push_pusher(const struct pw_repo *repo, char *out, size_t n)
{
	const char *d = getenv("GIT_COMMITTER_DATE");
	char key[512], zone[8];
	long long secs = -1;
	int k;

	if (signing_key(repo, key, sizeof(key)))
		return -1;
	if (d && *d == '@')
		d++;
	if (d && *d) {
		char *end;
		long long v = strtoll(d, &end, 10);

		if (end != d && *end == ' ' && (end[1] == '+' || end[1] == '-') &&
		    strlen(end + 1) == 5 && strspn(end + 2, "0123456789") == 4) {
			secs = v;
			memcpy(zone, end + 1, 6);
		}
	}
	if (secs < 0) {
		time_t now = time(NULL);
		struct tm tm;
		int off;

		localtime_r(&now, &tm);
		off = (int)(tm.tm_gmtoff / 60) % (24 * 60);
		snprintf(zone, sizeof(zone), "%c%02d%02d", off < 0 ? '-' : '+',
		         (off < 0 ? -off : off) / 60, (off < 0 ? -off : off) % 60);
		secs = (long long)now;
	}
	k = snprintf(out, n, "%s %lld %s", key, secs, zone);
	return k < 0 || (size_t)k >= n ? -1 : 0;
}

/* Feed in to the child's stdin while reading its stdout into out and its
 * stderr into status (poll: gpg may write before it has read all). */
static int exchange(int in_fd, int out_fd, int err_fd, const char *in, size_t len,
                    struct pw_buf *out, struct pw_buf *status)
{
	char buf[4096];
	size_t off = 0;

	if (!len) {
		close(in_fd);
		in_fd = -1;
	}
	while (out_fd >= 0 || err_fd >= 0) {
		struct pollfd p[3];
		int n = 0, i;

		if (in_fd >= 0)
			p[n++] = (struct pollfd){in_fd, POLLOUT, 0};
		if (out_fd >= 0)
			p[n++] = (struct pollfd){out_fd, POLLIN, 0};
		if (err_fd >= 0)
			p[n++] = (struct pollfd){err_fd, POLLIN, 0};
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		for (i = 0; i < n; i++) {
			ssize_t r;

			if (!p[i].revents)
				continue;
			if (p[i].fd == in_fd) {
				r = write(in_fd, in + off, len - off);
				if (r < 0 && errno == EINTR)
					continue;
				if (r > 0)
					off += (size_t)r;
				if (r < 0 || off == len) {
					close(in_fd);
					in_fd = -1;
				}
				continue;
			}
			r = read(p[i].fd, buf, sizeof(buf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				close(p[i].fd);
				if (p[i].fd == out_fd)
					out_fd = -1;
				else
					err_fd = -1;
				continue;
			}
			if (p[i].fd == out_fd ? (out->len + (size_t)r > SIG_MAX ||
			                         pw_buf_add(out, buf, (size_t)r))
			                      : (status->len + (size_t)r > SIG_MAX ||
			                         pw_buf_add(status, buf, (size_t)r)))
				return -1;
		}
	}
	if (in_fd >= 0)
		close(in_fd);
	return 0;
}

int pw_cli_push_sign(void *ctx, const char *cert, size_t len, struct pw_buf *sig,
                     struct pw_error *err)
{
	const struct pw_repo *repo = ctx;
	const char *fmt = cfg(repo, "gpg.format"), *prog;
	char key[512];
	char *argv[6];
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1}, st = 0, rc;
	posix_spawn_file_actions_t fa;
	struct pw_buf got = PW_BUF_INIT, status = PW_BUF_INIT;
	pid_t pid;

	if (fmt && strcmp(fmt, "openpgp"))
		return pw_error_set(err, PW_EUNSUPPORTED,
		                    "gpg.format %s: packwire signs push certificates with "
		                    "OpenPGP only",
		                    fmt);
	if (!(prog = cfg(repo, "gpg.openpgp.program")) && !(prog = cfg(repo, "gpg.program")))
		prog = "gpg";
	if (signing_key(repo, key, sizeof(key)))
		return pw_error_set(err, PW_EINVAL,
		                    "no signing key: set user.signingKey or user.email");
	argv[0] = (char *)prog;
	argv[1] = "--status-fd=2";
	argv[2] = "-bsau";
	argv[3] = key;
	argv[4] = NULL;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(er, O_CLOEXEC)) {
		rc = pw_error_set(err, PW_EIO, "pipe: %s", strerror(errno));
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, er[1], 2);
	rc = posix_spawnp(&pid, prog, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(in[0]);
	close(out[1]);
	close(er[1]);
	in[0] = out[1] = er[1] = -1;
	if (rc) {
		rc = pw_error_set(err, PW_EIO, "cannot run %s: %s", prog, strerror(rc));
		goto out;
	}
	{
		/* gpg may exit before it reads all: no SIGPIPE for us */
		void (*old)(int) = signal(SIGPIPE, SIG_IGN);

		rc = exchange(in[1], out[0], er[0], cert, len, &got, &status);
		signal(SIGPIPE, old);
	}
	in[1] = out[0] = er[0] = -1;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	/* as Git: signed when gpg says SIG_CREATED and exits 0 */
	if (rc || !WIFEXITED(st) || WEXITSTATUS(st) || !got.len ||
	    (!strstr(status.data, "\n[GNUPG:] SIG_CREATED ") &&
	     strncmp(status.data, "[GNUPG:] SIG_CREATED ", 21))) {
		rc = pw_error_set(err, PW_EIO, "failed to sign the push certificate");
		goto out;
	}
	/* CRs out, as Git does on every platform */
	{
		size_t i, j = 0;

		for (i = 0; i < got.len; i++)
			if (got.data[i] != '\r')
				got.data[j++] = got.data[i];
		got.len = j;
	}
	if (pw_buf_add(sig, got.data, got.len))
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (er[i] >= 0)
			close(er[i]);
	}
	pw_buf_free(&got);
	pw_buf_free(&status);
	return rc;
}
