/* The parser of the commands Git writes to a remote helper: "get <url>
 * <path>" (bundle URIs) and its malformed forms, beside the other verbs
 * (the algorithm plays no part here: ids in fetch lines of both lengths). */
#include <string.h>

#include "packwire/helper.h"
#include "test.h"

static int parse(const char *line, struct pw_helper_cmd *c, struct pw_error *err)
{
	return pw_helper_cmd_parse(line, strlen(line), c, err);
}

static int arg_is(const char *p, size_t n, const char *want)
{
	return p && n == strlen(want) && !memcmp(p, want, n);
}

int main(void)
{
	struct pw_helper_cmd c;
	struct pw_error err;
	static const char *const bad[] = {"get",      "get ",     "get nospace",
	                                  "get  /p",  "get u ",   "get\tu p",
	                                  "getx u p", "get u\np", NULL};
	char fetch[200];
	size_t i;

	CHECK_EQ_INT(parse("get https://h/x.bundle /tmp/a dir/b.bundle", &c, &err), 0);
	CHECK_EQ_INT(c.kind, PW_HCMD_GET);
	CHECK(arg_is(c.arg, c.arg_len, "https://h/x.bundle"));
	CHECK(arg_is(c.arg2, c.arg2_len, "/tmp/a dir/b.bundle"));
	for (i = 0; bad[i]; i++) {
		CHECK_EQ_INT(parse(bad[i], &c, &err), PW_EPROTO);
		CHECK(strstr(err.msg, "get") != NULL || strstr(err.msg, "control") != NULL);
	}
	CHECK(!parse("get u p", &c, &err) && !strcmp(bad[0], "get"));
	CHECK_EQ_INT(parse("capabilities", &c, &err), 0);
	CHECK_EQ_INT(c.kind, PW_HCMD_CAPABILITIES);
	for (i = 40; i <= 64; i += 24) {
		memset(fetch, 0, sizeof(fetch));
		memcpy(fetch, "fetch ", 6);
		memset(fetch + 6, 'a', i);
		strcat(fetch, " refs/heads/main");
		CHECK_EQ_INT(parse(fetch, &c, &err), 0);
		CHECK_EQ_INT(c.kind, PW_HCMD_FETCH);
		CHECK_EQ_INT(c.arg_len, i);
	}
	return pw_test_done();
}
