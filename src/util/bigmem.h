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

#define PW_BIGMEM_MIN ((size_t)512 << 10)

/* size bytes (uninitialised), NULL when out of memory. Free with
 * pw_bigmem_free and the same size. */
void *pw_bigmem_alloc(size_t size);
void pw_bigmem_free(void *p, size_t size);
/* A block of old_size bytes (NULL, 0: none) resized to size, its first
 * bytes kept: NULL when out of memory (p is then unchanged). */
void *pw_bigmem_realloc(void *p, size_t old_size, size_t size);

#endif
