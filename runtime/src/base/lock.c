/* The contended halves of corral_lock_t (lock.h). */
#include "lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Rounds of spinning before sleeping: a holder's section is short unless
 * it faults, and a sleep and a wake cost two system calls. */
#define SPINS 64

void _corral_lock_wait(corral_lock_t *l)
{
  for (int i = 0; i < SPINS; i++) {
    __builtin_ia32_pause();
    if (atomic_load_explicit(&l->state, memory_order_relaxed) == 0 && _corral_trylock(l)) return;
  }
  /* From here on the lock is marked as waited for, so that its holder
   * wakes one sleeper when it lets go; a waiter that takes it keeps the
   * mark (it cannot know whether others sleep). */
  while (atomic_exchange_explicit(&l->state, 2, memory_order_acquire) != 0)
    syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0);
}

void _corral_lock_wake(corral_lock_t *l)
{
  syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
