/* corral_lock_t under contention (test_lock_unit.py): 8 threads add to
 * one plain counter under the lock, a tenth of the time holding it across
 * a short sleep, so that waiters go past their spins and sleep in futex;
 * nothing is lost and every sleeper is woken (the program ends). Then
 * trylock: refused while held, granted once free. Prints
 *   count N contended N
 * where contended counts the lock's entries that found it taken. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#include "lock.h"

#define THREADS 8
#define ROUNDS 20000

static corral_lock_t lock = CORRAL_LOCK_INIT;
static long count, contended;

static void *work(void *arg)
{
  long id = (long)arg;
  for (long i = 0; i < ROUNDS; i++) {
    int took = _corral_trylock(&lock);
    if (!took) _corral_lock(&lock);
    if (!took) contended++;
    count++;
    if ((i + id) % 10 == 0) nanosleep(&(struct timespec){0, 2000}, NULL);
    _corral_unlock(&lock);
  }
  return NULL;
}

int main(void)
{
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, work, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  _corral_lock(&lock);
  int refused = !_corral_trylock(&lock);
  _corral_unlock(&lock);
  int granted = _corral_trylock(&lock);
  _corral_unlock(&lock);
  printf("count %ld contended %ld trylock %d %d state %d\n", count, contended, refused, granted,
         atomic_load(&lock.state));
  return 0;
}
