/* Dynamic mode's limits and the state its files share: each context's
 * record (dyn_ctx_t), the merge records kept for the statistics, and the
 * one structure `_corral_dyn` (defined in dynamic_init.c) that holds the
 * tables, the wrapper list, the pools and the counters, with the lock
 * that guards its slow path. Every file of dynamic mode that binds the pure
 * parts (dynamic_context.c, dynamic_merge.c, dynamic_wrappers.c) to the
 * allocator includes it; what the entry layer reads without the lock is in
 * settled.h instead. */
#ifndef CORRAL_DYNAMIC_STATE_H
#define CORRAL_DYNAMIC_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "attributes.h"
#include "debug.h"
#include "gates.h"
#include "dynamic_merge.h"
#include "dynamic_wrappers.h"
#include "lock.h"
#include "stubs.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define DYN_MAX_CONTEXTS  (1u << 16)
#define DYN_MERGE_SLOTS   (1u << 14)
#define DYN_MAX_POOLS     255              /* group ids, as many as a plan may use */
#define DYN_RING          4                /* recent sampled objects kept per context */
#define DYN_MAX_MERGES    256              /* merges remembered for the statistics */
#define DYN_EAGER_SAMPLES 16               /* a new pool's first samples, ... */
#define DYN_EAGER_EVERY   8                /* ... one every 8th of its allocations */
#define DYN_STEADY_EVERY  512              /* afterwards: 1 in 512 pooled allocations per thread */
#define DYN_JUDGE_AFTER   32               /* samples before judging whether a pool pays */
#define DYN_SMALL_BYTES   4096             /* a live set under a page has nothing to lay out */
#define DYN_SLOT_REFUSED  UINT32_MAX
#define DYN_FORWARD_EVERY 256              /* 1 in this many forwarded requests per thread is attributed */
/* Pools in use that make fewer than one object per this many forwarded
 * requests do not keep dynamic mode on (back_off.c): each forward pays a
 * lookup of 20 to 100 instructions, and one small object laid out well
 * saves a few misses at most. */
#define DYN_FORWARDS_PER_POOLED 256

/* Per context: what decides its pool. Written on the slow path, or racily
 * (relaxed counters) where a lost update only delays a decision. */
typedef struct dyn_ctx_s {
  uint32_t allocs;          /* small allocations counted until the pool exists */
  uint32_t size;            /* object size, 0 none yet, DYNM_SIZE_MIXED */
  uint64_t sizes_seen;      /* bit k: a size in (8k, 8k + 8] was asked for; bit 63 also every larger one */
  int32_t group;            /* pool this context created (roots only), -1 none */
  uint32_t eager_left;      /* eager samples still to take */
  uint32_t eager_tick;
  uint32_t ring_next;
  uint32_t checks;          /* samples judged, and of those: */
  uint32_t remote_heavy;    /* the chunk's objects were mostly freed by other threads */
  uint32_t small;           /* the chunk held less than a page of live objects */
  uint32_t churn;           /* the chunk held under a quarter of the objects it handed out */
  uint32_t linked;          /* roots: samples that found a pointer from or into the pool's objects */
  struct { void *p; uint32_t size; } ring[DYN_RING];
  uint32_t slot;            /* slot call: 0 not tried, slot + 1, or DYN_SLOT_REFUSED */
  int32_t gave_back;        /* roots: the pool given back, -1 none */
  uint8_t to_none;          /* roots given back: a call of theirs leads to the none way, unseen */
  uint8_t lookup_only;      /* roots: behind the lookup, the pool only packs tighter or stays apart (give_back.c) */
  const char *via;          /* name of the outermost wrapper in the chain, if any */
} dyn_ctx_t;

/* The bit of sizes_seen that stands for `size`. Allocators serve sizes in
 * multiples of 8, so one bit per 8 bytes tells their footprints apart. */
CORRAL_INLINE uint64_t _corral_dyn_size_bit(size_t size) {
  size_t k = size ? (size - 1) / 8 : 0;
  return 1ull << (k < 63 ? k : 63);
}

/* The largest size the lowest bit set in `seen` stands for. */
CORRAL_INLINE size_t _corral_dyn_bit_size(uint64_t seen) { return 8 * ((size_t)__builtin_ctzll(seen) + 1); }

typedef struct dyn_merge_rec_s {
  int into, from;           /* groups */
  int type;
  uint32_t evidence;
} dyn_merge_rec_t;

typedef struct dyn_state_s {
  int tables_on;                         /* contexts are looked up: dynamic or safe mode */
  corral_dynm_t merge;
  dyn_ctx_t *ctx;
  corral_dynw_list_t wrappers;
  int wrappers_loaded;
  size_t min_objects;
  corral_lock_t lock;                    /* slow path: new sites, contexts, pools, merges */
  int group_owner[DYN_MAX_POOLS];        /* group -> context that created it */
  unsigned pools;
  dyn_merge_rec_t merges[DYN_MAX_MERGES];
  unsigned merge_count;
  /* statistics (relaxed) */
  uint64_t walks, frames_walked, samples, samples_skipped, words_read, links_seen, sample_cycles;
  uint64_t pools_refused;
  /* Objects the pools in use made, as their samples tell: DYN_EAGER_EVERY
   * for each eager sample, DYN_STEADY_EVERY for each steady one. Stepping
   * aside compares it between asks (back_off.c). */
  uint64_t pooled_sampled;
  uint64_t calls_to_none;                /* calls of given-back sites pointed at the none way */
  uint64_t calls_to_pool;                /* calls of pooled sites pointed at a slot stub */
  uint32_t slotted[CORRAL_DYN_SLOTS];    /* contexts whose call has a slot */
  unsigned slotted_count;
  /* By pool and size bit (_corral_dyn_size_bit): its steady samples, and,
   * once it is given back, its contexts' requests forwarded, 1 in
   * DYN_FORWARD_EVERY of each thread's seen. What a neighbour leaves in
   * the base's class is weighed by them (give_back.c). */
  uint32_t steady_by_size[DYN_MAX_POOLS][64];
  uint32_t forwards_by_size[DYN_MAX_POOLS][64];
  int unpooled[DYN_MAX_MERGES];          /* pools given back, and why (DYN_GIVEN_BACK_*, give_back.h) */
  uint8_t unpooled_why[DYN_MAX_MERGES];
  unsigned unpooled_count;
  int backed_off;                        /* no pool paid: the entry points forward (back_off.c) */
  int bypassing;                         /* ...all of them: PLT slots lead past corral (plt_bypass.h) */
  unsigned plt_bypassed;                 /* slots pointed so */
  int safe_slots;                        /* safe mode's slot stubs are prepared (dynamic_init.c) */
  uintptr_t lock_holder;                 /* debug build: the thread holding the lock */
} dyn_state_t;

extern dyn_state_t _corral_dyn;

/* The debug build remembers which thread holds the lock (by the address of
 * its stub notes, a thread-local every thread has), so that what must run
 * under the lock can assert it does. */
#if CORRAL_DEBUG
#define DYN_ME ((uintptr_t)&_corral_stub_notes)
#define DYN_HOLDER(who) (_corral_dyn.lock_holder = (who))
#else
#define DYN_HOLDER(who) ((void)0)
#endif
#define DYN_ASSERT_LOCKED() CORRAL_ASSERT(_corral_dyn.lock_holder == DYN_ME)

CORRAL_INLINE void _corral_dyn_lock(void) {
  _corral_lock(&_corral_dyn.lock);
  DYN_HOLDER(DYN_ME);
}
CORRAL_INLINE int _corral_dyn_trylock(void) {
  if (!_corral_trylock(&_corral_dyn.lock)) return 0;
  DYN_HOLDER(DYN_ME);
  return 1;
}
CORRAL_INLINE void _corral_dyn_unlock(void) {
  DYN_ASSERT_LOCKED();
  DYN_HOLDER(0);
  _corral_unlock(&_corral_dyn.lock);
}

#define RELAXED_ADD(x, v) __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

#pragma GCC visibility pop

#endif
