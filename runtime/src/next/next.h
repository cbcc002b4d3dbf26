/* The allocator underneath corral (glibc, or jemalloc/mimalloc preloaded after
 * libcorral.so), found with dlsym(RTLD_NEXT), and the bootstrap buffer that
 * serves allocations made while dlsym itself runs. */
#ifndef CORRAL_NEXT_H
#define CORRAL_NEXT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "attributes.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

typedef struct corral_next_s {
  void *(*malloc)(size_t);
  void (*free)(void *);
  void *(*calloc)(size_t, size_t);
  void *(*realloc)(void *, size_t);
  void *(*memalign)(size_t, size_t);
  int (*posix_memalign)(void **, size_t, size_t);
  void *(*aligned_alloc)(size_t, size_t);
  size_t (*malloc_usable_size)(void *);
  int realloc_sets_errno;           /* ENOMEM on failure up to PTRDIFF_MAX (next.c) */
  int malloc_sets_errno;            /* malloc and calloc: ENOMEM on every failure, any size (next.c) */
  /* Its own operator new, new[] and their nothrow forms (the nothrow_t
   * passed through), where it defines them and fails as C++ requires: the
   * new-handler, then std::bad_alloc or NULL. jemalloc's do; NULL for any
   * other (glibc has none, and Debian's mimalloc, built as C, aborts where
   * its operator new fails). new.cc forwards to them by a tail jump. */
  void *(*new_object)(size_t);
  void *(*new_array)(size_t);
  void *(*new_object_nothrow)(size_t, const void *);
  void *(*new_array_nothrow)(size_t, const void *);
} corral_next_t;

extern corral_next_t _corral_next;

/* Resolve _corral_next (0 on success). Allocations made meanwhile by the same
 * thread must go to _corral_boot_alloc (see init.c). */
int _corral_next_init(void);

/* Bytes an object of `size` (at most 64 KiB) takes in the allocator
 * underneath, from one neighbour's start to the next's: its block
 * (malloc_usable_size of a fresh one) plus the 8-byte chunk header glibc
 * keeps before every block; size-class allocators (jemalloc, mimalloc,
 * tcmalloc) keep none. 0 when the allocator cannot tell. Asked once per
 * size (a malloc and a free of the allocator underneath), then remembered;
 * not for use inside its own malloc. */
size_t _corral_next_footprint(size_t size);

/* Whether the allocator underneath keeps each size class in pages of its
 * own (jemalloc, mimalloc, tcmalloc), where glibc's keeps every size in one
 * heap, in the order made. */
int _corral_next_keeps_classes(void);

/* A block aligned to `align` (a power of two) from the next allocator;
 * NULL with errno set. */
void *_corral_next_aligned(size_t align, size_t size);

/* p, with errno ENOMEM when it is NULL: the allocators underneath do not
 * all set it (mimalloc above PTRDIFF_MAX, jemalloc's realloc). */
CORRAL_INLINE void *_corral_enomem_if_null(void *p)
{
  if (CORRAL_UNLIKELY(!p)) errno = ENOMEM;
  return p;
}

/* The next allocator's realloc with errno set where it does not set it
 * itself (jemalloc's; any allocator above PTRDIFF_MAX): next.c. */
void *_corral_next_realloc_errno(void *p, size_t size);

/* The next allocator's realloc, with errno set on failure: by a tail jump
 * either way, so no call and return through corral's frame, and a caller
 * that makes no other call saves no registers. Lua allocates every object
 * with realloc, of NULL: that is malloc (C says so), and goes to the next
 * malloc, which every allocator makes cheaper (mimalloc's realloc spends
 * 57 instructions on NULL, its malloc 17) and which sets errno itself up
 * to PTRDIFF_MAX. */
CORRAL_INLINE void *_corral_next_realloc(void *p, size_t size)
{
  if (!p && CORRAL_LIKELY(size <= PTRDIFF_MAX)) return _corral_next.malloc(size);
  if (CORRAL_LIKELY(_corral_next.realloc_sets_errno && size <= PTRDIFF_MAX)) return _corral_next.realloc(p, size);
  return _corral_next_realloc_errno(p, size);
}

/* operator new's block from the next allocator: `own`, its own operator
 * (new_object or new_array, NULL where it has none corral trusts), by a
 * tail jump; else its malloc, and `rest` (operator new's full way: the
 * new-handler, then std::bad_alloc or nullptr) where that fails. The
 * nothrow form passes the caller's nothrow_t through. */
CORRAL_INLINE void *_corral_next_new(size_t n, void *(*own)(size_t), void *(*rest)(size_t))
{
  if (own) return own(n);
  void *p = _corral_next.malloc(n);
  if (p != NULL) return p;   /* no branch hint: with one, gcc reloads n before the test */
  return rest(n);
}

CORRAL_INLINE void *_corral_next_new_nothrow(size_t n, void *(*own)(size_t, const void *), const void *tag,
                                             void *(*rest)(size_t))
{
  if (own) return own(n, tag);
  void *p = _corral_next.malloc(n);
  if (p != NULL) return p;   /* no branch hint: with one, gcc reloads n before the test */
  return rest(n);
}

/* The next allocator's block for a request (align: 0 = malloc's, else a
 * power of two; zero: calloc's); NULL with errno set. Explicit alignments
 * go to its aligned entry point even when 16: mimalloc's malloc aligns tiny
 * blocks to 8 only. */
CORRAL_INLINE void *_corral_next_alloc(size_t size, size_t align, int zero)
{
  return _corral_enomem_if_null(align ? _corral_next_aligned(align, size)
                                : zero ? _corral_next.calloc(1, size) : _corral_next.malloc(size));
}

/* Bootstrap buffer: 16-byte aligned, zeroed, never freed. */
void *_corral_boot_alloc(size_t size, size_t align);
extern unsigned char _corral_boot_buffer[];
#define CORRAL_BOOT_BYTES (64u << 10)
/* Whether any block came from it (final once the runtime forwards). */
int _corral_boot_used(void);
static inline int _corral_is_boot(const void *p)
{
  return (const unsigned char *)p - _corral_boot_buffer < (long)CORRAL_BOOT_BYTES &&
         (const unsigned char *)p >= _corral_boot_buffer;
}
size_t _corral_boot_size(const void *p);

#pragma GCC visibility pop

#endif
