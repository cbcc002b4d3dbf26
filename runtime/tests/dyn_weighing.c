/* Dynamic mode weighing a pool against its lookups and its neighbours
 * (docs/dynamic.md, "When a context gets a pool" and "Stepping aside").
 * Every allocation named "by pointer" goes through a function pointer, as
 * libxml2's through xmlMalloc and Lua's through its allocator: no such call
 * can be pointed at a stub, so each request pays dynamic mode's lookup.
 * argv[1] picks the case:
 *   ptr24: a long run of short-lived scratch objects made by pointer, and
 *     a node of a list of 24-byte nodes, also by pointer, every fourth
 *     round (a size-class base rounds them up to 32; the pool packs them
 *     at 24). The list's pool packs tighter and nothing else: over jemalloc
 *     or mimalloc, though it keeps making objects, it does not keep dynamic
 *     mode from stepping aside once the scratch pool is given back, and is
 *     given back then (as_base): the list's last nodes are not pooled.
 *     Over glibc it pays (the pool drops glibc's header) and stays;
 *   ptr24_beside: the same with a list of 24-byte nodes made by a direct
 *     call beside it (a slot stub serves that one: its pool stays): with
 *     a pool making objects dynamic mode does not step aside, and the list
 *     made by pointer keeps its pool too (given back, its requests would
 *     pay the lookup and the base's malloc);
 *   busy48: two contexts of 48-byte nodes made by pointer in turn (a
 *     size-class base's own class: the first judged is given back, the
 *     other stays, kept apart from it), then both go on: the one kept
 *     stays apart only behind the lookup, so it does not keep dynamic mode
 *     from stepping aside, which gives it back (as_base);
 *   faded48: the same, but then only the context whose pool was kept goes
 *     on: given back all the same;
 *   direct_busy48: the same by direct calls (slot stubs serve them, so a
 *     pool kept apart costs no lookup): the one kept stays (its
 *     neighbour's call leads to the none way, unseen, so it always counts);
 *   mixed_busy48, mixed_faded48: b's nodes by pointer alone first (its
 *     pool is judged alone and given back), then a's by a direct call
 *     beside them (kept apart from b's, by a slot stub): in mixed_busy48
 *     both go on and a's pool stays; in mixed_faded48 only a's go on, b's
 *     made a few thousand objects in the base and no more (the sampled
 *     forwards tell), so at its steady samples a's pool is given back too
 *     (as_base).
 * Prints how many of the last 100 objects of each list were pooled, and a
 * checksum, the same with corral or without (both kinds of 48-byte node
 * hold one value, so it does not tell which was kept). */
#include "../include/corral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define COUNT 200000
#define FIRST 5000            /* rounds of busy48 and faded48 before the kept one is known */

static void *(*volatile by_pointer)(size_t) = malloc;

struct n24 { struct n24 *next; long v[2]; };
struct n48 { struct n48 *next; long v[5]; };

NOIPA struct n24 *ptr24(struct n24 *next) { struct n24 *n = by_pointer(sizeof *n); n->next = next; n->v[0] = 1; return n; }
NOIPA struct n24 *direct24(struct n24 *next) { struct n24 *n = malloc(sizeof *n); n->next = next; n->v[0] = 2; return n; }
NOIPA struct n48 *ptr48_a(struct n48 *next) { struct n48 *n = by_pointer(sizeof *n); n->next = next; n->v[0] = 3; return n; }
NOIPA struct n48 *ptr48_b(struct n48 *next) { struct n48 *n = by_pointer(sizeof *n); n->next = next; n->v[0] = 3; return n; }
NOIPA struct n48 *direct48_a(struct n48 *next) { struct n48 *n = malloc(sizeof *n); n->next = next; n->v[0] = 3; return n; }
NOIPA struct n48 *direct48_b(struct n48 *next) { struct n48 *n = malloc(sizeof *n); n->next = next; n->v[0] = 3; return n; }
NOIPA long scratch(long i) {
  long *p = by_pointer(64);
  p[0] = i;
  long v = p[0] * 3;
  free(p);
  return v;
}

/* Of list l's first 100 nodes (the last made), how many are pooled. */
static int pooled(void *l)
{
  int n = 0;
  for (int i = 0; i < 100 && l; i++, l = *(void **)l) n += corral_group_of_if_loaded(l) >= 0;
  return n;
}

static long sum(void *l)
{
  long s = 0;
  for (; l; l = *(void **)l) s += ((long *)l)[1];
  return s;
}

int main(int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "ptr24";
  long total = 0;
  if (!strncmp(c, "ptr24", 5)) {
    int beside = !strcmp(c, "ptr24_beside");
    if (!beside && strcmp(c, "ptr24")) return printf("unknown case %s\n", c), 2;
    struct n24 *p = NULL, *d = NULL;
    for (long i = 0; i < 2 * COUNT; i++) {
      total += scratch(i);
      if (i % 4) continue;
      p = ptr24(p);
      if (beside) d = direct24(d);
    }
    if (beside) fprintf(stderr, "last ptr_pooled=%d direct_pooled=%d\n", pooled(p), pooled(d));
    else fprintf(stderr, "last ptr_pooled=%d\n", pooled(p));
    total += sum(p) + sum(d);
  } else if (strstr(c, "busy48") || strstr(c, "faded48")) {
    int direct = !strncmp(c, "direct_", 7), mixed = !strncmp(c, "mixed_", 6);
    const char *kind = direct ? c + 7 : mixed ? c + 6 : c;
    if (strcmp(kind, "busy48") && strcmp(kind, "faded48")) return printf("unknown case %s\n", c), 2;
    struct n48 *(*make_a)(struct n48 *) = direct || mixed ? direct48_a : ptr48_a;
    struct n48 *(*make_b)(struct n48 *) = direct ? direct48_b : ptr48_b;
    struct n48 *a = NULL, *b = NULL;
    for (int i = 0; mixed && i < FIRST; i++) b = make_b(b);
    for (int i = 0; i < FIRST; i++) {
      a = make_a(a);
      b = make_b(b);
    }
    /* Which pool was kept: the other was given back at its eager samples. */
    int a_kept = corral_group_of_if_loaded(a) >= 0;
    for (int i = 0; i < COUNT; i++) {
      if (a_kept || kind[0] == 'b') a = make_a(a);
      if (!a_kept || kind[0] == 'b') b = make_b(b);
    }
    fprintf(stderr, "last kept_pooled=%d other_pooled=%d\n", pooled(a_kept ? (void *)a : b), pooled(a_kept ? (void *)b : a));
    total += sum(a) + sum(b);
  } else {
    return printf("unknown case %s\n", c), 2;
  }
  printf("sum %ld\n", total);
  return 0;
}
