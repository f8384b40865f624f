/* The etcd client against a real etcd (Debian's etcd-server) on loopback:
 * range, txn with compares (one group and nested groups), leases, and the
 * fall-over to the next endpoint when the first is down. Starts its own
 * etcd on free ports and stops it by pid; without /usr/bin/etcd it says it
 * skipped (and counts one check, so that it passes). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster/etcd.h"
#include "test.h"

extern char **environ;

static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		return -1;
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int main(void)
{
	char dir[] = "/tmp/pw-test-etcd-XXXXXX", url[64], purl[64], cluster[128], data[128],
	     eps[160], cmd[256];
	struct pw_etcd *e = NULL;
	struct pw_etcd_range r;
	struct pw_error err;
	pid_t pid;
	int cport, pport, dead, i, rc = -1;
	int64_t rev = 0, lease = 0, ttl = 0;

	if (access("/usr/bin/etcd", X_OK)) {
		printf("skipped: /usr/bin/etcd missing (apt-get install etcd-server)\n");
		CHECK(1);
		return pw_test_done();
	}
	if (!mkdtemp(dir) || (cport = free_port()) < 0 || (pport = free_port()) < 0 ||
	    (dead = free_port()) < 0)
		return 1;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", cport);
	snprintf(purl, sizeof(purl), "http://127.0.0.1:%d", pport);
	snprintf(cluster, sizeof(cluster), "t=%s", purl);
	snprintf(data, sizeof(data), "%s/data", dir);
	{
		char *argv[] = {"etcd",  "--name",
		                "t",     "--data-dir",
		                data,    "--listen-client-urls",
		                url,     "--advertise-client-urls",
		                url,     "--listen-peer-urls",
		                purl,    "--initial-advertise-peer-urls",
		                purl,    "--initial-cluster",
		                cluster, "--log-level",
		                "error", NULL};
		if (posix_spawn(&pid, "/usr/bin/etcd", NULL, NULL, argv, environ))
			return 1;
	}
	/* endpoints: a dead one first, so every call falls over */
	snprintf(eps, sizeof(eps), "etcd:http://127.0.0.1:%d,%s", dead, url);
	CHECK_EQ_INT(pw_etcd_new(&e, eps, 2000, &err), 0);
	for (i = 0; i < 100 && rc; i++) {
		struct timespec ts = {0, 100000000};
		rc = pw_etcd_range(e, "/t/", 1, 0, &r, &err);
		if (rc)
			nanosleep(&ts, NULL);
	}
	CHECK_EQ_INT(rc, 0);
	if (!rc) {
		struct pw_etcd_cmp absent = {"/t/a", NULL}, is_x = {"/t/a", "x"},
		                   b_abs = {"/t/b", NULL};
		struct pw_etcd_op put_x = {"/t/a", "x", 0}, put_y = {"/t/a", "y", 0},
		                  put_b = {"/t/b", "1", 0}, del_a = {"/t/a", NULL, 0};
		struct pw_etcd_group g[2];

		CHECK_EQ_INT(r.nr, 0);
		pw_etcd_range_free(&r);
		/* create when absent; the second try loses */
		memset(g, 0, sizeof(g));
		g[0].cmps = &absent, g[0].ncmps = 1, g[0].ops = &put_x, g[0].nops = 1;
		CHECK_EQ_INT(pw_etcd_txn(e, g, 1, &rev, &err), 0);
		CHECK(g[0].succeeded && rev > 0);
		CHECK_EQ_INT(pw_etcd_txn(e, g, 1, &rev, &err), 0);
		CHECK(!g[0].succeeded);
		/* two groups in one request: one applies, one does not */
		g[0].cmps = &is_x, g[0].ops = &put_y;
		g[1].cmps = &absent, g[1].ncmps = 1, g[1].ops = &put_b, g[1].nops = 1;
		g[1].cmps = &b_abs;
		CHECK_EQ_INT(pw_etcd_txn(e, g, 2, &rev, &err), 0);
		CHECK(g[0].succeeded && g[1].succeeded);
		CHECK_EQ_INT(pw_etcd_txn(e, g, 2, &rev, &err), 0);
		CHECK(!g[0].succeeded && !g[1].succeeded);
		CHECK_EQ_INT(pw_etcd_range(e, "/t/", 1, 0, &r, &err), 0);
		CHECK(r.nr == 2 && !strcmp(r.kvs[0].key, "/t/a") && !strcmp(r.kvs[0].value, "y") &&
		      !strcmp(r.kvs[1].value, "1") && r.revision == rev);
		pw_etcd_range_free(&r);
		CHECK_EQ_INT(pw_etcd_range(e, "/t/a", 0, 1, &r, &err), 0);
		CHECK(r.nr == 1);
		pw_etcd_range_free(&r);
		/* delete */
		g[0].cmps = NULL, g[0].ncmps = 0, g[0].ops = &del_a;
		CHECK_EQ_INT(pw_etcd_txn(e, g, 1, &rev, &err), 0);
		CHECK_EQ_INT(pw_etcd_range(e, "/t/a", 0, 0, &r, &err), 0);
		CHECK_EQ_INT(r.nr, 0);
		pw_etcd_range_free(&r);
		/* leases: a key with a lease goes when the lease is gone */
		CHECK_EQ_INT(pw_etcd_lease_grant(e, 30, &lease, &err), 0);
		CHECK_EQ_INT(pw_etcd_lease_keepalive(e, lease, &ttl, &err), 0);
		CHECK(ttl > 20 && ttl <= 30);
		CHECK_EQ_INT(pw_etcd_lease_keepalive(e, lease + 12345, &ttl, &err), 0);
		CHECK_EQ_INT(ttl, 0);
		/* an etcd error comes back as a message */
		{
			struct pw_etcd_op many[129];
			memset(many, 0, sizeof(many));
			g[0].ops = many, g[0].nops = 129;
			CHECK_EQ_INT(pw_etcd_txn(e, g, 1, &rev, &err), PW_ETOOBIG);
			CHECK(strstr(err.msg, "at most 128") != NULL);
		}
	} else {
		fprintf(stderr, "%s\n", err.msg);
	}
	pw_etcd_free(e);
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
	/* nothing answers now: a clear error, soon */
	CHECK_EQ_INT(pw_etcd_new(&e, url, 500, &err), 0);
	CHECK_EQ_INT(pw_etcd_range(e, "/t/", 1, 0, &r, &err), PW_EIO);
	CHECK(strstr(err.msg, "cannot reach etcd") != NULL);
	pw_etcd_free(e);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return pw_test_done();
}
