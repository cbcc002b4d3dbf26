/* Allocation contexts in dynamic mode: wrappers of one, two and three layers
 * called from two callers each, a non-wrapper that touches its object, and a
 * plain call site. Usage: dyn_contexts COUNT SIZE [BIG]
 *
 * Each series makes COUNT allocations of SIZE bytes (then BIG allocations of
 * 200 bytes from the same site if given) and reports on stderr, asking corral
 * which group each pointer landed in:
 *   SERIES pooled=K first=I groups=G,G big_pooled=B
 * (I: 1-based index of the first pooled allocation, 0 if none). stdout only
 * carries a checksum, so it is identical with and without corral. */
#include "../include/corral.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))


/* ---------------------------------------------------------------------------
   Wrappers (only hand the pointer back) and one non-wrapper
--------------------------------------------------------------------------- */

NOIPA void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) { fputs("out of memory\n", stderr); abort(); }
  return p;
}
/* The empty asm after each call keeps it from becoming a jump (a tail
 * call): each layer keeps a frame of its own on the stack, so that
 * layer3's allocations are three wrapper frames deep, as graphviz's
 * zmalloc -> gmalloc -> malloc are two. */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
NOIPA void *layer2(size_t n) { void *p = xmalloc(n); KEEP_FRAME(); return p; }
NOIPA void *layer3(size_t n) { void *p = layer2(n); KEEP_FRAME(); return p; }
/* Touches the object: the context ends here, whoever calls it. */
NOIPA void *make_node(size_t n) { long *p = malloc(n); p[0] = (long)n; return p; }

/* ---------------------------------------------------------------------------
   Callers: each is one call site above the wrappers
--------------------------------------------------------------------------- */

typedef void *(*alloc_fn)(size_t);

NOIPA void xmalloc_a(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = xmalloc(size); }
NOIPA void xmalloc_b(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = xmalloc(size + 0); }
NOIPA void layer2_a(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = layer2(size); }
NOIPA void layer2_b(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = layer2(size); }
NOIPA void layer3_a(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = layer3(size); }
NOIPA void layer3_b(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = layer3(size); }
NOIPA void node_a(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = make_node(size); }
NOIPA void node_b(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = make_node(size); }
NOIPA void plain(void **out, int n, size_t size) { for (int i = 0; i < n; i++) out[i] = malloc(size); }

static const struct { const char *name; void (*run)(void **, int, size_t); } SERIES[] = {
  {"xmalloc_a", xmalloc_a}, {"xmalloc_b", xmalloc_b}, {"layer2_a", layer2_a}, {"layer2_b", layer2_b},
  {"layer3_a", layer3_a}, {"layer3_b", layer3_b}, {"node_a", node_a}, {"node_b", node_b},
  {"plain", plain},
};

/* ---------------------------------------------------------------------------
   Report
--------------------------------------------------------------------------- */

static void report(const char *name, void **ptrs, int n, int big) {
  int pooled = 0, first = 0, groups[8], ngroups = 0, big_pooled = 0;
  for (int i = 0; i < n + big; i++) {
    int g = corral_group_of_if_loaded(ptrs[i]);
    if (g < 0) continue;
    if (i >= n) { big_pooled++; continue; }
    pooled++;
    if (!first) first = i + 1;
    int k = 0;
    while (k < ngroups && groups[k] != g) k++;
    if (k == ngroups && ngroups < 8) groups[ngroups++] = g;
  }
  fprintf(stderr, "%s pooled=%d first=%d groups=", name, pooled, first);
  for (int k = 0; k < ngroups; k++) fprintf(stderr, "%s%d", k ? "," : "", groups[k]);
  fprintf(stderr, " big_pooled=%d\n", big_pooled);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 300;
  size_t size = argc > 2 ? (size_t)atol(argv[2]) : 32;
  int big = argc > 3 ? atoi(argv[3]) : 0;
  void **ptrs = calloc((size_t)(n + big), sizeof *ptrs);
  unsigned long sum = 0;
  for (size_t s = 0; s < sizeof SERIES / sizeof SERIES[0]; s++) {
    SERIES[s].run(ptrs, n, size);
    SERIES[s].run(ptrs + n, big, 200);
    for (int i = 0; i < n + big; i++) {
      memset(ptrs[i], (int)s, 8);
      sum += ((unsigned char *)ptrs[i])[0] + (unsigned long)i;
    }
    report(SERIES[s].name, ptrs, n, big);
    for (int i = 0; i < n + big; i++) free(ptrs[i]);
  }
  free(ptrs);
  printf("checksum %lu\n", sum);
  return 0;
}
