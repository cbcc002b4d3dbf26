/* Clause sites whose call is to malloc itself (frame 0 only): the runtime
 * leaves them to the direct table instead of giving them stubs. Each
 * function allocates from one site; main checks the group of each object.
 *
 *   ident_frame0 ROUNDS */
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void *solo(void) { return malloc(24); }             /* clause {solo's call}, direct: group 0 */
NOINLINE void *inner(void) { return malloc(40); }
NOINLINE void *via_inner(void) { return inner(); }           /* clause {via_inner's call}: group 1 */
NOINLINE void *pair(void) { return malloc(56); }             /* clause {pair's call, pair_outer's call}: group 2 */
NOINLINE void *pair_outer(void) { return pair(); }
NOINLINE void *undirected(void) { return malloc(72); }       /* clause, no direct entry: group 3 */
NOINLINE void *other(void) { return malloc(24); }            /* in no clause */

int main(int argc, char **argv)
{
  int rounds = argc > 1 ? atoi(argv[1]) : 100;
  for (int i = 0; i < rounds; i++) {
    void *p[7] = {solo(), via_inner(), pair_outer(), undirected(), other(), pair(), inner()};
    ident_expect(p[0], 0);
    ident_expect(p[1], 1);
    ident_expect(p[2], 2);
    ident_expect(p[3], 3);
    ident_expect(p[4], -1);
    ident_expect(p[5], -1);       /* pair's call without pair_outer's: the clause is not complete */
    ident_expect(p[6], -1);
    for (int k = 0; k < 7; k++) free(p[k]);
  }
  return ident_report();
}
