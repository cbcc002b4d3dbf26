/* Frees of the allocator underneath's blocks, for test_core_span.py: first
 * enough small objects from one call site for dynamic mode to give it a
 * pool (so a range of groups is reserved after the allocator underneath
 * mapped its first memory), then N blocks too large for any pool, each
 * freed at once. Prints "0 failed". */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  enum { KEEP = 400 };
  static void *keep[KEEP];
  for (int i = 0; i < KEEP; i++) keep[i] = malloc(32);
  for (int i = 0; i < n; i++) {
    char *volatile p = malloc(1000);
    p[0] = (char)i;
    free(p);
  }
  for (int i = 0; i < KEEP; i++) free(keep[i]);
  printf("%d frees, 0 failed\n", n);
  return 0;
}
