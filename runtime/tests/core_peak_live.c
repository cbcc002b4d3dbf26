/* A structure built, kept whole for a moment, then freed: 3000 objects of 64
 * bytes live together, fewer allocations than the periodic sample interval
 * and all in one chunk, so only the growth-triggered sample sees the peak. */
#include <stdio.h>
#include <stdlib.h>

#define N 3000

int main(void)
{
  static char *objects[N];
  long sum = 0;
  for (int i = 0; i < N; i++) {
    objects[i] = malloc(64);
    objects[i][0] = (char)i;
  }
  for (int i = 0; i < N; i++) {
    sum += objects[i][0];
    free(objects[i]);
  }
  printf("%d objects live together (checksum %ld), 0 failed\n", N, sum);
  return 0;
}
