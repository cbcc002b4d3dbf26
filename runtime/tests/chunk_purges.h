/* Counting the runtime's chunk purges, for a test program of one file
 * (core_spare.c, core_safe_resident.c): the program's own madvise, exported
 * with -rdynamic, takes the runtime's calls and counts those that give a
 * whole chunk back (MADV_DONTNEED of 1 MiB or more). */
#ifndef CORRAL_TEST_CHUNK_PURGES_H
#define CORRAL_TEST_CHUNK_PURGES_H

#include <errno.h>
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

/* 64 MiB of 64-byte objects made, written and freed at one site: far
 * more than any budget keeps resident. */
static void make_and_free_64_mib(void)
{
  long n = (64l << 20) / 64;
  char **p = malloc((size_t)n * sizeof *p);
  for (long i = 0; i < n; i++) memset(p[i] = malloc(64), 2, 64);
  for (long i = 0; i < n; i++) free(p[i]);
  free(p);
}

#endif
