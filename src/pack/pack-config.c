/* The pack writer's options from a repository's configuration, so that every
 * pack the library writes (upload-pack, push, pack-objects) honours them. */
#include "packwire/config.h"
#include "packwire/pack-write.h"

void pw_pack_write_opts_from_config(struct pw_pack_write_opts *o, const struct pw_config *cfg)
{
	int v;

	if (!cfg)
		return;
	if (!pw_config_get_int(cfg, "pack.window", &v, NULL))
		o->window = v;
	if (!pw_config_get_int(cfg, "pack.depth", &v, NULL))
		o->depth = v;
	/* pack.compression wins over core.compression */
	if (!pw_config_get_int(cfg, "core.compression", &v, NULL))
		o->compression = v;
	if (!pw_config_get_int(cfg, "pack.compression", &v, NULL))
		o->compression = v;
	if (!pw_config_get_int(cfg, "pack.threads", &v, NULL))
		o->threads = v;
}
