/* Safe mode's short way (entry/malloc.c, CORRAL_GATE_SAFE): an allocation
 * whose site's pool has a block on its current chunk's free list, in one
 * function with the checks the guarantee needs (docs/safe.md), not
 * through the full way's layers (the owner's free is _corral_free_owned's,
 * heap.h). Anything else takes the full way, which tells what it is and
 * reports it: a site's first request, an empty list, a link that is no
 * block of its chunk (the slow pop reports it), a large block, counting. */
#ifndef CORRAL_SAFE_WAYS_H
#define CORRAL_SAFE_WAYS_H

#include <stddef.h>
#include <stdint.h>

#include "context_lookup.h"
#include "heap.h"
#include "settled.h"

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define CORRAL_SAFE_CONTEXTS (1u << 16)     /* dynamic mode's context ids are below this */
#define CORRAL_SAFE_SHARED 0                /* the group of sites past the last group */
#define CORRAL_SAFE_FRESH 1                 /* fresh space, any site's (CORRAL_SAFE_FRESH=1, the default) */

/* [CORRAL_SAFE_CONTEXTS]: the group made for each context; 0 = none yet,
 * UINT16_MAX = the shared group (safe.c). */
extern uint16_t *_corral_safe_group_of;

/* A context's first allocation: its group made, or the shared one. */
unsigned _corral_safe_new_site(uint32_t id);
/* Whether group g was made for context id (the debug build's check). */
int _corral_safe_made_for(unsigned g, uint32_t id);

/* The group made for context id, or -1 when it has none yet (or is
 * DYNC_NONE): one load. */
CORRAL_INLINE int _corral_safe_group_of_context(uint32_t id)
{
  unsigned g = id < CORRAL_SAFE_CONTEXTS ? __atomic_load_n(&_corral_safe_group_of[id], __ATOMIC_ACQUIRE) : 0;
  if (g == 0) return -1;
  CORRAL_ASSERT(g == UINT16_MAX || _corral_safe_made_for(g, id));
  return g == UINT16_MAX ? CORRAL_SAFE_SHARED : (int)g;
}

/* The group of the allocation whose frame 0 returns to ret0, with site
 * entry s (NULL: not seen yet; fp0: the entry's frame address, for a walk
 * through wrappers): one load for a site seen before. */
CORRAL_INLINE unsigned _corral_safe_site_group_at(const corral_dync_site_t *s, void *ret0, void *fp0)
{
  uint32_t id = _corral_dyn_context_at(s, (uintptr_t)ret0, fp0);
  int g = _corral_safe_group_of_context(id);
  if (CORRAL_LIKELY(g >= 0)) return (unsigned)g;
  return _corral_safe_new_site(id);
}

/* The same, the site's entry looked up. */
CORRAL_INLINE unsigned _corral_safe_site_group(void *ret0, void *fp0)
{
  return _corral_safe_site_group_at(_corral_dync_site(&_corral_dyn_settled.table, (uintptr_t)ret0), ret0, fp0);
}

/* The group of a site of its own (not inside a wrapper) that has one
 * already, or -1: one site lookup and two loads, and nothing that needs
 * the entry's frame, so that the way that takes it keeps none. *site is
 * the site's entry (NULL: not seen yet), for the way that decides the
 * rest. */
CORRAL_INLINE int _corral_safe_known_group(uintptr_t ret0, const corral_dync_site_t **site)
{
  const corral_dync_site_t *s = *site = _corral_dync_site(&_corral_dyn_settled.table, ret0);
  uint32_t id = s ? __atomic_load_n(&s->ctx, __ATOMIC_ACQUIRE) : DYNC_NONE;   /* a wrapper site's stays DYNC_NONE */
  return _corral_safe_group_of_context(id);
}

/* A block of `size` bytes (small) from the pool of a group whose first
 * pool is pool0 (group * CORRAL_SIZE_CLASSES) in thread heap h when its
 * current chunk's free list has one whose link decodes to a block of the
 * chunk (or ends the list), or its current batch of fresh blocks one; NULL
 * otherwise, the full way then. It calls nothing: a new batch (once per 4
 * KiB) is the full way's, so that the ways inlining this save no register
 * on every request (11 instructions a request in cppcheck's `operator
 * new`, callgrind). */
CORRAL_INLINE void *_corral_safe_pop_in(corral_heap_t *h, size_t size, size_t pool0)
{
  size_t k = _corral_class(size);
  corral_chunk_t *c;
  /* While this thread's class takes fresh space, the next block of the
   * fresh group's current batch, whatever the site (docs/safe.md, "Fresh
   * space"); the site's own pool once the class has closed. */
  if (!__atomic_load_n(&_corral_fresh_class_closed[k], __ATOMIC_RELAXED)) {
    c = h->cur[CORRAL_SAFE_FRESH * CORRAL_SIZE_CLASSES + k];
    return CORRAL_LIKELY(c != NULL && c->bump < c->batch_end) ? _corral_block_bump(c) : NULL;
  }
  c = h->cur[pool0 + k];
  if (CORRAL_UNLIKELY(c == NULL)) return NULL;
  void **p = (void **)c->free;
  if (CORRAL_UNLIKELY(p == NULL)) {
    /* In the full way's refill order: the current batch of fresh blocks;
     * the owner's frees, last freed first; the rest (other threads' frees,
     * a new batch) is the full way's. */
    if (c->bump < c->batch_end) return _corral_block_bump(c);
    p = (void **)c->local_free;
    if (p == NULL) return NULL;
    c->free = p;                            /* the list moves whole: a bad link below is the full way's */
    c->local_free = NULL;
  }
  CORRAL_ASSERT(c->magic == CORRAL_CHUNK_MAGIC && c->block_size != 0 && _corral_block_start(c, p));
  void *next = _corral_link_decode(p, *(const uintptr_t *)p);
  if (CORRAL_UNLIKELY(next != NULL && !_corral_block_start(c, next))) return NULL;
  c->free = next;
  /* The next pop reads next's link: a site's freed blocks are often cold
   * by then (a size class's, shared by every site, less so). */
  __builtin_prefetch(next);
  p[0] = p[1] = NULL;
  c->live++;
  return p;
}

/* The same, a small size checked first, from this thread's heap while
 * safe mode takes its short ways (_corral_tls_safe: a heap with no chunk,
 * where every pop misses, before the thread's is made and while
 * statistics count). */
CORRAL_INLINE void *_corral_safe_pop_at(size_t size, size_t pool0)
{
  if (CORRAL_UNLIKELY(size > _corral_options.safe_max_size)) return NULL;
  return _corral_safe_pop_in(_corral_tls_safe, size, pool0);
}

/* The same for group g. */
CORRAL_INLINE void *_corral_safe_pop_from(size_t size, unsigned g)
{
  return _corral_safe_pop_at(size, (size_t)g * CORRAL_SIZE_CLASSES);
}

/* The same for site entry s (NULL: not seen yet) of frame 0 ret0, its
 * group found however it must be (fp0: the entry's frame address, for a
 * walk through wrappers). A large size makes no site, nor does a thread
 * whose short ways take the empty heap (none of its own yet); its heap,
 * once made, stays. */
CORRAL_INLINE void *_corral_safe_pop(size_t size, const corral_dync_site_t *s, void *ret0, void *fp0)
{
  corral_heap_t *h = _corral_tls_safe;
  if (CORRAL_UNLIKELY(size > _corral_options.safe_max_size || h == &_corral_no_heap)) return NULL;
  return _corral_safe_pop_in(h, size, (size_t)_corral_safe_site_group_at(s, ret0, fp0) * CORRAL_SIZE_CLASSES);
}

#pragma GCC visibility pop

#endif
