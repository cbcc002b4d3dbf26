/* A group's layout: `make` is the plan's only group site. For each pair of
 * sizes on the command line, N objects of each are made in alternation;
 * the program prints whether the two sizes shared a chunk and checks that
 * every object is in group 0. Each pair is freed before the next.
 *   plan_layout CHUNK_SIZE A B [A B ...]   ->  "A B same|apart" per pair */
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <stdint.h>
#include <stdlib.h>

#define N 40      /* all pairs together fit in one chunk (4 MiB in the test), so "apart" is never a full chunk */

__attribute__((noinline)) static void *make(size_t size)
{
  void *p = malloc(size);
  __asm__ volatile("" ::: "memory");     /* keep the call a call, not a tail jump */
  return p;
}

static void *objects[2][N];

int main(int argc, char **argv)
{
  if (argc < 4 || argc % 2) return 2;
  uintptr_t chunk_mask = ~(uintptr_t)(strtoull(argv[1], NULL, 0) - 1);
  for (int a = 2; a + 1 < argc; a += 2) {
    size_t size[2] = {strtoull(argv[a], NULL, 0), strtoull(argv[a + 1], NULL, 0)};
    int apart = 0;
    for (int i = 0; i < N; i++)
      for (int s = 0; s < 2; s++) {
        objects[s][i] = make(size[s]);
        ident_expect(objects[s][i], 0);
      }
    for (int i = 0; i < N; i++)
      if (((uintptr_t)objects[0][i] & chunk_mask) != ((uintptr_t)objects[1][i] & chunk_mask)) apart = 1;
    printf("%zu %zu %s\n", size[0], size[1], apart ? "apart" : "same");
    for (int i = 0; i < N; i++)
      for (int s = 0; s < 2; s++) free(objects[s][i]);
  }
  return ident_report();
}
