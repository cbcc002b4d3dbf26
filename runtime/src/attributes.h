/* The attribute macros of every runtime file, C and C++ alike. */
#ifndef CORRAL_ATTRIBUTES_H
#define CORRAL_ATTRIBUTES_H

/* Exported from libcorral.so; everything else is hidden (-fvisibility=hidden). */
#define CORRAL_EXPORT __attribute__((visibility("default")))
#define CORRAL_LIKELY(x) __builtin_expect(!!(x), 1)
#define CORRAL_UNLIKELY(x) __builtin_expect(!!(x), 0)
/* The allocation paths' helpers: inlined whatever the optimiser thinks. */
#define CORRAL_INLINE static inline __attribute__((always_inline))

#endif
