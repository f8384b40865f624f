/* Following annotated tags to the object they name, written once for the
 * revision syntax (X^{}), the client's walks and upload-pack's "^{}" lines. */
#include "packwire/odb.h"

int pw_odb_peel(struct pw_odb *odb, const struct pw_oid *oid, struct pw_oid *out, int *type,
                struct pw_error *err)
{
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_oid cur = *oid;
	char hex[PW_MAX_HEXSZ + 1];
	int t = PW_OBJ_NONE, rc, hops = 0;
	uint64_t size;

	for (;;) {
		struct pw_tag_info tag;

		rc = pw_odb_read_header(odb, &cur, &t, &size);
		if (!rc && t != PW_OBJ_TAG)
			break;
		if (!rc && hops++ >= PW_PEEL_MAX_DEPTH) {
			rc = pw_error_set(err, PW_ECORRUPT, "chain of tags too long");
			break;
		}
		if (!rc)
			rc = pw_odb_read(odb, &cur, &t, &buf);
		if (rc == PW_ENOTFOUND) {
			pw_error_set(err, rc, "bad object %s", pw_oid_to_hex(&cur, hex));
			break;
		}
		if (rc) {
			pw_error_copy(err, pw_odb_error(odb));
			break;
		}
		if ((rc = pw_tag_parse(&tag, buf.data, buf.len, pw_odb_algo(odb), err)))
			break;
		cur = tag.object;
	}
	pw_buf_free(&buf);
	*out = cur;
	if (type)
		*type = rc ? PW_OBJ_NONE : t;
	return rc ? rc : hops;
}
