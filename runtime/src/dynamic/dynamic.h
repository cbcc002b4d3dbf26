/* Dynamic mode (DPA-style pools with no profile): the hooks core and ident
 * call. Design: docs/dynamic.md. Everything here is a no-op unless
 * CORRAL_DYNAMIC is on.
 *
 * The files: the pure parts, built on their own by the unit tests, are
 * dynamic_context.c (site and context tables), dynamic_merge.c
 * (union-find, SSG evidence) and dynamic_wrappers.c (the wrapper list's
 * parser). Bound to the allocator, over the shared state of
 * dynamic_state.h: dynamic_init.c (start-up, fork), wrapper_list.c
 * (CORRAL_WRAPPERS loaded and relocated), context_lookup.c (an
 * allocation's context), full_way.c (_corral_dyn_identify: pools after
 * min_objects small allocations), publish.c (the fast, tail and slot
 * words, the epoch), settled.c (what the entry layer's settled ways read,
 * settled.h), sampling.c (samples, SSG edges, merges), give_back.c (pools
 * that do not pay) and dynamic_stats.c. */
#ifndef CORRAL_DYNAMIC_H
#define CORRAL_DYNAMIC_H

#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Once, from core's init, after options are read and ident has initialised:
 * loads CORRAL_WRAPPERS and maps the tables. */
void _corral_dyn_init(void);

/* Safe mode's slot calls (safe.c): its slot stubs prepared, now and
 * after each dlopen, leading to safe mode's slot ways (dynamic_init.c);
 * and, once they are, the call of context id pointed at one whose word is
 * the first pool of `group` (group * CORRAL_SIZE_CLASSES), when its frame
 * 0 is a site of its own whose call is direct (publish.c; under dynamic
 * mode's lock, one caller at a time with the stubs' preparation). */
void _corral_dyn_prepare_safe_slots(void);
void _corral_dyn_point_at_safe_slot(uint32_t id, unsigned group);

/* The context tables and the wrapper list alone (dynamic mode's init calls
 * it; safe mode keys its pools by context): 0 when ready, else -1 after a
 * warning that names `who`. */
int _corral_dyn_contexts_init(const char *who);

/* The context of an allocation from frame 0 `ret0` (wrappers unwound from
 * the entry point's frame fp0), created on first sight; UINT32_MAX when the
 * tables are full. Needs the context tables. */
uint32_t _corral_dyn_context(void *ret0, void *fp0);

/* "prog+0x11c9 via xmalloc": a context's deciding site and the outermost
 * wrapper it was reached through. */
void _corral_dyn_context_name(uint32_t id, char *buf, size_t len);

/* Whether dynamic mode is on (after init): _corral_modes.dynamic (heap's
 * modes.h). */

/* The group of a small allocation (size <= core's max_size) from its
 * immediate return address `ret0` and the frame `fp0` of the exported entry
 * point (the same pair core passes to _corral_identify), or -1: not (yet)
 * pooled. May schedule a sample of the pointer (see below). */
int _corral_dyn_identify(void *ret0, void *fp0, size_t size);

/* Set by _corral_dyn_identify on the rare allocation whose pointer should be
 * sampled; _corral_dyn_allocated then samples it. */
extern __thread int _corral_dyn_sample_pending;
void _corral_dyn_sample(void *p);

/* After every grouped allocation p that dynamic mode decided on the full
 * way: counts it on its chunk (unless statistics count everything) and
 * takes a pending sample. */
void _corral_dyn_allocated(void *p);

/* After dlopen (outside malloc): relocate wrappers of newly loaded modules. */
void _corral_dyn_after_dlopen(void);

/* fork: the slow-path lock is held across fork so the child's tables are whole. */
void _corral_dyn_fork_prepare(void);
void _corral_dyn_fork_parent(void);
void _corral_dyn_fork_child(void);

/* Register the "dynamic" section of the statistics (base/stats_table.h);
 * _corral_dyn_init does. */
void _corral_dyn_stats_register(void);

/* Group names and count while dynamic mode owns the groups. */
unsigned _corral_dyn_group_count(void);
const char *_corral_dyn_group_name(unsigned g);

#pragma GCC visibility pop

#endif
