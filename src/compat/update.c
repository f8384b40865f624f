/* Keeping the compat map current: the entries of objects that arrive after
 * `compat build` (a push, a fetch, index-pack), written crash-safely (a
 * side file through a renamed temporary file, loose-object-idx rewritten
 * under its lock and renamed), so that a killed update leaves the old map
 * or the new one. */
#include <stdlib.h>
#include <string.h>

#include "compat/map-priv.h"
#include "odb/idx.h"
#include "packwire/odb.h"
#include "packwire/repo.h"
#include "util/fs.h"

int pw_compat__pack_map_write(const char *idx_path, const struct pw_hash_algo *storage,
                              pw_compat_lookup_fn lookup, void *lookup_data,
                              void (*before)(void *, const char *, const char *), void *before_data,
                              uint64_t *bytes, struct pw_error *err)
{
	const struct pw_hash_algo *compat =
	        storage->id == PW_HASH_SHA1 ? &pw_hash_sha256 : &pw_hash_sha1;
	struct pw_idx *idx = NULL;
	struct pw_buf file = PW_BUF_INIT;
	char *map_path = NULL;
	uint8_t *ids = NULL;
	size_t n = strlen(idx_path);
	int rc;

	if (n < 4 || strcmp(idx_path + n - 4, ".idx"))
		return pw_error_set(err, PW_EINVAL, "%s: not an .idx path", idx_path);
	if ((rc = pw_idx_open(&idx, idx_path, storage, err)))
		return rc;
	map_path = malloc(n + 4);
	ids = malloc((size_t)idx->nr * compat->rawsz + 1);
	if (!map_path || !ids) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	memcpy(map_path, idx_path, n - 3);
	memcpy(map_path + n - 3, "compat", 7);
	for (uint32_t i = 0; i < idx->nr; i++) {
		struct pw_oid s, c;
		char hex[PW_MAX_HEXSZ + 1];

		pw_idx_nth_oid(idx, i, &s);
		rc = lookup(lookup_data, &s, &c);
		if (!rc && c.algo != compat->id)
			rc = PW_EINVAL;
		if (rc) {
			rc = pw_error_set(err, rc == PW_ENOMEM ? rc : PW_ENOTFOUND,
			                  "%s: object %s has no %s id", idx_path,
			                  pw_oid_to_hex(&s, hex), compat->name);
			goto out;
		}
		memcpy(ids + (size_t)i * compat->rawsz, c.id, compat->rawsz);
	}
	if ((rc = pw_compat_pack_map_encode(&file, storage, idx->pack_checksum, ids, idx->nr, err)))
		goto out;
	rc = pw_compat_write_durable(map_path, file.data, file.len, before, before_data, err);
	if (!rc && bytes)
		*bytes = file.len;
out:
	pw_buf_free(&file);
	free(ids);
	free(map_path);
	pw_idx_free(idx);
	return rc;
}

int pw_compat_pack_map_write(const char *idx_path, const struct pw_hash_algo *storage,
                             pw_compat_lookup_fn lookup, void *lookup_data, struct pw_error *err)
{
	return pw_compat__pack_map_write(idx_path, storage, lookup, lookup_data, NULL, NULL, NULL,
	                                 err);
}

static int map_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	int rc = pw_compat_from_storage(data, from, out);

	return rc == PW_ENOMEM ? rc : rc ? PW_ENOTFOUND : 0;
}

static int xlate_lookup(void *data, const struct pw_oid *from, struct pw_oid *out)
{
	return pw_compat_xlate_lookup(data, from, out);
}

/* A translator from the map's storage algorithm, reading through read_dir. */
static int open_xlate(struct pw_compat_map *map, const char *read_dir, struct pw_odb **odb,
                      struct pw_compat_xlate **x, struct pw_error *err)
{
	struct pw_compat_xlate_opts xo = {0};
	const struct pw_hash_algo *storage = pw_compat_map_storage_algo(map);
	int rc;

	*x = NULL;
	if ((rc = pw_odb_open(odb, read_dir ? read_dir : pw_compat__map_dir(map), storage, err)))
		return rc;
	xo.from = storage;
	xo.to = pw_compat_map_compat_algo(map);
	xo.odb = *odb;
	xo.known = map_lookup;
	xo.known_data = map;
	if ((xo.gitlink_data = pw_compat__map_submodules(map)))
		xo.gitlink = pw_compat_submodules_gitlink;
	if ((rc = pw_compat_xlate_new(x, &xo))) {
		pw_odb_free(*odb);
		*odb = NULL;
		return pw_error_set(err, rc, "out of memory");
	}
	return 0;
}

/* Each new pair goes into the handle too: look-ups see it at once. */
static int remember_all(struct pw_compat_map *map, struct pw_compat_xlate *x,
                        const struct pw_oid *oids, size_t nr, struct pw_error *err)
{
	for (size_t i = 0; i < nr; i++) {
		struct pw_oid c;

		if (!pw_compat_xlate_lookup(x, &oids[i], &c) &&
		    pw_compat__map_remember(map, &oids[i], &c))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	return 0;
}

/* The objects the translator had to translate beyond those asked for
 * (in is_asked), because the map lacked them (objects that came without a
 * map entry: copied in, or from a Git without the extension), into `add`
 * as loose-object-idx lines, so that the next update finds them instead of
 * translating them again. Only objects of the repository itself: not those
 * of a quarantine that may still be refused. */
static int extra_lines(struct pw_compat_map *map, const char *read_dir, struct pw_compat_xlate *x,
                       int (*is_asked)(void *, const struct pw_oid *), void *asked,
                       struct pw_buf *add, struct pw_error *err)
{
	struct pw_compat_pairs pairs = {0};
	struct pw_odb *main_odb = NULL;
	int rc = 0;

	pw_compat__xlate_take_pairs(x, &pairs);
	pw_compat__map_set_reload(map, 0); /* the misses are what is looked for */
	for (size_t i = 0; i < pairs.nr && !rc; i++) {
		const struct pw_compat_pair *p = &pairs.pairs[i];
		char sh[PW_MAX_HEXSZ + 1], ch[PW_MAX_HEXSZ + 1];
		struct pw_oid c;

		if (is_asked(asked, &p->storage) || !pw_compat_from_storage(map, &p->storage, &c))
			continue;
		if (read_dir && !main_odb &&
		    (rc = pw_odb_open(&main_odb, pw_compat__map_dir(map),
		                      pw_compat_map_storage_algo(map), err)))
			break;
		if (main_odb && !pw_odb_exists(main_odb, &p->storage))
			continue;
		if (pw_buf_addf(add, "%s %s\n", pw_oid_to_hex(&p->storage, sh),
		                pw_oid_to_hex(&p->compat, ch)) ||
		    pw_compat__map_remember(map, &p->storage, &p->compat))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	pw_compat__map_set_reload(map, 1);
	pw_odb_free(main_odb);
	pw_compat_pairs_free(&pairs);
	return rc;
}

static int map_has(void *data, const struct pw_oid *storage)
{
	struct pw_oid c;

	return !pw_compat_from_storage(data, storage, &c);
}

/* The submodule commits mapped on the way, as loose-object-idx lines (the
 * view needs them to translate the trees that hold them). */
static int link_lines(struct pw_compat_map *map, struct pw_compat_xlate *x, struct pw_buf *add,
                      struct pw_error *err)
{
	const struct pw_compat_pairs *links = pw_compat__xlate_links(x);
	int rc;

	if (!links->nr)
		return 0;
	pw_compat__map_set_reload(map, 0);
	rc = pw_compat__links_lines(x, pw_compat_map_storage_algo(map), map_has, map, add);
	for (size_t i = 0; !rc && i < links->nr; i++)
		rc = pw_compat__map_remember(map, &links->pairs[i].storage,
		                             &links->pairs[i].compat);
	pw_compat__map_set_reload(map, 1);
	return rc ? pw_error_set(err, PW_ENOMEM, "out of memory") : 0;
}

static int in_idx(void *data, const struct pw_oid *oid)
{
	uint32_t pos;

	return pw_idx_find(data, oid->id, &pos);
}

int pw_compat__map_add_pack(struct pw_compat_map *map, const char *read_dir, const char *idx_path,
                            void (*before)(void *, const char *, const char *), void *before_data,
                            struct pw_error *err)
{
	const struct pw_hash_algo *storage = pw_compat_map_storage_algo(map);
	struct pw_odb *odb = NULL;
	struct pw_compat_xlate *x = NULL;
	struct pw_idx *idx = NULL;
	struct pw_oid *oids = NULL;
	struct pw_buf add = PW_BUF_INIT;
	int rc;

	if ((rc = pw_idx_open(&idx, idx_path, storage, err)))
		return rc;
	if ((rc = open_xlate(map, read_dir, &odb, &x, err)))
		goto out;
	if (!(oids = malloc(((size_t)idx->nr + 1) * sizeof(*oids)))) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < idx->nr; i++)
		pw_idx_nth_oid(idx, i, &oids[i]);
	/* commits first: a gitlink is then met with its whole path */
	rc = pw_compat__xlate_commits_first(x, oids, idx->nr, err);
	for (uint32_t i = 0; i < idx->nr && !rc; i++)
		rc = pw_compat_xlate_object(x, &oids[i], err);
	if (!rc)
		rc = pw_compat__pack_map_write(idx_path, storage, xlate_lookup, x, before,
		                               before_data, NULL, err);
	if (!rc)
		rc = remember_all(map, x, oids, idx->nr, err);
	if (!rc)
		rc = extra_lines(map, read_dir, x, in_idx, idx, &add, err);
	if (!rc)
		rc = link_lines(map, x, &add, err);
	if (!rc && add.len)
		rc = pw_compat__loose_idx_publish(pw_compat__map_dir(map), &add, before,
		                                  before_data, NULL, err);
out:
	pw_buf_free(&add);
	free(oids);
	pw_idx_free(idx);
	pw_compat_xlate_free(x);
	pw_odb_free(odb);
	return rc;
}

int pw_compat_map_add_pack(struct pw_compat_map *map, const char *read_dir, const char *idx_path,
                           struct pw_error *err)
{
	return pw_compat__map_add_pack(map, read_dir, idx_path, NULL, NULL, err);
}

int pw_compat__map_add_objects(struct pw_compat_map *map, const char *read_dir,
                               const struct pw_oid *oids, size_t nr,
                               void (*before)(void *, const char *, const char *),
                               void *before_data, struct pw_error *err)
{
	struct pw_odb *odb = NULL;
	struct pw_compat_xlate *x = NULL;
	struct pw_buf add = PW_BUF_INIT;
	int rc;

	if (!nr)
		return 0;
	if ((rc = open_xlate(map, read_dir, &odb, &x, err)))
		return rc;
	for (size_t i = 0; i < nr && !rc; i++) {
		char sh[PW_MAX_HEXSZ + 1], ch[PW_MAX_HEXSZ + 1];
		struct pw_oid c;

		/* an object the map knows already keeps its entry */
		if (!pw_compat_from_storage(map, &oids[i], &c))
			continue;
		if ((rc = pw_compat_xlate_object(x, &oids[i], err)))
			break;
		if ((rc = pw_compat_xlate_lookup(x, &oids[i], &c)) ||
		    pw_buf_addf(&add, "%s %s\n", pw_oid_to_hex(&oids[i], sh),
		                pw_oid_to_hex(&c, ch)))
			rc = pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = link_lines(map, x, &add, err);
	if (!rc && add.len)
		rc = pw_compat__loose_idx_publish(pw_compat__map_dir(map), &add, before,
		                                  before_data, NULL, err);
	if (!rc)
		rc = remember_all(map, x, oids, nr, err);
	pw_buf_free(&add);
	pw_compat_xlate_free(x);
	pw_odb_free(odb);
	return rc;
}

int pw_compat_map_add_objects(struct pw_compat_map *map, const char *read_dir,
                              const struct pw_oid *oids, size_t nr, struct pw_error *err)
{
	return pw_compat__map_add_objects(map, read_dir, oids, nr, NULL, NULL, err);
}

int pw_compat_note_pack(const char *objects_dir, const struct pw_hash_algo *storage,
                        const struct pw_hash_algo *compat, const char *idx_path,
                        struct pw_error *err)
{
	struct pw_compat_map *map = NULL;
	int rc;

	if ((rc = pw_compat_map_open(&map, objects_dir, storage, compat, err)))
		return rc;
	rc = pw_compat_map_add_pack(map, NULL, idx_path, err);
	pw_compat_map_free(map);
	return rc;
}

int pw_compat_note_pack_repo(struct pw_repo *repo, const char *idx_path, struct pw_error *err)
{
	const struct pw_hash_algo *compat = pw_repo_compat_algo(repo);
	struct pw_compat_submodules *subs = NULL;
	struct pw_compat_map *map = NULL;
	int rc;

	if (!compat || compat == pw_repo_algo(repo))
		return 0;
	if ((rc = pw_compat_submodules_for_repo(&subs, repo, NULL, NULL, err)) ||
	    (rc = pw_compat_map_open(&map, pw_repo_objects_dir(repo), pw_repo_algo(repo), compat,
	                             err)))
		goto out;
	pw_compat_map_set_submodules(map, subs);
	rc = pw_compat_map_add_pack(map, NULL, idx_path, err);
out:
	pw_compat_map_free(map);
	pw_compat_submodules_free(subs);
	return rc;
}
