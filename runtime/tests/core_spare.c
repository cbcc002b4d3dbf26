/* Spare chunks (test_core_heap.py): a thread makes a few objects of each
 * of SIZES sizes (with every object pooled, a chunk each), frees them and
 * exits; then the main thread does the same with 64 MiB of objects. Prints
 * how many whole chunks went back to the OS (madvise(MADV_DONTNEED) of
 * 1 MiB or more) after each. This executable's madvise takes the
 * runtime's calls (-rdynamic).
 * Usage: core_spare SIZES */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunk_purges.h"

static long sizes;

static void *light(void *arg)
{
  (void)arg;
  void *p[64][20];
  for (long s = 0; s < sizes; s++)
    for (int i = 0; i < 20; i++) memset(p[s][i] = malloc((size_t)(s + 1) * 16), 1, (size_t)(s + 1) * 16);
  for (long s = 0; s < sizes; s++)
    for (int i = 0; i < 20; i++) free(p[s][i]);
  return NULL;
}

int main(int argc, char **argv)
{
  if (argc != 2 || (sizes = atol(argv[1])) > 64) return 2;
  pthread_t t;
  pthread_create(&t, NULL, light, NULL);
  pthread_join(t, NULL);
  printf("light %ld\n", purges);
  make_and_free_64_mib();
  printf("heavy %ld\n", purges);
  return 0;
}
