/* Block chunks: a chunk of one size class, the design of mimalloc's pages.
 *
 * Blocks have no header. The owner thread pops blocks off `free`; its own
 * frees go onto `local_free`, which becomes `free` when that runs dry; frees
 * from other threads go onto the atomic `remote` stack, which the owner
 * drains onto `free` then. Fresh space is linked onto `free` a few KiB at a
 * time, so allocation only ever pops a list; safe mode instead hands fresh
 * blocks out from the bump space one at a time, links never written. Between them the lists keep
 * reuse last-freed-first: a structure freed and built again lands on the
 * blocks it just left. An object's size is its chunk's block size, and a
 * free checks that p is a block start with one multiplication
 * (_corral_block_start). The fast paths are in heap.h. */
#include "heap.h"

/* Owner: link fresh blocks onto c's free list; 0 when c has no space left. */
static int extend(corral_chunk_t *c)
{
  size_t bs = c->block_size;
  size_t avail = (size_t)(c->end - c->bump) / bs;
  if (!avail) return 0;
  size_t n = CORRAL_EXTEND_BYTES / bs;
  if (n == 0) n = 1;
  if (n > avail) n = avail;
  /* Safe mode links no fresh block: the batch is handed out from the bump
   * space one block at a time (_corral_block_bump), before any freed one,
   * as a linked batch would be, but with no link encoded here and decoded
   * and checked when popped (Olden perimeter: 47 instructions a malloc on
   * safe mode's slot way). */
  if (CORRAL_UNLIKELY(_corral_modes.safe || c->group == _corral_fresh_group)) {
    c->batch_end = c->bump + n * bs;
    return 1;
  }
  char *first = c->bump, *p = first;
  size_t links = n - 1;
  /* Every fresh block is linked here once: four links per round. */
  for (; links >= 4; links -= 4) {
    char *q1 = p + bs, *q2 = q1 + bs, *q3 = q2 + bs, *q4 = q3 + bs;
    *(void **)p = q1;
    *(void **)q1 = q2;
    *(void **)q2 = q3;
    *(void **)q3 = q4;
    p = q4;
  }
  for (; links; links--, p += bs) *(void **)p = p + bs;
  _corral_link_set(p, c->free);
  c->free = first;
  c->bump = first + n * bs;
  CORRAL_ASSERT(c->bump <= c->end);
  /* Published before any of these blocks is handed out, so a thread that
   * gets one and frees it sees it below the limit. */
  __atomic_store_n(&c->limit, (uint32_t)(c->bump - c->blocks), __ATOMIC_RELEASE);
  return 1;
}

long _corral_block_drain(corral_chunk_t *c, void *list, uintptr_t length)
{
  if (!list) return 0;
  /* A free list run dry takes the stack as it is, its length known: a
   * walk would read each block one more time, every one a line the freeing
   * thread has just written, in a chain of misses nothing overlaps (the
   * pops that follow read them anyway, each prefetching the next). Safe
   * mode's links are checked as each block comes round. */
  if (!c->free && length < CORRAL_REMOTE_MANY) {
    c->free = list;
    return (long)length;
  }
  long n = 1;
  void *last = list, *next;
  if (CORRAL_UNLIKELY(_corral_modes.safe)) {
    /* A link that is no block of c was written after its object was freed:
     * the list ends there (safe.c reports it; the rest is never reused). */
    while ((next = _corral_link_get(last)) && _corral_safe_link_ok(c, last, next)) {
      last = next;
      n++;
    }
  } else {
    while ((next = *(void **)last)) {
      last = next;
      n++;
    }
  }
  _corral_link_set(last, c->free);
  c->free = list;
  return n;
}

/* Owner: give c's free list something, from the owner's frees, other
 * threads' frees, or fresh space; 0 when c is full. */
static int refill(corral_chunk_t *c)
{
  _corral_debug_check_chunk(c);
  if (c->free || c->bump < c->batch_end) return 1;   /* safe mode's fresh batch goes first (extend) */
  if (c->local_free) {
    c->free = c->local_free;
    c->local_free = NULL;
    return 1;
  }
  if (atomic_load_explicit(&c->remote, memory_order_relaxed) & ~CORRAL_REMOTE_COUNTED) {
    _corral_chunk_drain(c, 0);
    if (c->free) return 1;
  }
  return extend(c);
}

/* The head of c's free list, whose links safe mode keeps encoded: each is
 * checked to be a block of c (or the list's end) before it becomes the
 * head. */
static void *pop(corral_chunk_t *c)
{
  if (CORRAL_LIKELY(!_corral_modes.safe)) return _corral_block_pop(c);
  if (!c->free) return _corral_block_bump(c);     /* refill found the fresh batch (extend) */
  void **p = (void **)c->free, *next = _corral_link_get(p);
  if (CORRAL_UNLIKELY(next && !_corral_safe_link_ok(c, p, next))) next = NULL;
  c->free = next;
  p[0] = p[1] = NULL;
  c->live++;
  return p;
}

/* The current chunk of the pool has nothing on its lists: refill it, or
 * move to another chunk (retire this one, adopt one with freed space or take
 * an empty one; an adopted chunk may still be full). */
void *_corral_block_alloc(corral_heap_t *h, unsigned pool)
{
  _corral_spares_tick();
  corral_chunk_t *c = h->cur[pool];
  if (c && refill(c)) return pop(c);
  for (int attempt = 0; attempt < 2; attempt++) {
    if (!(c = _corral_chunk_replace(h, pool, attempt == 0))) return NULL;
    if (refill(c)) return pop(c);
  }
  return NULL;
}

unsigned _corral_fresh_closed;
uint8_t _corral_fresh_class_closed[CORRAL_SIZE_CLASSES] = {[0 ... CORRAL_SIZE_CLASSES - 1] = 1};

void _corral_fresh_open(unsigned g)
{
  _corral_fresh_group = g;
  for (unsigned k = 0; k < CORRAL_SIZE_CLASSES; k++)
    _corral_fresh_class_closed[k] = corral_class_size(k) > CORRAL_FRESH_MAX_SIZE;
}

/* Fresh-only pools (heap.h): blocks from the bump space alone, batch by
 * batch; a full chunk is retired (never held: its owner would take its
 * freed blocks again) and an empty one taken (never adopted, never one a
 * pool kept). Between batches, once the chunk has handed out
 * CORRAL_FRESH_JUDGE_BYTES, a quarter of its blocks back (the owner's
 * frees, which `live` has lost, and the remote ones waiting) closes the
 * class: its frees are no longer the odd one, and each would cost a
 * block of memory that is never used again. Before a new chunk (now and
 * then: census_due), so does a quarter of the retired chunks' blocks: a
 * class whose objects die long after they were made (a cache that
 * evicts at random) shows it there, never in the chunk being filled. */
static int fresh_judged_closed(corral_chunk_t *c)
{
  if (__atomic_load_n(&_corral_fresh_spent, __ATOMIC_RELAXED) >= CORRAL_FRESH_SPENT_MOST) return 1;
  size_t bytes = (size_t)(c->bump - c->blocks), handed = bytes / c->block_size;
  if (bytes < CORRAL_FRESH_JUDGE_BYTES) return 0;
  size_t back = handed - c->live + _corral_remote_length(atomic_load_explicit(&c->remote, memory_order_relaxed));
  return back * 4 > handed;
}

/* Whether the class's retired chunks are judged before this new chunk:
 * each judgement walks them all, so only once the class has taken a
 * quarter more chunks than at the last one (and at least 4): the walks
 * cost a few times the chunks taken in all, where a walk before every
 * chunk cost their square (Olden health's 419 chunks: 88 thousand
 * header reads). */
static int census_due(unsigned k)
{
  static unsigned taken[CORRAL_SIZE_CLASSES], next[CORRAL_SIZE_CLASSES];
  unsigned n = __atomic_add_fetch(&taken[k], 1, __ATOMIC_RELAXED);
  unsigned due = __atomic_load_n(&next[k], __ATOMIC_RELAXED);
  if (n < due) return 0;
  __atomic_store_n(&next[k], n + (n / 4 > 4 ? n / 4 : 4), __ATOMIC_RELAXED);
  return 1;
}

static void *fresh_close(unsigned k)
{
  if (!__atomic_exchange_n(&_corral_fresh_class_closed[k], 1, __ATOMIC_RELAXED))
    __atomic_fetch_add(&_corral_fresh_closed, 1, __ATOMIC_RELAXED);
  return NULL;
}

void *_corral_block_alloc_fresh(corral_heap_t *h, unsigned pool)
{
  unsigned k = pool % CORRAL_SIZE_CLASSES;
  CORRAL_ASSERT(pool / CORRAL_SIZE_CLASSES == _corral_fresh_group);
  corral_chunk_t *c = h->cur[pool];
  if (c) {
    if (c->bump < c->batch_end) return _corral_block_bump(c);
    /* Between batches: closed meanwhile by another thread, or now */
    if (__atomic_load_n(&_corral_fresh_class_closed[k], __ATOMIC_RELAXED)) return NULL;
    if (fresh_judged_closed(c)) return fresh_close(k);
    if (extend(c)) return _corral_block_bump(c);
    if (census_due(k) && _corral_fresh_stranded(pool)) return fresh_close(k);
  }
  if (!(c = _corral_chunk_replace(h, pool, 0))) return NULL;
  return extend(c) ? _corral_block_bump(c) : NULL;
}
