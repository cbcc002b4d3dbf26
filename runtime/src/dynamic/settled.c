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
__thread uint32_t _corral_dyn_steady_taken __attribute__((tls_model("initial-exec")));
/* 0: the first forward arms the window (back_off.c). */
__thread uint32_t _corral_dyn_idle __attribute__((tls_model("initial-exec")));
corral_dyn_settled_t _corral_dyn_settled;

/* The decision for a call inside a wrapper, s the site of its return
 * address ret and cfa the entry point's CFA (the program's stack pointer
 * before its call): frame 1's return address is one load at the wrapper's
 * remembered frame size, as on the full way's short walk, and frame 1's
 * site holds the decision of the context a tail of it names, if that
 * chain is this one. 0 when not known: the full way decides. */
__attribute__((noinline)) uint64_t _corral_dyn_wrapper_word(const corral_dync_site_t *s, uintptr_t ret, uintptr_t cfa) {
  uint32_t frame = __atomic_load_n(&s->frame, __ATOMIC_RELAXED);
  const corral_thread_stack_t *stack = &_corral_thread_stack;
  /* hi is 0 until this thread's bounds are known; a signal stack fails too */
  if (!frame || cfa < stack->lo || cfa + frame > stack->hi) return 0;
  uintptr_t ret1 = *(const uintptr_t *)(cfa + frame - 8);
  const corral_dync_site_t *s1 = _corral_dync_site(&_corral_dyn_settled.table, ret1);
  if (!s1 || s1->kind != DYNC_SITE_PLAIN) return 0;
  uint32_t named;
  int k = _corral_dync_tail(s1, _corral_dync_below(ret), &named);
  return k < 0 ? 0 : __atomic_load_n(&s1->tail_fast[k], __ATOMIC_ACQUIRE);
}
