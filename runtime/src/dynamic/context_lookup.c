/* Dynamic mode's contexts: which context an allocation belongs to. A
 * site's kind (plain, or inside a wrapper of the list) is learnt once; a
 * plain frame 0 is its own context, bound to its site so that the next
 * lookup is one load (_corral_dyn_context_at, context_lookup.h); a frame 0
 * inside a wrapper is extended outwards, by the wrappers' remembered frame
 * sizes or else by the identification code's unwinder, up to the first
 * frame outside them. New sites and contexts are added under the lock. The
 * tables themselves are dynamic_context.c; this file binds them to the
 * stack, the wrapper list and the context records. Safe mode keys its
 * pools by the same contexts (_corral_dyn_context). */
#include "context_lookup.h"

#include <string.h>

#include "dynamic.h"
#include "dynamic_context.h"
#include "dynamic_state.h"
#include "dynamic_wrappers.h"
#include "modules.h"
#include "settled.h"
#include "unwind.h"

static uint32_t site_kind(uintptr_t addr) {
  return _corral_dyn.wrappers_loaded && _corral_dynw_find(&_corral_dyn.wrappers, addr) ? DYNC_SITE_WRAPPER : DYNC_SITE_PLAIN;
}

/* Kind of a return address, learning it once (slow path, under the lock). */
static uint32_t kind_of(uintptr_t addr) {
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, addr);
  if (s) return s->kind;
  uint32_t kind = site_kind(addr);
  _corral_dyn_lock();
  _corral_dync_add_site(&_corral_dyn_settled.table, addr, kind);
  _corral_dyn_unlock();
  return kind;
}

static uint32_t intern(const corral_dync_chain_t *chain) {
  uint32_t id = _corral_dync_find_chain(&_corral_dyn_settled.table, chain);
  if (id != DYNC_NONE) return id;
  int created;
  _corral_dyn_lock();
  /* The record the chain would get is made before the chain is published:
   * another thread finds a chain lock-free the moment it is interned, and
   * must not take a record still zero for one whose pool 0 exists. An
   * entry past the count is nobody's, whether or not this chain takes it. */
  uint32_t next = _corral_dyn_settled.table.context_count;
  if (next < _corral_dyn_settled.table.max_contexts) {
    dyn_ctx_t *c = &_corral_dyn.ctx[next];
    c->group = -1;
    c->gave_back = -1;
    /* named after the outermost wrapper: layer3 says more than the xmalloc inside it */
    const corral_dynw_range_t *w =
        chain->depth > 1 ? _corral_dynw_find(&_corral_dyn.wrappers, chain->frames[chain->depth - 2]) : NULL;
    c->via = w ? w->name : NULL;
  }
  id = _corral_dync_intern(&_corral_dyn_settled.table, chain, &created);
  CORRAL_ASSERT(!created || id == next);
  CORRAL_WIDEN();                /* other threads find the new chain meanwhile */
  _corral_dyn_unlock();
  return id;
}

/* Frame 0 is inside a wrapper: step outwards, with the identification
 * code's walker (frame pointers where a module keeps them, cached CFI rules
 * where it does not, every read checked against the stack bounds), up to and
 * including the first frame that is not inside a wrapper. Each wrapper
 * site's frame size is remembered for the fast walk below. */
static uint32_t context_by_full_walk(uintptr_t ret0, void *fp0, corral_dync_chain_t *chain) {
  chain->wrapped = 1;
  corral_unwind_stack_t stack;
  corral_unwind_frame_t f;
  if (_corral_unwind_stack((uintptr_t)fp0, &stack) >= 0 && _corral_unwind_start((void *)ret0, fp0, &stack, &f) == 0) {
    const corral_module_table_t *t = _corral_modules_current();
    while (chain->depth < DYNC_MAX_CHAIN) {
      uintptr_t callee_cfa = f.sp;
      if (_corral_unwind_step(t, &stack, &f) == UNWIND_STOP) break;
      corral_dync_site_t *s = (corral_dync_site_t *)_corral_dync_site(&_corral_dyn_settled.table, chain->frames[chain->depth - 1]);
      if (s && f.sp > callee_cfa && f.sp - callee_cfa < (1u << 20))
        __atomic_store_n(&s->frame, (uint32_t)(f.sp - callee_cfa), __ATOMIC_RELAXED);
      chain->frames[chain->depth++] = f.pc;
      if (kind_of(f.pc) != DYNC_SITE_WRAPPER) {
        chain->wrapped = 0;
        break;
      }
    }
  }
  RELAXED_ADD(_corral_dyn.walks, 1);
  RELAXED_ADD(_corral_dyn.frames_walked, chain->depth - 1);
  return intern(chain);
}

/* Through wrappers, frame by frame: where every wrapper frame's size is
 * known, each return address is one load at a known distance above the
 * entry point's frame (checked against the stack bounds). A wrapper whose frame
 * size changes between calls (alloca) can mislead it into a wrong but
 * harmless context; anything unknown falls back to the full walk. */
static __attribute__((noinline)) uint32_t through_wrappers(const corral_dync_site_t *s, uintptr_t ret0, void *fp0) {
  corral_dync_chain_t chain;
  chain.frames[0] = ret0;
  chain.depth = 1;
  chain.wrapped = 0;
  corral_unwind_stack_t stack;
  if (_corral_unwind_stack((uintptr_t)fp0, &stack) >= 0) {
    uintptr_t cfa = (uintptr_t)fp0 + 16;     /* the entry point's CFA: it keeps a frame pointer */
    uint64_t below = _corral_dync_below(ret0);
    while (s && chain.depth < DYNC_MAX_CHAIN) {
      uint32_t frame = __atomic_load_n(&s->frame, __ATOMIC_RELAXED);
      if (!frame) break;
      cfa += frame;
      if (cfa - 8 < stack.lo || cfa > stack.hi) break;
      uintptr_t ret = *(const uintptr_t *)(cfa - 8);
      chain.frames[chain.depth++] = ret;
      s = _corral_dync_site(&_corral_dyn_settled.table, ret);
      if (s && s->kind == DYNC_SITE_PLAIN) {
        uint32_t id;
        if (_corral_dync_tail(s, below, &id) >= 0) return id;
        id = _corral_dync_find_chain(&_corral_dyn_settled.table, &chain);
        if (id == DYNC_NONE) break;
        _corral_dync_set_tail((corral_dync_site_t *)s, below, id);
        return id;
      }
      below = _corral_dync_below_then(below, ret);
    }
  }
  chain.depth = 1;
  return context_by_full_walk(ret0, fp0, &chain);
}

/* The common case first, in a function of its own with no chain to
 * record and nothing to save, with this thread's stack bounds as they are
 * kept (no call for them): wrapper frames of known sizes below a plain
 * site that knows this chain already, the settled ways' short walk
 * (settled.h), the same steps as the loop above.
 * Safe mode takes this on every allocation through a wrapper: 116
 * instructions each on runtime/tests/safe_churn.c when it always took the
 * loop above. */
uint32_t _corral_dyn_context_through_wrappers(const corral_dync_site_t *s, uintptr_t ret0, void *fp0) {
  const corral_thread_stack_t *ts = &_corral_thread_stack;
  uint64_t below = _corral_dync_below(ret0);
  if ((uintptr_t)fp0 >= ts->lo) {
    const corral_dync_site_t *top = _corral_dyn_walk_wrappers(s, (uintptr_t)fp0 + 16, &below, ts->hi);
    uint32_t id;
    if (top && _corral_dync_tail(top, below, &id) >= 0) return id;
  }
  return through_wrappers(s, ret0, fp0);
}

/* Frame 0 seen for the first time. */
uint32_t _corral_dyn_context_of_new_site(uintptr_t ret0, void *fp0) {
  if (kind_of(ret0) == DYNC_SITE_WRAPPER)
    return _corral_dyn_context_through_wrappers(_corral_dync_site(&_corral_dyn_settled.table, ret0), ret0, fp0);
  corral_dync_chain_t chain;
  memset(&chain, 0, sizeof chain);
  chain.frames[0] = ret0;
  chain.depth = 1;
  uint32_t id = intern(&chain);
  if (id != DYNC_NONE) {
    corral_dync_site_t *s = (corral_dync_site_t *)_corral_dync_site(&_corral_dyn_settled.table, ret0);
    if (s) __atomic_store_n(&s->ctx, id, __ATOMIC_RELEASE);   /* next time: one lookup */
  }
  return id;
}

uint32_t _corral_dyn_context(void *ret0, void *fp0) {
  return _corral_dyn_context_at(_corral_dync_site(&_corral_dyn_settled.table, (uintptr_t)ret0), (uintptr_t)ret0, fp0);
}
