#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "odb/loose.h"
#include "packwire/object.h"
#include "util/fs.h"

/* Longest header we accept: "commit " + 20 digits + NUL fits comfortably. */
#define HDR_MAX 64
#define ZCHUNK  ((uInt)1 << 30)

int pw_loose_path(struct pw_buf *out, const char *objects_dir, const struct pw_oid *oid)
{
	char hex[PW_MAX_HEXSZ + 1];

	pw_oid_to_hex(oid, hex);
	pw_buf_reset(out);
	return pw_buf_addf(out, "%s/%.2s/%s", objects_dir, hex, hex + 2);
}

/* Feed input to the stream in chunks zlib's uInt can express. */
static void feed(z_stream *s, const uint8_t **in, size_t *left)
{
	if (!s->avail_in && *left) {
		uInt n = *left > ZCHUNK ? ZCHUNK : (uInt)*left;

		s->next_in = (Bytef *)*in;
		s->avail_in = n;
		*in += n;
		*left -= n;
	}
}

static int parse_header(const uint8_t *h, size_t got, int *type, uint64_t *size, size_t *hlen,
                        const char *what, struct pw_error *err)
{
	size_t i = 0, sp;
	uint64_t v = 0;

	while (i < got && h[i] != ' ' && h[i] != '\0' && i < 16)
		i++;
	if (i >= got || h[i] != ' ')
		return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: header has no type", what);
	*type = pw_object_type_from_name((const char *)h, i);
	if (!*type)
		return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: unknown type '%.*s'", what,
		                    (int)i, (const char *)h);
	sp = ++i;
	while (i < got && h[i] >= '0' && h[i] <= '9') {
		unsigned d = (unsigned)(h[i] - '0');

		if (v > (UINT64_MAX - d) / 10)
			return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: size overflows",
			                    what);
		v = v * 10 + d;
		i++;
	}
	if (i == sp)
		return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: header has no size", what);
	if (h[sp] == '0' && i - sp > 1)
		return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: size has a leading zero",
		                    what);
	if (i >= got)
		return pw_error_set(err, PW_ECORRUPT,
		                    "%s is corrupt: header is not terminated by a NUL", what);
	if (h[i] != '\0')
		return pw_error_set(err, PW_ECORRUPT,
		                    "%s is corrupt: unexpected character after the size", what);
	*size = v;
	*hlen = i + 1;
	return 0;
}

int pw_loose_decode(const uint8_t *z, size_t zlen, int *type, uint64_t *size, struct pw_buf *out,
                    const char *what, struct pw_error *err)
{
	uint8_t hdr[HDR_MAX], junk[4096];
	const uint8_t *in = z;
	size_t left = zlen, hlen = 0, got, have;
	uint64_t extra = 0;
	z_stream s;
	int zr, rc;

	memset(&s, 0, sizeof(s));
	if (inflateInit(&s) != Z_OK)
		return pw_error_set(err, PW_ENOMEM, "%s: cannot start inflate", what);
	s.next_out = hdr;
	s.avail_out = sizeof(hdr);
	do {
		feed(&s, &in, &left);
		zr = inflate(&s, Z_NO_FLUSH);
	} while (zr == Z_OK && s.avail_out && (s.avail_in || left));
	got = sizeof(hdr) - s.avail_out;
	if (zr != Z_OK && zr != Z_STREAM_END && !(zr == Z_BUF_ERROR && got)) {
		rc = pw_error_set(err, PW_ECORRUPT, "%s is corrupt: %s", what,
		                  zr == Z_DATA_ERROR ? "not valid zlib data"
		                                     : "truncated zlib data");
		goto done;
	}
	if ((rc = parse_header(hdr, got, type, size, &hlen, what, err)))
		goto done;
	if (!out)
		goto done;
	have = got - hlen;
	if (*size >= SIZE_MAX || *size > ((uint64_t)1 << 40)) {
		rc = pw_error_set(err, PW_ETOOBIG, "%s: object too large (%llu bytes)", what,
		                  (unsigned long long)*size);
		goto done;
	}
	/* zlib cannot expand more than ~1032:1; a bigger claim is a lie, and
	 * believing it would allocate absurd amounts. */
	if (*size > (uint64_t)zlen * 1032 + 1024) {
		rc = pw_error_set(err, PW_ECORRUPT,
		                  "%s is corrupt: header says %llu bytes, more than %zu compressed "
		                  "bytes can hold",
		                  what, (unsigned long long)*size, zlen);
		goto done;
	}
	if (have > *size) {
		rc = pw_error_set(err, PW_ECORRUPT,
		                  "%s is corrupt: header says %llu bytes, inflated more", what,
		                  (unsigned long long)*size);
		goto done;
	}
	pw_buf_reset(out);
	if ((rc = pw_buf_grow(out, (size_t)*size))) {
		rc = pw_error_set(err, rc, "%s: cannot allocate %llu bytes", what,
		                  (unsigned long long)*size);
		goto done;
	}
	memcpy(out->data, hdr + hlen, have);
	got = have;
	while (zr != Z_STREAM_END) {
		int in_junk = got >= *size;
		uInt before;

		/* Past the declared size, inflate into junk only to count. */
		if (in_junk) {
			s.next_out = junk;
			s.avail_out = sizeof(junk);
		} else {
			s.next_out = (Bytef *)out->data + got;
			s.avail_out = *size - got > ZCHUNK ? ZCHUNK : (uInt)(*size - got);
		}
		before = s.avail_out;
		feed(&s, &in, &left);
		zr = inflate(&s, Z_NO_FLUSH);
		if (in_junk)
			extra += before - s.avail_out;
		else
			got += before - s.avail_out;
		if (zr != Z_OK && zr != Z_STREAM_END)
			break; /* bad data, or the input ran out (Z_BUF_ERROR) */
		if (extra > ((uint64_t)1 << 32))
			break;
	}
	if (extra || got != *size) {
		rc = pw_error_set(err, PW_ECORRUPT,
		                  "%s is corrupt: header says %llu bytes, inflated %llu", what,
		                  (unsigned long long)*size, (unsigned long long)(got + extra));
		goto done;
	}
	if (zr != Z_STREAM_END) {
		rc = pw_error_set(err, PW_ECORRUPT, "%s is corrupt: %s", what,
		                  zr == Z_DATA_ERROR ? "bad zlib data" : "truncated zlib data");
		goto done;
	}
	if (s.avail_in || left) {
		rc = pw_error_set(err, PW_ECORRUPT,
		                  "%s is corrupt: %llu bytes of garbage after the zlib data", what,
		                  (unsigned long long)(s.avail_in + left));
		goto done;
	}
	out->len = got;
	out->data[got] = '\0';
done:
	inflateEnd(&s);
	return rc;
}

/* ---- streaming ------------------------------------------------------------ */

#define STREAM_OUT 65536

int pw_loose_stream_init(struct pw_loose_stream *s, const struct pw_hash_algo *algo,
                         uint64_t max_size, const char *what, struct pw_error *err)
{
	memset(s, 0, sizeof(*s));
	s->algo = algo;
	s->what = what;
	s->max_size = max_size && max_size < PW_LOOSE_MAX_SIZE ? max_size : PW_LOOSE_MAX_SIZE;
	if (!(s->z = calloc(1, sizeof(z_stream))) || !(s->out = malloc(STREAM_OUT))) {
		pw_loose_stream_free(s);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (inflateInit((z_stream *)s->z) != Z_OK) {
		free(s->z);
		s->z = NULL;
		pw_loose_stream_free(s);
		return pw_error_set(err, PW_ENOMEM, "%s: cannot start inflate", what);
	}
	return 0;
}

void pw_loose_stream_free(struct pw_loose_stream *s)
{
	if (s->z) {
		inflateEnd((z_stream *)s->z);
		free(s->z);
	}
	free(s->out);
	s->z = NULL;
	s->out = NULL;
}

/* Content bytes: hashed and counted, never past the declared size. */
static int stream_content(struct pw_loose_stream *s, const uint8_t *p, size_t n,
                          struct pw_error *err)
{
	if (n > s->size - s->got)
		return pw_error_set(err, PW_ECORRUPT,
		                    "%s is corrupt: it inflates to more than the %llu bytes its "
		                    "header declares",
		                    s->what, (unsigned long long)s->size);
	pw_hash_update(&s->h, p, n);
	s->got += n;
	return 0;
}

/* Inflated bytes: the header first (checked once its NUL is in), then
 * content. */
static int stream_take(struct pw_loose_stream *s, const uint8_t *p, size_t n, struct pw_error *err)
{
	while (n && !s->have_hdr) {
		size_t hl, i;
		int rc;

		for (i = 0; i < n && s->hlen < sizeof(s->hdr); i++) {
			s->hdr[s->hlen++] = p[i];
			if (!p[i])
				break;
		}
		if (i == n || s->hdr[s->hlen - 1]) {
			if (s->hlen < sizeof(s->hdr))
				return 0; /* more header to come */
			return pw_error_set(err, PW_ECORRUPT,
			                    "%s is corrupt: header is not terminated by a NUL",
			                    s->what);
		}
		/* the header is whole: "<type> <size>\0", strict as pw_loose_decode */
		if ((rc = parse_header(s->hdr, s->hlen, &s->type, &s->size, &hl, s->what, err)))
			return rc;
		if (s->size > s->max_size)
			return pw_error_set(err, PW_ETOOBIG,
			                    "%s: object too large (%llu bytes, at most %llu)",
			                    s->what, (unsigned long long)s->size,
			                    (unsigned long long)s->max_size);
		s->have_hdr = 1;
		pw_hash_init(&s->h, s->algo);
		pw_hash_update(&s->h, s->hdr, s->hlen);
		p += i + 1;
		n -= i + 1;
	}
	return n ? stream_content(s, p, n, err) : 0;
}

int pw_loose_stream_feed(struct pw_loose_stream *s, const void *data, size_t len,
                         struct pw_error *err)
{
	z_stream *z = s->z;
	int rc;

	if (!len)
		return 0;
	if (s->done)
		return pw_error_set(err, PW_ECORRUPT,
		                    "%s is corrupt: bytes of garbage after the zlib data", s->what);
	z->next_in = (Bytef *)(uintptr_t)data;
	while (len) {
		uInt chunk = len > ZCHUNK ? ZCHUNK : (uInt)len;
		int zr;

		z->next_in = (Bytef *)(uintptr_t)data;
		z->avail_in = chunk;
		do {
			z->next_out = s->out;
			z->avail_out = STREAM_OUT;
			zr = inflate(z, Z_NO_FLUSH);
			if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
				return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: %s", s->what,
				                    zr == Z_DATA_ERROR ? "not valid zlib data"
				                                       : "cannot inflate");
			if ((rc = stream_take(s, s->out, STREAM_OUT - z->avail_out, err)))
				return rc;
			if (zr == Z_STREAM_END) {
				s->done = 1;
				if (z->avail_in || len > chunk)
					return pw_error_set(err, PW_ECORRUPT,
					                    "%s is corrupt: bytes of garbage after "
					                    "the zlib data",
					                    s->what);
				return 0;
			}
		} while (z->avail_in || !z->avail_out);
		data = (const uint8_t *)data + chunk;
		len -= chunk;
	}
	return 0;
}

int pw_loose_stream_finish(struct pw_loose_stream *s, struct pw_oid *oid, int *type, uint64_t *size,
                           struct pw_error *err)
{
	if (!s->done)
		return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: %s", s->what,
		                    s->have_hdr ? "truncated zlib data" : "no object header");
	if (!s->have_hdr)
		return pw_error_set(err, PW_ECORRUPT, "%s is corrupt: header has no type", s->what);
	if (s->got != s->size)
		return pw_error_set(err, PW_ECORRUPT,
		                    "%s is corrupt: header says %llu bytes, inflated %llu", s->what,
		                    (unsigned long long)s->size, (unsigned long long)s->got);
	*type = s->type;
	*size = s->size;
	if (pw_hash_final(&s->h, oid))
		return pw_hash_collision_error(err, oid);
	return 0;
}

int pw_loose_exists(const char *objects_dir, const struct pw_oid *oid)
{
	char path[4096], hex[PW_MAX_HEXSZ + 1];

	pw_oid_to_hex(oid, hex);
	if ((size_t)snprintf(path, sizeof(path), "%s/%.2s/%s", objects_dir, hex, hex + 2) >=
	    sizeof(path))
		return 0;
	return access(path, F_OK) == 0;
}

int pw_loose_read(const char *objects_dir, const struct pw_oid *oid, int *type, uint64_t *size,
                  struct pw_buf *out, struct pw_buf *scratch, struct pw_error *err)
{
	char path[4096], hex[PW_MAX_HEXSZ + 1], what[4096 + 200];
	int fd, rc;

	pw_oid_to_hex(oid, hex);
	if ((size_t)snprintf(path, sizeof(path), "%s/%.2s/%s", objects_dir, hex, hex + 2) >=
	    sizeof(path))
		return pw_error_set(err, PW_EINVAL, "object directory path too long");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return PW_ENOTFOUND;
		return pw_error_set(err, PW_EIO, "cannot open loose object %s: %s", path,
		                    strerror(errno));
	}
	pw_buf_reset(scratch);
	for (;;) {
		ssize_t n;

		if ((rc = pw_buf_grow(scratch, out ? 65536 : HDR_MAX * 4))) {
			close(fd);
			return pw_error_set(err, rc, "%s: out of memory", path);
		}
		n = read(fd, scratch->data + scratch->len, scratch->cap - scratch->len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = pw_error_set(err, PW_EIO, "cannot read %s: %s", path, strerror(errno));
			close(fd);
			return rc;
		}
		if (n == 0)
			break;
		scratch->len += (size_t)n;
		/* The header needs only the first few hundred bytes. */
		if (!out && scratch->len >= 512)
			break;
	}
	close(fd);
	snprintf(what, sizeof(what), "loose object %s (stored in %s)", hex, path);
	if (!out) {
		/* A partial read: only the header is inflated, trailing checks skipped. */
		return pw_loose_decode((const uint8_t *)scratch->data, scratch->len, type, size,
		                       NULL, what, err);
	}
	return pw_loose_decode((const uint8_t *)scratch->data, scratch->len, type, size, out, what,
	                       err);
}

int pw_loose_write(const char *objects_dir, const struct pw_hash_algo *algo, int type,
                   const void *data, size_t len, struct pw_oid *oid, struct pw_error *err)
{
	char hdr[32], hex[PW_MAX_HEXSZ + 1];
	struct pw_buf path = PW_BUF_INIT, tmp = PW_BUF_INIT, z = PW_BUF_INIT;
	size_t hlen;
	z_stream s;
	int rc = 0, fd = -1, zr;

	if (!pw_object_type_name(type))
		return pw_error_set(err, PW_EINVAL, "cannot write an object of type %d", type);
	if (pw_object_hash(algo, type, data, len, oid))
		return pw_hash_collision_error(err, oid);
	hlen = pw_object_header(hdr, type, len);
	pw_oid_to_hex(oid, hex);
	if ((rc = pw_loose_path(&path, objects_dir, oid)) ||
	    (rc = pw_buf_addf(&tmp, "%s/%.2s", objects_dir, hex))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto done;
	}
	if (access(path.data, F_OK) == 0)
		goto done;
	if ((rc = pw_fs_mkdir_p(tmp.data, err)))
		goto done;
	if ((rc = pw_buf_adds(&tmp, "/tmp_obj_XXXXXX"))) {
		rc = pw_error_set(err, rc, "out of memory");
		goto done;
	}
	memset(&s, 0, sizeof(s));
	if (deflateInit(&s, Z_BEST_SPEED) != Z_OK) {
		rc = pw_error_set(err, PW_ENOMEM, "cannot start deflate");
		goto done;
	}
	if ((rc = pw_buf_grow(&z, deflateBound(&s, (uLong)(hlen + len)) + 64))) {
		deflateEnd(&s);
		rc = pw_error_set(err, rc, "out of memory compressing %s", hex);
		goto done;
	}
	s.next_out = (Bytef *)z.data;
	s.avail_out = (uInt)(z.cap - 1);
	s.next_in = (Bytef *)hdr;
	s.avail_in = (uInt)hlen;
	zr = deflate(&s, Z_NO_FLUSH);
	s.next_in = (Bytef *)data;
	s.avail_in = (uInt)len;
	if (zr == Z_OK)
		zr = deflate(&s, Z_FINISH);
	z.len = (size_t)((char *)s.next_out - z.data);
	deflateEnd(&s);
	if (zr != Z_STREAM_END) {
		rc = pw_error_set(err, PW_ERROR, "deflate failed writing %s", hex);
		goto done;
	}
	fd = pw_fs_mkstemp_mode(tmp.data, 0444); /* read-only as Git's, under the umask */
	if (fd < 0) {
		rc = pw_error_set(err, PW_EIO, "cannot create %s: %s", tmp.data, strerror(errno));
		goto done;
	}
	if (pw_fs_write_all(fd, z.data, z.len)) {
		rc = pw_error_set(err, PW_EIO, "cannot write %s: %s", tmp.data, strerror(errno));
		goto done;
	}
	if (close(fd)) {
		fd = -1;
		rc = pw_error_set(err, PW_EIO, "cannot write %s: %s", tmp.data, strerror(errno));
		goto done;
	}
	fd = -1;
	if (rename(tmp.data, path.data)) {
		rc = pw_error_set(err, PW_EIO, "cannot move %s to %s: %s", tmp.data, path.data,
		                  strerror(errno));
		goto done;
	}
	pw_buf_reset(&tmp);
done:
	if (fd >= 0)
		close(fd);
	if (tmp.len && rc)
		unlink(tmp.data);
	pw_buf_free(&path);
	pw_buf_free(&tmp);
	pw_buf_free(&z);
	return rc;
}
