/* Dynamic mode's samples (sampling.c): the one this thread's allocation
 * is to give, as the full way schedules it (full_way.c): a new pool's
 * first DYN_EAGER_SAMPLES come one in about every DYN_EAGER_EVERY of its
 * allocations, counted per context; after that one in about
 * DYN_STEADY_EVERY of a thread's pooled allocations, counted per thread
 * by _corral_dyn_countdown, which the settled ways count down too
 * (settled.h). _corral_dyn_allocated then takes it. */
#ifndef CORRAL_DYN_SAMPLING_H
#define CORRAL_DYN_SAMPLING_H

#include <stddef.h>
#include <stdint.h>

#include "dynamic.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* The sample this thread's allocation is to give: its context and size
 * (_corral_dyn_sample_pending, dynamic.h, says whether there is one). */
extern __thread uint32_t _corral_dyn_sample_ctx, _corral_dyn_sample_size;

#pragma GCC visibility pop

#endif
