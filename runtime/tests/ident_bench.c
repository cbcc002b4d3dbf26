/* Identification cost benchmark, run by hand through ident_bench.py (not part
 * of `make test`). Two modes:
 *
 *   ident_bench alloc N     N times: f8 -> f7 -> ... -> f0 -> malloc, free.
 *                           Run under libcorral.so with a plan whose selector
 *                           sits in f(d-1): the walk visits exactly d frames.
 *                           The cost comes from corral's own statistics
 *                           (identify.cycles_per_call, rdtsc on 1 call in 64).
 *   ident_bench unw N D     N times from f0: libunwind's unw_backtrace of D
 *                           frames, timed with rdtsc the same way; for
 *                           comparison only, corral never calls it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

static inline uint64_t rdtsc(void)
{
  uint32_t lo, hi;
  __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
  return ((uint64_t)hi << 32) | lo;
}

static int mode_unw, unw_depth;
static uint64_t unw_cycles, unw_calls;
static volatile uintptr_t sink;

__attribute__((noipa)) void f0(void)
{
  if (mode_unw) {
    void *frames[64];
    uint64_t t0 = rdtsc();
    int n = unw_backtrace(frames, unw_depth);
    uint64_t spent = rdtsc() - t0;
    if (spent < 100000) {           /* as corral does: drop preempted samples */
      unw_cycles += spent;
      unw_calls++;
    }
    sink += (uintptr_t)n;
    return;
  }
  void *p = malloc(32);
  sink += (uintptr_t)p;
  free(p);
}

/* f1..f8: each calls the next one in, and does a little work after the call
 * so that the call is not a tail call (which would remove the frame). */
#define LEVEL(k, inner) \
  __attribute__((noipa)) void f##k(void) { inner(); sink++; }
LEVEL(1, f0) LEVEL(2, f1) LEVEL(3, f2) LEVEL(4, f3)
LEVEL(5, f4) LEVEL(6, f5) LEVEL(7, f6) LEVEL(8, f7)

int main(int argc, char **argv)
{
  if (argc < 3) {
    fprintf(stderr, "usage: ident_bench alloc N | ident_bench unw N DEPTH\n");
    return 2;
  }
  long n = atol(argv[2]);
  mode_unw = strcmp(argv[1], "unw") == 0;
  unw_depth = mode_unw && argc > 3 ? atoi(argv[3]) : 0;
  for (long i = 0; i < n; i++) f8();
  if (mode_unw) printf("unw_backtrace depth %d: %.0f cycles/call\n", unw_depth, (double)unw_cycles / (double)unw_calls);
  return 0;
}
