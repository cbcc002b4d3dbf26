/* Dynamic mode stepping aside. A program whose contexts all lose their
 * pools (an interpreter, whose objects all come through one allocator
 * function; a tool of short-lived buffers) still pays for dynamic mode on
 * every request: the settled ways look its site up before they forward.
 * Each thread counts the requests it forwards on a settled way (or, while
 * statistics send every request the full way, for a context given back);
 * after a window of them it asks, under the lock, whether the pools in
 * use made objects at a rate that pays for those requests' lookups (ask,
 * below) and whether a context appeared since it last asked. The window
 * starts at 16384 and doubles at each ask that finds either, up to
 * CORRAL_DYN_BACK_OFF: a program whose contexts all appeared early steps
 * aside early, one that keeps showing new ones is watched longer.
 * If neither, nothing is left for dynamic mode to decide that it has not
 * decided against: the entry points' dynamic gates close, so that every
 * request goes to the allocator underneath at the bare preload's cost, and
 * the full way, where statistics keep every request, decides nothing more
 * (docs/dynamic.md, "Stepping aside"); then the PLT slots bound to
 * corral's allocating entry points lead straight past them
 * (stubs/plt_bypass.h). Objects already pooled stay where they are and
 * are freed as before. */
#include "dynamic.h"

#include "dynamic_merge.h"
#include "dynamic_state.h"
#include "give_back.h"
#include "gates.h"
#include "internal.h"
#include "next.h"
#include "plt_bypass.h"
#include "settled.h"

/* The contexts there were when this thread last asked. */
static __thread uint32_t contexts_then __attribute__((tls_model("initial-exec")));

/* The pools' sampled objects, and this thread's own pooled allocations
 * (own_pooled), when it last asked. */
static __thread uint64_t sampled_then __attribute__((tls_model("initial-exec")));
static __thread uint64_t mine_then __attribute__((tls_model("initial-exec")));

/* Under the lock: whether some context's pool is still in use, other
 * than one kept behind the lookup only for packing tighter or staying
 * apart from a neighbour (lookup_only, give_back.c), which stepping aside
 * gives back. */
static int a_pool_is_in_use(void) {
  DYN_ASSERT_LOCKED();
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++) {
    const dyn_ctx_t *root = &_corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, i)];
    if (__atomic_load_n(&root->group, __ATOMIC_RELAXED) >= 0 && !root->lookup_only) return 1;
  }
  return 0;
}

/* The pooled allocations this thread has made on settled ways and on
 * the full way once eager sampling was over: every steady interval it was
 * given, less what is left of the current one. */
static uint64_t own_pooled(void) { return _corral_dyn_steady_given - _corral_dyn_countdown; }

/* The entry points' dynamic gates close; gates that are not dynamic
 * (statistics count every request) stay as they are. When all four were
 * dynamic, forward_from drops to 0 as well, so that every request is
 * forwarded at the entry point's first compare, as the bare preload's
 * are: with the gates closed and forward_from at dynamic mode's limit, a
 * small realloc still took 21 instructions where the bare preload takes
 * 8 (lua5.4). No plan is loaded in dynamic mode and its given-back calls
 * lead to the none way, so nothing below that limit is left to decide. */
static int close_gates(void) {
  int64_t *gates[] = {&_corral_gates.on_malloc, &_corral_gates.on_calloc, &_corral_gates.on_realloc,
                      &_corral_gates.on_new};
  int all = 1;
  for (unsigned i = 0; i < sizeof gates / sizeof *gates; i++) {
    int64_t dynamic = CORRAL_GATE_DYNAMIC;
    if (!__atomic_compare_exchange_n(gates[i], &dynamic, CORRAL_GATE_CLOSED, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
      all = 0;
  }
  if (all) _corral_gates_forward_from(0, _corral_next.realloc_sets_errno);
  return all;
}

/* The first window a thread counts, or the option's if that is smaller. */
#define FIRST_WINDOW 16384u

/* This thread's window: 0 before it first asks; doubled, up to the
 * option's, each time it asks and finds a pool in use or a new context.
 * The window is counted in steps of DYN_FORWARD_EVERY (the idle count),
 * and `window_left` holds what is left of it after the current step. */
static __thread uint32_t window_now __attribute__((tls_model("initial-exec")));
static __thread uint32_t window_left __attribute__((tls_model("initial-exec")));

/* Under the lock: whether dynamic mode steps aside now, and if not, how
 * long this thread waits before it asks again. The pools in use are busy
 * while they make at least one object per DYN_FORWARDS_PER_POOLED
 * requests forwarded: the ones the window counted each paid the lookup,
 * and a trickle of pooled objects below that rate cannot earn back what
 * the lookups cost (graphviz's sfdp: three pools taking their eager
 * samples from a few hundred objects over two million forwards kept
 * every request's lookup for 87% of the run). What they made is the
 * larger of two counts: this thread's own objects from settled pools,
 * exactly, and the pools' samples, each weighed by the objects it stands
 * for (_corral_dyn.pooled_sampled, which sees other threads and a new
 * pool's full way too). */
static void ask(size_t limit, int first) {
  uint32_t now = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  int in_use = a_pool_is_in_use();
  uint64_t sampled = _corral_dyn.pooled_sampled;
  uint64_t mine = own_pooled();
  uint64_t made = sampled - sampled_then, own = mine - mine_then;
  if (own > made) made = own;
  int busy = in_use && made * DYN_FORWARDS_PER_POOLED >= window_now;
  if (!first && now == contexts_then && !busy) {
    _corral_dyn.backed_off = 1;
    _corral_dyn_give_back_lookup_only();
    int forwards_all = close_gates();
    _corral_dyn_calls_to_none();
    _corral_note(1, "dynamic: no new context appeared and the pools made under one object per %u forwarded "
                 "requests in the last %u; the allocator underneath serves everything from now on",
                 DYN_FORWARDS_PER_POOLED, window_now);
    if (forwards_all && _corral_options.dyn_bypass) {
      _corral_dyn.bypassing = 1;
      _corral_dyn_bypass(_corral_modules_current());
    }
  } else if (!first) {
    _corral_note(2, "dynamic: after %u forwarded requests the pools made %llu objects and %u contexts appeared: "
                 "watching on", window_now, (unsigned long long)made, now - contexts_then);
    window_now = (uint32_t)(2 * (size_t)window_now < limit ? 2 * (size_t)window_now : limit);
  }
  contexts_then = now;
  sampled_then = sampled;
  mine_then = mine;
}

void _corral_dyn_bypass(const corral_module_table_t *t) {
  DYN_ASSERT_LOCKED();
  unsigned n = _corral_plt_bypass(t);
  _corral_dyn.plt_bypassed += n;
  if (n && n == _corral_dyn.plt_bypassed)
    _corral_note(1, "dynamic: pointed PLT slots of malloc, calloc and operator new past corral: %u", n);
  else if (n)
    _corral_note(1, "dynamic: pointed PLT slots of a library loaded since past corral: %u more, %u in all", n,
                 _corral_dyn.plt_bypassed);
}

void _corral_dyn_idle_check(void) {
  size_t limit = _corral_options.dyn_back_off;
  if (_corral_dyn.backed_off) {         /* nothing comes this way any more */
    _corral_dyn_idle = UINT32_MAX;
    return;
  }
  if (!limit) {                         /* never steps aside; forwards are still attributed */
    _corral_dyn_idle = DYN_FORWARD_EVERY;
    return;
  }
  if (window_left == 0) {               /* the window is over: ask */
    int first = window_now == 0;
    if (first) window_now = (uint32_t)(limit < FIRST_WINDOW ? limit : FIRST_WINDOW);
    if (_corral_dyn_trylock()) {
      ask(limit, first);
      _corral_dyn_unlock();
    }
    window_left = window_now;
  }
  uint32_t step = window_left < DYN_FORWARD_EVERY ? window_left : DYN_FORWARD_EVERY;
  window_left -= step;
  _corral_dyn_idle = step;
}
