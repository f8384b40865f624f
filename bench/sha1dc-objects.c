/* bench/sha1dc-objects: reads `git cat-file --batch` output on stdin (every
 * object of a history), then hashes each object as Git does ("<type>
 * <size>\0<content>") with packwire's SHA-1 (collision detection,
 * pw_object_hash) and with OpenSSL's plain SHA-1, in interleaved rounds,
 * and prints the medians in total and by object size; then with two objects
 * at once (pw_object_hash_pair, as index-pack's resolvers hash the objects
 * they make). All must give the object's id. Built by bench/sha1dc against
 * the build's static library. */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hash/object-pair.h"
#include "packwire/packwire.h"

struct obj {
	int type;
	size_t size;
	unsigned char *data;
	unsigned char id[20];
};

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static const size_t bounds[] = {128, 1024, 8192, 65536, (size_t)-1};
#define NCLASS (sizeof(bounds) / sizeof(bounds[0]))

static int class_of(size_t size)
{
	int c = 0;

	while (size + 32 > bounds[c])
		c++;
	return c;
}

/* The objects of size class c, two at a time; 1 on a wrong id. */
static int pair_class(const struct obj *objs, size_t n, int c)
{
	const struct obj *first = NULL;
	size_t i;

	for (i = 0; i < n; i++) {
		struct pw_object_bytes in[2];
		struct pw_oid out[2];
		int rc[2];

		if (class_of(objs[i].size) != c)
			continue;
		if (!first) {
			first = &objs[i];
			continue;
		}
		in[0] = (struct pw_object_bytes){first->type, first->data, first->size};
		in[1] = (struct pw_object_bytes){objs[i].type, objs[i].data, objs[i].size};
		if (pw_object_hash_pair(&pw_hash_sha1, in, out, rc) ||
		    memcmp(out[0].id, first->id, 20) || memcmp(out[1].id, objs[i].id, 20))
			return fprintf(stderr, "object %zu: wrong digest in a pair\n", i), 1;
		first = NULL;
	}
	if (first) {
		struct pw_oid oid;

		if (pw_object_hash(&pw_hash_sha1, first->type, first->data, first->size, &oid))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, r, c;
	size_t n = 0, cap = 1 << 16, i, count[NCLASS] = {0}, bytes[NCLASS] = {0};
	struct obj *objs = malloc(cap * sizeof(*objs));
	char line[256];
	double(*t_pw)[NCLASS + 1], (*t_ossl)[NCLASS + 1], (*t_pair)[NCLASS + 1];

	if (!objs)
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		char hex[41], type[16];
		unsigned long long size;
		struct obj *o;
		int k;

		if (sscanf(line, "%40s %15s %llu", hex, type, &size) != 3)
			return fprintf(stderr, "bad line: %s", line), 1;
		if (n == cap && !(objs = realloc(objs, (cap *= 2) * sizeof(*objs))))
			return 1;
		o = &objs[n++];
		o->type = pw_object_type_from_name(type, strlen(type));
		o->size = (size_t)size;
		if (!(o->data = malloc(o->size + 1)) ||
		    fread(o->data, 1, o->size + 1, stdin) != o->size + 1)
			return fprintf(stderr, "short input\n"), 1;
		for (k = 0; k < 20; k++)
			sscanf(hex + 2 * k, "%2hhx", &o->id[k]);
		c = class_of(o->size);
		count[c]++;
		bytes[c] += o->size;
	}
	t_pw = calloc((size_t)rounds, sizeof(*t_pw));
	t_ossl = calloc((size_t)rounds, sizeof(*t_ossl));
	t_pair = calloc((size_t)rounds, sizeof(*t_pair));
	if (!t_pw || !t_ossl || !t_pair)
		return 1;
	/* each size class timed as a whole (a clock read per object would cost
	 * as much as hashing a small one), the two in turn */
	for (r = 0; r < rounds; r++) {
		for (c = 0; c < (int)NCLASS; c++) {
			double t0 = now(), t1, t2;

			for (i = 0; i < n; i++) {
				struct obj *o = &objs[i];
				SHA_CTX ctx;
				unsigned char md[20];
				char hdr[32];
				size_t hl;

				if (class_of(o->size) != c)
					continue;
				hl = pw_object_header(hdr, o->type, o->size);
				SHA1_Init(&ctx);
				SHA1_Update(&ctx, hdr, hl);
				SHA1_Update(&ctx, o->data, o->size);
				SHA1_Final(md, &ctx);
				if (memcmp(md, o->id, 20))
					return fprintf(stderr, "object %zu: wrong digest\n", i), 1;
			}
			t1 = now();
			for (i = 0; i < n; i++) {
				struct obj *o = &objs[i];
				struct pw_oid oid;

				if (class_of(o->size) != c)
					continue;
				if (pw_object_hash(&pw_hash_sha1, o->type, o->data, o->size, &oid))
					return fprintf(stderr, "a collision attack?\n"), 1;
				if (memcmp(oid.id, o->id, 20))
					return fprintf(stderr, "object %zu: wrong digest\n", i), 1;
			}
			t2 = now();
			if (pair_class(objs, n, c))
				return 1;
			t_pair[r][c] = now() - t2;
			t_pair[r][NCLASS] += t_pair[r][c];
			t_ossl[r][c] = t1 - t0;
			t_pw[r][c] = t2 - t1;
			t_ossl[r][NCLASS] += t1 - t0;
			t_pw[r][NCLASS] += t2 - t1;
		}
	}
	printf("%-22s %9s %10s %10s %10s %7s %10s %7s\n", "objects (size+header)", "count", "MB",
	       "openssl_s", "pw_s", "ratio", "pairs_s", "ratio");
	for (c = 0; c <= (int)NCLASS; c++) {
		double a[64], b[64], p[64];
		size_t cnt = 0, by = 0;
		char label[32];

		for (r = 0; r < rounds && r < 64; r++) {
			a[r] = t_ossl[r][c];
			b[r] = t_pw[r][c];
			p[r] = t_pair[r][c];
		}
		qsort(p, (size_t)r, sizeof(double), cmp_double);
		qsort(a, (size_t)r, sizeof(double), cmp_double);
		qsort(b, (size_t)r, sizeof(double), cmp_double);
		if (c == (int)NCLASS) {
			for (i = 0; i < NCLASS; i++) {
				cnt += count[i];
				by += bytes[i];
			}
			snprintf(label, sizeof(label), "all");
		} else {
			cnt = count[c];
			by = bytes[c];
			if (bounds[c] == (size_t)-1)
				snprintf(label, sizeof(label), "> %zu B", bounds[c - 1]);
			else
				snprintf(label, sizeof(label), "< %zu B", bounds[c]);
		}
		printf("%-22s %9zu %10.1f %10.3f %10.3f %6.2fx %10.3f %6.2fx\n", label, cnt,
		       (double)by / 1e6, a[r / 2], b[r / 2],
		       b[r / 2] / (a[r / 2] > 0 ? a[r / 2] : 1e-9), p[r / 2],
		       p[r / 2] / (a[r / 2] > 0 ? a[r / 2] : 1e-9));
	}
	return 0;
}
