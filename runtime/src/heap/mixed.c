/* Mixed chunks: objects of every size of a group in one chunk, in
 * allocation order (the plan's `layout GID mixed`).
 *
 * Objects are whole 16-byte granules with no header. Each chunk has two
 * bitmaps over its granules: a start bit at an object's first granule and an
 * end bit at its last, so an object's size is the distance to the next end
 * bit. Freed objects go on per-chunk LIFO lists by exact granule count; a slot
 * is reused only for the same count, so its bits stay right and are never
 * cleared. The owner thread allocates and frees without atomics; other
 * threads push onto the chunk's `remote` stack, which the owner drains. */
#include "heap.h"

/* kind 0: start bit, 1: end bit, of granule i. */
static inline void set_bit(uint64_t *bits, size_t i, int kind)
{
  uint64_t *w = &bits[2 * (i / 64) + kind];
  __atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) | (1ull << (i % 64)), __ATOMIC_RELAXED);
}

size_t _corral_mixed_size(corral_chunk_t *c, const void *p)
{
  const uint64_t *end = _corral_bits(c) + 1;
  size_t i = _corral_granule_index(c, p), w = i / 64;
  uint64_t bits = __atomic_load_n(&end[2 * w], __ATOMIC_RELAXED) & (~0ull << (i % 64));
  while (!bits && ++w < _corral_layout.bitmap_words) bits = __atomic_load_n(&end[2 * w], __ATOMIC_RELAXED);
  if (!bits) return CORRAL_GRANULE;      /* cannot happen for a valid object */
  return (w * 64 + (size_t)__builtin_ctzll(bits) - i + 1) * CORRAL_GRANULE;
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

void _corral_mixed_free_local(corral_chunk_t *c, void *p)
{
  push_local(c, p, _corral_mixed_size(c, p) / CORRAL_GRANULE);
  c->live--;
}

long _corral_mixed_drain(corral_chunk_t *c, void *list)
{
  long n = 0;
  for (void *p = list; p; n++) {
    void *next = *(void **)p;
    push_local(c, p, _corral_mixed_size(c, p) / CORRAL_GRANULE);
    p = next;
  }
  return n;
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

/* From the current chunk: an exact free object or the bump space; else the
 * objects other threads freed, a larger free object carved, or another
 * chunk (retire this one, adopt one with freed space or take an empty one;
 * an adopted chunk may still lack room). */
void *_corral_mixed_alloc(corral_heap_t *h, unsigned pool, size_t size, size_t align)
{
  _corral_spares_tick();      /* every allocation here: a mixed chunk may never run dry */
  size_t k = _corral_granules(size);
  if (align < CORRAL_GRANULE) align = CORRAL_GRANULE;
  corral_chunk_t *c = h->cur[pool];
  void *p;
  if (c) {
    if ((p = chunk_alloc(c, k, align))) return p;
    if (atomic_load_explicit(&c->remote, memory_order_relaxed) & ~CORRAL_REMOTE_COUNTED) {
      _corral_chunk_drain(c, 0);
      if ((p = chunk_alloc(c, k, align))) return p;
    }
    if ((p = split_alloc(c, k, align))) return p;
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    if (!(c = _corral_chunk_replace(h, pool, attempt == 0))) return NULL;
    if ((p = chunk_alloc(c, k, align)) || (p = split_alloc(c, k, align))) return p;
  }
  return NULL;
}
