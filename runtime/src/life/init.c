/* Start-up: options, the next allocator, identification, fork handlers.
 * Init runs on the first allocation or from the constructor, whichever
 * comes first. Shut-down (the statistics at exit) is exit.c. */
#include "init.h"
#include "dynamic.h"
#include "exit.h"
#include "heap.h"
#include "identify.h"
#include "internal.h"
#include "next.h"
#include "prefetch.h"
#include "safe.h"
#include "stats.h"
#include "stubs.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sched.h>

atomic_int _corral_state;
static __thread int initialising __attribute__((tls_model("initial-exec")));

int _corral_in_init(void) { return initialising; }

static void fork_prepare(void)
{
  _corral_dyn_fork_prepare();
  _corral_safe_fork_prepare();
  _corral_heap_fork_prepare();
  _corral_stubs_fork_prepare();
}

static void fork_parent(void)
{
  _corral_stubs_fork_parent();
  _corral_heap_fork_parent();
  _corral_safe_fork_parent();
  _corral_dyn_fork_parent();
}

static void fork_child(void)
{
  _corral_stubs_fork_child();
  _corral_heap_fork_child();
  _corral_safe_fork_child();
  _corral_dyn_fork_child();
  _corral_exit_after_fork();
}

/* No mode may run: every request goes to the allocator underneath
 * (_corral_prefetch_init could not make the pools' code safe to run). */
static void nothing_pooled(void)
{
  _corral_options.safe = 0;
  _corral_options.random_pools = 0;
  _corral_options.plan = NULL;
  _corral_options.dynamic = 0;
}

/* One mode at a time, whatever the environment asks: safe mode, then
 * random pools, then a plan, then dynamic mode; the first asked for runs
 * and one warning names what it ignores. Safe mode because a plan, dynamic
 * mode or random pools would put objects of different sites in one pool;
 * random pools because they are the control that ignores every layout; a
 * plan before dynamic mode because it is the program's own, and the two
 * together made neither work: a plan loaded beside dynamic mode grouped
 * nothing and dynamic mode made no pool (a CORRAL_DYNAMIC left exported
 * under `corral run --plan`, which now clears it too). */
static void one_mode(void)
{
  int safe = _corral_options.safe, random = _corral_options.random_pools > 0, plan = _corral_options.plan != NULL;
  int dynamic = _corral_options.dynamic;
  const char *runs = safe ? "safe mode" : random ? "random pools" : plan ? "the plan" : NULL;
  if (runs == NULL) return;
  const char *ignored[3];
  unsigned n = 0;
  if (safe && random) ignored[n++] = "random pools";
  if ((safe || random) && plan) ignored[n++] = "the plan";
  if (dynamic) ignored[n++] = "dynamic mode";
  if (n == 1) _corral_warn("one mode at a time: running %s, ignoring %s", runs, ignored[0]);
  else if (n == 2) _corral_warn("one mode at a time: running %s, ignoring %s and %s", runs, ignored[0], ignored[1]);
  else if (n == 3)
    _corral_warn("one mode at a time: running %s, ignoring %s, %s and %s", runs, ignored[0], ignored[1], ignored[2]);
  _corral_options.dynamic = 0;
  if (safe || random) _corral_options.plan = NULL;
  if (safe) _corral_options.random_pools = 0;
}

int _corral_init_slow(const corral_call_targets_t *targets)
{
  int expected = CORRAL_STATE_NONE;
  if (!atomic_compare_exchange_strong(&_corral_state, &expected, CORRAL_STATE_BOOT)) {
    /* Another thread (or this one, re-entered from dlsym) is initialising. */
    if (initialising) return atomic_load(&_corral_state);
    while (atomic_load(&_corral_state) < CORRAL_STATE_FORWARD) sched_yield();
    return atomic_load(&_corral_state);
  }
  initialising = 1;
  _corral_stubs_set_targets(targets);
  _corral_options_init();
  if (_corral_next_init() != 0) {
    /* Without an allocator underneath there is nothing safe to do but to
     * fail every allocation that the bootstrap buffer cannot serve. */
    initialising = 0;
    return CORRAL_STATE_BOOT;
  }
  atomic_store(&_corral_state, CORRAL_STATE_FORWARD);
  if (_corral_prefetch_init() != 0) nothing_pooled();
  _corral_heap_init();
  one_mode();
  _corral_ident_init();
  _corral_dyn_init();
  _corral_safe_init();
  _corral_modes.track = _corral_options.stats != NULL;
  _corral_modes.full_ways = _corral_modes.track || _corral_modes.safe;
  _corral_modes.free_way = _corral_modes.track ? CORRAL_FREE_FULL
                           : _corral_modes.safe ? CORRAL_FREE_SAFE : CORRAL_FREE_REMOTE;
  _corral_exit_init();
  unsigned n = _corral_options.random_pools > 0 ? (unsigned)_corral_options.random_pools
               : _corral_modes.dynamic || _corral_modes.safe ? CORRAL_MAX_GROUPS - 1   /* pools appear as it runs */
                                : _corral_group_count();
  _corral_ngroups = n < CORRAL_MAX_GROUPS ? n : CORRAL_MAX_GROUPS - 1;
  if (_corral_options.random_pools > 0 || _corral_modes.dynamic)
    memset(_corral_group_mixed, _corral_options.mixed, sizeof _corral_group_mixed);
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  _corral_note(1, "ready: %u groups%s", _corral_ngroups,
               _corral_options.random_pools > 0 ? " (random pools)" : "");
  /* The entry points' short ways (malloc.c), open from READY on. */
  uintptr_t lo, hi, boot = (uintptr_t)_corral_boot_buffer;
  _corral_span_bounds(_corral_range_min, _corral_range_max, boot, boot + CORRAL_BOOT_BYTES, _corral_boot_used(),
                      &lo, &hi);
  __atomic_store_n(&_corral_mine_lo, lo, __ATOMIC_RELEASE);
  __atomic_store_n(&_corral_mine_hi, hi, __ATOMIC_RELEASE);
  /* Release: a thread that sees the new value jumps to _corral_next at once. */
  _corral_gates_forward_from(_corral_modes.full_ways ? SIZE_MAX : _corral_ngroups ? _corral_options.max_size + 1 : 0,
                             _corral_next.realloc_sets_errno);
  /* Opening the direct table also sets the gates from its tables; safe
   * mode keeps them full: every request is its own. */
  if (!_corral_modes.full_ways && _corral_options.random_pools <= 0) _corral_ident_open_direct();
  if (!_corral_modes.track && _corral_modes.safe) {
    __atomic_store_n(&_corral_gates.on_malloc, CORRAL_GATE_SAFE, __ATOMIC_RELAXED);
    __atomic_store_n(&_corral_gates.on_calloc, CORRAL_GATE_SAFE, __ATOMIC_RELAXED);
    __atomic_store_n(&_corral_gates.on_realloc, CORRAL_GATE_SAFE, __ATOMIC_RELAXED);   /* of NULL */
    __atomic_store_n(&_corral_gates.on_new, CORRAL_GATE_SAFE, __ATOMIC_RELAXED);
  }
  if (!_corral_modes.track && _corral_options.random_pools > 0) {
    __atomic_store_n(&_corral_gates.on_malloc, CORRAL_GATE_RANDOM, __ATOMIC_RELAXED);
    __atomic_store_n(&_corral_gates.on_calloc, CORRAL_GATE_RANDOM, __ATOMIC_RELAXED);
    __atomic_store_n(&_corral_gates.on_new, CORRAL_GATE_RANDOM, __ATOMIC_RELAXED);
  }
  initialising = 0;
  atomic_store(&_corral_state, CORRAL_STATE_READY);
  return CORRAL_STATE_READY;
}

