/* Dynamic mode's settled decisions, as the full way and the samples
 * write them (publish.c); settled.h is how the entry layer reads them. */
#ifndef CORRAL_DYN_PUBLISH_H
#define CORRAL_DYN_PUBLISH_H

#include <stdint.h>

#include "dynamic_context.h"
#include "dynamic_state.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Under the lock, when a context's pool changed other than by its own full
 * way (a merge, a pool given back): every site's fast word goes stale and
 * every slot's word is written again. */
void _corral_dyn_pools_changed(void);

/* The decision of the full way for context `id` (g its pool, -1 the
 * allocator underneath; epoch read before anything it decided from), for
 * the next allocation at site s: its fast word, its caller's tail word if
 * s is in a wrapper, and for a pooled site its slot call. */
void _corral_dyn_publish_fast(const corral_dync_site_t *s, uint32_t id, uint32_t epoch, int g, dyn_ctx_t *c);

/* The call context `id` alone makes: its frame 0 when that is a site of
 * its own (a one-frame chain, not inside a wrapper, whose site names id),
 * else 0. A stub pointed there decides for id and no other context. */
uintptr_t _corral_dyn_own_call(uint32_t id);

#pragma GCC visibility pop

#endif
