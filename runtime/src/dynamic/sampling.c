/* Dynamic mode's samples: the pointer of a scheduled allocation
 * (sampling.h) is kept in its context's ring of recent objects, and the
 * objects already there are read for pointers into pools, the evidence of
 * SSG edges that merges pools (dynamic_merge.c holds the rules); each
 * sample then judges whether the pool pays (give_back.c). A sample runs on
 * the allocating thread, after the allocation, only when it gets the lock
 * at once: the allocation path never waits for it. */
#include "sampling.h"

#include "dynamic.h"
#include "dynamic_merge.h"
#include "dynamic_state.h"
#include "give_back.h"
#include "heap.h"
#include "publish.h"
#include "settled.h"

__thread int _corral_dyn_sample_pending;
__thread uint32_t _corral_dyn_sample_ctx, _corral_dyn_sample_size;

static void note_merge(const corral_dynm_merge_t *m) {
  DYN_ASSERT_LOCKED();
  _corral_dyn_pools_changed();          /* the merged context's sites now lead to another pool */
  if (_corral_dyn.merge_count >= DYN_MAX_MERGES) return;
  dyn_merge_rec_t *r = &_corral_dyn.merges[_corral_dyn.merge_count++];
  r->into = _corral_dyn.ctx[m->into].group;
  r->from = _corral_dyn.ctx[m->from].group;
  r->type = m->type;
  r->evidence = m->evidence;
}

/* The pointers held by one object of context `src`, `size` bytes from
 * `obj`: whether it held one into a pool. An object freed since (its
 * chunk's key in word 1) is skipped: word 0 is then the free list's link to
 * another block of the same pool, which is no link of the program's (a
 * pool of short-lived strings looked linked). A pointer into a pool marks
 * that pool's root as linked too (give_back.c). */
static int scan_object(uint32_t src, const void *obj, uint32_t size) {
  if (_corral_group_of_address(obj) < 0) return 0;   /* its chunk was emptied and given back */
  const uintptr_t *words = obj;
  /* Blocks are at least 16 bytes, so word 1 is the block's even for 8. */
  if (__atomic_load_n(&words[1], __ATOMIC_RELAXED) == _corral_chunk_header((uintptr_t)obj)->key) return 0;
  uint32_t n = size / sizeof(uintptr_t);
  int linked = 0;
  for (uint32_t i = 0; i < n; i++) {
    /* Racy read of memory the program owns: it may be written right now, so
     * read each word once, atomically, and treat it only as a hint. */
    uintptr_t w = __atomic_load_n(&words[i], __ATOMIC_RELAXED);
    int g = _corral_group_of_address((const void *)w);
    _corral_dyn.words_read++;
    if (g < 0 || (unsigned)g >= _corral_dyn.pools) continue;
    _corral_dyn.links_seen++;
    linked = 1;
    _corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, (uint32_t)_corral_dyn.group_owner[g])].linked++;
    corral_dynm_merge_t m;
    if (_corral_dynm_observe(&_corral_dyn.merge, src, i * sizeof(uintptr_t), (uint32_t)_corral_dyn.group_owner[g], &m))
      note_merge(&m);
  }
  return linked;
}

void _corral_dyn_sample(void *p) {
  _corral_dyn_sample_pending = 0;
  if (!p) return;
  if (!_corral_dyn_trylock()) {         /* another thread samples: never wait on the allocation path */
    RELAXED_ADD(_corral_dyn.samples_skipped, 1);
    return;
  }
  uint64_t t0 = _corral_rdtsc();
  dyn_ctx_t *c = &_corral_dyn.ctx[_corral_dyn_sample_ctx];
  int linked = 0;
  for (int k = 0; k < DYN_RING; k++)
    if (c->ring[k].p) linked |= scan_object(_corral_dyn_sample_ctx, c->ring[k].p, c->ring[k].size);
  if (linked) _corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, _corral_dyn_sample_ctx)].linked++;
  c->ring[c->ring_next++ % DYN_RING].p = p;
  c->ring[(c->ring_next - 1) % DYN_RING].size = _corral_dyn_sample_size;
  _corral_dyn_judge_pool(_corral_dyn_sample_ctx, p, _corral_dyn_sample_size);
  _corral_dyn.samples++;
  _corral_dyn.sample_cycles += _corral_rdtsc() - t0;
  _corral_dyn_unlock();
}

void _corral_dyn_allocated(void *p) {
  if (!_corral_modes.track) _corral_chunk_header((uintptr_t)p)->counted_allocs++;
  if (_corral_dyn_sample_pending) _corral_dyn_sample(p);
}
