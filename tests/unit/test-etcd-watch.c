/* etcd's watch stream as the JSON gateway sends it (cluster/etcd.h):
 * messages split anywhere, created / events / DELETE / canceled, and
 * malformed and hostile streams (junk between messages, unbalanced JSON,
 * an error object, a message over the size bound). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/etcd.h"
#include "test.h"

struct seen {
	int created, canceled, msgs;
	size_t events, deletes;
	int64_t revision, compact;
	char first_key[128];
};

static int on_msg(void *ctx, const struct pw_etcd_watch_msg *m)
{
	struct seen *s = ctx;
	size_t i;

	s->msgs++;
	s->created += m->created;
	s->canceled += m->canceled;
	s->events += m->nr;
	s->revision = m->revision;
	s->compact = m->compact_revision;
	for (i = 0; i < m->nr; i++) {
		if (!m->events[i].value_len)
			s->deletes++;
		if (!s->first_key[0])
			snprintf(s->first_key, sizeof(s->first_key), "%s", m->events[i].key);
	}
	return 0;
}

static int feed(const char *text, struct seen *s)
{
	struct pw_error e;

	memset(s, 0, sizeof(*s));
	return pw_etcd_watch_feed_test(text, strlen(text), on_msg, s, &e);
}

int main(void)
{
	struct seen s;
	char *big;
	/* "/packwire/refs/x.git:refs/heads/main", "sha1:11..." */
	const char *stream =
	        "{\"result\":{\"header\":{\"cluster_id\":\"1\",\"revision\":\"5\"},\"created\":"
	        "true}}\n"
	        "{\"result\":{\"header\":{\"revision\":\"6\"},\"events\":["
	        "{\"kv\":{\"key\":\"L3BhY2t3aXJlL3JlZnMveC5naXQ6cmVmcy9oZWFkcy9tYWlu\","
	        "\"value\":\"c2hhMToxMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMTExMQ==\","
	        "\"mod_revision\":\"6\"}},"
	        "{\"type\":\"DELETE\",\"kv\":{\"key\":"
	        "\"L3BhY2t3aXJlL3JlZnMveC5naXQ6cmVmcy9oZWFkcy9tYWlu\","
	        "\"mod_revision\":\"6\"}}]}}\n";

	CHECK_EQ_INT(feed(stream, &s), 0);
	CHECK_EQ_INT(s.msgs, 2);
	CHECK_EQ_INT(s.created, 1);
	CHECK(s.events == 2 && s.deletes == 1 && s.revision == 6);
	CHECK_STR(s.first_key, "/packwire/refs/x.git:refs/heads/main");
	/* braces and quotes inside strings do not split messages */
	CHECK_EQ_INT(feed("{\"result\":{\"header\":{\"x\":\"}{\\\"\"},\"created\":true}}", &s), 0);
	CHECK_EQ_INT(s.msgs, 1);
	CHECK_EQ_INT(feed("{\"result\":{\"header\":{\"revision\":\"9\"},\"canceled\":true,"
	                  "\"compact_revision\":\"8\"}}",
	                  &s),
	             0);
	CHECK(s.canceled == 1 && s.compact == 8);
	/* nothing, or a message cut short: no message, no error */
	CHECK_EQ_INT(feed("", &s), 0);
	CHECK_EQ_INT(feed("{\"result\":{\"header\":{}", &s), 0);
	CHECK_EQ_INT(s.msgs, 0);
	/* malformed */
	CHECK_EQ_INT(
	        feed("{\"error\":{\"grpc_code\":14,\"message\":\"etcdserver: no leader\"}}", &s),
	        PW_EPROTO);
	CHECK_EQ_INT(feed("{\"result\":{\"header\":{}}} junk", &s), PW_EPROTO);
	CHECK_EQ_INT(feed("}", &s), PW_EPROTO);
	CHECK_EQ_INT(feed("{\"result\":{\"header\":{}}}}", &s), PW_EPROTO);
	CHECK_EQ_INT(feed("{\"result\":{}}", &s), PW_EPROTO); /* no header */
	CHECK_EQ_INT(feed("{\"result\":{\"header\":{},\"events\":{}}}", &s), PW_EPROTO);
	CHECK_EQ_INT(feed("{\"result\":{\"header\":{},\"events\":[{\"type\":\"PUT\"}]}}", &s),
	             PW_EPROTO);
	CHECK(feed("{\"result\":{\"header\":{},\"events\":[{\"kv\":{\"key\":\"!!!\"}}]}}", &s) !=
	      0);
	CHECK_EQ_INT(feed("[1]", &s), PW_EPROTO);
	/* one message over the bound: the stream is cut, nothing allocated past it */
	big = malloc(PW_ETCD_MAX_WATCH_MSG + 64);
	CHECK(big != NULL);
	if (big) {
		memset(big, ' ', PW_ETCD_MAX_WATCH_MSG + 63);
		big[0] = '{';
		big[1] = '"';
		big[PW_ETCD_MAX_WATCH_MSG + 63] = '\0';
		CHECK_EQ_INT(feed(big, &s), PW_ETOOBIG);
		free(big);
	}
	return pw_test_done();
}
