/* The debug build's invariant checks (`make -C runtime debug`, which defines
 * CORRAL_DEBUG): every pool operation asserts what it relies on, and every
 * hand-over of a chunk checks the whole chunk (debug.c). A failed check
 * prints where and what, then aborts: in the tests, a threaded stress run
 * under the debug build fails at the first broken invariant instead of
 * corrupting memory later. In the normal build all of it compiles to
 * nothing. */
#ifndef CORRAL_DEBUG_H
#define CORRAL_DEBUG_H

#include "attributes.h"

#ifndef CORRAL_DEBUG
#define CORRAL_DEBUG 0
#endif

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#if CORRAL_DEBUG
void _corral_debug_fail(const char *file, int line, const char *what) __attribute__((noreturn, cold));
#define CORRAL_ASSERT(e) (CORRAL_LIKELY(e) ? (void)0 : _corral_debug_fail(__FILE__, __LINE__, #e))
#else
#define CORRAL_ASSERT(e) ((void)0)
#endif

/* A race window that the tests widen: with CORRAL_DEBUG_WIDEN=N the debug
 * build pauses a random 0 to N microseconds here, so that another thread
 * runs through what it would otherwise only rarely fit in between. */
#if CORRAL_DEBUG
void _corral_debug_widen(void);
#define CORRAL_WIDEN() _corral_debug_widen()
#else
#define CORRAL_WIDEN() ((void)0)
#endif

struct corral_chunk_s;
/* The owner's view of a whole chunk: its lists hold block starts below the
 * handed-out limit, and live + |free| + |local_free| blocks is every block
 * ever handed out (frees other threads pushed still count as live until
 * drained). Nothing unless CORRAL_DEBUG. */
#if CORRAL_DEBUG
void _corral_debug_check_chunk(struct corral_chunk_s *c);
#else
static inline void _corral_debug_check_chunk(struct corral_chunk_s *c) { (void)c; }
#endif

#pragma GCC visibility pop

#endif
