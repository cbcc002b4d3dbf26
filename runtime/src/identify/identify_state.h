/* State shared by the identification files: the loaded plan, its published
 * tables and the counters behind the "identify" and "plan" statistics. */
#ifndef CORRAL_IDENTIFY_STATE_H
#define CORRAL_IDENTIFY_STATE_H

#include <stdint.h>

#include "identify_tables.h"
#include "plan.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* One per thread (up to IDENT_COUNTER_SLOTS - 1; later threads share the
 * last slot and may lose counts). Plain stores, no atomics: a slot has one
 * writer, so counting costs a few cycles. */
typedef struct ident_counters_s {
  uint64_t calls, direct_hits, walks, frames, fp_steps, cfi_steps, grouped;
  uint64_t sampled, sampled_cycles, replays, stub_decisions;
  char pad[64 - 11 * sizeof(uint64_t) % 64];
} corral_ident_counters_t;

#define IDENT_COUNTER_SLOTS 256
#define IDENT_SAMPLE_MASK   63       /* time 1 identification in 64 */
#define IDENT_SAMPLE_OUTLIER 100000  /* cycles; a longer sample was interrupted */

typedef struct ident_state_s {
  const corral_ident_tables_t *tables;     /* NULL: no usable plan, everything ungrouped */
  const corral_plan_t *plan;
  int loaded;
  unsigned group_count;
  int rebuilding;
  corral_ident_counters_t *counters;       /* IDENT_COUNTER_SLOTS of them */
  unsigned counters_used;
  char path[512];
  char message[256];                /* why the plan was refused, "" if it was not */
  uint64_t stale_said;              /* plan modules found stale and said so (bit per module) */
} corral_ident_state_t;

extern corral_ident_state_t _corral_ident;

#pragma GCC visibility pop

#endif
