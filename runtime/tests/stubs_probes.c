/* How the runtime finds room for stubs at start-up (test_identify_stubs.py):
 * this executable's mmap and mprotect take the runtime's calls (they are
 * exported: -rdynamic) and count, from the start of the process, the
 * address probes (MAP_FIXED_NOREPLACE) that failed, and the calls that
 * made pages executable, and how many of those touched a range another
 * such call had made executable just before or after it (pages side by
 * side, sealed one call each). main allocates at two call sites, then
 * prints:
 *   failed N
 *   sealed N adjacent N */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static long failed, sealed, adjacent;
static uintptr_t seals[64][2];

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  if (r < 0 && r > -4096) {
    if (flags & MAP_FIXED_NOREPLACE) failed++;
    errno = (int)-r;
    return MAP_FAILED;
  }
  return (void *)r;
}

int mprotect(void *addr, size_t len, int prot)
{
  long r = syscall(SYS_mprotect, addr, len, prot);
  if (r == 0 && prot == (PROT_READ | PROT_EXEC)) {
    uintptr_t lo = (uintptr_t)addr, hi = lo + len;
    for (long i = 0; i < sealed && i < 64; i++)
      if (seals[i][1] == lo || seals[i][0] == hi) adjacent++;
    if (sealed < 64) {
      seals[sealed][0] = lo;
      seals[sealed][1] = hi;
    }
    sealed++;
  }
  if (r < 0) {
    errno = (int)-r;
    return -1;
  }
  return 0;
}

__attribute__((noipa)) static void *make(size_t n) { return malloc(n); }

int main(void)
{
  void *keep[400];
  for (int i = 0; i < 200; i++) keep[i] = make(32);
  for (int i = 200; i < 400; i++) keep[i] = malloc(48);
  for (int i = 0; i < 400; i++) free(keep[i]);
  printf("failed %ld\nsealed %ld adjacent %ld\n", failed, sealed, adjacent);
  return 0;
}
