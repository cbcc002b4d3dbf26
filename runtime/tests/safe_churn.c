/* Safe mode's short ways under churn: three sites behind wrappers (one
 * behind two), a site of its own and one that makes its objects with
 * realloc of NULL and grows them (as Lua does) each keep a ring of live
 * objects, freeing
 * the oldest and making a new one COUNT times (calloc at two of them,
 * which must zero reused blocks); the owner frees them all. With `remote`,
 * another thread frees each ring instead, RING objects at a time. stdout
 * carries a checksum only. Usage: safe_churn COUNT [remote] */
#include <pthread.h>
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
/* A site of its own (it reads and writes its object): its calloc takes
 * safe mode's short way without a frame, which must zero a reused block. */
NOIPA unsigned char *make_d(size_t n, unsigned long *sum) {
  unsigned char *z = calloc(1, n);
  if (!z) abort();
  for (size_t j = 0; j < n; j++) *sum += z[j];
  memset(z, 4, n);
  return z;
}

/* realloc of NULL, which the compiler must not turn into malloc. */
NOIPA void *make_e(size_t n) {
  void *none = NULL;
  __asm__("" : "+r"(none));
  return realloc(none, n);
}

static void *free_ring(void *ring) {
  for (int k = 0; k < RING; k++) free(((void **)ring)[k]);
  return NULL;
}

/* The owner makes a ring, another thread frees it; the owner's next ring
 * reuses those blocks once it takes them back. */
static int remote(long count) {
  void *ring[RING];
  unsigned long sum = 0;
  for (long i = 0; i < count / RING; i++) {
    for (int k = 0; k < RING; k++) {
      unsigned char *z = make_c(16 + (size_t)(k % 7) * 8);
      for (size_t j = 0; j < 16; j++) sum += z[j];
      memset(z, 3, 16);
      ring[k] = z;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, free_ring, ring) != 0 || pthread_join(t, NULL) != 0) abort();
  }
  printf("checksum %lu\n", sum);
  return 0;
}

int main(int argc, char **argv) {
  long count = argc > 1 ? atol(argv[1]) : 1000;
  if (argc > 2 && strcmp(argv[2], "remote") == 0) return remote(count);
  void *ring[5][RING] = {{0}};
  unsigned long sum = 0;
  for (long i = 0; i < count; i++) {
    size_t n = 16 + (size_t)(i % 7) * 8;
    unsigned k = (unsigned)(i % RING);
    free(ring[0][k]);
    free(ring[1][k]);
    free(ring[2][k]);
    free(ring[3][k]);
    free(ring[4][k]);
    ring[0][k] = make_a(n);
    ring[1][k] = make_b(n + 8);
    unsigned char *z = make_c(n);
    for (size_t j = 0; j < n; j++) sum += z[j];    /* 0: calloc zeroes reused blocks */
    ring[2][k] = z;
    memset(ring[0][k], 1, n);
    memset(ring[1][k], 2, n + 8);
    memset(z, 3, n);
    ring[3][k] = make_d(n, &sum);
    /* grown past its class: a block of the site's larger class */
    void *e = realloc(make_e(n), n + 64);
    if (!e) abort();
    memset(ring[4][k] = e, 5, n + 64);
  }
  for (int s = 0; s < 5; s++)
    for (int k = 0; k < RING; k++) free(ring[s][k]);
  printf("checksum %lu\n", sum);
  return 0;
}
