/* Size classes of the block pools, in one place for the runtime (heap.h,
 * block.c) and the profiler's placement model (profiler/src/cr_placement.c),
 * which must model the same classes. corral/plan/layout.py mirrors them.
 * Freestanding: the profiler is built without libc headers' help.
 *
 * A class's block size is its largest size. Up to 64 bytes a class per
 * 8 bytes (blocks of 16, 24, 32, ... 64): C only asks malloc to align for
 * the types that fit in the request, and a type of 16-byte alignment has a
 * size that is a multiple of 16, so sizes that are not get 8-byte alignment
 * and a block of 24 bytes serves 17..24 (docs/runtime.md, "Packing"). From
 * 65 to 128 a class per 16 bytes (80, 96, 112, 128), as mimalloc and
 * jemalloc have them: an object past a line packed at 8-byte steps saves
 * at most 1/9 of its memory and spans a line more (120-byte blocks put
 * three in four of xmllint's DOM nodes on three lines, where 128 puts each
 * on two). Above 128 bytes two classes per doubling, every block a multiple
 * of 16: 129..192, 193..256, 257..384, ..., 49153..65536 (the largest
 * CORRAL_MAX_SIZE). */
#ifndef CORRAL_SIZE_CLASS_H
#define CORRAL_SIZE_CLASS_H

#define CORRAL_SIZE_CLASSES 29
#define CORRAL_SMALL_MAX 128

/* Class of an object of `size` bytes (0 counts as 1). */
static inline unsigned corral_size_class(unsigned long size)
{
  if (size <= 64) return size <= 16 ? 0 : (unsigned)((size + 7) >> 3) - 2;
  if (size <= CORRAL_SMALL_MAX) return (unsigned)((size + 15) >> 4) + 2;
  unsigned long k = (size + 15) >> 4;                           /* granules, >= 9 */
  unsigned top = 63 - (unsigned)__builtin_clzl(k - 1);          /* >= 3 */
  unsigned c = 11 + 2 * (top - 3) + (unsigned)(((k - 1) >> (top - 1)) & 1);
  return c < CORRAL_SIZE_CLASSES ? c : CORRAL_SIZE_CLASSES - 1;
}

/* Block size of class c: the largest size of the class. */
static inline unsigned long corral_class_size(unsigned c)
{
  if (c < 7) return 16 + 8 * (unsigned long)c;
  if (c < 11) return 16 * (unsigned long)(c - 2);
  unsigned top = 3 + (c - 11) / 2;
  return (((c - 11) & 1) ? 2ul << top : 3ul << (top - 1)) * 16;
}

#endif
