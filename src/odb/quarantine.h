/* A quarantine object directory for a push: incoming objects are written to
 * objects/tmp_objdir-incoming-XXXXXX (with pack/ and an alternates file
 * pointing at the main object directory, so lookups see both) and only moved
 * into the repository once the push is accepted. */
#ifndef PW_ODB_QUARANTINE_H
#define PW_ODB_QUARANTINE_H

#include "packwire/error.h"

/* Create the directory; *dir gets its absolute path (malloc'd). */
int pw_quarantine_create(char **dir, const char *objects_dir, struct pw_error *err);
/* Move its packs (.idx last, so no reader sees an idx without its pack) and
 * loose objects into objects_dir. Existing files of the same name are kept
 * (same name, same content). */
int pw_quarantine_migrate(const char *dir, const char *objects_dir, struct pw_error *err);
/* Remove the directory and everything in it. */
void pw_quarantine_remove(const char *dir);

#endif
