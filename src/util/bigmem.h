/* Large arrays that live for a while (a pack's reverse index, its scratch):
 * backed by transparent huge pages where the kernel offers them on request
 * (madvise), so that touching one costs a fault per 2 MiB instead of one
 * per 4 KiB page. On a virtual machine with shadow page tables a fault
 * costs ~10 us: the 4 MiB of a 190,000-object pack's reverse index took
 * 950 faults, a fifth of a small fetch's CPU. Below PW_BIGMEM_MIN bytes,
 * or where mmap or huge pages are not had, plain malloc. */
#ifndef PW_UTIL_BIGMEM_H
#define PW_UTIL_BIGMEM_H

#include <stddef.h>

/* Smaller arrays come from malloc. Each block of its own is at least one
 * fresh 2 MiB page that the kernel zeroes and that munmap gives back: for
 * a served fetch of v2.0.0 (a 1.4 MiB reverse index, its 1.4 MiB scratch,
 * two 0.7 MiB position maps) that was 6 huge pages zeroed where 3 were
 * used, and, on a VM that reports freed memory to its host, each fresh
 * huge page a slow host fault (bench/fetch-serve's loop, 9 paired runs:
 * 50.6 -> 35.9 ms median, git 83). From malloc, these share the pages of
 * the heap, which the CLI keeps and puts on huge pages (cli/main.c,
 * tune_malloc; there glibc maps blocks of 4 MiB or more by themselves). */
#define PW_BIGMEM_MIN ((size_t)4 << 20)

/* size bytes (uninitialised), NULL when out of memory. Free with
 * pw_bigmem_free and the same size. */
void *pw_bigmem_alloc(size_t size);
void pw_bigmem_free(void *p, size_t size);
/* The same, zeroed by writing, not calloc: calloc's fresh pages map the zero
 * page on the first read and are copied again on the first store, two
 * faults (and a TLB flush) per page instead of one, for a table that is
 * probed before it is filled. */
void *pw_bigmem_alloc_zeroed(size_t size);
/* A block of old_size bytes (NULL, 0: none) resized to size, its first
 * bytes kept: NULL when out of memory (p is then unchanged). */
void *pw_bigmem_realloc(void *p, size_t old_size, size_t size);

#endif
