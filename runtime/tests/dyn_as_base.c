/* Dynamic mode's judgement of pools that lay objects out as the allocator
 * underneath already does (docs/dynamic.md, "When a context gets a pool"):
 * argv[1] picks what the program builds, as long linked lists walked once.
 *   lone48: one context of 48-byte nodes. A size-class allocator (jemalloc,
 *     mimalloc) puts them back to back in a 48-byte class of their own, as
 *     the pool would: the pool is given back (as_base). Over glibc, whose
 *     8-byte header the pool drops, it stays;
 *   lone24: one context of 24-byte nodes, which those allocators round up
 *     to 32 bytes and the pool packs at 24: it stays;
 *   two48: two contexts of 48-byte nodes made in turn, which the base would
 *     interleave in one class: the first judged is given back (as_base),
 *     the second stays, and the two stay apart at one pool's cost;
 *   merged48: two contexts of 48-byte nodes made in turn into one list,
 *     each node pointing at the other context's: their pools merge, and the
 *     base would interleave them in one class as the merged pool does: it
 *     is given back;
 *   brief48: first a context whose 48-byte objects are freed as soon as
 *     made (its pool is given back as small), then lone48's list: the
 *     brief one's few live objects would barely interleave with the nodes
 *     in the base, so the nodes' pool is given back too (as_base);
 *   linked48: 48-byte nodes, each pointing at a 96-byte payload of another
 *     context: the base keeps nodes and payloads in classes of their own
 *     as their pools do, so both are given back, pointers or not;
 *   mixed48: lone48's nodes beside a context that asks for 48 and 16 bytes
 *     in turn. Each of its classes is laid out as the base lays it out, so
 *     its pool is judged as lone48's is: of the two, the first judged is
 *     given back and the second stays (it would share the 48-byte class
 *     with the first's objects in the base);
 *   mixed_apart: the same beside a context of 16 and 96 bytes, none of the
 *     nodes' class: both pools are given back;
 *   mixed_tight: the same beside a context of 24 and 96 bytes, whose pool
 *     packs the 24-byte ones tighter than the base: it stays;
 *   mixed8: the same beside a context of 8 and 16 bytes, whose pool takes
 *     16 for 8 where the base takes 8: it is given back too.
 * Prints how many of the last 100 objects of each context were pooled. */
#include "../include/corral.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOIPA __attribute__((noipa))
#define COUNT 200000

struct n48 { struct n48 *next; void *payload; long v[4]; };
struct n24 { struct n24 *next; long v[2]; };
struct p96 { long v[12]; };

NOIPA struct n48 *make_a(struct n48 *next) { struct n48 *n = malloc(sizeof *n); n->next = next; n->payload = NULL; n->v[0] = 1; return n; }
NOIPA struct n48 *make_b(struct n48 *next) { struct n48 *n = malloc(sizeof *n); n->next = next; n->payload = NULL; n->v[0] = 2; return n; }
NOIPA struct n24 *make_small(struct n24 *next) { struct n24 *n = malloc(sizeof *n); n->next = next; n->v[0] = 3; return n; }
NOIPA struct n48 *make_brief(void) { struct n48 *n = malloc(sizeof *n); n->next = NULL; n->v[0] = 4; return n; }
NOIPA struct p96 *make_payload(long v) { struct p96 *p = malloc(sizeof *p); memset(p, 0, sizeof *p); p->v[0] = v; return p; }
/* One call site asking for several sizes: a list node of `size` bytes. */
NOIPA void **make_mixed(void **next, size_t size) { void **m = malloc(size); memset(m, 0, size); m[0] = next; return m; }

/* Of list l's last 100 nodes made (its first 100), how many are pooled. */
static int pooled48(struct n48 *l)
{
  int pooled = 0;
  for (int i = 0; i < 100 && l; i++, l = l->next) pooled += corral_group_of_if_loaded(l) >= 0;
  return pooled;
}

static long sum48(struct n48 *l)
{
  long s = 0;
  for (; l; l = l->next) s += l->v[0] + (l->payload ? ((struct p96 *)l->payload)->v[0] : 0);
  return s;
}

int main(int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "lone48";
  struct n48 *a = NULL, *b = NULL;
  if (!strcmp(c, "lone48")) {
    for (int i = 0; i < COUNT; i++) a = make_a(a);
    fprintf(stderr, "last a_pooled=%d\n", pooled48(a));
  } else if (!strcmp(c, "lone24")) {
    struct n24 *s = NULL;
    long sum = 0;
    for (int i = 0; i < COUNT; i++) s = make_small(s);
    int pooled = 0, i = 0;
    for (struct n24 *n = s; n; n = n->next, i++) {
      sum += n->v[0];
      if (i < 100) pooled += corral_group_of_if_loaded(n) >= 0;
    }
    fprintf(stderr, "last small_pooled=%d\n", pooled);
    printf("sum %ld\n", sum);
    return 0;
  } else if (!strcmp(c, "two48")) {
    for (int i = 0; i < COUNT; i++) {
      a = make_a(a);
      b = make_b(b);
    }
    fprintf(stderr, "last a_pooled=%d b_pooled=%d\n", pooled48(a), pooled48(b));
  } else if (!strcmp(c, "merged48")) {
    for (int i = 0; i < COUNT; i++) a = make_b(make_a(a));
    fprintf(stderr, "last ab_pooled=%d\n", pooled48(a));
  } else if (!strcmp(c, "brief48")) {
    long sum = 0;
    for (int i = 0; i < COUNT; i++) {
      struct n48 *t = make_brief();
      sum += t->v[0];
      free(t);
    }
    for (int i = 0; i < COUNT; i++) a = make_a(a);
    fprintf(stderr, "last a_pooled=%d\n", pooled48(a));
    printf("brief %ld\n", sum);
  } else if (!strcmp(c, "linked48")) {
    int payloads = 0, i = 0;
    for (int k = 0; k < COUNT; k++) {
      a = make_a(a);
      a->payload = make_payload(k);
    }
    for (struct n48 *n = a; n && i < 100; n = n->next, i++) payloads += corral_group_of_if_loaded(n->payload) >= 0;
    fprintf(stderr, "last a_pooled=%d payload_pooled=%d\n", pooled48(a), payloads);
  } else if (!strncmp(c, "mixed", 5)) {
    size_t small = 16, big = 96;
    if (!strcmp(c, "mixed48")) big = 48;
    else if (!strcmp(c, "mixed_tight")) small = 24;
    else if (!strcmp(c, "mixed8")) small = 8, big = 16;
    else if (strcmp(c, "mixed_apart")) return printf("unknown case %s\n", c), 2;
    void **m = NULL;
    int pooled = 0, i = 0;
    for (int k = 0; k < COUNT; k++) {
      a = make_a(a);
      m = make_mixed(m, k % 2 ? big : small);
    }
    for (void **n = m; n; n = n[0], i++)
      if (i < 100) pooled += corral_group_of_if_loaded(n) >= 0;
    fprintf(stderr, "last a_pooled=%d mixed_pooled=%d\n", pooled48(a), pooled);
  } else {
    return printf("unknown case %s\n", c), 2;
  }
  printf("sum %ld %ld\n", sum48(a), sum48(b));
  return 0;
}
