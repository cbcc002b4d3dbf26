/* Dynamic mode's full way: the decision for one small allocation that no
 * settled way took (_corral_dyn_identify). It finds the context, notes the
 * sizes it asks for, counts its allocations until min_objects and then
 * creates its pool, schedules the samples of a pooled context (sampling.h
 * says how often; sampling.c takes them), and publishes a settled decision
 * for the settled ways to take next time (publish.c). Every allocation that
 * dynamic mode has not settled runs through here, so what it takes on the
 * way is inline: the context lookup from context_lookup.h, and pool
 * creation, size changes and the sample schedule as static functions of
 * this file, which the compiler inlines. */
#include <stddef.h>
#include <stdint.h>

#include "context_lookup.h"
#include "dynamic.h"
#include "dynamic_context.h"
#include "dynamic_merge.h"
#include "dynamic_state.h"
#include "internal.h"
#include "publish.h"
#include "sampling.h"
#include "settled.h"

static int create_pool(uint32_t id) {
  dyn_ctx_t *c = &_corral_dyn.ctx[id];
  _corral_dyn_lock();
  uint32_t root = _corral_dynm_find(&_corral_dyn.merge, id);
  int g = _corral_dyn.ctx[root].group;
  /* Not a pool given back while this thread counted its way here: its
   * count, read before the give-back, may have overwritten the mark that
   * says never again (the caller marks it again). */
  if (g < 0 && _corral_dyn.ctx[root].gave_back < 0) {
    if (_corral_dyn.pools < DYN_MAX_POOLS) {
      g = (int)_corral_dyn.pools;
      _corral_dyn.group_owner[g] = (int)root;
      _corral_dynm_note_size(&_corral_dyn.merge, root, c->size);
      c->eager_left = DYN_EAGER_SAMPLES;
      c->eager_tick = DYN_EAGER_EVERY;
      /* The pool counted before any reader can find it: a word or a group
       * read lock-free names a pool that exists. */
      __atomic_store_n(&_corral_dyn.pools, _corral_dyn.pools + 1, __ATOMIC_RELEASE);
      __atomic_store_n(&_corral_dyn.ctx[root].group, g, __ATOMIC_RELEASE);
      CORRAL_ASSERT(_corral_dyn.ctx[_corral_dyn.group_owner[g]].group == g && g < DYN_MAX_POOLS);
    } else {
      _corral_dyn.pools_refused++;
    }
  }
  _corral_dyn_unlock();
  return g;
}

static void size_changed(dyn_ctx_t *c, uint32_t id, uint32_t size) {
  uint32_t now = c->size == 0 ? size : DYNM_SIZE_MIXED;
  __atomic_store_n(&c->size, now, __ATOMIC_RELAXED);
  if (now == DYNM_SIZE_MIXED && _corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, id)].group >= 0) {
    _corral_dyn_lock();
    _corral_dynm_note_size(&_corral_dyn.merge, id, DYNM_SIZE_MIXED);
    _corral_dyn_unlock();
  }
}

static __thread uint64_t sample_rng;
static uint64_t threads_seeded;

/* A thread's first sampling state: from the clock, or from CORRAL_DYN_SEED
 * and the order in which threads first sample. */
static uint64_t first_state(void) {
  uint64_t seed = _corral_options.dyn_seed;
  if (seed == 0) return _corral_rdtsc() | 1;
  uint64_t k = __atomic_fetch_add(&threads_seeded, 1, __ATOMIC_RELAXED);
  return (seed + k) * 0x9e3779b97f4a7c15ull | 1;
}

/* Sampling intervals are random around their mean: a fixed stride would
 * alias with a program's allocation pattern (a loop that allocates a node
 * and its payload alternately would only ever show one kind of node). */
static inline uint32_t next_interval(uint32_t mean) {
  uint64_t x = sample_rng;
  if (CORRAL_UNLIKELY(!x)) x = first_state();
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  sample_rng = x;
  return 1 + (uint32_t)((x >> 33) % (2 * mean - 1));
}

/* A pooled allocation of context `id` on the full way: schedules the
 * sample of its pointer when one is due. */
static void maybe_sample(dyn_ctx_t *c, uint32_t id, size_t size) {
  /* Racy on purpose (no atomic read-modify-write on the allocation path):
   * each field is read once, so two threads can at worst take one sample
   * too many or too few, never wrap a count around. */
  uint32_t left = __atomic_load_n(&c->eager_left, __ATOMIC_RELAXED);
  if (CORRAL_UNLIKELY(left != 0)) {
    uint32_t tick = __atomic_load_n(&c->eager_tick, __ATOMIC_RELAXED);
    if (tick > 1) {
      __atomic_store_n(&c->eager_tick, tick - 1, __ATOMIC_RELAXED);
      return;
    }
    __atomic_store_n(&c->eager_tick, next_interval(DYN_EAGER_EVERY), __ATOMIC_RELAXED);
    __atomic_store_n(&c->eager_left, left - 1, __ATOMIC_RELAXED);
  } else if (--_corral_dyn_countdown) {
    return;
  } else {
    _corral_dyn_countdown = next_interval(DYN_STEADY_EVERY);
    _corral_dyn_steady_given += _corral_dyn_countdown;
  }
  _corral_dyn_sample_ctx = id;
  _corral_dyn_sample_size = (uint32_t)size;
  _corral_dyn_sample_pending = 1;
}

int _corral_dyn_identify(void *ret0, void *fp0, size_t size) {
  if (size > _corral_dyn_settled.max_size || CORRAL_UNLIKELY(_corral_dyn.backed_off)) return -1;
  uint32_t epoch = __atomic_load_n(&_corral_dyn_settled.epoch, __ATOMIC_ACQUIRE);   /* before anything it decides from */
  uintptr_t r0 = (uintptr_t)ret0;
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, r0);
  uint32_t id = _corral_dyn_context_at(s, r0, fp0);
  if (CORRAL_UNLIKELY(id == DYNC_NONE)) return -1;   /* tables full: base allocator */
  dyn_ctx_t *c = &_corral_dyn.ctx[id];
  uint32_t known = __atomic_load_n(&c->size, __ATOMIC_RELAXED);
  if (CORRAL_UNLIKELY(known != size && known != DYNM_SIZE_MIXED)) size_changed(c, id, (uint32_t)size);
  uint64_t bit = _corral_dyn_size_bit(size);
  if (CORRAL_UNLIKELY(!(__atomic_load_n(&c->sizes_seen, __ATOMIC_RELAXED) & bit)))
    __atomic_fetch_or(&c->sizes_seen, bit, __ATOMIC_RELAXED);
  dyn_ctx_t *root = &_corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, id)];
  int g = __atomic_load_n(&root->group, __ATOMIC_ACQUIRE);
  if (CORRAL_UNLIKELY(g < 0)) {
    uint32_t n = __atomic_load_n(&c->allocs, __ATOMIC_RELAXED);
    if (n == UINT32_MAX) {               /* given back, or qualified when no group id was left */
      _corral_dyn_publish_fast(s, id, epoch, -1, c);
      /* Counted as the settled ways count their forwards: while statistics
       * send every request here, dynamic mode steps aside all the same. */
      int was = __atomic_load_n(&root->gave_back, __ATOMIC_RELAXED);
      _corral_dyn_forwarded(was >= 0 ? &_corral_dyn.forwards_by_size[was][__builtin_ctzll(bit)] : NULL);
      return -1;
    }
    __atomic_store_n(&c->allocs, ++n, __ATOMIC_RELAXED);
    if (n < _corral_dyn.min_objects) return -1;
    CORRAL_WIDEN();       /* another thread may make this pool and give it back meanwhile */
    g = create_pool(id);
    if (g < 0) {
      __atomic_store_n(&c->allocs, UINT32_MAX, __ATOMIC_RELAXED);
      return -1;
    }
  }
  CORRAL_ASSERT(g < (int)__atomic_load_n(&_corral_dyn.pools, __ATOMIC_ACQUIRE));
  maybe_sample(c, id, size);
  if (__atomic_load_n(&c->eager_left, __ATOMIC_RELAXED) == 0) _corral_dyn_publish_fast(s, id, epoch, g, c);
  return g;
}
