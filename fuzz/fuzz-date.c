/* Fuzz pw_date_parse (--shallow-since): the input is the date string; "now"
 * is fixed. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/date.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_error err;
	int64_t t;
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (!pw_date_parse(s, 1700000000, &t, &err) && t < 0)
		__builtin_trap();
	free(s);
	return 0;
}
