/* The entry points' first reads (gates.h), defined here, below every layer
 * that writes them. Until the runtime is ready every gate is full and every
 * size is below forward_from, so each request takes the full way, which
 * starts the runtime; the span is everything, so no free takes the short
 * way before the next allocator is known. */
#include "gates.h"

corral_gates_t _corral_gates = {.forward_from = SIZE_MAX, .on_malloc = CORRAL_GATE_FULL,
                                .on_calloc = CORRAL_GATE_FULL, .on_realloc = CORRAL_GATE_FULL,
                                .on_new = CORRAL_GATE_FULL, .pool_below = 0,
                                .realloc_from = SIZE_MAX};
uintptr_t _corral_mine_lo, _corral_mine_hi = UINTPTR_MAX;
__thread corral_stub_notes_t _corral_stub_notes __attribute__((tls_model("initial-exec")));
unsigned _corral_ngroups;
