/* Access sampling. Watching every heap access costs 30-90x native on
 * pointer-heavy programs (the shadow map, the block record and the affinity
 * window per access), so after the first `--sample-after` guest
 * instructions, watched in full, accesses are watched in bursts: the run is
 * cut into periods of 2^s bursts of `burst` instructions, one burst of each
 * period (at a random place in it) is watched, and what it counts is
 * weighted by 2^s. The rate halves with each doubling of the run (s = 1 up
 * to twice --sample-after, 2 up to four times, ...) down to 1/64, so the
 * cost of watching grows with the logarithm of a long run, not with its
 * length. Between bursts generated code sees an empty heap span and makes
 * no call at all. Allocations, frees, sizes, lifetimes, peaks and the
 * placement model never depend on sampling; reads, writes, their bytes and
 * the affinity edges are estimates (exact below --sample-after).
 * Deterministic: the places are drawn from a fixed seed, and the clock is
 * the guest instruction count. */
#include "pub_tool_basics.h"
#include "cr_tool.h"

#define MAX_SHIFT 6          /* the lowest rate: 1/64 */

ULong clo_sample_after = 1ULL << 28;
ULong cr_sample_next = 0;
Bool cr_watching = True;

static ULong burst;          /* instructions per burst: sample_after / 256 */
static UInt shift;           /* the current period has 2^shift bursts */
static ULong period_end, burst_start, burst_end;
static ULong rng = 0x9e3779b97f4a7c15ULL;
static ULong watched_instrs, watch_since;   /* before the current stretch; its start */

static ULong next_random(void)
{
   rng ^= rng << 13;
   rng ^= rng >> 7;
   rng ^= rng << 17;
   return rng;
}

static void watch(Bool on, ULong now)
{
   if (on == cr_watching) return;
   if (cr_watching) watched_instrs += now - watch_since;
   else watch_since = now;
   cr_watching = on;
   cr_heap_watch(on, on ? 1u << shift : 1);
}

/* A new period starting at `start`: its rate follows the epoch it is in. */
static void begin_period(ULong start)
{
   if (shift < MAX_SHIFT && start >= clo_sample_after << shift) shift++;
   ULong slots = 1ULL << shift;
   burst_start = start + (next_random() % slots) * burst;
   burst_end = burst_start + burst;
   period_end = start + slots * burst;
}

void cr_sample_init(void)
{
   cr_sample_next = clo_sample_after ? clo_sample_after : ~0ULL;
   burst = clo_sample_after >> 8 ? clo_sample_after >> 8 : 1;
}

/* Called by generated code when cr_instrs reaches cr_sample_next. */
void cr_sample_tick(void)
{
   ULong now = cr_instrs;
   while (now >= cr_sample_next) {
      ULong at = cr_sample_next;
      if (at == period_end || shift == 0) begin_period(at);
      if (at < burst_start) {
         watch(False, at);
         cr_sample_next = burst_start;
      } else if (at < burst_end) {
         watch(True, at);
         cr_sample_next = burst_end;
      } else {
         watch(False, at);
         cr_sample_next = period_end;
      }
   }
}

ULong cr_sample_watched(void)
{
   return watched_instrs + (cr_watching ? cr_instrs - watch_since : 0);
}
