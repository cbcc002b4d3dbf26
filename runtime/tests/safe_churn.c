/* Safe mode's short ways under churn: three sites (one behind a wrapper)
 * and calloc each keep a ring of live objects, freeing the oldest and
 * making a new one COUNT times; the owner frees them all. stdout carries a
 * checksum only. Usage: safe_churn COUNT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define RING 64

NOIPA void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) abort();
  return p;
}
NOIPA void *make_a(size_t n) { return malloc(n); }
NOIPA void *make_b(size_t n) { return xmalloc(n); }
NOIPA void *make_c(size_t n) { return calloc(1, n); }

int main(int argc, char **argv) {
  long count = argc > 1 ? atol(argv[1]) : 1000;
  void *ring[3][RING] = {{0}};
  unsigned long sum = 0;
  for (long i = 0; i < count; i++) {
    size_t n = 16 + (size_t)(i % 7) * 8;
    unsigned k = (unsigned)(i % RING);
    free(ring[0][k]);
    free(ring[1][k]);
    free(ring[2][k]);
    ring[0][k] = make_a(n);
    ring[1][k] = make_b(n + 8);
    unsigned char *z = make_c(n);
    for (size_t j = 0; j < n; j++) sum += z[j];    /* 0: calloc zeroes reused blocks */
    ring[2][k] = z;
    memset(ring[0][k], 1, n);
    memset(ring[1][k], 2, n + 8);
    memset(z, 3, n);
  }
  for (int s = 0; s < 3; s++)
    for (int k = 0; k < RING; k++) free(ring[s][k]);
  printf("checksum %lu\n", sum);
  return 0;
}
