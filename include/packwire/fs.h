/* File-system helpers a program around the library needs as well: reading a
 * whole file, creating a directory path, joining paths. They keep no state
 * and may be called from any thread. */
#ifndef PACKWIRE_FS_H
#define PACKWIRE_FS_H

#include "packwire/export.h"

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"

/* Read a whole file into out (replacing its content; out stays the caller's
 * to free). PW_ENOTFOUND when it does not exist, PW_ETOOBIG when it is larger
 * than max bytes (0 = no bound), PW_ENOMEM, or PW_EIO on other failures;
 * err says why. */
PW_API int pw_fs_read_file(const char *path, struct pw_buf *out, size_t max, struct pw_error *err);
/* mkdir -p with mode 0777 (umask applies): 0 when the directory exists
 * afterwards, else PW_EIO (or PW_ENOMEM) with err set. */
PW_API int pw_fs_mkdir_p(const char *path, struct pw_error *err);
/* Join a directory and a name with one '/'. The result is malloc'd (free()
 * it); NULL when out of memory. */
PW_API char *pw_path_join(const char *dir, const char *name);

#endif
