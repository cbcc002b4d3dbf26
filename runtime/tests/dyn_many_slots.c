/* More pooled sites of one kind than a module's slot stubs of that kind
 * (docs/dynamic.md, "Slot calls"): SITES functions, each with a direct
 * malloc call of its own, build a list of 24-byte nodes (pooled, packed
 * tighter than a size-class base). Every site's call must be pointed at a
 * slot stub: past the first SLOTS_PER_KIND, at stubs written into spare
 * room. Then scratch objects through a wrapper, each freed at once, until
 * dynamic mode steps aside (the lists make nothing), and every site grows
 * its list in grow_late: each call must lead to the none way by then,
 * carved stubs' as much as the first ones'. Reports on stderr how many
 * sites' first nodes landed in a pool and how many late nodes did
 * ("pooled=P late=L"), and how many sites' calls lead out of every module
 * to code the unwinder has information for ("unwinds=U", read after the
 * lists are built: a stub's, carved or not); stdout carries a checksum,
 * the same with corral or without, after every list is freed. */
#define _GNU_SOURCE
#include "../include/corral.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libgcc's lookup, as the unwinder does it (unwind-dw2-fde.h). */
struct dwarf_eh_bases { void *tbase, *dbase, *func; };
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

#define NOIPA __attribute__((noipa))
#define NODES 300
#define LATE 100

struct node { struct node *next; long value; long spare; };

/* Each body differs (k), so that no two functions are folded into one. */
#define SITE(k) \
  NOIPA struct node *site_##k(struct node *next, long v) { \
    struct node *p = malloc(sizeof *p); \
    if (!p) abort(); \
    p->next = next; p->value = v * (k + 1); p->spare = k; \
    return p; \
  }
#define TEN(d) SITE(d##0) SITE(d##1) SITE(d##2) SITE(d##3) SITE(d##4) \
               SITE(d##5) SITE(d##6) SITE(d##7) SITE(d##8) SITE(d##9)
TEN(1) TEN(2) TEN(3) TEN(4) TEN(5) TEN(6) TEN(7) TEN(8)
#define REF(d) site_##d##0, site_##d##1, site_##d##2, site_##d##3, site_##d##4, \
               site_##d##5, site_##d##6, site_##d##7, site_##d##8, site_##d##9
static struct node *(*const sites[])(struct node *, long) = {REF(1), REF(2), REF(3), REF(4),
                                                            REF(5), REF(6), REF(7), REF(8)};
#define SITES ((int)(sizeof sites / sizeof *sites))

NOIPA void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) abort();
  return p;
}

NOIPA long scratch(long i) {
  long *p = xmalloc(48);
  p[0] = i;
  long v = p[0] ^ 5;
  free(p);
  return v;
}

static struct node *lists[SITES];

/* Whether some `call rel32` among the first bytes of f leads out of every
 * module, to code with unwind information (a stub). A stray 0xe8 inside
 * another instruction would have to hit such code by chance. */
static int calls_a_stub(const void *f) {
  const uint8_t *code = f;
  for (int i = 0; i < 64; i++) {
    if (code[i] != 0xe8) continue;
    int32_t rel;
    memcpy(&rel, code + i + 1, 4);
    uintptr_t target = (uintptr_t)(code + i + 5) + (uintptr_t)(intptr_t)rel;
    Dl_info info;
    struct dwarf_eh_bases bases;
    if (!dladdr((void *)target, &info) && _Unwind_Find_FDE((void *)(target + 1), &bases)) return 1;
  }
  return 0;
}

NOIPA int grow_late(void) {
  int pooled = 0;
  for (int r = 0; r < LATE; r++)
    for (int k = 0; k < SITES; k++) {
      lists[k] = sites[k](lists[k], r);
      pooled += corral_group_of_if_loaded(lists[k]) >= 0;
    }
  return pooled;
}

int main(int argc, char **argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 0, sum = 0;
  int pooled = 0;
  for (int k = 0; k < SITES; k++) {
    for (int i = 0; i < NODES; i++) lists[k] = sites[k](lists[k], i);
    pooled += corral_group_of_if_loaded(lists[k]) >= 0;
  }
  int unwinds = 0;
  for (int k = 0; k < SITES; k++) unwinds += calls_a_stub((const void *)sites[k]);
  for (long i = 0; i < rounds; i++) sum += scratch(i);
  int late = grow_late();
  fprintf(stderr, "pooled=%d late=%d unwinds=%d\n", pooled, late, unwinds);
  for (int k = 0; k < SITES; k++)
    while (lists[k]) {
      struct node *n = lists[k];
      lists[k] = n->next;
      sum += n->value + n->spare;
      free(n);
    }
  printf("%d sites, sum %ld\n", SITES, sum);
  return 0;
}
