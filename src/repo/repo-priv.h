/* Library-internal hooks the repo layer offers the layers above it. */
#ifndef PW_REPO_PRIV_H
#define PW_REPO_PRIV_H

struct pw_repo;

/* A slot in the handle where a higher layer keeps a cache of its own; the
 * handle calls free_fn(data) when it is freed (free_fn NULL: nothing to do). */
struct pw_repo_slot {
	void *data;
	void (*free_fn)(void *data);
};
/* The slot of the refs layer (its packed-refs cache). */
struct pw_repo_slot *pw_repo__refs_slot(struct pw_repo *repo);

/* 1 when name follows Git's ref-name rules (at least two components unless
 * allow_onelevel), else 0. pw_refname_is_valid is this. */
int pw_repo__refname_ok(const char *name, int allow_onelevel);

#endif
