/* The ways past an entry point's gate for a small request, shared by malloc
 * (malloc.c) and the unaligned operator new and new[] (new_ways.c): the
 * direct table's probe of frame 0, and the decision of the stub sites noted
 * live on this thread. Before operator new had them it took the full way
 * whenever a plan had a stub site or a probed frame-0 site: Xalan-C paid
 * about 175 instructions on each of its 42 thousand stub-noted `new`s.
 *
 * Each entry point instantiates them with its own ends: `next` serves an
 * ungrouped request from the allocator underneath (operator new's never
 * returns NULL), `rest` is the entry's full way. The inline parts are
 * always inlined with constant ends, so each ends in tail calls of its own
 * entry's functions. The out-of-line steps (each entry's `at`, `stubbed`
 * and `noted`) are entered by tail calls, so that their return and frame
 * address are those of the program's call, and are written in each entry's
 * file around the bodies below. */
#ifndef CORRAL_WAYS_H
#define CORRAL_WAYS_H

#include "entry.h"
#include "stub_decide.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

typedef void *(*corral_end_fn)(size_t size);
typedef void *(*corral_at_fn)(size_t size, int g, void *ret0, void *fp0);
typedef void *(*corral_decide_fn)(size_t size, const corral_ident_tables_t *t);

/* The `at` step's g when the notes could not decide. */
#define CORRAL_UNDECIDED (-2)

/* The `at` step: group g decided (-1: ungrouped) but its pool's current
 * chunk is empty, or CORRAL_UNDECIDED. Out of line and cold, so that the
 * `stubbed` step saves no registers for it. */
static inline __attribute__((always_inline)) void *_corral_way_at(size_t size, int g, void *ret0, void *fp0,
                                                                 corral_end_fn next)
{
  if (g == CORRAL_UNDECIDED) g = _corral_identify_after_stubs(ret0, fp0);
  if (g >= 0 && g < (int)_corral_ngroups) {
    void *p = _corral_group_alloc((unsigned)g, size, 0);
    if (CORRAL_LIKELY(p != NULL)) return p;
  }
  return _corral_enomem_if_null(next(size));
}

/* The `stubbed` step: a plan that needs no walk, a frame 0 not in the
 * direct table, and a stub site noted live: the stubs decide, without the
 * way through identification's entry. ret0/fp0 are the step's own. */
static inline __attribute__((always_inline)) void *_corral_way_stubbed(size_t size, const corral_ident_tables_t *t,
                                                                      void *ret0, void *fp0, corral_end_fn next,
                                                                      corral_at_fn at)
{
  int g;
  if (CORRAL_LIKELY(_corral_stub_decide(t, (uintptr_t)fp0, &g))) {
    if (g < 0) return next(size);
    void *p = _corral_pool_pop((unsigned)g * CORRAL_SIZE_CLASSES, size);
    if (CORRAL_LIKELY(p != NULL)) return p;
  } else {
    g = CORRAL_UNDECIDED;
  }
  void *p = at(size, g, ret0, fp0);
  CORRAL_KEEP_FRAME(p);
  return p;
}

/* The `noted` step: several stub sites noted, none recursive, the gate
 * closed: the notes left behind by calls of other functions that have
 * returned are dropped here (the stubs drop those of the same function
 * themselves), so that one site found live decides as in
 * _corral_way_one_site, and several live sites none of which is in a
 * clause of more than one site decide among their one-site clauses (nested
 * clause sites of a plan's groups). `lo` is the entry's return address
 * slot (the step's frame address + 8); `stubbed` decides the rest: a
 * clause of several sites, an empty free list. */
static inline __attribute__((always_inline)) void *_corral_way_noted(size_t size, const corral_ident_tables_t *t,
                                                                    uintptr_t lo, corral_end_fn next,
                                                                    corral_decide_fn stubbed)
{
  const corral_thread_stack_t *s = &_corral_thread_stack;
  uint64_t live = _corral_stub_notes.live;
  if (lo < s->lo || lo >= s->hi) return stubbed(size, t);  /* a signal stack; bounds unknown */
  int32_t pool;
  uint64_t alive = _corral_stub_alive_solo(t, live, lo, s->hi, &pool);
  if (alive != live) _corral_stub_notes.live = alive;
  if ((alive & (alive - 1)) && (alive & t->stub_multi)) return stubbed(size, t);
  if (pool < 0) return next(size);
  void *p = _corral_pool_pop((size_t)pool, size);
  return CORRAL_LIKELY(p != NULL) ? p : stubbed(size, t);
}

/* One stub site noted live and the gate closed (so no frame 0 that
 * reaches the entry is in the direct table, and no allocation needs a
 * walk): when that site is not recursive it alone decides. Live while the
 * slot its stub saw lies at or above the entry's own return address slot
 * (`rsp`, as it was on entry: the canonical frame address less 8; always
 * inlined, __builtin_dwarf_cfa is the entry's) within the thread's stack
 * and still holds the site's return address. Dead, its note is dropped and nothing is
 * live; that is only sure while the entry runs on the thread's stack, not
 * on an alternate signal stack. 0 when this cannot tell (a recursive site,
 * the stack's bounds not known yet, a signal stack, an empty free list):
 * the `stubbed` step then decides. */
static inline __attribute__((always_inline)) int _corral_way_one_site(const corral_ident_tables_t *t, uint64_t live,
                                                                     size_t size, void **out, corral_end_fn next)
{
  uintptr_t rsp = (uintptr_t)__builtin_dwarf_cfa() - 8;
  const corral_thread_stack_t *s = &_corral_thread_stack;
  /* Also no site at all: the gate and the notes the entry read may both
   * have changed since its first test, and ctz of 0 is undefined. */
  if (CORRAL_UNLIKELY(!(live & t->stub_alone) || rsp < s->lo)) return 0;
  size_t k = (unsigned)__builtin_ctzll(live);
  uintptr_t sp = _corral_stub_notes.sp[k];
  if (sp < rsp || sp >= s->hi || *(const uintptr_t *)sp != t->stub_ret[k]) {
    if (CORRAL_UNLIKELY(rsp >= s->hi)) return 0;     /* hi is 0 until the bounds are known */
    _corral_stub_notes.live = 0;
    *out = next(size);
    return 1;
  }
  int32_t pool = t->stub_solo_pool[k];
  if (pool < 0) {
    *out = next(size);
    return 1;
  }
  *out = _corral_pool_pop((size_t)pool, size);
  return *out != NULL;
}

/* A small request past a gate that is not open and not negative: `gate`
 * and `live` as the entry read them, t the direct tables. Frame 0 is the
 * entry's own return address: always inlined, __builtin_return_address
 * reads the entry's (read in the branch that needs it, or the compiler
 * loads it on every way). With the gate closed and a stub site noted live, the
 * notes decide (one site, the `noted` step, else the `stubbed` step). With
 * the gate open to the probe, frame 0 is decided here when the direct
 * table's first probe has it: an ungrouped site goes on to the next
 * allocator, a grouped one pops its pool's current chunk. A frame 0 not in
 * the table (its slot is empty) is ungrouped at once when the plan needs no
 * walk and no stub site is live. Anything else (a collision, an empty list)
 * takes the entry's full way, which decides again from scratch. An empty
 * table has one zeroed slot (direct_mask 0), which no return address
 * matches. */
static inline __attribute__((always_inline)) void *_corral_way_gated(size_t size, uint64_t live, int64_t gate,
                                                                    const corral_ident_tables_t *t,
                                                                    corral_end_fn next, corral_end_fn rest,
                                                                    corral_decide_fn stubbed,
                                                                    corral_decide_fn noted)
{
  if (gate == CORRAL_GATE_CLOSED) {               /* a stub site is noted live */
    if (CORRAL_UNLIKELY(t == NULL)) return rest(size);
    void *p;
    if (!(live & (live - 1))) {
      if (CORRAL_LIKELY(_corral_way_one_site(t, live, size, &p, next))) return p;
    } else if (!(live & ~t->stub_alone)) {
      return noted(size, t);
    }
    return stubbed(size, t);
  }
  if (CORRAL_LIKELY(t != NULL)) {                 /* CORRAL_GATE_PROBE */
    uintptr_t ret0 = (uintptr_t)__builtin_return_address(0);
    const corral_direct_entry_t *e = _corral_direct_first(t, ret0);
    if (CORRAL_LIKELY(e->key == ret0)) {
      if (e->pool < 0) return next(size);         /* size <= max_size: errno is the next's */
      void *p = _corral_pool_pop((size_t)e->pool, size);
      if (CORRAL_LIKELY(p != NULL)) return p;
    } else if (e->key == 0 && t->no_walk) {
      if (!(live & t->stub_installed)) {
        if (CORRAL_UNLIKELY(live)) _corral_stub_notes.live = 0;   /* sites the tables no longer have */
        return next(size);
      }
      return stubbed(size, t);
    }
  }
  return rest(size);
}

/* Random pools (CORRAL_RANDOM_POOLS=N): each thread's 64-bit LCG (Knuth's
 * MMIX constants), defined in malloc.c. */
extern __thread uint64_t _corral_rng __attribute__((tls_model("initial-exec")));

/* One of the random pools, uniformly: the top bits of the LCG scaled to N
 * without a division. Two instructions to step; the low bits of an LCG are
 * poor, the top ones are what a scatter needs. */
CORRAL_INLINE unsigned _corral_random_group(void)
{
  uint64_t x = _corral_rng * 6364136223846793005ull + 1442695040888963407ull;
  _corral_rng = x;
  return (unsigned)(((x >> 32) * _corral_ngroups) >> 32);
}

/* A block of `size` bytes (below max_size) from a pool picked at random:
 * a pop, or a refill from that pool's chunks; NULL once group memory runs
 * out (the entry's full way then picks again, then forwards). The random
 * ways of malloc, calloc and operator new (CORRAL_GATE_RANDOM). */
CORRAL_INLINE void *_corral_random_block(size_t size)
{
  unsigned g = _corral_random_group();
  void *p = _corral_pool_pop((size_t)g * CORRAL_SIZE_CLASSES, size);
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_group_alloc_slow(g, size, 0);
}

/* A gate as the ways read it after the first test. */
CORRAL_INLINE int64_t gate_of(const int64_t *gate) { return __atomic_load_n(gate, __ATOMIC_RELAXED); }

/* What each entry point does with a settled decision of dynamic mode
 * (dynamic/settled.h: _corral_dyn_fast_way's or _corral_dyn_slot_way's,
 * taken in a statement of its own first: it sets the popped block p):
 * hand out the block, forward, or continue by a tail call in its full way,
 * whose return address is then still the program's call. */
CORRAL_INLINE void *malloc_by(int way, void *p, size_t size) {
  switch (way) {
  case CORRAL_DYN_POPPED: return p;
  case CORRAL_DYN_FORWARD: return _corral_next.malloc(size);       /* errno is the next's */
  default: return _corral_malloc_rest(size);
  }
}

/* calloc: a popped block is zeroed. */
CORRAL_INLINE void *calloc_by(int way, void *p, size_t n, size_t size,
                                                             size_t total) {
  switch (way) {
  case CORRAL_DYN_POPPED: return memset(p, 0, total);
  case CORRAL_DYN_FORWARD: return _corral_next.calloc(n, size);     /* errno is the next's */
  default: return _corral_calloc_rest(n, size);
  }
}

/* operator new: the block, or NULL when its full way must decide, or call
 * the new-handler or throw because the allocator underneath failed. */
CORRAL_INLINE void *new_by(int way, void *p, size_t n) {
  switch (way) {
  case CORRAL_DYN_POPPED: return p;
  case CORRAL_DYN_FORWARD: return _corral_next.malloc(n);
  default: return NULL;
  }
}

#pragma GCC visibility pop

#endif
