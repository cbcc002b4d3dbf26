/* The allocation path shared by the C entry points (interpose.c) and the C++
 * operators (through _corral_new_alloc, for new.cc). The inline parts are always inlined into the exported
 * function, whose own return and frame address are passed down as ret0/fp0. */
#ifndef CORRAL_ENTRY_H
#define CORRAL_ENTRY_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cxx.h"
#include "dynamic.h"
#include "heap.h"
#include "identify.h"
#include "identify_state.h"
#include "identify_tables.h"
#include "init.h"
#include "internal.h"
#include "next.h"
#include "safe.h"
#include "settled.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

void *_corral_alloc_early(size_t size, size_t align, int zero);
void *_corral_realloc_at(void *p, size_t size, void *ret0, void *fp0);

/* malloc's, calloc's and realloc's full way, entered by a tail call: their
 * own return and frame address are then the program's call (interpose.c). */
void *_corral_malloc_rest(size_t size);
void *_corral_calloc_rest(size_t n, size_t size);
void *_corral_realloc_rest(void *p, size_t size);
/* memalign's and aligned_alloc's (align a power of two), the same way. */
void *_corral_aligned_rest(size_t align, size_t size);

/* ---- the ways stubs lead to (stubs.h, corral_call_targets_t) ---- */

/* Dynamic mode's slot ways (dynamic_ways.c). */
void *_corral_dyn_malloc_slot(size_t size, size_t slot);
void *_corral_dyn_calloc_slot(size_t n, size_t size, size_t slot);
void *_corral_dyn_new_slot(size_t n, size_t slot);
void *_corral_dyn_new_slot_nothrow(size_t n, const void *nothrow, size_t slot);

/* The pool ways (pool_call.c). */
void *_corral_malloc_pool(size_t size, size_t pool);
void *_corral_calloc_pool(size_t n, size_t size, size_t pool);
void *_corral_new_pool(size_t n, size_t pool);
void *_corral_new_pool_nothrow(size_t n, const void *nothrow, size_t pool);
/* The none ways (pool_call.c). */
void *_corral_malloc_none(size_t size);
void *_corral_calloc_none(size_t n, size_t size);
void *_corral_new_none(size_t n);
void *_corral_new_none_nothrow(size_t n, const void *nothrow);


/* All of them, for the stubs. */
extern const corral_call_targets_t _corral_call_targets;

/* ---- dynamic mode's ways (dynamic_ways.c) ---- */

/* malloc's way while its gate is CORRAL_GATE_DYNAMIC (gates.h), entered by
 * a tail call; continues in _corral_malloc_rest where it cannot decide. */
void *_corral_dyn_malloc(size_t size);
/* calloc's, the same way; continues in _corral_calloc_rest. */
void *_corral_dyn_calloc(size_t n, size_t size);
/* realloc's, for a pointer of the allocator underneath or NULL and a size
 * that is not 0, the same way (a pointer to move into a pool takes the
 * full way); continues in _corral_realloc_rest. */
void *_corral_dyn_realloc(void *p, size_t size);

/* memalign's and aligned_alloc's way (align a power of two) while malloc's
 * gate is CORRAL_GATE_DYNAMIC, entered by a tail call; continues in
 * _corral_aligned_rest. */
void *_corral_dyn_memalign(size_t align, size_t size);
/* posix_memalign's, called with its own return address and CFA (the
 * program's stack pointer before its call): a settled site's decision,
 * CORRAL_DYN_POPPED with the block in *block, CORRAL_DYN_FORWARD, or
 * CORRAL_DYN_FULL: the full way decides (dynamic/settled.h). */
int _corral_dyn_aligned(size_t align, size_t size, uintptr_t ret, uintptr_t cfa, void **block);

extern __thread uint64_t _corral_rng __attribute__((tls_model("initial-exec")));

/* Only counted when statistics are asked for: it costs a TLS access on the
 * path that should cost nothing. */
CORRAL_INLINE void _corral_count_ungrouped(size_t size)
{
  if (!_corral_options.stats) return;
  corral_heap_t *h = _corral_heap_get();
  if (CORRAL_LIKELY(h != NULL)) {
    h->ungrouped_objects++;
    h->ungrouped_bytes += size;
  }
}

/* One of the random pools (CORRAL_RANDOM_POOLS=N), uniformly: the top bits
 * of a per-thread 64-bit LCG (Knuth's MMIX constants), scaled to N without a
 * division. Two instructions to step; the low bits of an LCG are poor, the
 * top ones are what a scatter needs. */
CORRAL_INLINE unsigned _corral_random_group(void)
{
  uint64_t x = _corral_rng * 6364136223846793005ull + 1442695040888963407ull;
  _corral_rng = x;
  return (unsigned)(((x >> 32) * _corral_ngroups) >> 32);
}

/* Group of an allocation, or -1. Random pools pick one at random;
 * otherwise the plan decides. */
CORRAL_INLINE int _corral_pick_group(size_t size, void *ret0, void *fp0)
{
  if (size > _corral_options.max_size || _corral_ngroups == 0) return -1;
  if (_corral_options.random_pools > 0) return (int)_corral_random_group();
  /* A frame-0 decision without a call: the direct table's first probe. */
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  const corral_direct_entry_t *e;
  int g;
  if (CORRAL_LIKELY(t != NULL && !_corral_modes.track && t->direct_mask != 0) &&
      (e = _corral_direct_first(t, (uintptr_t)ret0))->key == (uintptr_t)ret0)
    g = (int)e->group;
  else
    g = _corral_identify(ret0, fp0, size);
  return g < (int)_corral_ngroups ? g : -1;
}

/* align: 0 = malloc's (16), else a power of two. NULL on failure (errno set). */
CORRAL_INLINE void *_corral_alloc_at(size_t size, size_t align, void *ret0, void *fp0, int zero)
{
  if (CORRAL_UNLIKELY(atomic_load_explicit(&_corral_state, memory_order_relaxed) != CORRAL_STATE_READY))
    return _corral_alloc_early(size, align, zero);
  if (CORRAL_UNLIKELY(_corral_modes.safe)) return _corral_safe_alloc(size, align, ret0, fp0, zero);
  if (align <= CORRAL_MAX_GROUP_ALIGN) {
    int g = _corral_pick_group(size, ret0, fp0);
    if (g >= 0) {
      void *p = _corral_group_alloc((unsigned)g, size, align);
      if (CORRAL_LIKELY(p != NULL)) {
        if (CORRAL_UNLIKELY(_corral_modes.dynamic)) _corral_dyn_allocated(p);
        if (zero) memset(p, 0, size);
        return p;
      }
    }
  }
  _corral_count_ungrouped(size);
  return _corral_next_alloc(size, align, zero);
}

#pragma GCC visibility pop

#endif
