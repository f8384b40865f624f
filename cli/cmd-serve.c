/* packwire serve: an HTTP(S) server for every repository under a directory
 * (packwire/serve.h, docs/server.md). This front parses options, writes the
 * access log and the pid file, and waits for SIGTERM/SIGINT to stop
 * gracefully: /healthz turns 503 at once, the server goes on serving for
 * --shutdown-delay seconds (for a load balancer to notice), then it stops
 * accepting and finishes the requests in flight. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmds.h"
#include "packwire/packwire.h"

static const char usage_text[] =
        "packwire serve [--listen=ADDR] [--port=N] [--base-path=DIR] [--threads=N]\n"
        "                      [--max-connections=N] [--max-jobs=N] [--max-queue=N]\n"
        "                      [--retry-after=SECONDS] [--timeout=SECONDS]\n"
        "                      [--max-request-buffer=N] [--max-body=N] [--cert=PEM --key=PEM]\n"
        "                      [--auth-file=HTPASSWD] [--access-log=FILE] [--pid-file=FILE]\n"
        "                      [--no-metrics] [--no-browse] [--url=URL] [--daemon-url=URL]\n"
        "                      [--shutdown-delay=SECONDS] [--pack-cache=DIR "
        "[--pack-cache-max=SIZE]]\n"
        "                      [--quiet]";

static void log_line(void *ctx, const char *line)
{
	FILE *f = ctx;

	flockfile(f);
	fputs(line, f);
	fputc('\n', f);
	fflush(f);
	funlockfile(f);
}

static void log_error(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "error: %s\n", msg);
}

static int parse_num(const char *opt, const char *v, unsigned long long max,
                     unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(v, &end, 10);
	if (!*v || *v == '-' || errno || *end || *out > max)
		return pw_cli_fatal("invalid value for %s: '%s'", opt, v);
	return 0;
}

/* One line of what the pack cache did, when the server stops. */
static void pack_cache_report(const struct pw_pack_cache *c)
{
	struct pw_pack_cache_stats st;

	pw_pack_cache_get_stats(c, &st);
	fprintf(stderr,
	        "packwire serve: pack cache: %llu hits, %llu misses, %llu shared, %llu bypassed; "
	        "%llu bytes generated, %llu served; %llu evicted, %llu corrupt; "
	        "%llu entries, %llu bytes\n",
	        (unsigned long long)st.hits, (unsigned long long)st.misses,
	        (unsigned long long)st.shared, (unsigned long long)st.bypass,
	        (unsigned long long)st.bytes_generated, (unsigned long long)st.bytes_served,
	        (unsigned long long)st.evictions, (unsigned long long)st.corrupt,
	        (unsigned long long)st.entries, (unsigned long long)st.bytes);
}

int cmd_serve(int argc, char **argv)
{
	struct pw_serve_opts o;
	struct pw_serve *s;
	struct pw_error err;
	const char *v, *access_log = NULL, *pid_file = NULL, *cache_max = NULL;
	unsigned long long n, max_queue = ULLONG_MAX, delay = 0;
	struct pw_pack_cache_opts co;
	struct pw_pack_cache *cache = NULL;
	FILE *logf = stderr;
	sigset_t set;
	int i, sig, quiet = 0;

	memset(&o, 0, sizeof(o));
	pw_pack_cache_opts_init(&co);
	o.base_path = ".";
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

#define NUM(name, field, max)                                                                      \
	if (pw_cli_opt_value(argc, argv, &i, name, NULL, &v)) {                                    \
		if (parse_num(name, v, max, &n))                                                   \
			return PW_EXIT_FATAL;                                                      \
		field = n;                                                                         \
		continue;                                                                          \
	}
		if (pw_cli_opt_value(argc, argv, &i, "--listen", NULL, &o.listen) ||
		    pw_cli_opt_value(argc, argv, &i, "--base-path", NULL, &o.base_path) ||
		    pw_cli_opt_value(argc, argv, &i, "--cert", NULL, &o.cert_file) ||
		    pw_cli_opt_value(argc, argv, &i, "--key", NULL, &o.key_file) ||
		    pw_cli_opt_value(argc, argv, &i, "--auth-file", NULL, &o.auth_file) ||
		    pw_cli_opt_value(argc, argv, &i, "--access-log", NULL, &access_log) ||
		    pw_cli_opt_value(argc, argv, &i, "--url", NULL, &o.url) ||
		    pw_cli_opt_value(argc, argv, &i, "--daemon-url", NULL, &o.daemon_url) ||
		    pw_cli_opt_value(argc, argv, &i, "--pid-file", NULL, &pid_file) ||
		    pw_cli_opt_value(argc, argv, &i, "--pack-cache", NULL, &co.dir) ||
		    pw_cli_opt_value(argc, argv, &i, "--pack-cache-max", NULL, &cache_max))
			continue;
		NUM("--port", o.port, 65535)
		NUM("--threads", o.threads, 1024)
		NUM("--max-connections", o.max_connections, 65536)
		NUM("--max-jobs", o.max_jobs, 65536)
		NUM("--max-queue", max_queue, 65536)
		NUM("--retry-after", o.retry_after, 86400)
		NUM("--shutdown-delay", delay, 3600)
		NUM("--timeout", o.timeout, 86400)
		NUM("--max-request-buffer", o.max_request_buffer, ULLONG_MAX)
		NUM("--max-body", o.max_body, ULLONG_MAX)
#undef NUM
		if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
			quiet = 1;
			continue;
		}
		if (!strcmp(a, "--no-metrics")) {
			o.no_metrics = 1;
			continue;
		}
		if (!strcmp(a, "--no-browse")) {
			o.no_browse = 1;
			continue;
		}
		return pw_cli_unknown_option(a, usage_text);
	}
	if (max_queue != ULLONG_MAX) /* --max-queue=0: no waiting at all */
		o.max_queue = max_queue ? (unsigned)max_queue : PW_SERVE_NO_QUEUE;
	if (o.url && strncmp(o.url, "http://", 7) && strncmp(o.url, "https://", 8))
		return pw_cli_fatal("invalid value for --url: '%s' (an http:// or https:// URL)",
		                    o.url);
	if (o.daemon_url && strncmp(o.daemon_url, "git://", 6))
		return pw_cli_fatal("invalid value for --daemon-url: '%s' (a git:// URL)",
		                    o.daemon_url);
	if (cache_max) {
		int64_t max;

		if (pw_config_parse_int64(cache_max, &max) || max <= 0)
			return pw_cli_fatal("invalid value for --pack-cache-max: '%s' (a size, as "
			                    "100m or 2g)",
			                    cache_max);
		if (!co.dir)
			return pw_cli_fatal("--pack-cache-max needs --pack-cache=DIR");
		co.max_bytes = (uint64_t)max;
	}
	if (co.dir && pw_pack_cache_open(&cache, &co, &err))
		return pw_cli_fatal("%s", err.msg);
	o.pack_cache = cache;
	if (access_log && !(logf = fopen(access_log, "a")))
		return pw_cli_fatal("cannot open access log '%s': %s", access_log, strerror(errno));
	if (!quiet || access_log) {
		o.log = log_line;
		o.log_ctx = logf;
	}
	o.error_log = log_error;

	/* the server's threads inherit the mask: only sigwait below sees these */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (pw_serve_start(&s, &o, &err)) {
		if (logf != stderr)
			fclose(logf);
		pw_pack_cache_free(cache);
		return pw_cli_fatal("%s", err.msg);
	}
	if (pid_file) {
		FILE *f = fopen(pid_file, "w");

		if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f)) {
			pw_serve_stop(s, 0);
			pw_pack_cache_free(cache);
			return pw_cli_fatal("cannot write pid file '%s': %s", pid_file,
			                    strerror(errno));
		}
	}
	fprintf(stderr, "packwire serve: listening on %s://%s:%u/ (base path %s)\n",
	        o.cert_file ? "https" : "http", o.listen ? o.listen : "127.0.0.1", pw_serve_port(s),
	        o.base_path);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (sig != SIGHUP)
			break;
	}
	pw_serve_drain(s);
	if (delay) {
		/* still serving, /healthz 503; a second signal cuts it short */
		struct timespec ts = {(time_t)delay, 0};

		fprintf(stderr,
		        "packwire serve: %s, /healthz says 503; serving %llu more seconds\n",
		        sig == SIGTERM ? "SIGTERM" : "SIGINT", delay);
		while (sigtimedwait(&set, NULL, &ts) == SIGHUP)
			;
	}
	fprintf(stderr, "packwire serve: %s, finishing the requests in flight\n",
	        sig == SIGTERM ? "SIGTERM" : "SIGINT");
	pw_serve_stop(s, 30);
	if (cache) {
		pack_cache_report(cache);
		pw_pack_cache_free(cache);
	}
	if (pid_file)
		unlink(pid_file);
	if (logf != stderr)
		fclose(logf);
	return 0;
}
