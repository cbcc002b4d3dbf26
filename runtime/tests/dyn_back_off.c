/* Dynamic mode stepping aside (docs/dynamic.md, "Stepping aside"): every
 * object comes through one allocation wrapper, as an interpreter's do, and
 * dies before the next is made, so that each context's pool is given back
 * as too small; then the program goes on allocating the same way for a
 * long while. With `realloc` every object is made by realloc of NULL, as
 * Lua's allocator makes them; with `keep`, a list that keeps growing has a
 * pool in use throughout. A third argument runs that many more rounds
 * in `settled`, after the rest, for a callgrind that collects only
 * there; with `late`, a third scratch context starts at round 4000, after
 * the first window's start and before its end; with `built`, the list is
 * made first and then only read, its pool in use but making nothing; with
 * `sparse`, the list's first 300 nodes are made first and then it grows
 * by a node every 64th round, too rarely for its samples alone to tell; with
 * `direct`, the list is built first by a direct malloc call of its own
 * (which dynamic mode points at its pool's slot), then only read while the
 * scratch objects come and go, then grown by 5,000 more nodes in
 * grow_late, after dynamic mode has stepped aside. Prints a checksum, the
 * same with corral or without. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))

static int by_realloc;
static void *volatile none;        /* realloc(NULL, n) the compiler cannot turn into malloc(n) */

NOIPA void *xmalloc(size_t n) {
  void *p = by_realloc ? realloc(none, n) : malloc(n);
  if (!p) abort();
  return p;
}

struct node { struct node *next; long value; };

NOIPA long scratch_a(long i) {
  long *p = xmalloc(48);
  p[0] = i;
  long v = p[0] * 3;
  free(p);
  return v;
}

NOIPA long scratch_b(long i) {
  long *p = xmalloc(32);
  p[1] = i;
  long v = p[1] + 1;
  free(p);
  return v;
}

NOIPA long scratch_c(long i) {
  long *p = xmalloc(64);
  p[2] = i;
  long v = p[2] - 1;
  free(p);
  return v;
}

NOIPA struct node *grow(struct node *list, long i) {
  struct node *n = xmalloc(sizeof *n);
  n->next = list;
  n->value = i;
  return n;
}

NOIPA struct node *grow_direct(struct node *list, long i) {
  struct node *n = malloc(sizeof *n);
  if (!n) abort();
  n->next = list;
  n->value = i;
  return n;
}

NOIPA struct node *grow_late(struct node *list) {
  for (long i = 0; i < 5000; i++) list = grow_direct(list, i);
  return list;
}

NOIPA long settled(long rounds) {
  long sum = 0;
  for (long i = 0; i < rounds; i++) sum += scratch_a(i) + scratch_b(i);
  return sum;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "drop";
  int keep = !strcmp(mode, "keep"), late = !strcmp(mode, "late"), sparse = !strcmp(mode, "sparse");
  int direct = !strcmp(mode, "direct");
  by_realloc = !strcmp(mode, "realloc");
  long rounds = argc > 2 ? atol(argv[2]) : 400000, sum = 0;
  struct node *list = NULL;
  if (!strcmp(mode, "built") || sparse)      /* sparse: its pool exists before the rest starts */
    for (long i = 0; i < (sparse ? 300 : rounds / 4); i++) list = grow(list, i);
  if (direct)
    for (long i = 0; i < rounds / 4; i++) list = grow_direct(list, i);
  for (long i = 0; i < rounds; i++) {
    sum += scratch_a(i) + scratch_b(i);
    if (late && i >= 4000) sum += scratch_c(i);
    if ((keep && i % 4 == 0) || (sparse && i % 64 == 0)) list = grow(list, i);
  }
  if (direct) list = grow_late(list);
  for (struct node *n = list; n; n = n->next) sum += n->value;
  if (argc > 3) sum += settled(atol(argv[3]));
  printf("sum %ld\n", sum);
  return 0;
}
