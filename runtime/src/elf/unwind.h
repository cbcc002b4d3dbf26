/* Walking return addresses outward from an allocation entry point, without
 * malloc, locks or faults: frame-pointer steps in modules that keep frame
 * pointers, cached CFI-rule steps (unwind_cfi.h) elsewhere, every address
 * read checked against the thread's stack bounds first.
 */
#ifndef CORRAL_UNWIND_H
#define CORRAL_UNWIND_H

#include <stdint.h>

#include "modules.h"
#include "unwind_cfi.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* Registers a walk needs at one frame: pc is a return address, sp and bp
 * the caller's rsp and rbp as they were right after that return. */
/* The stack slots a walk read, so a later walk from the same place can be
 * replayed by comparing them instead of stepping (identify_match.c). */
#define UNWIND_TRACE_MAX 16
typedef struct unwind_trace_s {
  uintptr_t at[UNWIND_TRACE_MAX];
  unsigned n;               /* may exceed UNWIND_TRACE_MAX: the trace is then unusable */
} corral_unwind_trace_t;

typedef struct unwind_frame_s {
  uintptr_t pc, sp, bp;
  uintptr_t bp_from;        /* the slot bp was read from, until a step depends on it */
  corral_unwind_trace_t *trace;    /* NULL (set by _corral_unwind_start): reads are not recorded */
} corral_unwind_frame_t;

static inline void _corral_unwind_record(corral_unwind_frame_t *f, uintptr_t at)
{
  corral_unwind_trace_t *t = f->trace;
  if (t) {
    if (t->n < UNWIND_TRACE_MAX) t->at[t->n] = at;
    t->n++;
  }
}

/* Every return-address read of a walk goes through here, after validation. */
static inline uintptr_t _corral_unwind_read(corral_unwind_frame_t *f, uintptr_t at)
{
  _corral_unwind_record(f, at);
  return *(const uintptr_t *)at;
}

/* A saved rbp is recorded only once a step depends on it: in code without
 * frame pointers rbp holds data that changes every iteration but never
 * steers the walk, and recording it would defeat replays. */
static inline uintptr_t _corral_unwind_read_bp(corral_unwind_frame_t *f, uintptr_t at)
{
  f->bp_from = at;
  return *(const uintptr_t *)at;
}

static inline void _corral_unwind_use_bp(corral_unwind_frame_t *f)
{
  if (f->bp_from) {
    _corral_unwind_record(f, f->bp_from);
    f->bp_from = 0;
  }
}

typedef struct unwind_stack_s {
  uintptr_t lo, hi;         /* readable stack: [lo, hi) */
} corral_unwind_stack_t;

/* This thread's own stack, looked up once (_corral_unwind_stack). lo and hi
 * stay 0 (thread-local storage starts zeroed) until state is STACK_KNOWN,
 * so a test against hi alone fails while they are not known. */
enum { STACK_UNKNOWN = 0, STACK_LOOKING, STACK_KNOWN, STACK_FAILED };
typedef struct corral_thread_stack_s {
  uintptr_t lo, hi;
  int state;
} corral_thread_stack_t;
extern __thread corral_thread_stack_t _corral_thread_stack __attribute__((tls_model("initial-exec")));

/* The top of this thread's stack when sp lies on it and it is known, else
 * 0 (ask _corral_unwind_stack). */
static inline uintptr_t _corral_stack_top(uintptr_t sp)
{
  const corral_thread_stack_t *s = &_corral_thread_stack;
  return s->state == STACK_KNOWN && sp >= s->lo && sp < s->hi ? s->hi : 0;
}

/* How a step went, for statistics. */
enum { UNWIND_STOP = 0, UNWIND_BY_FP = 1, UNWIND_BY_CFI = 2 };

/* The bounds of the stack `sp` is on, clipped below at `sp`. Returns 0 for
 * the calling thread's stack, 1 for its active sigaltstack (a signal
 * handler's), or -1 when unknown: during the first lookup of this thread
 * (pthread_getattr_np may call malloc, which lands here again) or when `sp`
 * is on another stack (a coroutine's). */
int _corral_unwind_stack(uintptr_t sp, corral_unwind_stack_t *stack);

/* The first frame of a walk from inside an entry point compiled with frame
 * pointers: ret0 = its __builtin_return_address(0), fp0 its
 * __builtin_frame_address(0). Returns -1 if fp0 is not on the stack. */
int _corral_unwind_start(void *ret0, void *fp0, const corral_unwind_stack_t *stack, corral_unwind_frame_t *f);

/* Moves *f one frame outward (f->pc becomes the caller's return address)
 * by the frame's CFI rule (cached), or by its frame pointer where the
 * module has no rule for it. Returns UNWIND_BY_FP or UNWIND_BY_CFI, or
 * UNWIND_STOP at the end of the stack, on an unknown module or on a frame
 * that fails validation. For walks made once per call chain (dynamic and
 * safe mode's): it never asks whether a module keeps frame pointers, which
 * reads 256 of its FDEs the first time (a start of `git log -1` spent
 * 60 us on it, faulting in the unwind tables of every module walked). */
int _corral_unwind_step(const corral_module_table_t *t, const corral_unwind_stack_t *stack, corral_unwind_frame_t *f);

/* The step of walks made on every allocation (plan mode's): by frame
 * pointers, faster, through a module that keeps them throughout (asked
 * once per module), else by CFI rules. *module caches the module of the
 * previous pc (NULL at the start of a walk): consecutive frames are
 * mostly in one module, and this saves the module search on most steps. */
int _corral_unwind_step_cached(const corral_module_table_t *t, const corral_unwind_stack_t *stack,
                               corral_unwind_frame_t *f, const corral_module_t **module);

/* ---- CFI rules, cached by pc (unwind.c fills the cache) -------------------
 * Direct-mapped, shared by all threads without locks. A slot is two words
 * written one after the other; the rule word repeats 16 bits of a hash of
 * the pc, so a reader that sees one thread's key with another's rule (a torn
 * pair) takes it for a miss. A rule read wrongly despite that still cannot
 * fault: every address it yields is checked against the stack. */
#define RULE_SLOTS 16384
#define RULE_VALID (1ull << 42)

typedef struct rule_slot_s {
  uintptr_t pc;
  uint64_t packed;          /* see pack() in unwind.c */
} corral_rule_slot_t;

extern corral_rule_slot_t *_corral_rule_cache;

static inline unsigned _corral_rule_slot(uintptr_t pc) { return (unsigned)((pc * 0x9E3779B97F4A7C15ull) >> 50); }
static inline uint64_t _corral_rule_check(uintptr_t pc) { return ((pc * 0xC2B2AE3D27D4EB4Full) >> 48) << 48; }

static inline int _corral_rule_lookup(const corral_rule_slot_t *cache, uintptr_t pc, uint64_t *packed)
{
  const corral_rule_slot_t *s = &cache[_corral_rule_slot(pc)];
  uintptr_t key = __atomic_load_n(&s->pc, __ATOMIC_ACQUIRE);
  uint64_t v = __atomic_load_n(&s->packed, __ATOMIC_ACQUIRE);
  *packed = v;
  return key == pc && (v & ~0ull << 48) == _corral_rule_check(pc) && (v & RULE_VALID);
}

static inline void _corral_rule_unpack(uint64_t v, corral_cfi_rule_t *r)
{
  r->cfa_off = (int32_t)((uint32_t)v << 8) >> 8;     /* sign-extend 24 bits */
  r->ra_off = (int16_t)((int8_t)(v >> 24) * 8);
  r->bp_off = (int16_t)((int8_t)(v >> 32) * 8);
  r->cfa_on_bp = (v >> 40) & 1;
  r->bp_saved = (v >> 41) & 1;
}

/* A slot of `bytes` at `at` lies inside the stack and is aligned. */
static inline int _corral_on_stack(const corral_unwind_stack_t *s, uintptr_t at, uintptr_t bytes)
{
  return at >= s->lo && at <= s->hi - bytes && (at & 7) == 0;
}

/* One step by rule `r`, every read checked against the stack. */
static inline int _corral_unwind_apply_rule(const corral_cfi_rule_t *r, const corral_unwind_stack_t *stack,
                                            corral_unwind_frame_t *f)
{
  if (r->cfa_on_bp) _corral_unwind_use_bp(f);
  uintptr_t cfa = (r->cfa_on_bp ? f->bp : f->sp) + (uintptr_t)(intptr_t)r->cfa_off;
  uintptr_t ra_at = cfa + (uintptr_t)(intptr_t)r->ra_off;
  uintptr_t bp_at = cfa + (uintptr_t)(intptr_t)r->bp_off;
  if (cfa <= f->sp || !_corral_on_stack(stack, ra_at, 8)) return UNWIND_STOP;
  if (r->bp_saved && !_corral_on_stack(stack, bp_at, 8)) return UNWIND_STOP;
  f->pc = _corral_unwind_read(f, ra_at);
  if (r->bp_saved) f->bp = _corral_unwind_read_bp(f, bp_at);
  f->sp = cfa;
  return UNWIND_BY_CFI;
}

/* The common case inline: pc in the same module as the previous frame, a
 * module with frame pointers, and a frame pointer that passes validation.
 * Anything else goes to _corral_unwind_step_cached. */
static inline int _corral_unwind_step_inline(const corral_module_table_t *t, const corral_unwind_stack_t *stack,
                                             corral_unwind_frame_t *f, const corral_module_t **module)
{
  const corral_module_t *m = *module;
  if (m && f->pc - m->code_lo < m->code_hi - m->code_lo) {
    uintptr_t bp = f->bp;
    uint8_t fp = __atomic_load_n(&m->keeps_frame_pointers, __ATOMIC_RELAXED);   /* unknown: the cached step decides */
    if (fp == CORRAL_FP_YES) {
      if (bp >= f->sp && bp <= stack->hi - 16 && (bp & 7) == 0) {
        _corral_unwind_use_bp(f);
        f->pc = _corral_unwind_read(f, bp + 8);
        f->bp = _corral_unwind_read_bp(f, bp);
        f->sp = bp + 16;
        return UNWIND_BY_FP;
      }
    } else if (fp == CORRAL_FP_NO) {
      uint64_t packed;
      const corral_rule_slot_t *cache = _corral_rule_cache;
      if (cache && _corral_rule_lookup(cache, f->pc, &packed)) {
        corral_cfi_rule_t r;
        _corral_rule_unpack(packed, &r);
        return _corral_unwind_apply_rule(&r, stack, f);
      }
    }
  }
  return _corral_unwind_step_cached(t, stack, f, module);
}

/* Maps the rule cache; called once at plan load, outside malloc. Without it
 * every CFI step interprets the FDE afresh. */
void _corral_unwind_init(void);

/* Forgets every cached rule: after a dlopen, a library may sit where a
 * dlclose'd one was, with other code at the same addresses. */
void _corral_unwind_forget_rules(void);

#pragma GCC visibility pop

#endif
