/* Internals shared by refs.c and tx.c. */
#ifndef PW_REFS_PRIV_H
#define PW_REFS_PRIV_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "packwire/error.h"
#include "packwire/hash.h"

struct pw_repo;

struct pw_packed_ref {
	char *name;
	struct pw_oid oid, peeled;
	int has_peeled;
};

/* A parsed packed-refs file, sorted by name, with the stat data it was
 * read with (to notice when another process rewrote it). */
struct pw_packed {
	struct pw_packed_ref *v;
	size_t nr;
	int peeled, fully_peeled, sorted; /* header traits */
	int exists;
	ino_t ino;
	off_t size;
	int64_t mtime_sec, mtime_nsec;
};

int pw_packed__parse(struct pw_packed **out, const char *data, size_t len,
                     const struct pw_hash_algo *algo, const char *path, struct pw_error *err);
void pw_packed__free(struct pw_packed *p);
/* Every ref name (loose and packed, under refs/), sorted, deduplicated. */
int pw_refs__all_names(struct pw_repo *repo, char ***names, size_t *nr);
void pw_refs__free_names(char **names, size_t nr);

/* The packed-refs cache (re-read when the file changed). */
int pw_refs__packed(struct pw_repo *repo, struct pw_packed **out);
void pw_refs__packed_invalidate(struct pw_repo *repo);
struct pw_packed_ref *pw_refs__packed_find(struct pw_packed *p, const char *name);
/* A loose ref file only: 0, PW_ENOTFOUND or PW_ECORRUPT. */
int pw_refs__loose_read(struct pw_repo *repo, const char *name, struct pw_oid *oid, char **symref);

#endif
