/* Site and context tables of dynamic mode; see dynamic_context.h. Pure:
 * caller-provided memory, caller-serialised writers, lock-free readers. */
#include "dynamic_context.h"

#include <string.h>

static uint32_t pow2_at_least(uint32_t n) {
  uint32_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

/* The largest tables hold max_contexts entries at 1/2 full; the first
 * ones a 128th of that (sites: 1,024 slots in 64 KiB) or a 64th (chains:
 * four bytes a slot), at least 16 slots, and each next one four times the
 * last. */
static uint32_t most_slots(uint32_t max_contexts) { return pow2_at_least(max_contexts < 8 ? 16 : max_contexts * 2); }
static uint32_t first_slots(uint32_t most, uint32_t fraction) { return most / fraction < 16 ? 16 : most / fraction; }
static uint32_t next_slots(uint32_t slots, uint32_t most) { return slots * 4 < most ? slots * 4 : most; }
#define FIRST_SITES 128
#define FIRST_CHAINS 64

/* Bytes of every table of one kind, the first to the largest. */
static size_t all_tables(uint32_t most, uint32_t fraction, size_t entry) {
  size_t bytes = 0;
  for (uint32_t n = first_slots(most, fraction);; n = next_slots(n, most)) {
    bytes += (size_t)n * entry;
    if (n == most) return bytes;
  }
}

/* A table at less than its largest size grows past an eighth full, the
 * largest one takes entries up to 3/4. A hot site whose first slot
 * another took pays a second probe on every call: at half full, 17% of
 * cppcheck's 359 sites did, and its run took 16.5 M more instructions
 * (+0.45%); at an eighth, 4% (docs/dynamic.md, "Table sizes"). */
static int has_room(uint32_t count, uint32_t slots, uint32_t most) {
  return slots < most ? (uint64_t)count * 8 < slots : (uint64_t)count * 4 < (uint64_t)slots * 3;
}

static uint32_t log2_of(uint32_t slots) { return (uint32_t)__builtin_ctz(slots); }

size_t _corral_dync_bytes(uint32_t max_contexts) {
  uint32_t most = most_slots(max_contexts);
  return DYNC_TABLE_BITS + 1 + all_tables(most, FIRST_SITES, sizeof(corral_dync_site_t)) +
         all_tables(most, FIRST_CHAINS, sizeof(uint32_t)) + (size_t)max_contexts * sizeof(corral_dync_chain_t);
}

void _corral_dync_init(corral_dync_t *t, void *mem, uint32_t max_contexts) {
  memset(t, 0, sizeof *t);
  uint32_t most = most_slots(max_contexts);
  /* Every table's size is a multiple of 64 bytes (16 slots at least), so
   * aligning the first aligns them all. */
  char *p = (char *)(((uintptr_t)mem + DYNC_TABLE_BITS) & ~DYNC_TABLE_BITS);
  t->site_slots_most = t->chain_slots_most = most;
  uint32_t sites = first_slots(most, FIRST_SITES), chains = first_slots(most, FIRST_CHAINS);
  t->site_table = (uintptr_t)p | (64 - log2_of(sites));
  t->next_site_table = p + (size_t)sites * sizeof(corral_dync_site_t);
  p += all_tables(most, FIRST_SITES, sizeof(corral_dync_site_t));
  t->chain_table = (uintptr_t)p | log2_of(chains);
  t->next_chain_table = p + (size_t)chains * sizeof(uint32_t);
  p += all_tables(most, FIRST_CHAINS, sizeof(uint32_t));
  t->chains = (corral_dync_chain_t *)p;
  t->max_contexts = max_contexts;
}

/* An empty slot for addr in a sites' table. */
static corral_dync_site_t *empty_site(corral_dync_site_t *table, uint32_t shift, uintptr_t addr) {
  size_t at = _corral_dync_first_slot(addr, shift);
  while (table[at].addr != 0) at = (at + 1) & (UINT64_MAX >> shift);
  return &table[at];
}

/* Every entry into the next larger table, then that table published.
 * Readers may store into the old entries meanwhile (dynamic_context.h):
 * each word is read once, atomically, and a tail before its fast word, as
 * _corral_dync_set_tail clears the fast word before it names another
 * context, so that a copied tail never carries the word of the context
 * it named before. */
static void grow_sites(corral_dync_t *t) {
  uint32_t shift;
  const corral_dync_site_t *old = _corral_dync_sites(t, &shift);
  size_t slots = (size_t)1 << (64 - shift);
  uint32_t n = next_slots((uint32_t)slots, t->site_slots_most), new_shift = 64 - log2_of(n);
  corral_dync_site_t *table = (corral_dync_site_t *)t->next_site_table;
  t->next_site_table += (size_t)n * sizeof(corral_dync_site_t);
  for (size_t i = 0; i < slots; i++) {
    uintptr_t addr = __atomic_load_n(&old[i].addr, __ATOMIC_ACQUIRE);
    if (!addr) continue;
    corral_dync_site_t *s = empty_site(table, new_shift, addr);
    s->kind = old[i].kind;
    s->ctx = __atomic_load_n(&old[i].ctx, __ATOMIC_RELAXED);
    s->frame = __atomic_load_n(&old[i].frame, __ATOMIC_RELAXED);
    s->fast = __atomic_load_n(&old[i].fast, __ATOMIC_ACQUIRE);
    for (int k = 0; k < DYNC_TAILS; k++) {
      s->tail[k] = __atomic_load_n(&old[i].tail[k], __ATOMIC_ACQUIRE);
      s->tail_fast[k] = __atomic_load_n(&old[i].tail_fast[k], __ATOMIC_ACQUIRE);
    }
    s->addr = addr;
  }
  __atomic_store_n(&t->site_table, (uintptr_t)table | new_shift, __ATOMIC_RELEASE);
  t->grown++;
}

corral_dync_site_t *_corral_dync_add_site(corral_dync_t *t, uintptr_t addr, uint32_t kind) {
  corral_dync_site_t *known = (corral_dync_site_t *)_corral_dync_site(t, addr);
  if (known) return known;
  uint32_t shift;
  _corral_dync_sites(t, &shift);
  uint32_t slots = (uint32_t)1 << (64 - shift);
  if (!has_room(t->site_count, slots, t->site_slots_most)) {
    if (slots == t->site_slots_most) {
      t->full++;
      return NULL;
    }
    grow_sites(t);
  }
  corral_dync_site_t *table = _corral_dync_sites(t, &shift);
  corral_dync_site_t *s = empty_site(table, shift, addr);
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

/* The chain index now, and its slots. */
static uint32_t *chain_index(const corral_dync_t *t, uint32_t *slots) {
  uintptr_t w = __atomic_load_n(&t->chain_table, __ATOMIC_ACQUIRE);
  *slots = (uint32_t)1 << (w & DYNC_TABLE_BITS);
  return (uint32_t *)(w & ~DYNC_TABLE_BITS);
}

uint32_t _corral_dync_find_chain(const corral_dync_t *t, const corral_dync_chain_t *chain) {
  uint32_t slots;
  const uint32_t *index = chain_index(t, &slots);
  uint32_t mask = slots - 1;
  uint32_t at = chain_hash(chain) & mask;
  for (uint32_t i = 0; i <= mask; i++, at = (at + 1) & mask) {
    uint32_t v = __atomic_load_n(&index[at], __ATOMIC_ACQUIRE);
    if (v == 0) return DYNC_NONE;
    if (chain_equal(&t->chains[v - 1], chain)) return v - 1;
  }
  return DYNC_NONE;
}

static void index_chain(uint32_t *index, uint32_t mask, const corral_dync_chain_t *chain, uint32_t id) {
  uint32_t at = chain_hash(chain) & mask;
  while (index[at] != 0) at = (at + 1) & mask;
  __atomic_store_n(&index[at], id + 1, __ATOMIC_RELEASE);
}

/* Every context into the next larger index, then that index published. A
 * chain never changes once interned, so nothing races with the copy. */
static void grow_chains(corral_dync_t *t, uint32_t slots) {
  uint32_t n = next_slots(slots, t->chain_slots_most);
  uint32_t *index = (uint32_t *)t->next_chain_table;
  t->next_chain_table += (size_t)n * sizeof(uint32_t);
  for (uint32_t id = 0; id < t->context_count; id++) index_chain(index, n - 1, &t->chains[id], id);
  __atomic_store_n(&t->chain_table, (uintptr_t)index | log2_of(n), __ATOMIC_RELEASE);
  t->grown++;
}

uint32_t _corral_dync_intern(corral_dync_t *t, const corral_dync_chain_t *chain, int *created) {
  *created = 0;
  uint32_t id = _corral_dync_find_chain(t, chain);
  if (id != DYNC_NONE) return id;
  uint32_t slots;
  chain_index(t, &slots);
  int room = has_room(t->context_count, slots, t->chain_slots_most);
  if (t->context_count >= t->max_contexts || (!room && slots == t->chain_slots_most)) {
    t->full++;
    return DYNC_NONE;
  }
  if (!room) grow_chains(t, slots);
  uint32_t *index = chain_index(t, &slots);
  id = t->context_count;
  t->chains[id] = *chain;
  index_chain(index, slots - 1, chain, id);
  __atomic_store_n(&t->context_count, id + 1, __ATOMIC_RELEASE);
  *created = 1;
  return id;
}
