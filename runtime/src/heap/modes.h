/* What the modes tell the group heap: one structure, written once at
 * start-up before the runtime is ready (life/init.c sets `track` and
 * `full_ways`, dynamic/dynamic_init.c `dynamic`, safe/safe.c `safe`, its keys
 * and its checks), and read by the heap and the layers above it. The heap
 * knows nothing else of any mode. */
#ifndef CORRAL_MODES_H
#define CORRAL_MODES_H

#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

struct corral_chunk_s;

enum {
  CORRAL_FREE_REMOTE = 0,   /* nothing counted or checked: another thread's block onto its remote stack */
  CORRAL_FREE_SAFE = 1,     /* safe mode, nothing counted: the owner's free encoded, another's remote */
  CORRAL_FREE_FULL = 2      /* statistics count: the full way */
};

typedef struct corral_modes_s {
  /* Statistics were asked for: allocations and frees take the counted way. */
  int track;
  /* Every grouped allocation and free takes the slow way: statistics count
   * (track), or safe mode checks and encodes (safe). Then the thread heaps'
   * fast pointer is always the empty heap, and free's first way hands every
   * pointer on. */
  int full_ways;
  /* What free's first way does past the owner's fast free (heap.h,
   * _corral_free_owned; CORRAL_FREE_* above), set with full_ways: one
   * word read where it tested full ways, safe mode and statistics. */
  int free_way;
  /* Dynamic mode (docs/dynamic.md): every remote free is counted in its
   * chunk's balance, which dynamic mode's samples judge. */
  int dynamic;
  /* Safe mode (docs/safe.md): pools per allocation site, checked frees,
   * encoded free lists (heap.h, "links"), with these two secrets. */
  int safe;
  uint64_t link_keys[2];
  /* Safe mode's own handling of what the heap's slow ways find: a second
   * free of block p of c, the owner's free of it, and a free list whose
   * link at `at` was overwritten after its block was freed. */
  void (*safe_double_free)(struct corral_chunk_s *c, void *p);
  void (*safe_free_local)(struct corral_chunk_s *c, void *p);
  void (*safe_bad_link)(struct corral_chunk_s *c, const void *at);
} corral_modes_t;

extern corral_modes_t _corral_modes;

#pragma GCC visibility pop

#endif
