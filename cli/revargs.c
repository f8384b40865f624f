/* Revision arguments for rev-list and pack-objects --revs: "X", "^X",
 * "A..B", "--not", "--all", and the suffixes ~N, ^N and ^{} / ^{commit} /
 * ^{tree} on a ref name or full object id. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmds.h"
#include "packwire/packwire.h"
#include "packwire/refs.h"
#include "packwire/repo.h"
#include "revargs.h"

static int read_obj(struct pw_cli_revs *r, const struct pw_oid *oid, int *type, struct pw_buf *buf)
{
	char hex[PW_MAX_HEXSZ + 1];
	int rc = pw_odb_read(r->odb, oid, type, buf);

	if (rc == PW_ENOTFOUND)
		return pw_cli_fatal("bad object %s", pw_oid_to_hex(oid, hex));
	if (rc)
		return pw_cli_fatal("%s", pw_odb_error(r->odb)->msg);
	return 0;
}

/* Follow tags until an object of type `want` (0 = anything not a tag). */
static int peel(struct pw_cli_revs *r, struct pw_oid *oid, int want, const char *arg)
{
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_error err = {0};
	int type, rc, hops = 0;

	for (;;) {
		if ((rc = read_obj(r, oid, &type, &buf)))
			break;
		if (type == PW_OBJ_TAG && type != want && hops++ < 100) {
			struct pw_tag_info tag;

			if (pw_tag_parse(&tag, buf.data, buf.len, r->algo, &err)) {
				rc = pw_cli_fatal("%s", err.msg);
				break;
			}
			*oid = tag.object;
			continue;
		}
		if (want == PW_OBJ_TREE && type == PW_OBJ_COMMIT) {
			struct pw_commit_info ci;

			if (pw_commit_parse(&ci, buf.data, buf.len, r->algo, &err)) {
				rc = pw_cli_fatal("%s", err.msg);
				break;
			}
			*oid = ci.tree;
			pw_commit_info_free(&ci);
			type = PW_OBJ_TREE;
		}
		if (want && type != want)
			rc = pw_cli_fatal("'%s': not a %s", arg, pw_object_type_name(want));
		break;
	}
	pw_buf_free(&buf);
	return rc;
}

static int nth_parent(struct pw_cli_revs *r, struct pw_oid *oid, unsigned long n, const char *arg)
{
	struct pw_buf buf = PW_BUF_INIT;
	struct pw_error err = {0};
	struct pw_commit_info ci;
	int type, rc;

	if ((rc = peel(r, oid, PW_OBJ_COMMIT, arg)))
		return rc;
	if (!n)
		return 0;
	if ((rc = read_obj(r, oid, &type, &buf)))
		return rc;
	if (pw_commit_parse(&ci, buf.data, buf.len, r->algo, &err))
		rc = pw_cli_fatal("%s", err.msg);
	else if (n > ci.nr_parents)
		rc = pw_cli_fatal("ambiguous argument '%s': unknown revision", arg);
	else
		*oid = ci.parents[n - 1];
	if (!rc)
		pw_commit_info_free(&ci);
	pw_buf_free(&buf);
	return rc;
}

int pw_cli_revs_resolve(struct pw_cli_revs *r, const char *arg, struct pw_oid *oid)
{
	size_t len = strlen(arg), base_len = 0;
	char *base;
	const char *p;
	int rc;

	/* the name ends at the first ~ or ^ (ref names cannot contain them) */
	while (base_len < len && arg[base_len] != '~' && arg[base_len] != '^')
		base_len++;
	base = strndup(arg, base_len);
	if (!base)
		return pw_cli_fatal("out of memory");
	rc = pw_cli_resolve_rev(r->repo, *base ? base : "HEAD", oid, NULL);
	free(base);
	if (rc)
		return pw_cli_fatal("ambiguous argument '%s': unknown revision or path not in the "
		                    "working tree.",
		                    arg);
	for (p = arg + base_len; *p;) {
		char op = *p++;
		unsigned long n = 1;
		char *end;

		if (op == '^' && *p == '{') {
			const char *close = strchr(p, '}');
			int want;

			if (!close)
				return pw_cli_fatal("bad revision '%s'", arg);
			if (close == p + 1)
				want = 0;
			else
				want = pw_object_type_from_name(p + 1, (size_t)(close - p - 1));
			if (close != p + 1 && !want)
				return pw_cli_fatal("bad revision '%s'", arg);
			if ((rc = peel(r, oid, want, arg)))
				return rc;
			p = close + 1;
			continue;
		}
		if (*p >= '0' && *p <= '9') {
			n = strtoul(p, &end, 10);
			p = end;
		}
		if (op == '^') {
			if ((rc = nth_parent(r, oid, n, arg)))
				return rc;
		} else {
			while (n--)
				if ((rc = nth_parent(r, oid, 1, arg)))
					return rc;
		}
	}
	return 0;
}

static int record(struct pw_cli_revs *r, const struct pw_oid *oid, int exclude)
{
	if (r->ntips == r->atips) {
		size_t na = r->atips ? r->atips * 2 : 16;
		struct pw_oid *nt = realloc(r->tips, na * sizeof(*nt));
		unsigned char *ne;

		if (!nt)
			return pw_cli_fatal("out of memory");
		r->tips = nt;
		if (!(ne = realloc(r->exclude, na)))
			return pw_cli_fatal("out of memory");
		r->exclude = ne;
		r->atips = na;
	}
	r->tips[r->ntips] = *oid;
	r->exclude[r->ntips++] = (unsigned char)!!exclude;
	return 0;
}

void pw_cli_revs_release(struct pw_cli_revs *r)
{
	free(r->tips);
	free(r->exclude);
	r->tips = NULL;
	r->exclude = NULL;
	r->ntips = r->atips = 0;
}

static int add_one(struct pw_cli_revs *r, const char *arg, int exclude)
{
	struct pw_oid oid;
	int rc = pw_cli_revs_resolve(r, arg, &oid);

	if (rc)
		return rc;
	if (pw_revlist_add(r->rl, &oid, arg, exclude))
		return pw_cli_fatal("%s", pw_revlist_error(r->rl)->msg);
	return record(r, &oid, exclude);
}

static int add_ref(const struct pw_ref *ref, void *data)
{
	struct pw_cli_revs *r = data;

	if (pw_oid_is_zero(&ref->oid))
		return 0;
	if (pw_revlist_add(r->rl, &ref->oid, ref->name, r->not_flag))
		return pw_cli_fatal("%s", pw_revlist_error(r->rl)->msg);
	return record(r, &ref->oid, r->not_flag);
}

int pw_cli_revs_add_all(struct pw_cli_revs *r)
{
	int rc = pw_refs_foreach(r->repo, NULL, PW_REFS_INCLUDE_HEAD, add_ref, r);

	if (rc < 0)
		return pw_cli_fatal("%s", pw_repo_error(r->repo)->msg);
	return rc;
}

int pw_cli_revs_add(struct pw_cli_revs *r, const char *arg)
{
	const char *dots;

	if (!strcmp(arg, "--not")) {
		r->not_flag = !r->not_flag;
		return 0;
	}
	if (!strcmp(arg, "--all"))
		return pw_cli_revs_add_all(r);
	dots = strstr(arg, "..");
	if (dots && dots[2] != '.') {
		char *left = strndup(arg, (size_t)(dots - arg));
		int rc;

		if (!left)
			return pw_cli_fatal("out of memory");
		rc = add_one(r, *left ? left : "HEAD", !r->not_flag);
		free(left);
		if (!rc)
			rc = add_one(r, dots[2] ? dots + 2 : "HEAD", r->not_flag);
		return rc;
	}
	if (arg[0] == '^')
		return add_one(r, arg + 1, !r->not_flag);
	return add_one(r, arg, r->not_flag);
}

void pw_cli_progress(void *data, const char *title, uint64_t n, uint64_t total, int done)
{
	(void)data;
	if (getenv("PW_TRACE_PHASES")) { /* phase timings for benchmarking */
		static struct timespec last;
		struct timespec now;

		if (!done)
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (last.tv_sec)
			fprintf(stderr, "%s: %.3f s\n", title,
			        (double)(now.tv_sec - last.tv_sec) +
			                (double)(now.tv_nsec - last.tv_nsec) / 1e9);
		else
			fprintf(stderr, "%s: done\n", title);
		last = now;
		return;
	}
	if (total)
		fprintf(stderr, "\r%s: %3u%% (%llu/%llu)%s", title,
		        (unsigned)(total ? n * 100 / total : 100), (unsigned long long)n,
		        (unsigned long long)total, done ? ", done.\n" : "");
	else
		fprintf(stderr, "\r%s: %llu%s", title, (unsigned long long)n,
		        done ? ", done.\n" : "");
}
