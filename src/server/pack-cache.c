/* The pack cache's directory: lookups, publishing, removal and eviction
 * (pack-cache.h). Threads of one process take c->mu, processes flock
 * DIR/lock: flock belongs to an open file, which the threads share. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "packwire/fs.h"
#include "server/pack-cache.h"

#define LOCK_NAME "lock"
/* How stale an entry's time of last use may get before a hit renews it:
 * renewing changes the file's ctime, which ends its "checked" mark. */
#define TOUCH_SECONDS 10
#define CHECKED_MAX   64

/* An entry checked whole, as it was then: a file is never written once it
 * is an entry, so any later change (damage, tampering) moves its ctime. */
struct checked {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec ctime;
};

struct pw_pack_cache {
	char *dir;
	int dir_fd;
	int lock_fd;
	pthread_mutex_t mu;
	uint64_t max_bytes;
	unsigned max_entries, max_generations;
	int64_t paused_until;          /* CLOCK_MONOTONIC seconds; atomic */
	struct pw_pack_cache_stats st; /* atomic */
	pthread_mutex_t checked_mu;
	struct checked checked[CHECKED_MAX];
	unsigned checked_next;
};

void pw_pack_cache_opts_init(struct pw_pack_cache_opts *o)
{
	memset(o, 0, sizeof(*o));
}

static void add(uint64_t *v, uint64_t n)
{
	__atomic_fetch_add(v, n, __ATOMIC_RELAXED);
}

static void set(uint64_t *v, uint64_t n)
{
	__atomic_store_n(v, n, __ATOMIC_RELAXED);
}

void pw_pc_count(struct pw_pack_cache *c, enum pw_pc_counter which, uint64_t n)
{
	uint64_t *v[] = {&c->st.hits,   &c->st.misses,          &c->st.shared,
	                 &c->st.bypass, &c->st.bytes_generated, &c->st.bytes_served};

	if ((unsigned)which < sizeof(v) / sizeof(v[0]))
		add(v[which], n);
}

void pw_pack_cache_get_stats(const struct pw_pack_cache *c, struct pw_pack_cache_stats *out)
{
	const struct pw_pack_cache_stats *s = &c->st;

	out->hits = __atomic_load_n(&s->hits, __ATOMIC_RELAXED);
	out->misses = __atomic_load_n(&s->misses, __ATOMIC_RELAXED);
	out->shared = __atomic_load_n(&s->shared, __ATOMIC_RELAXED);
	out->bypass = __atomic_load_n(&s->bypass, __ATOMIC_RELAXED);
	out->bytes_generated = __atomic_load_n(&s->bytes_generated, __ATOMIC_RELAXED);
	out->bytes_served = __atomic_load_n(&s->bytes_served, __ATOMIC_RELAXED);
	out->evictions = __atomic_load_n(&s->evictions, __ATOMIC_RELAXED);
	out->corrupt = __atomic_load_n(&s->corrupt, __ATOMIC_RELAXED);
	out->entries = __atomic_load_n(&s->entries, __ATOMIC_RELAXED);
	out->bytes = __atomic_load_n(&s->bytes, __ATOMIC_RELAXED);
}

const char *pw_pack_cache_dir(const struct pw_pack_cache *c)
{
	return c->dir;
}

static int64_t now_sec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

void pw_pc_pause(struct pw_pack_cache *c, unsigned seconds)
{
	__atomic_store_n(&c->paused_until, now_sec() + seconds, __ATOMIC_RELAXED);
}

/* ---- the directory lock -------------------------------------------------- */

static int dir_lock(struct pw_pack_cache *c, struct pw_error *err)
{
	pthread_mutex_lock(&c->mu);
	while (flock(c->lock_fd, LOCK_EX)) {
		if (errno == EINTR)
			continue;
		pthread_mutex_unlock(&c->mu);
		return pw_error_set(err, PW_EIO, "pack cache %s: cannot lock %s: %s", c->dir,
		                    LOCK_NAME, strerror(errno));
	}
	return 0;
}

static void dir_unlock(struct pw_pack_cache *c)
{
	flock(c->lock_fd, LOCK_UN);
	pthread_mutex_unlock(&c->mu);
}

/* ---- names ---------------------------------------------------------------- */

/* "<64 lowercase hex>.pack" (1), ".part" (2), anything else 0. */
static int entry_name_kind(const char *name)
{
	size_t i;

	for (i = 0; i < PW_PC_KEY_SIZE * 2; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	if (!strcmp(name + i, ".pack"))
		return 1;
	if (!strcmp(name + i, ".part"))
		return 2;
	return 0;
}

static void slot_name(struct pw_pc_slot *slot, const uint8_t key[PW_PC_KEY_SIZE], const char *ext)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < PW_PC_KEY_SIZE; i++) {
		slot->name[2 * i] = hex[key[i] >> 4];
		slot->name[2 * i + 1] = hex[key[i] & 15];
	}
	memcpy(slot->name + 2 * PW_PC_KEY_SIZE, ext, 6); /* ".pack" / ".part" and NUL */
}

static void set_ext(struct pw_pc_slot *slot, const char *ext)
{
	memcpy(slot->name + 2 * PW_PC_KEY_SIZE, ext, 6);
}

void pw_pc_slot_close(struct pw_pc_slot *slot)
{
	if (slot->fd >= 0)
		close(slot->fd);
	slot->fd = -1;
	slot->role = PW_PC_BYPASS;
}

/* Does the name (in the directory) still hold the file fd has open? */
static int same_file(struct pw_pack_cache *c, const char *name, int fd)
{
	struct stat a, b;

	return !fstatat(c->dir_fd, name, &a, AT_SYMLINK_NOFOLLOW) && !fstat(fd, &b) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Is a part's writer gone? Its lock is free then (the kernel drops it with
 * the writer's last descriptor, also when the writer is killed). */
static int lock_free(int fd)
{
	if (flock(fd, LOCK_SH | LOCK_NB))
		return 0;
	flock(fd, LOCK_UN);
	return 1;
}

int pw_pc_writer_alive(struct pw_pc_slot *slot)
{
	return !lock_free(slot->fd);
}

/* ---- trimming --------------------------------------------------------------- */

struct ent {
	struct timespec used; /* mtime: the last time it was written or served */
	uint64_t size;
	char name[PW_PC_KEY_SIZE * 2 + 6];
};

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;

	if (x->used.tv_sec != y->used.tv_sec)
		return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
	if (x->used.tv_nsec != y->used.tv_nsec)
		return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Remove a part left by a dead writer (under the directory lock); 1 when
 * it was removed. */
static int remove_if_dead(struct pw_pack_cache *c, const char *name)
{
	int fd = openat(c->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), gone = 0;

	if (fd < 0)
		return errno == ENOENT;
	if (!flock(fd, LOCK_EX | LOCK_NB)) {
		gone = !unlinkat(c->dir_fd, name, 0) || errno == ENOENT;
		flock(fd, LOCK_UN);
	}
	close(fd);
	return gone;
}

/*
 * Count the parts (removing dead ones when clean) and trim the complete
 * entries to the bounds, least recently used first. Under the directory
 * lock. *parts (may be NULL) gets the live parts.
 */
static int trim(struct pw_pack_cache *c, int clean, unsigned *parts, struct pw_error *err)
{
	struct ent *v = NULL;
	size_t nr = 0, alloc = 0, i;
	uint64_t total = 0;
	unsigned nparts = 0;
	struct dirent *de;
	DIR *d;
	int fd = dup(c->dir_fd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return pw_error_set(err, PW_EIO, "pack cache %s: cannot read the directory: %s",
		                    c->dir, strerror(errno));
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st;
		int kind = entry_name_kind(de->d_name);

		if (kind == 2) {
			if (!clean || !remove_if_dead(c, de->d_name))
				nparts++;
			continue;
		}
		if (kind != 1 || fstatat(c->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (nr == alloc) {
			size_t na = alloc ? 2 * alloc : 64;
			struct ent *nv = realloc(v, na * sizeof(*nv));

			if (!nv) {
				closedir(d);
				free(v);
				return pw_error_set(err, PW_ENOMEM, "out of memory");
			}
			v = nv;
			alloc = na;
		}
		v[nr].used = st.st_mtim;
		v[nr].size = (uint64_t)st.st_size;
		memcpy(v[nr].name, de->d_name, sizeof(v[nr].name));
		total += v[nr].size;
		nr++;
	}
	closedir(d);
	if (nr)
		qsort(v, nr, sizeof(*v), ent_cmp);
	for (i = 0; i < nr && (total > c->max_bytes || nr - i > c->max_entries); i++) {
		if (unlinkat(c->dir_fd, v[i].name, 0) && errno != ENOENT)
			continue;
		total -= v[i].size;
		add(&c->st.evictions, 1);
	}
	set(&c->st.entries, nr - i);
	set(&c->st.bytes, total);
	free(v);
	if (parts)
		*parts = nparts;
	return 0;
}

/* ---- open / free -------------------------------------------------------------- */

int pw_pack_cache_open(struct pw_pack_cache **out, const struct pw_pack_cache_opts *o,
                       struct pw_error *err)
{
	struct pw_pack_cache *c;
	int rc;

	*out = NULL;
	if (!o->dir || !*o->dir)
		return pw_error_set(err, PW_EINVAL, "pack cache: no directory");
	if (!(c = calloc(1, sizeof(*c))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	c->dir_fd = c->lock_fd = -1;
	pthread_mutex_init(&c->mu, NULL);
	pthread_mutex_init(&c->checked_mu, NULL);
	c->max_bytes = o->max_bytes ? o->max_bytes : PW_PACK_CACHE_DEFAULT_MAX;
	c->max_entries = o->max_entries ? o->max_entries : PW_PACK_CACHE_DEFAULT_ENTRIES;
	c->max_generations =
	        o->max_generations ? o->max_generations : PW_PACK_CACHE_DEFAULT_GENERATIONS;
	if (!(c->dir = strdup(o->dir))) {
		pw_pack_cache_free(c);
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	}
	if (mkdir(c->dir, 0777) && errno != EEXIST) {
		rc = pw_error_set(err, PW_EIO, "pack cache %s: cannot create it: %s", c->dir,
		                  strerror(errno));
		pw_pack_cache_free(c);
		return rc;
	}
	c->dir_fd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->dir_fd < 0) {
		rc = pw_error_set(err, PW_EIO, "pack cache %s: cannot open it: %s", c->dir,
		                  strerror(errno));
		pw_pack_cache_free(c);
		return rc;
	}
	c->lock_fd = openat(c->dir_fd, LOCK_NAME, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
	if (c->lock_fd < 0) {
		rc = pw_error_set(err, PW_EIO, "pack cache %s: cannot open %s: %s", c->dir,
		                  LOCK_NAME, strerror(errno));
		pw_pack_cache_free(c);
		return rc;
	}
	/* what crashed writers left, and what the bounds no longer allow */
	if ((rc = dir_lock(c, err))) {
		pw_pack_cache_free(c);
		return rc;
	}
	rc = trim(c, 1, NULL, err);
	dir_unlock(c);
	if (rc) {
		pw_pack_cache_free(c);
		return rc;
	}
	*out = c;
	return 0;
}

void pw_pack_cache_free(struct pw_pack_cache *c)
{
	if (!c)
		return;
	if (c->lock_fd >= 0)
		close(c->lock_fd);
	if (c->dir_fd >= 0)
		close(c->dir_fd);
	pthread_mutex_destroy(&c->mu);
	pthread_mutex_destroy(&c->checked_mu);
	free(c->dir);
	free(c);
}

/* ---- lookups -------------------------------------------------------------------- */

static int write_at(int fd, uint64_t off, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -1 : (errno = EIO, -1);
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int bypass(struct pw_pc_slot *slot, struct pw_error *err, int code, const char *fmt,
                  const char *a, const char *b)
{
	pw_pc_slot_close(slot);
	pw_error_set(err, code, fmt, a, b);
	return 0;
}

/* Start a generation: a new part, locked before anyone can see it (we hold
 * the directory lock), with its header. */
static int lead(struct pw_pack_cache *c, const uint8_t hdr[PW_PC_HDR_SIZE], struct pw_pc_slot *slot,
                struct pw_error *err)
{
	unsigned parts = 0;
	struct stat st;
	int rc;

	if ((rc = trim(c, 0, &parts, err)))
		return rc == PW_ENOMEM ? rc : 0;
	if (parts >= c->max_generations && (rc = trim(c, 1, &parts, err)))
		return rc == PW_ENOMEM ? rc : 0;
	if (parts >= c->max_generations)
		return bypass(slot, err, PW_ETOOBIG, "pack cache %s: %s generations in progress",
		              c->dir, "too many");
	set_ext(slot, ".part");
	slot->fd = openat(c->dir_fd, slot->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
	                  0666);
	if (slot->fd < 0)
		return bypass(slot, err, PW_EIO, "pack cache %s: cannot create an entry: %s",
		              c->dir, strerror(errno));
	if (flock(slot->fd, LOCK_EX | LOCK_NB) || write_at(slot->fd, 0, hdr, PW_PC_HDR_SIZE) ||
	    fstat(slot->fd, &st)) {
		int e = errno;

		unlinkat(c->dir_fd, slot->name, 0);
		return bypass(slot, err, PW_EIO, "pack cache %s: cannot start an entry: %s", c->dir,
		              strerror(e));
	}
	slot->dev = st.st_dev;
	slot->ino = st.st_ino;
	slot->role = PW_PC_LEAD;
	return 0;
}

int pw_pc_lookup(struct pw_pack_cache *c, const uint8_t key[PW_PC_KEY_SIZE],
                 const uint8_t hdr[PW_PC_HDR_SIZE], struct pw_pc_slot *slot, struct pw_error *err)
{
	struct stat st;
	int rc;

	memset(slot, 0, sizeof(*slot));
	slot->fd = -1;
	slot->role = PW_PC_BYPASS;
	if (now_sec() < __atomic_load_n(&c->paused_until, __ATOMIC_RELAXED)) {
		pw_error_set(err, PW_EIO, "pack cache %s: paused after a write error", c->dir);
		return 0;
	}
	if ((rc = dir_lock(c, err)))
		return 0;
	slot_name(slot, key, ".pack");
	slot->fd = openat(c->dir_fd, slot->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (slot->fd >= 0) {
		struct timespec now;

		/* the time of last use, which eviction goes by (a cache shared
		 * by several users may refuse: the entry then ages as written) */
		clock_gettime(CLOCK_REALTIME, &now);
		if (!fstat(slot->fd, &st) && now.tv_sec - st.st_mtim.tv_sec >= TOUCH_SECONDS)
			futimens(slot->fd, NULL);
		slot->role = PW_PC_HIT;
		goto out;
	}
	set_ext(slot, ".part");
	slot->fd = openat(c->dir_fd, slot->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (slot->fd >= 0 && !lock_free(slot->fd)) {
		slot->role = PW_PC_FOLLOW;
		goto out;
	}
	if (slot->fd >= 0) {
		/* its writer died (a finished writer renames its part before it
		 * lets go of the lock, and we hold the directory's) */
		unlinkat(c->dir_fd, slot->name, 0);
		close(slot->fd);
		slot->fd = -1;
	}
	rc = lead(c, hdr, slot, err);
out:
	if (slot->fd >= 0 && !fstat(slot->fd, &st) && S_ISREG(st.st_mode)) {
		slot->dev = st.st_dev;
		slot->ino = st.st_ino;
	} else if (slot->fd >= 0) {
		pw_error_set(err, PW_EIO, "pack cache %s: %s is not a regular file", c->dir,
		             slot->name);
		if (slot->role == PW_PC_LEAD)
			unlinkat(c->dir_fd, slot->name, 0);
		pw_pc_slot_close(slot);
	}
	dir_unlock(c);
	return rc < 0 ? rc : 0;
}

int pw_pc_open_reader(struct pw_pack_cache *c, const struct pw_pc_slot *slot,
                      struct pw_pc_slot *reader, struct pw_error *err)
{
	*reader = *slot;
	reader->role = PW_PC_FOLLOW;
	reader->fd = openat(c->dir_fd, slot->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (reader->fd < 0 || !same_file(c, slot->name, reader->fd)) {
		pw_pc_slot_close(reader);
		return pw_error_set(err, PW_EIO, "pack cache %s: cannot read %s: %s", c->dir,
		                    slot->name, strerror(errno));
	}
	return 0;
}

static int same_checked(const struct checked *k, const struct stat *st)
{
	return k->dev == st->st_dev && k->ino == st->st_ino && k->size == st->st_size &&
	       k->ctime.tv_sec == st->st_ctim.tv_sec && k->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

int pw_pc_is_checked(struct pw_pack_cache *c, const struct pw_pc_slot *slot)
{
	struct stat st;
	unsigned i;
	int found = 0;

	if (fstat(slot->fd, &st))
		return 0;
	pthread_mutex_lock(&c->checked_mu);
	for (i = 0; i < CHECKED_MAX && !found; i++)
		found = same_checked(&c->checked[i], &st);
	pthread_mutex_unlock(&c->checked_mu);
	return found;
}

void pw_pc_set_checked(struct pw_pack_cache *c, const struct pw_pc_slot *slot,
                       const struct stat *before)
{
	struct stat st;

	/* as it was when the check began: a change during the check is not
	 * vouched for */
	if (fstat(slot->fd, &st) ||
	    !(st.st_ino == before->st_ino && st.st_ctim.tv_sec == before->st_ctim.tv_sec &&
	      st.st_ctim.tv_nsec == before->st_ctim.tv_nsec && st.st_size == before->st_size))
		return;
	pthread_mutex_lock(&c->checked_mu);
	c->checked[c->checked_next].dev = st.st_dev;
	c->checked[c->checked_next].ino = st.st_ino;
	c->checked[c->checked_next].size = st.st_size;
	c->checked[c->checked_next].ctime = st.st_ctim;
	c->checked_next = (c->checked_next + 1) % CHECKED_MAX;
	pthread_mutex_unlock(&c->checked_mu);
}

int pw_pc_write_at(struct pw_pack_cache *c, struct pw_pc_slot *slot, uint64_t off, const void *data,
                   size_t len, struct pw_error *err)
{
	if (write_at(slot->fd, off, data, len))
		return pw_error_set(err, PW_EIO, "pack cache %s: cannot write %s: %s", c->dir,
		                    slot->name, strerror(errno));
	return 0;
}

int pw_pc_publish(struct pw_pack_cache *c, struct pw_pc_slot *slot, struct pw_error *err)
{
	char done[sizeof(slot->name)];
	struct stat st;
	int rc = 0;

	if (fdatasync(slot->fd) || fstat(slot->fd, &st)) {
		rc = pw_error_set(err, PW_EIO, "pack cache %s: cannot sync %s: %s", c->dir,
		                  slot->name, strerror(errno));
		pw_pc_abandon(c, slot);
		return rc;
	}
	if (dir_lock(c, err)) {
		/* without the lock the name cannot change: the part stays, and
		 * whoever looks next finds its writer gone and removes it */
		pw_pc_slot_close(slot);
		return err->code;
	}
	memcpy(done, slot->name, sizeof(done));
	memcpy(done + 2 * PW_PC_KEY_SIZE, ".pack", 6);
	if (!same_file(c, slot->name, slot->fd)) {
		rc = pw_error_set(err, PW_EIO, "pack cache %s: %s was removed while written",
		                  c->dir, slot->name);
	} else if ((uint64_t)st.st_size > c->max_bytes) {
		unlinkat(c->dir_fd, slot->name, 0); /* served, but never kept */
	} else if (renameat(c->dir_fd, slot->name, c->dir_fd, done)) {
		rc = pw_error_set(err, PW_EIO, "pack cache %s: cannot rename %s: %s", c->dir,
		                  slot->name, strerror(errno));
		unlinkat(c->dir_fd, slot->name, 0);
	} else {
		/* the entry is there; a crash before the directory reaches the
		 * disk loses it, never half of it */
		fsync(c->dir_fd);
		rc = trim(c, 0, NULL, err);
	}
	pw_pc_slot_close(slot); /* lets the readers know: no more bytes */
	dir_unlock(c);
	return rc;
}

void pw_pc_abandon(struct pw_pack_cache *c, struct pw_pc_slot *slot)
{
	pw_pc_drop(c, slot, 0);
}

void pw_pc_drop(struct pw_pack_cache *c, struct pw_pc_slot *slot, int corrupt)
{
	struct pw_error e;

	if (slot->fd < 0)
		return;
	if (corrupt)
		add(&c->st.corrupt, 1);
	if (!dir_lock(c, &e)) {
		if (same_file(c, slot->name, slot->fd))
			unlinkat(c->dir_fd, slot->name, 0);
		pw_pc_slot_close(slot);
		dir_unlock(c);
	} else {
		pw_pc_slot_close(slot);
	}
}
