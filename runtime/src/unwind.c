/* Return-address walk: see unwind.h. */
#define _GNU_SOURCE
#include "unwind.h"

#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "unwind_cfi.h"

/* ---------------------------------------------------------------------------
   Stack bounds, cached per thread
--------------------------------------------------------------------------- */

enum { STACK_UNKNOWN = 0, STACK_LOOKING, STACK_KNOWN, STACK_FAILED };

static __thread struct {
  uintptr_t lo, hi;
  int state;
} thread_stack __attribute__((tls_model("initial-exec")));

int _corral_unwind_stack(uintptr_t sp, unwind_stack_t *stack)
{
  if (CORRAL_UNLIKELY(thread_stack.state != STACK_KNOWN)) {
    if (thread_stack.state != STACK_UNKNOWN) return -1;
    thread_stack.state = STACK_LOOKING;      /* the malloc calls below see this */
    pthread_attr_t attr;
    void *addr;
    size_t size;
    int ok = pthread_getattr_np(pthread_self(), &attr) == 0;
    if (ok) {
      ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
      pthread_attr_destroy(&attr);
    }
    if (!ok) { thread_stack.state = STACK_FAILED; return -1; }
    thread_stack.lo = (uintptr_t)addr;
    thread_stack.hi = (uintptr_t)addr + size;
    thread_stack.state = STACK_KNOWN;
  }
  if (sp < thread_stack.lo || sp >= thread_stack.hi) return -1;
  stack->lo = sp;
  stack->hi = thread_stack.hi;
  return 0;
}

/* A slot of `bytes` at `at` lies inside the stack and is aligned. */
static inline int on_stack(const unwind_stack_t *s, uintptr_t at, uintptr_t bytes)
{
  return at >= s->lo && at <= s->hi - bytes && (at & 7) == 0;
}

int _corral_unwind_start(void *ret0, void *fp0, const unwind_stack_t *stack, unwind_frame_t *f)
{
  uintptr_t fp = (uintptr_t)fp0;
  if (!on_stack(stack, fp, 16)) return -1;
  f->pc = (uintptr_t)ret0;
  f->sp = fp + 16;                          /* the entry point's CFA */
  f->bp = *(const uintptr_t *)fp;           /* its saved rbp: the caller's */
  return 0;
}

/* ---------------------------------------------------------------------------
   CFI rules, cached by pc
--------------------------------------------------------------------------- */

/* Direct-mapped, shared by all threads without locks. A slot is two words
 * written one after the other; the rule word repeats 16 bits of a hash of
 * the pc, so a reader that sees one thread's key with another's rule (a torn
 * pair) takes it for a miss. A rule read wrongly despite that still cannot
 * fault: every address it yields is checked against the stack. */
#define RULE_SLOTS 16384

typedef struct rule_slot_s {
  uintptr_t pc;
  uint64_t packed;
} rule_slot_t;

static rule_slot_t *rule_cache;

static inline unsigned slot_of(uintptr_t pc) { return (unsigned)((pc * 0x9E3779B97F4A7C15ull) >> 50); }
static inline uint64_t check_of(uintptr_t pc) { return ((pc * 0xC2B2AE3D27D4EB4Full) >> 48) << 48; }

/* cfa_off 24 bits, ra_off 8, bp_off 8 (in words), 2 flags, 1 valid, 16 check. */
static uint64_t pack(const cfi_rule_t *r, uintptr_t pc)
{
  return ((uint64_t)(uint32_t)(r->cfa_off & 0xffffff))
       | ((uint64_t)(uint8_t)(r->ra_off / 8) << 24)
       | ((uint64_t)(uint8_t)(r->bp_off / 8) << 32)
       | ((uint64_t)r->cfa_on_bp << 40) | ((uint64_t)r->bp_saved << 41) | (1ull << 42)
       | check_of(pc);
}

static void unpack(uint64_t v, cfi_rule_t *r)
{
  r->cfa_off = (int32_t)((uint32_t)v << 8) >> 8;     /* sign-extend 24 bits */
  r->ra_off = (int16_t)((int8_t)(v >> 24) * 8);
  r->bp_off = (int16_t)((int8_t)(v >> 32) * 8);
  r->cfa_on_bp = (v >> 40) & 1;
  r->bp_saved = (v >> 41) & 1;
}

/* A rule that packs without loss (offsets in words within range). */
static int packable(const cfi_rule_t *r)
{
  return r->cfa_off >= -(1 << 23) && r->cfa_off < (1 << 23) && r->ra_off % 8 == 0 && r->bp_off % 8 == 0
      && r->ra_off / 8 >= -128 && r->ra_off / 8 < 128 && r->bp_off / 8 >= -128 && r->bp_off / 8 < 128;
}

void _corral_unwind_init(void)
{
  if (!rule_cache) rule_cache = _corral_os_map(RULE_SLOTS * sizeof(rule_slot_t));
}

void _corral_unwind_forget_rules(void)
{
  /* Concurrent readers see either a rule or zeros (a miss): both are fine. */
  rule_slot_t *cache = rule_cache;
  if (!cache) return;
  for (size_t i = 0; i < RULE_SLOTS; i++) __atomic_store_n(&cache[i].pc, 0, __ATOMIC_RELAXED);
}

static int rule_for(const corral_module_t *m, uintptr_t pc, cfi_rule_t *r)
{
  rule_slot_t *cache = rule_cache;
  if (CORRAL_LIKELY(cache != NULL)) {
    rule_slot_t *s = &cache[slot_of(pc)];
    uintptr_t key = __atomic_load_n(&s->pc, __ATOMIC_ACQUIRE);
    uint64_t packed = __atomic_load_n(&s->packed, __ATOMIC_ACQUIRE);
    if (key == pc && (packed & ~0ull << 48) == check_of(pc) && (packed & (1ull << 42))) {
      unpack(packed, r);
      return 0;
    }
  }
  if (_corral_cfi_rule(m->eh_frame_hdr, pc - 1, r)) return -1;
  if (cache && packable(r)) {
    rule_slot_t *s = &cache[slot_of(pc)];
    __atomic_store_n(&s->pc, pc, __ATOMIC_RELAXED);
    __atomic_store_n(&s->packed, pack(r, pc), __ATOMIC_RELEASE);
  }
  return 0;
}

/* ---------------------------------------------------------------------------
   Steps
--------------------------------------------------------------------------- */

static int step_by_cfi(const corral_module_t *m, const unwind_stack_t *stack, unwind_frame_t *f)
{
  cfi_rule_t r;
  if (!m->eh_frame_hdr || rule_for(m, f->pc, &r)) return UNWIND_STOP;
  uintptr_t cfa = (r.cfa_on_bp ? f->bp : f->sp) + (uintptr_t)(intptr_t)r.cfa_off;
  uintptr_t ra_at = cfa + (uintptr_t)(intptr_t)r.ra_off;
  uintptr_t bp_at = cfa + (uintptr_t)(intptr_t)r.bp_off;
  if (cfa <= f->sp || !on_stack(stack, ra_at, 8)) return UNWIND_STOP;
  if (r.bp_saved && !on_stack(stack, bp_at, 8)) return UNWIND_STOP;
  f->pc = *(const uintptr_t *)ra_at;
  if (r.bp_saved) f->bp = *(const uintptr_t *)bp_at;
  f->sp = cfa;
  return UNWIND_BY_CFI;
}

/* With frame pointers rbp points at [saved rbp, return address]. */
static int step_by_fp(const unwind_stack_t *stack, unwind_frame_t *f)
{
  uintptr_t bp = f->bp;
  if (bp < f->sp || !on_stack(stack, bp, 16)) return UNWIND_STOP;
  f->pc = ((const uintptr_t *)bp)[1];
  f->bp = ((const uintptr_t *)bp)[0];
  f->sp = bp + 16;
  return UNWIND_BY_FP;
}

int _corral_unwind_step_cached(const module_table_t *t, const unwind_stack_t *stack, unwind_frame_t *f,
                               const corral_module_t **module)
{
  const corral_module_t *m = *module;
  if (!m || f->pc < m->code_lo || f->pc >= m->code_hi) {
    m = *module = _corral_module_of(t, f->pc);
    if (!m) return UNWIND_STOP;
  }
  /* A frame pointer that fails validation (a function built without one)
   * falls back to the CFI rule of that frame. */
  if (m->keeps_frame_pointers && step_by_fp(stack, f) == UNWIND_BY_FP) return UNWIND_BY_FP;
  return step_by_cfi(m, stack, f);
}

int _corral_unwind_step(const module_table_t *t, const unwind_stack_t *stack, unwind_frame_t *f)
{
  const corral_module_t *none = NULL;
  return _corral_unwind_step_cached(t, stack, f, &none);
}
