/* A small lock for the rare, short global sections (chunk transitions,
 * heap registry, dynamic mode's slow path). Safe before init, inside
 * malloc and across fork (the child unlocks what the parent held).
 *
 * Three states, as in Drepper's "Futexes Are Tricky": 0 free, 1 held, 2
 * held with waiters. Taking a free lock is one compare-and-swap; a
 * contended one spins a little, then sleeps in futex until the holder
 * wakes it. It used to yield in a loop instead: while a holder took a
 * page fault (a chunk's first touch), every waiter spun through
 * sched_yield, 1.3 ms of CPU in a 17 ms start of dot in safe mode. */
#ifndef CORRAL_LOCK_H
#define CORRAL_LOCK_H

#include <stdatomic.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

typedef struct { atomic_int state; } corral_lock_t;
#define CORRAL_LOCK_INIT { 0 }

/* The contended halves (lock.c). */
void _corral_lock_wait(corral_lock_t *l);
void _corral_lock_wake(corral_lock_t *l);

static inline int _corral_trylock(corral_lock_t *l)
{
  int free = 0;
  return atomic_compare_exchange_strong_explicit(&l->state, &free, 1, memory_order_acquire, memory_order_relaxed);
}

static inline void _corral_lock(corral_lock_t *l)
{
  if (__builtin_expect(!_corral_trylock(l), 0)) _corral_lock_wait(l);
}

static inline void _corral_unlock(corral_lock_t *l)
{
  if (__builtin_expect(atomic_exchange_explicit(&l->state, 0, memory_order_release) == 2, 0)) _corral_lock_wake(l);
}

/* The one lock of the group heap (chunk.c). */
extern corral_lock_t _corral_heap_lock;

#pragma GCC visibility pop

#endif
