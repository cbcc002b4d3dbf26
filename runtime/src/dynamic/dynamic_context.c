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

static uint32_t site_slots(uint32_t max_contexts) { return pow2_at_least(max_contexts * 2); }
static uint32_t chain_slots(uint32_t max_contexts) { return pow2_at_least(max_contexts * 2); }

size_t _corral_dync_bytes(uint32_t max_contexts) {
  return (size_t)site_slots(max_contexts) * sizeof(corral_dync_site_t) +
         (size_t)chain_slots(max_contexts) * sizeof(uint32_t) +
         (size_t)max_contexts * sizeof(corral_dync_chain_t);
}

void _corral_dync_init(corral_dync_t *t, void *mem, uint32_t max_contexts) {
  memset(t, 0, sizeof *t);
  char *p = mem;
  t->site_slots = site_slots(max_contexts);
  t->site_shift = 64 - (uint32_t)__builtin_ctz(t->site_slots);
  t->sites = (corral_dync_site_t *)p;
  p += (size_t)t->site_slots * sizeof(corral_dync_site_t);
  t->chain_slots = chain_slots(max_contexts);
  t->chain_index = (uint32_t *)p;
  p += (size_t)t->chain_slots * sizeof(uint32_t);
  t->chains = (corral_dync_chain_t *)p;
  t->max_contexts = max_contexts;
}

corral_dync_site_t *_corral_dync_add_site(corral_dync_t *t, uintptr_t addr, uint32_t kind) {
  corral_dync_site_t *known = (corral_dync_site_t *)_corral_dync_site(t, addr);
  if (known) return known;
  if ((uint64_t)t->site_count * 4 >= (uint64_t)t->site_slots * 3) {
    t->full++;
    return NULL;
  }
  uint32_t mask = t->site_slots - 1;
  size_t at = _corral_dync_site_slot(t, addr);
  while (t->sites[at].addr != 0) at = (at + 1) & mask;
  corral_dync_site_t *s = &t->sites[at];
  s->kind = kind;
  s->ctx = DYNC_NONE;
  s->frame = 0;
  __atomic_store_n(&s->addr, addr, __ATOMIC_RELEASE);
  t->site_count++;
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

uint32_t _corral_dync_find_chain(const corral_dync_t *t, const corral_dync_chain_t *chain) {
  uint32_t mask = t->chain_slots - 1;
  uint32_t at = chain_hash(chain) & mask;
  for (uint32_t i = 0; i <= mask; i++, at = (at + 1) & mask) {
    uint32_t v = __atomic_load_n(&t->chain_index[at], __ATOMIC_ACQUIRE);
    if (v == 0) return DYNC_NONE;
    if (chain_equal(&t->chains[v - 1], chain)) return v - 1;
  }
  return DYNC_NONE;
}

uint32_t _corral_dync_intern(corral_dync_t *t, const corral_dync_chain_t *chain, int *created) {
  *created = 0;
  uint32_t id = _corral_dync_find_chain(t, chain);
  if (id != DYNC_NONE) return id;
  if (t->context_count >= t->max_contexts) {
    t->full++;
    return DYNC_NONE;
  }
  id = t->context_count;
  t->chains[id] = *chain;
  uint32_t mask = t->chain_slots - 1;
  uint32_t at = chain_hash(chain) & mask;
  while (t->chain_index[at] != 0) at = (at + 1) & mask;
  __atomic_store_n(&t->chain_index[at], id + 1, __ATOMIC_RELEASE);
  __atomic_store_n(&t->context_count, id + 1, __ATOMIC_RELEASE);
  *created = 1;
  return id;
}
