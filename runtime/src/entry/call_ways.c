/* The pool ways: where the call of a grouped frame-0 site leads once
 * stubs.c has pointed it at its pool (a pool call). The stub adds the
 * group's first pool after the entry point's own arguments and jumps here,
 * so the return address is still the program's call: a request these
 * cannot serve continues, by a tail call, in the entry point's full way,
 * which decides again from scratch (and finds the site in the direct
 * table). A frame-0 site the plan lists ungrouped (`direct SITE -`) leads
 * to a none way, which hands the request to the next allocator at once. */
#include "entry.h"
#include "next.h"
#include "safe_ways.h"
#include "stubs.h"
#include "ways.h"

/* The pool and none ways serve while a plan is loaded with the direct
 * table open, and sizes up to max_size: otherwise (counting, random pools,
 * a stale plan, a large request) the full way decides and counts. */
static inline __attribute__((always_inline)) int ways_serve(size_t size)
{
  return CORRAL_LIKELY(size < __atomic_load_n(&_corral_gates.pool_below, __ATOMIC_RELAXED));
}

static inline __attribute__((always_inline)) void *pop(size_t pool, size_t size)
{
  return ways_serve(size) ? _corral_pool_pop(pool, size) : NULL;
}

void *_corral_malloc_pool(size_t size, size_t pool)
{
  void *p = pop(pool, size);
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_malloc_rest(size);
}

void *_corral_calloc_pool(size_t n, size_t size, size_t pool)
{
  size_t total;
  if (CORRAL_LIKELY(!__builtin_mul_overflow(n, size, &total))) {
    void *p = pop(pool, total);
    if (CORRAL_LIKELY(p != NULL)) return memset(p, 0, total);
  }
  return _corral_calloc_rest(n, size);
}

void *_corral_new_pool(size_t n, size_t pool)
{
  void *p = pop(pool, n);
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_new_rest(n);
}

void *_corral_new_pool_nothrow(size_t n, const void *nothrow, size_t pool)
{
  (void)nothrow;
  void *p = pop(pool, n);
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_new_rest_nothrow(n);
}

void *_corral_malloc_none(size_t size)
{
  if (ways_serve(size)) return _corral_next.malloc(size);
  return _corral_malloc_rest(size);
}

void *_corral_calloc_none(size_t n, size_t size)
{
  size_t total;
  if (!__builtin_mul_overflow(n, size, &total) && ways_serve(total)) return _corral_next.calloc(n, size);
  return _corral_calloc_rest(n, size);
}

/* new's none ways: the next allocator's own operator or its malloc, as
 * new.cc forwards (_corral_next_new); the full way above the pools' sizes. */
void *_corral_new_none(size_t n)
{
  if (CORRAL_LIKELY(ways_serve(n))) return _corral_next_new(n, _corral_next.new_object, _corral_new_rest);
  return _corral_new_rest(n);
}

void *_corral_new_none_nothrow(size_t n, const void *nothrow)
{
  if (CORRAL_LIKELY(ways_serve(n)))
    return _corral_next_new_nothrow(n, _corral_next.new_object_nothrow, nothrow, _corral_new_rest_nothrow);
  return _corral_new_rest_nothrow(n);
}

/* The slot ways (stubs.h): a pooled site's call in dynamic mode, the slot
 * after the entry point's own arguments; the decisions of malloc.c's
 * dynamic ways without the site lookup.
 * Anything they cannot serve continues in the entry point's full way,
 * which finds the site in the table. */
void *_corral_dyn_malloc_slot(size_t size, size_t slot) {
  void *p = NULL;
  int way = _corral_dyn_slot_way(size, slot, gate_of(&_corral_gates.on_malloc), &p);
  return malloc_by(way, p, size);
}

void *_corral_dyn_calloc_slot(size_t n, size_t size, size_t slot) {
  void *p = NULL;
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) return _corral_calloc_rest(n, size);
  int way = _corral_dyn_slot_way(total, slot, gate_of(&_corral_gates.on_calloc), &p);
  return calloc_by(way, p, n, size, total);
}

void *_corral_dyn_new_slot(size_t n, size_t slot) {
  void *p = NULL;
  int way = _corral_dyn_slot_way(n, slot, gate_of(&_corral_gates.on_new), &p);
  p = new_by(way, p, n);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(n);
}

void *_corral_dyn_new_slot_nothrow(size_t n, const void *nothrow, size_t slot) {
  (void)nothrow;
  void *p = NULL;
  int way = _corral_dyn_slot_way(n, slot, gate_of(&_corral_gates.on_new), &p);
  p = new_by(way, p, n);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(n);
}

/* Safe mode's slot ways (stubs.h): the call of a site of its own, its
 * group's first pool (group * CORRAL_SIZE_CLASSES) in the slot's word
 * (safe.c, which points the call at the stub when the site gets its
 * group; the product made there spares 4 instructions a call here). Safe
 * mode's pop (safe/safe_ways.h) without the entry point's gate tests and
 * the site lookup: cfrac's one allocation site, 10.9 M calls, took 85
 * instructions a call through malloc. Anything they cannot serve
 * continues in the entry point's full way, which finds the site in the
 * table. */
CORRAL_INLINE size_t safe_slot_pool(size_t slot)
{
  return (size_t)__atomic_load_n(&_corral_dyn_slots[slot], __ATOMIC_RELAXED);
}

void *_corral_safe_malloc_slot(size_t size, size_t slot) {
  void *p = _corral_safe_pop_at(size, safe_slot_pool(slot));
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_malloc_rest(size);
}

void *_corral_safe_calloc_slot(size_t n, size_t size, size_t slot) {
  size_t total;
  if (CORRAL_LIKELY(!__builtin_mul_overflow(n, size, &total))) {
    void *p = _corral_safe_pop_at(total, safe_slot_pool(slot));
    if (CORRAL_LIKELY(p != NULL)) return memset(p, 0, total);
  }
  return _corral_calloc_rest(n, size);
}

void *_corral_safe_new_slot(size_t n, size_t slot) {
  void *p = _corral_safe_pop_at(n, safe_slot_pool(slot));
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(n);
}

void *_corral_safe_new_slot_nothrow(size_t n, const void *nothrow, size_t slot) {
  (void)nothrow;
  void *p = _corral_safe_pop_at(n, safe_slot_pool(slot));
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(n);
}

const corral_call_targets_t _corral_call_targets = {
  .pool = {[CORRAL_CALLS_MALLOC] = (uintptr_t)&_corral_malloc_pool,
           [CORRAL_CALLS_CALLOC] = (uintptr_t)&_corral_calloc_pool,
           [CORRAL_CALLS_NEW] = (uintptr_t)&_corral_new_pool,
           [CORRAL_CALLS_NEW_NOTHROW] = (uintptr_t)&_corral_new_pool_nothrow},
  .none = {[CORRAL_CALLS_MALLOC] = (uintptr_t)&_corral_malloc_none,
           [CORRAL_CALLS_CALLOC] = (uintptr_t)&_corral_calloc_none,
           [CORRAL_CALLS_NEW] = (uintptr_t)&_corral_new_none,
           [CORRAL_CALLS_NEW_NOTHROW] = (uintptr_t)&_corral_new_none_nothrow},
  .slot = {[CORRAL_CALLS_MALLOC] = (uintptr_t)&_corral_dyn_malloc_slot,
           [CORRAL_CALLS_CALLOC] = (uintptr_t)&_corral_dyn_calloc_slot,
           [CORRAL_CALLS_NEW] = (uintptr_t)&_corral_dyn_new_slot,
           [CORRAL_CALLS_NEW_NOTHROW] = (uintptr_t)&_corral_dyn_new_slot_nothrow},
  .safe_slot = {[CORRAL_CALLS_MALLOC] = (uintptr_t)&_corral_safe_malloc_slot,
                [CORRAL_CALLS_CALLOC] = (uintptr_t)&_corral_safe_calloc_slot,
                [CORRAL_CALLS_NEW] = (uintptr_t)&_corral_safe_new_slot,
                [CORRAL_CALLS_NEW_NOTHROW] = (uintptr_t)&_corral_safe_new_slot_nothrow},
    .bypass = _corral_bypass_targets,
};
