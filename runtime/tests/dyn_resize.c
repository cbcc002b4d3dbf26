/* One wrapper with two allocation calls, as MallocBench espresso's
 * sm_resize: malloc for a new block, realloc for a bigger one. Each caller
 * alternates between the two calls from its one call site, so two contexts
 * end at that site; after their decisions settle, dynamic mode's fast way
 * takes both (malloc's and realloc's own way). Usage: dyn_resize COUNT
 *
 * Two callers each make COUNT arrays: resize(NULL, 16), then grow each by
 * 8 bytes three times, writing every element. Reports on stderr, per
 * caller and step, how many arrays sit in a pool and in how many groups:
 *   CALLER_STEP pooled=K groups=G
 * Then a third caller churns: 4000 times a block made, grown to 40 bytes
 * and freed at once, so both its contexts are given back and their later
 * calls forwarded (realloc of the allocator underneath's block on
 * realloc's own way). Reports how many of the last 1000 grown blocks sat
 * in a pool:
 *   churn late_pooled=K
 * stdout only carries a checksum of the contents, which realloc must
 * carry over, so it is identical with and without corral. */
#include "../include/corral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))

/* A wrapper: only hands the pointer back. */
NOIPA void *resize(void *p, size_t n) {
  void *q = p ? realloc(p, n) : malloc(n);
  if (!q) { fputs("out of memory\n", stderr); abort(); }
  return q;
}

static void fill(unsigned char *a, size_t from, size_t to, int seed) {
  for (size_t i = from; i < to; i++) a[i] = (unsigned char)(seed * 31 + i);
}

/* One call site of the wrapper, for new arrays and bigger ones alike. */
NOIPA void grow_a(void **a, int n, size_t size) {
  for (int i = 0; i < n; i++) a[i] = resize(a[i], size);
}
NOIPA void grow_b(void **a, int n, size_t size) {
  for (int i = 0; i < n; i++) a[i] = resize(a[i], size);
}
NOIPA unsigned long churn(int n, int *late_pooled) {
  unsigned long sum = 0;
  for (int i = 0; i < n; i++) {
    unsigned char *p = NULL;
    p = resize(p, 16);
    fill(p, 0, 16, i);
    p = resize(p, 40);
    fill(p, 16, 40, i);
    if (i >= n - 1000) *late_pooled += corral_group_of_if_loaded(p) >= 0;
    for (int k = 0; k < 40; k++) sum += p[k];
    free(p);
  }
  return sum;
}

static void report(const char *name, int step, void **a, int n) {
  int pooled = 0, groups[8], ngroups = 0;
  for (int i = 0; i < n; i++) {
    int g = corral_group_of_if_loaded(a[i]);
    if (g < 0) continue;
    pooled++;
    int k = 0;
    while (k < ngroups && groups[k] != g) k++;
    if (k == ngroups && ngroups < 8) groups[ngroups++] = g;
  }
  fprintf(stderr, "%s_%d pooled=%d groups=%d\n", name, step, pooled, ngroups);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  void **a = calloc((size_t)n, sizeof *a), **b = calloc((size_t)n, sizeof *b);
  unsigned long sum = 0;
  size_t size = 16;
  for (int step = 0; step < 4; step++, size += 8) {
    grow_a(a, n, size);
    grow_b(b, n, size);
    for (int i = 0; i < n; i++) {
      fill(a[i], size - (step ? 8 : 16), size, i);
      fill(b[i], size - (step ? 8 : 16), size, i + n);
    }
    report("a", step, a, n);
    report("b", step, b, n);
  }
  for (int i = 0; i < n; i++) {
    for (size_t k = 0; k < size - 8; k++) sum += ((unsigned char *)a[i])[k] + 3 * ((unsigned char *)b[i])[k];
    free(a[i]);
    free(b[i]);
  }
  free(a);
  free(b);
  int late_pooled = 0;
  sum += churn(4000, &late_pooled);
  fprintf(stderr, "churn late_pooled=%d\n", late_pooled);
  printf("checksum %lu\n", sum);
  return 0;
}
