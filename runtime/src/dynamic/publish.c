/* Dynamic mode's settled decisions, written: what the full way publishes
 * for the settled ways (settled.h) to take without it. A settled site of
 * its own gets its fast word, a context of one wrapper frame gets the
 * tail word of its caller's site, and a settled pooled site whose call is
 * a direct `call rel32` to malloc, calloc or operator new (or its nothrow
 * form) is pointed at a prepared slot stub (stubs.h), which passes the
 * slot's number to the entry's slot way. The way reads the decision from
 * the slot's word:
 *   size (32 bits, 0 = any) << 32 | pool + 1 (0 = the allocator underneath)
 * and skips the site lookup of the fast way. Words change only under the
 * lock: when a context's pool changes other than by its own full way (a
 * merge, a pool given back) the epoch is bumped, which makes every fast
 * word stale, and every slotted context's word is written again; a context
 * gone mixed gets size 0. */
#include "publish.h"

#include "dynamic.h"
#include "dynamic_context.h"
#include "dynamic_merge.h"
#include "dynamic_state.h"
#include "internal.h"
#include "settled.h"
#include "stubs.h"

static void bump_epoch(void) {
  uint32_t e = (__atomic_load_n(&_corral_dyn_settled.epoch, __ATOMIC_RELAXED) + 1) & CORRAL_DYN_EPOCH_MASK;
  __atomic_store_n(&_corral_dyn_settled.epoch, e ? e : 1, __ATOMIC_RELEASE);
}

static uint64_t slot_word(uint32_t id) {
  int g = _corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, id)].group;
  uint32_t size = __atomic_load_n(&_corral_dyn.ctx[id].size, __ATOMIC_RELAXED);
  if (size == DYNM_SIZE_MIXED) size = 0;
  return g < 0 ? 0 : (uint64_t)size << 32 | ((uint64_t)g * CORRAL_SIZE_CLASSES + 1);
}

/* Under the lock: every slotted context's word, after a pool changed. */
static void refresh_slots(void) {
  DYN_ASSERT_LOCKED();
  for (unsigned i = 0; i < _corral_dyn.slotted_count; i++) {
    uint32_t id = _corral_dyn.slotted[i];
    __atomic_store_n(&_corral_dyn_slots[_corral_dyn.ctx[id].slot - 1], slot_word(id), __ATOMIC_RELEASE);
  }
}

/* Under the lock, when a context's pool changed other than by its own full
 * way (a merge, a pool given back): every site's fast word goes stale and
 * every slot's word is written again. */
void _corral_dyn_pools_changed(void) {
  bump_epoch();
  refresh_slots();
}

uintptr_t _corral_dyn_own_call(uint32_t id) {
  const corral_dync_chain_t *chain = &_corral_dyn_settled.table.chains[id];
  if (chain->depth != 1) return 0;
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, chain->frames[0]);
  if (!s || s->kind == DYNC_SITE_WRAPPER || __atomic_load_n(&s->ctx, __ATOMIC_RELAXED) != id) return 0;
  return chain->frames[0];
}

void _corral_dyn_point_at_safe_slot(uint32_t id, unsigned group) {
  if (!_corral_dyn.safe_slots) return;
  _corral_dyn_lock();
  uintptr_t call = _corral_dyn_own_call(id);
  unsigned k;
  corral_stub_refusal_t r = call ? _corral_point_at_slot(call, (uint64_t)group * CORRAL_SIZE_CLASSES, &k) : CORRAL_STUB_OK;
  if (r != CORRAL_STUB_OK)
    _corral_note(2, "safe mode: site %#lx keeps its lookup (%s)", (unsigned long)call, _corral_stub_refusal_text(r));
  _corral_dyn_unlock();
}

/* A settled pooled context whose frame 0 is its own site s: its call to
 * the slot way, once; later, its word when its size went mixed. */
static void settle_slot(const corral_dync_site_t *s, uint32_t id, dyn_ctx_t *c) {
  uint32_t slot = __atomic_load_n(&c->slot, __ATOMIC_RELAXED);
  if (slot == DYN_SLOT_REFUSED || !_corral_options.stubs) return;
  if (slot && __atomic_load_n(&_corral_dyn_slots[slot - 1], __ATOMIC_RELAXED) == slot_word(id)) return;
  _corral_dyn_lock();
  if (c->slot == 0) {
    unsigned k;
    corral_stub_refusal_t r = _corral_dyn.slotted_count < CORRAL_DYN_SLOTS && _corral_dyn_settled.table.chains[id].depth == 1
                                  ? _corral_point_at_slot(s->addr, slot_word(id), &k)
                                  : CORRAL_STUB_OUT_OF_REACH;
    if (r == CORRAL_STUB_OK) {
      __atomic_store_n(&c->slot, k + 1, __ATOMIC_RELAXED);
      _corral_dyn.slotted[_corral_dyn.slotted_count++] = id;
      _corral_dyn.calls_to_pool++;
    } else {
      __atomic_store_n(&c->slot, DYN_SLOT_REFUSED, __ATOMIC_RELAXED);
      _corral_note(2, "dynamic: pooled site %#lx keeps its lookup (%s)", (unsigned long)s->addr,
                   _corral_stub_refusal_text(r));
    }
  } else if (c->slot != DYN_SLOT_REFUSED) {
    __atomic_store_n(&_corral_dyn_slots[c->slot - 1], slot_word(id), __ATOMIC_RELEASE);
  }
  _corral_dyn_unlock();
}

/* A context's settled decision as a fast word: see settled.h. */
static uint64_t fast_word(uint32_t epoch, int g, const dyn_ctx_t *c) {
  /* A word names a pool that exists, under an epoch that can hold. */
  CORRAL_ASSERT(epoch != 0 && epoch <= CORRAL_DYN_EPOCH_MASK);
  CORRAL_ASSERT(g < (int)__atomic_load_n(&_corral_dyn.pools, __ATOMIC_ACQUIRE));
  uint32_t size = __atomic_load_n(&c->size, __ATOMIC_RELAXED);
  if (size == DYNM_SIZE_MIXED) size = 0;
  if (size > CORRAL_DYN_SIZE_MAX) return 0;
  uint64_t pool = g < 0 ? 0 : (uint64_t)g * CORRAL_SIZE_CLASSES + 1;
  return (uint64_t)epoch << 40 | (uint64_t)size << 16 | pool;
}

/* A context through wrappers (frame 0 in a wrapper, its last frame not):
 * its decision goes to the last frame's site, next to the tail that names
 * it, while that tail still does. Another thread may name another context
 * there in between, and that context may then take this one's decision
 * until the epoch changes: a pool (or none) it was not meant for, never
 * wrong for the program. */
static void publish_tail(const corral_dync_site_t *s0, uint32_t id, uint32_t epoch, int g, const dyn_ctx_t *c) {
  const corral_dync_chain_t *chain = &_corral_dyn_settled.table.chains[id];
  if (chain->depth < 2 || chain->wrapped || chain->frames[0] != s0->addr) return;
  uint32_t last = chain->depth - 1;
  corral_dync_site_t *top = (corral_dync_site_t *)_corral_dync_site(&_corral_dyn_settled.table, chain->frames[last]);
  if (!top || top->kind != DYNC_SITE_PLAIN) return;
  /* The frames below it hashed as the walk hashes them (context_lookup.c). */
  uint64_t below = _corral_dync_below(chain->frames[0]);
  for (uint32_t i = 1; i < last; i++) below = _corral_dync_below_then(below, chain->frames[i]);
  uint32_t named;
  int k = _corral_dync_tail(top, below, &named);
  if (k < 0 || named != id) return;
  uint64_t word = fast_word(epoch, g, c);
  if (word && __atomic_load_n(&top->tail_fast[k], __ATOMIC_RELAXED) != word)
    __atomic_store_n(&top->tail_fast[k], word, __ATOMIC_RELEASE);
}

/* The decision of the full way, for the next allocation at the same site. */
void _corral_dyn_publish_fast(const corral_dync_site_t *s, uint32_t id, uint32_t epoch, int g, dyn_ctx_t *c) {
  if (!s) return;
  if (s->kind == DYNC_SITE_WRAPPER) {
    publish_tail(s, id, epoch, g, c);
    return;
  }
  if (__atomic_load_n(&s->ctx, __ATOMIC_RELAXED) != id) return;     /* not yet bound */
  uint64_t word = fast_word(epoch, g, c);
  if (!word) return;
  __atomic_store_n(&((corral_dync_site_t *)s)->fast, word, __ATOMIC_RELEASE);
  if (g >= 0) settle_slot(s, id, c);
}
