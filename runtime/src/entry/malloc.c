/* The C allocation API, and every way a request takes through it, in the
 * order malloc tries them. The runtime's own words (gate, way, note, slot,
 * frame 0, pool call) are explained in docs/runtime.md, "Words".
 *
 * A small request to malloc (below the gates' forward_from) goes:
 *   1. forwarded: its entry point's gate is open and no stub site is noted
 *      live on this thread: straight to the allocator underneath;
 *   2. direct: the gate holds the direct table's probe open and frame 0 is
 *      in it: its pool, or the allocator underneath (ways.h);
 *   3. stub-decided: a stub site is noted live: the notes decide (ways.h,
 *      malloc_stubbed, malloc_noted);
 *   4. dynamic: the gate says dynamic mode: a settled site's decision
 *      (dynamic/settled.h);
 *   5. random: random pools without statistics: a pool at random;
 *   6. safe: safe mode without statistics: the site's pool, popped with
 *      safe mode's checks (safe/safe_ways.h);
 *   7. walked, the full way: everything else (statistics, a plan that
 *      needs a walk, a collision, safe mode's first request of a site or
 *      empty list): safe mode's own way, or the group that the direct
 *      table or identification's walk finds, else the allocator underneath
 *      (alloc_at);
 *   8. early: before the runtime is ready, the bootstrap buffer or the
 *      allocator underneath.
 * A request at or above forward_from is forwarded at once. free takes the
 * allocator underneath's pointers in one compare, then the owner's block
 * free, then every test in turn (free's ways, at the end). The C++
 * operators take the same ways (new.cc, new_ways.c); calls the stubs
 * pointed at a pool or a slot enter call_ways.c. */
#include "entry.h"
#include "ways.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096

/* The ways below, named here so that the API reads first. */
static void *malloc_huge(size_t size);
static void *malloc_random(size_t size);
static void *calloc_random(size_t n, size_t size, size_t total);
static void *malloc_safe(size_t size);
static void *calloc_safe(size_t n, size_t size, size_t total);
static void *next_malloc(size_t size);
static void *malloc_at(size_t size, int g, void *ret0, void *fp0);
static void *malloc_stubbed(size_t size, const corral_ident_tables_t *t);
static void *malloc_noted(size_t size, const corral_ident_tables_t *t);
static void *aligned(size_t align, size_t size);
static void *aligned_at(size_t align, size_t size, void *ret0, void *fp0, void *cfa);
static void *alloc_at(size_t size, size_t align, void *ret0, void *fp0, int zero);
static void *alloc_early(size_t size, size_t align, int zero);
static void *realloc_at(void *p, size_t size, void *ret0, void *fp0);
static size_t usable_size(void *p);
static void *move_to(void *q, void *p, size_t old, size_t size);
static int power_of_two(size_t x);
static void *dyn_malloc(size_t size);
static void *dyn_calloc(size_t n, size_t size);
static void *dyn_realloc(void *p, size_t size);
static void *dyn_memalign(size_t align, size_t size);
static int dyn_aligned(size_t align, size_t size, uintptr_t ret, uintptr_t cfa, void **block);
static void *malloc_safe(size_t size);

/* ---- the exported C API -------------------------------------------------------- */

/* malloc, calloc and realloc first test whether the request can concern
 * corral at all; if not they go straight to the next allocator, setting
 * errno where it failed and the allocator did not: mimalloc leaves it alone
 * for sizes above PTRDIFF_MAX (which nothing can serve), jemalloc's realloc
 * always. malloc and calloc forward every other size by a tail jump. The
 * rest continues in a *_rest function entered by a tail call:
 * its own return and frame address are then those of the program's call,
 * as the exported function's would have been (frame 0 for identification).
 * -O2 makes these sibling calls; the identification tests fail otherwise.
 * (_corral_enomem_if_null, next.h, sets errno where the next did not.) */

/* Small requests first test the gate and this thread's stub notes: with
 * both clear nothing of corral is concerned. Past a negative gate, dynamic
 * mode's way, random pools' or the full way; past the others, the ways of
 * ways.h. Kept free of calls other than tail calls, so that it needs no
 * frame. */
CORRAL_EXPORT void *malloc(size_t size)
{
  if (CORRAL_LIKELY(size >= __atomic_load_n(&_corral_gates.forward_from, __ATOMIC_ACQUIRE))) {
    if (CORRAL_LIKELY(size <= PTRDIFF_MAX)) return _corral_next.malloc(size);
    return malloc_huge(size);
  }
  if (CORRAL_LIKELY(_corral_gate_open(&_corral_gates.on_malloc))) return _corral_next.malloc(size);
  /* Read again: the first test keeps neither, which saves the way out a
   * move. The notes only past a gate that is not negative: dynamic mode's
   * and random pools' ways never read them. */
  int64_t gate = __atomic_load_n(&_corral_gates.on_malloc, __ATOMIC_RELAXED);
  if (gate < 0) {
    if (gate == CORRAL_GATE_DYNAMIC) return dyn_malloc(size);
    if (gate == CORRAL_GATE_RANDOM) return malloc_random(size);
    if (gate == CORRAL_GATE_SAFE) return malloc_safe(size);
    return _corral_malloc_rest(size);                            /* CORRAL_GATE_FULL */
  }
  uint64_t live = _corral_stub_notes.live;
  return _corral_way_gated(size, live, gate, __atomic_load_n(&_corral_direct_tables, __ATOMIC_ACQUIRE),
                           next_malloc, _corral_malloc_rest, malloc_stubbed, malloc_noted);
}

CORRAL_EXPORT void *calloc(size_t n, size_t size)
{
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  if (CORRAL_LIKELY(total >= __atomic_load_n(&_corral_gates.forward_from, __ATOMIC_ACQUIRE))) {
    if (CORRAL_LIKELY(total <= PTRDIFF_MAX)) return _corral_next.calloc(n, size);
    return _corral_enomem_if_null(_corral_next.calloc(n, size));
  }
  if (CORRAL_LIKELY(_corral_gate_open(&_corral_gates.on_calloc))) return _corral_next.calloc(n, size);
  int64_t gate = __atomic_load_n(&_corral_gates.on_calloc, __ATOMIC_RELAXED);
  if (gate == CORRAL_GATE_DYNAMIC) return dyn_calloc(n, size);
  if (gate == CORRAL_GATE_RANDOM) return calloc_random(n, size, total);
  if (gate == CORRAL_GATE_SAFE) return calloc_safe(n, size, total);
  return _corral_calloc_rest(n, size);
}

/* The short way only for a size that is not 0: corral keeps glibc's
 * realloc(p, 0) (free, return NULL) whatever the allocator underneath. In
 * dynamic mode a pointer of the allocator underneath (or NULL) may take
 * dynamic mode's own way; in safe mode NULL takes malloc's. */
CORRAL_EXPORT void *realloc(void *p, size_t size)
{
  if (CORRAL_LIKELY(_corral_foreign(p))) {
    /* The window's compare, and one sign test for 0 and sizes past
     * PTRDIFF_MAX (realloc_from is SIZE_MAX where the next realloc leaves
     * errno unset): Lua reallocates every object, and this way took 11
     * instructions when it tested size, forward_from and the errno flag
     * apart. */
    if (CORRAL_LIKELY(size >= __atomic_load_n(&_corral_gates.realloc_from, __ATOMIC_ACQUIRE) && (ptrdiff_t)size > 0))
      return p ? _corral_next.realloc(p, size) : _corral_next.malloc(size);   /* _corral_next_realloc says why */
    /* Dynamic mode's sizes, 1 to forward_from - 1, in one unsigned compare
     * (its gate is never open: notes do not matter to it). */
    int64_t gate = __atomic_load_n(&_corral_gates.on_realloc, __ATOMIC_RELAXED);
    if (gate == CORRAL_GATE_DYNAMIC && size - 1 < __atomic_load_n(&_corral_gates.forward_from, __ATOMIC_ACQUIRE) - 1)
      return dyn_realloc(p, size);
    /* Safe mode: realloc of NULL is malloc, by the same short way (Lua
     * makes every object so; the full way cost it a site walk each). */
    if (gate == CORRAL_GATE_SAFE && p == NULL) return malloc_safe(size);
    if (CORRAL_LIKELY(size != 0 && (size >= __atomic_load_n(&_corral_gates.forward_from, __ATOMIC_ACQUIRE) ||
                                    _corral_gate_open(&_corral_gates.on_realloc))))
      return _corral_next_realloc(p, size);
  }
  return _corral_realloc_rest(p, size);
}

CORRAL_EXPORT void *reallocarray(void *p, size_t n, size_t size)
{
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  void *q = realloc_at(p, total, __builtin_return_address(0), __builtin_frame_address(0));
  CORRAL_KEEP_FRAME(q);
  return q;
}

CORRAL_EXPORT int posix_memalign(void **out, size_t align, size_t size)
{
  if (!power_of_two(align) || align % sizeof(void *)) return EINVAL;
  int saved = errno;
  void *p = aligned_at(align, size, __builtin_return_address(0), __builtin_frame_address(0), __builtin_dwarf_cfa());
  int err = p ? 0 : errno ? errno : ENOMEM;
  errno = saved;                        /* posix_memalign leaves errno alone */
  if (!p) return err == EINVAL ? EINVAL : ENOMEM;
  *out = p;
  return 0;
}

CORRAL_EXPORT void *aligned_alloc(size_t align, size_t size)
{
  if (!power_of_two(align)) {
    errno = EINVAL;
    return NULL;
  }
  return aligned(align, size);
}

CORRAL_EXPORT void *memalign(size_t align, size_t size)
{
  /* glibc rounds an alignment that is not a power of two up to one. */
  if (!power_of_two(align)) {
    if (align > ((size_t)1 << (sizeof(size_t) * 8 - 2))) {
      errno = EINVAL;
      return NULL;
    }
    size_t a = 16;
    while (a < align) a <<= 1;
    align = a;
  }
  return aligned(align, size);
}

CORRAL_EXPORT void *valloc(size_t size)
{
  return alloc_at(size, PAGE, __builtin_return_address(0), __builtin_frame_address(0), 0);
}

CORRAL_EXPORT void *pvalloc(size_t size)
{
  size_t rounded = (size + PAGE - 1) & ~(size_t)(PAGE - 1);
  if (rounded < size) {
    errno = ENOMEM;
    return NULL;
  }
  if (rounded == 0) rounded = PAGE;
  return alloc_at(rounded, PAGE, __builtin_return_address(0), __builtin_frame_address(0), 0);
}

CORRAL_EXPORT size_t malloc_usable_size(void *p)
{
  return usable_size(p);
}

CORRAL_EXPORT int corral_group_of(const void *p)
{
  return _corral_group_of_address(p);
}

/* ---- 1. forwarded -------------------------------------------------------------- */

/* Out of line, so that malloc's short ways need no frame. */
static __attribute__((noinline, cold)) void *malloc_huge(size_t size)
{
  return _corral_enomem_if_null(_corral_next.malloc(size));
}

/* Where malloc's PLT slots lead once dynamic mode has stepped aside, over
 * an allocator that does not set errno past PTRDIFF_MAX itself
 * (bypass_targets.c): malloc with every gate closed, without its compare
 * against the gate. */
void *_corral_malloc_forward(size_t size)
{
  if (CORRAL_LIKELY(size <= PTRDIFF_MAX)) return _corral_next.malloc(size);
  return malloc_huge(size);
}

/* malloc's steps of the ways past its gate (ways.h), with malloc's ends:
 * the allocator underneath's malloc and _corral_malloc_rest. Entered by tail
 * calls, so that their return and frame address are the program's call. */
static void *next_malloc(size_t size) { return _corral_next.malloc(size); }

/* ---- 2, 3. direct and stub-decided (bodies in ways.h) -------------------------- */

static __attribute__((noinline, cold)) void *malloc_at(size_t size, int g, void *ret0, void *fp0)
{
  return _corral_way_at(size, g, ret0, fp0, next_malloc);
}

static __attribute__((noinline)) void *malloc_stubbed(size_t size, const corral_ident_tables_t *t)
{
  return _corral_way_stubbed(size, t, __builtin_return_address(0), __builtin_frame_address(0), next_malloc,
                             malloc_at);
}

static __attribute__((noinline)) void *malloc_noted(size_t size, const corral_ident_tables_t *t)
{
  return _corral_way_noted(size, t, (uintptr_t)__builtin_frame_address(0) + 8, next_malloc, malloc_stubbed);
}

/* ---- 4. dynamic ---------------------------------------------------------------- */

/* malloc's way in dynamic mode (gates.h, CORRAL_GATE_DYNAMIC), entered by
 * a tail call: its return address is the program's call. A settled site
 * forwards, or pops its pool's current chunk and counts the object on it
 * for the remote-free judgement; anything else continues on malloc's full
 * way, which decides from scratch. A site inside a wrapper, whose word
 * costs a call, takes dyn_malloc_wrapped, so that dyn_malloc makes only
 * tail calls and saves no registers. */
static __attribute__((noinline)) void *dyn_malloc_wrapped(size_t size, const corral_dync_site_t *s, uintptr_t ret,
                                                          uintptr_t cfa) {
  void *p = NULL;
  int way = _corral_dyn_word_way(_corral_dyn_kind_word(s, size, ret, cfa, 1), size, &p);
  return malloc_by(way, p, size);
}

static __attribute__((noinline)) void *dyn_malloc(size_t size) {
  if (size > _corral_dyn_settled.max_size) return _corral_next.malloc(size);
  uintptr_t ret = (uintptr_t)__builtin_return_address(0);
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, ret);
  if (CORRAL_UNLIKELY(s == NULL)) return _corral_malloc_rest(size);
  if (CORRAL_UNLIKELY(s->kind == DYNC_SITE_WRAPPER))
    return dyn_malloc_wrapped(size, s, ret, (uintptr_t)__builtin_dwarf_cfa());
  void *p = NULL;
  int way = _corral_dyn_word_way(_corral_dyn_kind_word(s, size, ret, 0, 0), size, &p);
  return malloc_by(way, p, size);
}

/* The same for calloc (malloc.c). */
static __attribute__((noinline)) void *dyn_calloc_wrapped(size_t n, size_t size, size_t total,
                                                          const corral_dync_site_t *s, uintptr_t ret, uintptr_t cfa) {
  void *p = NULL;
  int way = _corral_dyn_word_way(_corral_dyn_kind_word(s, total, ret, cfa, 1), total, &p);
  return calloc_by(way, p, n, size, total);
}

static __attribute__((noinline)) void *dyn_calloc(size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) return _corral_calloc_rest(n, size);   /* it says ENOMEM */
  if (total > _corral_dyn_settled.max_size) return _corral_next.calloc(n, size);
  uintptr_t ret = (uintptr_t)__builtin_return_address(0);
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, ret);
  if (CORRAL_UNLIKELY(s == NULL)) return _corral_calloc_rest(n, size);
  if (CORRAL_UNLIKELY(s->kind == DYNC_SITE_WRAPPER))
    return dyn_calloc_wrapped(n, size, total, s, ret, (uintptr_t)__builtin_dwarf_cfa());
  void *p = NULL;
  int way = _corral_dyn_word_way(_corral_dyn_kind_word(s, total, ret, 0, 0), total, &p);
  return calloc_by(way, p, n, size, total);
}

/* realloc's decision on a site's settled word f (_corral_dyn_kind_word's). */
CORRAL_INLINE void *dyn_realloc_by(void *p, size_t size, uint64_t f) {
  if (CORRAL_UNLIKELY(f == 0)) return _corral_realloc_rest(p, size);
  uint32_t pool = (uint32_t)f & 0xffff;
  if (pool == 0) return _corral_dyn_may_forward() ? _corral_next_realloc(p, size) : _corral_realloc_rest(p, size);
  if (p) return _corral_realloc_rest(p, size);
  void *q = NULL;
  if (_corral_dyn_settled_way(size, pool, &q) == CORRAL_DYN_POPPED) return q;
  return _corral_realloc_rest(p, size);
}

static __attribute__((noinline)) void *dyn_realloc_wrapped(void *p, size_t size, const corral_dync_site_t *s,
                                                           uintptr_t ret, uintptr_t cfa) {
  return dyn_realloc_by(p, size, _corral_dyn_kind_word(s, size, ret, cfa, 1));
}

/* The same for realloc of NULL or of a pointer of the allocator underneath
 * (malloc.c): a settled decision to forward forwards; NULL may also
 * take a block of a settled pool. Moving a block into a pool is the full
 * way's. Lua makes every object here, half of them forwarded: every way
 * out of dyn_realloc is a tail call, so that it saves no registers, and a
 * site inside a wrapper, whose word costs a call, takes
 * dyn_realloc_wrapped. */
static __attribute__((noinline)) void *dyn_realloc(void *p, size_t size) {
  if (size > _corral_dyn_settled.max_size) return _corral_next_realloc(p, size);   /* never pooled */
  uintptr_t ret = (uintptr_t)__builtin_return_address(0);
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, ret);
  if (CORRAL_UNLIKELY(s == NULL)) return _corral_realloc_rest(p, size);
  if (CORRAL_UNLIKELY(s->kind == DYNC_SITE_WRAPPER))
    return dyn_realloc_wrapped(p, size, s, ret, (uintptr_t)__builtin_dwarf_cfa());
  return dyn_realloc_by(p, size, _corral_dyn_kind_word(s, size, ret, 0, 0));
}

static __attribute__((noinline)) void *dyn_memalign(size_t align, size_t size) {
  void *p = NULL;
  switch (_corral_dyn_aligned_way(align, size, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p)) {
  case CORRAL_DYN_POPPED: return p;
  case CORRAL_DYN_FORWARD: return _corral_next_alloc(size, align, 0);
  default: return _corral_aligned_rest(align, size);
  }
}

/* posix_memalign's decision, out of line as it was when it lived in dynamic
 * mode's own file: posix_memalign keeps its small frame. */
static __attribute__((noinline)) int dyn_aligned(size_t align, size_t size, uintptr_t ret, uintptr_t cfa, void **block) {
  return _corral_dyn_aligned_way(align, size, ret, cfa, block);
}

/* ---- 5. random ----------------------------------------------------------------- */

__thread uint64_t _corral_rng __attribute__((tls_model("initial-exec")));

/* Random pools without statistics (CORRAL_GATE_RANDOM): the request is
 * below max_size (forward_from), so a pool's pop is all it takes; an empty
 * list is refilled from the same pool's chunks, and only when group memory
 * runs out does the full way (which picks again, then forwards) take over.
 * Entered by a tail call. */
static __attribute__((noinline)) void *malloc_random(size_t size)
{
  void *p = _corral_random_block(size);
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_malloc_rest(size);
}

/* The same for calloc: the block is zeroed (a pool hands out freed blocks
 * as they were left). */
static __attribute__((noinline)) void *calloc_random(size_t n, size_t size, size_t total)
{
  void *p = _corral_random_block(total);
  if (CORRAL_LIKELY(p != NULL)) return memset(p, 0, total);
  return _corral_calloc_rest(n, size);
}

/* ---- 6. safe ------------------------------------------------------------------- */

/* Safe mode without statistics (CORRAL_GATE_SAFE): every size comes here
 * (safe mode forwards nothing); a block of the site's pool when its list
 * has one, else the full way, which refills, makes a site's group, serves
 * a large block or reports a forged link. Entered by a tail call, so that
 * frame 0 is the program's call, as the full way sees it. */
static __attribute__((noinline)) void *malloc_safe_site(size_t size, const corral_dync_site_t *s)
{
  void *p = _corral_safe_pop(size, s, __builtin_return_address(0), __builtin_frame_address(0));
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_malloc_rest(size);
}

/* A site of its own with its group takes no frame (safe_ways.h,
 * _corral_safe_known_group); any other, by a tail call, the way above,
 * whose frame is then the entry's, for a walk through wrappers. */
static __attribute__((noinline)) void *malloc_safe(size_t size)
{
  const corral_dync_site_t *s;
  int g = _corral_safe_known_group((uintptr_t)__builtin_return_address(0), &s);
  if (CORRAL_UNLIKELY(g < 0)) return malloc_safe_site(size, s);
  void *p = _corral_safe_pop_from(size, (unsigned)g);
  if (CORRAL_LIKELY(p != NULL)) return p;
  return _corral_malloc_rest(size);
}

/* The same for calloc: the block is zeroed (a pool hands out freed blocks
 * as they were left). */
static __attribute__((noinline)) void *calloc_safe_site(size_t n, size_t size, size_t total,
                                                        const corral_dync_site_t *s)
{
  void *p = _corral_safe_pop(total, s, __builtin_return_address(0), __builtin_frame_address(0));
  if (CORRAL_LIKELY(p != NULL)) return memset(p, 0, total);
  return _corral_calloc_rest(n, size);
}

static __attribute__((noinline)) void *calloc_safe(size_t n, size_t size, size_t total)
{
  const corral_dync_site_t *s;
  int g = _corral_safe_known_group((uintptr_t)__builtin_return_address(0), &s);
  if (CORRAL_UNLIKELY(g < 0)) return calloc_safe_site(n, size, total, s);
  void *p = _corral_safe_pop_from(total, (unsigned)g);
  if (CORRAL_LIKELY(p != NULL)) return memset(p, 0, total);
  return _corral_calloc_rest(n, size);
}

/* ---- 7. walked: the full way --------------------------------------------------- */

/* Only counted when statistics are asked for: it costs a TLS access on the
 * path that should cost nothing. */
CORRAL_INLINE void count_ungrouped(size_t size)
{
  if (!_corral_options.stats) return;
  corral_heap_t *h = _corral_heap_get();
  if (CORRAL_LIKELY(h != NULL)) {
    h->ungrouped_objects++;
    h->ungrouped_bytes += size;
  }
}

/* Group of an allocation, or -1. Random pools pick one at random;
 * otherwise the plan decides. */
CORRAL_INLINE int pick_group(size_t size, void *ret0, void *fp0)
{
  if (size > _corral_options.max_size || _corral_ngroups == 0) return -1;
  if (_corral_options.random_pools > 0) return (int)_corral_random_group();
  /* A frame-0 decision without a call: the direct table's first probe. */
  const corral_ident_tables_t *t = __atomic_load_n(&_corral_ident.tables, __ATOMIC_ACQUIRE);
  const corral_direct_entry_t *e;
  int g;
  if (CORRAL_LIKELY(t != NULL && !_corral_modes.track && t->direct_mask != 0) &&
      (e = _corral_direct_first(t, (uintptr_t)ret0))->key == (uintptr_t)ret0)
    g = (int)e->group;
  else
    g = _corral_identify(ret0, fp0, size);
  return g < (int)_corral_ngroups ? g : -1;
}

/* align: 0 = malloc's (16), else a power of two. NULL on failure (errno set). */
CORRAL_INLINE void *alloc_at(size_t size, size_t align, void *ret0, void *fp0, int zero)
{
  if (CORRAL_UNLIKELY(atomic_load_explicit(&_corral_state, memory_order_relaxed) != CORRAL_STATE_READY))
    return alloc_early(size, align, zero);
  if (CORRAL_UNLIKELY(_corral_modes.safe)) return _corral_safe_alloc(size, align, ret0, fp0, zero);
  if (align <= CORRAL_MAX_GROUP_ALIGN) {
    int g = pick_group(size, ret0, fp0);
    if (g >= 0) {
      void *p = _corral_group_alloc((unsigned)g, size, align);
      if (CORRAL_LIKELY(p != NULL)) {
        if (CORRAL_UNLIKELY(_corral_modes.dynamic)) _corral_dyn_allocated(p);
        if (zero) memset(p, 0, size);
        return p;
      }
    }
  }
  count_ungrouped(size);
  return _corral_next_alloc(size, align, zero);
}

__attribute__((noinline)) void *_corral_malloc_rest(size_t size)
{
  return alloc_at(size, 0, __builtin_return_address(0), __builtin_frame_address(0), 0);
}

__attribute__((noinline)) void *_corral_calloc_rest(size_t n, size_t size)
{
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return alloc_at(total, 0, __builtin_return_address(0), __builtin_frame_address(0), 1);
}

__attribute__((noinline)) void *_corral_realloc_rest(void *p, size_t size)
{
  void *q = realloc_at(p, size, __builtin_return_address(0), __builtin_frame_address(0));
  CORRAL_KEEP_FRAME(q);
  return q;
}

__attribute__((noinline)) void *_corral_aligned_rest(size_t align, size_t size)
{
  return alloc_at(size, align, __builtin_return_address(0), __builtin_frame_address(0), 0);
}

static int power_of_two(size_t x) { return x && !(x & (x - 1)); }

/* memalign's and aligned_alloc's way (align a power of two), out of line so
 * that the entry points' checks save no registers: dynamic mode's own, or
 * the full way, each by a tail call. */
CORRAL_INLINE void *aligned(size_t align, size_t size)
{
  if (__atomic_load_n(&_corral_gates.on_malloc, __ATOMIC_RELAXED) == CORRAL_GATE_DYNAMIC)
    return dyn_memalign(align, size);
  return _corral_aligned_rest(align, size);
}

/* posix_memalign's way: ret0, fp0 and cfa are its own. In dynamic mode a
 * settled site decides first. */
CORRAL_INLINE void *aligned_at(size_t align, size_t size, void *ret0, void *fp0, void *cfa)
{
  if (__atomic_load_n(&_corral_gates.on_malloc, __ATOMIC_RELAXED) == CORRAL_GATE_DYNAMIC) {
    void *p = NULL;
    switch (dyn_aligned(align, size, (uintptr_t)ret0, (uintptr_t)cfa, &p)) {
    case CORRAL_DYN_POPPED: return p;
    case CORRAL_DYN_FORWARD: return _corral_next_alloc(size, align, 0);
    default: break;
    }
  }
  return alloc_at(size, align, ret0, fp0, 0);
}

static void *realloc_at(void *p, size_t size, void *ret0, void *fp0)
{
  if (!p) return alloc_at(size, 0, ret0, fp0, 0);
  if (size == 0) {                      /* glibc: free and return NULL */
    _corral_free(p);
    return NULL;
  }
  if (CORRAL_UNLIKELY(atomic_load(&_corral_state) != CORRAL_STATE_READY) || _corral_is_boot(p)) {
    if (!_corral_is_boot(p)) return _corral_next.realloc(p, size);
    return move_to(alloc_early(size, 16, 0), p, _corral_boot_size(p), size);
  }
  if (CORRAL_UNLIKELY(_corral_modes.safe)) return _corral_safe_realloc(p, size, ret0, fp0);
  corral_where_t where;
  corral_chunk_t *c = _corral_chunk_of(p, &where);
  if (where != CORRAL_OBJECT && where != CORRAL_NOT_GROUP) {
    _corral_warn("realloc of invalid pointer %p (%s)", p, _corral_where_text(where));
    errno = ENOMEM;
    return NULL;
  }
  if (c) {
    size_t old = _corral_object_size(c, p);
    if (size <= old) return p;          /* shrinking keeps the slot */
    /* Growing stays in the object's group while it fits max_size. */
    void *q = size <= _corral_options.max_size ? _corral_group_alloc(c->group, size, 0) : NULL;
    if (!q) {
      q = _corral_next.malloc(size);
      if (q) count_ungrouped(size);
    }
    return move_to(q, p, old, size);
  }
  /* Ungrouped: the realloc call site may belong to a group. */
  int g = pick_group(size, ret0, fp0);
  if (g >= 0) {
    void *q = _corral_group_alloc((unsigned)g, size, 0);
    if (q && CORRAL_UNLIKELY(_corral_modes.dynamic)) _corral_dyn_allocated(q);
    if (q) return move_to(q, p, usable_size(p), size);
  }
  void *q = _corral_next.realloc(p, size);
  if (CORRAL_UNLIKELY(!q)) errno = ENOMEM;
  return q;
}

/* For the C++ operators (new.cc), which cannot include the C11 atomics of
 * entry.h: ret0/fp0 are those of the exported operator. */
void *_corral_new_alloc(size_t size, size_t align, void *ret0, void *fp0)
{
  return alloc_at(size, align, ret0, fp0, 0);
}

/* ---- 8. early ------------------------------------------------------------------ */

/* Before init completed: the bootstrap buffer on the initialising thread,
 * else the next allocator. */
static void *alloc_early(size_t size, size_t align, int zero)
{
  int state = atomic_load(&_corral_state);
  if (state < CORRAL_STATE_FORWARD) state = _corral_init_slow(&_corral_call_targets);
  if (state < CORRAL_STATE_FORWARD) return _corral_boot_alloc(size, align);   /* zeroed */
  if (align) return _corral_next_aligned(align, size);
  return zero ? _corral_next.calloc(1, size) : _corral_next.malloc(size);
}

/* Start the runtime when the library is loaded, if no allocation has. */
__attribute__((constructor)) static void corral_constructor(void)
{
  if (atomic_load(&_corral_state) == CORRAL_STATE_NONE) _corral_init_slow(&_corral_call_targets);
}

/* ---- free's ways --------------------------------------------------------------- */

static __attribute__((noinline)) void free_checked(void *p, void *ret)
{
  if (CORRAL_UNLIKELY(!p)) return;
  corral_where_t where;
  corral_chunk_t *c = _corral_chunk_of(p, &where);
  if (CORRAL_UNLIKELY(_corral_modes.safe)) {
    _corral_safe_free_site = ret;
    if (c) _corral_group_free(c, p);
    else _corral_safe_free_other(p, where, ret);
    return;
  }
  if (CORRAL_LIKELY(c != NULL)) {
    _corral_group_free(c, p);
    return;
  }
  if (CORRAL_UNLIKELY(where != CORRAL_NOT_GROUP)) {
    _corral_warn("invalid free of %p (%s; ignored)", p, _corral_where_text(where));
    return;
  }
  if (CORRAL_UNLIKELY(_corral_is_boot(p))) return;
  if (CORRAL_UNLIKELY(!_corral_next.free)) return;     /* nothing of the next allocator exists yet */
  _corral_next.free(p);
}

/* free of any pointer, and free itself (below): the next allocator's
 * pointers in one compare, then the owner's block free in the first range,
 * then every test in turn. */
void _corral_free(void *p)
{
  if (CORRAL_LIKELY(_corral_foreign(p))) return _corral_next.free(p);
  if (CORRAL_LIKELY(_corral_free_owned(p))) return;
  free_checked(p, __builtin_return_address(0));
}

CORRAL_EXPORT void free(void *p) __attribute__((alias("_corral_free")));
CORRAL_EXPORT void cfree(void *p) __attribute__((alias("_corral_free")));

/* Every C++ operator delete is free itself, under its mangled name (C has
 * no operators): its size, alignment and nothrow arguments change nothing
 * here, and each of a C++ program's deletes is spared a jump from a body in
 * new.cc (cppcheck makes 9 M on a small file, docs/runtime.md, "C++
 * operators"). Its return address is the program's call, as free's is. */
#define CORRAL_DELETE(name) CORRAL_EXPORT void name(void *p) __attribute__((alias("_corral_free")))
CORRAL_DELETE(_ZdlPv);                                    /* delete(void *) */
CORRAL_DELETE(_ZdaPv);                                    /* delete[](void *) */
CORRAL_DELETE(_ZdlPvm);                                   /* sized */
CORRAL_DELETE(_ZdaPvm);
CORRAL_DELETE(_ZdlPvRKSt9nothrow_t);                      /* nothrow */
CORRAL_DELETE(_ZdaPvRKSt9nothrow_t);
CORRAL_DELETE(_ZdlPvSt11align_val_t);                     /* aligned */
CORRAL_DELETE(_ZdaPvSt11align_val_t);
CORRAL_DELETE(_ZdlPvmSt11align_val_t);                    /* sized, aligned */
CORRAL_DELETE(_ZdaPvmSt11align_val_t);
CORRAL_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t);       /* aligned, nothrow */
CORRAL_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t);

/* Move p's contents (old bytes) into fresh memory q, then free p. */
static void *move_to(void *q, void *p, size_t old, size_t size)
{
  if (!q) {                             /* p stays valid, as realloc requires */
    errno = ENOMEM;
    return NULL;
  }
  memcpy(q, p, old < size ? old : size);
  _corral_free(p);
  return q;
}

/* Usable size of any pointer: grouped from its chunk, else the owner's. */
static size_t usable_size(void *p)
{
  if (!p) return 0;
  corral_where_t where;
  corral_chunk_t *c = _corral_chunk_of(p, &where);
  if (c) return _corral_object_size(c, p);
  if (where != CORRAL_NOT_GROUP) return 0;
  if (_corral_is_boot(p)) return _corral_boot_size(p);
  if (_corral_modes.safe && _corral_safe_large_owns(p)) return _corral_safe_large_usable(p);
  return _corral_next.malloc_usable_size ? _corral_next.malloc_usable_size(p) : 0;
}
