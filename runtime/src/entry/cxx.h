/* Where the C++ operators (new.cc) continue: the C entry layer's functions
 * they call or tail-call. C and C++ both include it; new.cc cannot include
 * entry.h, whose C11 atomics C++ does not have. */
#ifndef CORRAL_CXX_H
#define CORRAL_CXX_H

#include <stddef.h>

#include "gates.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* ---- entries the C++ operators continue in (malloc.c, new.cc) ------------- */

/* free of any pointer: free itself (malloc.c). */
void _corral_free(void *p) CORRAL_NOEXCEPT;
/* The allocation path of every entry point; ret0/fp0 are the exported
 * function's own return and frame address (malloc.c). */
void *_corral_new_alloc(size_t size, size_t align, void *ret0, void *fp0) CORRAL_NOEXCEPT;
/* operator new's full way, entered by a tail call from a pool call that
 * missed: it may throw std::bad_alloc (new.cc). */
void *_corral_new_rest(size_t n);
void *_corral_new_rest_nothrow(size_t n) CORRAL_NOEXCEPT;
/* The unaligned operator new's ways past a gate that is not open: the
 * direct table's probe and the stub notes' decision, as malloc's, entered
 * by a tail call once its first test did not serve the request (new_ways.c). */
void *_corral_new_gated(size_t n);
void *_corral_new_gated_nothrow(size_t n) CORRAL_NOEXCEPT;
/* operator new's way while its gate is CORRAL_GATE_DYNAMIC, entered by a
 * tail call: dynamic mode's fast way, else the full way (malloc.c). */
void *_corral_dyn_new(size_t n);
void *_corral_dyn_new_nothrow(size_t n) CORRAL_NOEXCEPT;

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
