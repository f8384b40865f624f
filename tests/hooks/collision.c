/* Test hook linked into packwire-test-hooks (a copy of the CLI for the
 * tests, never installed): PW_TEST_COLLISION=<hex>[,<hex>...] makes the SHA-1
 * collision detector report those digests as attacks, so that the tests can
 * follow a detection through index-pack, receive-pack, fetch and clone with
 * an ordinary object (a real colliding object would need a new attack). */
#include <stdlib.h>
#include <string.h>

#include "hash/sha1dc-priv.h"

#define MAX_TARGETS 16

static uint8_t targets[MAX_TARGETS][20];
static int ntargets;

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int is_target(const uint8_t digest[20])
{
	int i;

	for (i = 0; i < ntargets; i++)
		if (!memcmp(targets[i], digest, 20))
			return 1;
	return 0;
}

__attribute__((constructor)) static void install(void)
{
	const char *p = getenv("PW_TEST_COLLISION");

	while (p && *p && ntargets < MAX_TARGETS) {
		int i;

		for (i = 0; i < 20; i++) {
			int hi = hexval(p[2 * i]), lo = hi < 0 ? -1 : hexval(p[2 * i + 1]);

			if (hi < 0 || lo < 0)
				return;
			targets[ntargets][i] = (uint8_t)(hi << 4 | lo);
		}
		ntargets++;
		p += 40;
		if (*p == ',')
			p++;
	}
	if (ntargets)
		pw_sha1dc__test_collision = is_target;
}
