/* The embedded HTTP server (packwire/serve.h): libmicrohttpd glue around
 * pw_http_serve. MHD's pool threads never block: a request's body is
 * spooled as it comes (memory, then an unlinked file), then the handler
 * runs on a thread of its own, reading the spool and writing into a
 * bounded buffer that MHD's content reader drains. While the buffer is
 * empty (or the headers are not known yet) the connection is suspended and
 * the handler's thread resumes it. */
#include <arpa/inet.h>
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/http.h"
#include "packwire/pack-cache.h"
#include "packwire/serve.h"
#include "packwire/server.h"
#include "packwire/version.h"
#include "server/browse.h"
#include "server/http-priv.h"
#include "server/metrics.h"
#include "server/mhd-load.h"

#define SPOOL_MEM   (4u << 20)   /* body bytes kept in memory before a file */
#define OUT_MAX     (256u << 10) /* response bytes buffered ahead of the socket */
#define MAX_HEADERS 32
#define METRICS_MAX (1u << 20) /* bytes of one /metrics answer */

struct user {
	char *name, *hash;
};

struct req;

struct pw_serve {
	struct MHD_Daemon *d;
	struct pw_serve_opts o;
	char *base, *realm, *agent, *cert, *key;
	struct user *users;
	size_t nr_users;
	unsigned port;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned inflight; /* requests between their first call and completion */
	unsigned workers;  /* handler threads alive */
	unsigned jobs;     /* job slots held: handlers serving (at most max_jobs) */
	unsigned max_jobs;
	/* Requests with their body in, waiting for a slot, oldest first: a
	 * slot freed goes to the head (so none is overtaken). */
	struct req *q_head, *q_tail;
	unsigned waiting, max_queue;
	unsigned retry_after;
	int cancel;   /* handler threads stop writing: the grace is over */
	int draining; /* SIGTERM came: /healthz answers 503 */
	int metrics, browse;
	char *url, *daemon_url;
	struct pw_metrics m;
};

struct req {
	struct pw_serve *s;
	struct MHD_Connection *conn;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int refs; /* the connection's, and the handler thread's while it runs */

	char *method, *url, *query, *version, *ctype, *cenc, *gitproto, *user, *ua, *host;
	char addr[64];
	struct timespec t0;
	int svc, proto; /* what it is counted as (metrics.h) */

	/* admission: a job slot held, or a place in the queue */
	int slot, in_queue;
	struct req *q_next, *q_prev;
	struct pw_http_result result;

	/* the body spool */
	char *mem;
	size_t mem_len, mem_cap, mem_pos;
	int fd;
	uint64_t body_len;
	uint64_t limit; /* body bytes the handler reads (pw_http_admit); 0: dropped */

	/* the response */
	int worker, started, queued, done, failed, gone, suspended;
	int status;
	uint64_t size; /* MHD_SIZE_UNKNOWN unless a Content-Length came */
	size_t nr_hdr;
	char *hname[MAX_HEADERS], *hvalue[MAX_HEADERS];
	char *out;
	size_t out_len, out_off, out_cap;
	uint64_t sent;
};

/* ---- passwords ---------------------------------------------------------- */

int pw_serve_check_password(const char *hash, const char *password, struct pw_error *err)
{
	static const char *const kinds[] = {"$2y$", "$2b$", "$2a$", "$5$", "$6$"};
	struct crypt_data *cd;
	const char *r;
	size_t i;
	int ok;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(hash, kinds[i], strlen(kinds[i])))
			break;
	if (i == sizeof(kinds) / sizeof(kinds[0]))
		return pw_error_set(
		        err, PW_EUNSUPPORTED,
		        "password hash '%.8s...' is not bcrypt ($2y$, $2b$) or SHA-crypt "
		        "($5$, $6$)",
		        hash);
	if (!(cd = calloc(1, sizeof(*cd))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	r = crypt_r(password, hash, cd);
	ok = r && *r != '*' && !strcmp(r, hash);
	free(cd);
	return ok;
}

static int load_users(struct pw_serve *s, const char *path, struct pw_error *err)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	unsigned lineno = 0;
	int rc = 0;

	if (!f)
		return pw_error_set(err, PW_EIO, "cannot open auth file '%s': %s", path,
		                    strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *colon, *end = line + strcspn(line, "\r\n");
		struct user *u;

		lineno++;
		*end = 0;
		if (!*line || *line == '#')
			continue;
		colon = strchr(line, ':');
		if (!colon || colon == line || !colon[1]) {
			rc = pw_error_set(err, PW_EINVAL, "%s:%u: not a 'user:hash' line", path,
			                  lineno);
			break;
		}
		*colon = 0;
		/* an htpasswd hash ends at the next ':' (later fields are comments) */
		colon[1 + strcspn(colon + 1, ":")] = 0;
		if (pw_serve_check_password(colon + 1, "", err) < 0) {
			rc = pw_error_wrap(err, "%s:%u", path, lineno);
			break;
		}
		u = realloc(s->users, (s->nr_users + 1) * sizeof(*u));
		if (!u) {
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
		s->users = u;
		u += s->nr_users;
		u->name = strdup(line);
		u->hash = strdup(colon + 1);
		if (!u->name || !u->hash) {
			free(u->name);
			free(u->hash);
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
			break;
		}
		s->nr_users++;
	}
	fclose(f);
	if (!rc && !s->nr_users)
		rc = pw_error_set(err, PW_EINVAL, "auth file '%s' has no user", path);
	return rc;
}

static int read_file(char **out, const char *path, struct pw_error *err)
{
	struct pw_buf b;
	char chunk[4096];
	FILE *f = fopen(path, "re");
	size_t n;

	*out = NULL;
	if (!f)
		return pw_error_set(err, PW_EIO, "cannot open '%s': %s", path, strerror(errno));
	pw_buf_init(&b, 1u << 20);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		if (pw_buf_add(&b, chunk, n)) {
			fclose(f);
			pw_buf_free(&b);
			return pw_error_set(err, PW_ETOOBIG, "'%s' is larger than 1 MiB", path);
		}
	fclose(f);
	if (!(*out = strdup(b.data))) {
		pw_buf_free(&b);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	pw_buf_free(&b);
	return 0;
}

/* ---- requests ----------------------------------------------------------- */

static void req_unref(struct req *r)
{
	size_t i;
	int last;

	pthread_mutex_lock(&r->lock);
	last = --r->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (!last)
		return;
	free(r->method);
	free(r->url);
	free(r->query);
	free(r->version);
	free(r->ctype);
	free(r->cenc);
	free(r->gitproto);
	free(r->user);
	free(r->ua);
	free(r->host);
	free(r->mem);
	if (r->fd >= 0)
		close(r->fd);
	for (i = 0; i < r->nr_hdr; i++) {
		free(r->hname[i]);
		free(r->hvalue[i]);
	}
	free(r->out);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}

static char *dup_header(struct MHD_Connection *c, const char *name)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);

	return v ? strdup(v) : NULL;
}

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
	struct pw_buf *b = cls;

	(void)kind;
	if (b->len)
		pw_buf_addch(b, '&');
	pw_buf_adds(b, key);
	if (value) {
		pw_buf_addch(b, '=');
		pw_buf_adds(b, value);
	}
	return MHD_YES;
}

static int spool_to_file(struct req *r)
{
	const char *p = r->mem;
	size_t left = r->mem_len;
	char tmpl[] = "/tmp/packwire-serve-XXXXXX";

	r->fd = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (r->fd < 0) {
		r->fd = mkostemp(tmpl, O_CLOEXEC);
		if (r->fd < 0)
			return -1;
		unlink(tmpl);
	}
	while (left) {
		ssize_t n = write(r->fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		left -= (size_t)n;
	}
	free(r->mem);
	r->mem = NULL;
	r->mem_len = r->mem_cap = 0;
	return 0;
}

/* 0, or -1 when the body cannot be stored */
static int spool_add(struct req *r, const char *data, size_t len)
{
	if (r->fd < 0 && r->mem_len + len > SPOOL_MEM && spool_to_file(r))
		return -1;
	if (r->fd >= 0) {
		while (len) {
			ssize_t n = write(r->fd, data, len);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return -1;
			data += n;
			len -= (size_t)n;
		}
		return 0;
	}
	if (r->mem_len + len > r->mem_cap) {
		size_t cap = r->mem_cap ? r->mem_cap : 4096;
		char *m;

		while (cap < r->mem_len + len)
			cap *= 2;
		if (!(m = realloc(r->mem, cap)))
			return -1;
		r->mem = m;
		r->mem_cap = cap;
	}
	memcpy(r->mem + r->mem_len, data, len);
	r->mem_len += len;
	return 0;
}

/* A fresh backend request with what every request of r says about itself. */
static void req_http_request(const struct req *r, struct pw_http_request *hr)
{
	pw_http_request_init(hr);
	hr->method = r->method;
	hr->path_info = r->url;
	hr->query = r->query;
	hr->server_protocol = r->version;
	hr->content_type = r->ctype;
	hr->content_encoding = r->cenc;
}

static long body_read(void *ctx, void *buf, size_t len)
{
	struct req *r = ctx;

	if (r->fd >= 0) {
		for (;;) {
			ssize_t n = read(r->fd, buf, len);

			if (n < 0 && errno == EINTR)
				continue;
			return (long)n;
		}
	}
	if (len > r->mem_len - r->mem_pos)
		len = r->mem_len - r->mem_pos;
	memcpy(buf, r->mem + r->mem_pos, len);
	r->mem_pos += len;
	return (long)len;
}

/* The handler's thread found something for a suspended connection. */
static void wake(struct req *r, int was_suspended)
{
	if (was_suspended)
		MHD_resume_connection(r->conn);
}

static int sink_start(void *ctx, int status, const char *reason, const struct pw_http_header *h,
                      size_t nr)
{
	struct req *r = ctx;
	size_t i, n = 0;
	int was;

	(void)reason;
	pthread_mutex_lock(&r->lock);
	r->status = status;
	for (i = 0; i < nr && n < MAX_HEADERS; i++) {
		if (!strcasecmp(h[i].name, "Content-Length")) {
			char *end;
			unsigned long long v = strtoull(h[i].value, &end, 10);

			if (!*end && *h[i].value)
				r->size = v;
			continue;
		}
		r->hname[n] = strdup(h[i].name);
		r->hvalue[n] = strdup(h[i].value);
		if (!r->hname[n] || !r->hvalue[n]) {
			free(r->hname[n]);
			free(r->hvalue[n]);
			continue;
		}
		n++;
	}
	r->nr_hdr = n;
	r->started = 1;
	was = r->suspended;
	r->suspended = 0;
	pthread_mutex_unlock(&r->lock);
	wake(r, was);
	return 0;
}

static int sink_write(void *ctx, const void *data, size_t len)
{
	struct req *r = ctx;
	int was;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		size_t pending = r->out_len - r->out_off;

		if (r->gone || __atomic_load_n(&r->s->cancel, __ATOMIC_RELAXED)) {
			pthread_mutex_unlock(&r->lock);
			return -1;
		}
		if (!pending || pending + len <= OUT_MAX)
			break;
		pthread_cond_wait(&r->cond, &r->lock);
	}
	if (r->out_off) {
		memmove(r->out, r->out + r->out_off, r->out_len - r->out_off);
		r->out_len -= r->out_off;
		r->out_off = 0;
	}
	if (r->out_len + len > r->out_cap) {
		size_t cap = r->out_len + len > OUT_MAX ? r->out_len + len : OUT_MAX;
		char *o = realloc(r->out, cap);

		if (!o) {
			pthread_mutex_unlock(&r->lock);
			return -1;
		}
		r->out = o;
		r->out_cap = cap;
	}
	memcpy(r->out + r->out_len, data, len);
	r->out_len += len;
	was = r->suspended;
	r->suspended = 0;
	pthread_mutex_unlock(&r->lock);
	wake(r, was);
	return 0;
}

static void error_log(struct pw_serve *s, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void error_log(struct pw_serve *s, const char *fmt, ...)
{
	char msg[PW_ERROR_MSG_MAX + 256];
	va_list ap;

	if (!s->o.error_log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	s->o.error_log(s->o.log_ctx, msg);
}

/* ---- the pack cache's numbers -------------------------------------------- */

/* The pack cache (issue 28, item 1) is built in another branch; until it
 * is merged there is no cache and its numbers are zero. When it lands,
 * fill `out` here from its statistics (pw_pack_cache_get_stats() into a
 * struct pw_pack_cache_stats): lookups by result (hit, miss, shared,
 * bypass), bytes generated, bytes served from the cache, evictions, corrupt
 * entries, and the entries and bytes on disk. /metrics calls this for
 * every scrape, on an MHD thread. */
static void serve_pack_cache_stats(struct pw_serve *s, struct pw_metrics_cache *out)
{
	struct pw_pack_cache_stats st;

	memset(out, 0, sizeof(*out));
	if (!s->o.pack_cache)
		return;
	pw_pack_cache_get_stats(s->o.pack_cache, &st);
	out->hits = st.hits;
	out->misses = st.misses;
	out->shared = st.shared;
	out->bypass = st.bypass;
	out->bytes_generated = st.bytes_generated;
	out->bytes_served = st.bytes_served;
	out->evictions = st.evictions;
	out->corrupt = st.corrupt;
	out->entries = st.entries;
	out->disk_bytes = st.bytes;
}

/* ---- admission ---------------------------------------------------------- */

static void queue_append(struct pw_serve *s, struct req *r)
{
	r->q_next = NULL;
	r->q_prev = s->q_tail;
	if (s->q_tail)
		s->q_tail->q_next = r;
	else
		s->q_head = r;
	s->q_tail = r;
	r->in_queue = 1;
	s->waiting++;
}

static void queue_remove(struct pw_serve *s, struct req *r)
{
	if (!r->in_queue)
		return;
	if (r->q_prev)
		r->q_prev->q_next = r->q_next;
	else
		s->q_head = r->q_next;
	if (r->q_next)
		r->q_next->q_prev = r->q_prev;
	else
		s->q_tail = r->q_prev;
	r->q_next = r->q_prev = NULL;
	r->in_queue = 0;
	s->waiting--;
}

/* A slot is free (s->lock held): it goes to the oldest waiting request,
 * else back to the pool. */
static void slot_release(struct pw_serve *s)
{
	struct req *next = s->q_head;

	if (next) {
		queue_remove(s, next);
		next->slot = 1;
	} else {
		s->jobs--;
	}
	pthread_cond_broadcast(&s->cond);
}

/* A slot now, a place in the queue, or neither (s->lock held): 1, 0, -1. */
static int slot_take(struct pw_serve *s, struct req *r)
{
	if (s->jobs < s->max_jobs && !s->q_head) {
		s->jobs++;
		r->slot = 1;
		return 1;
	}
	if (s->waiting < s->max_queue) {
		queue_append(s, r);
		return 0;
	}
	return -1;
}

/* Has the client of a waiting request closed its connection? (A
 * suspended connection is not polled by MHD, so nobody else would see it
 * before the request's turn.) */
static int client_gone(struct req *r)
{
	const union MHD_ConnectionInfo *ci =
	        MHD_get_connection_info(r->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
	struct pollfd p;

	if (!ci)
		return 0;
	p.fd = ci->connect_fd;
	p.events = POLLRDHUP;
	p.revents = 0;
	return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* The one-line reason a refused request gets (git shows a text/plain body
 * of an error as "remote: <line>"). */
static void busy_text(struct pw_serve *s, char *out, size_t cap, enum pw_metrics_refusal why)
{
	if (why == PW_REFUSED_QUEUE_TIMEOUT)
		snprintf(out, cap,
		         "The server is busy: no job became free for this request in %u seconds. "
		         "Try again in %u seconds.\n",
		         s->o.timeout, s->retry_after);
	else if (why == PW_REFUSED_STOPPING)
		snprintf(out, cap, "The server is shutting down. Try again in %u seconds.\n",
		         s->retry_after);
	else
		snprintf(out, cap,
		         "The server is busy: all its jobs are running%s. Try again in %u "
		         "seconds.\n",
		         s->max_queue ? " and its queue is full" : "", s->retry_after);
}

/* A 503 from the handler's thread (the request waited, then was refused). */
static void answer_busy(struct req *r, enum pw_metrics_refusal why)
{
	struct pw_serve *s = r->s;
	char text[256], after[16];
	struct pw_http_header h[3] = {{"Content-Type", "text/plain; charset=utf-8"},
	                              {"Retry-After", after},
	                              {"Cache-Control", "no-cache, max-age=0, must-revalidate"}};

	busy_text(s, text, sizeof(text), why);
	snprintf(after, sizeof(after), "%u", s->retry_after);
	pw_metrics_refused(&s->m, why);
	error_log(s, "%s %s %s: refused: %.*s", r->addr, r->method, r->url, (int)strlen(text) - 1,
	          text);
	if (!sink_start(r, 503, "Service Unavailable", h, 3) && strcmp(r->method, "HEAD"))
		sink_write(r, text, strlen(text));
}

/* Wait for a slot, at most --timeout seconds: 0 with one, else the
 * refusal (answered, or the client is gone: -1). */
static int wait_for_slot(struct req *r)
{
	struct pw_serve *s = r->s;
	struct timespec deadline, next;
	enum pw_metrics_refusal why;
	int gone = 0;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += s->o.timeout;
	pthread_mutex_lock(&s->lock);
	for (;;) {
		if (r->slot) {
			pthread_mutex_unlock(&s->lock);
			return 0;
		}
		if (__atomic_load_n(&s->cancel, __ATOMIC_RELAXED)) {
			why = PW_REFUSED_STOPPING;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &next);
		if (next.tv_sec > deadline.tv_sec ||
		    (next.tv_sec == deadline.tv_sec && next.tv_nsec >= deadline.tv_nsec)) {
			why = PW_REFUSED_QUEUE_TIMEOUT;
			break;
		}
		/* a look at the client every second */
		next.tv_sec++;
		if (next.tv_sec > deadline.tv_sec ||
		    (next.tv_sec == deadline.tv_sec && next.tv_nsec > deadline.tv_nsec))
			next = deadline;
		pthread_cond_timedwait(&s->cond, &s->lock, &next);
		if (!r->slot && client_gone(r)) {
			gone = 1;
			break;
		}
	}
	queue_remove(s, r);
	pthread_mutex_unlock(&s->lock);
	if (gone) {
		pw_metrics_abandoned(&s->m);
		pthread_mutex_lock(&r->lock);
		r->status = 503;
		r->started = 1;
		r->size = 0;
		r->failed = 1;
		pthread_mutex_unlock(&r->lock);
		return -1;
	}
	answer_busy(r, why);
	return -1;
}

static void *worker_main(void *arg)
{
	struct req *r = arg;
	struct pw_serve *s = r->s;
	struct pw_http_request hr;
	struct pw_http_sink sink = {sink_start, sink_write, r};
	struct pw_error err;
	char base_url[320];
	int rc = 0, was, served = 0;

	pw_error_clear(&err);
	/* wait for a turn: every handler holds an object walk and a pack in
	 * the making, so how many run at once bounds the server's memory;
	 * the queue bounds the threads and spools waiting */
	if (!wait_for_slot(r)) { /* at once when it already has one */
		served = 1;
		if (r->fd >= 0)
			lseek(r->fd, 0, SEEK_SET);
		req_http_request(r, &hr);
		hr.git_protocol = r->gitproto;
		hr.remote_user = r->user;
		hr.remote_addr = r->addr;
		hr.content_length = (long long)r->body_len;
		hr.read_body = body_read;
		hr.body_ctx = r;
		hr.project_root = s->base;
		hr.export_all = 1;
		hr.max_request_buffer = s->o.max_request_buffer;
		hr.err_fd = -1;
		hr.agent = s->agent;
		hr.browse = s->browse;
		hr.daemon_url = s->daemon_url;
		hr.result = &r->result;
		hr.pack_cache = s->o.pack_cache;
		hr.ref_store = s->o.ref_store;
		hr.allow_push = s->o.allow_push;
		hr.allow_any_want = s->o.allow_any_want;
		if (s->browse && r->svc == PW_SVC_BROWSE) {
			/* the clone URLs: --url, else what the client asked for */
			if (s->url)
				hr.clone_url = s->url;
			else if (r->host) {
				snprintf(base_url, sizeof(base_url), "%s://%s",
				         s->cert ? "https" : "http", r->host);
				hr.clone_url = base_url;
			}
		}
		rc = pw_http_serve(&hr, &sink, &err);
		if (rc)
			error_log(s, "%s %s: %s", r->method, r->url, err.msg);
		if (r->result.push)
			pw_metrics_push(&s->m, r->result.push > 0);
		/* the work is done: the slot is free before the client sees
		 * the end of the answer (its next request must find it free) */
		pthread_mutex_lock(&s->lock);
		slot_release(s);
		pthread_mutex_unlock(&s->lock);
	}

	pthread_mutex_lock(&r->lock);
	if (!r->started) {
		/* nothing was answered: a bare 500 */
		r->status = 500;
		r->started = 1;
		r->size = 0;
	}
	r->done = 1;
	/* a refusal was answered in full; anything else cut the response */
	if (served)
		r->failed = rc && rc != PW_ENOTFOUND && rc != PW_EUNSUPPORTED && rc != PW_EINVAL &&
		            rc != PW_ETOOBIG;
	was = r->suspended;
	r->suspended = 0;
	pthread_mutex_unlock(&r->lock);
	wake(r, was);
	req_unref(r);

	pthread_mutex_lock(&s->lock);
	s->workers--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static ssize_t content_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct req *r = cls;
	ssize_t n;

	(void)pos;
	pthread_mutex_lock(&r->lock);
	if (r->out_len > r->out_off) {
		size_t k = r->out_len - r->out_off;

		if (k > max)
			k = max;
		memcpy(buf, r->out + r->out_off, k);
		r->out_off += k;
		r->sent += k;
		pthread_cond_broadcast(&r->cond);
		n = (ssize_t)k;
	} else if (r->done) {
		n = r->failed ? MHD_CONTENT_READER_END_WITH_ERROR
		              : MHD_CONTENT_READER_END_OF_STREAM;
	} else {
		r->suspended = 1;
		MHD_suspend_connection(r->conn);
		n = 0;
	}
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* A short answer of the front itself (text copied). A 503 says when to
 * come back; a 405 which methods the path takes. */
static enum MHD_Result queue_text(struct req *r, unsigned status, const char *type,
                                  const char *text, size_t len)
{
	struct MHD_Response *resp =
	        MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	if (status == 503) {
		char after[16];

		snprintf(after, sizeof(after), "%u", r->s->retry_after);
		MHD_add_response_header(resp, "Retry-After", after);
	}
	if (status == 405)
		MHD_add_response_header(resp, "Allow", "GET, HEAD");
	if (status >= 300 || r->svc == PW_SVC_METRICS || r->svc == PW_SVC_HEALTHZ)
		MHD_add_response_header(resp, "Cache-Control",
		                        "no-cache, max-age=0, must-revalidate");
	r->status = (int)status;
	r->queued = 1;
	r->sent = strcmp(r->method, "HEAD") ? len : 0;
	if (status == 401)
		ret = MHD_queue_basic_auth_fail_response(r->conn, r->s->realm, resp);
	else
		ret = MHD_queue_response(r->conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result queue_plain(struct req *r, unsigned status, const char *text)
{
	return queue_text(r, status, "text/plain; charset=utf-8", text, strlen(text));
}

/* Every job busy and the queue full (or the server stopping): 503 now. */
static enum MHD_Result queue_busy(struct req *r, enum pw_metrics_refusal why)
{
	char text[256];

	busy_text(r->s, text, sizeof(text), why);
	pw_metrics_refused(&r->s->m, why);
	error_log(r->s, "%s %s %s: refused: %.*s", r->addr, r->method, r->url,
	          (int)strlen(text) - 1, text);
	return queue_plain(r, 503, text);
}

static enum MHD_Result queue_handler_response(struct req *r)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;
	size_t i;

	resp = MHD_create_response_from_callback(r->size, 64 * 1024, content_reader, r, NULL);
	if (!resp)
		return MHD_NO;
	for (i = 0; i < r->nr_hdr; i++)
		MHD_add_response_header(resp, r->hname[i], r->hvalue[i]);
	r->queued = 1;
	ret = MHD_queue_response(r->conn, (unsigned)r->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* A push needs a user from the auth file (when there is one). */
static int is_push(const struct req *r)
{
	size_t n = strlen(r->url), k = strlen("/git-receive-pack");

	if (n >= k && !strcmp(r->url + n - k, "/git-receive-pack"))
		return 1;
	return r->query && strstr(r->query, "service=git-receive-pack") != NULL;
}

static int authenticate(struct req *r)
{
	struct pw_serve *s = r->s;
	char *pass = NULL, *user = MHD_basic_auth_get_username_password(r->conn, &pass);
	int ok = 0;
	size_t i;

	if (user && pass)
		for (i = 0; i < s->nr_users; i++)
			if (!strcmp(s->users[i].name, user)) {
				ok = pw_serve_check_password(s->users[i].hash, pass, NULL) == 1;
				break;
			}
	if (ok)
		r->user = strdup(user);
	else if (user)
		error_log(s, "%s: authentication failed for user '%s'", r->addr, user);
	if (user)
		MHD_free(user);
	if (pass)
		MHD_free(pass);
	return ok && r->user;
}

static struct req *req_new(struct pw_serve *s, struct MHD_Connection *c, const char *url,
                           const char *method, const char *version)
{
	struct req *r = calloc(1, sizeof(*r));
	const union MHD_ConnectionInfo *ci;
	struct pw_buf q;

	if (!r)
		return NULL;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->refs = 1;
	r->s = s;
	r->conn = c;
	r->fd = -1;
	r->size = MHD_SIZE_UNKNOWN;
	clock_gettime(CLOCK_MONOTONIC, &r->t0);
	r->method = strdup(method);
	r->url = strdup(url);
	r->version = strdup(version);
	r->ctype = dup_header(c, MHD_HTTP_HEADER_CONTENT_TYPE);
	r->cenc = dup_header(c, MHD_HTTP_HEADER_CONTENT_ENCODING);
	r->gitproto = dup_header(c, "Git-Protocol");
	r->ua = dup_header(c, MHD_HTTP_HEADER_USER_AGENT);
	pw_buf_init(&q, 64 * 1024);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &q);
	r->query = strdup(q.data);
	pw_buf_free(&q);
	r->proto = pw_protocol_version_from_env(r->gitproto);
	if (!strcmp(url, "/metrics") && s->metrics)
		r->svc = PW_SVC_METRICS;
	else if (!strcmp(url, "/healthz"))
		r->svc = PW_SVC_HEALTHZ;
	else if (s->browse && pw_browse_is_page(url))
		r->svc = PW_SVC_BROWSE;
	else
		r->svc = pw_http__service(url, r->query);
	if (r->svc == PW_SVC_BROWSE) {
		/* the clone URLs name the host the client asked for, when it
		 * is one (shown escaped anyway) */
		const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");

		if (h && *h && strlen(h) < 256 &&
		    strspn(h,
		           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") ==
		            strlen(h))
			r->host = strdup(h);
	}
	strcpy(r->addr, "-");
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (ci && ci->client_addr) {
		const struct sockaddr *sa = ci->client_addr;

		if (sa->sa_family == AF_INET)
			inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, r->addr,
			          sizeof(r->addr));
		else if (sa->sa_family == AF_INET6)
			inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, r->addr,
			          sizeof(r->addr));
	}
	if (!r->method || !r->url || !r->version || !r->query) {
		req_unref(r);
		return NULL;
	}
	return r;
}

struct hdrs {
	struct pw_http_header *h;
	size_t nr, alloc;
	int failed;
};

static enum MHD_Result add_hdr(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
	struct hdrs *v = cls;

	(void)kind;
	if (v->nr == v->alloc) {
		/* bounded by MHD's header memory (max_header) */
		size_t n = v->alloc ? 2 * v->alloc : 32;
		struct pw_http_header *p = realloc(v->h, n * sizeof(*p));

		if (!p) {
			v->failed = 1;
			return MHD_NO;
		}
		v->h = p;
		v->alloc = n;
	}
	v->h[v->nr].name = key;
	v->h[v->nr++].value = value ? value : "";
	return MHD_YES;
}

/* pw_http_admit on the request as it stands: with every header field as it
 * came when the header is in (again = 0), with the body's length so far
 * when it grew past r->limit (again = 1). 1 when it refused (the answer is
 * in r, done), else 0 with r->limit set. */
static int admit(struct req *r, int again)
{
	struct pw_serve *s = r->s;
	struct pw_http_request hr;
	struct pw_http_sink sink = {sink_start, sink_write, r};
	struct hdrs h = {NULL, 0, 0, 0};
	struct pw_error err;
	uint64_t limit = 0;
	int rc;

	pw_error_clear(&err);
	req_http_request(r, &hr);
	hr.project_root = s->base;
	hr.export_all = 1;
	hr.max_request_buffer = s->o.max_request_buffer;
	hr.max_body = s->o.max_body;
	if (again) {
		hr.content_length = (long long)r->body_len;
	} else {
		MHD_get_connection_values(r->conn, MHD_HEADER_KIND, add_hdr, &h);
		if (h.failed) {
			free(h.h);
			pthread_mutex_lock(&r->lock);
			r->status = 500;
			r->started = r->done = 1;
			r->size = 0;
			pthread_mutex_unlock(&r->lock);
			return 1;
		}
		hr.headers = h.h;
		hr.nr_headers = h.nr;
	}
	rc = pw_http_admit(&hr, &sink, &limit, &err);
	free(h.h);
	if (!rc) {
		r->limit = limit;
		return 0;
	}
	error_log(s, "%s %s: %s", r->method, r->url, err.msg);
	pthread_mutex_lock(&r->lock);
	if (!r->started) {
		r->status = 500;
		r->started = 1;
		r->size = 0;
	}
	r->done = 1;
	pthread_mutex_unlock(&r->lock);
	return 1;
}

/* GET /healthz and /metrics: answered on MHD's thread, without a job (they
 * read no repository and their work and size are fixed), so they answer
 * while every job is busy. */
static enum MHD_Result own_endpoint(struct req *r)
{
	struct pw_serve *s = r->s;

	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD"))
		return queue_plain(r, 405, "Method Not Allowed\n");
	if (r->svc == PW_SVC_HEALTHZ) {
		if (__atomic_load_n(&s->draining, __ATOMIC_RELAXED))
			return queue_plain(r, 503, "shutting down\n");
		if (s->o.not_ready) {
			char why[256] = "";

			if (s->o.not_ready(s->o.hooks_ctx, why, sizeof(why) - 1)) {
				strcat(why, "\n");
				return queue_plain(r, 503, why);
			}
		}
		return queue_plain(r, 200, "ok\n");
	} else {
		struct pw_metrics_now now;
		struct pw_buf b;
		enum MHD_Result ret;

		memset(&now, 0, sizeof(now));
		pthread_mutex_lock(&s->lock);
		now.jobs_running = s->jobs;
		now.jobs_queued = s->waiting;
		pthread_mutex_unlock(&s->lock);
		now.max_jobs = s->max_jobs;
		now.max_queue = s->max_queue;
		now.draining = __atomic_load_n(&s->draining, __ATOMIC_RELAXED);
		serve_pack_cache_stats(s, &now.cache);
		pw_buf_init(&b, METRICS_MAX);
		if (pw_metrics_render(&b, &s->m, &now) ||
		    (s->o.metrics && s->o.metrics(s->o.hooks_ctx, &b))) {
			pw_buf_free(&b);
			error_log(s, "GET /metrics: the answer would be larger than %u bytes",
			          METRICS_MAX);
			return queue_plain(r, 500, "Internal Server Error\n");
		}
		ret = queue_text(r, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
		pw_buf_free(&b);
		return ret;
	}
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_size, void **con_cls)
{
	struct pw_serve *s = cls;
	struct req *r = *con_cls;
	pthread_t th;
	pthread_attr_t attr;
	int err, full, got;

	if (!r) {
		if (!(r = req_new(s, c, url, method, version)))
			return MHD_NO;
		*con_cls = r;
		pthread_mutex_lock(&s->lock);
		s->inflight++;
		pthread_mutex_unlock(&s->lock);
		if (*url != '/')
			return queue_plain(r, 400, "Bad Request: the path must begin with '/'\n");
		/* before any body byte: its framing and its declared length */
		if (admit(r, 0))
			return queue_handler_response(r);
		if (r->svc == PW_SVC_METRICS || r->svc == PW_SVC_HEALTHZ)
			return MHD_YES; /* answered after the (dropped) body: kept alive */
		if (s->nr_users && is_push(r) && !authenticate(r))
			return queue_plain(r, 401, "Authentication required to push\n");
		/* no job and no room to wait: refused before a body is sent */
		pthread_mutex_lock(&s->lock);
		full = s->jobs >= s->max_jobs && s->waiting >= s->max_queue;
		pthread_mutex_unlock(&s->lock);
		if (full)
			return queue_busy(r, PW_REFUSED_QUEUE_FULL);
		return MHD_YES;
	}
	if (r->queued) {
		/* an early answer (400/401/413): the rest of the body is dropped */
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		size_t n = *upload_size;

		*upload_size = 0;
		r->body_len += n;
		/* MHD takes an answer only before the body or after it: past
		 * --max-body the connection is closed, past what the handler
		 * reads (a chunked body) the rest is dropped and the refusal
		 * waits for the end */
		if (r->body_len > r->s->o.max_body) {
			error_log(s,
			          "%s %s: request body larger than %llu bytes: connection closed",
			          r->method, r->url, (unsigned long long)r->s->o.max_body);
			return MHD_NO;
		}
		if (r->body_len > r->limit)
			return MHD_YES;
		if (spool_add(r, upload_data, n)) {
			/* no answer can be queued mid-body: the connection is closed */
			error_log(s, "%s %s: cannot store the request body: %s", r->method, r->url,
			          strerror(errno));
			return MHD_NO;
		}
		return MHD_YES;
	}
	if (r->svc == PW_SVC_METRICS || r->svc == PW_SVC_HEALTHZ)
		return own_endpoint(r);
	if (r->limit && r->body_len > r->limit && admit(r, 1))
		return queue_handler_response(r); /* a chunked body over the bound */
	if (!r->worker) {
		pthread_mutex_lock(&s->lock);
		if (s->cancel) {
			/* stopping: no new handler may hold a suspended connection */
			pthread_mutex_unlock(&s->lock);
			return queue_busy(r, PW_REFUSED_STOPPING);
		}
		if ((got = slot_take(s, r)) < 0) {
			pthread_mutex_unlock(&s->lock);
			return queue_busy(r, PW_REFUSED_QUEUE_FULL);
		}
		s->workers++;
		pthread_mutex_unlock(&s->lock);
		r->worker = 1;
		pthread_mutex_lock(&r->lock);
		r->refs++;
		pthread_mutex_unlock(&r->lock);
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(&th, &attr, worker_main, r);
		pthread_attr_destroy(&attr);
		if (err) {
			req_unref(r); /* the thread's reference; the connection's remains */
			pthread_mutex_lock(&s->lock);
			s->workers--;
			if (r->slot)
				slot_release(s); /* taken, or handed over meanwhile */
			else
				queue_remove(s, r);
			pthread_mutex_unlock(&s->lock);
			error_log(s, "cannot start a thread: %s", strerror(err));
			return queue_plain(r, 503, "Service Unavailable\n");
		}
	}
	pthread_mutex_lock(&r->lock);
	if (!r->started) {
		r->suspended = 1;
		MHD_suspend_connection(c);
		pthread_mutex_unlock(&r->lock);
		return MHD_YES;
	}
	pthread_mutex_unlock(&r->lock);
	return queue_handler_response(r);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
	static const char *const why[] = {"",          " error",      " timeout",
	                                  " shutdown", " read-error", " client-abort"};
	struct pw_serve *s = cls;
	struct req *r = *con_cls;
	struct timespec t1;
	char when[64], line[2048], status[8] = "-";
	struct tm tm;
	time_t now = time(NULL);

	(void)c;
	if (!r)
		return;
	*con_cls = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	pw_metrics_request(&s->m, r->svc, r->proto, r->queued ? r->status : 0,
	                   (double)(t1.tv_sec - r->t0.tv_sec) + (t1.tv_nsec - r->t0.tv_nsec) / 1e9,
	                   r->sent, r->body_len);
	if (s->o.log) {
		localtime_r(&now, &tm);
		strftime(when, sizeof(when), "%d/%b/%Y:%H:%M:%S %z", &tm);
		if (r->queued)
			snprintf(status, sizeof(status), "%d", r->status);
		snprintf(line, sizeof(line),
		         "%s - %s [%s] \"%s %.512s%s%.256s %s\" %s %llu \"%.128s\" %.3f%s", r->addr,
		         r->user ? r->user : "-", when, r->method, r->url, *r->query ? "?" : "",
		         r->query, r->version, status, (unsigned long long)r->sent,
		         r->ua ? r->ua : "-",
		         (double)(t1.tv_sec - r->t0.tv_sec) + (t1.tv_nsec - r->t0.tv_nsec) / 1e9,
		         (unsigned)toe < sizeof(why) / sizeof(why[0]) ? why[toe] : " error");
		s->o.log(s->o.log_ctx, line);
	}
	pthread_mutex_lock(&r->lock);
	r->gone = 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	req_unref(r);
	pthread_mutex_lock(&s->lock);
	s->inflight--;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct pw_serve *s = cls;
	char msg[1024];
	size_t n;

	if (!s->o.error_log)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && msg[n - 1] == '\n')
		msg[--n] = 0;
	s->o.error_log(s->o.log_ctx, msg);
}

/* ---- the server --------------------------------------------------------- */

static void serve_free(struct pw_serve *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_users; i++) {
		free(s->users[i].name);
		free(s->users[i].hash);
	}
	free(s->users);
	free(s->base);
	free(s->realm);
	free(s->agent);
	free(s->cert);
	free(s->key);
	free(s->url);
	free(s->daemon_url);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}

/* A base URL without its trailing slashes (malloc'd; NULL for NULL). */
static char *trimmed_url(const char *u)
{
	char *d;
	size_t n;

	if (!u || !(d = strdup(u)))
		return NULL;
	n = strlen(d);
	while (n && d[n - 1] == '/')
		d[--n] = 0;
	return d;
}

/* The options, with a default for each one left at 0. */
static void serve_defaults(struct pw_serve *s, const struct pw_serve_opts *opts)
{
	s->o = *opts;
	if (!s->o.threads)
		s->o.threads = 4;
	if (!s->o.max_connections)
		s->o.max_connections = 256;
	s->max_jobs = s->o.max_jobs;
	if (!s->max_jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		s->max_jobs = n > 2 ? (unsigned)(2 * n) : 4;
	}
	if (!s->o.timeout)
		s->o.timeout = 60;
	s->max_queue = s->o.max_queue == PW_SERVE_NO_QUEUE ? 0
	               : s->o.max_queue                    ? s->o.max_queue
	                                                   : 64;
	s->retry_after = s->o.retry_after ? s->o.retry_after : 5;
	s->metrics = !s->o.no_metrics;
	s->browse = !s->o.no_browse;
	if (!s->o.max_body)
		s->o.max_body = (uint64_t)4 << 30;
	if (!s->o.max_header)
		s->o.max_header = 32 * 1024;
}

int pw_serve_start(struct pw_serve **out, const struct pw_serve_opts *opts, struct pw_error *err)
{
	struct pw_serve *s;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
	struct sockaddr *sa;
	const union MHD_DaemonInfo *di;
	unsigned flags = MHD_USE_AUTO | MHD_USE_INTERNAL_POLLING_THREAD | MHD_ALLOW_SUSPEND_RESUME |
	                 MHD_USE_ERROR_LOG;
	const char *listen = opts->listen && *opts->listen ? opts->listen : "127.0.0.1";
	struct stat st;
	int rc;

	*out = NULL;
	if (!opts->base_path || !*opts->base_path)
		return pw_error_set(err, PW_EINVAL, "serve: no base path");
	if ((rc = pw_mhd_load(err)))
		return rc;
	if (stat(opts->base_path, &st) || !S_ISDIR(st.st_mode))
		return pw_error_set(err, PW_ENOTFOUND, "base path '%s' is not a directory",
		                    opts->base_path);
	if (!!opts->cert_file != !!opts->key_file)
		return pw_error_set(err, PW_EINVAL, "HTTPS needs both a certificate and a key");
	if (!(s = calloc(1, sizeof(*s))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	serve_defaults(s, opts);
	s->base = realpath(opts->base_path, NULL);
	s->realm = strdup(opts->realm ? opts->realm : "packwire");
	s->agent = opts->agent ? strdup(opts->agent) : NULL;
	s->url = trimmed_url(opts->url);
	s->daemon_url = trimmed_url(opts->daemon_url);
	if (!s->base || !s->realm || (opts->agent && !s->agent) || (opts->url && !s->url) ||
	    (opts->daemon_url && !s->daemon_url)) {
		serve_free(s);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	s->o.base_path = s->base;
	s->o.listen = NULL;
	s->o.url = s->o.daemon_url = NULL;
	s->o.cert_file = s->o.key_file = s->o.auth_file = NULL;
	if (opts->auth_file && (rc = load_users(s, opts->auth_file, err))) {
		serve_free(s);
		return rc;
	}
	if (opts->cert_file) {
		if ((rc = read_file(&s->cert, opts->cert_file, err)) ||
		    (rc = read_file(&s->key, opts->key_file, err))) {
			serve_free(s);
			return rc;
		}
		flags |= MHD_USE_TLS;
	}
	memset(&sin, 0, sizeof(sin));
	memset(&sin6, 0, sizeof(sin6));
	if (inet_pton(AF_INET, listen, &sin.sin_addr) == 1) {
		sin.sin_family = AF_INET;
		sin.sin_port = htons((uint16_t)opts->port);
		sa = (struct sockaddr *)&sin;
	} else if (inet_pton(AF_INET6, listen, &sin6.sin6_addr) == 1) {
		sin6.sin6_family = AF_INET6;
		sin6.sin6_port = htons((uint16_t)opts->port);
		sa = (struct sockaddr *)&sin6;
		flags |= MHD_USE_IPv6;
	} else {
		serve_free(s);
		return pw_error_set(err, PW_EINVAL,
		                    "listen address '%s' is not an IPv4 or IPv6 address", listen);
	}
	if (opts->port > 65535) {
		serve_free(s);
		return pw_error_set(err, PW_EINVAL, "port %u is out of range", opts->port);
	}
	{
		struct MHD_OptionItem ops[] = {
		        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, s}, /* must come first */
		        {MHD_OPTION_SOCK_ADDR, 0, sa},
		        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)s->o.max_connections, NULL},
		        /* one thread is MHD's polling thread alone (a pool of 1 is refused) */
		        {s->o.threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE
		                          : MHD_OPTION_CONNECTION_LIMIT,
		         (intptr_t)(s->o.threads > 1 ? s->o.threads : s->o.max_connections), NULL},
		        {MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)s->o.timeout, NULL},
		        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)s->o.max_header, NULL},
		        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s},
		        {s->cert ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, s->cert},
		        {s->cert ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0, s->key},
		        {MHD_OPTION_END, 0, NULL},
		};

		s->d = MHD_start_daemon(flags, (uint16_t)opts->port, NULL, NULL, on_request, s,
		                        MHD_OPTION_ARRAY, ops, MHD_OPTION_END);
	}
	if (!s->d) {
		serve_free(s);
		return pw_error_set(err, PW_EIO,
		                    "cannot serve on %s port %u (address in use, or a bad "
		                    "certificate or key?)",
		                    listen, opts->port);
	}
	di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : opts->port;
	*out = s;
	return 0;
}

unsigned pw_serve_port(const struct pw_serve *s)
{
	return s->port;
}

void pw_serve_drain(struct pw_serve *s)
{
	if (s)
		__atomic_store_n(&s->draining, 1, __ATOMIC_RELAXED);
}

void pw_serve_stop(struct pw_serve *s, unsigned grace_seconds)
{
	struct timespec until;
	MHD_socket ls;

	if (!s)
		return;
	pw_serve_drain(s);
	ls = MHD_quiesce_daemon(s->d);
	/* MHD no longer accepts, but the kernel would still queue connections
	 * on the open socket: refuse them now (closed only after the stop) */
	if (ls != MHD_INVALID_SOCKET)
		shutdown(ls, SHUT_RDWR);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += grace_seconds;
	pthread_mutex_lock(&s->lock);
	while (s->inflight) {
		if (!grace_seconds)
			pthread_cond_wait(&s->cond, &s->lock);
		else if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
			break;
	}
	/* past the grace, handlers stop at their next write; none may hold a
	 * suspended connection when MHD stops */
	__atomic_store_n(&s->cancel, 1, __ATOMIC_RELAXED);
	pthread_cond_broadcast(&s->cond); /* handlers waiting for a turn */
	while (s->workers)
		pthread_cond_wait(&s->cond, &s->lock);
	pthread_mutex_unlock(&s->lock);
	MHD_stop_daemon(s->d);
	if (ls != MHD_INVALID_SOCKET)
		close(ls);
	serve_free(s);
}
