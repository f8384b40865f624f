/* upload-pack for a client of the other algorithm: see compat-serve.h. */
#include <stdlib.h>
#include <string.h>

#include "packwire/compat.h"
#include "packwire/repo.h"
#include "server/compat-serve.h"
#include "server/session.h"

int pw_srv_compat_setup(struct pw_upload_session *s, struct pw_error *err)
{
	const char *name = s->opts.object_format;
	const struct pw_hash_algo *wire;
	int rc;

	s->wire = s->algo;
	s->opts.object_format = NULL; /* borrowed */
	if (!name || !*name)
		return 0;
	if (!(wire = pw_hash_by_name(name, strlen(name))))
		return pw_error_set(err, PW_EINVAL, "unknown object format '%s'", name);
	if (wire == s->algo)
		return 0;
	rc = pw_compat_map_open(&s->compat, pw_repo_objects_dir(s->repo), s->algo, wire, err);
	if (rc)
		return rc;
	s->wire = wire;
	return 0;
}

void pw_srv_compat_free(struct pw_upload_session *s)
{
	pw_compat_map_free(s->compat);
	s->compat = NULL;
	free(s->compat_objs.v);
	memset(&s->compat_objs, 0, sizeof(s->compat_objs));
}

static int map_fail(struct pw_upload_session *s, int rc, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];

	if (rc == PW_ENOTFOUND)
		return pw_srv_fail(s, PW_ENOTFOUND,
		                   "object %s has no %s id: run 'packwire compat build "
		                   "--object-format=%s'",
		                   pw_oid_to_hex(oid, hex), s->wire->name, s->wire->name);
	return pw_srv_fail(s, rc, "compat map: %s", pw_compat_map_error(s->compat)->msg);
}

static int to_wire(struct pw_upload_session *s, const struct pw_oid *oid)
{
	struct pw_oid out;
	int rc = pw_compat_from_storage(s->compat, oid, &out);

	return rc ? map_fail(s, rc, oid) : 0;
}

int pw_srv_compat_check_refs(struct pw_upload_session *s)
{
	size_t i;
	int rc;

	if (!s->compat)
		return 0;
	for (i = 0; i < s->nr_refs; i++) {
		if ((rc = to_wire(s, &s->refs[i].oid)))
			return rc;
		if (s->refs[i].has_peeled && (rc = to_wire(s, &s->refs[i].peeled)))
			return rc;
	}
	for (i = 0; i < s->srv_shallow.nr; i++)
		if ((rc = to_wire(s, &s->srv_shallow.v[i])))
			return rc;
	return 0;
}

const char *pw_srv_hex(struct pw_upload_session *s, const struct pw_oid *oid, char *hex)
{
	struct pw_oid out;

	if (!s->compat)
		return pw_oid_to_hex(oid, hex);
	if (pw_compat_from_storage(s->compat, oid, &out))
		return pw_oid_to_hex(s->wire->zero_oid, hex);
	return pw_oid_to_hex(&out, hex);
}

int pw_srv_compat_have(struct pw_upload_session *s, const struct pw_oid *oid,
                       struct pw_oid *storage)
{
	int rc = pw_compat_to_storage(s->compat, oid, storage);

	if (rc && rc != PW_ENOTFOUND)
		return map_fail(s, rc, oid);
	return rc;
}

int pw_srv_compat_in(struct pw_upload_session *s)
{
	struct pw_fetch_args *a = &s->args;
	char hex[PW_MAX_HEXSZ + 1];
	struct pw_oid st;
	size_t i, n = 0;
	int rc;

	if (!s->compat)
		return 0;
	for (i = 0; i < a->wants.nr; i++) {
		rc = pw_compat_to_storage(s->compat, &a->wants.v[i], &st);
		if (rc == PW_ENOTFOUND)
			return pw_srv_fail(s, PW_EPROTO, "upload-pack: not our ref %s",
			                   pw_oid_to_hex(&a->wants.v[i], hex));
		if (rc)
			return map_fail(s, rc, &a->wants.v[i]);
		a->wants.v[i] = st;
	}
	for (i = 0; i < a->shallows.nr; i++) {
		rc = pw_compat_to_storage(s->compat, &a->shallows.v[i], &st);
		if (rc == PW_ENOTFOUND)
			continue;
		if (rc)
			return map_fail(s, rc, &a->shallows.v[i]);
		a->shallows.v[n++] = st;
	}
	a->shallows.nr = n;
	return 0;
}

int pw_srv_compat_add(struct pw_upload_session *s, const struct pw_oid *oid)
{
	return pw_srv__push_oid(s, &s->compat_objs, oid);
}

int pw_srv_compat_write(struct pw_upload_session *s, pw_pack_out_fn fn, void *ctx)
{
	struct pw_oid_array *a = &s->compat_objs;
	struct pw_oidmap seen;
	struct pw_error e;
	size_t i, n = 0;
	int rc, created;

	/* the walk may name an object twice (the pack writer would merge them):
	 * keep the first */
	memset(&seen, 0, sizeof(seen));
	for (i = 0; i < a->nr; i++) {
		if (!pw_oidmap_put(&seen, &a->v[i], &created)) {
			pw_oidmap_free(&seen);
			return pw_srv_oom(s);
		}
		if (created)
			a->v[n++] = a->v[i];
	}
	a->nr = n;
	pw_oidmap_free(&seen);
	pw_error_clear(&e);
	rc = pw_compat_write_pack(s->odb, s->compat, s->compat_objs.v, s->compat_objs.nr, fn, ctx,
	                          NULL, &e);
	if (rc && !s->err.code)
		pw_error_copy(&s->err, &e);
	return rc;
}

void pw_srv_compat_stats(struct pw_upload_session *s, struct pw_pack_write_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->written = (uint32_t)s->compat_objs.nr;
	s->compat_objs.nr = 0; /* the next fetch of the session starts afresh */
}
