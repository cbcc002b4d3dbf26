/* The unaligned operator new's and new[]'s ways past their gate (ways.h),
 * for new.cc: written in C, since the ways inline the group heap's C
 * atomics. Their ends: the allocator underneath's malloc, which must not
 * hand operator new a NULL (on failure the full way takes over: the
 * new-handler, std::bad_alloc or nullptr), or its own operator new where it
 * has one that fails so itself (next.h), and operator new's full way. */
#include "ways.h"

/* std::nothrow_t is an empty tag, whose address the next allocator's
 * nothrow operator never reads. */
static const char nothrow_tag;

static void *next_new(size_t size)
{
  return _corral_next_new(size, _corral_next.new_object, _corral_new_rest);
}

static void *next_new_nothrow(size_t size)
{
  return _corral_next_new_nothrow(size, _corral_next.new_object_nothrow, &nothrow_tag, _corral_new_rest_nothrow);
}

static __attribute__((noinline, cold)) void *new_at(size_t size, int g, void *ret0, void *fp0)
{
  return _corral_way_at(size, g, ret0, fp0, next_new);
}

static __attribute__((noinline, cold)) void *new_at_nothrow(size_t size, int g, void *ret0, void *fp0)
{
  return _corral_way_at(size, g, ret0, fp0, next_new_nothrow);
}

static __attribute__((noinline)) void *new_stubbed(size_t size, const corral_ident_tables_t *t)
{
  return _corral_way_stubbed(size, t, __builtin_return_address(0), __builtin_frame_address(0), next_new, new_at);
}

static __attribute__((noinline)) void *new_stubbed_nothrow(size_t size, const corral_ident_tables_t *t)
{
  return _corral_way_stubbed(size, t, __builtin_return_address(0), __builtin_frame_address(0), next_new_nothrow,
                             new_at_nothrow);
}

static __attribute__((noinline)) void *new_noted(size_t size, const corral_ident_tables_t *t)
{
  return _corral_way_noted(size, t, (uintptr_t)__builtin_frame_address(0) + 8, next_new, new_stubbed);
}

static __attribute__((noinline)) void *new_noted_nothrow(size_t size, const corral_ident_tables_t *t)
{
  return _corral_way_noted(size, t, (uintptr_t)__builtin_frame_address(0) + 8, next_new_nothrow,
                           new_stubbed_nothrow);
}

/* operator new's and new[]'s way in dynamic mode (CORRAL_GATE_DYNAMIC), and
 * their nothrow forms: malloc's (malloc.c, "4. dynamic"), ending in
 * operator new's full way. */
__attribute__((noinline)) void *_corral_dyn_new(size_t size) {
  void *p = NULL;
  int way = _corral_dyn_fast_way(size, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p);
  p = new_by(way, p, size);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(size);
}

__attribute__((noinline)) void *_corral_dyn_new_nothrow(size_t size) {
  void *p = NULL;
  int way = _corral_dyn_fast_way(size, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p);
  p = new_by(way, p, size);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(size);
}

/* operator new's and new[]'s way with random pools (CORRAL_GATE_RANDOM),
 * and their nothrow forms: malloc's (malloc.c, "5. random"), ending in
 * operator new's full way once group memory runs out. mimalloc-bench's
 * larson makes every object with new[]: on the full way each took about
 * 100 instructions in libcorral.so, where mimalloc's new[] takes 39. */
static __attribute__((noinline)) void *new_random(size_t size)
{
  void *p = _corral_random_block(size);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(size);
}

static __attribute__((noinline)) void *new_random_nothrow(size_t size)
{
  void *p = _corral_random_block(size);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(size);
}

/* The same in safe mode without statistics (CORRAL_GATE_SAFE): malloc's
 * (malloc.c, "6. safe"), ending in operator new's full way. */
static __attribute__((noinline)) void *new_safe_site(size_t size, const corral_dync_site_t *s)
{
  void *p = _corral_safe_pop(size, s, __builtin_return_address(0), __builtin_frame_address(0));
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(size);
}

static __attribute__((noinline)) void *new_safe_site_nothrow(size_t size, const corral_dync_site_t *s)
{
  void *p = _corral_safe_pop(size, s, __builtin_return_address(0), __builtin_frame_address(0));
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(size);
}

/* A site of its own with its group takes no frame; any other the ways
 * above, by a tail call (malloc.c, malloc_safe). */
static __attribute__((noinline)) void *new_safe(size_t size)
{
  const corral_dync_site_t *s;
  int g = _corral_safe_known_group((uintptr_t)__builtin_return_address(0), &s);
  if (CORRAL_UNLIKELY(g < 0)) return new_safe_site(size, s);
  void *p = _corral_safe_pop_from(size, (unsigned)g);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(size);
}

static __attribute__((noinline)) void *new_safe_nothrow(size_t size)
{
  const corral_dync_site_t *s;
  int g = _corral_safe_known_group((uintptr_t)__builtin_return_address(0), &s);
  if (CORRAL_UNLIKELY(g < 0)) return new_safe_site_nothrow(size, s);
  void *p = _corral_safe_pop_from(size, (unsigned)g);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(size);
}

/* Entered by a tail call from operator new once its first test found the
 * request concerns corral (gates.h): past a negative gate dynamic mode's
 * way, random pools', safe mode's or the full way, past the others malloc's ways. The
 * gate is read once here; the first test's own read may be a moment older,
 * which only sends a request the way it would have gone a moment earlier. */
CORRAL_INLINE void *new_gated(size_t size, corral_end_fn next, corral_end_fn rest, corral_end_fn dynamic,
                              corral_end_fn random, corral_end_fn safe, corral_decide_fn stubbed,
                              corral_decide_fn noted)
{
  int64_t gate = __atomic_load_n(&_corral_gates.on_new, __ATOMIC_RELAXED);
  if (gate < 0) {
    if (gate == CORRAL_GATE_DYNAMIC) return dynamic(size);
    if (gate == CORRAL_GATE_RANDOM) return random(size);
    if (gate == CORRAL_GATE_SAFE) return safe(size);
    return rest(size);
  }
  uint64_t live = _corral_stub_notes.live;   /* only the plan's ways read the notes */
  return _corral_way_gated(size, live, gate, __atomic_load_n(&_corral_direct_tables, __ATOMIC_ACQUIRE), next,
                           rest, stubbed, noted);
}

void *_corral_new_gated(size_t size)
{
  return new_gated(size, next_new, _corral_new_rest, _corral_dyn_new, new_random, new_safe, new_stubbed, new_noted);
}

void *_corral_new_gated_nothrow(size_t size)
{
  return new_gated(size, next_new_nothrow, _corral_new_rest_nothrow, _corral_dyn_new_nothrow, new_random_nothrow,
                   new_safe_nothrow, new_stubbed_nothrow, new_noted_nothrow);
}
