/* The edges of a range of group chunks (test_core_heap.py): a range is
 * reserved one chunk larger than it is used, for alignment, and what
 * alignment leaves over stays reserved, so that nothing small (a library
 * a later dlopen brings in) can be mapped into a hole right beside it.
 * Prints the length of the run of mappings with no gap between them that
 * holds a pooled object:
 *   run BYTES */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_MAPS 4096
static uintptr_t start[MAX_MAPS], end[MAX_MAPS];

int main(void)
{
  void *p = malloc(32);
  uintptr_t at = (uintptr_t)p;
  FILE *f = fopen("/proc/self/maps", "r");
  char line[512];
  int n = 0, k = -1;
  while (n < MAX_MAPS && fgets(line, sizeof line, f))
    if (sscanf(line, "%lx-%lx", &start[n], &end[n]) == 2) {
      if (start[n] <= at && at < end[n]) k = n;
      n++;
    }
  fclose(f);
  if (k < 0) return 2;
  int lo = k, hi = k;
  while (lo > 0 && end[lo - 1] == start[lo]) lo--;
  while (hi + 1 < n && start[hi + 1] == end[hi]) hi++;
  printf("run %lu\n", (unsigned long)(end[hi] - start[lo]));
  free(p);
  return 0;
}
