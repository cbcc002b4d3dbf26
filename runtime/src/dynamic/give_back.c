/* Dynamic mode's second thoughts: whether a pool pays, judged at its
 * samples, and giving back one that does not, so that its contexts go to
 * the allocator underneath from then on (objects already pooled stay).
 * A pool goes when its objects are mostly freed by other threads, when its
 * live objects fit in a page, or when the allocator underneath would lay
 * them out as it does; a given-back site whose call is direct is pointed
 * at the entry's none way. Everything here runs under the lock, from a
 * sample (sampling.c). */
#include "give_back.h"

#include "dynamic.h"
#include "dynamic_context.h"
#include "dynamic_merge.h"
#include "dynamic_state.h"
#include "heap.h"
#include "internal.h"
#include "next.h"
#include "publish.h"
#include "settled.h"
#include "stubs.h"

/* A context given back whose frame 0 is its own call site (not inside a
 * wrapper, where the call serves other contexts too): when that call is a
 * direct call to malloc, calloc or operator new, point it at the entry's
 * none way, so its allocations skip the lookup and go straight to the
 * allocator underneath. Under the lock; the stubs were prepared at
 * start-up or after dlopen. */
static void point_at_none(uint32_t id) {
  uintptr_t call = _corral_dyn_own_call(id);
  if (!call) return;
  corral_stub_refusal_t r = _corral_point_at_none(call);
  if (r == CORRAL_STUB_OK) {
    _corral_dyn.calls_to_none++;
    _corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, id)].to_none = 1;
  } else _corral_note(2, "dynamic: site %#lx given back keeps its lookup (%s)", (unsigned long)call,
                    _corral_stub_refusal_text(r));
}

/* Every context of the pool of context `id` goes to the allocator
 * underneath from now on; objects already pooled stay. */
static void give_back(uint32_t id, int why) {
  DYN_ASSERT_LOCKED();
  uint32_t root = _corral_dynm_find(&_corral_dyn.merge, id);
  int g = _corral_dyn.ctx[root].group;
  if (g < 0) return;
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++)          /* every context of the pool: never again */
    if (_corral_dynm_find(&_corral_dyn.merge, i) == root)
      __atomic_store_n(&_corral_dyn.ctx[i].allocs, UINT32_MAX, __ATOMIC_RELAXED);
  __atomic_store_n(&_corral_dyn.ctx[root].gave_back, g, __ATOMIC_RELAXED);
  __atomic_store_n(&_corral_dyn.ctx[root].group, -1, __ATOMIC_RELEASE);
  _corral_dyn_pools_changed();
  if (_corral_options.stubs)
    for (uint32_t i = 0; i < total; i++)
      if (_corral_dynm_find(&_corral_dyn.merge, i) == root) point_at_none(i);
  if (_corral_dyn.unpooled_count < DYN_MAX_MERGES) {
    _corral_dyn.unpooled_why[_corral_dyn.unpooled_count] = (uint8_t)why;
    _corral_dyn.unpooled[_corral_dyn.unpooled_count++] = g;
  }
}

/* Whether a context asked for any size whose footprint in the allocator
 * underneath is `footprint` (bit 63 stands for sizes it cannot tell). */
static int asked_for_footprint(const dyn_ctx_t *c, size_t footprint) {
  uint64_t seen = __atomic_load_n(&c->sizes_seen, __ATOMIC_RELAXED);
  if (seen >> 63) return 1;
  for (; seen; seen &= seen - 1)
    if (_corral_next_footprint(_corral_dyn_bit_size(seen)) == footprint) return 1;
  return 0;
}

/* Of the counts by size bit `counts`, those of sizes whose footprint in
 * the allocator underneath is `footprint`. */
static uint64_t class_count(const uint32_t *counts, size_t footprint) {
  uint64_t n = 0;
  for (unsigned b = 0; b < 63; b++) {
    uint32_t k = __atomic_load_n(&counts[b], __ATOMIC_RELAXED);
    if (k && _corral_next_footprint(8 * (size_t)(b + 1)) == footprint) n += k;
  }
  return n;
}

/* Whether pool h leaves many live objects of `footprint` to the allocator
 * underneath, beside a pool that made about `pooled` of that class since
 * its eager samples (or, while it takes them, `pooled` is 0 and nothing
 * is known yet): h was given back for a reason other than `small`, and,
 * once `pooled` is known, its contexts went on to make at least a quarter
 * as many objects of the class there, as far as the sampled forwards tell
 * (a call pointed at the none way hides them: such a neighbour counts). A
 * live pool keeps its objects in its own chunks, one given back as small
 * keeps under a page of them live, and one whose contexts stopped making
 * objects of the class (a parse's first few hundred nodes, beside a pool
 * that goes on to make thousands) barely interleaves with the pool's
 * objects in the base. */
static int leaves_many_to_base(int h, size_t footprint, uint64_t pooled) {
  for (unsigned k = 0; k < _corral_dyn.unpooled_count; k++) {
    if (_corral_dyn.unpooled[k] != h) continue;
    if (_corral_dyn.unpooled_why[k] == DYN_GIVEN_BACK_SMALL) return 0;
    const dyn_ctx_t *root = &_corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, (uint32_t)_corral_dyn.group_owner[h])];
    if (pooled == 0 || root->to_none) return 1;
    return class_count(_corral_dyn.forwards_by_size[h], footprint) * DYN_FORWARD_EVERY * 4 >= pooled;
  }
  return 0;
}

/* The sizes the pool of context `id` (its root `root`) asks for, as
 * sizes_seen bits: one size for a pool of one, else every size any of its
 * contexts asked the full way for. */
static uint64_t pool_sizes(uint32_t root) {
  uint32_t size = _corral_dyn.merge.size[root];
  if (size != DYNM_SIZE_MIXED) return _corral_dyn_size_bit(size);
  uint64_t seen = 0;
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++)
    if (_corral_dynm_find(&_corral_dyn.merge, i) == root) seen |= __atomic_load_n(&_corral_dyn.ctx[i].sizes_seen, __ATOMIC_RELAXED);
  return seen;
}

/* Whether some pool given back leaves many live objects of `footprint` in
 * the base beside a pool that made about `pooled` there (0: not known). */
static int beside_many(size_t footprint, uint64_t pooled) {
  for (unsigned h = 0; h < _corral_dyn.pools; h++)
    if (asked_for_footprint(&_corral_dyn.ctx[_corral_dyn.group_owner[h]], footprint) &&
        leaves_many_to_base((int)h, footprint, pooled))
      return 1;
  return 0;
}

/* Whether every allocation of the pool of context `root` pays the fast
 * way's lookup: none of its contexts is a call of its own that a slot stub
 * can serve (each is a wrapper's call, a call through a function pointer,
 * or of realloc), or no call is pointed at a stub at all (CORRAL_STUBS=0). */
static int reached_by_lookup(uint32_t root) {
  if (!_corral_options.stubs) return 1;
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++) {
    if (_corral_dynm_find(&_corral_dyn.merge, i) != root) continue;
    uintptr_t call = _corral_dyn_own_call(i);
    if (call && _corral_call_takes_slot(call)) return 0;
  }
  return 1;
}

/* Whether the pool of context `id` lays its objects out as the allocator
 * underneath already would, or looser, so that it can only cost: every
 * size it asks for (one context, or several merged; one size or several)
 * has here a block at least the footprint it has there (a size-class
 * allocator serving a size of its own class, or of 8 bytes, which the
 * pool's smallest block doubles; never glibc, whose header the pool
 * drops), and no pool that leaves many live objects to the base (given
 * back as `as_base` or `remote`) asked the full way for a size of one of
 * those footprints (sizes_seen): given back, this pool's objects would be
 * interleaved with those there. With `beside_counts` 0, what the pool
 * does beside the base does not count: a size it packs tighter (24 bytes,
 * where a size-class base takes 32) is taken as laid out as the base too,
 * and so is a size whose neighbour there makes many (see lookup_only
 * below). With
 * `steady`, at the pool's steady samples, a neighbour counts only as far
 * as it still makes objects of the class (leaves_many_to_base), and only
 * for a class holding an eighth of the pool's objects or more. A live
 * pool's objects stay in its own chunks, so of two lone pools of one class
 * the first judged is given back and the second stays: the two kinds stay
 * apart at one pool's cost. A pool of several sizes keeps each class in
 * chunks of its own, as a size-class base keeps each in pages of its own,
 * so it is judged class by class. Merged contexts are no reason to keep a
 * pool: the base puts their objects of one class together too, in the
 * order they are made, as the pool does. Pointers between this pool and
 * others do not matter: the base already keeps objects of other
 * footprints in other classes. */
static int laid_out_as_base(uint32_t id, int steady, int beside_counts) {
  uint32_t root = _corral_dynm_find(&_corral_dyn.merge, id);
  int g = _corral_dyn.ctx[root].group;
  if (g < 0 || _corral_dyn.merge.size[root] == 0) return 0;
  uint64_t sizes = pool_sizes(root);
  if (sizes == 0 || sizes >> 63) return 0;
  for (; sizes; sizes &= sizes - 1) {
    size_t size = _corral_dyn_bit_size(sizes);
    size_t footprint = _corral_next_footprint(size);
    if (footprint == 0 || (beside_counts && corral_class_size(corral_size_class(size)) < footprint)) return 0;
    if (!steady && beside_counts && beside_many(footprint, 0)) return 0;
  }
  if (!steady) return 1;
  /* At its steady samples: it goes once under an eighth of its objects,
   * as they sampled them, are of a class whose neighbour there makes many
   * (gawk's pools of 16-byte strings, kept at first for the few 8-byte
   * ones they also served: 5%). An eighth, where a class is worth keeping
   * apart from a quarter of the objects on: the first judgements rest on
   * 16 samples, and a pool half of whose objects share the class showed
   * 5 of 21 there. */
  uint64_t all = 0, apart = 0;
  for (unsigned b = 0; b < 63; b++) {
    uint64_t k = _corral_dyn.steady_by_size[g][b];
    if (k == 0) continue;
    size_t footprint = _corral_next_footprint(8 * (size_t)(b + 1));
    all += k;
    if (beside_many(footprint, class_count(_corral_dyn.steady_by_size[g], footprint) * DYN_STEADY_EVERY)) apart += k;
  }
  return apart * 8 < all;
}

/* Whether the pool of context `id` pays, judged at its samples on the
 * allocating thread, which owns the chunk `p` came from. It does not, and
 * is given back:
 * - when its objects are mostly freed by other threads (producers
 *   allocate, consumers free): it gains no locality and pays the group
 *   heap's cross-thread free on every object. `balance` counts the frees
 *   other threads pushed onto the chunk that its owner has not taken back
 *   yet, `drained` those it took back, `counted_allocs` the objects it
 *   handed out;
 * - when its live objects fit in a page (allocation-heavy, short-lived:
 *   each object is freed before many more are made): the allocator
 *   underneath keeps those few in a few hot lines anyway, so the pool has
 *   nothing to lay out and only costs its lookup and its free. A
 *   structure still being built looks small only to the pool's eager
 *   samples, which are at most half of the first DYN_JUDGE_AFTER: by its
 *   first steady sample it has grown by hundreds of objects.
 * - when its objects die young, though more than a page of them is live,
 *   and nothing links them to pooled objects (churn): its chunks hold
 *   under a quarter of the objects they handed out, and under one sample
 *   in eight found a pointer from its recent objects into a pool or one
 *   into it. Such objects are made, used and freed before layout can
 *   matter: the pool's only gain is packing tighter, and every request
 *   pays the lookup for it (universal-ctags' 24-byte string headers,
 *   five million made and under 2.4 MB live at once over `-R
 *   /usr/include`, kept dynamic mode watching the whole run: +2.85%
 *   instructions and +27.8% last-level data misses over mimalloc alone,
 *   cachegrind; +0.66% and +1.0% once given back). A structure freed
 *   whole at the end of each phase and rebuilt also churns, but links:
 *   it stays.
 * Each judged over all samples, once there are DYN_JUDGE_AFTER; a pool that
 * churns is given back already at its last eager sample: every eager sample
 * found it small and its chunk holds under a quarter of the objects it
 * handed out (a structure being built holds nearly all of them). A burst
 * too brief for steady samples (1 in 512 pooled allocations) would never
 * be judged otherwise, and each such pool keeps its own hot lines apart
 * from the allocator underneath's. At that last eager sample, too, a pool
 * laid out as the allocator underneath would lay it out goes (as_base);
 * at each steady sample after DYN_JUDGE_AFTER it is asked again, its
 * neighbours weighed by what they went on to make (as_base).
 *
 * A pool every allocation of which pays the lookup (reached_by_lookup),
 * over a size-class base, that would be laid out as the base but for the
 * sizes it packs tighter or keeps apart from a neighbour of their class
 * is marked lookup_only at that eager sample. It stays while other pools
 * are in use: its contexts' requests would pay the lookup all the same,
 * and its pop is cheaper than the lookup and the base's malloc together.
 * But it does not keep dynamic mode from stepping aside (back_off.c),
 * which then gives it back: neither packing tighter nor staying apart
 * pays for the lookup on every request where it was measured (lua5.4's
 * tables, 56 bytes where mimalloc takes 64: 7-8% fewer simulated misses,
 * 7.4% more instructions; xmllint's 120-byte nodes kept apart from their
 * neighbours: 3.4% more first-level misses, 10.6% more instructions, and
 * whether they stayed apart at all was the draw of the samples, which
 * decide which of two pools of one class is judged first; docs/dynamic.md,
 * "When a context gets a pool"). */
void _corral_dyn_judge_pool(uint32_t id, void *p, uint32_t size) {
  corral_chunk_t *chunk = _corral_chunk_header((uintptr_t)p);
  long undrained = atomic_load_explicit(&chunk->balance, memory_order_relaxed);
  uint64_t remote = chunk->drained + (uint64_t)(undrained > 0 ? undrained : 0);
  size_t object = chunk->block_size ? chunk->block_size : _corral_granules(size) * CORRAL_GRANULE;
  dyn_ctx_t *c = &_corral_dyn.ctx[id];
  uint32_t root = _corral_dynm_find(&_corral_dyn.merge, id);   /* nothing below merges */
  c->checks++;
  if (!_corral_dyn.ctx[root].lookup_only)
    _corral_dyn.pooled_sampled += c->checks <= DYN_EAGER_SAMPLES ? DYN_EAGER_EVERY : DYN_STEADY_EVERY;
  if (remote * 2 > chunk->counted_allocs) c->remote_heavy++;
  if (chunk->live * object < DYN_SMALL_BYTES) c->small++;
  if (chunk->live * 4 < chunk->counted_allocs) c->churn++;
  if (c->checks == DYN_EAGER_SAMPLES && c->small == c->checks && chunk->live * 4 < chunk->counted_allocs) {
    give_back(id, DYN_GIVEN_BACK_SMALL);
    return;
  }
  if (c->checks > DYN_EAGER_SAMPLES) {
    int g = _corral_dyn.ctx[root].group;
    if (g >= 0) _corral_dyn.steady_by_size[g][__builtin_ctzll(_corral_dyn_size_bit(size))]++;
  }
  if (c->checks == DYN_EAGER_SAMPLES) {
    if (laid_out_as_base(id, 0, 1)) {
      give_back(id, DYN_GIVEN_BACK_AS_BASE);
      return;
    }
    if (_corral_next_keeps_classes() && reached_by_lookup(root) && laid_out_as_base(id, 0, 0))
      _corral_dyn.ctx[root].lookup_only = 1;
  }
  if (c->checks < DYN_JUDGE_AFTER) return;
  if (c->remote_heavy * 4 > c->checks * 3) give_back(id, DYN_GIVEN_BACK_REMOTE);
  else if (c->small * 4 > c->checks * 3) give_back(id, DYN_GIVEN_BACK_SMALL);
  else if (c->churn * 4 > c->checks * 3 && _corral_dyn.ctx[root].linked * 8 < c->checks)
    give_back(id, DYN_GIVEN_BACK_CHURN);
  else if (laid_out_as_base(id, 1, 1)) give_back(id, DYN_GIVEN_BACK_AS_BASE);
}

/* (give_back.h) */
void _corral_dyn_calls_to_none(void) {
  DYN_ASSERT_LOCKED();
  if (!_corral_options.stubs) return;
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++) {
    const dyn_ctx_t *root = &_corral_dyn.ctx[_corral_dynm_find(&_corral_dyn.merge, i)];
    if (__atomic_load_n(&root->group, __ATOMIC_RELAXED) >= 0) point_at_none(i);
  }
}

void _corral_dyn_give_back_lookup_only(void) {
  DYN_ASSERT_LOCKED();
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++)
    if (_corral_dyn.ctx[i].lookup_only && _corral_dyn.ctx[i].group >= 0 && _corral_dynm_find(&_corral_dyn.merge, i) == i)
      give_back(i, DYN_GIVEN_BACK_AS_BASE);
}
