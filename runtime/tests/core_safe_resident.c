/* Safe mode's resident empty chunks (test_core_heap.py): a thread makes
 * three objects at each of 256 call sites (in safe mode a pool, and a
 * chunk, each), frees them and exits; then the main thread makes and
 * frees 64 MiB of objects at one site. Prints how many whole chunks went
 * back to the OS (madvise(MADV_DONTNEED) of 1 MiB or more) after each,
 * and whether a pool that took its kept chunk back before the 64 MiB
 * still holds its objects after them (no purge reached that chunk).
 * This executable's madvise takes the runtime's calls (-rdynamic); built
 * with -O0 so that no call site is merged with another. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_purges.h"

#define SITES 256
#define SITE(k) case (k): return malloc(48);
#define S4(k) SITE(k) SITE((k) + 1) SITE((k) + 2) SITE((k) + 3)
#define S16(k) S4(k) S4((k) + 4) S4((k) + 8) S4((k) + 12)
#define S64(k) S16(k) S16((k) + 16) S16((k) + 32) S16((k) + 48)

static void *alloc_at(int k)
{
  switch (k) {
    S64(0) S64(64) S64(128) S64(192)
  }
  abort();
}

static void *light(void *arg)
{
  (void)arg;
  void *p[SITES][3];
  for (int k = 0; k < SITES; k++)
    for (int i = 0; i < 3; i++) memset(p[k][i] = alloc_at(k), 1, 48);
  for (int k = 0; k < SITES; k++)
    for (int i = 0; i < 3; i++) free(p[k][i]);
  return NULL;
}

/* A pool that empties its first chunk (kept resident) and fills again
 * takes that chunk back, live objects in it: no later purge may reach it. */
#define REFILL ((1 << 20) / 32 * 3 / 2)
static char *refill[REFILL];

__attribute__((noipa)) static char *refill_alloc(void)
{
  return malloc(32);
}

static void refill_pool(void)
{
  for (int i = 0; i < REFILL; i++) refill[i] = refill_alloc();
  for (int i = 0; i < REFILL; i++) free(refill[i]);
  for (int i = 0; i < REFILL; i++) memset(refill[i] = refill_alloc(), 0x3c, 32);
}

static int refill_intact(void)
{
  for (int i = 0; i < REFILL; i++)
    if (refill[i][0] != 0x3c || refill[i][31] != 0x3c) return 0;
  return 1;
}

int main(void)
{
  pthread_t t;
  pthread_create(&t, NULL, light, NULL);
  pthread_join(t, NULL);
  printf("light %ld\n", purges);
  refill_pool();
  make_and_free_64_mib();
  printf("heavy %ld\n", purges);
  printf("refilled %s\n", refill_intact() ? "intact" : "lost");
  return 0;
}
