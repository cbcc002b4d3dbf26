/* The aligned forms in dynamic mode (docs/dynamic.md, "The fast way"): a
 * settled site's memalign, aligned_alloc and posix_memalign take its pool
 * on the fast way, each block aligned as asked.
 *   edge128: memalign(128, 128) through a wrapper, as Olden voronoi makes
 *            its quad-edge records;
 *   edge48:  memalign(64, 48) through the same wrapper, from another caller:
 *            its blocks come from a class whose blocks are 64-aligned;
 *   al96:    aligned_alloc(32, 96): blocks of 96 bytes are 32-aligned;
 *   pm40:    posix_memalign(32, 40);
 *   m24:     memalign(16, 24);
 *   huge:    memalign(8192, 64), an alignment no group gives: forwarded;
 *   large:   memalign(64, 1000), a size no pool takes: forwarded.
 * Each site makes N blocks, frees every other one and makes N / 2 again
 * (so the fast way also pops freed blocks), and counts the blocks not
 * aligned as asked. Reports on stderr "NAME groups=G" for each site's last
 * quarter and "check misaligned=K". "memalign_loop SITE N" (edge128 or
 * edge48) only keeps 1,000 blocks of one site and then replaces one N
 * times (for the callgrind count). */
#include "dyn_report.h"

#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define N 4000

static long misaligned;

NOIPA void *myalign(size_t align, size_t size) {
  void *p = memalign(align, size);
  if (!p) {
    printf("myalign failed\n");
    exit(1);
  }
  return p;
}

static void *checked(void *p, size_t align, size_t size, int fill) {
  if ((uintptr_t)p % align) misaligned++;
  memset(p, fill, size);
  return p;
}

NOIPA void *edge128(void) { return checked(myalign(128, 128), 128, 128, 1); }
NOIPA void *edge48(void) { return checked(myalign(64, 48), 64, 48, 2); }
NOIPA void *al96(void) { return checked(aligned_alloc(32, 96), 32, 96, 3); }
NOIPA void *pm40(void) {
  void *p = NULL;
  if (posix_memalign(&p, 32, 40)) return NULL;
  return checked(p, 32, 40, 4);
}
NOIPA void *m24(void) { return checked(memalign(16, 24), 16, 24, 5); }
NOIPA void *huge(void) { return checked(memalign(8192, 64), 8192, 64, 6); }
NOIPA void *large(void) { return checked(memalign(64, 1000), 64, 1000, 7); }

static void site(const char *name, void *(*make)(void), size_t size, int fill, unsigned long *sum) {
  static void *blocks[N];
  for (int i = 0; i < N; i++) blocks[i] = make();
  for (int i = 0; i < N; i += 2) {
    const unsigned char *b = blocks[i];
    for (size_t k = 0; k < size; k++) if (b[k] != fill) misaligned += 1000000;   /* overlapping blocks */
    free(blocks[i]);
  }
  for (int i = 0; i < N; i += 2) blocks[i] = make();
  report(name, blocks, N);
  for (int i = 0; i < N; i++) {
    *sum += ((const unsigned char *)blocks[i])[size - 1];
    free(blocks[i]);
  }
}

int main(int argc, char **argv) {
  unsigned long sum = 0;
  if (argc > 3 && !strcmp(argv[1], "memalign_loop")) {
    void *(*make)(void) = !strcmp(argv[2], "edge48") ? edge48 : edge128;
    int n = atoi(argv[3]);
    static void *keep[1000];
    for (int i = 0; i < 1000; i++) keep[i] = make();          /* counted, pooled, settled */
    for (int i = 0; i < n; i++) keep[i % 1000] = (free(keep[i % 1000]), make());
    for (int i = 0; i < 1000; i++) free(keep[i]);
    printf("misaligned %ld\n", misaligned);
    return 0;
  }
  site("edge128", edge128, 128, 1, &sum);
  site("edge48", edge48, 48, 2, &sum);
  site("al96", al96, 96, 3, &sum);
  site("pm40", pm40, 40, 4, &sum);
  site("m24", m24, 24, 5, &sum);
  site("huge", huge, 64, 6, &sum);
  site("large", large, 1000, 7, &sum);
  fprintf(stderr, "check misaligned=%ld\n", misaligned);
  printf("sum %lu\n", sum);
  return 0;
}
