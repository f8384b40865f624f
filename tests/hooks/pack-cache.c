/* Test hook linked into packwire-test-hooks (a copy of the CLI for the
 * tests, never installed): PW_TEST_PACK_CACHE_DELAY_MS=<n> makes a pack
 * cache generation pause n milliseconds after each record it writes, so
 * that a test can meet a generation in progress every time: join it,
 * kill its writer or its client halfway. */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "server/pack-cache.h"

static long delay_ms;

static void pause_after_record(uint64_t end)
{
	struct timespec ts = {delay_ms / 1000, (delay_ms % 1000) * 1000000};

	(void)end;
	nanosleep(&ts, NULL);
}

__attribute__((constructor)) static void install(void)
{
	const char *v = getenv("PW_TEST_PACK_CACHE_DELAY_MS");

	if (v && (delay_ms = atol(v)) > 0 && delay_ms < 100000)
		pw_pack_cache__test_record_written = pause_after_record;
}
