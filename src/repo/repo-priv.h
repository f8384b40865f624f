/* Library-internal hooks between the repo handle and the refs layer. */
#ifndef PW_REPO_PRIV_H
#define PW_REPO_PRIV_H

struct pw_repo;

/* A slot in the handle where the refs layer keeps its packed-refs cache. */
void **pw_repo__refs_slot(struct pw_repo *repo);
/* Frees what the refs layer put in the slot (NULL is fine). */
void pw_refs__free_cache(void *cache);

#endif
