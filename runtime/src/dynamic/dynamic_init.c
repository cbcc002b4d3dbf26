/* Dynamic mode's start: the shared state `_corral_dyn` (dynamic_state.h)
 * is defined here, and filled at start-up: the context tables and the
 * merge table mapped, the wrapper list loaded (for safe mode too, which
 * keys its pools by context), and, for dynamic mode itself, its limits
 * read from the options and the none-way stubs prepared before the mode
 * is switched on; for safe mode, its slot stubs. The fork hooks hold the
 * lock across fork, so that the child's tables are whole. */
#include <sys/mman.h>

#include "dynamic.h"

#include "dynamic_context.h"
#include "dynamic_merge.h"
#include "dynamic_state.h"
#include "heap.h"
#include "internal.h"
#include "modules.h"
#include "settled.h"
#include "stubs.h"
#include "unwind.h"
#include "wrapper_list.h"

dyn_state_t _corral_dyn;

/* The first site table and chain index (64 and 8 KiB) made resident now,
 * in one call each: a program with a dozen sites touches every page of
 * them, each first by a lookup's read (mapping the zero page) and then by
 * an insertion's store (copying it), two faults a page. A kernel before
 * 5.14 refuses MADV_POPULATE_WRITE, and the pages fault in as before. */
static void populate(uintptr_t at, size_t bytes) {
  uintptr_t lo = at & ~(uintptr_t)4095, hi = (at + bytes + 4095) & ~(uintptr_t)4095;
  madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
}

static void populate_first_tables(const corral_dync_t *t) {
  uint32_t shift;
  uintptr_t sites = (uintptr_t)_corral_dync_sites(t, &shift);
  populate(sites, ((size_t)1 << (64 - shift)) * sizeof(corral_dync_site_t));
  uintptr_t chains = __atomic_load_n(&t->chain_table, __ATOMIC_RELAXED);
  populate(chains & ~DYNC_TABLE_BITS, ((size_t)1 << (chains & DYNC_TABLE_BITS)) * sizeof(uint32_t));
}

int _corral_dyn_contexts_init(const char *who) {
  if (_corral_dyn.tables_on) return 0;
  void *tables = _corral_os_map(_corral_dync_bytes(DYN_MAX_CONTEXTS));
  void *merge = _corral_os_map(_corral_dynm_bytes(DYN_MAX_CONTEXTS, DYN_MERGE_SLOTS));
  _corral_dyn.ctx = _corral_os_map(DYN_MAX_CONTEXTS * sizeof(dyn_ctx_t));
  if (!tables || !merge || !_corral_dyn.ctx) {
    _corral_warn("%s: cannot map its tables; running ungrouped", who);
    return -1;
  }
  _corral_dync_init(&_corral_dyn_settled.table, tables, DYN_MAX_CONTEXTS);
  populate_first_tables(&_corral_dyn_settled.table);
  _corral_dynm_init(&_corral_dyn.merge, merge, DYN_MAX_CONTEXTS, DYN_MERGE_SLOTS);
  _corral_unwind_init();
  const corral_module_table_t *t = _corral_modules_current();
  if (!t) t = _corral_modules_scan();
  if (_corral_options.wrappers && *_corral_options.wrappers) _corral_dyn_load_wrappers(_corral_options.wrappers, t);
  _corral_dyn.tables_on = 1;
  return 0;
}

void _corral_dyn_init(void) {
  _corral_dyn_stats_register();
  if (!_corral_options.dynamic) return;
  _corral_dyn.min_objects = _corral_options.dyn_min_objects;
  _corral_dyn_settled.max_size = _corral_options.dyn_max_size;
  _corral_dyn_settled.epoch = 1;
  if (_corral_dyn_contexts_init("dynamic mode") != 0) return;
  if (_corral_options.stubs) _corral_none_stubs_prepare(_corral_modules_current());
  __atomic_store_n(&_corral_modes.dynamic, 1, __ATOMIC_RELEASE);
}

void _corral_dyn_prepare_safe_slots(void) {
  _corral_stubs_slots_for_safe_mode();
  _corral_none_stubs_prepare(_corral_modules_current());
  _corral_dyn.safe_slots = 1;
}

void _corral_dyn_fork_prepare(void) { if (_corral_dyn.tables_on) _corral_dyn_lock(); }
void _corral_dyn_fork_parent(void) { if (_corral_dyn.tables_on) _corral_dyn_unlock(); }
void _corral_dyn_fork_child(void) { if (_corral_dyn.tables_on) _corral_dyn_unlock(); }
