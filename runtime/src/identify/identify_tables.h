/* A parsed plan relocated against the loaded modules: the lookup tables one
 * identification reads. Built outside malloc (plan load, after dlopen) into
 * one mmap'd block, published as one pointer and never changed afterwards.
 */
#ifndef CORRAL_IDENTIFY_TABLES_H
#define CORRAL_IDENTIFY_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "modules.h"
#include "plan.h"
#include "stubs.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define NO_RANK 0xff

/* Entry points a table leaves to the direct table's probe: their gate (gates.h) stays open. */
#define CORRAL_PROBE_MALLOC 1u
#define CORRAL_PROBE_CALLOC 2u
#define CORRAL_PROBE_REALLOC 4u
#define CORRAL_PROBE_NEW 8u
#define CORRAL_PROBE_ALL 15u

/* Key, group and the group's first pool in one slot: a probe reads one
 * cache line. The slot of a key is (key * CORRAL_DIRECT_HASH >> 20) & mask,
 * then linear probing. */
#define CORRAL_DIRECT_HASH 0x9E3779B97F4A7C15ull
typedef struct direct_entry_s {
  uintptr_t key;
  int32_t group;                    /* -1: ungrouped */
  int32_t pool;                     /* group * CORRAL_SIZE_CLASSES, -1 when ungrouped */
} corral_direct_entry_t;

typedef struct direct_range_s {
  uintptr_t lo, hi;
  int16_t group;
} corral_direct_range_t;

typedef struct ident_tables_s {
  const corral_module_table_t *modules;    /* the scan these addresses come from */
  int depth;                        /* frames looked at, 1..IDENT_MAX_DEPTH */
  int first_match;                  /* the first frame completing a clause decides */

  /* direct: exact frame-0 addresses (open addressing, key 0 = empty) ... */
  corral_direct_entry_t *direct;
  size_t direct_mask;               /* slots - 1; one empty slot without entries */
  /* ... and ranges, sorted, not overlapping */
  corral_direct_range_t *direct_ranges;
  size_t direct_range_count;

  /* Clause sites. The address space is cut at every site boundary into
   * segments; segment j = [seg_lo[j], seg_lo[j+1]) lies in the sites
   * seg_sites[seg_first[j] .. seg_first[j+1]). Site s appears in clauses
   * site_clauses[site_first[s] .. site_first[s+1]). */
  uintptr_t *seg_lo;
  uint32_t *seg_first, *seg_sites;
  size_t seg_count;                 /* boundaries; segments = seg_count - 1 */
  uint32_t *site_first, *site_clauses;
  size_t site_count;

  /* Per live clause (all of its modules loaded): sites needed, group rank. */
  uint8_t *clause_need, *clause_rank;
  size_t clause_count;
  uint8_t group_by_rank[PLAN_MAX_GROUPS];
  uint8_t first_rank;               /* smallest rank of a live clause, NO_RANK if none */

  /* Stubs (stubs.h). Stub site k is the k-th distinct exact clause site of
   * the plan (file order, the first CORRAL_STUB_SITES): its return address
   * here (0 if its module is not loaded). stub_installed has bit k when the
   * call got its stub. Per clause, the mask of its sites when each has a
   * stub index (0 otherwise); the live clauses stubs decide alone, in rank
   * order; and the first rank of a live clause they cannot (NO_RANK: none,
   * so no allocation needs a walk). */
  uintptr_t stub_ret[CORRAL_STUB_SITES];
  uint64_t stub_installed;
  uint64_t stub_recursive;          /* sites whose call is to their own function */
  uint64_t stub_frame0;             /* sites left to the direct table (CORRAL_STUB_FRAME0) */
  uint64_t stub_alone;              /* installed and not recursive: malloc decides them alone */
  uint64_t stub_multi;              /* sites of a stub clause of two or more sites */
  uint64_t *clause_stub_mask;
  struct stub_clause_s { uint64_t mask; uint8_t rank; } *stub_clauses;
  size_t stub_clause_count;
  /* Per site, the first rank of the stub clauses that are that site alone
   * (NO_RANK: none): what decides when it is the one live site. */
  uint8_t stub_solo_rank[CORRAL_STUB_SITES];
  /* The same as the pool malloc pops from: the group's first pool, -1 when
   * ungrouped. */
  int32_t stub_solo_pool[CORRAL_STUB_SITES];
  uint8_t walk_first_rank;
  /* No allocation needs a walk: every live clause is decided by stubs and
   * no direct entry is a range. A frame 0 missing from the direct table
   * with no stub site noted live is then ungrouped at once. */
  uint8_t no_walk;
  uint8_t stub_reasons[CORRAL_STUB_REASONS];   /* sites per outcome, for statistics */

  /* Pool calls (stubs.h): exact direct entries per outcome, and the gates
   * (CORRAL_PROBE_*) of entry points that a site left to the probe may
   * call. */
  uint32_t pool_call_reasons[CORRAL_STUB_REASONS];
  uint8_t probe_gates;

  /* For statistics. */
  unsigned modules_matched;
  size_t bytes;
} corral_ident_tables_t;

#define IDENT_MAX_DEPTH 64

/* The first slot to probe for frame-0 address pc. */
static inline size_t _corral_direct_slot(const corral_ident_tables_t *t, uintptr_t pc)
{
  return (pc * CORRAL_DIRECT_HASH >> 20) & t->direct_mask;
}

/* The entry in pc's first slot: the entry points' one probe, which decides
 * when its key is pc (a collision or an empty slot leaves it to the rest). */
static inline const corral_direct_entry_t *_corral_direct_first(const corral_ident_tables_t *t, uintptr_t pc)
{
  return &t->direct[_corral_direct_slot(t, pc)];
}

/* The slot holding frame-0 address pc, or the empty slot where it would
 * go (the table is never full: slots >= 2 * entries, or one empty slot). */
static inline size_t _corral_direct_find(const corral_ident_tables_t *t, uintptr_t pc)
{
  size_t s = _corral_direct_slot(t, pc);
  while (t->direct[s].key && t->direct[s].key != pc) s = (s + 1) & t->direct_mask;
  return s;
}

/* The segment holding pc, or (size_t)-1 when pc is in no site. */
static inline size_t _corral_tables_segment_of(const corral_ident_tables_t *t, uintptr_t pc)
{
  size_t a = 0, b = t->seg_count;          /* first boundary > pc */
  while (a < b) {
    size_t mid = (a + b) / 2;
    if (t->seg_lo[mid] <= pc) a = mid + 1;
    else b = mid;
  }
  return a == 0 || a == t->seg_count ? (size_t)-1 : a - 1;
}

/* bias[i] of each plan module that is loaded, loaded[i] = 1; stale[i] = 1
 * for one loaded under its file name with another build-id. */
typedef struct plan_binding_s {
  uintptr_t bias[PLAN_MAX_MODULES];
  uint8_t loaded[PLAN_MAX_MODULES];
  uint8_t stale[PLAN_MAX_MODULES];
} corral_plan_binding_t;

/* Matches the plan's modules against `modules` (by build-id, else by file
 * name). Returns 0; 1 with the reason in err when a loaded module of a
 * planned file name has another build-id (stale), whose clauses and direct
 * entries are then left out while others of the plan stay; -1 with the
 * reason when that leaves the plan no clause (the plan is stale). */
int _corral_plan_bind(const corral_plan_t *plan, const corral_module_table_t *modules, corral_plan_binding_t *b,
                      char *err, size_t errlen);

/* Builds the tables (NULL with a reason in err: no memory, overlapping
 * direct ranges). */
corral_ident_tables_t *_corral_tables_build(const corral_plan_t *plan, const corral_plan_binding_t *b,
                                     const corral_module_table_t *modules, int depth, int first_match,
                                     char *err, size_t errlen);

/* After the stubs were installed (t->stub_installed set): the clauses
 * stubs decide alone, and the first rank of the others. */
void _corral_tables_stub_clauses(corral_ident_tables_t *t);

#pragma GCC visibility pop

#endif
