/* Size classes of the block pools, in one place for the runtime (heap.h,
 * block.c) and the profiler's placement model (profiler/src/cr_placement.c),
 * which must model the same classes. corral/plan/layout.py mirrors them.
 * Freestanding: the profiler is built without libc headers' help.
 *
 * A class's block size is its largest size. Up to 128 bytes a class per
 * 8 bytes (blocks of 16, 24, 32, ... 128): C only asks malloc to align for
 * the types that fit in the request, and a type of 16-byte alignment has a
 * size that is a multiple of 16, so sizes that are not get 8-byte alignment
 * and a block of 24 bytes serves 17..24 (docs/runtime.md, "Packing"). Above
 * 128 bytes two classes per doubling, every block a multiple of 16: 129..192,
 * 193..256, 257..384, ..., 49153..65536 (the largest CORRAL_MAX_SIZE). */
#ifndef CORRAL_SIZE_CLASS_H
#define CORRAL_SIZE_CLASS_H

#define CORRAL_SIZE_CLASSES 33
#define CORRAL_SMALL_MAX 128

/* Class of an object of `size` bytes (0 counts as 1). */
static inline unsigned corral_size_class(unsigned long size)
{
  if (size <= CORRAL_SMALL_MAX) return size <= 16 ? 0 : (unsigned)((size + 7) >> 3) - 2;
  unsigned long k = (size + 15) >> 4;                           /* granules, >= 9 */
  unsigned top = 63 - (unsigned)__builtin_clzl(k - 1);          /* >= 3 */
  unsigned c = 15 + 2 * (top - 3) + (unsigned)(((k - 1) >> (top - 1)) & 1);
  return c < CORRAL_SIZE_CLASSES ? c : CORRAL_SIZE_CLASSES - 1;
}

/* Block size of class c: the largest size of the class. */
static inline unsigned long corral_class_size(unsigned c)
{
  if (c < 15) return 16 + 8 * (unsigned long)c;
  unsigned top = 3 + (c - 15) / 2;
  return (((c - 15) & 1) ? 2ul << top : 3ul << (top - 1)) * 16;
}

#endif
