/* The attribute macros of every runtime file, C and C++ alike. */
#ifndef CORRAL_ATTRIBUTES_H
#define CORRAL_ATTRIBUTES_H

/* Exported from libcorral.so; everything else is hidden (-fvisibility=hidden). */
#define CORRAL_EXPORT __attribute__((visibility("default")))
#define CORRAL_LIKELY(x) __builtin_expect(!!(x), 1)
#define CORRAL_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* The allocation paths' helpers: inlined whatever the optimiser thinks. */
#define CORRAL_INLINE static inline __attribute__((always_inline))
/* After a call that is handed this function's frame address (fp0): keeps
 * the call out of tail position. Identification reads the program's saved
 * frame pointer at fp0; a sibling call would pop this frame first and let
 * the callee's own pushes overwrite that word, which a frame-pointer walk
 * of frame 0 then follows. */
#define CORRAL_KEEP_FRAME(result) __asm__ volatile("" : "+r"(result))

#endif
