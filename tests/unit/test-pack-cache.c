/* The pack cache without git: the entry format (round trips at every
 * record boundary, every byte of an entry flipped and every truncation
 * detected, the framing rules), and the directory (roles of a lookup,
 * publishing, a writer that died in another process, eviction by last
 * use, the bounds on entries, bytes and generations, removal of a damaged
 * entry, the counters). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "packwire/buf.h"
#include "packwire/pack-cache.h"
#include "server/pack-cache-entry.h"
#include "server/pack-cache.h"
#include "test.h"

/* ---- the format ----------------------------------------------------------- */

/* An entry of len bytes of data (record size rs) into b; trailer numbers
 * from seed. */
static void make_entry(struct pw_buf *b, const uint8_t *key, uint32_t rs, const uint8_t *data,
                       size_t len, const struct pw_pc_trailer *t)
{
	struct pw_pc_writer w;
	uint8_t hdr[PW_PC_HDR_SIZE], end[PW_PC_END_SIZE];
	uint8_t *rec = malloc(rs + 4 + PW_PC_HASH_SIZE);
	size_t off = 0;

	pw_buf_reset(b);
	pw_pc_writer_init(&w, key, rs, hdr);
	pw_buf_add(b, hdr, sizeof(hdr));
	while (off < len) {
		uint32_t n = len - off > rs ? rs : (uint32_t)(len - off);

		pw_buf_add(b, rec, pw_pc_write_record(&w, data + off, n, rec));
		off += n;
	}
	pw_buf_add(b, end, pw_pc_write_end(&w, t, end));
	free(rec);
}

/* Read an entry whole: 0 and the data in out when it is good and complete,
 * else the first error (PW_EMORE for one that stops early). */
static int read_all(const uint8_t *in, size_t len, const uint8_t *key, struct pw_buf *out,
                    struct pw_pc_trailer *t)
{
	struct pw_pc_reader r;
	struct pw_pc_record rec;
	struct pw_error err;
	size_t used, off;
	int rc;

	pw_buf_reset(out);
	if ((rc = pw_pc_read_header(&r, in, len, key, &used, &err)))
		return rc;
	off = used;
	for (;;) {
		if ((rc = pw_pc_read_record(&r, in + off, len - off, &rec, &err)))
			return rc;
		off += rec.size;
		if (rec.kind == PW_PC_FAILED)
			return PW_ERROR;
		if (rec.kind == PW_PC_END) {
			*t = rec.end;
			/* nothing may follow */
			if (off != len)
				return pw_pc_read_record(&r, in + off, len - off, &rec, &err);
			return 0;
		}
		pw_buf_add(out, rec.data, rec.len);
	}
}

static void test_round_trips(void)
{
	static const size_t lens[] = {0, 1, 15, 16, 17, 31, 32, 33, 100, 1000};
	uint8_t key[PW_PC_KEY_SIZE], data[1000];
	struct pw_pc_trailer t = {0, 7, 3, 2, 1, 9}, got;
	struct pw_buf b = PW_BUF_INIT, out = PW_BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 31 + (i >> 3));
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		memset(&got, 0, sizeof(got));
		make_entry(&b, key, 16, data, lens[i], &t);
		CHECK_EQ_INT(read_all((uint8_t *)b.data, b.len, key, &out, &got), 0);
		CHECK_EQ_INT(out.len, lens[i]);
		CHECK(!memcmp(out.data, data, lens[i]));
		CHECK_EQ_INT(got.total, lens[i]);
		CHECK(got.objects == 7 && got.deltas == 3 && got.reused == 2 &&
		      got.reused_deltas == 1 && got.pack_reused == 9);
		/* any key but its own is refused; NULL takes any */
		key[5] ^= 1;
		CHECK_EQ_INT(read_all((uint8_t *)b.data, b.len, key, &out, &got), PW_ECORRUPT);
		key[5] ^= 1;
		CHECK_EQ_INT(read_all((uint8_t *)b.data, b.len, NULL, &out, &got), 0);
	}
	pw_buf_free(&b);
	pw_buf_free(&out);
}

/* Every byte of an entry changed, every prefix and trailing junk: never a
 * complete entry with other data. */
static void test_damage(void)
{
	uint8_t key[PW_PC_KEY_SIZE], data[70];
	struct pw_pc_trailer t = {0, 1, 0, 0, 0, 0}, got;
	struct pw_buf b = PW_BUF_INIT, out = PW_BUF_INIT;
	size_t i, bad = 0, cut = 0;
	int bit;

	memset(key, 0x5a, sizeof(key));
	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)i;
	make_entry(&b, key, 32, data, sizeof(data), &t);
	for (i = 0; i < b.len; i++)
		for (bit = 0; bit < 8; bit += 3) {
			b.data[i] ^= (char)(1 << bit);
			if (read_all((uint8_t *)b.data, b.len, key, &out, &got) == 0)
				bad++;
			b.data[i] ^= (char)(1 << bit);
		}
	CHECK_EQ_INT(bad, 0);
	for (i = 0; i < b.len; i++)
		if (read_all((uint8_t *)b.data, i, key, &out, &got) == 0)
			cut++;
	CHECK_EQ_INT(cut, 0);
	pw_buf_addch(&b, 0);
	CHECK_EQ_INT(read_all((uint8_t *)b.data, b.len, key, &out, &got), PW_ECORRUPT);
	pw_buf_free(&b);
	pw_buf_free(&out);
}

/* The framing rules: a short record only last, lengths in range, the
 * failure record, and what PW_EMORE asks for. */
static void test_framing(void)
{
	uint8_t key[PW_PC_KEY_SIZE] = {1}, hdr[PW_PC_HDR_SIZE], rec[64 + 36], msg[PW_PC_FAILED_MAX];
	struct pw_pc_writer w;
	struct pw_pc_reader r;
	struct pw_pc_record pr;
	struct pw_buf b = PW_BUF_INIT;
	struct pw_error err;
	size_t used, n, off, i;

	/* short, then full: refused */
	pw_pc_writer_init(&w, key, 8, hdr);
	pw_buf_add(&b, hdr, sizeof(hdr));
	pw_buf_add(&b, rec, pw_pc_write_record(&w, "abc", 3, rec));
	pw_buf_add(&b, rec, pw_pc_write_record(&w, "abcdefgh", 8, rec));
	CHECK_EQ_INT(pw_pc_read_header(&r, (uint8_t *)b.data, b.len, key, &used, &err), 0);
	off = used;
	CHECK_EQ_INT(pw_pc_read_record(&r, (uint8_t *)b.data + off, b.len - off, &pr, &err), 0);
	off += pr.size;
	CHECK_EQ_INT(pw_pc_read_record(&r, (uint8_t *)b.data + off, b.len - off, &pr, &err),
	             PW_ECORRUPT);
	CHECK(strstr(err.msg, "short record") != NULL);

	/* a failure record carries its message */
	pw_buf_reset(&b);
	pw_pc_writer_init(&w, key, 8, hdr);
	pw_buf_add(&b, hdr, sizeof(hdr));
	pw_buf_add(&b, rec, pw_pc_write_record(&w, "abcdefgh", 8, rec));
	pw_buf_add(&b, msg, pw_pc_write_failed(&w, "upload-pack: not our ref", msg));
	CHECK_EQ_INT(pw_pc_read_header(&r, (uint8_t *)b.data, b.len, key, &used, &err), 0);
	off = used;
	CHECK_EQ_INT(pw_pc_read_record(&r, (uint8_t *)b.data + off, b.len - off, &pr, &err), 0);
	off += pr.size;
	CHECK_EQ_INT(pw_pc_read_record(&r, (uint8_t *)b.data + off, b.len - off, &pr, &err), 0);
	CHECK_EQ_INT(pr.kind, PW_PC_FAILED);
	CHECK(pr.len == 24 && !memcmp(pr.data, "upload-pack: not our ref", 24));
	off += pr.size;
	CHECK_EQ_INT(off, b.len);

	/* fed a byte at a time: PW_EMORE says how much the record needs */
	pw_buf_reset(&b);
	pw_pc_writer_init(&w, key, 8, hdr);
	pw_buf_add(&b, hdr, sizeof(hdr));
	n = pw_pc_write_record(&w, "abcdefgh", 8, rec);
	pw_buf_add(&b, rec, n);
	CHECK_EQ_INT(pw_pc_read_header(&r, (uint8_t *)b.data, 10, key, &used, &err), PW_EMORE);
	CHECK_EQ_INT(pw_pc_read_header(&r, (uint8_t *)b.data, b.len, key, &used, &err), 0);
	for (i = 0; i < n; i++) {
		CHECK_EQ_INT(pw_pc_read_record(&r, (uint8_t *)b.data + used, i, &pr, &err),
		             PW_EMORE);
		CHECK(pr.size > i && pr.size <= n);
	}
	CHECK_EQ_INT(pw_pc_read_record(&r, (uint8_t *)b.data + used, n, &pr, &err), 0);

	/* lengths a reader refuses: past the record size, a huge message */
	pw_buf_reset(&b);
	pw_pc_writer_init(&w, key, 8, hdr);
	CHECK_EQ_INT(pw_pc_read_header(&r, hdr, sizeof(hdr), key, &used, &err), 0);
	memcpy(rec, "\0\0\0\x09", 4);
	CHECK_EQ_INT(pw_pc_read_record(&r, rec, 40, &pr, &err), PW_ECORRUPT);
	memcpy(rec, "\xff\xff\xff\xff\0\0\x04\x01", 8);
	CHECK_EQ_INT(pw_pc_read_record(&r, rec, 40, &pr, &err), PW_ECORRUPT);
	/* headers a reader refuses */
	hdr[12] = 0x7f; /* record size past PW_PC_RECORD_MAX */
	CHECK_EQ_INT(pw_pc_read_header(&r, hdr, sizeof(hdr), NULL, &used, &err), PW_ECORRUPT);
	pw_pc_writer_init(&w, key, 8, hdr);
	hdr[60] = 1;
	CHECK_EQ_INT(pw_pc_read_header(&r, hdr, sizeof(hdr), NULL, &used, &err), PW_ECORRUPT);
	pw_pc_writer_init(&w, key, 8, hdr);
	hdr[0] = 'X';
	CHECK_EQ_INT(pw_pc_read_header(&r, hdr, sizeof(hdr), NULL, &used, &err), PW_ECORRUPT);
	pw_buf_free(&b);
}

/* ---- the directory ------------------------------------------------------------ */

static char root[256];

static void rm_rf(const char *dir)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

static int exists(const char *dir, const uint8_t *key, const char *ext)
{
	char path[600], hex[65];
	struct stat st;
	int i;

	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	snprintf(path, sizeof(path), "%s/%s%s", dir, hex, ext);
	return !stat(path, &st);
}

/* A whole entry of len bytes through a LEAD slot, published. */
static int write_entry(struct pw_pack_cache *c, struct pw_pc_slot *slot, const uint8_t *key,
                       size_t len)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_pc_trailer t = {0};
	uint8_t *data = calloc(1, len + 1);
	struct pw_error err;
	int rc;

	make_entry(&b, key, PW_PC_RECORD_SIZE, data, len, &t);
	rc = pw_pc_write_at(c, slot, PW_PC_HDR_SIZE, b.data + PW_PC_HDR_SIZE,
	                    b.len - PW_PC_HDR_SIZE, &err);
	if (!rc)
		rc = pw_pc_publish(c, slot, &err);
	free(data);
	pw_buf_free(&b);
	return rc;
}

static void header_of(const uint8_t *key, uint8_t hdr[PW_PC_HDR_SIZE])
{
	struct pw_pc_writer w;

	pw_pc_writer_init(&w, key, PW_PC_RECORD_SIZE, hdr);
}

static void test_roles(void)
{
	struct pw_pack_cache_opts o;
	struct pw_pack_cache *c;
	struct pw_pack_cache_stats st;
	struct pw_pc_slot a, b, r;
	struct pw_error err;
	uint8_t key[PW_PC_KEY_SIZE], hdr[PW_PC_HDR_SIZE];
	char dir[300];

	snprintf(dir, sizeof(dir), "%s/roles", root);
	memset(key, 0x11, sizeof(key));
	header_of(key, hdr);
	pw_pack_cache_opts_init(&o);
	o.dir = dir;
	CHECK_EQ_INT(pw_pack_cache_open(&c, &o, &err), 0);
	CHECK_STR(pw_pack_cache_dir(c), dir);
	/* the first one writes, the next one follows it */
	CHECK_EQ_INT(pw_pc_lookup(c, key, hdr, &a, &err), 0);
	CHECK_EQ_INT(a.role, PW_PC_LEAD);
	CHECK(exists(dir, key, ".part"));
	CHECK_EQ_INT(pw_pc_lookup(c, key, hdr, &b, &err), 0);
	CHECK_EQ_INT(b.role, PW_PC_FOLLOW);
	CHECK(pw_pc_writer_alive(&b));
	CHECK_EQ_INT(pw_pc_open_reader(c, &a, &r, &err), 0);
	CHECK(pw_pc_writer_alive(&r)); /* its own reader sees the lock too */
	CHECK_EQ_INT(write_entry(c, &a, key, 100000), 0);
	CHECK(!pw_pc_writer_alive(&b)); /* done: the lock is free */
	CHECK(exists(dir, key, ".pack") && !exists(dir, key, ".part"));
	pw_pc_slot_close(&b);
	pw_pc_slot_close(&r);
	/* then it is a hit */
	CHECK_EQ_INT(pw_pc_lookup(c, key, hdr, &b, &err), 0);
	CHECK_EQ_INT(b.role, PW_PC_HIT);
	pw_pack_cache_get_stats(c, &st);
	CHECK_EQ_INT(st.entries, 1);
	CHECK_EQ_INT(st.bytes, PW_PC_HDR_SIZE + 2 * (4 + 32) + 100000 + PW_PC_END_SIZE);
	/* damaged: dropped and counted */
	pw_pc_drop(c, &b, 1);
	CHECK(!exists(dir, key, ".pack"));
	pw_pack_cache_get_stats(c, &st);
	CHECK_EQ_INT(st.corrupt, 1);
	/* a failed generation leaves nothing */
	CHECK_EQ_INT(pw_pc_lookup(c, key, hdr, &a, &err), 0);
	CHECK_EQ_INT(a.role, PW_PC_LEAD);
	pw_pc_abandon(c, &a);
	CHECK(!exists(dir, key, ".part") && !exists(dir, key, ".pack"));
	pw_pc_count(c, PW_PC_N_HIT, 2);
	pw_pc_count(c, PW_PC_N_SERVED, 1234);
	pw_pack_cache_get_stats(c, &st);
	CHECK(st.hits == 2 && st.bytes_served == 1234 && st.misses == 0);
	pw_pack_cache_free(c);
}

/* A writer in another process: alive while it holds the part, dead (and
 * its part removed) once it is killed. */
static void test_dead_writer(void)
{
	struct pw_pack_cache_opts o;
	struct pw_pack_cache *c;
	struct pw_pc_slot s;
	struct pw_error err;
	uint8_t key[PW_PC_KEY_SIZE], hdr[PW_PC_HDR_SIZE];
	int pipefd[2], status;
	char dir[300], ch;
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/dead", root);
	memset(key, 0x22, sizeof(key));
	header_of(key, hdr);
	pw_pack_cache_opts_init(&o);
	o.dir = dir;
	CHECK_EQ_INT(pw_pack_cache_open(&c, &o, &err), 0);
	CHECK(!pipe(pipefd));
	pid = fork();
	if (pid == 0) {
		struct pw_pack_cache *cc;
		struct pw_pc_slot w;

		if (pw_pack_cache_open(&cc, &o, &err) || pw_pc_lookup(cc, key, hdr, &w, &err) ||
		    w.role != PW_PC_LEAD)
			_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CHECK(read(pipefd[0], &ch, 1) == 1);
	CHECK_EQ_INT(pw_pc_lookup(c, key, hdr, &s, &err), 0);
	CHECK_EQ_INT(s.role, PW_PC_FOLLOW);
	CHECK(pw_pc_writer_alive(&s));
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	CHECK(!pw_pc_writer_alive(&s));
	pw_pc_drop(c, &s, 0);
	CHECK(!exists(dir, key, ".part"));
	/* one left behind is removed when a cache opens, and by a lookup */
	close(pipefd[0]);
	close(pipefd[1]);
	{
		char path[600], hex[65];
		int i, fd;

		for (i = 0; i < 32; i++)
			snprintf(hex + 2 * i, 3, "%02x", key[i]);
		snprintf(path, sizeof(path), "%s/%s.part", dir, hex);
		fd = open(path, O_WRONLY | O_CREAT, 0644);
		CHECK(fd >= 0 && write(fd, hdr, 10) == 10);
		close(fd);
		CHECK_EQ_INT(pw_pc_lookup(c, key, hdr, &s, &err), 0);
		CHECK_EQ_INT(s.role, PW_PC_LEAD);
		pw_pc_abandon(c, &s);
		fd = open(path, O_WRONLY | O_CREAT, 0644);
		close(fd);
		pw_pack_cache_free(c);
		CHECK_EQ_INT(pw_pack_cache_open(&c, &o, &err), 0);
		CHECK(!exists(dir, key, ".part"));
	}
	pw_pack_cache_free(c);
}

static void set_age(const char *dir, const uint8_t *key, time_t age)
{
	char path[600], hex[65];
	struct timespec ts[2];
	int i;

	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	snprintf(path, sizeof(path), "%s/%s.pack", dir, hex);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= age;
	ts[1] = ts[0];
	CHECK(!utimensat(AT_FDCWD, path, ts, 0));
}

static void test_bounds(void)
{
	struct pw_pack_cache_opts o;
	struct pw_pack_cache *c;
	struct pw_pack_cache_stats st;
	struct pw_pc_slot s, g[3];
	struct pw_error err;
	uint8_t key[4][PW_PC_KEY_SIZE], hdr[PW_PC_HDR_SIZE];
	char dir[300];
	int i;

	snprintf(dir, sizeof(dir), "%s/bounds", root);
	for (i = 0; i < 4; i++)
		memset(key[i], 0x30 + i, PW_PC_KEY_SIZE);
	pw_pack_cache_opts_init(&o);
	o.dir = dir;
	o.max_bytes = 250000; /* two entries of 100000 */
	o.max_generations = 2;
	CHECK_EQ_INT(pw_pack_cache_open(&c, &o, &err), 0);
	for (i = 0; i < 2; i++) {
		header_of(key[i], hdr);
		CHECK_EQ_INT(pw_pc_lookup(c, key[i], hdr, &s, &err), 0);
		CHECK_EQ_INT(write_entry(c, &s, key[i], 100000), 0);
	}
	/* 0 is older than 1, until it is used */
	set_age(dir, key[0], 100);
	set_age(dir, key[1], 50);
	header_of(key[0], hdr);
	CHECK_EQ_INT(pw_pc_lookup(c, key[0], hdr, &s, &err), 0);
	CHECK_EQ_INT(s.role, PW_PC_HIT);
	pw_pc_slot_close(&s);
	header_of(key[2], hdr);
	CHECK_EQ_INT(pw_pc_lookup(c, key[2], hdr, &s, &err), 0);
	CHECK_EQ_INT(write_entry(c, &s, key[2], 100000), 0);
	CHECK(exists(dir, key[0], ".pack"));
	CHECK(!exists(dir, key[1], ".pack")); /* the least recently used */
	CHECK(exists(dir, key[2], ".pack"));
	pw_pack_cache_get_stats(c, &st);
	CHECK_EQ_INT(st.evictions, 1);
	CHECK_EQ_INT(st.entries, 2);
	/* an entry larger than the cache is not kept */
	header_of(key[3], hdr);
	CHECK_EQ_INT(pw_pc_lookup(c, key[3], hdr, &s, &err), 0);
	CHECK_EQ_INT(write_entry(c, &s, key[3], 300000), 0);
	CHECK(!exists(dir, key[3], ".pack") && !exists(dir, key[3], ".part"));
	CHECK(exists(dir, key[0], ".pack") && exists(dir, key[2], ".pack"));
	/* two generations at most: the third request goes without */
	header_of(key[1], hdr);
	CHECK_EQ_INT(pw_pc_lookup(c, key[1], hdr, &g[0], &err), 0);
	CHECK_EQ_INT(g[0].role, PW_PC_LEAD);
	header_of(key[3], hdr);
	CHECK_EQ_INT(pw_pc_lookup(c, key[3], hdr, &g[1], &err), 0);
	CHECK_EQ_INT(g[1].role, PW_PC_LEAD);
	{
		uint8_t k5[PW_PC_KEY_SIZE];

		memset(k5, 0x55, sizeof(k5));
		header_of(k5, hdr);
		CHECK_EQ_INT(pw_pc_lookup(c, k5, hdr, &g[2], &err), 0);
		CHECK_EQ_INT(g[2].role, PW_PC_BYPASS);
		CHECK(strstr(err.msg, "generations") != NULL);
		pw_pc_abandon(c, &g[0]);
		CHECK_EQ_INT(pw_pc_lookup(c, k5, hdr, &g[2], &err), 0);
		CHECK_EQ_INT(g[2].role, PW_PC_LEAD);
		pw_pc_abandon(c, &g[2]);
		pw_pc_abandon(c, &g[1]);
	}
	pw_pack_cache_free(c);

	/* the entry count bound */
	pw_pack_cache_opts_init(&o);
	o.dir = dir;
	o.max_entries = 1;
	CHECK_EQ_INT(pw_pack_cache_open(&c, &o, &err), 0);
	pw_pack_cache_get_stats(c, &st);
	CHECK_EQ_INT(st.entries, 1);
	CHECK_EQ_INT(st.evictions, 1);
	CHECK(exists(dir, key[0], ".pack") != exists(dir, key[2], ".pack"));
	pw_pack_cache_free(c);

	/* a directory that cannot be made */
	pw_pack_cache_opts_init(&o);
	o.dir = "/proc/no/such/dir";
	CHECK(pw_pack_cache_open(&c, &o, &err) < 0);
	CHECK(strstr(err.msg, "/proc/no/such/dir") != NULL);
	o.dir = NULL;
	CHECK_EQ_INT(pw_pack_cache_open(&c, &o, &err), PW_EINVAL);
}

int main(void)
{
	test_round_trips();
	test_damage();
	test_framing();
	snprintf(root, sizeof(root), "/tmp/pw-test-pack-cache-%d", (int)getpid());
	rm_rf(root);
	if (mkdir(root, 0700)) {
		perror(root);
		return 1;
	}
	test_roles();
	test_dead_writer();
	test_bounds();
	rm_rf(root);
	return pw_test_done();
}
