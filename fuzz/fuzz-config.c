/* Fuzz the config parser and the typed getters on every key it returns. */
#include <stdint.h>
#include <stdlib.h>

#include "packwire/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pw_config *cfg;
	struct pw_error err = {0};
	size_t i;

	if (pw_config_parse(&cfg, (const char *)data, size, "fuzz", &err))
		return 0;
	for (i = 0; i < pw_config_count(cfg); i++) {
		const struct pw_config_entry *e = pw_config_at(cfg, i);
		const char *s;
		int b, n;
		int64_t v;
		char *canon = pw_config_canonical_key(e->key);

		pw_config_get_string(cfg, e->key, &s, &err);
		pw_config_get_bool(cfg, e->key, &b, &err);
		pw_config_get_int(cfg, e->key, &n, &err);
		pw_config_get_int64(cfg, e->key, &v, &err);
		free(canon);
	}
	pw_config_free(cfg);
	return 0;
}
