/* A progress printer for stderr, shared by pack-objects and push. */
#ifndef PW_CLI_PROGRESS_H
#define PW_CLI_PROGRESS_H

#include <stdint.h>

/* "Title: 42% (n/N)" on stderr, ", done." at the end. */
void pw_cli_progress(void *data, const char *title, uint64_t n, uint64_t total, int done);

#endif
