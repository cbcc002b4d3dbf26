/* Union-find and storage-shape-graph evidence for dynamic mode's merges.
 * Pure logic; see dynamic_merge.h and docs/dynamic.md ("Merging"). */
#include "dynamic_merge.h"

#include <string.h>

/* The first table's slots: a 64th of the largest, at least 16. */
static uint32_t first_slots(uint32_t slots) { return slots / 64 < 16 ? (slots < 16 ? slots : 16) : slots / 64; }
static uint32_t next_slots(uint32_t n, uint32_t slots) { return n * 4 < slots ? n * 4 : slots; }

/* Slots of every table one kind of evidence may use, the first to the largest. */
static size_t all_slots(uint32_t slots) {
  size_t total = 0;
  for (uint32_t n = first_slots(slots);; n = next_slots(n, slots)) {
    total += n;
    if (n == slots) return total;
  }
}

size_t _corral_dynm_bytes(uint32_t contexts, uint32_t slots) {
  return 2 * (size_t)contexts * sizeof(uint32_t) + 2 * all_slots(slots) * sizeof(corral_dynm_slot_t);
}

static char *evidence_init(corral_dynm_evidence_t *e, char *p, uint32_t slots) {
  e->table = (corral_dynm_slot_t *)p;
  e->slots = first_slots(slots);
  e->next = e->table + e->slots;
  return p + all_slots(slots) * sizeof(corral_dynm_slot_t);
}

void _corral_dynm_init(corral_dynm_t *m, void *mem, uint32_t contexts, uint32_t slots) {
  memset(m, 0, sizeof *m);
  char *p = mem;
  p = evidence_init(&m->pairs, p, slots);
  p = evidence_init(&m->fields, p, slots);
  m->parent = (uint32_t *)p;    p += (size_t)contexts * sizeof(uint32_t);
  m->size = (uint32_t *)p;
  m->contexts = contexts;
  m->slots = slots;
}

/* ---------------------------------------------------------------------------
   Union-find
--------------------------------------------------------------------------- */

uint32_t _corral_dynm_find(const corral_dynm_t *m, uint32_t c) {
  /* No path compression: readers run concurrently with merges, and merge
   * chains stay a few links long (a merge always hangs a root under a root). */
  for (;;) {
    uint32_t p = __atomic_load_n(&m->parent[c], __ATOMIC_ACQUIRE);
    if (p == 0) return c;
    c = p - 1;
  }
}

static void unite(corral_dynm_t *m, uint32_t into, uint32_t from) {
  if (m->size[into] != m->size[from]) m->size[into] = DYNM_SIZE_MIXED;
  __atomic_store_n(&m->parent[from], into + 1, __ATOMIC_RELEASE);
}

uint32_t _corral_dynm_note_size(corral_dynm_t *m, uint32_t c, uint32_t size) {
  uint32_t r = _corral_dynm_find(m, c);
  if (m->size[r] == 0) m->size[r] = size;
  else if (m->size[r] != size) m->size[r] = DYNM_SIZE_MIXED;
  return m->size[r];
}

/* Two pools can merge when both hold objects of one and the same size:
 * without types, equal size stands in for "same type" (DPA, Sec. 3.2.2). */
static int same_shape(const corral_dynm_t *m, uint32_t a, uint32_t b) {
  return a != b && m->size[a] != 0 && m->size[a] != DYNM_SIZE_MIXED && m->size[a] == m->size[b];
}

/* ---------------------------------------------------------------------------
   Evidence tables: open addressing, never deleted (stale keys of merged-away
   roots simply stop being looked up)
--------------------------------------------------------------------------- */

/* Where `key` is in one table, or the empty slot it takes; NULL after 64
 * probes. */
static corral_dynm_slot_t *probe(corral_dynm_slot_t *table, uint32_t slots, uint64_t key) {
  uint64_t h = key * 0x9e3779b97f4a7c15ull;
  uint32_t mask = slots - 1;
  for (uint32_t i = 0, at = (uint32_t)(h >> 32) & mask; i < 64; i++, at = (at + 1) & mask)
    if (table[at].key == key || table[at].key == 0) return &table[at];
  return NULL;
}

/* Every slot into the next larger table. */
static void grow(corral_dynm_evidence_t *e, uint32_t largest) {
  uint32_t n = next_slots(e->slots, largest);
  corral_dynm_slot_t *table = e->next;
  e->count = 0;
  for (uint32_t i = 0; i < e->slots; i++) {
    if (!e->table[i].key) continue;
    corral_dynm_slot_t *s = probe(table, n, e->table[i].key);
    if (s) {
      *s = e->table[i];
      e->count++;
    }
  }
  e->table = table;
  e->slots = n;
  e->next = table + n;
}

static corral_dynm_slot_t *slot_for(corral_dynm_t *m, corral_dynm_evidence_t *e, uint64_t key) {
  corral_dynm_slot_t *s = probe(e->table, e->slots, key);
  if (s && s->key == key) return s;
  if (e->slots < m->slots && (e->count + 1) * 2 > e->slots) {
    grow(e, m->slots);
    s = probe(e->table, e->slots, key);
  }
  if (!s) {
    m->dropped++;
    return NULL;
  }
  s->key = key;
  e->count++;
  return s;
}

static int merge(corral_dynm_t *m, uint32_t a, uint32_t b, int type, uint32_t evidence, corral_dynm_merge_t *out) {
  /* The older context (smaller id) keeps its pool: it has the most objects
   * in it already, and later allocations of both join them. */
  uint32_t into = a < b ? a : b, from = a < b ? b : a;
  unite(m, into, from);
  out->into = into;
  out->from = from;
  out->type = type;
  out->evidence = evidence;
  return 1;
}

static int observe_link(corral_dynm_t *m, uint32_t a, uint32_t b, corral_dynm_merge_t *out) {
  uint32_t lo = a < b ? a : b, hi = a < b ? b : a;
  corral_dynm_slot_t *s = slot_for(m, &m->pairs, ((uint64_t)lo << 32 | hi) + 1);
  if (!s) return 0;
  if (++s->count[0] < DYNM_EVIDENCE) return 0;
  return merge(m, a, b, 1, s->count[0], out);
}

static int observe_field(corral_dynm_t *m, uint32_t src, uint32_t offset, uint32_t dst, corral_dynm_merge_t *out) {
  corral_dynm_slot_t *s = slot_for(m, &m->fields, ((uint64_t)src << 32 | offset) + 1);
  if (!s) return 0;
  /* Slots may name pools that were merged since: fold them first. */
  for (int k = 0; k < 2; k++)
    if (s->count[k]) s->dst[k] = _corral_dynm_find(m, s->dst[k]);
  if (s->count[1] && s->dst[0] == s->dst[1]) {
    s->count[0] += s->count[1];
    s->count[1] = 0;
  }
  int k;
  if (s->count[0] && s->dst[0] == dst) k = 0;
  else if (s->count[1] && s->dst[1] == dst) k = 1;
  else if (!s->count[0]) k = 0;
  else if (!s->count[1]) k = 1;
  else return 0;                /* a third pool behind one field: wait for the first two to settle */
  s->dst[k] = dst;
  s->count[k]++;
  uint32_t both = s->count[0] + s->count[1];
  if (!s->count[1] || s->count[0] < DYNM_EVIDENCE / 2 || s->count[1] < DYNM_EVIDENCE / 2 ||
      both < DYNM_EVIDENCE || !same_shape(m, s->dst[0], s->dst[1]))
    return 0;
  int merged = merge(m, s->dst[0], s->dst[1], 2, both, out);
  s->dst[1] = s->dst[0] = out->into;
  s->count[0] = both;
  s->count[1] = 0;
  return merged;
}

int _corral_dynm_observe(corral_dynm_t *m, uint32_t src, uint32_t offset, uint32_t dst, corral_dynm_merge_t *out) {
  if (src >= m->contexts || dst >= m->contexts) return 0;
  src = _corral_dynm_find(m, src);
  dst = _corral_dynm_find(m, dst);
  if (src != dst && same_shape(m, src, dst) && observe_link(m, src, dst, out)) return 1;
  return observe_field(m, src, offset, dst, out);
}
