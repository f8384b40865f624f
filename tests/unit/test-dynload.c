/* Libraries opened at first use: libcurl and libmicrohttpd are not in the
 * process until HTTP is used, and a missing library or symbol is a clear
 * error. */
#include <stdio.h>
#include <string.h>

/* The tables are looked at directly: no curl_* / MHD_* redirections. */
#define PW_CURL_LOAD_IMPL 1
#define PW_MHD_LOAD_IMPL  1

#include "packwire/packwire.h"
#include "server/mhd-load.h"
#include "test.h"
#include "transport/curl-load.h"
#include "util/dynload.h"

/* 1 when a mapping of this process names lib. */
static int mapped(const char *lib)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, lib))
			found = 1;
	fclose(f);
	return found;
}

static void test_dynload_errors(void)
{
	char why[256];
	void *fn = NULL;
	struct pw_dynsym missing_lib[] = {{"zlibVersion", &fn}};
	struct pw_dynsym missing_sym[] = {{"zlibVersion", &fn}, {"pw_no_such_symbol", &fn}};

	CHECK_EQ_INT(pw_dynload("libpw-no-such-library.so.7", "testing", missing_lib, 1, why,
	                        sizeof(why)),
	             -1);
	CHECK(strstr(why, "cannot load libpw-no-such-library.so.7 (needed for testing)") != NULL);
	CHECK_EQ_INT(pw_dynload("libz.so.1", "testing", missing_sym, 2, why, sizeof(why)), -1);
	CHECK(strstr(why, "libz.so.1 (needed for testing) has no symbol pw_no_such_symbol") !=
	      NULL);
	fn = NULL;
	CHECK_EQ_INT(pw_dynload("libz.so.1", "testing", missing_lib, 1, why, sizeof(why)), 0);
	CHECK(fn != NULL);
}

static void test_loaded_on_use(void)
{
	struct pw_error err = {0};

	/* Not linked: nothing of libcurl or libmicrohttpd before first use. */
	CHECK_EQ_INT(mapped("libcurl"), 0);
	CHECK_EQ_INT(mapped("libmicrohttpd"), 0);
	CHECK_EQ_INT(pw_curl_load(&err), 0);
	CHECK_EQ_INT(mapped("libcurl"), 1);
	CHECK(pw_curl__api.curl_easy_init != NULL && pw_curl__api.curl_slist_free_all != NULL);
	CHECK_EQ_INT(pw_curl_load(&err), 0); /* once per process */
	CHECK_EQ_INT(pw_mhd_load(&err), 0);
	CHECK_EQ_INT(mapped("libmicrohttpd"), 1);
	CHECK(pw_mhd__api.MHD_start_daemon != NULL && pw_mhd__api.MHD_free != NULL);
	pw_error_clear(&err);
}

int main(void)
{
	test_dynload_errors();
	test_loaded_on_use();
	return pw_test_done();
}
