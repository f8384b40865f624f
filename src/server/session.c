/* Helpers shared by every part of an upload-pack session: error reporting
 * (ERR packet or sideband), response lines, the odb and the refs the
 * session advertises (loaded once per request), tag peeling. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/object.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "refs/hide.h"
#include "server/session.h"

int pw_srv_fail(struct pw_upload_session *s, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->err.msg, sizeof(s->err.msg), fmt, ap);
	va_end(ap);
	s->err.code = code;
	return code;
}

void pw_srv_trace(struct pw_upload_session *s, const char *key, const char *value)
{
	if (s->opts.trace_data)
		s->opts.trace_data(s->opts.trace_ctx, "transfer", key, value);
}

/* The packets put in the output since the last call, for the trace, in the
 * order Git writes them (it writes each one at once: what is queued before a
 * read went out before it). Side-band frames of a pack are not pkt-lines
 * Git traces. */
static void trace_out(struct pw_upload_session *s)
{
	size_t off = s->out_traced <= s->out.len ? s->out_traced : 0, used;
	struct pw_pkt pkt;

	while (off < s->out.len && !pw_pkt_decode((const uint8_t *)s->out.data + off,
	                                          s->out.len - off, &pkt, &used, NULL)) {
		off += used;
		if (s->pack_started && s->sideband && pkt.kind == PW_PKT_DATA && pkt.len &&
		    pkt.data[0] >= 1 && pkt.data[0] <= 3)
			continue;
		pw_srv_trace_pkt(s, 1, &pkt);
	}
	s->out_traced = off;
}

void pw_srv_trace_pkt(struct pw_upload_session *s, int write, const struct pw_pkt *pkt)
{
	static const char *const ctl[] = {"0000", "0001", "0002"};

	if (!s->opts.trace_packet)
		return;
	if (!write)
		trace_out(s);
	if (pkt->kind == PW_PKT_DATA)
		s->opts.trace_packet(s->opts.trace_packet_ctx, write, pkt->data ? pkt->data : "",
		                     pkt->len);
	else if (pkt->kind >= PW_PKT_FLUSH && pkt->kind <= PW_PKT_RESPONSE_END)
		s->opts.trace_packet(s->opts.trace_packet_ctx, write, ctl[pkt->kind - PW_PKT_FLUSH],
		                     4);
}

int pw_srv_flush_out(struct pw_upload_session *s)
{
	struct pw_error e;
	int rc;

	if (!s->out.len)
		return 0;
	if (s->opts.trace_packet)
		trace_out(s);
	s->out_traced = 0;
	rc = pw_pkt_send(s->out_fd, &s->out, &e);
	if (rc) {
		s->err_sent = 1; /* the client is gone: nothing more to tell it */
		return pw_error_copy(&s->err, &e);
	}
	return 0;
}

int pw_srv_oom(struct pw_upload_session *s)
{
	return pw_error_set(&s->err, PW_ENOMEM, "out of memory");
}

static int vline(struct pw_upload_session *s, int lf, const char *fmt, va_list ap)
{
	char line[PW_PKT_DATA_MAX];
	int n, rc;

	n = vsnprintf(line + 1, sizeof(line) - 2, fmt, ap);
	if (n < 0 || (size_t)n >= sizeof(line) - 3)
		return pw_error_set(&s->err, PW_ETOOBIG, "response line too long");
	if (lf)
		line[1 + n++] = '\n';
	if (s->sideband_all) {
		line[0] = PW_BAND_DATA;
		rc = pw_pkt_write(&s->out, line, (size_t)n + 1);
	} else {
		rc = pw_pkt_write(&s->out, line + 1, (size_t)n);
	}
	return rc ? pw_error_set(&s->err, rc, "%s", pw_strerror(rc)) : 0;
}

int pw_srv_line(struct pw_upload_session *s, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vline(s, 1, fmt, ap);
	va_end(ap);
	return rc;
}

int pw_srv_line_nolf(struct pw_upload_session *s, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = vline(s, 0, fmt, ap);
	va_end(ap);
	return rc;
}

int pw_srv_odb(struct pw_upload_session *s)
{
	if (s->odb)
		return 0;
	return pw_odb_open(&s->odb, pw_repo_objects_dir(s->repo), s->algo, &s->err);
}

/* Peel tags: *peeled is the first non-tag object (the oid itself when it is
 * no tag). Returns 1 when oid was a tag, 0 when not, <0 on errors. A missing
 * object counts as no tag. */
int pw_srv_peel(struct pw_upload_session *s, const struct pw_oid *oid, struct pw_oid *peeled)
{
	int rc = pw_odb_peel(s->odb, oid, peeled, NULL, &s->err);

	if (rc == PW_ENOTFOUND) {
		/* the missing object ends the chain */
		pw_error_clear(&s->err);
		return !pw_oid_equal(peeled, oid);
	}
	return rc < 0 ? rc : rc > 0;
}

void pw_srv_unload_refs(struct pw_upload_session *s)
{
	size_t i;

	for (i = 0; i < s->nr_refs; i++) {
		free(s->refs[i].name);
		free(s->refs[i].symref);
	}
	free(s->refs);
	s->refs = NULL;
	s->nr_refs = 0;
	free(s->head_symref);
	s->head_symref = NULL;
	s->head_unborn = 0;
	pw_oidmap_free(&s->our_refs);
	s->refs_loaded = 0;
}

/* A name inside the namespace without its prefix (others are kept whole,
 * as Git's strip_namespace leaves them). */
static const char *strip_ns(const struct pw_upload_session *s, const char *name)
{
	if (s->ns && !strncmp(name, s->ns, s->ns_len))
		return name + s->ns_len;
	return name;
}

char *pw_srv_ref_full_name(struct pw_upload_session *s, const char *name)
{
	char *full;
	size_t n = strlen(name);

	if (!s->ns)
		full = strdup(name);
	else if ((full = malloc(s->ns_len + n + 1))) {
		memcpy(full, s->ns, s->ns_len);
		memcpy(full + s->ns_len, name, n + 1);
	}
	if (!full)
		pw_srv_oom(s);
	return full;
}

struct load_ctx {
	struct pw_upload_session *s;
	size_t alloc;
	int rc;
	struct pw_hide_refs hidden; /* transfer.hideRefs + uploadpack.hideRefs */
};

static int load_one(const struct pw_ref *ref, void *data)
{
	struct load_ctx *c = data;
	struct pw_upload_session *s = c->s;
	struct pw_adv_ref *r;
	struct pw_oidmap_entry *e;
	int created, rc;

	if (pw_oid_is_zero(&ref->oid))
		return 0;
	if (s->ns && strncmp(ref->name, s->ns, s->ns_len))
		return 0; /* outside the namespace (pw_refs_foreach's HEAD) */
	if (pw_hide_refs_match(&c->hidden, ref->name + (s->ns ? s->ns_len : 0), ref->name)) {
		/* not advertised; its tip is still a valid want when tips or
		 * reachable objects may be asked for (Git's rule) */
		if ((s->allow_tip || s->allow_reachable) &&
		    !pw_oidmap_put(&s->our_refs, &ref->oid, &created))
			return c->rc = pw_srv_oom(s);
		return 0;
	}
	if (s->nr_refs == c->alloc) {
		size_t na = c->alloc ? c->alloc * 2 : 64;
		struct pw_adv_ref *nv = realloc(s->refs, na * sizeof(*nv));

		if (!nv)
			return c->rc = pw_srv_oom(s);
		s->refs = nv;
		c->alloc = na;
	}
	r = &s->refs[s->nr_refs];
	memset(r, 0, sizeof(*r));
	r->name = strdup(ref->name + (s->ns ? s->ns_len : 0));
	r->symref = ref->symref_target ? strdup(strip_ns(s, ref->symref_target)) : NULL;
	if (!r->name || (ref->symref_target && !r->symref)) {
		free(r->name);
		free(r->symref);
		return c->rc = pw_srv_oom(s);
	}
	s->nr_refs++;
	r->oid = ref->oid;
	if (ref->has_peeled) {
		r->peeled = ref->peeled;
		r->has_peeled = 1;
	} else if (!(ref->peel_known && !ref->has_peeled)) {
		rc = pw_srv_peel(s, &ref->oid, &r->peeled);
		if (rc < 0)
			return c->rc = rc;
		r->has_peeled = rc;
	}
	if (!(e = pw_oidmap_put(&s->our_refs, &r->oid, &created)))
		return c->rc = pw_srv_oom(s);
	if (r->has_peeled && !(e = pw_oidmap_put(&s->our_refs, &r->peeled, &created)))
		return c->rc = pw_srv_oom(s);
	return 0;
}

/* The namespace's HEAD, advertised first as HEAD. */
static int load_ns_head(struct load_ctx *c, char *head_name)
{
	struct pw_ref ref;
	struct pw_oid oid;
	char *final = NULL, *sym = NULL;
	int rc;

	memset(&ref, 0, sizeof(ref));
	if (pw_refs_read(c->s->repo, head_name, &oid, &sym))
		return 0;
	rc = pw_refs_resolve(c->s->repo, head_name, &ref.oid, &final);
	free(final);
	if (!rc) {
		/* load_one strips the prefix: give it the full name */
		ref.name = head_name;
		ref.symref_target = sym;
		rc = load_one(&ref, c);
	} else {
		rc = 0;
	}
	free(sym);
	return rc;
}

int pw_srv_load_refs(struct pw_upload_session *s)
{
	struct load_ctx c = {s, 0, 0, PW_HIDE_REFS_INIT};
	struct pw_oid head;
	char *target = NULL, *sym = NULL, *head_name = NULL, *prefix = NULL;
	int rc;

	if (s->refs_loaded)
		return 0;
	if ((rc = pw_srv_odb(s)))
		return rc;
	if ((rc = pw_hide_refs_load(&c.hidden, pw_repo_config(s->repo), "uploadpack", &s->err)))
		return rc;
	if (s->ns) {
		if (!(head_name = pw_srv_ref_full_name(s, "HEAD")) ||
		    !(prefix = pw_srv_ref_full_name(s, "refs/"))) {
			free(head_name);
			pw_hide_refs_free(&c.hidden);
			return s->err.code;
		}
		if (!(rc = load_ns_head(&c, head_name)))
			rc = pw_refs_foreach(s->repo, prefix, 0, load_one, &c);
		free(prefix);
	} else {
		rc = pw_refs_foreach(s->repo, NULL, PW_REFS_INCLUDE_HEAD, load_one, &c);
	}
	pw_hide_refs_free(&c.hidden);
	if (c.rc || rc) {
		free(head_name);
		return c.rc ? c.rc : pw_error_copy(&s->err, pw_repo_error(s->repo));
	}
	/* HEAD's target, also when the branch is unborn */
	rc = pw_refs_read(s->repo, head_name ? head_name : "HEAD", &head, &sym);
	if (!rc && sym) {
		rc = pw_refs_resolve(s->repo, head_name ? head_name : "HEAD", &head, &target);
		if (rc == PW_ENOTFOUND)
			s->head_unborn = 1;
		free(target);
		if (s->ns && strncmp(sym, s->ns, s->ns_len)) {
			free(sym); /* pointing outside the namespace: not shown */
			sym = NULL;
		} else if (s->ns) {
			memmove(sym, sym + s->ns_len, strlen(sym + s->ns_len) + 1);
		}
		s->head_symref = sym;
	}
	free(head_name);
	s->refs_loaded = 1;
	return pw_srv_compat_check_refs(s);
}

void pw_srv_reset_fetch(struct pw_upload_session *s)
{
	const struct pw_hash_algo *algo = s->wire;

	pw_fetch_args_free(&s->args);
	pw_fetch_args_init(&s->args, algo);
	pw_graph_free(&s->graph);
	pw_graph_init(&s->graph, s->odb, &s->err);
	if (s->srv_shallow.nr)
		s->graph.grafts = &s->srv_shallow_map;
	free(s->have_objs.v);
	free(s->new_shallow.v);
	free(s->unshallow.v);
	memset(&s->have_objs, 0, sizeof(s->have_objs));
	memset(&s->new_shallow, 0, sizeof(s->new_shallow));
	memset(&s->unshallow, 0, sizeof(s->unshallow));
	s->oldest_have = 0;
	s->have_oldest = 0;
	s->sideband = PW_SIDEBAND_NONE;
	s->sideband_all = 0;
}

int pw_srv__push_oid(struct pw_upload_session *s, struct pw_oid_array *arr,
                     const struct pw_oid *oid)
{
	return pw_oid_array_push(arr, oid) ? pw_error_set(&s->err, PW_ENOMEM, "out of memory") : 0;
}

/* The "shallow"/"unshallow" lines of the boundary computed for this fetch. */
int pw_srv_send_shallow_lines(struct pw_upload_session *s)
{
	char hex[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc;

	for (i = 0; i < s->new_shallow.nr; i++)
		if ((rc = pw_srv_line_nolf(s, "shallow %s",
		                           pw_srv_hex(s, &s->new_shallow.v[i], hex))))
			return rc;
	for (i = 0; i < s->unshallow.nr; i++)
		if ((rc = pw_srv_line_nolf(s, "unshallow %s",
		                           pw_srv_hex(s, &s->unshallow.v[i], hex))))
			return rc;
	return 0;
}
