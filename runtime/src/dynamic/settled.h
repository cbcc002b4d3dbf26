/* Dynamic mode's settled decisions, read without its lock: what the entry
 * layer's dynamic ways (entry/malloc.c) take on the way in.
 *
 * A site whose context is its own (frame 0 not in a wrapper) and whose
 * decision is settled carries that decision in its `fast` word:
 *   epoch (24 bits) | size (24 bits, 0 = any) | pool + 1 (16 bits, 0 = the
 *   allocator underneath).
 * Settled: pooled with no eager samples left, or never to be pooled. A
 * context still counting, or with eager samples to take, keeps the full
 * way. The word holds while its epoch is current and the request has its
 * size (another size may make the context mixed, which only the full way
 * notes); a sample due on this thread also takes the full way. A pooled
 * site's call may instead lead to a slot way (stubs.h), which reads its
 * decision from the slot's word:
 *   size (32 bits, 0 = any) << 32 | pool + 1 (0 = the allocator underneath).
 * publish.c writes both words. */
#ifndef CORRAL_DYN_SETTLED_H
#define CORRAL_DYN_SETTLED_H

#include <stddef.h>
#include <stdint.h>

#include "dynamic.h"
#include "dynamic_context.h"
#include "heap.h"
#include "stubs.h"
#include "unwind.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* What a settled way decided for a request: take the full way, forward it
 * to the allocator underneath (every size above max_size), or here is the
 * block. */
enum { CORRAL_DYN_FULL, CORRAL_DYN_FORWARD, CORRAL_DYN_POPPED };

#define CORRAL_DYN_EPOCH_MASK 0xffffffu
#define CORRAL_DYN_SIZE_MAX   0xffffffu

typedef struct corral_dyn_settled_s {
  corral_dync_t table;                   /* sites and contexts */
  size_t max_size;                       /* larger requests are never pooled */
  /* Bumped whenever a context's pool changes other than by its own slow
   * way (a merge, a pool given back): every site's fast word then goes
   * stale (see above). Starts at 1, so a zeroed word never holds. */
  uint32_t epoch;
} corral_dyn_settled_t;

extern corral_dyn_settled_t _corral_dyn_settled;

/* Pooled allocations this thread may still take on a settled way before
 * the full way takes a sample (full_way.c schedules it, sampling.h). */
extern __thread uint32_t _corral_dyn_countdown __attribute__((tls_model("initial-exec")));
/* The countdown's intervals this thread was given, summed: less the
 * countdown, the pooled allocations it made (back_off.c). */
extern __thread uint64_t _corral_dyn_steady_given __attribute__((tls_model("initial-exec")));

/* Requests this thread may still forward on a settled way before the
 * full way takes one: it attributes that one to its context, and asks now
 * and then whether dynamic mode should step aside (back_off.c). */
extern __thread uint32_t _corral_dyn_idle __attribute__((tls_model("initial-exec")));
void _corral_dyn_idle_check(void);
/* Once it has stepped aside with every entry point forwarding: the PLT
 * slots of t's modules bound to corral's allocating entry points lead past
 * them (stubs/plt_bypass.h); again after each dlopen. Under the lock. */
void _corral_dyn_bypass(const corral_module_table_t *t);

/* A request forwarded on the full way: counted towards stepping aside,
 * and the one that ends this thread's step of DYN_FORWARD_EVERY is
 * counted in `seen` (its pool's count of forwards of its size, NULL for a
 * context that never had a pool). */
CORRAL_INLINE void _corral_dyn_forwarded(uint32_t *seen) {
  if (CORRAL_UNLIKELY(_corral_dyn_idle-- == 0)) {
    if (seen) __atomic_fetch_add(seen, 1, __ATOMIC_RELAXED);
    _corral_dyn_idle_check();
  }
}

/* A request a settled way may forward, counted; 0 when the count has run
 * out: the full way then forwards it, counts it and asks
 * (_corral_dyn_forwarded), so that the settled ways make no call and save
 * no registers. */
CORRAL_INLINE int _corral_dyn_may_forward(void) {
  if (CORRAL_UNLIKELY(_corral_dyn_idle == 0)) return 0;
  _corral_dyn_idle--;
  return 1;
}

/* A settled decision for `pool` (+ 1; 0 = the allocator underneath). */
CORRAL_INLINE int _corral_dyn_settled_way(size_t size, uint32_t pool, void **block) {
  CORRAL_ASSERT(pool == 0 || ((pool - 1) % CORRAL_SIZE_CLASSES == 0 && pool - 1 < CORRAL_POOLS));
  if (pool == 0) return _corral_dyn_may_forward() ? CORRAL_DYN_FORWARD : CORRAL_DYN_FULL;
  if (CORRAL_UNLIKELY(_corral_dyn_countdown <= 1)) return CORRAL_DYN_FULL;   /* at 1 the full way samples */
  corral_chunk_t *c = _corral_pool_ready(pool - 1, size);
  if (CORRAL_UNLIKELY(c == NULL)) return CORRAL_DYN_FULL;
  _corral_dyn_countdown--;
  c->counted_allocs++;
  *block = _corral_block_pop(c);
  return CORRAL_DYN_POPPED;
}

/* The settled ways' short walk through wrapper frames: from wrapper site
 * s, whose call's callee has its CFA at cfa (for frame 0, the entry
 * point's), each wrapper frame's return address is one load at its
 * remembered frame size, up to the first site outside every wrapper,
 * which it returns; *below folds in the wrapper frames' return addresses
 * on the way (_corral_dync_below_then). NULL where a frame size or a site
 * is not known yet, or the walk would leave the stack below hi (0 until
 * the thread's bounds are known). */
CORRAL_INLINE const corral_dync_site_t *_corral_dyn_walk_wrappers(const corral_dync_site_t *s, uintptr_t cfa,
                                                                  uint64_t *below, uintptr_t hi) {
  for (unsigned depth = 1; depth < DYNC_MAX_CHAIN; depth++) {
    uint32_t frame = __atomic_load_n(&s->frame, __ATOMIC_RELAXED);
    cfa += frame;
    if (!frame || cfa > hi) return NULL;
    uintptr_t ret = *(const uintptr_t *)(cfa - 8);
    s = _corral_dync_site(&_corral_dyn_settled.table, ret);
    if (!s || s->kind == DYNC_SITE_PLAIN) return s;
    *below = _corral_dync_below_then(*below, ret);
  }
  return NULL;
}

/* The decision for a call inside a wrapper, s the site of its return
 * address ret and cfa the entry point's CFA (the program's stack pointer
 * before its call): frame 1's return address is one load at the wrapper's
 * remembered frame size, as on the full way's short walk, and frame 1's
 * site holds the decision of the context a tail of it names, if that
 * chain is this one. 0 when not known: the full way decides. */
uint64_t _corral_dyn_wrapper_word(const corral_dync_site_t *s, uintptr_t ret, uintptr_t cfa);

/* The settled word for a request of `size` from the call returning to
 * ret, whose site entry is s, inside a wrapper or not as `wrapped` says
 * (cfa: the entry point's CFA, read only for a site inside a wrapper), or
 * 0: the full way decides. */
CORRAL_INLINE uint64_t _corral_dyn_kind_word(const corral_dync_site_t *s, size_t size, uintptr_t ret, uintptr_t cfa,
                                             int wrapped) {
  uint64_t f;
  if (CORRAL_LIKELY(!wrapped)) {
    f = __atomic_load_n(&s->fast, __ATOMIC_ACQUIRE);
    /* A site of its own whose word forwards names a context that is never
     * pooled again (given back, or refused a pool): no epoch or size can
     * change that, so the word holds as it is. A program that allocates
     * through a function pointer (libxml2's xmlMalloc) takes this on every
     * call, since no such call can be pointed at a stub. */
    if (CORRAL_LIKELY(f != 0 && (f & 0xffff) == 0)) return f;
  } else {
    f = _corral_dyn_wrapper_word(s, ret, cfa);
  }
  uint32_t want = (uint32_t)(f >> 16) & CORRAL_DYN_SIZE_MAX;
  if (CORRAL_UNLIKELY((uint32_t)(f >> 40) != __atomic_load_n(&_corral_dyn_settled.epoch, __ATOMIC_RELAXED) ||
                      (want != size && want != 0)))
    return 0;
  return f;
}

CORRAL_INLINE uint64_t _corral_dyn_site_word(const corral_dync_site_t *s, size_t size, uintptr_t ret, uintptr_t cfa) {
  return _corral_dyn_kind_word(s, size, ret, cfa, s->kind == DYNC_SITE_WRAPPER);
}

/* The same from the return address alone. */
CORRAL_INLINE uint64_t _corral_dyn_settled_word(size_t size, uintptr_t ret, uintptr_t cfa) {
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, ret);
  if (CORRAL_UNLIKELY(s == NULL)) return 0;
  return _corral_dyn_site_word(s, size, ret, cfa);
}

/* The way for a request of at most max_size bytes from site s, given its
 * settled word f (0: the full way). */
CORRAL_INLINE int _corral_dyn_word_way(uint64_t f, size_t size, void **block) {
  if (CORRAL_UNLIKELY(f == 0)) return CORRAL_DYN_FULL;
  return _corral_dyn_settled_way(size, (uint32_t)f & 0xffff, block);
}

CORRAL_INLINE int _corral_dyn_site_way(const corral_dync_site_t *s, size_t size, uintptr_t ret, uintptr_t cfa,
                                       void **block) {
  return _corral_dyn_word_way(_corral_dyn_site_word(s, size, ret, cfa), size, block);
}

CORRAL_INLINE int _corral_dyn_fast_way(size_t size, uintptr_t ret, uintptr_t cfa, void **block) {
  if (size > _corral_dyn_settled.max_size) return CORRAL_DYN_FORWARD;
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, ret);
  if (CORRAL_UNLIKELY(s == NULL)) return CORRAL_DYN_FULL;
  return _corral_dyn_site_way(s, size, ret, cfa, block);
}

/* The slot way's decision: gate is the entry point's (anything but
 * CORRAL_GATE_DYNAMIC, such as statistics counting, takes the full way). */
CORRAL_INLINE int _corral_dyn_slot_way(size_t size, size_t slot, int64_t gate, void **block) {
  if (CORRAL_UNLIKELY(gate != CORRAL_GATE_DYNAMIC)) return CORRAL_DYN_FULL;
  uint64_t w = __atomic_load_n(&_corral_dyn_slots[slot], __ATOMIC_ACQUIRE);
  uint32_t want = (uint32_t)(w >> 32);
  if (CORRAL_UNLIKELY(want != size)) {   /* a size the word holds was at most max_size */
    if (want != 0) return CORRAL_DYN_FULL;
    if (size > _corral_dyn_settled.max_size) return CORRAL_DYN_FORWARD;
  }
  return _corral_dyn_settled_way(size, (uint32_t)w, block);
}

/* The aligned forms (malloc.c). The context's word holds the size it
 * asks for; its block comes from the class the group heap's aligned way
 * takes (_corral_aligned_size). Olden voronoi makes every quad-edge record with
 * memalign(128, 128). */
CORRAL_INLINE int _corral_dyn_aligned_way(size_t align, size_t size, uintptr_t ret,
                                                             uintptr_t cfa, void **block) {
  if (size > _corral_dyn_settled.max_size) return CORRAL_DYN_FORWARD;
  if (CORRAL_UNLIKELY(align > CORRAL_MAX_GROUP_ALIGN)) return CORRAL_DYN_FULL;
  uint64_t f = _corral_dyn_settled_word(size, ret, cfa);
  if (CORRAL_UNLIKELY(f == 0)) return CORRAL_DYN_FULL;
  return _corral_dyn_settled_way(_corral_aligned_size(size, align), (uint32_t)f & 0xffff, block);
}

#pragma GCC visibility pop

#endif
