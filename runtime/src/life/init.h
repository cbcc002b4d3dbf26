/* Start-up state shared by the entry points (init.c). */
#ifndef CORRAL_INIT_H
#define CORRAL_INIT_H

#include <stdatomic.h>
#include <stddef.h>

#include "gates.h"
#include "stubs.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

enum {
  CORRAL_STATE_NONE = 0,        /* nothing done yet */
  CORRAL_STATE_BOOT = 1,        /* resolving the next allocator: bootstrap buffer */
  CORRAL_STATE_FORWARD = 2,     /* next allocator known, groups not yet: forward */
  CORRAL_STATE_READY = 3,       /* everything on */
};

extern atomic_int _corral_state;
/* Groups in use (_corral_ngroups): gates.h. */

/* The entry points' first tests (_corral_gates): gates.h. */

/* Bring the runtime up as far as this thread may (returns the state
 * reached). `targets`: where the stubs lead, from the entry layer. */
int _corral_init_slow(const corral_call_targets_t *targets);
/* True on the thread that is running init (its allocations use the buffer). */
int _corral_in_init(void);

#pragma GCC visibility pop

#endif
