/* Site and context tables of dynamic mode; see dynamic_context.h. Pure:
 * caller-provided memory, caller-serialised writers, lock-free readers. */
#include "dynamic_context.h"

#include <string.h>

/* Tables stay at most 3/4 full so probe sequences end early at an empty slot. */
static uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

/* Far tables hold up to max_contexts entries at 1/2 full; near ones are
 * an eighth of that, at least 16 slots, and take entries only while a
 * quarter full: a hot site whose first slot another took pays a second
 * probe on every call (docs/dynamic.md, "Start-up"). */
static uint32_t far_slots(uint32_t max_contexts) { return pow2_at_least(max_contexts * 2); }
static uint32_t near_slots(uint32_t max_contexts) {
  uint32_t n = far_slots(max_contexts) / 8;
  return n < 16 ? 16 : n;
}

static int has_room(uint32_t count, uint32_t slots) { return (uint64_t)count * 4 < (uint64_t)slots * 3; }
static int near_has_room(uint32_t count, uint32_t slots) { return (uint64_t)count * 4 < (uint64_t)slots; }

size_t _corral_dync_bytes(uint32_t max_contexts) {
  return (size_t)near_slots(max_contexts) * (sizeof(corral_dync_site_t) + 2 * sizeof(uint32_t)) +
         (size_t)far_slots(max_contexts) * (sizeof(corral_dync_site_t) + sizeof(uint32_t)) +
         (size_t)max_contexts * sizeof(corral_dync_chain_t);
}

void _corral_dync_init(corral_dync_t *t, void *mem, uint32_t max_contexts) {
  memset(t, 0, sizeof *t);
  char *p = mem;
  uint32_t near = near_slots(max_contexts), far = far_slots(max_contexts);
  t->site_slots = near;
  t->site_shift = 64 - (uint32_t)__builtin_ctz(near);
  t->sites = (corral_dync_site_t *)p;
  p += (size_t)near * sizeof(corral_dync_site_t);
  t->chain_slots = 2 * near;
  t->chain_index = (uint32_t *)p;
  p += (size_t)2 * near * sizeof(uint32_t);
  t->far_site_slots = far;
  t->far_site_shift = 64 - (uint32_t)__builtin_ctz(far);
  t->far_sites = (corral_dync_site_t *)p;
  p += (size_t)far * sizeof(corral_dync_site_t);
  t->far_chain_slots = far;
  t->far_chain_index = (uint32_t *)p;
  p += (size_t)far * sizeof(uint32_t);
  t->chains = (corral_dync_chain_t *)p;
  t->max_contexts = max_contexts;
}

/* An empty slot for addr in one of the two site tables. */
static corral_dync_site_t *empty_site(corral_dync_site_t *table, uint32_t slots, uint32_t shift, uintptr_t addr) {
  size_t at = _corral_dync_first_slot(addr, shift);
  while (table[at].addr != 0) at = (at + 1) & (slots - 1);
  return &table[at];
}

corral_dync_site_t *_corral_dync_add_site(corral_dync_t *t, uintptr_t addr, uint32_t kind) {
  corral_dync_site_t *known = (corral_dync_site_t *)_corral_dync_site(t, addr);
  if (known) return known;
  int near = near_has_room(t->site_count, t->site_slots);
  if (!near && !has_room(t->far_site_count, t->far_site_slots)) {
    t->full++;
    return NULL;
  }
  corral_dync_site_t *s = near ? empty_site(t->sites, t->site_slots, t->site_shift, addr)
                               : empty_site(t->far_sites, t->far_site_slots, t->far_site_shift, addr);
  s->kind = kind;
  s->ctx = DYNC_NONE;
  s->frame = 0;
  __atomic_store_n(&s->addr, addr, __ATOMIC_RELEASE);
  /* Counted only once published: a reader that sees the far count
   * probes a table where the entry is. */
  if (near) t->site_count++;
  else __atomic_store_n(&t->far_site_count, t->far_site_count + 1, __ATOMIC_RELEASE);
  return s;
}

/* ---------------------------------------------------------------------------
   Chains
--------------------------------------------------------------------------- */

static uint32_t chain_hash(const corral_dync_chain_t *c) {
  uint64_t h = c->depth;
  for (uint32_t i = 0; i < c->depth; i++) h = (h ^ c->frames[i]) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 32);
}

static int chain_equal(const corral_dync_chain_t *a, const corral_dync_chain_t *b) {
  if (a->depth != b->depth) return 0;
  for (uint32_t i = 0; i < a->depth; i++)
    if (a->frames[i] != b->frames[i]) return 0;
  return 1;
}

/* The context of `chain` in one index of `slots` entries, or DYNC_NONE. */
static uint32_t find_in(const corral_dync_t *t, const uint32_t *index, uint32_t slots, const corral_dync_chain_t *chain) {
  uint32_t mask = slots - 1;
  uint32_t at = chain_hash(chain) & mask;
  for (uint32_t i = 0; i <= mask; i++, at = (at + 1) & mask) {
    uint32_t v = __atomic_load_n(&index[at], __ATOMIC_ACQUIRE);
    if (v == 0) return DYNC_NONE;
    if (chain_equal(&t->chains[v - 1], chain)) return v - 1;
  }
  return DYNC_NONE;
}

uint32_t _corral_dync_find_chain(const corral_dync_t *t, const corral_dync_chain_t *chain) {
  uint32_t id = find_in(t, t->chain_index, t->chain_slots, chain);
  if (id != DYNC_NONE || __atomic_load_n(&t->far_chain_count, __ATOMIC_ACQUIRE) == 0) return id;
  return find_in(t, t->far_chain_index, t->far_chain_slots, chain);
}

uint32_t _corral_dync_intern(corral_dync_t *t, const corral_dync_chain_t *chain, int *created) {
  *created = 0;
  uint32_t id = _corral_dync_find_chain(t, chain);
  if (id != DYNC_NONE) return id;
  int near = near_has_room(t->chain_count, t->chain_slots);
  if (t->context_count >= t->max_contexts || (!near && !has_room(t->far_chain_count, t->far_chain_slots))) {
    t->full++;
    return DYNC_NONE;
  }
  id = t->context_count;
  t->chains[id] = *chain;
  uint32_t *index = near ? t->chain_index : t->far_chain_index;
  uint32_t mask = (near ? t->chain_slots : t->far_chain_slots) - 1;
  uint32_t at = chain_hash(chain) & mask;
  while (index[at] != 0) at = (at + 1) & mask;
  __atomic_store_n(&index[at], id + 1, __ATOMIC_RELEASE);
  if (near) t->chain_count++;
  else __atomic_store_n(&t->far_chain_count, t->far_chain_count + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&t->context_count, id + 1, __ATOMIC_RELEASE);
  *created = 1;
  return id;
}
