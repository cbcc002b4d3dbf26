/* A library with no room for stubs within reach (test_identify_stubs.py):
 * every gap within AROUND of CROWDED_AT is mapped away before the library
 * linked there is loaded with dlopen, and then a second library (any
 * small one) is loaded. Dynamic mode prepares stubs beside each module
 * at every dlopen. With AROUND at 640 MiB (the default) nothing is free
 * within reach: the crowded library must be searched for room once, not
 * at each later dlopen. Built with a small AROUND (-DAROUND_MIB=8), room
 * lies just past the filled stretch, and the first dlopen's searches
 * (stubs, slot sets, spare room) must step out past it once, not each.
 * The program is linked without PIE, so that the loader maps a library
 * at the address it was linked at (glibc uses a library's own addresses
 * only then).
 *
 * This executable's mmap takes the runtime's calls (it is exported:
 * -rdynamic) and counts the address probes (MAP_FIXED_NOREPLACE) near
 * CROWDED_AT that failed. Prints the count after each dlopen:
 *   crowded-first N
 *   crowded-again N
 * Usage: stubs_crowded CROWDED.so OTHER.so */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MIB ((uintptr_t)1 << 20)
#ifndef AROUND_MIB
#define AROUND_MIB 640
#endif
#define AROUND (AROUND_MIB * MIB)

static uintptr_t crowded_lo = CROWDED_AT, crowded_hi = CROWDED_AT + 64 * 1024;
static long failed_near;

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
  uintptr_t a = (uintptr_t)addr;
  if ((flags & MAP_FIXED_NOREPLACE) && r < 0 && r > -4096 && a + AROUND > crowded_lo && a < crowded_hi + AROUND)
    failed_near++;
  if (r < 0 && r > -4096) {
    errno = (int)-r;
    return MAP_FAILED;
  }
  return (void *)r;
}

/* Maps away every gap in [lo, hi) but [keep_lo, keep_hi), from /proc/self/maps. */
static void fill(uintptr_t lo, uintptr_t hi, uintptr_t keep_lo, uintptr_t keep_hi)
{
  FILE *f = fopen("/proc/self/maps", "r");
  uintptr_t at = lo, s, e;
  uintptr_t used[4096][2];
  int n = 0;
  char line[512];
  while (n < 4096 && fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-%lx", &s, &e) == 2 && e > lo && s < hi) used[n][0] = s, used[n++][1] = e;
  fclose(f);
  used[n][0] = keep_lo, used[n++][1] = keep_hi;
  for (;;) {
    uintptr_t next = hi, next_end = hi;        /* the lowest used range at or above `at` */
    for (int i = 0; i < n; i++)
      if (used[i][1] > at && used[i][0] < next) next = used[i][0] < at ? at : used[i][0], next_end = used[i][1];
    if (next > at && mmap((void *)at, next - at, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED) {
      perror("fill");
      exit(2);
    }
    if (next_end >= hi) break;
    at = next_end;
  }
}

int main(int argc, char **argv)
{
  if (argc != 3) return 2;
  fill(crowded_lo - AROUND, crowded_hi + AROUND, crowded_lo, crowded_hi);
  failed_near = 0;
  void *h = dlopen(argv[1], RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  Dl_info info;
  void *(*crowded_alloc)(size_t) = (void *(*)(size_t))dlsym(h, "crowded_alloc");
  if (!crowded_alloc || !dladdr((void *)crowded_alloc, &info) || (uintptr_t)info.dli_fbase != crowded_lo) {
    fprintf(stderr, "the library is not at %#lx\n", (unsigned long)crowded_lo);
    return 2;
  }
  printf("crowded-first %ld\n", failed_near);
  failed_near = 0;
  for (int i = 0; i < 1000; i++) free(crowded_alloc(32));
  if (!dlopen(argv[2], RTLD_NOW)) {
    fprintf(stderr, "%s\n", dlerror());
    return 2;
  }
  printf("crowded-again %ld\n", failed_near);
  return 0;
}
