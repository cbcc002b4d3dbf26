/* An allocation's context as the full way finds it (context_lookup.c):
 * frame 0's site looked up, and for a site inside a wrapper the walk
 * outwards through the wrappers. The tables it looks in are the pure part,
 * dynamic_context.h. */
#ifndef CORRAL_DYN_CONTEXT_LOOKUP_H
#define CORRAL_DYN_CONTEXT_LOOKUP_H

#include <stdint.h>

#include "attributes.h"
#include "dynamic_context.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Frame 0 is inside a wrapper, with site entry s: the context of the chain
 * up to the first frame outside the wrappers, by the wrappers' remembered
 * frame sizes where it can, else by a full walk; created on first sight. */
uint32_t _corral_dyn_context_through_wrappers(const corral_dync_site_t *s, uintptr_t ret0, void *fp0);

/* Frame 0 seen for the first time: its kind learnt, its context created. */
uint32_t _corral_dyn_context_of_new_site(uintptr_t ret0, void *fp0);

/* The context of an allocation whose frame 0 has site entry s (NULL: not
 * seen yet), creating it; DYNC_NONE when the tables are full. Inline: the
 * full way (_corral_dyn_identify) takes it on every allocation, and a site
 * already bound costs it one load. */
CORRAL_INLINE uint32_t _corral_dyn_context_at(const corral_dync_site_t *s, uintptr_t r0, void *fp0) {
  uint32_t id = s ? __atomic_load_n(&s->ctx, __ATOMIC_ACQUIRE) : DYNC_NONE;
  if (CORRAL_UNLIKELY(id == DYNC_NONE))
    id = s && s->kind == DYNC_SITE_WRAPPER ? _corral_dyn_context_through_wrappers(s, r0, fp0)
                                           : _corral_dyn_context_of_new_site(r0, fp0);
  return id;
}

#pragma GCC visibility pop

#endif
