/* Walking return addresses outward from an allocation entry point, without
 * malloc, locks or faults: frame-pointer steps in modules that keep frame
 * pointers, cached CFI-rule steps (unwind_cfi.h) elsewhere, every address
 * read checked against the thread's stack bounds first.
 */
#ifndef CORRAL_UNWIND_H
#define CORRAL_UNWIND_H

#include <stdint.h>

#include "modules.h"

/* Registers a walk needs at one frame: pc is a return address, sp and bp
 * the caller's rsp and rbp as they were right after that return. */
typedef struct unwind_frame_s {
  uintptr_t pc, sp, bp;
} unwind_frame_t;

typedef struct unwind_stack_s {
  uintptr_t lo, hi;         /* readable stack: [lo, hi) */
} unwind_stack_t;

/* How a step went, for statistics. */
enum { UNWIND_STOP = 0, UNWIND_BY_FP = 1, UNWIND_BY_CFI = 2 };

/* The calling thread's stack bounds, clipped below at `sp`. Returns 0, or -1
 * when unknown: during the first lookup of this thread (pthread_getattr_np
 * may call malloc, which lands here again) or when `sp` is on another stack
 * (a signal handler's sigaltstack). */
int _corral_unwind_stack(uintptr_t sp, unwind_stack_t *stack);

/* The first frame of a walk from inside an entry point compiled with frame
 * pointers: ret0 = its __builtin_return_address(0), fp0 its
 * __builtin_frame_address(0). Returns -1 if fp0 is not on the stack. */
int _corral_unwind_start(void *ret0, void *fp0, const unwind_stack_t *stack, unwind_frame_t *f);

/* Moves *f one frame outward (f->pc becomes the caller's return address).
 * Returns UNWIND_BY_FP or UNWIND_BY_CFI, or UNWIND_STOP at the end of the
 * stack, on an unknown module or on a frame that fails validation. */
int _corral_unwind_step(const module_table_t *t, const unwind_stack_t *stack, unwind_frame_t *f);

/* Same, with *module caching the module of the previous pc (NULL at the
 * start of a walk): consecutive frames are mostly in one module, and this
 * saves the module search on most steps. */
int _corral_unwind_step_cached(const module_table_t *t, const unwind_stack_t *stack, unwind_frame_t *f,
                               const corral_module_t **module);

/* The common case inline: pc in the same module as the previous frame, a
 * module with frame pointers, and a frame pointer that passes validation.
 * Anything else goes to _corral_unwind_step_cached. */
static inline int _corral_unwind_step_inline(const module_table_t *t, const unwind_stack_t *stack,
                                             unwind_frame_t *f, const corral_module_t **module)
{
  const corral_module_t *m = *module;
  uintptr_t bp = f->bp;
  if (m && m->keeps_frame_pointers && f->pc - m->code_lo < m->code_hi - m->code_lo
      && bp >= f->sp && bp <= stack->hi - 16 && (bp & 7) == 0) {
    f->pc = ((const uintptr_t *)bp)[1];
    f->bp = ((const uintptr_t *)bp)[0];
    f->sp = bp + 16;
    return UNWIND_BY_FP;
  }
  return _corral_unwind_step_cached(t, stack, f, module);
}

/* Maps the rule cache; called once at plan load, outside malloc. Without it
 * every CFI step interprets the FDE afresh. */
void _corral_unwind_init(void);

/* Forgets every cached rule: after a dlopen, a library may sit where a
 * dlclose'd one was, with other code at the same addresses. */
void _corral_unwind_forget_rules(void);

#endif
