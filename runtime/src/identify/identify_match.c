/* The per-allocation path: direct table, then a walk that stops as soon as
 * the plan's selectors are decided. See docs/identification.md. */
#include <string.h>

#include "heap.h"
#include "dynamic.h"
#include "identify.h"
#include "identify_state.h"
#include "identify_tables.h"
#include "internal.h"
#include "replay_store.h"
#include "stub_decide.h"
#include "unwind.h"

/* Sites seen and clauses partly matched during one walk. Overflow (a walk
 * touching more than this many sites) drops the excess: such a plan would
 * be far beyond what the planner writes. */
#define WALK_SITES   64
#define WALK_CLAUSES 128

typedef struct walk_s {
  uint32_t sites[WALK_SITES];
  uint32_t clauses[WALK_CLAUSES];
  uint8_t matched[WALK_CLAUSES];
  unsigned nsites, nclauses;
  uint8_t best;                     /* rank of the first group matched so far */
} walk_t;

static __thread corral_ident_counters_t *thread_counters __attribute__((tls_model("initial-exec")));

static corral_ident_counters_t *counters(void)
{
  corral_ident_counters_t *c = thread_counters;
  if (CORRAL_UNLIKELY(c == NULL)) {
    unsigned slot = __atomic_fetch_add(&_corral_ident.counters_used, 1, __ATOMIC_RELAXED);
    if (slot >= IDENT_COUNTER_SLOTS) slot = IDENT_COUNTER_SLOTS - 1;
    c = thread_counters = &_corral_ident.counters[slot];
  }
  return c;
}

/* ---------------------------------------------------------------------------
   Direct table (frame 0 alone decides)
--------------------------------------------------------------------------- */

/* 1 with *group set when the table has frame 0. */
static inline int direct_lookup(const corral_ident_tables_t *t, uintptr_t pc, int *group)
{
  const corral_direct_entry_t *e = &t->direct[_corral_direct_find(t, pc)];
  CORRAL_ASSERT(e->key == 0 || e->key == pc);
  CORRAL_ASSERT(e->group < PLAN_MAX_GROUPS && (e->group < 0 ? e->pool < 0 : e->pool == e->group * CORRAL_SIZE_CLASSES));
  if (e->key) { *group = (int)e->group; return 1; }
  size_t lo = 0, hi = t->direct_range_count;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (t->direct_ranges[mid].lo <= pc) lo = mid + 1;
    else hi = mid;
  }
  if (lo && pc < t->direct_ranges[lo - 1].hi) { *group = t->direct_ranges[lo - 1].group; return 1; }
  return 0;
}

/* ---------------------------------------------------------------------------
   Selector matching, one frame at a time
--------------------------------------------------------------------------- */

static void count_site(const corral_ident_tables_t *t, walk_t *w, uint32_t site)
{
  for (unsigned i = 0; i < w->nsites; i++)
    if (w->sites[i] == site) return;        /* recursion: a site counts once */
  if (w->nsites == WALK_SITES) return;
  w->sites[w->nsites++] = site;
  for (uint32_t r = t->site_first[site]; r < t->site_first[site + 1]; r++) {
    uint32_t clause = t->site_clauses[r];
    unsigned i = 0;
    while (i < w->nclauses && w->clauses[i] != clause) i++;
    if (i == w->nclauses) {
      if (i == WALK_CLAUSES) continue;
      w->clauses[i] = clause;
      w->matched[i] = 0;
      w->nclauses++;
    }
    if (++w->matched[i] == t->clause_need[clause] && t->clause_rank[clause] < w->best)
      w->best = t->clause_rank[clause];
  }
}

static void visit_frame(const corral_ident_tables_t *t, walk_t *w, uintptr_t pc)
{
  size_t j = _corral_tables_segment_of(t, pc);
  if (j == (size_t)-1) return;
  for (uint32_t q = t->seg_first[j]; q < t->seg_first[j + 1]; q++) count_site(t, w, t->seg_sites[q]);
}

/* Stub sites a walk found live, noted again as their stubs would: the note
 * a deeper call of a site replaced (recursion) is back, and the next
 * allocation needs no walk. A replay of the walk notes them again too. Only
 * from walks on the thread's own stack, where stubs note. */
#define RENOTES 4
typedef struct renotes_s {
  unsigned n;
  uint8_t k[RENOTES];
  uintptr_t slot[RENOTES];
} renotes_t;

static void renote_one(unsigned k, uintptr_t slot)
{
  _corral_stub_notes.sp[k] = slot;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);      /* the slot before the bit, as a stub writes them */
  _corral_stub_notes.live |= (uint64_t)1 << k;
}

static void renote(const corral_ident_tables_t *t, uintptr_t pc, uintptr_t slot, renotes_t *r)
{
  for (uint64_t m = t->stub_installed; m; m &= m - 1) {
    unsigned k = (unsigned)__builtin_ctzll(m);
    if (t->stub_ret[k] != pc) continue;
    renote_one(k, slot);
    if (r->n < RENOTES) {
      r->k[r->n] = (uint8_t)k;
      r->slot[r->n++] = slot;
    }
  }
}

/* ---------------------------------------------------------------------------
   Replays: a walk is a function of the tables, ret0, fp0 and the stack slots
   it read. A loop that allocates through the same chain from the same stack
   depth repeats all of them, so each thread remembers recent walks (slot
   addresses and the words they held) and replays one by comparing those
   words: a few loads instead of a CFI step per frame. Any difference, even a
   saved register that did not matter, just means a fresh walk.
--------------------------------------------------------------------------- */

#define REPLAY_SETS 16           /* per thread, 4-way sets chosen by (ret0, fp0): */
#define REPLAY_WAYS 4            /* one wrapper called from one depth by several callers */

typedef struct replay_s {
  uintptr_t ret0, fp0;
  const corral_ident_tables_t *tables;
  int group;
  renotes_t renotes;
  unsigned n;
  uintptr_t at[UNWIND_TRACE_MAX], word[UNWIND_TRACE_MAX];
} replay_t;

#define REPLAY_BYTES (sizeof(replay_t) * REPLAY_SETS * REPLAY_WAYS)
/* This thread's sets: _corral_thread_replays (replay_store.h). */
static __thread unsigned replay_victim __attribute__((tls_model("initial-exec")));

static inline replay_t *replay_set(replay_t *all, uintptr_t ret0, uintptr_t fp0)
{
  return all + (((ret0 ^ (fp0 >> 4)) * 0x9E3779B97F4A7C15ull) >> 60) * REPLAY_WAYS;
}

static inline int replay(const corral_ident_tables_t *t, uintptr_t ret0, uintptr_t fp0, int *group)
{
  replay_t *all = _corral_thread_replays;
  if (!all) return 0;
  const replay_t *set = replay_set(all, ret0, fp0);
  for (unsigned w = 0; w < REPLAY_WAYS; w++) {
    const replay_t *r = &set[w];
    if (r->ret0 != ret0 || r->fp0 != fp0 || r->tables != t) continue;
    unsigned i = 0;
    while (i < r->n && *(const uintptr_t *)r->at[i] == r->word[i]) i++;
    if (i == r->n) {
      for (unsigned j = 0; j < r->renotes.n; j++) renote_one(r->renotes.k[j], r->renotes.slot[j]);
      *group = r->group;
      return 1;
    }
  }
  return 0;
}

/* An exited thread's block, before another thread takes it: no entry
 * matches a ret0 of 0, and remember() fills one whole before it sets it. */
static void forget_all(void *block)
{
  replay_t *all = block;
  for (unsigned i = 0; i < REPLAY_SETS * REPLAY_WAYS; i++) all[i].ret0 = 0;
}

/* Reads in the trace were validated against this thread's stack by the
 * walk, and a thread's stack stays mapped while it runs (a thread's block
 * starts with no walk, also one an exited thread handed back), so replaying
 * them later from the same thread cannot fault. */
static void remember(const corral_ident_tables_t *t, uintptr_t ret0, uintptr_t fp0, const corral_unwind_trace_t *trace,
                     int group, const renotes_t *renotes)
{
  if (trace->n > UNWIND_TRACE_MAX) return;
  replay_t *all = _corral_thread_replays;
  if (!all && !(all = _corral_replay_block(REPLAY_BYTES, forget_all))) return;
  replay_t *r = &replay_set(all, ret0, fp0)[replay_victim++ % REPLAY_WAYS];
  r->ret0 = 0;                     /* invalid while being filled (a signal may allocate) */
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  for (unsigned i = 0; i < trace->n; i++) {
    r->at[i] = trace->at[i];
    r->word[i] = *(const uintptr_t *)trace->at[i];
  }
  r->n = trace->n;
  r->fp0 = fp0;
  r->tables = t;
  r->group = group;
  r->renotes = *renotes;
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  r->ret0 = ret0;
}

/* The walk, out of line: its frame (the walk state and the trace) is large,
 * and saving registers for it would cost every direct hit. */
static __attribute__((noinline)) int walk_decide(const corral_ident_tables_t *t, void *ret0, void *fp0,
                                                 corral_ident_counters_t *c)
{
  int group;
  corral_unwind_stack_t stack;
  corral_unwind_frame_t f;
  int on = _corral_unwind_stack((uintptr_t)fp0, &stack);
  if (on < 0 || _corral_unwind_start(ret0, fp0, &stack, &f)) return -1;
  corral_unwind_trace_t trace;
  trace.n = 0;
  f.trace = &trace;
  c->walks++;
  const corral_module_t *module = NULL;
  walk_t w;
  renotes_t renotes;
  renotes.n = 0;
  w.nsites = w.nclauses = 0;
  w.best = NO_RANK;
  unsigned frames = 0, fp_steps = 0, cfi_steps = 0;   /* counted locally: no store per frame */
  for (;;) {
    frames++;
    visit_frame(t, &w, f.pc);
    if (t->stub_installed && on == 0) renote(t, f.pc, f.sp - 8, &renotes);
    /* Decided once the first group in plan order matched: nothing deeper can
     * beat it. Otherwise a later frame may still complete an earlier group,
     * unless the plan says the nearest match is always the answer (the
     * planner checked that on every profiled context): then the walk, and
     * the trace a replay compares, end here. */
    if (w.best != NO_RANK && (w.best == t->first_rank || t->first_match)) break;
    if ((int)frames == t->depth) break;
    int how = _corral_unwind_step_inline(t->modules, &stack, &f, &module);
    if (how == UNWIND_STOP) break;
    fp_steps += how == UNWIND_BY_FP;
    cfi_steps += how == UNWIND_BY_CFI;
  }
  CORRAL_ASSERT(frames >= 1 && (int)frames <= t->depth && t->depth <= IDENT_MAX_DEPTH);
  CORRAL_ASSERT(w.best == NO_RANK || w.best < PLAN_MAX_GROUPS);
  c->frames += frames;
  c->fp_steps += fp_steps;
  c->cfi_steps += cfi_steps;
  group = w.best == NO_RANK ? -1 : t->group_by_rank[w.best];
  /* Not from an alternate signal stack: the program may free that memory
   * while the replay set still points into it. */
  if (on == 0) remember(t, (uintptr_t)ret0, (uintptr_t)fp0, &trace, group, &renotes);
  return group;
}

/* What decides when neither frame 0 nor the stub notes do. A replay needs
 * no stack bounds: it reads only slots a walk of this thread validated,
 * and they stay mapped while the thread runs. */
static inline __attribute__((always_inline)) int replay_or_walk(const corral_ident_tables_t *t, void *ret0, void *fp0,
                                                               corral_ident_counters_t *c)
{
  int group;
  if (replay(t, (uintptr_t)ret0, (uintptr_t)fp0, &group)) {
    if (c) c->replays++;
    return group;
  }
  return walk_decide(t, ret0, fp0, c ? c : counters());
}

/* The decision; c is this thread's counters, or NULL where nothing is
 * counted (decide is inlined, so the tests of c fold away). */
static inline __attribute__((always_inline)) int decide(const corral_ident_tables_t *t, void *ret0, void *fp0,
                                                        corral_ident_counters_t *c)
{
  int group;
  if (direct_lookup(t, (uintptr_t)ret0, &group)) {
    if (c) c->direct_hits++;
    return group;
  }
  if (t->first_rank == NO_RANK) return -1;
  if (t->stub_installed && _corral_stub_decide(t, (uintptr_t)fp0, &group)) {
    CORRAL_ASSERT(group >= -1 && group < PLAN_MAX_GROUPS);
    if (c) c->stub_decisions++;
    return group;
  }
  return replay_or_walk(t, ret0, fp0, c);
}

/* ---------------------------------------------------------------------------
   Entry
--------------------------------------------------------------------------- */

/* One call in IDENT_SAMPLE_MASK + 1 is timed, out of line. */
static __attribute__((noinline)) int decide_timed(const corral_ident_tables_t *t, void *ret0, void *fp0,
                                                  corral_ident_counters_t *c)
{
  uint64_t start = _corral_rdtsc();
  int group = decide(t, ret0, fp0, c);
  uint64_t spent = _corral_rdtsc() - start;
  if (spent < IDENT_SAMPLE_OUTLIER) {     /* else preempted mid-sample: not our cost */
    c->sampled_cycles += spent;
    c->sampled++;
  }
  return group;
}

static inline __attribute__((always_inline)) int identify_with(const corral_ident_tables_t *t, void *ret0,
                                                               void *fp0)
{
  corral_ident_counters_t *c = counters();
  uint64_t n = ++c->calls;
  int group = CORRAL_UNLIKELY((n & IDENT_SAMPLE_MASK) == 0) ? decide_timed(t, ret0, fp0, c)
                                                             : decide(t, ret0, fp0, c);
  if (group >= 0) c->grouped++;
  return group;
}

int _corral_identify_after_stubs(void *ret0, void *fp0)
{
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  return t ? replay_or_walk(t, ret0, fp0, NULL) : -1;
}

/* Without statistics nothing is counted on the way to a decision: a
 * frame-0 decision is one hash probe. */
int _corral_identify(void *ret0, void *fp0, size_t size)
{
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  if (!t) return CORRAL_UNLIKELY(_corral_modes.dynamic) ? _corral_dyn_identify(ret0, fp0, size) : -1;   /* no plan */
  if (CORRAL_UNLIKELY(_corral_modes.track)) return identify_with(t, ret0, fp0);
  return decide(t, ret0, fp0, NULL);
}
