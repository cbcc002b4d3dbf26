/* Spare chunks (test_core_heap.py): a thread makes a few objects of each
 * of SIZES sizes (with every object pooled, a chunk each), frees them and
 * exits; then the main thread does the same with 64 MiB of objects. Prints
 * how many whole chunks went back to the OS (madvise(MADV_DONTNEED) of
 * 1 MiB or more) after each. This executable's madvise takes the
 * runtime's calls (-rdynamic).
 * Usage: core_spare SIZES */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static long purges;

int madvise(void *addr, size_t len, int advice)
{
  long r = syscall(SYS_madvise, addr, len, advice);
  if (r == 0 && advice == MADV_DONTNEED && len >= (1u << 20)) __atomic_add_fetch(&purges, 1, __ATOMIC_RELAXED);
  if (r < 0) {
    errno = (int)-r;
    return -1;
  }
  return 0;
}

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
  long n = (64l << 20) / 64;
  char **p = malloc((size_t)n * sizeof *p);
  for (long i = 0; i < n; i++) memset(p[i] = malloc(64), 2, 64);
  for (long i = 0; i < n; i++) free(p[i]);
  free(p);
  printf("heavy %ld\n", purges);
  return 0;
}
