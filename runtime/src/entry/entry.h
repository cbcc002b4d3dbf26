/* What the entry layer's files share: the full ways' entries, the ways the
 * stubs lead to, and every layer below that the ways read. The ways
 * themselves are in malloc.c (the C API), new_ways.c (operator new's),
 * call_ways.c (pointed calls) and ways.h (the steps malloc and operator new
 * share). */
#ifndef CORRAL_ENTRY_H
#define CORRAL_ENTRY_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "cxx.h"
#include "dynamic.h"
#include "heap.h"
#include "identify.h"
#include "identify_state.h"
#include "identify_tables.h"
#include "init.h"
#include "internal.h"
#include "next.h"
#include "safe.h"
#include "safe_ways.h"
#include "settled.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* malloc's, calloc's and realloc's full way, entered by a tail call: their
 * own return and frame address are then the program's call (malloc.c). */
void *_corral_malloc_rest(size_t size);
void *_corral_calloc_rest(size_t n, size_t size);
void *_corral_realloc_rest(void *p, size_t size);
/* memalign's and aligned_alloc's (align a power of two), the same way. */
void *_corral_aligned_rest(size_t align, size_t size);

/* ---- the ways stubs lead to (stubs.h, corral_call_targets_t) ---- */

/* Dynamic mode's slot ways (call_ways.c). */
void *_corral_dyn_malloc_slot(size_t size, size_t slot);
void *_corral_dyn_calloc_slot(size_t n, size_t size, size_t slot);
void *_corral_dyn_new_slot(size_t n, size_t slot);
void *_corral_dyn_new_slot_nothrow(size_t n, const void *nothrow, size_t slot);
/* Safe mode's slot ways (call_ways.c). */
void *_corral_safe_malloc_slot(size_t size, size_t slot);
void *_corral_safe_calloc_slot(size_t n, size_t size, size_t slot);
void *_corral_safe_new_slot(size_t n, size_t slot);
void *_corral_safe_new_slot_nothrow(size_t n, const void *nothrow, size_t slot);

/* The pool ways (call_ways.c). */
void *_corral_malloc_pool(size_t size, size_t pool);
void *_corral_calloc_pool(size_t n, size_t size, size_t pool);
void *_corral_new_pool(size_t n, size_t pool);
void *_corral_new_pool_nothrow(size_t n, const void *nothrow, size_t pool);
/* The none ways (call_ways.c). */
void *_corral_malloc_none(size_t size);
void *_corral_calloc_none(size_t n, size_t size);
void *_corral_new_none(size_t n);
void *_corral_new_none_nothrow(size_t n, const void *nothrow);

/* Where PLT slots lead once dynamic mode steps aside (bypass_targets.c);
 * malloc's body there over an allocator that leaves errno alone past
 * PTRDIFF_MAX (malloc.c), and operator new's over one whose own operators
 * corral does not trust (new.cc). */
size_t _corral_bypass_targets(corral_bypass_t *out, size_t max);
void *_corral_malloc_forward(size_t size);
void *_corral_new_forward(size_t n);
void *_corral_new_forward_nothrow(size_t n, const void *nothrow);

/* All of them, for the stubs. */
extern const corral_call_targets_t _corral_call_targets;

#pragma GCC visibility pop

#endif
