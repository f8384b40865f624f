/* The embedded server's pieces that need no git: htpasswd hash checks
 * (bcrypt and SHA-crypt hashes made once with crypt_r and openssl), the
 * errors of pw_serve_start, and a start on a free port, one request through
 * a socket with its access-log line, and a stop. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "packwire/serve.h"
#include "test.h"

static void test_passwords(void)
{
	static const char *const good[] = {
	        "$2b$05$O1Q.EQKaD33FU07QX1p9AeIhIwunLtXwZomU5pbuSM1vgTJs63Z8.",
	        "$2y$05$e4/PdR3F0cuE9ld.CEwviujZ6/h6lbISHGdt0WRetB9izHVxQvz/W",
	        "$5$abcdefgh$XEPmEiAJvPG31m/DaIsyckkv.Sxd.8NrmElXxCKFQr/",
	        "$6$abcdefgh$M/eYsB4rVXAm3ZNc88J.UD9rCKAT6FB1rahiwJCHtEndQNORCub5qhjxn50qbqVVthkM."
	        "9HpEwtf0t.iV9uH0/",
	};
	struct pw_error err;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		CHECK_EQ_INT(pw_serve_check_password(good[i], "hunter2", &err), 1);
		CHECK_EQ_INT(pw_serve_check_password(good[i], "hunter3", &err), 0);
		CHECK_EQ_INT(pw_serve_check_password(good[i], "", &err), 0);
	}
	/* a damaged hash never matches */
	CHECK_EQ_INT(pw_serve_check_password("$2b$05$O1Q.EQKaD33FU07", "hunter2", &err), 0);
	/* other kinds are refused, not guessed: apr1 (MD5), DES, plain text */
	CHECK(pw_serve_check_password("$apr1$abc$def", "x", &err) < 0);
	CHECK(strstr(err.msg, "not bcrypt") != NULL);
	CHECK(pw_serve_check_password("hunter2", "hunter2", &err) < 0);
	CHECK(pw_serve_check_password("", "", &err) < 0);
}

static void log_cb(void *ctx, const char *line)
{
	char *dst = ctx;

	snprintf(dst, 1024, "%s", line);
}

static void test_start_errors(const char *dir)
{
	struct pw_serve_opts o;
	struct pw_serve *s;
	struct pw_error err;
	char path[512];
	FILE *f;

	memset(&o, 0, sizeof(o));
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), PW_EINVAL);
	CHECK(s == NULL);
	o.base_path = "/nonexistent/packwire/base";
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), PW_ENOTFOUND);
	o.base_path = dir;
	o.listen = "not-an-address";
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), PW_EINVAL);
	o.listen = NULL;
	o.cert_file = "/nonexistent.pem";
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), PW_EINVAL); /* no key */
	o.cert_file = NULL;
	snprintf(path, sizeof(path), "%s/htpasswd", dir);
	o.auth_file = path;
	f = fopen(path, "w");
	fputs("# users\nalice:$apr1$x$y\n", f);
	fclose(f);
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), PW_EUNSUPPORTED);
	CHECK(strstr(err.msg, "htpasswd:2") != NULL);
	f = fopen(path, "w");
	fputs("no colon here\n", f);
	fclose(f);
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), PW_EINVAL);
	f = fopen(path, "w");
	fputs("# nobody\n\n", f);
	fclose(f);
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), PW_EINVAL);
	CHECK(strstr(err.msg, "no user") != NULL);
}

static void test_one_request(const char *dir)
{
	static const char req[] = "GET /none.git/info/refs HTTP/1.1\r\nHost: x\r\n"
	                          "Connection: close\r\n\r\n";
	struct pw_serve_opts o;
	struct pw_serve *s;
	struct pw_error err;
	struct sockaddr_in sin;
	char line[1024] = "", resp[4096];
	size_t got = 0;
	ssize_t n;
	int fd;

	memset(&o, 0, sizeof(o));
	o.base_path = dir;
	o.threads = 2;
	o.log = log_cb;
	o.log_ctx = line;
	CHECK_EQ_INT(pw_serve_start(&s, &o, &err), 0);
	if (!s)
		return;
	CHECK(pw_serve_port(s) > 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)pw_serve_port(s));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK_EQ_INT(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	CHECK_EQ_INT(write(fd, req, sizeof(req) - 1), (long)sizeof(req) - 1);
	while (got < sizeof(resp) - 1 && (n = read(fd, resp + got, sizeof(resp) - 1 - got)) > 0)
		got += (size_t)n;
	resp[got] = 0;
	close(fd);
	CHECK(!strncmp(resp, "HTTP/1.1 404", 12));
	pw_serve_stop(s, 5);
	/* the line is written when the request completes, before the stop returns */
	CHECK(strstr(line, "\"GET /none.git/info/refs HTTP/1.1\" 404 ") != NULL);
	CHECK(!strncmp(line, "127.0.0.1 - - [", 15));
	pw_serve_stop(NULL, 0);
}

int main(void)
{
	char dir[] = "/tmp/packwire-test-serve-XXXXXX";
	char path[600];

	signal(SIGPIPE, SIG_IGN);
	if (!mkdtemp(dir))
		return 1;
	test_passwords();
	test_start_errors(dir);
	test_one_request(dir);
	snprintf(path, sizeof(path), "%s/htpasswd", dir);
	unlink(path);
	rmdir(dir);
	return pw_test_done();
}
