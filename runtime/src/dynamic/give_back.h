/* Dynamic mode's judgement of a pool at each sample, and the pools it
 * gives back (give_back.c). */
#ifndef CORRAL_DYN_GIVE_BACK_H
#define CORRAL_DYN_GIVE_BACK_H

#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Why a pool was given back (_corral_dyn.unpooled_why): its objects were
 * mostly freed by other threads, its live objects fit in a page, the
 * allocator underneath lays them out as the pool would, or its objects die
 * young and nothing links them to pooled objects. */
enum { DYN_GIVEN_BACK_REMOTE, DYN_GIVEN_BACK_SMALL, DYN_GIVEN_BACK_AS_BASE, DYN_GIVEN_BACK_CHURN };

/* Under the lock, at a sample of context `id`: p the sampled object and
 * size the size asked for. Gives the context's pool back if it does not
 * pay. */
void _corral_dyn_judge_pool(uint32_t id, void *p, uint32_t size);

/* Under the lock, as dynamic mode steps aside: the pools kept behind the
 * lookup only for packing tighter than the base or staying apart from a
 * neighbour (lookup_only), are given back (back_off.c). */
void _corral_dyn_give_back_lookup_only(void);
/* Under the lock, as dynamic mode steps aside: the own calls of contexts
 * whose pools stay in use (their objects stay where they are) are pointed
 * at the none way. Left at their slots, each request would take the slot
 * way, find the gate closed and go the full way, which only forwards it:
 * mimalloc-bench's larson, whose one pool takes only its requests up to
 * dynamic mode's size limit, paid that on every later new[] (back_off.c). */
void _corral_dyn_calls_to_none(void);

#pragma GCC visibility pop

#endif
