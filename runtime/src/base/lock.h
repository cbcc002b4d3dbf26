/* A small spin lock for the rare, short global sections (chunk transitions,
 * heap registry). Safe before init and inside malloc; yields when contended. */
#ifndef CORRAL_LOCK_H
#define CORRAL_LOCK_H

#include <sched.h>
#include <stdatomic.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

typedef struct { atomic_flag held; } corral_lock_t;
#define CORRAL_LOCK_INIT { ATOMIC_FLAG_INIT }

static inline void _corral_lock(corral_lock_t *l)
{
  while (atomic_flag_test_and_set_explicit(&l->held, memory_order_acquire)) sched_yield();
}

/* The lock if it is free, without waiting: 1 when taken. Where the holder
 * may be this very thread (a signal handler inside malloc), waiting would
 * never end. */
static inline int _corral_trylock(corral_lock_t *l)
{
  return !atomic_flag_test_and_set_explicit(&l->held, memory_order_acquire);
}

static inline void _corral_unlock(corral_lock_t *l)
{
  atomic_flag_clear_explicit(&l->held, memory_order_release);
}

/* The one lock of the group heap (chunk.c). */
extern corral_lock_t _corral_heap_lock;

#pragma GCC visibility pop

#endif
