/* Dynamic mode's lookup tables: call sites and allocation contexts.
 *
 * A context is an adaptive partial call chain (DPA's APCC): the return
 * addresses from the allocation's immediate call site outwards up to and
 * including the first frame that is not inside a wrapper. Two tables make the
 * common case one lookup:
 *   sites:    return address -> "inside a wrapper" or "not", and for a
 *             non-wrapper frame 0 the context it alone decides;
 *   contexts: chain of return addresses -> context id (used when frame 0 is
 *             inside a wrapper and the stack had to be walked).
 * Both are open-addressing tables in caller-provided (mmap'd) memory, never
 * shrink, and are read without locks: a writer fills an entry, then publishes
 * its key with a release store; a reader that misses takes the slow path,
 * which serialises writers with the caller's lock and looks again.
 *
 * Each starts small and grows fourfold, up to the size a full program
 * needs (131,072 sites in 8 MiB): while it is not at that size it grows
 * once an eighth full; at that size it fills to 3/4. Hashing spreads
 * entries over every page of a table, and each page a program reaches
 * costs two faults (the lookup's read maps the zero page, the insertion
 * copies it, with a TLB shootdown while other threads run); a table sized
 * to the program's sites keeps that to a few pages, and its hot entries to
 * a few TLB entries. Growing copies every entry into the larger table,
 * then publishes it: the table's address and its shift are one word, so
 * that a reader never pairs one table with another's size. An older table is
 * never unmapped or written again by the table code, so an entry pointer
 * a reader holds stays readable; a lock-free store through one (a frame
 * size, a tail, a fast word, a context) made while the table grows may
 * be lost, and is learnt again as it was the first time. Every such word
 * is a cache of what the full way decides (settled.h), and a settled word
 * left behind is one the epoch or its finality already vouches for; none
 * is the only record of a decision.
 */
#ifndef CORRAL_DYNAMIC_CONTEXT_H
#define CORRAL_DYNAMIC_CONTEXT_H

#include <stddef.h>
#include <stdint.h>

/* Internal: every declaration below is of this library, not exported. */
#pragma GCC visibility push(hidden)

#define DYNC_MAX_CHAIN 8          /* longest chain kept; DPA saw at most 4 */
#define DYNC_NONE UINT32_MAX
#define DYNC_TAILS 2              /* chains remembered per site above wrappers */

enum { DYNC_SITE_PLAIN = 1, DYNC_SITE_WRAPPER = 2 };

typedef struct dync_site_s {
  uintptr_t addr;                 /* 0 = empty; published last */
  uint32_t kind;                  /* DYNC_SITE_PLAIN or DYNC_SITE_WRAPPER */
  uint32_t ctx;                   /* context of the one-frame chain [addr], or DYNC_NONE */
  /* For a wrapper site: bytes from the callee's CFA to the CFA of the
   * function holding addr (its frame size at this call), learned from one
   * full walk; 0 = not known yet. The return address into the caller then
   * sits at callee CFA + frame - 8, so later walks are one load per frame. */
  uint32_t frame;
  /* For a non-wrapper site reached above wrappers: the last chains that
   * ended here, each as (32-bit hash of the frames below it) << 32 |
   * (context id + 1); 0 = none. A return address follows one call
   * instruction, so such a site is almost never frame 0 itself and this
   * spares the chain lookup. Two, because a wrapper often has two calls
   * (malloc for a new block, realloc for a bigger one) that one caller
   * alternates between. */
  uint64_t tail[DYNC_TAILS];
  /* For a site whose context is its own (a non-wrapper frame 0): the
   * decision malloc may take without the full way (settled.h); 0 = none. */
  uint64_t fast;
  /* The same for the context tail[k] names, when its chain is wrapper
   * frames and this site. Cleared before tail[k] names another context. */
  uint64_t tail_fast[DYNC_TAILS];
} corral_dync_site_t;

typedef struct dync_chain_s {
  uintptr_t frames[DYNC_MAX_CHAIN];
  uint32_t depth;                 /* frames used */
  uint32_t wrapped;               /* 1 if the walk stopped at DYNC_MAX_CHAIN inside wrappers */
} corral_dync_chain_t;

/* A table's address (64-byte aligned) and, in the low 6 bits, its shift
 * (sites: 64 - log2 of its slots) or its log2 of slots (chains). */
#define DYNC_TABLE_BITS ((uintptr_t)63)

typedef struct dync_s {
  uintptr_t site_table;           /* sites' table | shift; release-stored whole */
  uint32_t site_count;
  uint32_t site_slots_most;       /* the largest table's slots */
  uintptr_t chain_table;          /* chain index | log2 slots: context id + 1, 0 = empty */
  uint32_t chain_slots_most;
  corral_dync_chain_t *chains;           /* [max_contexts]: the chain of each context id */
  uint32_t max_contexts, context_count;   /* every context is in the chain index */
  char *next_site_table;          /* where the next larger sites' table goes */
  char *next_chain_table;         /* the same for the chain index */
  uint32_t grown;                 /* tables outgrown, both kinds */
  uint64_t full;                  /* lookups refused because a table was full */
} corral_dync_t;

size_t _corral_dync_bytes(uint32_t max_contexts);
/* Lay the tables out in `mem` (zeroed, _corral_dync_bytes long). */
void _corral_dync_init(corral_dync_t *t, void *mem, uint32_t max_contexts);

/* A site's first slot in a table of 2^(64 - shift) entries: the top bits
 * of its Fibonacci hash. */
static inline size_t _corral_dync_first_slot(uintptr_t addr, uint32_t shift) {
  return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> shift);
}

/* The sites' table now, and its shift. */
static inline corral_dync_site_t *_corral_dync_sites(const corral_dync_t *t, uint32_t *shift) {
  uintptr_t w = __atomic_load_n(&t->site_table, __ATOMIC_ACQUIRE);
  *shift = (uint32_t)(w & DYNC_TABLE_BITS);
  return (corral_dync_site_t *)(w & ~DYNC_TABLE_BITS);
}

/* Lock-free: the site entry of `addr`, or NULL if not known yet. Every
 * dynamic and safe allocation takes it, so the first probe is a load, a
 * multiply, a shift and a compare. All inline, so that a lookup's caller
 * makes no call (dynamic mode's malloc keeps no frame). The probe always
 * ends: no table is ever more than 3/4 full (_corral_dync_add_site). */
static inline const corral_dync_site_t *_corral_dync_site(const corral_dync_t *t, uintptr_t addr) {
  uint32_t shift;
  const corral_dync_site_t *table = _corral_dync_sites(t, &shift);
  size_t at = _corral_dync_first_slot(addr, shift);
  for (;;) {
    uintptr_t k = __atomic_load_n(&table[at].addr, __ATOMIC_ACQUIRE);
    if (__builtin_expect(k == addr, 1)) return &table[at];
    if (k == 0) return NULL;
    at = (at + 1) & (UINT64_MAX >> shift);
  }
}

/* The running hash of a chain's frames below a site: started at frame 0,
 * folded in once per frame above it (context_lookup.c walks it up a chain). */
static inline uint64_t _corral_dync_below(uintptr_t ret0) { return ret0 * 0x9e3779b97f4a7c15ull; }
static inline uint64_t _corral_dync_below_then(uint64_t below, uintptr_t ret) {
  return (below ^ ret) * 0x9e3779b97f4a7c15ull;
}

/* Lock-free: which of s's tails names a chain whose frames below s hash to
 * `below` (a tail keeps its high half), or -1; *ctx is then the context it
 * names. */
static inline int _corral_dync_tail(const corral_dync_site_t *s, uint64_t below, uint32_t *ctx) {
  for (int k = 0; k < DYNC_TAILS; k++) {
    uint64_t tail = __atomic_load_n(&s->tail[k], __ATOMIC_ACQUIRE);
    if (tail >> 32 == below >> 32 && (uint32_t)tail) {
      *ctx = (uint32_t)tail - 1;
      return k;
    }
  }
  return -1;
}

/* Lock-free: remember that the chain hashing to `below` ends at s in
 * context id: in the tail the hash picks, unless that one is taken and the
 * other free. A reader may meet the new tail with the slot's fast word
 * cleared (the full way decides), never with the old context's. */
static inline void _corral_dync_set_tail(corral_dync_site_t *s, uint64_t below, uint32_t id) {
  int k = (below >> 32) & 1;
  if (__atomic_load_n(&s->tail[k], __ATOMIC_RELAXED) && !__atomic_load_n(&s->tail[!k], __ATOMIC_RELAXED)) k = !k;
  __atomic_store_n(&s->tail_fast[k], 0, __ATOMIC_RELAXED);
  __atomic_store_n(&s->tail[k], (below >> 32) << 32 | (id + 1), __ATOMIC_RELEASE);
}

/* Writers (under the caller's lock) -------------------------------------- */

/* Record the kind of a site (idempotent); NULL if the table is full. The
 * entry returned holds until the next site is added: that may move it. */
corral_dync_site_t *_corral_dync_add_site(corral_dync_t *t, uintptr_t addr, uint32_t kind);

/* The context id of `chain`, creating it if new; DYNC_NONE if full. Sets
 * *created when it was new. */
uint32_t _corral_dync_intern(corral_dync_t *t, const corral_dync_chain_t *chain, int *created);

/* Lock-free lookup of a chain's context; DYNC_NONE if not interned yet. */
uint32_t _corral_dync_find_chain(const corral_dync_t *t, const corral_dync_chain_t *chain);

#pragma GCC visibility pop

#endif
