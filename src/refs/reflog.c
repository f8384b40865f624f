/* Reflog writing and reading (see reflog.h). */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/fs.h"
#include "packwire/repo.h"
#include "refs/reflog.h"

static int wanted(struct pw_repo *repo, const char *name)
{
	const char *v = NULL;
	int b;

	if (pw_config_get_string(pw_repo_config(repo), "core.logAllRefUpdates", &v, NULL))
		b = !pw_repo_is_bare(repo);
	else if (v && !strcasecmp(v, "always"))
		return 1;
	else if (pw_config_parse_bool(v, &b))
		b = 0;
	if (!b)
		return 0;
	return !strncmp(name, "refs/heads/", 11) || !strncmp(name, "refs/remotes/", 13) ||
	       !strncmp(name, "refs/notes/", 11) || !strcmp(name, "HEAD");
}

/* "Name <email> <seconds> <+hhmm>" of the committer. */
static int ident(struct pw_repo *repo, const struct pw_reflog_ident *who, struct pw_buf *out)
{
	static const struct pw_reflog_ident none;
	const struct pw_config *cfg = pw_repo_config(repo);
	const char *name, *email, *date;
	struct passwd *pw = getpwuid(getuid());
	char host[256] = "localhost", mail[512], zone[32];
	long long secs = -1;

	if (!who)
		who = &none;
	name = who->name;
	email = who->email;
	date = who->date;

	if (!name && pw_config_get_string(cfg, "user.name", &name, NULL))
		name = NULL;
	if (!email && pw_config_get_string(cfg, "user.email", &email, NULL))
		email = who->default_email;
	if (!name || !*name)
		name = pw && pw->pw_gecos && *pw->pw_gecos ? pw->pw_gecos
		       : pw                                ? pw->pw_name
		                                           : "unknown";
	if (!email) {
		gethostname(host, sizeof(host) - 1);
		snprintf(mail, sizeof(mail), "%s@%s", pw ? pw->pw_name : "unknown", host);
		email = mail;
	}
	if (date) {
		char sign;
		unsigned tz;

		if (*date == '@')
			date++;
		if (sscanf(date, "%lld %c%4u", &secs, &sign, &tz) == 3 &&
		    (sign == '+' || sign == '-'))
			snprintf(zone, sizeof(zone), "%c%04u", sign, tz);
		else
			secs = -1;
	}
	if (secs < 0) {
		time_t now = time(NULL);
		struct tm tm;
		long off;

		localtime_r(&now, &tm);
		off = tm.tm_gmtoff / 60;
		snprintf(zone, sizeof(zone), "%c%02ld%02ld", off < 0 ? '-' : '+', labs(off) / 60,
		         labs(off) % 60);
		secs = (long long)now;
	}
	return pw_buf_addf(out, "%s <%s> %lld %s", name, email, secs, zone);
}

int pw_reflog_append(struct pw_repo *repo, const char *name, const struct pw_oid *old_oid,
                     const struct pw_oid *new_oid, const char *msg,
                     const struct pw_reflog_ident *who, struct pw_error *err)
{
	struct pw_buf path = PW_BUF_INIT, line = PW_BUF_INIT;
	char o[PW_MAX_HEXSZ + 1], n[PW_MAX_HEXSZ + 1], *slash;
	int fd, rc = 0, create = wanted(repo, name);

	if (pw_buf_addf(&path, "%s/logs/%s", pw_repo_git_dir(repo), name) ||
	    pw_buf_addf(&line, "%s %s ", pw_oid_to_hex(old_oid, o), pw_oid_to_hex(new_oid, n)) ||
	    ident(repo, who, &line) || pw_buf_addf(&line, "\t%s\n", msg)) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	if (create && (slash = strrchr(path.data, '/'))) {
		*slash = '\0';
		rc = pw_fs_mkdir_p(path.data, err);
		*slash = '/';
		if (rc)
			goto out;
	}
	fd = open(path.data, O_WRONLY | O_APPEND | (create ? O_CREAT : 0), 0666);
	if (fd < 0) {
		if (errno != ENOENT || create)
			rc = pw_error_set(err, PW_EIO, "cannot open reflog %s: %s", path.data,
			                  strerror(errno));
		goto out;
	}
	if (write(fd, line.data, line.len) != (ssize_t)line.len)
		rc = pw_error_set(err, PW_EIO, "cannot write reflog %s: %s", path.data,
		                  strerror(errno));
	if (close(fd) && !rc)
		rc = pw_error_set(err, PW_EIO, "cannot write reflog %s", path.data);
out:
	pw_buf_free(&path);
	pw_buf_free(&line);
	return rc;
}

void pw_reflog_delete(struct pw_repo *repo, const char *name)
{
	struct pw_buf path = PW_BUF_INIT;
	char *slash;

	if (pw_buf_addf(&path, "%s/logs/%s", pw_repo_git_dir(repo), name))
		return;
	if (!unlink(path.data))
		/* drop the directories the log leaves empty, up to logs/refs */
		while ((slash = strrchr(path.data, '/')) && slash > path.data + 5) {
			*slash = '\0';
			if (strlen(path.data) <= strlen(pw_repo_git_dir(repo)) + 10 ||
			    rmdir(path.data))
				break;
		}
	pw_buf_free(&path);
}

int pw_reflog_parse_entry(const struct pw_hash_algo *algo, const char *p, size_t len,
                          struct pw_reflog_entry *e)
{
	size_t hex = algo->hexsz, i;
	const char *gt, *end = p + len;
	int64_t t = 0;

	if (len < 2 * hex + 2 || p[hex] != ' ' || p[2 * hex + 1] != ' ' ||
	    pw_oid_from_hex(&e->old_oid, p, hex, algo) ||
	    pw_oid_from_hex(&e->new_oid, p + hex + 1, hex, algo))
		return -1;
	gt = memchr(p + 2 * hex + 2, '>', (size_t)(end - (p + 2 * hex + 2)));
	if (!gt || end - gt < 3 || gt[1] != ' ')
		return -1;
	for (i = 0, p = gt + 2; p < end && *p >= '0' && *p <= '9'; p++, i++) {
		if (t > (INT64_MAX - 9) / 10)
			return -1;
		t = t * 10 + (*p - '0');
	}
	if (!i || (p < end && *p != ' '))
		return -1;
	e->timestamp = t;
	return 0;
}

int pw_reflog_foreach_reverse(struct pw_repo *repo, const char *name,
                              int (*fn)(const struct pw_reflog_entry *e, void *data), void *data,
                              struct pw_error *err)
{
	struct pw_buf path = PW_BUF_INIT, log = PW_BUF_INIT;
	struct pw_reflog_entry e;
	size_t end;
	int rc;

	if (pw_buf_addf(&path, "%s/logs/%s", pw_repo_git_dir(repo), name))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	rc = pw_fs_read_file(path.data, &log, PW_REFLOG_MAX_BYTES, err);
	if (rc == PW_ENOTFOUND)
		rc = 0;
	else if (!rc)
		for (end = log.len; end > 0 && !rc;) {
			size_t start = end;

			/* the line before end (end may sit on a newline) */
			if (log.data[end - 1] == '\n')
				start--;
			while (start > 0 && log.data[start - 1] != '\n')
				start--;
			if (!pw_reflog_parse_entry(
			            pw_repo_algo(repo), log.data + start,
			            (log.data[end - 1] == '\n' ? end - 1 : end) - start, &e))
				rc = fn(&e, data);
			end = start;
		}
	pw_buf_free(&path);
	pw_buf_free(&log);
	return rc;
}
