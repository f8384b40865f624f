/* packwire cat-file (-t | -s | -e | -p | <type>) <object>
 * packwire cat-file (--batch | --batch-check)[=<format>] [--batch-all-objects] [--buffer]
 * Output is byte-for-byte what git cat-file prints. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "cmds.h"
#include "packwire/odb.h"
#include "packwire/packwire.h"

static const char usage_str[] =
        "packwire cat-file (-t | -s | -e | -p | <type>) <object>\n"
        "   or: packwire cat-file (--batch | --batch-check)[=<format>] [--batch-all-objects] "
        "[--buffer]";

struct batch {
	struct pw_odb *odb;
	struct pw_repo *repo;
	const char *format; /* NULL: the default */
	int contents;       /* --batch, not --batch-check */
	int buffer;
	struct pw_buf obj;
	struct pw_buf line;
	int fatal;
};

static int write_all(const void *p, size_t n)
{
	return n && fwrite(p, 1, n, stdout) != n ? -1 : 0;
}

/* Expand the format for one object; rest is the part of the input line after
 * the name (for %(rest)). */
static int expand(struct batch *b, const struct pw_oid *oid, int type, uint64_t size,
                  const char *rest)
{
	char hex[PW_MAX_HEXSZ + 1];
	const char *f = b->format;

	pw_buf_reset(&b->line);
	if (!f) {
		return pw_buf_addf(&b->line, "%s %s %llu\n", pw_oid_to_hex(oid, hex),
		                   pw_object_type_name(type), (unsigned long long)size);
	}
	while (*f) {
		const char *end;

		if (f[0] != '%' || f[1] != '(' || !(end = strchr(f, ')'))) {
			pw_buf_addch(&b->line, *f++);
			continue;
		}
		if (!strncmp(f, "%(objectname)", 13))
			pw_buf_adds(&b->line, pw_oid_to_hex(oid, hex));
		else if (!strncmp(f, "%(objecttype)", 13))
			pw_buf_adds(&b->line, pw_object_type_name(type));
		else if (!strncmp(f, "%(objectsize)", 13))
			pw_buf_addf(&b->line, "%llu", (unsigned long long)size);
		else if (!strncmp(f, "%(rest)", 7))
			pw_buf_adds(&b->line, rest ? rest : "");
		else
			return -1;
		f = end + 1;
	}
	return pw_buf_addch(&b->line, '\n');
}

static int format_needs(const char *f, const char *what)
{
	return !f || strstr(f, what) != NULL;
}

/* Print one object; 0, or 128 after a fatal message. */
static int batch_one(struct batch *b, const struct pw_oid *oid, const char *rest)
{
	uint64_t size = 0;
	int type = 0, rc = 0;

	if (b->contents) {
		rc = pw_odb_read(b->odb, oid, &type, &b->obj);
		size = b->obj.len;
	} else if (format_needs(b->format, "%(objecttype)") ||
	           format_needs(b->format, "%(objectsize)")) {
		rc = pw_odb_read_header(b->odb, oid, &type, &size);
	} else if (!pw_odb_exists(b->odb, oid)) {
		rc = pw_odb_error(b->odb)->code;
		if (!rc)
			rc = PW_ENOTFOUND;
	}
	if (rc == PW_ENOTFOUND)
		return 1;
	if (rc)
		return pw_cli_fatal("%s", pw_odb_error(b->odb)->msg);
	if (expand(b, oid, type, size, rest))
		return pw_cli_fatal("bad --batch format '%s'", b->format);
	if (write_all(b->line.data, b->line.len))
		return pw_cli_fatal("unable to write to stdout");
	if (b->contents && (write_all(b->obj.data, b->obj.len) || write_all("\n", 1)))
		return pw_cli_fatal("unable to write to stdout");
	return 0;
}

static int batch_missing(const char *name)
{
	if (printf("%s missing\n", name) < 0)
		return pw_cli_fatal("unable to write to stdout");
	return 0;
}

struct oid_list {
	struct pw_oid *v;
	size_t nr, alloc;
};

static int collect(const struct pw_oid *oid, void *data)
{
	struct oid_list *l = data;

	if (l->nr == l->alloc) {
		size_t n = l->alloc ? l->alloc * 2 : 4096;
		struct pw_oid *nv = realloc(l->v, n * sizeof(*nv));

		if (!nv)
			return PW_ENOMEM;
		l->v = nv;
		l->alloc = n;
	}
	l->v[l->nr++] = *oid;
	return 0;
}

static int oid_cmp_qsort(const void *a, const void *b)
{
	return memcmp(((const struct pw_oid *)a)->id, ((const struct pw_oid *)b)->id, PW_MAX_RAWSZ);
}

static int batch_all(struct batch *b)
{
	struct oid_list l = {0};
	size_t i;
	int rc;

	if ((rc = pw_odb_foreach(b->odb, collect, &l))) {
		free(l.v);
		return pw_cli_fatal("cannot list objects: %s",
		                    rc == PW_ENOMEM ? "out of memory" : pw_odb_error(b->odb)->msg);
	}
	qsort(l.v, l.nr, sizeof(*l.v), oid_cmp_qsort);
	for (i = 0; i < l.nr; i++) {
		if (i && !memcmp(l.v[i].id, l.v[i - 1].id, PW_MAX_RAWSZ))
			continue;
		rc = batch_one(b, &l.v[i], NULL);
		if (rc == 1) {
			char hex[PW_MAX_HEXSZ + 1];

			rc = batch_missing(pw_oid_to_hex(&l.v[i], hex));
		}
		if (rc)
			break;
	}
	free(l.v);
	return rc;
}

static int batch_stdin(struct batch *b)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0, want_rest = b->format && strstr(b->format, "%(rest)");

	while ((n = getline(&line, &cap, stdin)) >= 0) {
		const char *rest = NULL;
		struct pw_oid oid;

		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n && line[n - 1] == '\r')
			line[--n] = '\0';
		if (want_rest) {
			char *sp = line + strcspn(line, " \t");

			if (*sp) {
				*sp = '\0';
				rest = sp + 1;
				while (*rest == ' ' || *rest == '\t')
					rest++;
			}
		}
		if (pw_cli_resolve_rev(b->repo, line, &oid, NULL))
			rc = batch_missing(line);
		else if ((rc = batch_one(b, &oid, rest)) == 1)
			rc = batch_missing(line);
		if (rc)
			break;
		if (!b->buffer)
			fflush(stdout);
	}
	free(line);
	return rc;
}

static int print_tree(const struct pw_buf *t, const struct pw_hash_algo *algo)
{
	struct pw_tree_entry e;
	struct pw_error err = {0};
	char hex[PW_MAX_HEXSZ + 1];
	size_t pos = 0;
	int rc;

	while ((rc = pw_tree_next(t->data, t->len, &pos, algo, &e, &err)) == 1) {
		const char *type = (e.mode & 0170000) == 0040000   ? "tree"
		                   : (e.mode & 0170000) == 0160000 ? "commit"
		                                                   : "blob";

		printf("%06o %s %s\t%.*s\n", e.mode, type, pw_oid_to_hex(&e.oid, hex),
		       (int)e.name_len, e.name);
	}
	if (rc < 0)
		return pw_cli_fatal("%s", err.msg);
	return 0;
}

static int single(struct pw_odb *odb, struct pw_repo *repo, int mode, int want_type,
                  const char *name)
{
	struct pw_buf data = PW_BUF_INIT;
	struct pw_oid oid;
	uint64_t size;
	int type, rc, compat_in = 0;

	if (pw_cli_resolve_rev(repo, name, &oid, NULL)) {
		/* an id of the compat algorithm: shown in that algorithm */
		if (pw_cli_compat_resolve(repo, name, &oid))
			return pw_cli_fatal("Not a valid object name %s", name);
		compat_in = 1;
	}
	if (mode == 'e')
		return pw_odb_exists(odb, &oid) ? 0 : 1;
	if (mode == 't' || (mode == 's' && !compat_in)) {
		rc = pw_odb_read_header(odb, &oid, &type, &size);
		if (rc == PW_ENOTFOUND)
			return pw_cli_fatal("git cat-file: could not get object info");
		if (rc)
			return pw_cli_fatal("%s", pw_odb_error(odb)->msg);
		if (mode == 't')
			printf("%s\n", pw_object_type_name(type));
		else
			printf("%llu\n", (unsigned long long)size);
		return 0;
	}
	rc = pw_odb_read(odb, &oid, &type, &data);
	if (!rc && compat_in && type != PW_OBJ_BLOB) {
		struct pw_buf conv = PW_BUF_INIT;
		struct pw_error err = {0};

		if (pw_cli_compat_convert(repo, type, &data, &conv, &err)) {
			pw_buf_free(&conv);
			pw_buf_free(&data);
			return pw_cli_fatal("%s", err.msg);
		}
		pw_buf_free(&data);
		data = conv;
	}
	if (!rc && mode == 's') {
		printf("%llu\n", (unsigned long long)data.len);
		pw_buf_free(&data);
		return 0;
	}
	if (rc == PW_ENOTFOUND)
		rc = pw_cli_fatal("Not a valid object name %s", name);
	else if (rc)
		rc = pw_cli_fatal("%s", pw_odb_error(odb)->msg);
	else if (mode == 'p' && type == PW_OBJ_TREE)
		rc = print_tree(&data, compat_in ? pw_cli_compat_algo(repo) : pw_odb_algo(odb));
	else if (mode != 'p' && type != want_type)
		rc = pw_cli_fatal("git cat-file %s: bad file", name);
	else if (write_all(data.data, data.len))
		rc = pw_cli_fatal("unable to write to stdout");
	pw_buf_free(&data);
	return rc;
}

int cmd_cat_file(int argc, char **argv)
{
	struct batch b = {0};
	struct pw_repo *repo = NULL;
	struct pw_odb *odb = NULL;
	struct pw_error err = {0};
	const char *name = NULL;
	int mode = 0, want_type = 0, batch = 0, all = 0, i, rc;
	static char outbuf[1 << 16];

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-t") || !strcmp(a, "-s") || !strcmp(a, "-e") || !strcmp(a, "-p")) {
			if (mode)
				return pw_cli_usage(usage_str);
			mode = a[1];
		} else if (!strcmp(a, "--batch") || !strncmp(a, "--batch=", 8)) {
			batch = 1;
			b.contents = 1;
			b.format = a[7] ? a + 8 : NULL;
		} else if (!strcmp(a, "--batch-check") || !strncmp(a, "--batch-check=", 14)) {
			batch = 1;
			b.format = a[13] ? a + 14 : NULL;
		} else if (!strcmp(a, "--batch-all-objects")) {
			all = 1;
		} else if (!strcmp(a, "--buffer")) {
			b.buffer = 1;
		} else if (!strcmp(a, "--unordered")) {
			/* the sorted order is a valid unordered one */
		} else if (a[0] == '-') {
			return pw_cli_unknown_option(a, usage_str);
		} else if (!mode && !batch && !want_type) {
			want_type = pw_object_type_from_name(a, strlen(a));
			if (!want_type)
				return pw_cli_fatal("invalid object type \"%s\"", a);
			mode = 'T';
		} else if (!name) {
			name = a;
		} else {
			return pw_cli_usage(usage_str);
		}
	}
	if (batch ? (mode || name) : (!mode || !name || all))
		return pw_cli_usage(usage_str);
	if ((rc = pw_cli_open_repo(&repo)))
		return rc;
	if ((rc = pw_odb_open(&odb, pw_repo_objects_dir(repo), pw_repo_algo(repo), &err))) {
		pw_repo_free(repo);
		return pw_cli_fatal("%s", err.msg);
	}
	{
		/* Report unreadable packs as Git does, then carry on without them. */
		const char *w = pw_odb_warnings(odb);

		while (*w) {
			const char *nl = strchr(w, '\n');
			int len = nl ? (int)(nl - w) : (int)strlen(w);

			fprintf(stderr, "error: %.*s\n", len, w);
			w += len + (nl ? 1 : 0);
		}
	}
	if (batch) {
#ifdef __GLIBC__
		/* Delta chains allocate and free many large buffers: keep them in
		 * the heap instead of an mmap/munmap (and page faults) each time. */
		mallopt(M_MMAP_THRESHOLD, 64 << 20);
		mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
		setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
		b.odb = odb;
		b.repo = repo;
		pw_buf_init(&b.obj, 0);
		pw_buf_init(&b.line, 0);
		rc = all ? batch_all(&b) : batch_stdin(&b);
		if (fflush(stdout) && !rc)
			rc = pw_cli_fatal("unable to write to stdout");
		pw_buf_free(&b.obj);
		pw_buf_free(&b.line);
	} else {
		rc = single(odb, repo, mode, want_type, name);
		if (fflush(stdout) && !rc)
			rc = pw_cli_fatal("unable to write to stdout");
	}
	pw_odb_free(odb);
	pw_repo_free(repo);
	return rc;
}
