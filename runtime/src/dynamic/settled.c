/* Dynamic mode's settled state (settled.h), defined: the site and context
 * tables, the epoch and max_size that the entry layer's settled ways read
 * without the lock, each thread's countdown to its next steady sample,
 * and the one part of those ways that is not inline, the decision for a
 * call inside a wrapper, which publish.c writes into the caller's site. */
#include "settled.h"

#include "dynamic_context.h"
#include "dynamic_state.h"
#include "heap.h"

__thread uint32_t _corral_dyn_countdown __attribute__((tls_model("initial-exec"))) = DYN_STEADY_EVERY;
__thread uint64_t _corral_dyn_steady_given __attribute__((tls_model("initial-exec"))) = DYN_STEADY_EVERY;
/* 0: the first forward arms the window (back_off.c). */
__thread uint32_t _corral_dyn_idle __attribute__((tls_model("initial-exec")));
corral_dyn_settled_t _corral_dyn_settled;

/* The decision held for the context whose frames below site s (outside
 * every wrapper) hash to `below`, if a tail of s names it; 0 if not. */
static inline uint64_t tail_word(const corral_dync_site_t *s, uint64_t below) {
  uint32_t named;
  int k = _corral_dync_tail(s, below, &named);
  return k < 0 ? 0 : __atomic_load_n(&s->tail_fast[k], __ATOMIC_ACQUIRE);
}

/* Past a second wrapper frame (s, whose return address is up): graphviz's
 * zmalloc calls gmalloc. Apart, so that the common case, one wrapper
 * frame, keeps its few instructions. */
static __attribute__((noinline)) uint64_t deeper_word(const corral_dync_site_t *s, uint64_t below, uintptr_t up,
                                                      uintptr_t cfa) {
  below = _corral_dync_below_then(below, up);
  const corral_dync_site_t *top = _corral_dyn_walk_wrappers(s, cfa, &below, _corral_thread_stack.hi);
  return top ? tail_word(top, below) : 0;
}

/* The decision for a call inside a wrapper, s the site of its return
 * address ret and cfa the entry point's CFA (the program's stack pointer
 * before its call): each wrapper frame's return address is one load at
 * its remembered frame size, as on the full way's short walk, up to the
 * first site outside every wrapper, which holds the decision of the
 * context a tail of it names, if that chain is this one. With one wrapper
 * frame only, every call of a wrapper that calls another took the full
 * way. 0 when not known: the full way decides. */
__attribute__((noinline)) uint64_t _corral_dyn_wrapper_word(const corral_dync_site_t *s, uintptr_t ret, uintptr_t cfa) {
  uint32_t frame = __atomic_load_n(&s->frame, __ATOMIC_RELAXED);
  const corral_thread_stack_t *stack = &_corral_thread_stack;
  /* hi is 0 until this thread's bounds are known; a signal stack fails too */
  if (!frame || cfa < stack->lo || cfa + frame > stack->hi) return 0;
  uintptr_t up = *(const uintptr_t *)(cfa + frame - 8);
  const corral_dync_site_t *s1 = _corral_dync_site(&_corral_dyn_settled.table, up);
  if (!s1) return 0;
  if (CORRAL_UNLIKELY(s1->kind != DYNC_SITE_PLAIN)) return deeper_word(s1, _corral_dync_below(ret), up, cfa + frame);
  return tail_word(s1, _corral_dync_below(ret));
}
