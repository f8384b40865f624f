/* The receive-pack command list parser, on both algorithms. */
#include <stdio.h>
#include <string.h>

#include "server/receive-cmds.h"
#include "test.h"

static void run(const struct pw_hash_algo *algo)
{
	const struct pw_hash_algo *other = algo == &pw_hash_sha1 ? &pw_hash_sha256 : &pw_hash_sha1;
	struct pw_receive_cmds c;
	struct pw_error err;
	char line[512], a[80], b[80], z[80];
	struct pw_str caps;
	size_t n;

	memset(a, 'a', algo->hexsz);
	a[algo->hexsz] = '\0';
	memset(b, 'b', algo->hexsz);
	b[algo->hexsz] = '\0';
	memset(z, '0', algo->hexsz);
	z[algo->hexsz] = '\0';

	pw_receive_cmds_init(&c, algo);
	n = (size_t)snprintf(line, sizeof(line),
	                     "%s %s refs/heads/main%c report-status "
	                     "object-format=%s\n",
	                     a, b, '\0', algo->name);
	pw_receive_line_caps(line, n, &caps);
	CHECK(caps.len == strlen(" report-status object-format=") + strlen(algo->name));
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, line, n, &err), 0);
	CHECK_STR(c.v[0].name, "refs/heads/main");
	CHECK(!pw_oid_is_zero(&c.v[0].old_oid) && c.v[0].new_oid.algo == algo->id);
	CHECK(strstr(c.caps, "report-status") != NULL);
	n = (size_t)snprintf(line, sizeof(line), "%s %s refs/tags/v1\n", b, z);
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, line, n, &err), 0);
	CHECK(pw_oid_is_zero(&c.v[1].new_oid));
	/* the same ref twice is two commands (Git runs both, in order) */
	n = (size_t)snprintf(line, sizeof(line), "%s %s refs/tags/v1\n", z, b);
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, line, n, &err), 0);
	CHECK(c.nr == 3);
	pw_receive_cmds_free(&c);

	/* ids of the other algorithm, short lines, no name, bad hex */
	pw_receive_cmds_init(&c, algo);
	memset(line, 'c', other->hexsz);
	n = (size_t)snprintf(line + other->hexsz, sizeof(line) - other->hexsz, " ") + other->hexsz;
	memset(line + n, 'd', other->hexsz);
	n += other->hexsz;
	n += (size_t)snprintf(line + n, sizeof(line) - n, " refs/heads/x\n");
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, line, n, &err), PW_EPROTO);
	CHECK(strstr(err.msg, algo->name) != NULL);
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, "x y z", 5, &err), PW_EPROTO);
	n = (size_t)snprintf(line, sizeof(line), "%s %s \n", a, b);
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, line, n, &err), PW_EPROTO);
	n = (size_t)snprintf(line, sizeof(line), "%s %s refs/heads/x\n", a, b);
	line[3] = 'g';
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, line, n, &err), PW_EPROTO);
	CHECK_EQ_INT((int)c.nr, 0);
	/* without capabilities */
	n = (size_t)snprintf(line, sizeof(line), "%s %s refs/heads/x", z, b);
	CHECK_EQ_INT(pw_receive_cmds_add_line(&c, line, n, &err), 0);
	CHECK_STR(c.caps, "");
	CHECK_STR(c.v[0].name, "refs/heads/x");
	pw_receive_cmds_free(&c);
}

int main(void)
{
	run(&pw_hash_sha1);
	run(&pw_hash_sha256);
	return pw_test_done();
}
