/* Return-address walk: see unwind.h. */
#define _GNU_SOURCE
#include "unwind.h"

#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <string.h>

#include "internal.h"
#include "unwind_cfi.h"

/* ---------------------------------------------------------------------------
   Stack bounds, cached per thread
--------------------------------------------------------------------------- */

__thread corral_thread_stack_t _corral_thread_stack __attribute__((tls_model("initial-exec")));
#define thread_stack _corral_thread_stack

/* Queries of sigaltstack that may find "not on it" per thread: a thread
 * that allocates from stacks of its own (makecontext coroutines) stops
 * paying a system call per allocation after these. */
#define ALT_STACK_MISSES 16
static __thread unsigned alt_stack_misses __attribute__((tls_model("initial-exec")));

/* A signal handler running on sigaltstack: walk within the alternate stack
 * (the walk ends at the signal frame); 1 then. One system call each time, never a
 * cached answer: the alternate stack may have been replaced and freed. */
static __attribute__((noinline)) int alternate_stack(uintptr_t sp, corral_unwind_stack_t *stack)
{
  if (alt_stack_misses >= ALT_STACK_MISSES) return -1;
  stack_t alt;
  uintptr_t lo = 0, hi = 0;
  if (sigaltstack(NULL, &alt) == 0 && (alt.ss_flags & SS_ONSTACK)) {
    lo = (uintptr_t)alt.ss_sp;
    hi = lo + alt.ss_size;
  }
  if (sp < lo || sp >= hi) {
    alt_stack_misses++;
    return -1;
  }
  stack->lo = sp;
  stack->hi = hi;
  return 1;
}

/* The loader's record of where the initial thread's stack held argc: every
 * frame of that thread lies below it. */
extern void *__libc_stack_end;

/* The initial thread's stack, when sp is on it, without asking glibc:
 * for that thread pthread_getattr_np reads all of /proc/self/maps (75 us
 * of a 3 ms `git log -1`). The kernel lays mappings out at least 128 MiB
 * and the stack's limit at exec time below the stack's top (mm/util.c,
 * mmap_base: the gap is at least 128 MiB more than the stack's random
 * offset), so [top - min(limit, 128 MiB), top) holds no one else's memory
 * but what a program maps at a fixed address, even where it raised its
 * limit since. A stack that grows deeper than that, an unlimited limit,
 * or an sp outside the range (a signal stack, a coroutine's) takes
 * glibc's answer, or none, as before. */
#define INITIAL_STACK_MOST ((uintptr_t)128 << 20)
static int initial_stack(uintptr_t sp, uintptr_t *lo, uintptr_t *hi)
{
  uintptr_t top = (uintptr_t)__libc_stack_end;
  struct rlimit limit;
  if (!top || sp >= top || getrlimit(RLIMIT_STACK, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return -1;
  uintptr_t depth = limit.rlim_cur < INITIAL_STACK_MOST ? (uintptr_t)limit.rlim_cur : INITIAL_STACK_MOST;
  if (top - sp >= depth) return -1;
  *lo = top - depth;
  *hi = top;
  return 0;
}

int _corral_unwind_stack(uintptr_t sp, corral_unwind_stack_t *stack)
{
  if (CORRAL_UNLIKELY(thread_stack.state != STACK_KNOWN)) {
    if (thread_stack.state != STACK_UNKNOWN) return -1;
    thread_stack.state = STACK_LOOKING;      /* the malloc calls below see this */
    uintptr_t lo, hi;
    if (initial_stack(sp, &lo, &hi) != 0) {
      pthread_attr_t attr;
      void *addr;
      size_t size;
      int ok = pthread_getattr_np(pthread_self(), &attr) == 0;
      if (ok) {
        ok = pthread_attr_getstack(&attr, &addr, &size) == 0;
        pthread_attr_destroy(&attr);
      }
      if (!ok) { thread_stack.state = STACK_FAILED; return -1; }
      lo = (uintptr_t)addr;
      hi = (uintptr_t)addr + size;
    }
    thread_stack.lo = lo;
    thread_stack.hi = hi;
    thread_stack.state = STACK_KNOWN;
  }
  if (CORRAL_UNLIKELY(sp < thread_stack.lo || sp >= thread_stack.hi)) return alternate_stack(sp, stack);
  stack->lo = sp;
  stack->hi = thread_stack.hi;
  return 0;
}


int _corral_unwind_start(void *ret0, void *fp0, const corral_unwind_stack_t *stack, corral_unwind_frame_t *f)
{
  uintptr_t fp = (uintptr_t)fp0;
  if (!_corral_on_stack(stack, fp, 16)) return -1;
  f->pc = (uintptr_t)ret0;
  f->sp = fp + 16;                          /* the entry point's CFA */
  f->bp = *(const uintptr_t *)fp;           /* its saved rbp: the caller's */
  f->bp_from = fp;
  f->trace = NULL;
  return 0;
}

/* ---------------------------------------------------------------------------
   CFI rules, cached by pc
--------------------------------------------------------------------------- */

corral_rule_slot_t *_corral_rule_cache;

/* cfa_off 24 bits, ra_off 8, bp_off 8 (in words), 2 flags, 1 valid, 16 check. */
static uint64_t pack(const corral_cfi_rule_t *r, uintptr_t pc)
{
  return ((uint64_t)(uint32_t)(r->cfa_off & 0xffffff))
       | ((uint64_t)(uint8_t)(r->ra_off / 8) << 24)
       | ((uint64_t)(uint8_t)(r->bp_off / 8) << 32)
       | ((uint64_t)r->cfa_on_bp << 40) | ((uint64_t)r->bp_saved << 41) | RULE_VALID
       | _corral_rule_check(pc);
}

/* A rule that packs without loss (offsets in words within range). */
static int packable(const corral_cfi_rule_t *r)
{
  return r->cfa_off >= -(1 << 23) && r->cfa_off < (1 << 23) && r->ra_off % 8 == 0 && r->bp_off % 8 == 0
      && r->ra_off / 8 >= -128 && r->ra_off / 8 < 128 && r->bp_off / 8 >= -128 && r->bp_off / 8 < 128;
}

void _corral_unwind_init(void)
{
  if (!_corral_rule_cache) _corral_rule_cache = _corral_os_map(RULE_SLOTS * sizeof(corral_rule_slot_t));
}

void _corral_unwind_forget_rules(void)
{
  /* Concurrent readers see either a rule or zeros (a miss): both are fine. */
  corral_rule_slot_t *cache = _corral_rule_cache;
  if (!cache) return;
  for (size_t i = 0; i < RULE_SLOTS; i++) __atomic_store_n(&cache[i].pc, 0, __ATOMIC_RELAXED);
}

static int rule_for(const corral_module_t *m, uintptr_t pc, corral_cfi_rule_t *r)
{
  corral_rule_slot_t *cache = _corral_rule_cache;
  uint64_t packed;
  if (CORRAL_LIKELY(cache != NULL) && _corral_rule_lookup(cache, pc, &packed)) {
    _corral_rule_unpack(packed, r);
    return 0;
  }
  if (_corral_cfi_rule(m->eh_frame_hdr, pc - 1, r)) return -1;
  if (cache && packable(r)) {
    corral_rule_slot_t *s = &cache[_corral_rule_slot(pc)];
    __atomic_store_n(&s->pc, pc, __ATOMIC_RELAXED);
    __atomic_store_n(&s->packed, pack(r, pc), __ATOMIC_RELEASE);
  }
  return 0;
}

/* ---------------------------------------------------------------------------
   Steps
--------------------------------------------------------------------------- */

static int step_by_cfi(const corral_module_t *m, const corral_unwind_stack_t *stack, corral_unwind_frame_t *f)
{
  corral_cfi_rule_t r;
  if (!m->eh_frame_hdr || rule_for(m, f->pc, &r)) return UNWIND_STOP;
  return _corral_unwind_apply_rule(&r, stack, f);
}

/* With frame pointers rbp points at [saved rbp, return address]. */
static int step_by_fp(const corral_unwind_stack_t *stack, corral_unwind_frame_t *f)
{
  uintptr_t bp = f->bp;
  _corral_unwind_use_bp(f);
  if (bp < f->sp || !_corral_on_stack(stack, bp, 16)) return UNWIND_STOP;
  f->pc = _corral_unwind_read(f, bp + 8);
  f->bp = _corral_unwind_read_bp(f, bp);
  f->sp = bp + 16;
  return UNWIND_BY_FP;
}

int _corral_unwind_step_cached(const corral_module_table_t *t, const corral_unwind_stack_t *stack,
                               corral_unwind_frame_t *f, const corral_module_t **module)
{
  const corral_module_t *m = *module;
  if (!m || f->pc < m->code_lo || f->pc >= m->code_hi) {
    m = *module = _corral_module_of(t, f->pc);
    if (!m) return UNWIND_STOP;
  }
  /* A frame pointer that fails validation (a function built without one)
   * falls back to the CFI rule of that frame. */
  if (_corral_module_keeps_fp(m) && step_by_fp(stack, f) == UNWIND_BY_FP) return UNWIND_BY_FP;
  return step_by_cfi(m, stack, f);
}

int _corral_unwind_step(const corral_module_table_t *t, const corral_unwind_stack_t *stack, corral_unwind_frame_t *f)
{
  const corral_module_t *m = _corral_module_of(t, f->pc);
  if (!m) return UNWIND_STOP;
  int how = step_by_cfi(m, stack, f);
  return how != UNWIND_STOP ? how : step_by_fp(stack, f);
}
