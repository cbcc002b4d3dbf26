/* Thread heaps: each thread's current chunk per group and its counters.
 * Heaps are mapped from the OS (not malloc'd), kept in a registry for
 * statistics and fork, and handed back when their thread exits. */
#include "heap.h"
#include "lock.h"

#include <pthread.h>
#include <string.h>


/* The chunk pool's and the heap registry's lock (lock.h). */
corral_lock_t _corral_heap_lock = CORRAL_LOCK_INIT;
corral_heap_t *_corral_heaps;                  /* registry, under _corral_heap_lock */
unsigned _corral_heaps_live;
__thread corral_heap_t *_corral_tls_heap __attribute__((tls_model("initial-exec")));
__thread corral_heap_t *_corral_tls_fast __attribute__((tls_model("initial-exec"))) = &_corral_no_heap;
__thread corral_heap_t *_corral_tls_safe __attribute__((tls_model("initial-exec"))) = &_corral_no_heap;
corral_heap_t _corral_no_heap;
uint8_t _corral_class_of8[CORRAL_TABLE_MAX / 8 + 1];
static pthread_key_t exit_key;
static int exit_key_ok;

/* At a thread's exit its current chunks are abandoned: the next thread
 * that wants a chunk of the pool adopts one at once (chunk.c, adoptable).
 * Its held chunks, and a fork's torn chunks, are only retired. */
static void retire_all(corral_heap_t *h, int torn)
{
  for (unsigned w = 0; w < sizeof h->used / sizeof *h->used; w++)
    for (uint64_t bits = h->used[w]; bits; bits &= bits - 1) {
      unsigned pool = w * 64 + (unsigned)__builtin_ctzll(bits);
      if (h->cur[pool]) {
        corral_chunk_t *c = h->cur[pool];
        h->cur[pool] = NULL;
        c->torn |= (uint32_t)torn;
        _corral_chunk_retire(c, !torn);
      }
      _corral_chunk_retire_held(h, pool, (uint32_t)torn);
    }
}

/* pthread key destructor. A later destructor of the program may allocate
 * again; the heap is then re-created and this runs once more. */
static void thread_exit(void *arg)
{
  corral_heap_t *h = arg;
  if (!h) return;
  retire_all(h, 0);
  _corral_tls_heap = NULL;
  _corral_tls_fast = &_corral_no_heap;
  _corral_tls_safe = &_corral_no_heap;
  _corral_lock(&_corral_heap_lock);
  h->dead = 1;
  __atomic_store_n(&_corral_heaps_live, _corral_heaps_live - 1, __ATOMIC_RELAXED);
  _corral_unlock(&_corral_heap_lock);
}

/* Every class's run of 8-byte steps at once: asking corral_size_class for
 * each of the 8,193 steps took 131 thousand instructions, half of what
 * the bare preload adds to a program's start (/bin/true under callgrind:
 * 533 thousand with libcorral.so before mimalloc, 264 thousand without).
 * Block sizes are multiples of 8, so each class ends on a step. */
static void class_table_init(void)
{
  size_t step = 0;
  for (unsigned c = 0; c < CORRAL_SIZE_CLASSES && step <= CORRAL_TABLE_MAX / 8; c++) {
    size_t last = corral_class_size(c) / 8;
    if (c == CORRAL_SIZE_CLASSES - 1 || last > CORRAL_TABLE_MAX / 8) last = CORRAL_TABLE_MAX / 8;
    memset(&_corral_class_of8[step], (int)c, last + 1 - step);
    step = last + 1;
  }
#if CORRAL_DEBUG
  for (size_t i = 0; i <= CORRAL_TABLE_MAX / 8; i++) CORRAL_ASSERT(_corral_class_of8[i] == corral_size_class(i * 8));
#endif
}

void _corral_heap_init(void)
{
  _corral_layout_init();
  class_table_init();
  exit_key_ok = pthread_key_create(&exit_key, thread_exit) == 0;
}

/* A new thread takes over the heap of an exited one if there is any: its
 * counters simply keep adding up (statistics only need the sums). */
static corral_heap_t *heap_create(void)
{
  _corral_lock(&_corral_heap_lock);
  for (corral_heap_t *h = _corral_heaps; h; h = h->next_heap)
    if (h->dead) {
      h->dead = 0;
      __atomic_store_n(&_corral_heaps_live, _corral_heaps_live + 1, __ATOMIC_RELAXED);
      _corral_unlock(&_corral_heap_lock);
      return h;
    }
  _corral_unlock(&_corral_heap_lock);
  corral_heap_t *h = _corral_os_map(sizeof *h);   /* zeroed */
  if (!h) return NULL;
  _corral_lock(&_corral_heap_lock);
  h->next_heap = _corral_heaps;
  _corral_heaps = h;
  __atomic_store_n(&_corral_heaps_live, _corral_heaps_live + 1, __ATOMIC_RELAXED);
  _corral_unlock(&_corral_heap_lock);
  return h;
}

corral_heap_t *_corral_heap_create_for_thread(void)
{
  corral_heap_t *h = heap_create();
  if (!h) return NULL;
  _corral_tls_heap = h;
  if (!_corral_modes.full_ways) _corral_tls_fast = h;
  if (_corral_modes.free_way == CORRAL_FREE_SAFE) _corral_tls_safe = h;
  if (exit_key_ok) pthread_setspecific(exit_key, h);
  return h;
}

/* ---- fork ------------------------------------------------------------------ */

void _corral_heap_fork_prepare(void) { _corral_lock(&_corral_heap_lock); }
void _corral_heap_fork_parent(void) { _corral_unlock(&_corral_heap_lock); }

/* Only the forking thread lives on in the child: the other threads' current
 * chunks would stay owned by heaps nobody uses, so retire them. */
void _corral_heap_fork_child(void)
{
  _corral_unlock(&_corral_heap_lock);
  for (corral_heap_t *h = _corral_heaps; h; h = h->next_heap)
    if (h != _corral_tls_heap && !h->dead) {
      /* Those threads do not exist here; one may have been inside a pop or
       * a push, which leaves the chunk's live count off by that block: the
       * chunk is then released early only for a block nobody here holds,
       * or kept for one that never comes back. */
      retire_all(h, 1);
      h->dead = 1;
    }
  _corral_heaps_live = _corral_tls_heap ? 1 : 0;
}
