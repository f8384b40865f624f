/* packwire daemon [options] [directory...]: git daemon's front. Listens on
 * TCP (9418), forks one child per connection (a bad request can take down
 * only its own process, and no state is shared between repositories), and
 * the child serves it through pw_daemon_serve_conn. --inetd serves
 * stdin/stdout once. SIGTERM/SIGINT: stop listening, reap, remove the pid
 * file, exit 0. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/daemon.h"
#include "packwire/packwire.h"

static const char usage_text[] =
        "packwire daemon [--verbose] [--syslog] [--export-all]\n"
        "           [--timeout=<n>] [--init-timeout=<n>] [--max-connections=<n>]\n"
        "           [--strict-paths] [--base-path=<path>] [--base-path-relaxed]\n"
        "           [--user-path | --user-path=<path>]\n"
        "           [--interpolated-path=<path>]\n"
        "           [--reuseaddr] [--pid-file=<file>]\n"
        "           [--(enable|disable|allow-override|forbid-override)=<service>]\n"
        "           [--access-hook=<path>]\n"
        "           [--inetd |\n"
        "            [--listen=<host_or_ipaddr>] [--port=<n>]\n"
        "            [--user=<user> [--group=<group>]]]\n"
        "           [--log-destination=(stderr|syslog|none)]\n"
        "           [<directory>...]";

enum log_dest { LOG_DEST_UNSET, LOG_DEST_STDERR, LOG_DEST_SYSLOG, LOG_DEST_NONE };

struct daemon_cli {
	struct pw_daemon_opts o;
	enum log_dest dest;
	int verbose;
};

static void log_line(void *data, enum pw_daemon_log_level lv, const char *msg)
{
	struct daemon_cli *d = data;
	char line[1200];
	int n;

	if (lv == PW_DAEMON_LOG_INFO && !d->verbose)
		return;
	if (d->dest == LOG_DEST_SYSLOG) {
		syslog(lv == PW_DAEMON_LOG_INFO ? LOG_INFO : LOG_ERR, "%s", msg);
		return;
	}
	if (d->dest != LOG_DEST_STDERR)
		return;
	/* one write per line: children log to the same stderr */
	n = snprintf(line, sizeof(line), "[%ld] %s\n", (long)getpid(), msg);
	if (n > (int)sizeof(line) - 1) {
		n = (int)sizeof(line) - 1;
		line[n - 1] = '\n';
	}
	if (write(2, line, (size_t)n) < 0)
		return;
}

static void logmsg(struct daemon_cli *d, enum pw_daemon_log_level lv, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void logmsg(struct daemon_cli *d, enum pw_daemon_log_level lv, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_line(d, lv, msg);
}

/* ---- signals: a self-pipe wakes the accept loop ------------------------- */

static int sig_pipe[2] = {-1, -1};
static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (sig == SIGTERM || sig == SIGINT)
		stop_requested = 1;
	if (sig_pipe[1] >= 0 && write(sig_pipe[1], &c, 1) < 0) {
		/* the pipe is full: the loop wakes anyway */
	}
	errno = saved;
}

/* ---- children ----------------------------------------------------------- */

struct child {
	pid_t pid;
};

struct children {
	struct child *v;
	size_t nr, alloc;
};

static int child_add(struct children *c, pid_t pid)
{
	if (c->nr == c->alloc) {
		size_t n = c->alloc ? c->alloc * 2 : 32;
		struct child *v = realloc(c->v, n * sizeof(*v));

		if (!v)
			return -1;
		c->v = v;
		c->alloc = n;
	}
	c->v[c->nr++].pid = pid;
	return 0;
}

static void reap(struct daemon_cli *d, struct children *c)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		size_t i;

		for (i = 0; i < c->nr; i++)
			if (c->v[i].pid == pid) {
				c->v[i] = c->v[--c->nr];
				break;
			}
		logmsg(d, PW_DAEMON_LOG_INFO, "[%ld] Disconnected%s", (long)pid,
		       WIFEXITED(st) && !WEXITSTATUS(st) ? "" : " (with error)");
	}
}

/* ---- addresses ---------------------------------------------------------- */

static void addr_str(const struct sockaddr *sa, socklen_t len, char *ip, size_t ipsz, char *port,
                     size_t portsz)
{
	if (getnameinfo(sa, len, ip, (socklen_t)ipsz, port, (socklen_t)portsz,
	                NI_NUMERICHOST | NI_NUMERICSERV)) {
		snprintf(ip, ipsz, "?");
		snprintf(port, portsz, "?");
	}
}

struct listeners {
	int fd[16];
	int nr;
};

static int listen_on(struct daemon_cli *d, struct listeners *l, const char *host, const char *port,
                     int reuse)
{
	struct addrinfo hints, *ai, *p;
	int rc, got = 0;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if ((rc = getaddrinfo(host, port, &hints, &ai))) {
		logmsg(d, PW_DAEMON_LOG_ERROR, "unable to resolve listen address %s: %s",
		       host ? host : "*", gai_strerror(rc));
		return 0;
	}
	for (p = ai; p && l->nr < (int)(sizeof(l->fd) / sizeof(l->fd[0])); p = p->ai_next) {
		int fd = socket(p->ai_family, p->ai_socktype | SOCK_CLOEXEC, p->ai_protocol),
		    on = 1;

		if (fd < 0)
			continue;
		if (p->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof(on));
		if (reuse)
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (bind(fd, p->ai_addr, p->ai_addrlen) || listen(fd, 128)) {
			char ip[NI_MAXHOST], sp[NI_MAXSERV];

			addr_str(p->ai_addr, p->ai_addrlen, ip, sizeof(ip), sp, sizeof(sp));
			logmsg(d, PW_DAEMON_LOG_ERROR, "Could not bind to %s:%s: %s", ip, sp,
			       strerror(errno));
			close(fd);
			continue;
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		l->fd[l->nr++] = fd;
		got++;
	}
	freeaddrinfo(ai);
	return got;
}

/* ---- one connection in its own process ---------------------------------- */

static int serve_child(struct daemon_cli *d, int fd, const struct sockaddr *sa, socklen_t salen)
{
	char ip[NI_MAXHOST], port[NI_MAXSERV];
	struct pw_error err = {0};

	addr_str(sa, salen, ip, sizeof(ip), port, sizeof(port));
	logmsg(d, PW_DAEMON_LOG_INFO, "Connection from %s:%s", ip, port);
	return pw_daemon_serve_conn(&d->o, fd, fd, ip, port, &err) ? 1 : 0;
}

static int write_pid_file(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "%ld\n", (long)getpid());
	return fclose(f);
}

static int serve_loop(struct daemon_cli *d, struct listeners *l, int max_conn, const char *pid_file)
{
	struct pollfd pfd[17];
	struct children ch = {0};
	struct sigaction sa;
	int i, n;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK))
		return pw_cli_fatal("pipe: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGCHLD, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	logmsg(d, PW_DAEMON_LOG_INFO, "Ready to rumble");
	while (!stop_requested) {
		n = 0;
		pfd[n].fd = sig_pipe[0];
		pfd[n++].events = POLLIN;
		for (i = 0; i < l->nr; i++) {
			pfd[n].fd = l->fd[i];
			pfd[n++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)n, -1) < 0 && errno != EINTR) {
			logmsg(d, PW_DAEMON_LOG_ERROR, "Poll failed, resuming: %s",
			       strerror(errno));
			sleep(1);
			continue;
		}
		if (pfd[0].revents & POLLIN) {
			char drain[64];

			while (read(sig_pipe[0], drain, sizeof(drain)) > 0)
				;
		}
		reap(d, &ch);
		for (i = 1; i < n && !stop_requested; i++) {
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);
			int fd;
			pid_t pid;

			if (!(pfd[i].revents & POLLIN))
				continue;
			fd = accept4(pfd[i].fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
			if (fd < 0)
				continue;
			if (max_conn && (int)ch.nr >= max_conn) {
				reap(d, &ch);
				if ((int)ch.nr >= max_conn) {
					logmsg(d, PW_DAEMON_LOG_ERROR,
					       "Too many children, dropping connection");
					close(fd);
					continue;
				}
			}
			pid = fork();
			if (pid < 0) {
				logmsg(d, PW_DAEMON_LOG_ERROR, "Couldn't fork %s", strerror(errno));
				close(fd);
				continue;
			}
			if (pid == 0) {
				int j, rc;

				for (j = 0; j < l->nr; j++)
					close(l->fd[j]);
				close(sig_pipe[0]);
				close(sig_pipe[1]);
				sig_pipe[0] = sig_pipe[1] = -1;
				signal(SIGCHLD, SIG_DFL);
				signal(SIGINT, SIG_DFL);
				/* a daemon restart must not cut transfers short (as Git) */
				signal(SIGTERM, SIG_IGN);
				rc = serve_child(d, fd, (struct sockaddr *)&ss, sl);
				close(fd);
				/* exit, not _exit: leak checkers run at exit */
				exit(rc);
			}
			close(fd);
			if (child_add(&ch, pid))
				logmsg(d, PW_DAEMON_LOG_ERROR, "out of memory tracking children");
		}
	}
	for (i = 0; i < l->nr; i++)
		close(l->fd[i]);
	/* children finish their transfers; reap the ones already done */
	reap(d, &ch);
	free(ch.v);
	close(sig_pipe[0]);
	close(sig_pipe[1]);
	if (pid_file)
		unlink(pid_file);
	return 0;
}

static int parse_uint(const char *s, int *out)
{
	char *end;
	long v;

	if (!*s)
		return -1;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > 100000000)
		return -1;
	*out = (int)v;
	return 0;
}

static int service_opt(struct daemon_cli *d, const char *arg, const char *name, int *arr, int val)
{
	size_t n = strlen(name);
	enum pw_daemon_service s;

	if (strncmp(arg, name, n) || arg[n] != '=')
		return 0;
	if (pw_daemon_service_parse(arg + n + 1, &s)) {
		pw_cli_fatal("No such service %s", arg + n + 1);
		return -1;
	}
	(void)d;
	arr[s] = val;
	return 1;
}

static int drop_privileges(const char *user, const char *group)
{
	struct passwd *pw = getpwnam(user);
	gid_t gid;

	if (!pw)
		return pw_cli_fatal("user not found - %s", user);
	gid = pw->pw_gid;
	if (group) {
		struct group *gr = getgrnam(group);

		if (!gr)
			return pw_cli_fatal("group not found - %s", group);
		gid = gr->gr_gid;
	}
	if (initgroups(pw->pw_name, gid) || setgid(gid) || setuid(pw->pw_uid))
		return pw_cli_fatal("cannot drop privileges: %s", strerror(errno));
	return 0;
}

static int detach(void)
{
	pid_t pid = fork();
	int fd;

	if (pid < 0)
		return pw_cli_fatal("fork failed: %s", strerror(errno));
	if (pid)
		_exit(0);
	if (setsid() < 0)
		return pw_cli_fatal("setsid failed: %s", strerror(errno));
	fd = open("/dev/null", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
	return 0;
}

int cmd_daemon(int argc, char **argv)
{
	struct daemon_cli d;
	const char *listen_addr[16], *port = "9418", *pid_file = NULL, *user = NULL, *group = NULL;
	int nr_listen = 0, inetd = 0, reuse = 0, max_conn = 32, do_detach = 0, i, r;
	struct listeners l = {{0}, 0};

	memset(&d, 0, sizeof(d));
	pw_daemon_opts_init(&d.o);
	d.o.log = log_line;
	d.o.log_data = &d;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v;

		if (!strncmp(a, "--listen=", 9)) {
			if (nr_listen < 16)
				listen_addr[nr_listen++] = a + 9;
		} else if (!strncmp(a, "--port=", 7)) {
			int p;

			if (parse_uint(a + 7, &p) || p > 65535)
				return pw_cli_usage(usage_text);
			port = a + 7;
		} else if (!strcmp(a, "--inetd"))
			inetd = 1;
		else if (!strcmp(a, "--verbose"))
			d.verbose = 1;
		else if (!strcmp(a, "--syslog"))
			d.dest = LOG_DEST_SYSLOG;
		else if (!strncmp(a, "--log-destination=", 18)) {
			v = a + 18;
			if (!strcmp(v, "syslog"))
				d.dest = LOG_DEST_SYSLOG;
			else if (!strcmp(v, "stderr"))
				d.dest = LOG_DEST_STDERR;
			else if (!strcmp(v, "none"))
				d.dest = LOG_DEST_NONE;
			else
				return pw_cli_fatal("unknown log destination '%s'", v);
		} else if (!strcmp(a, "--export-all"))
			d.o.export_all = 1;
		else if (!strncmp(a, "--access-hook=", 14))
			d.o.access_hook = a + 14;
		else if (!strncmp(a, "--timeout=", 10)) {
			if (parse_uint(a + 10, &d.o.timeout))
				return pw_cli_usage(usage_text);
		} else if (!strncmp(a, "--init-timeout=", 15)) {
			if (parse_uint(a + 15, &d.o.init_timeout))
				return pw_cli_usage(usage_text);
		} else if (!strncmp(a, "--max-connections=", 18)) {
			if (parse_uint(a + 18, &max_conn))
				return pw_cli_usage(usage_text);
		} else if (!strcmp(a, "--strict-paths"))
			d.o.strict_paths = 1;
		else if (!strncmp(a, "--base-path=", 12))
			d.o.base_path = a + 12;
		else if (!strcmp(a, "--base-path-relaxed"))
			d.o.base_path_relaxed = 1;
		else if (!strncmp(a, "--interpolated-path=", 20))
			d.o.interpolated_path = a + 20;
		else if (!strcmp(a, "--reuseaddr"))
			reuse = 1;
		else if (!strcmp(a, "--user-path"))
			d.o.user_path = "";
		else if (!strncmp(a, "--user-path=", 12))
			d.o.user_path = a + 12;
		else if (!strncmp(a, "--pid-file=", 11))
			pid_file = a + 11;
		else if (!strcmp(a, "--detach"))
			do_detach = 1;
		else if (!strncmp(a, "--user=", 7))
			user = a + 7;
		else if (!strncmp(a, "--group=", 8))
			group = a + 8;
		else if (!strcmp(a, "--informative-errors"))
			d.o.informative_errors = 1;
		else if (!strcmp(a, "--no-informative-errors"))
			d.o.informative_errors = 0;
		else if ((r = service_opt(&d, a, "--enable", d.o.enabled, 1)) ||
		         (r = service_opt(&d, a, "--disable", d.o.enabled, 0)) ||
		         (r = service_opt(&d, a, "--allow-override", d.o.overridable, 1)) ||
		         (r = service_opt(&d, a, "--forbid-override", d.o.overridable, 0))) {
			if (r < 0)
				return PW_EXIT_FATAL;
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else if (a[0] == '-')
			return pw_cli_unknown_option(a, usage_text);
		else
			break;
	}
	if (i < argc)
		d.o.whitelist = (const char *const *)&argv[i];
	if (d.dest == LOG_DEST_UNSET)
		d.dest = inetd || do_detach ? LOG_DEST_SYSLOG : LOG_DEST_STDERR;
	if (d.dest == LOG_DEST_SYSLOG)
		openlog("packwire-daemon", LOG_PID, LOG_DAEMON);
	if (inetd && (nr_listen || strcmp(port, "9418") || do_detach || user))
		return pw_cli_fatal(
		        "--inetd is incompatible with --listen, --port, --detach and --user");
	if (group && !user)
		return pw_cli_fatal("--group supplied without --user");
	if (d.o.strict_paths && (!d.o.whitelist || !d.o.whitelist[0]))
		return pw_cli_fatal("option --strict-paths requires '<directory>' arguments");
	/* GIT_USER_AGENT replaces the agent string, as for upload-pack */
	d.o.agent = getenv("GIT_USER_AGENT");
	if (d.o.agent && (!*d.o.agent || strlen(d.o.agent) > 60 || strpbrk(d.o.agent, " \n")))
		d.o.agent = NULL;

	if (inetd) {
		const char *ip = getenv("REMOTE_ADDR"), *rp = getenv("REMOTE_PORT");
		struct pw_error err = {0};

		signal(SIGPIPE, SIG_IGN);
		if (ip)
			logmsg(&d, PW_DAEMON_LOG_INFO, "Connection from %s:%s", ip, rp ? rp : "?");
		return pw_daemon_serve_conn(&d.o, 0, 1, ip, rp, &err) ? 1 : 0;
	}
	if (!nr_listen)
		listen_addr[nr_listen++] = NULL;
	for (r = 0; r < nr_listen; r++)
		listen_on(&d, &l, listen_addr[r], port, reuse);
	if (!l.nr)
		return pw_cli_fatal("unable to allocate any listen sockets on port %s", port);
	if (do_detach && detach())
		return PW_EXIT_FATAL;
	if (pid_file && write_pid_file(pid_file))
		return pw_cli_fatal("failed to write pid file '%s': %s", pid_file, strerror(errno));
	if (user && drop_privileges(user, group))
		return PW_EXIT_FATAL;
	return serve_loop(&d, &l, max_conn, pid_file);
}
