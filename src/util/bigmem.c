/* Huge-page backed arrays (bigmem.h). A block of PW_BIGMEM_MIN bytes or
 * more is its own mapping, rounded up to whole 2 MiB pages and aligned to
 * one (the kernel backs only aligned 2 MiB ranges with a huge page). The
 * caller gives the size back to pw_bigmem_free: nothing is stored beside
 * the block. */
#include "util/bigmem.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#define HUGE_SZ ((size_t)2 << 20)

static size_t round_huge(size_t size)
{
	return (size + HUGE_SZ - 1) & ~(HUGE_SZ - 1);
}

void *pw_bigmem_alloc(size_t size)
{
	if (size > PTRDIFF_MAX) /* malloc would say no too */
		return NULL;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	if (size >= PW_BIGMEM_MIN && size <= SIZE_MAX - 2 * HUGE_SZ) {
		size_t len = round_huge(size), map = len + HUGE_SZ, lead;
		uint8_t *m =
		        mmap(NULL, map, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return NULL;
		/* keep the aligned len bytes, give back the rest */
		lead = (HUGE_SZ - ((uintptr_t)m & (HUGE_SZ - 1))) & (HUGE_SZ - 1);
		if (lead)
			munmap(m, lead);
		if (map - lead - len)
			munmap(m + lead + len, map - lead - len);
		(void)madvise(m + lead, len, MADV_HUGEPAGE); /* a hint: fine without */
		return m + lead;
	}
#endif
	return malloc(size ? size : 1);
}

/* through a volatile pointer, or the compiler turns malloc + memset into
 * calloc */
static void *(*volatile const clear)(void *, int, size_t) = memset;

void *pw_bigmem_alloc_zeroed(size_t size)
{
	void *p = pw_bigmem_alloc(size);

	return p ? clear(p, 0, size) : NULL;
}

void pw_bigmem_free(void *p, size_t size)
{
	if (!p)
		return;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	if (size >= PW_BIGMEM_MIN && size <= SIZE_MAX - 2 * HUGE_SZ) {
		munmap(p, round_huge(size));
		return;
	}
#endif
	free(p);
}

#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MREMAP_FIXED)
/* Grow a mapping of olen bytes to nlen (both whole huge pages) by moving
 * its page tables, not its bytes, to an aligned range: the pages already
 * touched stay (huge pages move whole), only the new tail is fresh. A copy
 * would touch old_size bytes of fresh memory again (for the pack writer's
 * table of 164,488 objects, growing by doubling, 33 MB more than it holds).
 * NULL when the kernel says no: the caller copies then. */
static void *grow_mapping(void *p, size_t olen, size_t nlen)
{
	void *dst, *r;

	r = mremap(p, olen, nlen, 0); /* in place, when the range after is free */
	if (r != MAP_FAILED)
		return r;
	if (!(dst = pw_bigmem_alloc(nlen))) /* nlen >= PW_BIGMEM_MIN: a mapping */
		return NULL;
	r = mremap(p, olen, nlen, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (r == MAP_FAILED) {
		pw_bigmem_free(dst, nlen);
		return NULL;
	}
	(void)madvise(r, nlen, MADV_HUGEPAGE);
	return r;
}
#endif

void *pw_bigmem_realloc(void *p, size_t old_size, size_t size)
{
	void *n;

	if (!p)
		return pw_bigmem_alloc(size);
	if (old_size < PW_BIGMEM_MIN && size < PW_BIGMEM_MIN)
		return realloc(p, size ? size : 1);
#if defined(__linux__) && defined(MADV_HUGEPAGE) && defined(MREMAP_FIXED)
	if (old_size >= PW_BIGMEM_MIN && size >= PW_BIGMEM_MIN && size <= SIZE_MAX - 2 * HUGE_SZ) {
		size_t olen = round_huge(old_size), nlen = round_huge(size);

		if (nlen == olen)
			return p;
		if (nlen < olen) {
			munmap((uint8_t *)p + nlen, olen - nlen);
			return p;
		}
		if ((n = grow_mapping(p, olen, nlen)))
			return n;
	}
#endif
	if (!(n = pw_bigmem_alloc(size)))
		return NULL;
	memcpy(n, p, old_size < size ? old_size : size);
	pw_bigmem_free(p, old_size);
	return n;
}
