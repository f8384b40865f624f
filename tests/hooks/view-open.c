/* Test hook linked into packwire-test-hooks (a copy of the CLI for the
 * tests, never installed): PW_TEST_VIEW_OPENED=<dir> stops the first
 * request that has the stored view's odb, before it opens the view's pack
 * and bitmap: it creates <dir>/opened, then waits until a line can be read
 * from the FIFO <dir>/go. Meanwhile a test publishes a new generation and
 * removes the one the request read from `current`. */
#include <stdio.h>
#include <stdlib.h>

#include "server/compat-serve.h"

static const char *dir;

static void stop_once(void)
{
	char path[4096], line[64];
	FILE *f;

	pw_srv__test_view_opened = NULL;
	if (snprintf(path, sizeof(path), "%s/opened", dir) >= (int)sizeof(path))
		return;
	if ((f = fopen(path, "w")))
		fclose(f);
	if (snprintf(path, sizeof(path), "%s/go", dir) >= (int)sizeof(path) ||
	    !(f = fopen(path, "r")))
		return;
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
}

__attribute__((constructor)) static void install(void)
{
	dir = getenv("PW_TEST_VIEW_OPENED");
	if (dir && *dir)
		pw_srv__test_view_opened = stop_once;
}
