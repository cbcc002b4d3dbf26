/* What the entry points read before anything else, shared by the C entry
 * points (malloc.c, call_ways.c) and the C++ operators (new.cc). Plain
 * variables read and written with the __atomic builtins, which C and C++
 * both have, so the two languages see one declaration. Defined in gates.c;
 * written by life/init.c, heap/chunk.c (the span), identify/identify.c (the
 * gates) and the stubs (the notes). */
#ifndef CORRAL_GATES_H
#define CORRAL_GATES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define CORRAL_NOEXCEPT noexcept
#else
#define CORRAL_NOEXCEPT
#endif

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

/* ---- stub notes (stubs.c writes the stubs that set them) -------------------- */

/* Sites a plan can give stubs: one bit each in a 64-bit live mask. */
#define CORRAL_STUB_SITES 64

/* This thread's notes: bit k of `live` set by site k's stub, `sp[k]` the
 * stack pointer it was entered with (the slot of its return address).
 * Bits are cleared by the malloc that finds the site returned. */
typedef struct corral_stub_notes_s {
  uint64_t live;
  uintptr_t sp[CORRAL_STUB_SITES];
} corral_stub_notes_t;

extern __thread corral_stub_notes_t _corral_stub_notes __attribute__((tls_model("initial-exec")));

/* ---- the gates (init.c, identify.c) ------------------------------------------ */

/* forward_from: requests of at least this many bytes go straight to the next
 * allocator: 0 when the plain entry points have nothing to decide (nothing
 * grouped; or every grouped frame-0 site calls its pool and no stub site
 * exists), max_size + 1 when they may, SIZE_MAX until the runtime is ready
 * and while statistics count every request.
 *
 * Below forward_from, an entry point still forwards at once when no stub
 * site is noted live on this thread and its own gate is 0 (closed). A gate
 * is 1 (CORRAL_GATE_PROBE) while a frame-0 site that may call that entry
 * point was left to the direct table's probe (its call could not be
 * pointed at its pool) or allocations may need a walk, and -1
 * (CORRAL_GATE_FULL) while every request takes the full way: until the
 * direct table is open, for good while counting or with random pools, and
 * once the plan went stale. Full is negative, so that one test of the gate
 * tells the three apart (sign, zero, other). malloc's, calloc's, realloc's
 * and operator new's gates are -2 (CORRAL_GATE_DYNAMIC) in dynamic mode
 * without statistics: their requests (realloc's: of NULL or of a block of
 * the allocator underneath) take dynamic mode's own way (entry/malloc.c,
 * "4. dynamic");
 * malloc's, calloc's and operator new's are -3 (CORRAL_GATE_RANDOM) with
 * random pools without statistics: a pool at random, popped without
 * identification (malloc.c, new_ways.c); malloc's, calloc's, realloc's
 * (of NULL) and operator new's are -4 (CORRAL_GATE_SAFE) in safe mode
 * without statistics: the site's pool popped with safe mode's checks
 * (safe/safe_ways.h), the full way for the rest (forward_from stays
 * SIZE_MAX: safe mode forwards nothing).
 *
 * pool_below: the pool calls (call_ways.c) serve sizes below this; 0 while
 * they must take the entry point's full way (not ready, counting, random
 * pools, a plan gone stale). */
enum {
  CORRAL_GATE_CLOSED = 0,
  CORRAL_GATE_PROBE = 1,
  CORRAL_GATE_FULL = -1,
  CORRAL_GATE_DYNAMIC = -2,
  CORRAL_GATE_RANDOM = -3,
  CORRAL_GATE_SAFE = -4
};
typedef struct corral_gates_s {
  size_t forward_from;
  int64_t on_malloc, on_calloc, on_realloc, on_new;
  size_t pool_below;
  /* forward_from as realloc's short way reads it: SIZE_MAX where the next
   * allocator's realloc does not set errno itself, so that way forwards
   * with one compare and one sign test (entry/malloc.c). Stored with
   * forward_from (_corral_gates_forward_from). */
  size_t realloc_from;
} corral_gates_t;

extern corral_gates_t _corral_gates;

/* Sets forward_from, and realloc's copy of it, with release: a thread that
 * sees a new value jumps to the next allocator at once. A reader between
 * the two stores sees the copy a moment old, which forwards a request
 * the other would have decided, or decides one it would have forwarded:
 * never wrong for the program. */
static inline void _corral_gates_forward_from(size_t from, int realloc_sets_errno)
{
  __atomic_store_n(&_corral_gates.forward_from, from, __ATOMIC_RELEASE);
  __atomic_store_n(&_corral_gates.realloc_from, realloc_sets_errno ? from : SIZE_MAX, __ATOMIC_RELEASE);
}

/* 1 when a small request at an entry point with this gate needs nothing of
 * corral. Only this thread writes its notes: a plain read. */
static inline int _corral_gate_open(const int64_t *gate)
{
  /* Three instructions and the branch: the gate by a plain load (an aligned
   * 8-byte load is whole on x86-64, and a gate a moment old decides as it
   * would have a moment earlier, which is never wrong for the program),
   * the notes' thread-local offset from the GOT, and an `or` that reads the
   * notes itself and leaves its flags to the branch. In C the compiler
   * keeps the notes in a register for later and spends a move on it. */
  uint64_t v = (uint64_t)*gate, offset;
  int open;
  __asm__ volatile("movq _corral_stub_notes@gottpoff(%%rip), %2\n\t"
                   "orq %%fs:(%2), %1"
                   : "=@ccz"(open), "+r"(v), "=&r"(offset));
  return open;
}

/* ---- the span (chunk.c) ------------------------------------------------------ */

/* Every pointer outside [_corral_mine_lo, _corral_mine_hi) belongs to the next
 * allocator: the span holds all group memory, and the bootstrap buffer if
 * any block came from it (_corral_span_bounds). The entry points hand such
 * pointers over without looking further. Until the runtime is ready the
 * span is everything, so nothing takes the short way before the next
 * allocator is known. Each bound only widens after that, before a new
 * range is published: a reader that sees one bound new and one old still
 * covers all published memory, so the bounds need no order between them,
 * and plain loads let each compare read its bound itself (an atomic load
 * would cost a move apiece on every free). */
extern uintptr_t _corral_mine_lo, _corral_mine_hi;

static inline int _corral_foreign(const void *p)
{
  return (uintptr_t)p < _corral_mine_lo || (uintptr_t)p >= _corral_mine_hi;
}

/* The span once ready: the group ranges reserved so far ([range_lo,
 * range_hi), empty when lo > hi), stretched to the bootstrap buffer
 * [boot, boot_end) only when a block came from it. The buffer sits in this
 * library's .bss, among the libraries, and a span stretched up to it would
 * also cover whatever the next allocator mapped between them and the
 * first range (jemalloc's first arena): every free of that memory would
 * take the long way. glibc's dlsym takes no block when every symbol it is
 * asked for resolves, so the buffer is usually unused. */
static inline void _corral_span_bounds(uintptr_t range_lo, uintptr_t range_hi, uintptr_t boot, uintptr_t boot_end,
                                       int boot_used, uintptr_t *lo, uintptr_t *hi)
{
  *lo = range_lo;
  *hi = range_hi;
  if (boot_used) {
    if (boot < *lo) *lo = boot;
    if (boot_end > *hi) *hi = boot_end;
  }
}

/* ---- groups ------------------------------------------------------------------ */

/* Groups in use: random pools, else the plan's; 0 = nothing is grouped
 * (life/init.c sets it). */
extern unsigned _corral_ngroups;

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif
