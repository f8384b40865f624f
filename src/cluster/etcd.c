/* etcd v3 through its JSON gateway: see etcd.h. */
#include "cluster/etcd.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "packwire/buf.h"
#include "transport/curl-load.h"
#include "util/json.h"

struct pw_etcd {
	char *urls[PW_ETCD_MAX_ENDPOINTS];
	size_t nr;
	unsigned timeout_ms;
	int preferred;   /* the endpoint that answered last (atomic) */
	int64_t last_ok; /* monotonic ms of the last answer (atomic), 0 none */
};

int64_t pw_etcd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t pw_etcd_last_ok_ms(struct pw_etcd *e)
{
	return __atomic_load_n(&e->last_ok, __ATOMIC_RELAXED);
}

int pw_etcd_new(struct pw_etcd **out, const char *endpoints, unsigned timeout_ms,
                struct pw_error *err)
{
	struct pw_etcd *e;
	const char *p;

	*out = NULL;
	if (!strncmp(endpoints, "etcd:", 5))
		endpoints += 5;
	e = calloc(1, sizeof(*e));
	if (!e)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	e->timeout_ms = timeout_ms ? timeout_ms : 2000;
	for (p = endpoints; *p;) {
		size_t n = strcspn(p, ",");

		if (n) {
			if (e->nr == PW_ETCD_MAX_ENDPOINTS) {
				pw_etcd_free(e);
				return pw_error_set(err, PW_EINVAL, "more than %d etcd endpoints",
				                    PW_ETCD_MAX_ENDPOINTS);
			}
			if (strncmp(p, "http://", 7) && strncmp(p, "https://", 8)) {
				pw_etcd_free(e);
				return pw_error_set(err, PW_EINVAL,
				                    "etcd endpoint '%.*s' is not an http:// or "
				                    "https:// URL",
				                    (int)n, p);
			}
			while (n > 1 && p[n - 1] == '/')
				n--;
			if (!(e->urls[e->nr] = strndup(p, n))) {
				pw_etcd_free(e);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			e->nr++;
		}
		p += strcspn(p, ",");
		if (*p)
			p++;
	}
	if (!e->nr) {
		pw_etcd_free(e);
		return pw_error_set(err, PW_EINVAL,
		                    "no etcd endpoint given (--cluster=etcd:URL[,URL...])");
	}
	*out = e;
	return 0;
}

void pw_etcd_free(struct pw_etcd *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->nr; i++)
		free(e->urls[i]);
	free(e);
}

static size_t on_data(char *data, size_t size, size_t n, void *ctx)
{
	struct pw_buf *b = ctx;

	if (pw_buf_add(b, data, size * n))
		return 0; /* past PW_ETCD_MAX_ANSWER: curl fails the transfer */
	return size * n;
}

/* POST body to path on one endpoint after another until one answers with
 * a status below 500. *status gets it; ans the body. */
static int post(struct pw_etcd *e, const char *path, const struct pw_buf *body, struct pw_buf *ans,
                long *status, struct pw_error *err)
{
	struct curl_slist *hdrs = NULL;
	char url[1024], why[PW_ERROR_MSG_MAX] = "";
	size_t k;
	int rc, first = __atomic_load_n(&e->preferred, __ATOMIC_RELAXED);

	if ((rc = pw_curl_load(err)))
		return rc;
	hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (!hdrs)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (k = 0; k < e->nr; k++) {
		size_t i = ((size_t)first + k) % e->nr;
		CURL *c = curl_easy_init();
		CURLcode cc;

		if (!c) {
			curl_slist_free_all(hdrs);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		pw_buf_reset(ans);
		snprintf(url, sizeof(url), "%s%s", e->urls[i], path);
		curl_easy_setopt(c, CURLOPT_URL, url);
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->data);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body->len);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
		curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
		curl_easy_setopt(c, CURLOPT_WRITEDATA, ans);
		curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)e->timeout_ms);
		curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
		                 (long)(e->timeout_ms < 1000 ? e->timeout_ms : 1000));
		curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
		cc = curl_easy_perform(c);
		if (cc == CURLE_OK)
			curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
		curl_easy_cleanup(c);
		if (cc == CURLE_OK && *status < 500) {
			__atomic_store_n(&e->preferred, (int)i, __ATOMIC_RELAXED);
			if (*status == 200)
				__atomic_store_n(&e->last_ok, pw_etcd_now_ms(), __ATOMIC_RELAXED);
			curl_slist_free_all(hdrs);
			return 0;
		}
		if (cc == CURLE_WRITE_ERROR) {
			curl_slist_free_all(hdrs);
			return pw_error_set(err, PW_ETOOBIG, "etcd %s: answer larger than %u bytes",
			                    e->urls[i], PW_ETCD_MAX_ANSWER);
		}
		{
			size_t used = strlen(why);

			if (cc != CURLE_OK)
				snprintf(why + used, sizeof(why) - used, "%s%s: %s",
				         used ? "; " : "", e->urls[i],
				         cc == CURLE_OPERATION_TIMEDOUT
				                 ? "no answer in time (no quorum?)"
				                 : curl_easy_strerror(cc));
			else
				snprintf(why + used, sizeof(why) - used, "%s%s: HTTP %ld %.200s",
				         used ? "; " : "", e->urls[i], *status, ans->data);
		}
	}
	curl_slist_free_all(hdrs);
	return pw_error_set(err, PW_EIO, "cannot reach etcd (%.900s)", why);
}

static size_t drop_data(char *data, size_t size, size_t n, void *ctx)
{
	(void)data, (void)ctx;
	return size * n;
}

int pw_etcd_get_status(const char *url, unsigned timeout_ms, long *status, struct pw_error *err)
{
	CURL *c;
	CURLcode cc;
	int rc;

	*status = 0;
	if ((rc = pw_curl_load(err)))
		return rc;
	if (!(c = curl_easy_init()))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, drop_data);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup(c);
	if (cc != CURLE_OK)
		return pw_error_set(err, PW_EIO, "%s: %s", url, curl_easy_strerror(cc));
	return 0;
}

/* A request whose answer is JSON with status 200; anything else becomes a
 * message (etcd's "error" member when there is one). */
static int call(struct pw_etcd *e, const char *path, const struct pw_buf *body, struct pw_buf *ans,
                struct pw_error *err)
{
	long status = 0;
	int rc;

	pw_buf_init(ans, PW_ETCD_MAX_ANSWER);
	if ((rc = post(e, path, body, ans, &status, err)))
		return rc;
	if (status != 200) {
		struct pw_json j;
		struct pw_buf msg = PW_BUF_INIT;
		int n;

		msg.max = 512;
		pw_json_init(&j);
		if (!pw_json_parse(&j, ans->data, ans->len, NULL) &&
		    (n = pw_json_get(&j, 0, "error")) >= 0)
			pw_json_string(&j, n, &msg, NULL);
		rc = pw_error_set(err, PW_EPROTO, "etcd %s: HTTP %ld: %s", path, status,
		                  msg.len ? msg.data : "(no message)");
		pw_buf_free(&msg);
		pw_json_free(&j);
	}
	return rc;
}

static int add_key(struct pw_buf *b, const char *name, const char *s, size_t len)
{
	int rc = pw_buf_addf(b, "\"%s\":", name);

	return rc ? rc : pw_json_add_base64(b, s, len);
}

/* The smallest key after every key that starts with prefix. */
static int prefix_end(struct pw_buf *b, const char *key)
{
	size_t n = strlen(key);
	int rc = pw_buf_add(b, key, n);

	while (!rc && b->len && (unsigned char)b->data[b->len - 1] == 0xff)
		b->len--;
	if (rc)
		return rc;
	if (!b->len)
		return pw_buf_addch(b, '\0'); /* every key */
	b->data[b->len - 1]++;
	return 0;
}

static int kv_str(const struct pw_json *j, int obj, const char *name, char **out, size_t *len,
                  struct pw_error *err)
{
	struct pw_buf b = PW_BUF_INIT;
	int n = pw_json_get(j, obj, name), rc = 0;

	b.max = PW_ETCD_MAX_ANSWER;
	if (n >= 0)
		rc = pw_json_base64(j, n, &b, err);
	if (rc) {
		pw_buf_free(&b);
		return pw_error_wrap(err, "etcd answer, %s", name);
	}
	if (!b.cap && pw_buf_grow(&b, 1)) /* a string of our own, even empty */
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	*out = pw_buf_detach(&b, len);
	return *out ? 0 : pw_error_set(err, PW_ENOMEM, "out of memory");
}

static int opt_int(const struct pw_json *j, int obj, const char *name, int64_t *out,
                   struct pw_error *err)
{
	int n = pw_json_get(j, obj, name);

	*out = 0;
	if (n < 0)
		return 0; /* proto3 leaves zero values out */
	if (pw_json_int(j, n, out, err))
		return pw_error_wrap(err, "etcd answer, %s", name);
	return 0;
}

static int header_revision(const struct pw_json *j, int obj, int64_t *rev, struct pw_error *err)
{
	int h = pw_json_get(j, obj, "header");

	if (pw_json_type(j, h) != PW_JSON_OBJECT)
		return pw_error_set(err, PW_EPROTO, "etcd answer without a header");
	return opt_int(j, h, "revision", rev, err);
}

void pw_etcd_range_free(struct pw_etcd_range *r)
{
	size_t i;

	for (i = 0; i < r->nr; i++) {
		free(r->kvs[i].key);
		free(r->kvs[i].value);
	}
	free(r->kvs);
	memset(r, 0, sizeof(*r));
}

int pw_etcd_parse_range(const char *text, size_t len, struct pw_etcd_range *out,
                        struct pw_error *err)
{
	struct pw_json j;
	int kvs, n, rc;
	size_t count = 0;

	memset(out, 0, sizeof(*out));
	pw_json_init(&j);
	if ((rc = pw_json_parse(&j, text, len, err)))
		goto done;
	if (pw_json_type(&j, 0) != PW_JSON_OBJECT) {
		rc = pw_error_set(err, PW_EPROTO, "etcd range answer is not an object");
		goto done;
	}
	if ((rc = header_revision(&j, 0, &out->revision, err)))
		goto done;
	out->more = pw_json_bool(&j, pw_json_get(&j, 0, "more"), 0);
	kvs = pw_json_get(&j, 0, "kvs");
	if (kvs < 0)
		goto done;
	if (pw_json_type(&j, kvs) != PW_JSON_ARRAY) {
		rc = pw_error_set(err, PW_EPROTO, "etcd range answer: kvs is not an array");
		goto done;
	}
	for (n = j.nodes[kvs].child; n >= 0; n = j.nodes[n].next)
		count++;
	if (count && !(out->kvs = calloc(count, sizeof(*out->kvs)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto done;
	}
	for (n = j.nodes[kvs].child; n >= 0; n = j.nodes[n].next) {
		struct pw_etcd_kv *kv = &out->kvs[out->nr];

		if (pw_json_type(&j, n) != PW_JSON_OBJECT) {
			rc = pw_error_set(err, PW_EPROTO,
			                  "etcd range answer: a kv is not an object");
			goto done;
		}
		out->nr++;
		if ((rc = kv_str(&j, n, "key", &kv->key, &kv->key_len, err)) ||
		    (rc = kv_str(&j, n, "value", &kv->value, &kv->value_len, err)) ||
		    (rc = opt_int(&j, n, "create_revision", &kv->create_revision, err)) ||
		    (rc = opt_int(&j, n, "mod_revision", &kv->mod_revision, err)) ||
		    (rc = opt_int(&j, n, "version", &kv->version, err)) ||
		    (rc = opt_int(&j, n, "lease", &kv->lease, err)))
			goto done;
	}
done:
	pw_json_free(&j);
	if (rc)
		pw_etcd_range_free(out);
	return rc;
}

int pw_etcd_range(struct pw_etcd *e, const char *key, int prefix, int serializable,
                  struct pw_etcd_range *out, struct pw_error *err)
{
	struct pw_buf body = PW_BUF_INIT, ans, end = PW_BUF_INIT;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = pw_buf_addch(&body, '{') || add_key(&body, "key", key, strlen(key));
	if (!rc && prefix)
		rc = prefix_end(&end, key) || pw_buf_addch(&body, ',') ||
		     add_key(&body, "range_end", end.data, end.len);
	if (!rc && serializable)
		rc = pw_buf_adds(&body, ",\"serializable\":true");
	if (!rc)
		rc = pw_buf_addch(&body, '}');
	pw_buf_free(&end);
	if (rc) {
		pw_buf_free(&body);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	rc = call(e, "/v3/kv/range", &body, &ans, err);
	if (!rc)
		rc = pw_etcd_parse_range(ans.data, ans.len, out, err);
	pw_buf_free(&body);
	pw_buf_free(&ans);
	return rc;
}

static int add_cmps(struct pw_buf *b, const struct pw_etcd_cmp *c, size_t n)
{
	size_t i;
	int rc = pw_buf_adds(b, "\"compare\":[");

	for (i = 0; i < n && !rc; i++) {
		rc = pw_buf_adds(b, i ? ",{" : "{") ||
		     add_key(b, "key", c[i].key, strlen(c[i].key));
		if (rc)
			break;
		if (c[i].value)
			rc = pw_buf_adds(b, ",\"result\":\"EQUAL\",\"target\":\"VALUE\",") ||
			     add_key(b, "value", c[i].value, strlen(c[i].value));
		else
			rc = pw_buf_adds(b, ",\"result\":\"EQUAL\",\"target\":\"CREATE\","
			                    "\"create_revision\":\"0\"");
		if (!rc)
			rc = pw_buf_addch(b, '}');
	}
	return rc ? rc : pw_buf_addch(b, ']');
}

static int add_ops(struct pw_buf *b, const struct pw_etcd_op *o, size_t n)
{
	size_t i;
	int rc = pw_buf_adds(b, "\"success\":[");

	for (i = 0; i < n && !rc; i++) {
		if (i)
			rc = pw_buf_addch(b, ',');
		if (!rc && o[i].value) {
			rc = pw_buf_adds(b, "{\"request_put\":{") ||
			     add_key(b, "key", o[i].key, strlen(o[i].key)) ||
			     pw_buf_addch(b, ',') ||
			     add_key(b, "value", o[i].value, strlen(o[i].value));
			if (!rc && o[i].lease)
				rc = pw_buf_addf(b, ",\"lease\":\"%lld\"", (long long)o[i].lease);
			if (!rc)
				rc = pw_buf_adds(b, "}}");
		} else if (!rc) {
			rc = pw_buf_adds(b, "{\"request_delete_range\":{") ||
			     add_key(b, "key", o[i].key, strlen(o[i].key)) || pw_buf_adds(b, "}}");
		}
	}
	return rc ? rc : pw_buf_addch(b, ']');
}

int pw_etcd_parse_txn(const char *text, size_t len, struct pw_etcd_group *groups, size_t ngroups,
                      int64_t *revision, struct pw_error *err)
{
	struct pw_json j;
	int rc, n;
	size_t i = 0;
	int64_t rev = 0;

	for (i = 0; i < ngroups; i++)
		groups[i].succeeded = 0;
	pw_json_init(&j);
	if ((rc = pw_json_parse(&j, text, len, err)))
		goto done;
	if (pw_json_type(&j, 0) != PW_JSON_OBJECT) {
		rc = pw_error_set(err, PW_EPROTO, "etcd txn answer is not an object");
		goto done;
	}
	if ((rc = header_revision(&j, 0, &rev, err)))
		goto done;
	if (ngroups == 1) {
		groups[0].succeeded = pw_json_bool(&j, pw_json_get(&j, 0, "succeeded"), 0);
		goto done;
	}
	n = pw_json_get(&j, 0, "responses");
	if (pw_json_type(&j, n) != PW_JSON_ARRAY) {
		rc = pw_error_set(err, PW_EPROTO, "etcd txn answer without responses");
		goto done;
	}
	i = 0;
	for (n = j.nodes[n].child; n >= 0; n = j.nodes[n].next, i++) {
		int t = pw_json_get(&j, n, "response_txn");

		if (i >= ngroups || pw_json_type(&j, t) != PW_JSON_OBJECT) {
			rc = pw_error_set(err, PW_EPROTO,
			                  "etcd txn answer: unexpected response %zu", i);
			goto done;
		}
		groups[i].succeeded = pw_json_bool(&j, pw_json_get(&j, t, "succeeded"), 0);
	}
	if (i != ngroups)
		rc = pw_error_set(err, PW_EPROTO, "etcd txn answer: %zu responses for %zu groups",
		                  i, ngroups);
done:
	if (rc)
		for (i = 0; i < ngroups; i++)
			groups[i].succeeded = 0;
	else if (revision)
		*revision = rev;
	pw_json_free(&j);
	return rc;
}

int pw_etcd_txn(struct pw_etcd *e, struct pw_etcd_group *groups, size_t ngroups, int64_t *revision,
                struct pw_error *err)
{
	struct pw_buf body = PW_BUF_INIT, ans;
	size_t i, ops = 0;
	int rc = 0;

	/* etcd bounds each list of a transaction (compares, operations) by
	 * --max-txn-ops; nested groups are one operation each outside */
	ops = ngroups > 1 ? ngroups : 0;
	for (i = 0; i < ngroups; i++) {
		if (groups[i].ncmps > ops)
			ops = groups[i].ncmps;
		if (groups[i].nops > ops)
			ops = groups[i].nops;
	}
	if (!ngroups || ops > PW_ETCD_MAX_TXN_OPS)
		return pw_error_set(err, PW_ETOOBIG,
		                    "%zu operations in one etcd transaction: etcd takes at most %d "
		                    "(push fewer refs at once)",
		                    ops, PW_ETCD_MAX_TXN_OPS);
	if (ngroups == 1) {
		rc = pw_buf_addch(&body, '{') || add_cmps(&body, groups[0].cmps, groups[0].ncmps) ||
		     pw_buf_addch(&body, ',') || add_ops(&body, groups[0].ops, groups[0].nops) ||
		     pw_buf_addch(&body, '}');
	} else {
		rc = pw_buf_adds(&body, "{\"success\":[");
		for (i = 0; i < ngroups && !rc; i++)
			rc = pw_buf_adds(&body, i ? ",{\"request_txn\":{" : "{\"request_txn\":{") ||
			     add_cmps(&body, groups[i].cmps, groups[i].ncmps) ||
			     pw_buf_addch(&body, ',') ||
			     add_ops(&body, groups[i].ops, groups[i].nops) ||
			     pw_buf_adds(&body, "}}");
		if (!rc)
			rc = pw_buf_adds(&body, "]}");
	}
	if (rc) {
		pw_buf_free(&body);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	rc = call(e, "/v3/kv/txn", &body, &ans, err);
	if (!rc)
		rc = pw_etcd_parse_txn(ans.data, ans.len, groups, ngroups, revision, err);
	pw_buf_free(&body);
	pw_buf_free(&ans);
	return rc;
}

int pw_etcd_lease_grant(struct pw_etcd *e, int64_t ttl, int64_t *id, struct pw_error *err)
{
	struct pw_buf body = PW_BUF_INIT, ans;
	struct pw_json j;
	int rc;

	if (pw_buf_addf(&body, "{\"TTL\":\"%lld\"}", (long long)ttl))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	pw_json_init(&j);
	rc = call(e, "/v3/lease/grant", &body, &ans, err);
	if (!rc)
		rc = pw_json_parse(&j, ans.data, ans.len, err);
	if (!rc && (rc = opt_int(&j, 0, "ID", id, err)) == 0 && !*id)
		rc = pw_error_set(err, PW_EPROTO, "etcd granted no lease: %.200s", ans.data);
	pw_json_free(&j);
	pw_buf_free(&body);
	pw_buf_free(&ans);
	return rc;
}

int pw_etcd_lease_keepalive(struct pw_etcd *e, int64_t id, int64_t *ttl, struct pw_error *err)
{
	struct pw_buf body = PW_BUF_INIT, ans;
	struct pw_json j;
	int rc, r;

	if (pw_buf_addf(&body, "{\"ID\":\"%lld\"}", (long long)id))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	pw_json_init(&j);
	rc = call(e, "/v3/lease/keepalive", &body, &ans, err);
	/* a stream of answers, one per request sent: here exactly one */
	if (!rc)
		rc = pw_json_parse(&j, ans.data, ans.len, err);
	if (!rc) {
		r = pw_json_get(&j, 0, "result");
		if (pw_json_type(&j, r) != PW_JSON_OBJECT)
			rc = pw_error_set(err, PW_EPROTO, "etcd keepalive answer without a result");
		else
			rc = opt_int(&j, r, "TTL", ttl, err);
	}
	pw_json_free(&j);
	pw_buf_free(&body);
	pw_buf_free(&ans);
	return rc;
}

/* ---- watch ---------------------------------------------------------------- */

void pw_etcd_watch_msg_free(struct pw_etcd_watch_msg *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++) {
		free(m->events[i].key);
		free(m->events[i].value);
	}
	free(m->events);
	memset(m, 0, sizeof(*m));
}

/* The events of a watch response: each {"type":"DELETE"?,"kv":{...}}. */
static int watch_events(const struct pw_json *j, int arr, struct pw_etcd_watch_msg *out,
                        struct pw_error *err)
{
	size_t count = 0;
	int n, rc;

	if (pw_json_type(j, arr) != PW_JSON_ARRAY)
		return pw_error_set(err, PW_EPROTO, "etcd watch: events is not an array");
	for (n = j->nodes[arr].child; n >= 0; n = j->nodes[n].next)
		count++;
	if (count && !(out->events = calloc(count, sizeof(*out->events))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (n = j->nodes[arr].child; n >= 0; n = j->nodes[n].next) {
		struct pw_etcd_kv *kv = &out->events[out->nr];
		int k = pw_json_get(j, n, "kv");

		if (pw_json_type(j, n) != PW_JSON_OBJECT || pw_json_type(j, k) != PW_JSON_OBJECT)
			return pw_error_set(err, PW_EPROTO, "etcd watch: an event without a kv");
		out->nr++;
		if ((rc = kv_str(j, k, "key", &kv->key, &kv->key_len, err)) ||
		    (rc = kv_str(j, k, "value", &kv->value, &kv->value_len, err)) ||
		    (rc = opt_int(j, k, "mod_revision", &kv->mod_revision, err)))
			return rc;
	}
	return 0;
}

int pw_etcd_parse_watch(const char *text, size_t len, struct pw_etcd_watch_msg *out,
                        struct pw_error *err)
{
	struct pw_json j;
	int res, ev, rc;

	memset(out, 0, sizeof(*out));
	pw_json_init(&j);
	if ((rc = pw_json_parse(&j, text, len, err)))
		goto done;
	if (pw_json_type(&j, 0) != PW_JSON_OBJECT) {
		rc = pw_error_set(err, PW_EPROTO, "etcd watch message is not an object");
		goto done;
	}
	res = pw_json_get(&j, 0, "result");
	if (pw_json_type(&j, res) != PW_JSON_OBJECT) {
		struct pw_buf msg = PW_BUF_INIT;
		int e = pw_json_get(&j, 0, "error"), m;

		msg.max = 512;
		if (pw_json_type(&j, e) == PW_JSON_OBJECT &&
		    (m = pw_json_get(&j, e, "message")) >= 0)
			pw_json_string(&j, m, &msg, NULL);
		rc = pw_error_set(err, PW_EPROTO, "etcd watch: %s",
		                  msg.len ? msg.data : "a message without a result");
		pw_buf_free(&msg);
		goto done;
	}
	if ((rc = header_revision(&j, res, &out->revision, err)) ||
	    (rc = opt_int(&j, res, "compact_revision", &out->compact_revision, err)))
		goto done;
	out->created = pw_json_bool(&j, pw_json_get(&j, res, "created"), 0);
	out->canceled = pw_json_bool(&j, pw_json_get(&j, res, "canceled"), 0);
	ev = pw_json_get(&j, res, "events");
	if (ev >= 0)
		rc = watch_events(&j, ev, out, err);
done:
	pw_json_free(&j);
	if (rc)
		pw_etcd_watch_msg_free(out);
	return rc;
}

/* The stream: bytes in, each whole top-level JSON object out. */
struct watch_stream {
	struct pw_buf buf;
	size_t scan; /* bytes of buf scanned */
	int depth, str, esc;
	int (*on_msg)(void *ctx, const struct pw_etcd_watch_msg *m);
	void *ctx;
	const int *stop;
	int rc; /* why the stream was cut */
	struct pw_error err;
};

/* One whole object at buf[0..end). */
static int watch_deliver(struct watch_stream *w, size_t end)
{
	struct pw_etcd_watch_msg m;
	int rc = pw_etcd_parse_watch(w->buf.data, end, &m, &w->err);

	if (!rc) {
		rc = w->on_msg(w->ctx, &m);
		pw_etcd_watch_msg_free(&m);
		if (rc)
			pw_error_set(&w->err, rc, "watch stopped");
	}
	memmove(w->buf.data, w->buf.data + end, w->buf.len - end);
	w->buf.len -= end;
	w->buf.data[w->buf.len] = '\0';
	w->scan = 0;
	return rc;
}

/* Scan what came for whole objects (outside of strings, braces count). */
static int watch_scan(struct watch_stream *w)
{
	while (w->scan < w->buf.len) {
		char ch = w->buf.data[w->scan++];

		if (w->str) {
			if (w->esc)
				w->esc = 0;
			else if (ch == '\\')
				w->esc = 1;
			else if (ch == '"')
				w->str = 0;
		} else if (ch == '"') {
			w->str = 1;
		} else if (ch == '{' || ch == '[') {
			w->depth++;
		} else if (ch == '}' || ch == ']') {
			if (--w->depth < 0)
				return pw_error_set(&w->err, PW_EPROTO,
				                    "etcd watch: unbalanced JSON");
			if (!w->depth) {
				int rc = watch_deliver(w, w->scan);

				if (rc)
					return rc;
			}
		} else if (!w->depth && ch != ' ' && ch != '\n' && ch != '\r' && ch != '\t') {
			return pw_error_set(&w->err, PW_EPROTO,
			                    "etcd watch: junk between messages");
		}
	}
	return 0;
}

static size_t watch_data(char *data, size_t size, size_t n, void *ctx)
{
	struct watch_stream *w = ctx;

	if (pw_buf_add(&w->buf, data, size * n)) {
		w->rc = pw_error_set(&w->err, PW_ETOOBIG,
		                     "etcd watch: a message larger than %u bytes",
		                     PW_ETCD_MAX_WATCH_MSG);
		return 0;
	}
	if ((w->rc = watch_scan(w)))
		return 0;
	return size * n;
}

int pw_etcd_watch_feed_test(const char *data, size_t len,
                            int (*on_msg)(void *ctx, const struct pw_etcd_watch_msg *m), void *ctx,
                            struct pw_error *err)
{
	struct watch_stream w;
	size_t off = 0;

	memset(&w, 0, sizeof(w));
	pw_buf_init(&w.buf, PW_ETCD_MAX_WATCH_MSG);
	w.on_msg = on_msg;
	w.ctx = ctx;
	/* in pieces of up to 7 bytes, as a network would */
	while (off < len && !w.rc) {
		size_t k = len - off < 7 ? len - off : 7;

		if (watch_data((char *)data + off, 1, k, &w) != k && !w.rc)
			w.rc = PW_ERROR;
		off += k;
	}
	if (w.rc)
		pw_error_copy(err, &w.err);
	pw_buf_free(&w.buf);
	return w.rc;
}

static int watch_progress(void *ctx, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	struct watch_stream *w = ctx;

	(void)dt, (void)dn, (void)ut, (void)un;
	return __atomic_load_n(w->stop, __ATOMIC_RELAXED) != 0;
}

static int watch_body(struct pw_buf *body, const char *prefix, int64_t start)
{
	struct pw_buf end = PW_BUF_INIT;
	int rc = pw_buf_adds(body, "{\"create_request\":{") ||
	         add_key(body, "key", prefix, strlen(prefix)) || prefix_end(&end, prefix) ||
	         pw_buf_addch(body, ',') || add_key(body, "range_end", end.data, end.len) ||
	         pw_buf_addf(body, ",\"start_revision\":\"%lld\"}}", (long long)start);

	pw_buf_free(&end);
	return rc;
}

int pw_etcd_watch(struct pw_etcd *e, const char *prefix, int64_t start_revision,
                  int (*on_msg)(void *ctx, const struct pw_etcd_watch_msg *m), void *ctx,
                  const int *stop, struct pw_error *err)
{
	struct pw_buf body = PW_BUF_INIT;
	struct curl_slist *hdrs;
	struct watch_stream w;
	char url[1024];
	CURL *c;
	CURLcode cc;
	long status = 0;
	int rc, i = __atomic_load_n(&e->preferred, __ATOMIC_RELAXED);

	if ((rc = pw_curl_load(err)))
		return rc;
	if (watch_body(&body, prefix, start_revision))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memset(&w, 0, sizeof(w));
	pw_buf_init(&w.buf, PW_ETCD_MAX_WATCH_MSG);
	w.on_msg = on_msg;
	w.ctx = ctx;
	w.stop = stop;
	hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	if (!hdrs || !(c = curl_easy_init())) {
		curl_slist_free_all(hdrs);
		pw_buf_free(&body);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	snprintf(url, sizeof(url), "%s/v3/watch", e->urls[(size_t)i % e->nr]);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)body.len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, watch_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &w);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	                 (long)(e->timeout_ms < 1000 ? e->timeout_ms : 1000));
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, watch_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &w);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	pw_buf_free(&body);
	if (w.rc) {
		pw_error_copy(err, &w.err);
		rc = w.rc;
	} else if (cc == CURLE_ABORTED_BY_CALLBACK)
		rc = 0;
	else if (cc != CURLE_OK)
		rc = pw_error_set(err, PW_EIO, "etcd watch %s: %s", url, curl_easy_strerror(cc));
	else
		rc = pw_error_set(err, PW_EIO, "etcd watch %s: the stream ended (HTTP %ld)", url,
		                  status);
	pw_buf_free(&w.buf);
	return rc;
}
