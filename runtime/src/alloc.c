/* Allocation and free inside group chunks.
 *
 * Objects are whole 16-byte granules with no header. Each chunk has two
 * bitmaps over its granules: a start bit at an object's first granule and an
 * end bit at its last, so an object's size is the distance to the next end
 * bit. Freed objects go on per-chunk LIFO lists by exact granule count; a slot
 * is reused only for the same count, so its bits stay right and are never
 * cleared. The owner thread allocates and frees without atomics; other
 * threads push onto the chunk's `remote` stack, which the owner drains. */
#include "dynamic.h"
#include "heap.h"

static inline size_t granules_of(size_t size)
{
  return size ? (size + CORRAL_GRANULE - 1) / CORRAL_GRANULE : 1;
}

uint8_t _corral_group_by_size[CORRAL_MAX_GROUPS];

/* kind 0: start bit, 1: end bit, of granule i. */
static inline void set_bit(uint64_t *bits, size_t i, int kind)
{
  uint64_t *w = &bits[2 * (i / 64) + kind];
  __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) | (1ull << (i % 64)), __ATOMIC_RELAXED);
}


static inline size_t object_size(corral_chunk_t *c, const void *p)
{
  const uint64_t *end = _corral_bits(c) + 1;
  size_t i = _corral_granule_index(c, p), w = i / 64;
  uint64_t bits = __atomic_load_n(&end[2 * w], __ATOMIC_RELAXED) & (~0ull << (i % 64));
  while (!bits && ++w < _corral_layout.bitmap_words) bits = __atomic_load_n(&end[2 * w], __ATOMIC_RELAXED);
  if (!bits) return CORRAL_GRANULE;      /* cannot happen for a valid object */
  return (w * 64 + (size_t)__builtin_ctzll(bits) - i + 1) * CORRAL_GRANULE;
}

size_t _corral_object_size(corral_chunk_t *c, const void *p)
{
  return object_size(c, p);
}

/* The second word of a free object holds the chunk's key; a free that finds
 * it there is a double free (or, with odds of 2^-64, unlucky data). */
static inline void push_local(corral_chunk_t *c, void *p, size_t k)
{
  void **slot = &c->free_lists[k - 1];
  ((void **)p)[0] = *slot;
  ((uint64_t *)p)[1] = c->key;
  *slot = p;
}

/* Whether a remote free pushed onto `head` is counted in the chunk's balance:
 * while the chunk is retired, so the freer of its last object can tell, and
 * always in dynamic mode, whose samples judge the undrained count. Otherwise
 * a remote free is one atomic, not two. */
static inline int remote_counted(uintptr_t head)
{
  return (head & CORRAL_REMOTE_COUNTED) || _corral_dyn_on;
}

void _corral_chunk_drain(corral_chunk_t *c, uintptr_t counted)
{
  uintptr_t head = atomic_exchange_explicit(&c->remote, counted, memory_order_acquire);
  void *p = (void *)(head & ~CORRAL_REMOTE_COUNTED);
  long n = 0;
  while (p) {
    void *next = *(void **)p;
    push_local(c, p, object_size(c, p) / CORRAL_GRANULE);
    p = next;
    n++;
  }
  c->live -= (size_t)n;
  if (n && remote_counted(head)) atomic_fetch_sub_explicit(&c->balance, n, memory_order_relaxed);
}

/* Owner: k granules aligned to `align` from c, or NULL if c has no room. */
static inline void *chunk_alloc(corral_chunk_t *c, size_t k, size_t align)
{
  void *p = c->free_lists[k - 1];
  if (p && ((uintptr_t)p & (align - 1)) == 0) {
    c->free_lists[k - 1] = *(void **)p;
  } else {
    uintptr_t a = ((uintptr_t)c->bump + align - 1) & ~(uintptr_t)(align - 1);
    if (a + k * CORRAL_GRANULE > (uintptr_t)c->end) return NULL;
    p = (void *)a;
    c->bump = (char *)a + k * CORRAL_GRANULE;
    size_t i = _corral_granule_index(c, p);
    uint64_t *bits = _corral_bits(c);      /* once: the first store might alias the layout */
    set_bit(bits, i, 0);
    set_bit(bits, i + k - 1, 1);
  }
  ((uint64_t *)p)[1] = 0;
  c->live++;
  return p;
}

/* Owner, when the exact list and the bump space are empty: carve k granules
 * off the smallest larger free object. The front becomes the new object (an
 * end bit after k granules, a start bit for the rest), the rest goes on its
 * own list. Bits are only ever set, never cleared, so readers in other
 * threads still see every object's bits right. Pieces are not merged again. */
static void *split_alloc(corral_chunk_t *c, size_t k, size_t align)
{
  if (align > CORRAL_GRANULE) return NULL;
  for (size_t j = k + 1; j <= _corral_layout.classes; j++) {
    void *p = c->free_lists[j - 1];
    if (!p) continue;
    c->free_lists[j - 1] = *(void **)p;
    size_t i = _corral_granule_index(c, p);
    set_bit(_corral_bits(c), i + k - 1, 1);
    set_bit(_corral_bits(c), i + k, 0);
    push_local(c, (char *)p + k * CORRAL_GRANULE, j - k);
    ((uint64_t *)p)[1] = 0;
    c->live++;
    return p;
  }
  return NULL;
}

/* The current chunk has no room: take objects other threads freed, carve a
 * larger free object, or move to another chunk (retire this one, adopt one
 * with freed space or take an empty one; an adopted chunk may still lack
 * room). Out of line so the fast path saves no registers for it. */
static __attribute__((noinline)) void *alloc_slow(corral_heap_t *h, unsigned pool, size_t k, size_t align)
{
  corral_chunk_t *c = h->cur[pool];
  void *p;
  if (c) {
    if (atomic_load_explicit(&c->remote, memory_order_relaxed)) {
      _corral_chunk_drain(c, 0);
      if ((p = chunk_alloc(c, k, align))) return p;
    }
    if ((p = split_alloc(c, k, align))) return p;
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    if (c) {
      h->cur[pool] = NULL;
      _corral_chunk_retire(c);
    }
    int adopted;
    c = _corral_chunk_acquire(h, pool, attempt == 0, &adopted);
    if (!c) return NULL;
    h->cur[pool] = c;
    if (adopted) _corral_chunk_drain(c, 0);
    if ((p = chunk_alloc(c, k, align)) || (p = split_alloc(c, k, align))) return p;
  }
  return NULL;
}

/* Now and then after an allocation: a peak-live sample (every
 * CORRAL_SAMPLE_EVERY objects, or when this thread's live bytes grew 1/8
 * past the last sample) and dynamic mode's pointer sampling. A tail call
 * from the fast path. */
static __attribute__((noinline)) void *sample(unsigned g, corral_group_counts_t *n, void *p)
{
  if (_corral_dyn_sample_pending) _corral_dyn_sample(p);
  uint64_t local = n->bytes - n->freed_bytes;
  if (n->objects % CORRAL_SAMPLE_EVERY == 0 || local > n->mark) {
    if (local > n->mark) n->mark = local + local / 8;
    _corral_sample_live(g);
  }
  return p;
}

void *_corral_group_alloc(unsigned g, size_t size, size_t align)
{
  corral_heap_t *h = _corral_heap_get();
  if (CORRAL_UNLIKELY(!h)) return NULL;
  size_t k = granules_of(size);
  if (align < CORRAL_GRANULE) align = CORRAL_GRANULE;
  /* By size: a freed slot is reused by its own size only, so in a group whose
   * objects turn over, mixed sizes would stay interleaved and every size's
   * live objects end up thinly spread (docs/runtime.md, "Layout by size"). */
  unsigned pool = g * CORRAL_SIZE_CLASSES + (_corral_group_by_size[g] ? corral_size_class(k) : 0);
  corral_chunk_t *c = h->cur[pool];
  void *p;
  if (CORRAL_UNLIKELY(!c || !(p = chunk_alloc(c, k, align)))) {
    p = alloc_slow(h, pool, k, align);
    if (!p) return NULL;
  }
  corral_group_counts_t *n = &h->counts[g];
  n->bytes += k * CORRAL_GRANULE;
  if (CORRAL_UNLIKELY(++n->objects % CORRAL_SAMPLE_EVERY == 0 || n->bytes - n->freed_bytes > n->mark ||
                      _corral_dyn_sample_pending))
    return sample(g, n, p);
  return p;
}

/* Another thread's free: push onto the chunk's remote stack. */
static __attribute__((noinline)) void free_remote(corral_chunk_t *c, void *p)
{
  ((uint64_t *)p)[1] = c->key;
  uintptr_t head = atomic_load_explicit(&c->remote, memory_order_relaxed);
  do {
    *(void **)p = (void *)(head & ~CORRAL_REMOTE_COUNTED);
  } while (!atomic_compare_exchange_weak_explicit(&c->remote, &head, (uintptr_t)p | (head & CORRAL_REMOTE_COUNTED),
                                                  memory_order_release, memory_order_relaxed));
  /* Count after pushing (see chunk.c): exactly CORRAL_RETIRED means c is
   * retired and this was its last object. */
  if (remote_counted(head) && atomic_fetch_add_explicit(&c->balance, 1, memory_order_acq_rel) + 1 == CORRAL_RETIRED)
    _corral_chunk_release(c);
}

static __attribute__((noinline)) void double_free(corral_chunk_t *c, void *p)
{
  _corral_warn("double free of %p in group %u (ignored)", p, c->group);
}

/* The freeing thread's counters and the chunk's local list, for a free the
 * chunk's owner makes (or, both NULL, a heapless thread into an unowned chunk). */
static inline void count_free(corral_heap_t *h, corral_chunk_t *c, size_t bytes)
{
  h->counts[c->group].frees++;
  h->counts[c->group].freed_bytes += bytes;
}

static inline void free_local(corral_chunk_t *c, void *p, size_t bytes)
{
  push_local(c, p, bytes / CORRAL_GRANULE);
  c->live--;
}

/* A free by a thread that does not own the chunk (or has no heap yet). */
static __attribute__((noinline)) void free_unowned(corral_chunk_t *c, void *p)
{
  size_t bytes = object_size(c, p);
  corral_heap_t *h = _corral_heap_get();
  if (CORRAL_LIKELY(h != NULL)) count_free(h, c, bytes);
  if (atomic_load_explicit(&c->owner, memory_order_relaxed) == h) {   /* both NULL */
    free_local(c, p, bytes);
    return;
  }
  free_remote(c, p);
}

/* Slow cases leave by tail calls, so the owner's free saves no registers. */
void _corral_group_free(corral_chunk_t *c, void *p)
{
  if (CORRAL_UNLIKELY(((uint64_t *)p)[1] == c->key)) return double_free(c, p);
  corral_heap_t *h = _corral_tls_heap;
  if (CORRAL_UNLIKELY(h == NULL || atomic_load_explicit(&c->owner, memory_order_relaxed) != h))
    return free_unowned(c, p);
  size_t bytes = object_size(c, p);
  count_free(h, c, bytes);
  free_local(c, p, bytes);
}
