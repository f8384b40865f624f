/* Shared by rev-list and pack-objects: revision arguments into a walk, and a
 * progress printer for stderr. */
#ifndef PW_CLI_REVARGS_H
#define PW_CLI_REVARGS_H

#include <stdint.h>

#include "packwire/odb.h"
#include "packwire/revlist.h"

struct pw_repo;

struct pw_cli_revs {
	struct pw_repo *repo;
	struct pw_odb *odb;
	const struct pw_hash_algo *algo;
	struct pw_revlist *rl;
	int not_flag; /* after --not: tips become exclusions and back */
	/* every tip and exclusion added, for the bitmap path of pack-objects */
	struct pw_oid *tips;
	unsigned char *exclude;
	size_t ntips, atips;
};

/* Free what pw_cli_revs_add recorded (not the repo, odb or walk). */
void pw_cli_revs_release(struct pw_cli_revs *r);

/* Resolve "<name>[~N|^N|^{type}]..." to an object id; on failure prints a
 * fatal message and returns its exit code. */
int pw_cli_revs_resolve(struct pw_cli_revs *r, const char *arg, struct pw_oid *oid);
/* One argument: "X", "^X", "A..B", "--not", "--all". 0 or an exit code. */
int pw_cli_revs_add(struct pw_cli_revs *r, const char *arg);
/* Every ref and HEAD as tips (exclusions after --not). */
int pw_cli_revs_add_all(struct pw_cli_revs *r);

/* "Title: 42% (n/N)" on stderr, ", done." at the end. */
void pw_cli_progress(void *data, const char *title, uint64_t n, uint64_t total, int done);

#endif
