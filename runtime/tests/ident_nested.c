/* Clause sites nested on one chain (test_identify_stubs.py). One-site
 * clauses: nest_outer's call of nest_mid (group 0), nest_mid's call of
 * nest_inner (group 1), pair_top's call of pair_outer (group 2); a clause
 * of two sites: pair_outer's call of pair_mid and pair_mid's call of leaf
 * (group 3).
 *   usage: ident_nested FIRST_MATCH ROUNDS
 * FIRST_MATCH 1: the nearest completed clause decides, as the first frame
 * of a walk that completes one; 0: the first group in rank order (plan
 * order). Prints "checked N wrong M". */
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <stdlib.h>

#define KEEP(p) __asm__ volatile("" : : "r"(p) : "memory")
#define NOINLINE __attribute__((noinline))

static int first_match;

NOINLINE void *leaf(size_t n) { void *p = malloc(n); KEEP(p); return p; }

NOINLINE void *nest_inner(size_t n) { void *p = leaf(n); KEEP(p); return p; }

/* Under nest_outer's site: through nest_inner both sites are live, the
 * nearer one is nest_mid's; straight to leaf only nest_outer's is. */
NOINLINE void nest_mid(int rounds)
{
  for (int i = 0; i < rounds; i++) {
    void *both = nest_inner(32);
    void *outer_only = leaf(32);
    ident_expect(both, first_match ? 1 : 0);
    ident_expect(outer_only, 0);
    free(both);
    free(outer_only);
  }
}

NOINLINE void nest_outer(int rounds) { nest_mid(rounds); KEEP(rounds); }

/* pair_top's site (group 2) and both of group 3's: group 3's clause is
 * complete and nearer, group 2 comes first in rank order. */
NOINLINE void *pair_mid(size_t n) { void *p = leaf(n); KEEP(p); return p; }
NOINLINE void pair_outer(int rounds)
{
  for (int i = 0; i < rounds; i++) {
    void *p = pair_mid(48);
    void *q = leaf(48);                   /* group 3's clause lacks pair_mid's site */
    ident_expect(p, first_match ? 3 : 2);
    ident_expect(q, 2);
    free(p);
    free(q);
  }
}
NOINLINE void pair_top(int rounds) { pair_outer(rounds); KEEP(rounds); }

int main(int argc, char **argv)
{
  first_match = argc > 1 ? atoi(argv[1]) : 0;
  int rounds = argc > 2 ? atoi(argv[2]) : 1000;
  nest_outer(rounds);
  pair_top(rounds);
  void *none = leaf(32);                  /* no site live: no group */
  ident_expect(none, -1);
  free(none);
  return ident_report();
}
