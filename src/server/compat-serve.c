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
	pw_compat_pack_free(s->compat_pack);
	s->compat_pack = NULL;
	pw_odb_free(s->view_odb);
	s->view_odb = NULL;
	s->view_tried = 0;
}

void (*pw_srv__test_view_opened)(void);

struct pw_odb *pw_srv_compat_view(struct pw_upload_session *s)
{
	struct pw_error e = {0};

	if (!s->compat)
		return NULL;
	if (!s->view_tried) {
		s->view_tried = 1;
		/* a damaged view is not this request's problem: translate
		 * (compat verify reports it) */
		if (pw_compat_view_open(&s->view_odb, pw_repo_objects_dir(s->repo), s->wire, &e))
			s->view_odb = NULL;
	}
	return s->view_odb;
}

void pw_srv_compat_view_drop(struct pw_upload_session *s)
{
	pw_odb_free(s->view_odb);
	s->view_odb = NULL;
	s->view_tried = 0;
}

int pw_srv_compat_out(struct pw_upload_session *s, const struct pw_oid *oid, struct pw_oid *out)
{
	return pw_compat_from_storage(s->compat, oid, out);
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

int pw_srv_compat_translate(struct pw_upload_session *s, struct pw_pack_writer *w)
{
	struct pw_pack_translate t;
	int rc;

	if (!s->compat_pack && (rc = pw_compat_pack_new(&s->compat_pack, s->compat,
	                                                pw_repo_objects_dir(s->repo), &s->err)))
		return rc;
	pw_compat_pack_translation(s->compat_pack, &t);
	if ((rc = pw_pack_writer_set_translate(w, &t)))
		return pw_error_copy(&s->err, pw_pack_writer_error(w));
	return 0;
}
