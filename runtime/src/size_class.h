/* Size classes of groups laid out by size, in one place for the runtime
 * (alloc.c) and the profiler's placement model (profiler/src/cr_placement.c),
 * which must model the same classes. corral/plan/layout.py mirrors them.
 * Freestanding: the profiler is built without libc headers' help. */
#ifndef CORRAL_SIZE_CLASS_H
#define CORRAL_SIZE_CLASS_H

/* 16..128 bytes one class per 16-byte granule, then two per doubling;
 * everything from 3 KiB up shares the last. */
#define CORRAL_SIZE_CLASSES 18

/* Class of an object of k >= 1 granules: k - 1 up to 8 granules, then
 * 9-12, 13-16, 17-24, ..., capped. */
static inline unsigned corral_size_class(unsigned long k)
{
  if (k <= 8) return (unsigned)k - 1;
  unsigned top = 63 - (unsigned)__builtin_clzl(k - 1);           /* >= 3 */
  unsigned c = 8 + 2 * (top - 3) + (unsigned)(((k - 1) >> (top - 1)) & 1);
  return c < CORRAL_SIZE_CLASSES ? c : CORRAL_SIZE_CLASSES - 1;
}

#endif
