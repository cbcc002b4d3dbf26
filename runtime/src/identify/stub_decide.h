/* The decision of the sites stubs noted live (stubs.h), inlined into
 * identification and into malloc's own way for plans that need no walk. */
#ifndef CORRAL_STUB_DECIDE_H
#define CORRAL_STUB_DECIDE_H

#include <stdint.h>

#include "debug.h"
#include "identify_tables.h"
#include "internal.h"
#include "stubs.h"
#include "unwind.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Whether noted site k is live: the slot its stub saw, sp, lies between lo
 * (the entry point's return address slot) and the top of the thread's
 * stack, hi, and still holds the site's return address. */
static inline __attribute__((always_inline)) int _corral_stub_live(const corral_ident_tables_t *t, unsigned k,
                                                                  uintptr_t sp, uintptr_t lo, uintptr_t hi)
{
  CORRAL_ASSERT(k < CORRAL_STUB_SITES && (!(t->stub_installed >> k & 1) || t->stub_ret[k] != 0));
  return sp >= lo && sp <= hi - 8 && *(const uintptr_t *)sp == t->stub_ret[k];
}

/* Which of the `noted` sites are live. */
static inline __attribute__((always_inline)) uint64_t _corral_stub_alive(const corral_ident_tables_t *t,
                                                                         uint64_t noted, uintptr_t lo,
                                                                         uintptr_t hi)
{
  uint64_t alive = 0;
  for (uint64_t m = noted; m; m &= m - 1) {
    unsigned k = (unsigned)__builtin_ctzll(m);
    if (_corral_stub_live(t, k, _corral_stub_notes.sp[k], lo, hi)) alive |= (uint64_t)1 << k;
  }
  return alive;
}

/* _corral_stub_alive, and in the same pass the pool (-1: none) the
 * live sites decide when none of them is in a clause of more than one site
 * (the caller checks that against stub_multi): only their own one-site
 * clauses can be complete, and of those the nearest (first_match: the
 * lowest slot, which a walk would reach first) or the first in rank order
 * wins, as in _corral_stub_decide. `noted` must hold no recursive site. */
static inline __attribute__((always_inline)) uint64_t _corral_stub_alive_solo(const corral_ident_tables_t *t,
                                                                              uint64_t noted, uintptr_t lo,
                                                                              uintptr_t hi, int32_t *pool)
{
  uint64_t alive = 0;
  uintptr_t nearest = UINTPTR_MAX;
  uint8_t best = NO_RANK;
  *pool = -1;
  for (uint64_t m = noted; m; m &= m - 1) {
    unsigned k = (unsigned)__builtin_ctzll(m);
    uintptr_t sp = _corral_stub_notes.sp[k];
    if (!_corral_stub_live(t, k, sp, lo, hi)) continue;
    alive |= (uint64_t)1 << k;
    uint8_t rank = t->stub_solo_rank[k];
    if (rank != NO_RANK && (t->first_match ? sp < nearest : rank < best)) {
      nearest = sp;
      best = rank;
      *pool = t->stub_solo_pool[k];
    }
  }
  return alive;
}

/* 1 with *group set when the noted sites decide; 0 when a walk must (a
 * clause without stubs could still match first, a site may be live above
 * its last note, or the stack's bounds are unknown: an alternate signal
 * stack). A noted site is live while the slot
 * its stub saw lies between this call's frame and the top of the thread's
 * stack and still holds the site's return address; the others are dropped
 * from the notes. Unlike a walk, a live site counts at any depth. */
static inline __attribute__((always_inline)) int _corral_stub_decide(const corral_ident_tables_t *t, uintptr_t fp0,
                                                                     int *group)
{
  corral_stub_notes_t *notes = &_corral_stub_notes;
  uint64_t noted = notes->live & t->stub_installed;
  uint8_t best = NO_RANK;
  if (noted) {
    uintptr_t hi = _corral_stack_top(fp0);
    if (CORRAL_UNLIKELY(!hi)) {
      corral_unwind_stack_t stack;
      if (_corral_unwind_stack(fp0, &stack) != 0) return 0;
      hi = stack.hi;
    }
    uint64_t dead = noted & ~_corral_stub_alive(t, noted, fp0 + 8, hi);
    /* Not an atomic and: only this thread writes its notes. A signal
     * handler's stub that notes a site between the load and the store is
     * lost, which only costs that site's liveness until its next call. */
    if (dead) __atomic_store_n(&notes->live, __atomic_load_n(&notes->live, __ATOMIC_RELAXED) & ~dead,
                               __ATOMIC_RELAXED);
    uint64_t live = noted & ~dead;
    /* A recursive site's call that returned may have replaced the note of
     * an older call of it that is still live further up. Where that could
     * complete a clause, a walk decides, and notes again the sites it
     * finds (identify_match.c). Other sites cannot be live twice. */
    uint64_t unsure = dead & t->stub_recursive;
    if (CORRAL_UNLIKELY(unsure))
      for (size_t i = 0; i < t->stub_clause_count; i++) {
        uint64_t cm = t->stub_clauses[i].mask;
        if ((cm & unsure) && ((live | unsure) & cm) == cm) return 0;
      }
    uintptr_t nearest = UINTPTR_MAX;
    /* One live site: only the clauses of it alone can be complete. */
    if (live && !(live & (live - 1))) best = t->stub_solo_rank[__builtin_ctzll(live)];
    else for (size_t i = 0; i < t->stub_clause_count && live; i++) {
      uint64_t cm = t->stub_clauses[i].mask;
      if ((live & cm) != cm) continue;
      if (!t->first_match) {                      /* rank order: the first match wins */
        best = t->stub_clauses[i].rank;
        break;
      }
      /* The nearest completed clause wins: the one whose outermost site
       * is closest to this call (a walk would complete it first). */
      uintptr_t outer = 0;
      for (uint64_t m = cm; m; m &= m - 1) {
        uintptr_t sp = notes->sp[__builtin_ctzll(m)];
        if (sp > outer) outer = sp;
      }
      if (outer < nearest) {
        nearest = outer;
        best = t->stub_clauses[i].rank;
      }
    }
  }
  if (t->walk_first_rank != NO_RANK && (t->first_match || best == NO_RANK || t->walk_first_rank < best))
    return 0;
  *group = best == NO_RANK ? -1 : t->group_by_rank[best];
  return 1;
}

#pragma GCC visibility pop

#endif
