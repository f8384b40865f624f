/* Dumb HTTP's files on the serving side: what a server that runs no Git
 * program offers (info/refs and objects/info/packs beside the objects). */
#ifndef PACKWIRE_DUMB_H
#define PACKWIRE_DUMB_H

#include "packwire/export.h"

#include "packwire/error.h"
#include "packwire/repo.h"

/* git update-server-info: write $GIT_DIR/info/refs and objects/info/packs
 * for dumb HTTP clients, byte for byte as Git writes them. A file whose
 * content is unchanged is left alone unless force. Uses repo: one thread at a
 * time per handle. */
PW_API int pw_update_server_info(struct pw_repo *repo, int force, struct pw_error *err);

#endif
