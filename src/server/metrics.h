/* The numbers of `packwire serve` (metrics.c): counters kept with atomic
 * adds by the server's threads, written out in the Prometheus text format
 * (version 0.0.4) for GET /metrics. Every label takes values from a fixed
 * set, so the output has a fixed bound whatever the requests were. */
#ifndef PW_SERVER_METRICS_H
#define PW_SERVER_METRICS_H

#include <stdint.h>

#include "packwire/buf.h"
#include "server/http-priv.h"

#define PW_METRICS_NR_PROTO   3  /* protocol versions 0, 1, 2 */
#define PW_METRICS_NR_STATUS  24 /* the statuses counted one by one, "other" and "none" */
#define PW_METRICS_NR_BUCKETS 15 /* latency buckets before +Inf */

/* Why a request was refused a job (the `reason` label). */
enum pw_metrics_refusal {
	PW_REFUSED_QUEUE_FULL,    /* every job busy and the queue full */
	PW_REFUSED_QUEUE_TIMEOUT, /* waited --timeout seconds without a job */
	PW_REFUSED_STOPPING,      /* the server is stopping */
	PW_REFUSED_NR
};

struct pw_metrics {
	uint64_t requests[PW_SVC_NR][PW_METRICS_NR_PROTO][PW_METRICS_NR_STATUS];
	uint64_t buckets[PW_SVC_NR][PW_METRICS_NR_BUCKETS + 1]; /* not cumulative; +Inf last */
	uint64_t duration_us[PW_SVC_NR];
	uint64_t sent[PW_SVC_NR], received[PW_SVC_NR];
	uint64_t refused[PW_REFUSED_NR];
	uint64_t abandoned; /* clients that left while their request waited */
	uint64_t pushes_accepted, pushes_rejected;
};

/* The pack cache's numbers (issue 28, item 1), as its stats struct gives
 * them; all zero while there is no cache. */
struct pw_metrics_cache {
	uint64_t hits, misses, shared, bypass; /* lookups by result */
	uint64_t bytes_generated;              /* pack bytes made for the cache */
	uint64_t bytes_served;                 /* pack bytes sent from the cache */
	uint64_t evictions, corrupt;           /* entries dropped: age/size, damaged */
	uint64_t entries, disk_bytes;          /* what is on disk now */
};

/* What the server knows at the time of a scrape. */
struct pw_metrics_now {
	unsigned jobs_running, jobs_queued, max_jobs, max_queue;
	int draining; /* SIGTERM came: /healthz says 503 */
	struct pw_metrics_cache cache;
};

/* One finished request: its service, protocol version (0-2), status (0 =
 * none was sent), duration and body bytes each way. Any thread. */
void pw_metrics_request(struct pw_metrics *m, int svc, int proto, int status, double seconds,
                        uint64_t sent, uint64_t received);
void pw_metrics_refused(struct pw_metrics *m, enum pw_metrics_refusal why);
void pw_metrics_abandoned(struct pw_metrics *m);
void pw_metrics_push(struct pw_metrics *m, int accepted);

/* Write every family (HELP, TYPE, samples) into out, the process's CPU
 * time, resident memory and file descriptors included. 0, PW_ENOMEM or
 * PW_ETOOBIG (past out's max). */
int pw_metrics_render(struct pw_buf *out, const struct pw_metrics *m,
                      const struct pw_metrics_now *now);

#endif
