/* The entry points' ways in dynamic mode, while their gates are
 * CORRAL_GATE_DYNAMIC (gates.h): a settled site's decision (dynamic/settled.h)
 * taken in a few loads, else the entry point's full way, continued by a tail
 * call so that its return address is still the program's call. The slot
 * ways serve the calls of pooled sites that the stubs pointed at a slot. */
#include <string.h>

#include "cxx.h"
#include "entry.h"
#include "settled.h"

static inline int64_t gate_of(const int64_t *gate) { return __atomic_load_n(gate, __ATOMIC_RELAXED); }

/* What each entry point does with a decision (fast_way's or slot_way's,
 * taken in a statement of its own first: it sets the popped block p):
 * hand out the block, forward, or continue by a tail call in its full way,
 * whose return address is then still the program's call. */
static inline __attribute__((always_inline)) void *malloc_by(int way, void *p, size_t size) {
  switch (way) {
  case CORRAL_DYN_POPPED: return p;
  case CORRAL_DYN_FORWARD: return _corral_next.malloc(size);       /* errno is the next's */
  default: return _corral_malloc_rest(size);
  }
}

/* calloc: a popped block is zeroed. */
static inline __attribute__((always_inline)) void *calloc_by(int way, void *p, size_t n, size_t size,
                                                             size_t total) {
  switch (way) {
  case CORRAL_DYN_POPPED: return memset(p, 0, total);
  case CORRAL_DYN_FORWARD: return _corral_next.calloc(n, size);     /* errno is the next's */
  default: return _corral_calloc_rest(n, size);
  }
}

/* operator new: the block, or NULL when its full way must decide, or call
 * the new-handler or throw because the allocator underneath failed. */
static inline __attribute__((always_inline)) void *new_by(int way, void *p, size_t n) {
  switch (way) {
  case CORRAL_DYN_POPPED: return p;
  case CORRAL_DYN_FORWARD: return _corral_next.malloc(n);
  default: return NULL;
  }
}

/* malloc's way in dynamic mode (gates.h, CORRAL_GATE_DYNAMIC), entered by
 * a tail call: its return address is the program's call. A settled site
 * forwards, or pops its pool's current chunk and counts the object on it
 * for the remote-free judgement; anything else continues on malloc's full
 * way, which decides from scratch. */
void *_corral_dyn_malloc(size_t size) {
  void *p = NULL;
  int way = _corral_dyn_fast_way(size, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p);
  return malloc_by(way, p, size);
}

/* The same for calloc (interpose.c). */
void *_corral_dyn_calloc(size_t n, size_t size) {
  void *p = NULL;
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) return _corral_calloc_rest(n, size);   /* it says ENOMEM */
  int way = _corral_dyn_fast_way(total, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p);
  return calloc_by(way, p, n, size, total);
}

/* The same for realloc of NULL or of a pointer of the allocator underneath
 * (interpose.c): a settled decision to forward forwards; NULL may also
 * take a block of a settled pool. Moving a block into a pool is the full
 * way's. */
void *_corral_dyn_realloc(void *p, size_t size) {
  int larger = size > _corral_dyn_settled.max_size;                       /* never pooled: forwarded */
  uint64_t f = larger ? 0 : _corral_dyn_settled_word(size, (uintptr_t)__builtin_return_address(0),
                                         (uintptr_t)__builtin_dwarf_cfa());
  if (larger || (f != 0 && (f & 0xffff) == 0)) return _corral_enomem_if_null(_corral_next.realloc(p, size));
  if (f != 0 && !p) {
    void *q = NULL;
    if (_corral_dyn_settled_way(size, (uint32_t)f & 0xffff, &q) == CORRAL_DYN_POPPED) return q;
  }
  return _corral_realloc_rest(p, size);
}

void *_corral_dyn_memalign(size_t align, size_t size) {
  void *p = NULL;
  switch (_corral_dyn_aligned_way(align, size, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p)) {
  case CORRAL_DYN_POPPED: return p;
  case CORRAL_DYN_FORWARD: return _corral_next_alloc(size, align, 0);
  default: return _corral_aligned_rest(align, size);
  }
}

int _corral_dyn_aligned(size_t align, size_t size, uintptr_t ret, uintptr_t cfa, void **block) {
  return _corral_dyn_aligned_way(align, size, ret, cfa, block);
}

/* The same for operator new and new[] (new.cc), and their nothrow forms. */
void *_corral_dyn_new(size_t size) {
  void *p = NULL;
  int way = _corral_dyn_fast_way(size, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p);
  p = new_by(way, p, size);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(size);
}

void *_corral_dyn_new_nothrow(size_t size) {
  void *p = NULL;
  int way = _corral_dyn_fast_way(size, (uintptr_t)__builtin_return_address(0), (uintptr_t)__builtin_dwarf_cfa(), &p);
  p = new_by(way, p, size);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(size);
}

/* The slot ways (stubs.h): a pooled site's call, the slot after the entry
 * point's own arguments; the same decisions without the site lookup.
 * Anything they cannot serve continues in the entry point's full way,
 * which finds the site in the table. */
void *_corral_dyn_malloc_slot(size_t size, size_t slot) {
  void *p = NULL;
  int way = _corral_dyn_slot_way(size, slot, gate_of(&_corral_gates.on_malloc), &p);
  return malloc_by(way, p, size);
}

void *_corral_dyn_calloc_slot(size_t n, size_t size, size_t slot) {
  void *p = NULL;
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) return _corral_calloc_rest(n, size);
  int way = _corral_dyn_slot_way(total, slot, gate_of(&_corral_gates.on_calloc), &p);
  return calloc_by(way, p, n, size, total);
}

void *_corral_dyn_new_slot(size_t n, size_t slot) {
  void *p = NULL;
  int way = _corral_dyn_slot_way(n, slot, gate_of(&_corral_gates.on_new), &p);
  p = new_by(way, p, n);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest(n);
}

void *_corral_dyn_new_slot_nothrow(size_t n, const void *nothrow, size_t slot) {
  (void)nothrow;
  void *p = NULL;
  int way = _corral_dyn_slot_way(n, slot, gate_of(&_corral_gates.on_new), &p);
  p = new_by(way, p, n);
  return CORRAL_LIKELY(p != NULL) ? p : _corral_new_rest_nothrow(n);
}

