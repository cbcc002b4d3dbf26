/* Group memory: reserved ranges carved into size-aligned chunks. A chunk
 * serves one pool of one thread at a time: a block chunk holds blocks of one
 * size class (block.c), a mixed chunk objects of any size in allocation
 * order (mixed.c). docs/runtime.md explains the layout and the reuse scheme. */
#ifndef CORRAL_HEAP_H
#define CORRAL_HEAP_H

#include "debug.h"
#include "gates.h"
#include "internal.h"
#include "modes.h"
#include "prefetch.h"
#include "size_class.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Largest alignment a group serves; larger ones go to the next allocator. */
#define CORRAL_MAX_GROUP_ALIGN 4096
#define CORRAL_GRANULE 16         /* mixed chunks place objects in whole granules */
/* Plan groups are 0..254, random pools up to 255, dynamic pools up to 255;
 * safe mode gives each allocation site a group of its own (docs/safe.md). */
#define CORRAL_MAX_GROUPS 1024
#define CORRAL_MAX_RANGES 16
/* A pool is a group's size class; a mixed group uses its class 0 only. */
#define CORRAL_POOLS (CORRAL_MAX_GROUPS * CORRAL_SIZE_CLASSES)
/* Added to a chunk's balance while it is retired (chunk.c). */
#define CORRAL_RETIRED (1L << 40)
/* Bit 0 of a chunk's `remote` word: frees pushed now must also be counted
 * in `balance` (set from retirement until the next owner drains). */
#define CORRAL_REMOTE_COUNTED ((uintptr_t)1)
/* Bits 48 to 63 of it: how many frees the stack holds, up to
 * CORRAL_REMOTE_MANY, where the count stays (group memory lies below 2^48:
 * add_range). So the owner can take a stack as its free list without
 * walking it (block.c, _corral_block_drain). */
#define CORRAL_REMOTE_ONE ((uintptr_t)1 << 48)
#define CORRAL_REMOTE_MANY ((uintptr_t)0xffff)
#define CORRAL_CHUNK_MAGIC 0x6c6172726f63u   /* "corral" */
/* Owner of a chunk no thread allocates in: not NULL, so that a thread
 * without a heap never takes the owner's way. */
#define CORRAL_UNOWNED ((struct corral_heap_s *)1)
/* Block chunks a thread keeps per pool besides its current one (chunk.c,
 * "Held chunks"); the oldest past that is retired. CORRAL_HELD_ALONE while
 * the thread's is the only live heap: no other thread could adopt them. */
#define CORRAL_HELD 4
#define CORRAL_HELD_ALONE 64
/* Blocks of a fresh chunk are linked onto its free list this many bytes'
 * worth at a time (at least one block). */
#define CORRAL_EXTEND_BYTES 4096

struct corral_heap_s;

/* Header at the start of every chunk. Owner-only fields are touched only by
 * the thread whose heap is `owner`; everything else is atomic or under the
 * global chunk lock (heap.c). */
typedef struct corral_chunk_s {
  /* read by every free, written when the chunk changes hands (`limit` also
   * when a block chunk links more fresh blocks) */
  uint64_t magic;                          /* CORRAL_CHUNK_MAGIC while a group holds it */
  uint32_t group;
  uint16_t pool;                           /* group * CORRAL_SIZE_CLASSES + size class */
  uint8_t in_retired;                      /* on its pool's retired list (lock) */
  uint8_t kept_resident;                   /* safe mode: kept for its pool, pages not purged (lock) */
  uint8_t abandoned;                       /* retired by its thread's exit, not for want of room (lock) */
  _Atomic(struct corral_heap_s *) owner;   /* thread heap allocating here, or CORRAL_UNOWNED */
  uint64_t key;                            /* written into freed objects to spot double frees */
  uint64_t div_magic;                      /* block chunks: ceil(2^64 / block_size) */
  char *blocks;                            /* block chunks: the first block */
  uint32_t block_size;                     /* 0: a mixed chunk */
  uint32_t limit;                          /* block chunks: bytes from `blocks` ever handed out */
  /* owner-only, written by every allocation and local free: a line of its
   * own, so frees from other threads do not keep taking it from the owner */
  _Alignas(64) void *free;                 /* block chunks: blocks to hand out, linked by word 0 */
  void *local_free;                        /* block chunks: the owner's frees, taken when `free` runs dry */
  size_t live;                             /* objects not freed locally or drained */
  char *bump, *end;                        /* never-used space [bump, end) */
  char *batch_end;                         /* safe mode: fresh blocks below it go before freed ones (block.c) */
  uint64_t counted_allocs;                 /* objects handed out while counting (_corral_modes.track) or in
                                              dynamic mode (its remote-free judgement) */
  uint64_t drained;                        /* objects drained from `remote` */
  uint64_t drained_owned;                  /* of those, drained since its owner took it (chunk.c) */
  uint32_t torn;                           /* owned by a thread a fork left behind: a pop or push it
                                              was in the middle of may be half done (debug.c) */
  uint32_t held;                           /* on its owner's held list (chunk.c, "Held chunks") */
  char *touched_end;                       /* empty and resident: the end of the pages its uses touched (lock) */
  uint64_t spare_since;                    /* a spare: when it became one, in ms (lock) */
  /* any thread: written by every remote free */
  _Alignas(64) _Atomic(uintptr_t) remote;  /* stack of objects freed by other threads, | CORRAL_REMOTE_COUNTED */
  atomic_long balance;                     /* counted remote frees minus drained; retired: + CORRAL_RETIRED - live */
  struct corral_chunk_s *next, *prev;      /* retired list or pool (lock) */
  _Alignas(64) void *free_lists[];         /* mixed chunks: [classes] LIFO free objects of k granules
                                              at k-1; then the start and end bitmaps */
} corral_chunk_t;

typedef struct corral_group_counts_s {
  uint64_t objects, bytes, frees, freed_bytes;
  uint64_t mark;     /* this thread's live bytes (bytes - freed_bytes) that trigger the next sample */
} corral_group_counts_t;

/* One per thread that allocated grouped memory or counted anything; mapped
 * from the OS, linked in a registry so stats and fork can see all of them. */
typedef struct corral_heap_s {
  corral_chunk_t *cur[CORRAL_POOLS];       /* by pool: group * CORRAL_SIZE_CLASSES + size class */
  corral_chunk_t *held[CORRAL_POOLS];      /* by pool: block chunks it filled, still its own (chunk.c),
                                              newest first, linked by `next`; at most CORRAL_HELD
                                              (CORRAL_HELD_ALONE) */
  /* Bit per pool whose cur it ever set: a thread's exit and a fork look at
   * those alone. cur and held span 116 pages, and reading them all at
   * each thread's exit faulted them in (graphviz's dot on a two-node
   * graph: 342 of the run's 2,230 page faults, from three threads). */
  uint64_t used[(CORRAL_POOLS + 63) / 64];
  corral_group_counts_t counts[CORRAL_MAX_GROUPS];
  uint64_t ungrouped_objects, ungrouped_bytes;
  int dead;                                /* thread exited; counts stay for stats */
  struct corral_heap_s *next_heap;
} corral_heap_t;

/* Layout, fixed at init from the options. */
typedef struct corral_layout_s {
  size_t chunk_size, chunk_mask;
  unsigned colour_shift;                   /* log2(chunk_size) - 6: see _corral_chunk_header */
  uintptr_t colour_mask;                   /* (colours - 1) * 64 */
  size_t classes;                          /* mixed chunks: max_size / 16 */
  size_t bitmap_words;                     /* mixed chunks: per bitmap (two, interleaved) */
  size_t header;                           /* mixed chunks: bytes before the first object */
} corral_layout_t;

extern corral_layout_t _corral_layout;

/* Reserved ranges, carved from the start; [lo, lo + carved) is the carved part. */
extern atomic_uint _corral_range_count;
extern uintptr_t _corral_range_lo[CORRAL_MAX_RANGES], _corral_range_carved[CORRAL_MAX_RANGES];
extern uintptr_t _corral_range_min;      /* lowest lo of all ranges (mmap grows down) */
extern uintptr_t _corral_range_max;      /* highest reserved end of all ranges */
/* The span every grouped pointer lies in: gates.h. */

/* The two bitmaps of a mixed chunk are interleaved word by word, so an
 * object's start and end bits usually share a cache line: word 2w holds the
 * start bits of granules 64w..64w+63, word 2w+1 their end bits. */
static inline uint64_t *_corral_bits(corral_chunk_t *c)
{
  return (uint64_t *)(c->free_lists + _corral_layout.classes);
}

void _corral_heap_init(void);

/* The calling thread's heap (created on first use; NULL if out of memory).
 * _corral_tls_fast is the same heap while nothing is counted, else
 * _corral_no_heap, which has no chunk (every pop misses) and owns none:
 * the fast paths read it without a test. _corral_tls_safe is the same
 * heap while safe mode frees without counting (CORRAL_FREE_SAFE), else
 * _corral_no_heap: free's first way finds safe mode's own frees by one
 * compare, with no read of the way. */
extern __thread corral_heap_t *_corral_tls_heap __attribute__((tls_model("initial-exec")));
extern __thread corral_heap_t *_corral_tls_fast __attribute__((tls_model("initial-exec")));
extern __thread corral_heap_t *_corral_tls_safe __attribute__((tls_model("initial-exec")));
extern corral_heap_t _corral_no_heap;
/* Every thread heap, linked by next_heap (heap.c; under _corral_heap_lock). */
extern corral_heap_t *_corral_heaps;
/* Heaps of live threads (heap.c; written under _corral_heap_lock). */
extern unsigned _corral_heaps_live;
corral_heap_t *_corral_heap_create_for_thread(void);
static inline corral_heap_t *_corral_heap_get(void)
{
  corral_heap_t *h = _corral_tls_heap;
  return CORRAL_LIKELY(h != NULL) ? h : _corral_heap_create_for_thread();
}

/* Groups whose plan says "layout G mixed": all sizes share one chunk, in
 * allocation order (mixed.c). Others (and random or dynamic pools) keep each
 * size class in block chunks of its own (block.c). Set once, before the
 * runtime is ready. */
extern uint8_t _corral_group_mixed[CORRAL_MAX_GROUPS];

/* The fresh-only group (safe mode's fresh space, docs/safe.md), or
 * CORRAL_MAX_GROUPS: none. Its blocks are handed out from never-used
 * space alone, in allocation order, for requests of any group; a block
 * freed there is never handed out again, and a chunk whose blocks all
 * came back is given up, its pages to the OS and its addresses to
 * nobody. A class closes, for every thread, once a quarter of the
 * blocks a thread's current chunk handed out came back, or a quarter of
 * those the retired chunks of its pool handed out: what is freed then
 * should be reused, by its own group. All close once
 * CORRAL_FRESH_SPENT_MOST chunks were given up. */
extern unsigned _corral_fresh_group;
/* Makes group g the fresh-only one, its classes up to
 * CORRAL_FRESH_MAX_SIZE open (block.c); before the runtime is ready. */
void _corral_fresh_open(unsigned g);
/* Larger requests never take fresh-only pools: such a block spans 16
 * lines and more, so its neighbour matters less than its reuse. */
#define CORRAL_FRESH_MAX_SIZE 1024
#define CORRAL_FRESH_JUDGE_BYTES 65536      /* a chunk is judged once it handed out this much */
#define CORRAL_FRESH_SPENT_MOST 1024        /* chunks given up (their address space lost) */
/* Fresh-only chunks given up so far (chunk.c; under _corral_heap_lock),
 * classes closed by their frees (block.c), and by size class whether it
 * takes no fresh space: closed, past CORRAL_FRESH_MAX_SIZE, or there is
 * no fresh-only group (every class, until _corral_fresh_open). */
extern unsigned _corral_fresh_spent;
extern unsigned _corral_fresh_closed;
extern uint8_t _corral_fresh_class_closed[CORRAL_SIZE_CLASSES];

/* What the modes ask of the heap (counting, the slow ways, safe mode's
 * links and checks, dynamic mode's counted remote frees): modes.h. */

/* Safe mode's free-list links: stored encoded with two per-process secrets
 * and the address they are stored at, so that a write through a dangling
 * pointer can neither plant a chosen next block nor go unnoticed (a random
 * word decodes to something that is not a block of the chunk), and a link
 * copied elsewhere decodes wrong. The keys are drawn at safe mode's init.
 * Outside safe mode links are plain pointers, and the fast paths, which
 * safe mode never takes, read them as such. */
static inline uintptr_t _corral_link_encode(const void *at, const void *next)
{
  uintptr_t x = (uintptr_t)next ^ _corral_modes.link_keys[0];
  return ((x << 23) | (x >> 41)) + (uintptr_t)at * _corral_modes.link_keys[1];
}
static inline void *_corral_link_decode(const void *at, uintptr_t word)
{
  uintptr_t x = word - (uintptr_t)at * _corral_modes.link_keys[1];
  return (void *)(((x >> 23) | (x << 41)) ^ _corral_modes.link_keys[0]);
}
/* The link stored at `at`, in whichever form the mode keeps it. */
static inline void *_corral_link_get(const void *at)
{
  uintptr_t w = *(const uintptr_t *)at;
  return CORRAL_UNLIKELY(_corral_modes.safe) ? _corral_link_decode(at, w) : (void *)w;
}
static inline void _corral_link_set(void *at, const void *next)
{
  *(uintptr_t *)at = CORRAL_UNLIKELY(_corral_modes.safe) ? _corral_link_encode(at, next) : (uintptr_t)next;
}

/* What a pointer is to group memory (_corral_chunk_of). */
typedef enum {
  CORRAL_NOT_GROUP = 0,      /* not in any chunk: the next allocator's, or the boot buffer's */
  CORRAL_OBJECT,             /* the start of an object a group handed out */
  CORRAL_IN_EMPTY_CHUNK,     /* in group memory no group holds */
  CORRAL_NOT_A_START,        /* in a group's chunk, but not where an object starts */
} corral_where_t;

const char *_corral_where_text(corral_where_t w);

/* Chunk headers are coloured: the header of chunk number k (its address
 * over the chunk size) sits k' pages and k' cache lines past the chunk's
 * start, k' = k mod the layout's colours (64 for chunks of 1 MiB and more, fewer for smaller
 * chunks, so that colouring takes at most a quarter of a chunk). Blocks
 * follow the header. Chunks are aligned to their size, so without colours
 * every header would fall into one set of each cache indexed by low address
 * bits (an L1 has 8 to 12 ways; 4 pools of 17 classes are 68 chunks), and
 * the pages that every chunk actually uses (its first few) into one set of
 * each set-associative TLB. The line offset spreads the headers over cache
 * sets, the page offset spreads the used pages over TLB sets. The space
 * before a header is never touched, so it costs address space, not memory.
 * The offset costs an allocation nothing (thread heaps hold header
 * pointers) and a free four instructions. */
static inline __attribute__((always_inline)) corral_chunk_t *_corral_chunk_header(uintptr_t p)
{
  uintptr_t lines = (p >> _corral_layout.colour_shift) & _corral_layout.colour_mask;   /* k' * 64 */
  return (corral_chunk_t *)((p & _corral_layout.chunk_mask) + (lines << 6) + lines);
}

static inline uintptr_t _corral_chunk_base(const corral_chunk_t *c)
{
  return (uintptr_t)c & _corral_layout.chunk_mask;
}

/* Granules a mixed chunk gives an object of `size` bytes (0 takes one). */
static inline size_t _corral_granules(size_t size)
{
  return size ? (size + CORRAL_GRANULE - 1) / CORRAL_GRANULE : 1;
}

static inline size_t _corral_granule_index(corral_chunk_t *c, const void *p)
{
  return ((uintptr_t)p - (uintptr_t)c) / CORRAL_GRANULE;
}

/* Is p a block start in block chunk c? An offset is a multiple of the block
 * size exactly when offset * ceil(2^64 / size) wraps below the multiplier
 * (offsets below 2^32; chunks are at most 256 MiB). Blocks never handed out
 * (at or past `limit`) are not objects either. */
static inline int _corral_block_start(corral_chunk_t *c, const void *p)
{
  uint64_t off = (uintptr_t)p - (uintptr_t)c->blocks;
  return off < __atomic_load_n(&c->limit, __ATOMIC_RELAXED) && off * c->div_magic < c->div_magic;
}

/* Safe mode: whether `next`, decoded from the link at `at` in chunk c, is a
 * block of c. If not, the link was overwritten after its block was freed:
 * safe.c reports it (and aborts unless told to go on), and the caller ends
 * the list there, so the blocks behind it are never handed out again. */
static inline int _corral_safe_link_ok(corral_chunk_t *c, const void *at, const void *next)
{
  if (CORRAL_LIKELY(_corral_block_start(c, next))) return 1;
  _corral_modes.safe_bad_link(c, at);
  return 0;
}

static inline __attribute__((always_inline)) int _corral_in_range(uintptr_t c, unsigned i)
{
  return c - _corral_range_lo[i] < __atomic_load_n(&_corral_range_carved[i], __ATOMIC_ACQUIRE);
}

/* The chunk of p if p is an object a group handed out (*where says
 * CORRAL_OBJECT); otherwise NULL and *where says what p is. */
static inline __attribute__((always_inline)) corral_chunk_t *_corral_chunk_of(const void *p, corral_where_t *where)
{
  uintptr_t base = (uintptr_t)p & _corral_layout.chunk_mask;
  /* The first range first, without the count: before it exists its bounds
   * are both 0, and nothing lies in [0, 0). */
  if (CORRAL_UNLIKELY(!_corral_in_range(base, 0))) {
    unsigned n = atomic_load_explicit(&_corral_range_count, memory_order_acquire), i = 1;
    while (i < n && !_corral_in_range(base, i)) i++;
    if (CORRAL_LIKELY(i >= n)) {
      *where = CORRAL_NOT_GROUP;
      return NULL;
    }
  }
  corral_chunk_t *c = _corral_chunk_header((uintptr_t)p);
  if (__atomic_load_n(&c->magic, __ATOMIC_ACQUIRE) != CORRAL_CHUNK_MAGIC) {
    *where = CORRAL_IN_EMPTY_CHUNK;
    return NULL;
  }
  int ok;
  if (CORRAL_LIKELY(c->block_size != 0)) {
    ok = _corral_block_start(c, p);
  } else {
    size_t g = _corral_granule_index(c, p);
    ok = (uintptr_t)p >= (uintptr_t)c + _corral_layout.header && ((uintptr_t)p & (CORRAL_GRANULE - 1)) == 0 &&
         ((__atomic_load_n(&_corral_bits(c)[2 * (g / 64)], __ATOMIC_RELAXED) >> (g % 64)) & 1);
  }
  *where = ok ? CORRAL_OBJECT : CORRAL_NOT_A_START;
  return ok ? c : NULL;
}

/* Bytes of the object at p: its block size, or for a mixed chunk its
 * granules (mixed.c). */
size_t _corral_mixed_size(corral_chunk_t *c, const void *p);
static inline size_t _corral_object_size(corral_chunk_t *c, const void *p)
{
  return c->block_size ? c->block_size : _corral_mixed_size(c, p);
}

/* ---- allocation and free (alloc.c; the fast paths here) ---------------- */

/* Grouped allocation of `size` bytes in group g, aligned to `align` (0 for
 * malloc's alignment, else a power of two <= 4096); NULL if the group memory
 * is exhausted. */
void *_corral_group_alloc_slow(unsigned g, size_t size, size_t align);
/* A block of `size` bytes from the fresh-only group, counted for group g;
 * NULL when that class is closed (for every thread; always past
 * CORRAL_FRESH_MAX_SIZE, or with no fresh-only group: g's own pool then)
 * or memory ran out. */
void *_corral_group_alloc_fresh(unsigned g, size_t size);
void _corral_group_free_slow(corral_chunk_t *c, void *p);

/* Classes of every size a group takes (max_size is at most 65536) by
 * 8-byte steps, from corral_size_class: one load, no branch. */
#define CORRAL_TABLE_MAX 65536
extern uint8_t _corral_class_of8[CORRAL_TABLE_MAX / 8 + 1];

static inline unsigned _corral_class(size_t size)
{
  return _corral_class_of8[(size + 7) >> 3];
}

/* The size whose class a block pool serves an aligned request from: a
 * block is aligned to the largest power of two dividing its size (up to
 * 4096), so the size rounded up to an alignment above 8 finds a class
 * whose blocks have it (docs/runtime.md, "Packing"). */
static inline size_t _corral_aligned_size(size_t size, size_t align)
{
  return align > 8 ? ((size ? size : 1) + align - 1) & ~(align - 1) : size;
}

/* Owner: the head of block chunk c's non-empty free list. Word 1 of a
 * handed-out block is cleared: a free that finds the chunk's key there is a
 * double free. The next block is prefetched: after a drain the list is
 * other threads' frees, each block a line another core wrote, and its
 * miss then overlaps the program's work on this one (xmalloc-test all
 * pooled, one producer: +5%, 11 alternating rounds; neutral on health,
 * treeadd and espresso, whose next block is warm). For writing, where the
 * processor can (prefetch.h): read first, that line came over shared and
 * had to be asked for again for the pop's write (+11% more there). */
static inline __attribute__((always_inline)) void *_corral_block_pop(corral_chunk_t *c)
{
  void **p = (void **)c->free;
  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC && c->block_size != 0);
  CORRAL_ASSERT(atomic_load_explicit(&c->owner, memory_order_relaxed) == _corral_tls_heap);
  CORRAL_ASSERT(_corral_block_start(c, p));
  void *next = p[0];
  c->free = next;
  CORRAL_PREFETCH_WRITE(next);   /* the next pop writes it, and so will the program */
  p[1] = NULL;
  c->live++;
  return p;
}

/* Owner, safe mode: the next fresh block of block chunk c's current batch
 * (bump < batch_end), handed out from its bump space without a link
 * (block.c, extend). The limit that free's block test reads moves with
 * it, published before the block is handed out. Its words stay as they
 * are: space never handed out since the chunk was reset reads zero or
 * holds a former key, and a reset gives the chunk a new one, so word 1
 * never holds its key. */
static inline __attribute__((always_inline)) void *_corral_block_bump(corral_chunk_t *c)
{
  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC && c->block_size != 0 && c->free == NULL);
  CORRAL_ASSERT(c->batch_end - c->bump >= (ptrdiff_t)c->block_size && c->batch_end <= c->end);
  void *p = c->bump;
  /* A batch lies inside a chunk, never at 0: said, so that the ways that
   * test a pop for NULL drop the test here (2 of safe mode's 31
   * instructions a fresh block, Olden perimeter). */
  if (p == NULL) __builtin_unreachable();
  c->bump += c->block_size;
  __atomic_store_n(&c->limit, (uint32_t)(c->bump - c->blocks), __ATOMIC_RELEASE);
  c->live++;
  return p;
}

/* Owner: the last live object of held chunk c was freed: release it
 * (chunk.c, "Held chunks"). A current chunk stays, emptied or not. */
void _corral_chunk_emptied(corral_chunk_t *c) __attribute__((cold));

/* Owner: block p of c onto the local list, the key in word 1, its link
 * encoded when `encoded` (a constant at each caller: safe mode's frees). */
static inline __attribute__((always_inline)) void _corral_block_onto_local(corral_chunk_t *c, void *p, int encoded)
{
  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC && c->block_size != 0 && c->live > 0);
  CORRAL_ASSERT(atomic_load_explicit(&c->owner, memory_order_relaxed) == _corral_tls_heap);
  CORRAL_ASSERT(_corral_block_start(c, p));
  void **q = (void **)p, *next = c->local_free;
  uint64_t key = c->key;                /* both read before q is written, which may alias them */
  q[0] = encoded ? (void *)_corral_link_encode(q, next) : next;
  q[1] = (void *)key;
  c->local_free = q;
  if (CORRAL_UNLIKELY(--c->live == 0) && CORRAL_UNLIKELY(c->held)) _corral_chunk_emptied(c);
}

static inline __attribute__((always_inline)) void _corral_block_free_local(corral_chunk_t *c, void *p)
{
  _corral_block_onto_local(c, p, 0);
}

/* Safe mode's slow free and its short one. */
static inline __attribute__((always_inline)) void _corral_block_free_encoded(corral_chunk_t *c, void *p)
{
  _corral_block_onto_local(c, p, 1);
}

/* The owner's way: the thread's current block chunk for `size` in the
 * group whose first pool is pool0 (group * CORRAL_SIZE_CLASSES), when its
 * free list has a block. NULL when anything else is needed (no chunk yet,
 * list empty, a mixed group whose chunk never has a `free` list,
 * counting): the slow way then. pool0 is a size_t: no 32-bit index to
 * widen on the fast path. */
static inline __attribute__((always_inline)) corral_chunk_t *_corral_pool_ready(size_t pool0, size_t size)
{
  corral_chunk_t *c = _corral_tls_fast->cur[pool0 + (size_t)_corral_class(size)];
  return CORRAL_LIKELY(c != NULL && c->free != NULL) ? c : NULL;
}

/* A block from that chunk, or NULL. */
static inline __attribute__((always_inline)) void *_corral_pool_pop(size_t pool0, size_t size)
{
  corral_chunk_t *c = _corral_pool_ready(pool0, size);
  return CORRAL_LIKELY(c != NULL) ? _corral_block_pop(c) : NULL;
}

static inline __attribute__((always_inline)) void *_corral_group_alloc(unsigned g, size_t size, size_t align)
{
  if (CORRAL_LIKELY(align == 0)) {
    void *p = _corral_pool_pop(g * CORRAL_SIZE_CLASSES, size);
    if (CORRAL_LIKELY(p != NULL)) return p;
  }
  return _corral_group_alloc_slow(g, size, align);
}

/* Whether block p of c may go on c's local list at once: not a double free
 * (the key is not in word 1), and c is this thread's chunk (never while
 * counting: no chunk is _corral_no_heap's). */
static inline __attribute__((always_inline)) int _corral_frees_here(corral_chunk_t *c, const void *p)
{
  return ((const uint64_t *)p)[1] != c->key &&
         atomic_load_explicit(&c->owner, memory_order_relaxed) == _corral_tls_fast;
}

/* The owner's free of a block. Anything else (another thread's chunk, a
 * mixed chunk, a double free, counting) takes the slow way. */
static inline __attribute__((always_inline)) void _corral_group_free(corral_chunk_t *c, void *p)
{
  if (CORRAL_LIKELY(c->block_size != 0 && _corral_frees_here(c, p))) {
    _corral_block_free_local(c, p);
    return;
  }
  _corral_group_free_slow(c, p);
}

/* free's first way: a block in the first range, each test one compare:
 * the owner's free, or while nothing is counted another thread's (a push
 * onto the chunk's remote stack, _corral_free_remote), in safe mode too.
 * 0 when any test fails (another range, a mixed or empty chunk, not a
 * block start, a double free, counting): _corral_free's full way then
 * tells which. An empty chunk needs no magic test here: release clears
 * its limit, and a purged header reads zero. The range is read with a
 * plain load, which the compare takes as its operand: a pointer a program
 * frees came from an allocation that happened before, and a stray one
 * inside the carved part reads a header that exists. */
void _corral_free_remote(corral_chunk_t *c, void *p);
static inline __attribute__((always_inline)) int _corral_free_owned(void *p)
{
  uintptr_t a = (uintptr_t)p;
  if (CORRAL_UNLIKELY(a - _corral_range_lo[0] >= _corral_range_carved[0]))
    return 0;
  corral_chunk_t *c = _corral_chunk_header(a);
  if (CORRAL_LIKELY(_corral_block_start(c, p) && ((const uint64_t *)p)[1] != c->key)) {
    corral_heap_t *owner = atomic_load_explicit(&c->owner, memory_order_relaxed);
    if (CORRAL_LIKELY(owner == _corral_tls_fast)) {
      _corral_block_free_local(c, p);
      return 1;
    }
    /* Safe mode, nothing counted: the owner's free (its thread heap is not
     * _corral_tls_fast, which full ways leave empty, but _corral_tls_safe),
     * link encoded. The owner read once: a chunk that passes the block
     * test has an owner or CORRAL_UNOWNED, never _corral_no_heap, so a
     * thread with no heap yet frees remotely. Tested before the way is
     * read: 5 instructions less on each of safe mode's own frees, 2 more
     * on another thread's free in the other modes. */
    if (owner == _corral_tls_safe) {
      _corral_block_free_encoded(c, p);
      return 1;
    }
    /* Another thread's free, while nothing is counted, onto the chunk's
     * remote stack; in safe mode its link encoded as well
     * (_corral_link_set), as the full way would after the same tests. */
    if (_corral_modes.free_way != CORRAL_FREE_FULL) {
      _corral_free_remote(c, p);
      return 1;
    }
  }
  return 0;
}

/* The stack of a `remote` word, and how many frees it holds
 * (CORRAL_REMOTE_MANY: that many or more). */
static inline void *_corral_remote_list(uintptr_t head)
{
  return (void *)(head & (CORRAL_REMOTE_ONE - 1) & ~CORRAL_REMOTE_COUNTED);
}
static inline uintptr_t _corral_remote_length(uintptr_t head)
{
  return head / CORRAL_REMOTE_ONE;
}

/* Whether a remote free pushed onto `head` is counted in the chunk's balance:
 * while the chunk is retired, so the freer of its last object can tell, and
 * always in dynamic mode, whose samples judge the undrained count. Otherwise
 * a remote free is one atomic, not two. */
static inline int _corral_remote_counted(uintptr_t head)
{
  return (head & CORRAL_REMOTE_COUNTED) || _corral_modes.dynamic;
}

/* Owner: moves the objects other threads freed onto c's lists and leaves
 * `remote` empty with flag `counted` (0, or CORRAL_REMOTE_COUNTED)
 * (chunk.c). */
void _corral_chunk_drain(corral_chunk_t *c, uintptr_t counted);

/* Pools (group and size class) that ever had a chunk, and empty chunks
 * safe mode keeps for their pools. */
void _corral_pool_totals(unsigned *pools, unsigned *kept_chunks);

/* Group of any pointer into a chunk held by a group, or -1. */
int _corral_group_of_address(const void *p);

/* Block chunks (block.c): a block from pool's chunks; the drain of c's
 * remote stack, `length` frees long (CORRAL_REMOTE_MANY: unknown). Mixed
 * chunks (mixed.c): the same for any size. */
void *_corral_block_alloc(corral_heap_t *h, unsigned pool);
/* A never-used block from fresh-only pool `pool` of h; NULL when its
 * class has closed or memory ran out. */
void *_corral_block_alloc_fresh(corral_heap_t *h, unsigned pool);
long _corral_block_drain(corral_chunk_t *c, void *list, uintptr_t length);
void *_corral_mixed_alloc(corral_heap_t *h, unsigned pool, size_t size, size_t align);
long _corral_mixed_drain(corral_chunk_t *c, void *list);
void _corral_mixed_free_local(corral_chunk_t *c, void *p);

/* Empty chunks past max_spare wait purge_delay before they go back to the
 * OS (chunk.c, keep_spare). Each refill looks: one load while none waits,
 * so that a program that stops taking and giving back chunks still has
 * them purged once it allocates on. */
extern uint8_t _corral_spares_waiting;
void _corral_spares_purge_due(void);
static inline void _corral_spares_tick(void)
{
  if (CORRAL_UNLIKELY(__atomic_load_n(&_corral_spares_waiting, __ATOMIC_RELAXED))) _corral_spares_purge_due();
}

/* Chunk hand-overs (chunk.c). */
void _corral_layout_init(void);
/* Move h's current chunk of the pool (if any) aside and make another
 * current: with may_adopt, one of the thread's held chunks or a retired
 * one with freed space (drained); else an empty one. NULL when out of
 * memory. A block chunk moved aside stays the thread's (held) unless its
 * objects die in other threads; that one and a mixed one are retired. */
corral_chunk_t *_corral_chunk_replace(corral_heap_t *h, unsigned pool, int may_adopt);
/* Retire h's held chunks of the pool (its thread exits, or a fork left it
 * behind: torn). */
void _corral_chunk_retire_held(corral_heap_t *h, unsigned pool, uint32_t torn);
corral_chunk_t *_corral_chunk_acquire(corral_heap_t *h, unsigned pool, int may_adopt, int *adopted);
void _corral_chunk_retire(corral_chunk_t *c, int abandoned);
/* Fresh-only pool `pool`: whether its retired chunks hold more blocks
 * that came back than a quarter of those they handed out, and at least
 * CORRAL_FRESH_JUDGE_BYTES of them: memory no one will use again. */
int _corral_fresh_stranded(unsigned pool);
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
