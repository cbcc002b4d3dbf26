/* Chunk commits (test_core_heap.py): makes COUNT 64-byte objects, all
 * live at once (about COUNT / 16,000 chunks of 1 MiB when they are
 * pooled), writes each, frees them, and prints how many mprotect calls
 * made whole chunks usable: read-write over a multiple of 1 MiB. This
 * executable's mprotect takes the runtime's calls (-rdynamic).
 * Usage: core_commit COUNT */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIB (1ul << 20)

static long commits, committed_mib;

int mprotect(void *addr, size_t len, int prot)
{
  long r = syscall(SYS_mprotect, addr, len, prot);
  if (r == 0 && prot == (PROT_READ | PROT_WRITE) && len >= MIB && len % MIB == 0) {
    commits++;
    committed_mib += (long)(len / MIB);
  }
  if (r < 0) {
    errno = (int)-r;
    return -1;
  }
  return 0;
}

int main(int argc, char **argv)
{
  if (argc != 2) return 2;
  long n = atol(argv[1]);
  char **p = malloc((size_t)n * sizeof *p);
  for (long i = 0; i < n; i++) {
    p[i] = malloc(64);
    memset(p[i], (int)(i & 0x7f), 64);
  }
  long sum = 0;
  for (long i = 0; i < n; i++) {
    sum += p[i][63];
    free(p[i]);
  }
  free(p);
  printf("commits %ld mib %ld sum %ld\n", commits, committed_mib, sum);
  return 0;
}
