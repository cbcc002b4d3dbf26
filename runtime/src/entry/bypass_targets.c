/* Where the PLT slots bound to corral's entry points lead once dynamic
 * mode has stepped aside (stubs/plt_bypass.h), given the allocator
 * underneath: each call then does what that entry point would have done
 * with every gate closed, without passing through it. */
#include "entry.h"

/* Those slots, and the entry points' bodies with every gate closed:
 * malloc and calloc forward; where the allocator underneath leaves errno
 * alone past PTRDIFF_MAX (mimalloc), malloc's lead to corral's forward,
 * which sets it, and calloc's stay; operator new jumps to the allocator's own
 * where corral trusts it (next.h), else calls its malloc and tests for
 * NULL (new.cc). free, realloc and the aligned forms are not listed: a
 * pooled object may still come back to them; nor is operator delete,
 * which is free itself (an alias, malloc.c). */
size_t _corral_bypass_targets(corral_bypass_t *out, size_t max)
{
  const corral_next_t *n = &_corral_next;
  uintptr_t forward = (uintptr_t)&_corral_new_forward, forward_nothrow = (uintptr_t)&_corral_new_forward_nothrow;
  const corral_bypass_t to[] = {
      {"malloc", n->malloc_sets_errno ? (uintptr_t)n->malloc : (uintptr_t)&_corral_malloc_forward},
      {"calloc", n->malloc_sets_errno ? (uintptr_t)n->calloc : 0},
      {"_Znwm", n->new_object ? (uintptr_t)n->new_object : forward},
      {"_Znam", n->new_array ? (uintptr_t)n->new_array : forward},
      {"_ZnwmRKSt9nothrow_t", n->new_object_nothrow ? (uintptr_t)n->new_object_nothrow : forward_nothrow},
      {"_ZnamRKSt9nothrow_t", n->new_array_nothrow ? (uintptr_t)n->new_array_nothrow : forward_nothrow},
  };
  size_t k = 0;
  for (size_t i = 0; i < sizeof to / sizeof *to && k < max; i++) out[k++] = to[i];
  return k;
}
