/* The numbers of `packwire serve` in the Prometheus text format
 * (metrics.h). Counters are relaxed atomics: a scrape may see one counter
 * a request ahead of another, never a torn value. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

#include "packwire/version.h"
#include "server/metrics.h"

static const char *const svc_names[PW_SVC_NR] = {
        "upload-pack", "receive-pack", "info/refs", "dumb", "browse", "metrics", "healthz", "other",
};

/* The statuses counted one by one; the last two slots are "other" and
 * "none" (the client left before any answer). */
static const int statuses[PW_METRICS_NR_STATUS - 2] = {
        200, 204, 206, 301, 302, 304, 400, 401, 403, 404, 405,
        408, 411, 413, 414, 415, 416, 431, 500, 501, 503, 505,
};
#define STATUS_OTHER (PW_METRICS_NR_STATUS - 2)
#define STATUS_NONE  (PW_METRICS_NR_STATUS - 1)

static const double bucket_le[PW_METRICS_NR_BUCKETS] = {
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
};

static const char *const refusal_names[PW_REFUSED_NR] = {"queue_full", "queue_timeout", "stopping"};

static void add(uint64_t *c, uint64_t v)
{
	__atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}

static uint64_t get(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

void pw_metrics_request(struct pw_metrics *m, int svc, int proto, int status, double seconds,
                        uint64_t sent, uint64_t received)
{
	size_t s = STATUS_OTHER, b;

	if (svc < 0 || svc >= PW_SVC_NR)
		svc = PW_SVC_OTHER;
	if (proto < 0 || proto >= PW_METRICS_NR_PROTO)
		proto = 0;
	if (!status)
		s = STATUS_NONE;
	for (b = 0; b < STATUS_OTHER && status; b++)
		if (statuses[b] == status) {
			s = b;
			break;
		}
	add(&m->requests[svc][proto][s], 1);
	if (seconds < 0)
		seconds = 0;
	for (b = 0; b < PW_METRICS_NR_BUCKETS && seconds > bucket_le[b]; b++)
		;
	add(&m->buckets[svc][b], 1);
	add(&m->duration_us[svc], (uint64_t)(seconds * 1e6));
	add(&m->sent[svc], sent);
	add(&m->received[svc], received);
}

void pw_metrics_refused(struct pw_metrics *m, enum pw_metrics_refusal why)
{
	if ((unsigned)why < PW_REFUSED_NR)
		add(&m->refused[why], 1);
}

void pw_metrics_abandoned(struct pw_metrics *m)
{
	add(&m->abandoned, 1);
}

void pw_metrics_push(struct pw_metrics *m, int accepted)
{
	add(accepted ? &m->pushes_accepted : &m->pushes_rejected, 1);
}

/* ---- the process -------------------------------------------------------- */

static double cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       ru.ru_stime.tv_usec / 1e6;
}

/* Resident bytes from /proc/self/statm (its second field, in pages). */
static uint64_t resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long long size, rss = 0;
	long page = sysconf(_SC_PAGESIZE);

	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &size, &rss) != 2)
		rss = 0;
	fclose(f);
	return (uint64_t)rss * (uint64_t)(page > 0 ? page : 4096);
}

/* Open descriptors: the entries of /proc/self/fd (bounded by the fd
 * limit), less the one the listing holds. */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;
}

/* ---- the text format ---------------------------------------------------- */

static int family(struct pw_buf *o, const char *name, const char *type, const char *help)
{
	return pw_buf_addf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int latency(struct pw_buf *o, const struct pw_metrics *m)
{
	int rc = family(o, "packwire_http_request_duration_seconds", "histogram",
	                "Time from a request's head to the end of its answer (waiting for a job "
	                "included).");
	size_t s, b;

	for (s = 0; !rc && s < PW_SVC_NR; s++) {
		uint64_t cum = 0, n[PW_METRICS_NR_BUCKETS + 1];

		for (b = 0; b <= PW_METRICS_NR_BUCKETS; b++) {
			n[b] = get(&m->buckets[s][b]);
			cum += n[b];
		}
		if (!cum)
			continue;
		cum = 0;
		for (b = 0; !rc && b < PW_METRICS_NR_BUCKETS; b++) {
			cum += n[b];
			rc = pw_buf_addf(
			        o,
			        "packwire_http_request_duration_seconds_bucket{service=\"%s\","
			        "le=\"%g\"} %llu\n",
			        svc_names[s], bucket_le[b], (unsigned long long)cum);
		}
		cum += n[PW_METRICS_NR_BUCKETS];
		rc = rc ? rc
		        : pw_buf_addf(
		                  o,
		                  "packwire_http_request_duration_seconds_bucket{service=\"%s\","
		                  "le=\"+Inf\"} %llu\n"
		                  "packwire_http_request_duration_seconds_sum{service=\"%s\"} "
		                  "%.6f\n"
		                  "packwire_http_request_duration_seconds_count{service=\"%s\"} "
		                  "%llu\n",
		                  svc_names[s], (unsigned long long)cum, svc_names[s],
		                  (double)get(&m->duration_us[s]) / 1e6, svc_names[s],
		                  (unsigned long long)cum);
	}
	return rc;
}

static int per_service(struct pw_buf *o, const char *name, const char *help, const uint64_t *v)
{
	int rc = family(o, name, "counter", help);
	size_t s;

	for (s = 0; !rc && s < PW_SVC_NR; s++)
		rc = pw_buf_addf(o, "%s{service=\"%s\"} %llu\n", name, svc_names[s],
		                 (unsigned long long)get(&v[s]));
	return rc;
}

static int scalar(struct pw_buf *o, const char *name, const char *type, const char *help,
                  unsigned long long v)
{
	int rc = family(o, name, type, help);

	return rc ? rc : pw_buf_addf(o, "%s %llu\n", name, v);
}

/* packwire_http_requests_total, by service, protocol and status. */
static int render_requests(struct pw_buf *o, const struct pw_metrics *m)
{
	size_t s, p, k;
	int rc;

	rc = family(o, "packwire_http_requests_total", "counter",
	            "HTTP requests answered, by service, Git protocol version (the Git-Protocol "
	            "header; 0 without) and status (none: the client left first).");
	for (s = 0; !rc && s < PW_SVC_NR; s++)
		for (p = 0; !rc && p < PW_METRICS_NR_PROTO; p++)
			for (k = 0; !rc && k < PW_METRICS_NR_STATUS; k++) {
				uint64_t n = get(&m->requests[s][p][k]);
				char st[8];

				if (!n)
					continue;
				if (k == STATUS_OTHER)
					strcpy(st, "other");
				else if (k == STATUS_NONE)
					strcpy(st, "none");
				else
					snprintf(st, sizeof(st), "%d", statuses[k]);
				rc = pw_buf_addf(o,
				                 "packwire_http_requests_total{service=\"%s\","
				                 "protocol=\"%zu\",status=\"%s\"} %llu\n",
				                 svc_names[s], p, st, (unsigned long long)n);
			}
	return rc;
}

/* The jobs, the queue, the refusals and the pushes. */
static int render_jobs(struct pw_buf *o, const struct pw_metrics *m,
                       const struct pw_metrics_now *now)
{
	size_t k;
	int rc = 0;

	rc = rc ? rc
	        : scalar(o, "packwire_jobs_running", "gauge",
	                 "Requests being handled now (at most packwire_jobs_max).",
	                 now->jobs_running);
	rc = rc ? rc
	        : scalar(o, "packwire_jobs_queued", "gauge",
	                 "Requests waiting for a job now (at most packwire_queue_max).",
	                 now->jobs_queued);
	rc = rc ? rc
	        : scalar(o, "packwire_jobs_max", "gauge", "Requests handled at once (--max-jobs).",
	                 now->max_jobs);
	rc = rc ? rc
	        : scalar(o, "packwire_queue_max", "gauge",
	                 "Requests that may wait for a job (--max-queue).", now->max_queue);
	rc = rc ? rc
	        : family(o, "packwire_requests_refused_total", "counter",
	                 "Requests answered 503 without a job, by reason.");
	for (k = 0; !rc && k < PW_REFUSED_NR; k++)
		rc = pw_buf_addf(o, "packwire_requests_refused_total{reason=\"%s\"} %llu\n",
		                 refusal_names[k], (unsigned long long)get(&m->refused[k]));
	rc = rc ? rc
	        : scalar(o, "packwire_requests_abandoned_total", "counter",
	                 "Requests whose client left while they waited for a job.",
	                 get(&m->abandoned));
	rc = rc ? rc
	        : scalar(o, "packwire_shutting_down", "gauge",
	                 "1 once SIGTERM came (GET /healthz answers 503), else 0.",
	                 (unsigned long long)(now->draining != 0));

	rc = rc ? rc
	        : family(o, "packwire_pushes_total", "counter",
	                 "Pushes over HTTP: accepted (every ref update applied) or rejected (one "
	                 "refused, or the push failed).");
	rc = rc ? rc
	        : pw_buf_addf(o,
	                      "packwire_pushes_total{result=\"accepted\"} %llu\n"
	                      "packwire_pushes_total{result=\"rejected\"} %llu\n",
	                      (unsigned long long)get(&m->pushes_accepted),
	                      (unsigned long long)get(&m->pushes_rejected));

	return rc;
}

/* The pack cache's counters and gauges. */
static int render_cache(struct pw_buf *o, const struct pw_metrics_cache *c)
{
	int rc = 0;

	rc = rc ? rc
	        : family(o, "packwire_pack_cache_lookups_total", "counter",
	                 "Pack cache lookups by result: hit (served from a file), miss "
	                 "(generated), shared (joined a generation in progress), bypass (not "
	                 "cacheable).");
	rc = rc ? rc
	        : pw_buf_addf(o,
	                      "packwire_pack_cache_lookups_total{result=\"hit\"} %llu\n"
	                      "packwire_pack_cache_lookups_total{result=\"miss\"} %llu\n"
	                      "packwire_pack_cache_lookups_total{result=\"shared\"} %llu\n"
	                      "packwire_pack_cache_lookups_total{result=\"bypass\"} %llu\n",
	                      (unsigned long long)c->hits, (unsigned long long)c->misses,
	                      (unsigned long long)c->shared, (unsigned long long)c->bypass);
	rc = rc ? rc
	        : scalar(o, "packwire_pack_cache_generated_bytes_total", "counter",
	                 "Pack bytes generated for the cache.", c->bytes_generated);
	rc = rc ? rc
	        : scalar(o, "packwire_pack_cache_served_bytes_total", "counter",
	                 "Pack bytes served from the cache.", c->bytes_served);
	rc = rc ? rc
	        : scalar(o, "packwire_pack_cache_evictions_total", "counter",
	                 "Cache entries removed to keep the disk use bounded.", c->evictions);
	rc = rc ? rc
	        : scalar(o, "packwire_pack_cache_corrupt_entries_total", "counter",
	                 "Cache entries found damaged (and regenerated).", c->corrupt);
	rc = rc ? rc
	        : scalar(o, "packwire_pack_cache_entries", "gauge", "Cache entries on disk.",
	                 c->entries);
	rc = rc ? rc
	        : scalar(o, "packwire_pack_cache_size_bytes", "gauge",
	                 "Bytes the cache's entries take on disk.", c->disk_bytes);

	return rc;
}

/* The build and the process: CPU, memory, file descriptors. */
static int render_process(struct pw_buf *o)
{
	long fds;
	struct rlimit rl;
	int rc = 0;

	rc = rc ? rc : family(o, "packwire_build_info", "gauge", "The packwire version serving.");
	rc = rc ? rc : pw_buf_adds(o, "packwire_build_info{version=\"" PW_VERSION "\"} 1\n");
	rc = rc ? rc
	        : family(o, "process_cpu_seconds_total", "counter",
	                 "User and system CPU time of the server process, in seconds.");
	rc = rc ? rc : pw_buf_addf(o, "process_cpu_seconds_total %.6f\n", cpu_seconds());
	rc = rc ? rc
	        : scalar(o, "process_resident_memory_bytes", "gauge",
	                 "Resident memory of the server process, in bytes.", resident_bytes());
	fds = open_fds();
	if (!rc && fds >= 0)
		rc = scalar(o, "process_open_fds", "gauge", "Open file descriptors.",
		            (unsigned long long)fds);
	if (!rc && !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		rc = scalar(o, "process_max_fds", "gauge", "The limit of open file descriptors.",
		            (unsigned long long)rl.rlim_cur);
	return rc;
}

int pw_metrics_render(struct pw_buf *o, const struct pw_metrics *m,
                      const struct pw_metrics_now *now)
{
	int rc = render_requests(o, m);

	rc = rc ? rc : latency(o, m);
	rc = rc ? rc
	        : per_service(o, "packwire_http_sent_bytes_total",
	                      "Response body bytes sent, by service.", m->sent);
	rc = rc ? rc
	        : per_service(o, "packwire_http_received_bytes_total",
	                      "Request body bytes received, by service.", m->received);
	rc = rc ? rc : render_jobs(o, m, now);
	rc = rc ? rc : render_cache(o, &now->cache);
	return rc ? rc : render_process(o);
}
