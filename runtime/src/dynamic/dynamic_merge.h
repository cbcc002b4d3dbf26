/* Pool merging of dynamic mode: union-find over context ids plus the
 * storage-shape-graph evidence that decides merges (DPA's affinity types I
 * and II; the rules are in docs/dynamic.md, "Merging").
 *
 * Pure logic over caller-provided memory: no malloc, no globals, no output,
 * so the native driver runtime/tests/dyn_unit.c can feed it synthetic edges.
 * Writers (observe, union) must be serialised by the caller; _corral_dynm_find
 * may run concurrently with them (parents change by single atomic stores and
 * every chain still ends at a root).
 */
#ifndef CORRAL_DYNAMIC_MERGE_H
#define CORRAL_DYNAMIC_MERGE_H

#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define DYNM_SIZE_MIXED UINT32_MAX   /* a pool whose objects differ in size */

/* An SSG edge seen this many times links two pools (type I); a field must
 * point into each of two pools at least DYNM_EVIDENCE/2 times, and
 * DYNM_EVIDENCE times together, to join them (type II). */
#define DYNM_EVIDENCE 4

typedef struct dynm_slot_s {
  uint64_t key;                 /* 0 = empty */
  uint32_t dst[2];              /* type II: the first two pools the field points into */
  uint32_t count[2];            /* type I uses count[0] only */
} corral_dynm_slot_t;

/* An evidence table: open addressing, used under the caller's lock only.
 * It starts at a 64th of its largest size and grows fourfold, rehashed,
 * once half full: keys hash all over a table, and each page a sampled
 * program reaches is a fault (xmllint's query: 157 of the run's samples
 * were the merge tables' first touches, with 16,384 slots each from the
 * start). */
typedef struct dynm_evidence_s {
  corral_dynm_slot_t *table;
  uint32_t slots, count;
  corral_dynm_slot_t *next;            /* where the next larger table goes */
} corral_dynm_evidence_t;

typedef struct dynm_s {
  /* [contexts]: union-find parent + 1, 0 for a root, so that the zeroed
   * memory it starts in is every context its own root, with no page of it
   * touched before a merge writes there. */
  uint32_t *parent;
  uint32_t *size;               /* [contexts]: object size of the set (root entry), DYNM_SIZE_MIXED, 0 = none yet */
  uint32_t contexts;            /* ids in use are < contexts */
  corral_dynm_evidence_t pairs;        /* type I evidence: unordered pool pair -> count */
  corral_dynm_evidence_t fields;       /* type II evidence: (pool, field offset) -> pools pointed to */
  uint32_t slots;               /* entries in each table at its largest, a power of two */
  uint64_t dropped;             /* observations lost to full tables */
} corral_dynm_t;

typedef struct dynm_merge_s {
  uint32_t into, from;          /* roots before the merge; `from` now points to `into` */
  int type;                     /* 1: type I (pools link), 2: type II (one field points into both) */
  uint32_t evidence;            /* observations that decided it */
} corral_dynm_merge_t;

/* Bytes of memory dynm needs for `contexts` ids and `slots` table entries. */
size_t _corral_dynm_bytes(uint32_t contexts, uint32_t slots);
/* Lay the state out in `mem` (zeroed, _corral_dynm_bytes long). */
void _corral_dynm_init(corral_dynm_t *m, void *mem, uint32_t contexts, uint32_t slots);

/* Root of context `c` (lock-free). */
uint32_t _corral_dynm_find(const corral_dynm_t *m, uint32_t c);

/* A context's objects have `size` bytes (first call fixes it; a different
 * size later makes the set mixed). Returns the set's size afterwards. */
uint32_t _corral_dynm_note_size(corral_dynm_t *m, uint32_t c, uint32_t size);

/* One sampled word: an object of context `src` holds, at byte `offset`, a
 * pointer into an object of context `dst`. Returns 1 and fills `out` when the
 * evidence now justifies a merge (already performed), else 0. */
int _corral_dynm_observe(corral_dynm_t *m, uint32_t src, uint32_t offset, uint32_t dst, corral_dynm_merge_t *out);

#pragma GCC visibility pop

#endif
