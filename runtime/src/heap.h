/* Group memory: reserved ranges carved into size-aligned chunks, one current
 * chunk per (thread, group), object sizes in per-chunk bitmaps.
 * docs/runtime.md explains the layout and the reuse scheme. */
#ifndef CORRAL_HEAP_H
#define CORRAL_HEAP_H

#include "internal.h"
#include "size_class.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define CORRAL_GRANULE 16
#define CORRAL_MAX_GROUPS 256     /* plan groups are 0..254; random pools up to 255 */
#define CORRAL_MAX_RANGES 16
/* A group laid out by size keeps its size classes (size_class.h) in
 * separate chunks. A pool is a group's size class (class 0 for groups that
 * mix sizes). */
#define CORRAL_POOLS (CORRAL_MAX_GROUPS * CORRAL_SIZE_CLASSES)
/* Added to a chunk's balance while it is retired (chunk.c). */
#define CORRAL_RETIRED (1L << 40)
/* Bit 0 of a chunk's `remote` word: frees pushed now must also be counted
 * in `balance` (set from retirement until the next owner drains). */
#define CORRAL_REMOTE_COUNTED ((uintptr_t)1)
#define CORRAL_CHUNK_MAGIC 0x6c6172726f63u   /* "corral" */

struct corral_heap_s;

/* Header at the start of every chunk. Owner-only fields are touched only by
 * the thread whose heap is `owner`; everything else is atomic or under the
 * global chunk lock (heap.c). */
typedef struct corral_chunk_s {
  /* read by every free, written only when the chunk changes hands */
  uint64_t magic;                          /* CORRAL_CHUNK_MAGIC while a group holds it */
  uint32_t group;
  uint16_t pool;                           /* group * CORRAL_SIZE_CLASSES + size class */
  uint16_t in_retired;                     /* on its pool's retired list (lock) */
  _Atomic(struct corral_heap_s *) owner;   /* thread heap allocating here, or NULL */
  uint64_t key;                            /* written into freed objects to spot double frees */
  struct corral_chunk_s *next, *prev;      /* retired list or pool (lock) */
  /* owner-only, written by every allocation: a line of its own, so frees
   * from other threads do not keep taking it away from the owner */
  _Alignas(64) size_t live;                /* objects not freed locally or drained */
  char *bump, *end;                        /* never-used space [bump, end) */
  /* any thread: written by every remote free */
  _Alignas(64) _Atomic(uintptr_t) remote;  /* stack of objects freed by other threads, | CORRAL_REMOTE_COUNTED */
  atomic_long balance;                     /* counted remote frees minus drained; retired: + CORRAL_RETIRED - live */
  _Alignas(64) void *free_lists[];         /* [classes]: LIFO free objects of k granules at k-1;
                                              then the start and end bitmaps */
} corral_chunk_t;

typedef struct corral_group_counts_s {
  uint64_t objects, bytes, frees, freed_bytes;
  uint64_t mark;     /* this thread's live bytes (bytes - freed_bytes) that trigger the next sample */
} corral_group_counts_t;

/* One per thread that allocated grouped memory or counted anything; mapped
 * from the OS, linked in a registry so stats and fork can see all of them. */
typedef struct corral_heap_s {
  corral_chunk_t *cur[CORRAL_POOLS];       /* by pool: group * CORRAL_SIZE_CLASSES + size class */
  corral_group_counts_t counts[CORRAL_MAX_GROUPS];
  uint64_t ungrouped_objects, ungrouped_bytes;
  uint64_t rng;
  int dead;                                /* thread exited; counts stay for stats */
  struct corral_heap_s *next_heap;
} corral_heap_t;

/* Layout, fixed at init from the options. */
typedef struct corral_layout_s {
  size_t chunk_size, chunk_mask;
  size_t classes;                          /* max_size / 16 */
  size_t bitmap_words;                     /* per bitmap (two, interleaved) */
  size_t header;                           /* bytes before the first object */
} corral_layout_t;

extern corral_layout_t _corral_layout;

/* Reserved ranges, carved from the start; [lo, hi) is the carved part. */
extern atomic_uint _corral_range_count;
extern uintptr_t _corral_range_lo[CORRAL_MAX_RANGES], _corral_range_hi[CORRAL_MAX_RANGES];
extern uintptr_t _corral_range_min;      /* lowest lo of all ranges (mmap grows down) */
extern uintptr_t _corral_range_max;      /* highest reserved end of all ranges */
/* Every pointer outside [_corral_mine_lo, _corral_mine_hi) belongs to the next
 * allocator: the span holds all group memory and the bootstrap buffer. The
 * entry points hand such pointers over without looking further. Below it
 * lies glibc's heap; above it, mimalloc's segments. Until the runtime is
 * ready the span is everything, so nothing takes the short way before the
 * next allocator is known. Each bound only widens after that, before a new
 * range is published: a reader that sees one bound new and one old still
 * covers all published memory. */
extern uintptr_t _corral_mine_lo, _corral_mine_hi;

static inline int _corral_foreign(const void *p)
{
  return (uintptr_t)p < __atomic_load_n(&_corral_mine_lo, __ATOMIC_ACQUIRE) ||
         (uintptr_t)p >= __atomic_load_n(&_corral_mine_hi, __ATOMIC_ACQUIRE);
}

/* Could p be group memory? A quick filter before _corral_chunk_of: false for
 * every pointer while no group has memory, and for pointers below every
 * range (the usual place of the next allocator's heap). */
static inline int _corral_maybe_group(const void *p)
{
  return atomic_load_explicit(&_corral_range_count, memory_order_acquire) != 0 &&
         (uintptr_t)p >= __atomic_load_n(&_corral_range_min, __ATOMIC_RELAXED);
}

/* The two bitmaps are interleaved word by word, so an object's start and end
 * bits usually share a cache line: word 2w holds the start bits of granules
 * 64w..64w+63, word 2w+1 their end bits. */
static inline uint64_t *_corral_bits(corral_chunk_t *c)
{
  return (uint64_t *)(c->free_lists + _corral_layout.classes);
}

void _corral_heap_init(void);

/* The calling thread's heap (created on first use; NULL if out of memory). */
extern __thread corral_heap_t *_corral_tls_heap __attribute__((tls_model("initial-exec")));
corral_heap_t *_corral_heap_create_for_thread(void);
static inline corral_heap_t *_corral_heap_get(void)
{
  corral_heap_t *h = _corral_tls_heap;
  return CORRAL_LIKELY(h != NULL) ? h : _corral_heap_create_for_thread();
}

/* Groups whose plan says "layout G by-size": their size classes go to
 * separate chunks. Others (and random or dynamic pools) mix all sizes in one
 * chunk, in allocation order. Set once, before the runtime is ready. */
extern uint8_t _corral_group_by_size[CORRAL_MAX_GROUPS];

/* Grouped allocation of `size` bytes aligned to `align` (power of two, <= 4096)
 * in group g; NULL if the group memory is exhausted. */
void *_corral_group_alloc(unsigned g, size_t size, size_t align);

static inline size_t _corral_granule_index(corral_chunk_t *c, const void *p)
{
  return ((uintptr_t)p - (uintptr_t)c) / CORRAL_GRANULE;
}

/* The chunk holding grouped object p. NULL with *why == NULL: p is not in
 * corral's group memory at all. NULL with *why set: p is in it but is not an
 * object start (why says what is wrong, for the warning). */
static inline corral_chunk_t *_corral_chunk_of(const void *p, const char **why)
{
  *why = NULL;
  corral_chunk_t *c = (corral_chunk_t *)((uintptr_t)p & _corral_layout.chunk_mask);
  unsigned n = atomic_load_explicit(&_corral_range_count, memory_order_acquire);
  unsigned i = 0;
  while (i < n && (uintptr_t)c - _corral_range_lo[i] >=
                      __atomic_load_n(&_corral_range_hi[i], __ATOMIC_ACQUIRE) - _corral_range_lo[i])
    i++;
  if (CORRAL_LIKELY(i == n)) return NULL;                 /* not group memory */
  if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != CORRAL_CHUNK_MAGIC) { *why = "in an empty chunk"; return NULL; }
  if ((uintptr_t)p < (uintptr_t)c + _corral_layout.header || ((uintptr_t)p & (CORRAL_GRANULE - 1)) ||
      !((__atomic_load_n(&_corral_bits(c)[2 * (_corral_granule_index(c, p) / 64)], __ATOMIC_RELAXED) >>
         (_corral_granule_index(c, p) % 64)) & 1)) {
    *why = "not an object start";
    return NULL;
  }
  return c;
}

/* Bytes of the object at p (granule multiple). */
size_t _corral_object_size(corral_chunk_t *c, const void *p);
void _corral_group_free(corral_chunk_t *c, void *p);
/* Owner: moves the objects other threads freed onto c's local lists and
 * leaves `remote` empty with flag `counted` (0, or CORRAL_REMOTE_COUNTED). */
void _corral_chunk_drain(corral_chunk_t *c, uintptr_t counted);

/* Group of any pointer into a chunk held by a group, or -1. */
int _corral_group_of_address(const void *p);

/* Chunk hand-overs (chunk.c). */
void _corral_layout_init(void);
corral_chunk_t *_corral_chunk_acquire(corral_heap_t *h, unsigned pool, int may_adopt, int *adopted);
void _corral_chunk_retire(corral_chunk_t *c);
void _corral_chunk_release(corral_chunk_t *c);

/* fork: the global chunk lock around fork, and the child's clean-up. */
void _corral_heap_fork_prepare(void);
void _corral_heap_fork_parent(void);
void _corral_heap_fork_child(void);

/* Statistics: per group chunk counts and peaks; heap registry walk. */
/* Peak live bytes of a group are sampled (chunk.c): a lock and a walk over
 * the thread heaps, so only every this many allocations of a thread, and
 * whenever the thread's own live bytes in the group grow 1/8 past the last
 * sample (a structure built and then kept is caught within 12.5%). */
#define CORRAL_SAMPLE_EVERY 4096
void _corral_sample_live(unsigned g);

typedef struct corral_group_totals_s {
  corral_group_counts_t counts;
  uint64_t chunks, peak_chunks, peak_live, peak_resident;
} corral_group_totals_t;
void _corral_heap_totals(corral_group_totals_t *groups, unsigned ngroups,
                         uint64_t *ungrouped_objects, uint64_t *ungrouped_bytes);

#pragma GCC visibility pop

#endif
