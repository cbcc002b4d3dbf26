/* Dynamic mode: contexts, pool decisions, sampling and merges (DPA without a
 * profile). Design and rules: docs/dynamic.md. The pure parts live in
 * dynamic_context.c (tables), dynamic_merge.c (union-find, SSG evidence) and
 * dynamic_wrappers.c (wrapper list); this file binds them to the allocator. */
#include "dynamic.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dynamic_context.h"
#include "dynamic_merge.h"
#include "dynamic_wrappers.h"
#include "settled.h"
#include "heap.h"
#include "internal.h"
#include "lock.h"
#include "modules.h"
#include "next.h"
#include "stubs.h"
#include "unwind.h"

/* ---------------------------------------------------------------------------
   Limits and state
--------------------------------------------------------------------------- */

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
  struct { void *p; uint32_t size; } ring[DYN_RING];
  uint32_t slot;            /* slot call: 0 not tried, slot + 1, or DYN_SLOT_REFUSED */
  const char *via;          /* name of the outermost wrapper in the chain, if any */
} dyn_ctx_t;

typedef struct dyn_merge_rec_s {
  int into, from;           /* groups */
  int type;
  uint32_t evidence;
} dyn_merge_rec_t;

__thread int _corral_dyn_sample_pending;
static __thread uint32_t sample_ctx, sample_size;
__thread uint32_t _corral_dyn_countdown __attribute__((tls_model("initial-exec"))) = DYN_STEADY_EVERY;
corral_dyn_settled_t _corral_dyn_settled;
static __thread uint64_t sample_rng;

static struct {
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
  uint64_t calls_to_none;                /* calls of given-back sites pointed at the none way */
  uint64_t calls_to_pool;                /* calls of pooled sites pointed at a slot stub */
  uint32_t slotted[CORRAL_DYN_SLOTS];    /* contexts whose call has a slot */
  unsigned slotted_count;
  int unpooled[DYN_MAX_MERGES];          /* pools given back, and why (DYN_GIVEN_BACK_*) */
  uint8_t unpooled_why[DYN_MAX_MERGES];
  unsigned unpooled_count;
} dyn;

static void lock(void) { _corral_lock(&dyn.lock); }
static int trylock(void) { return !atomic_flag_test_and_set_explicit(&dyn.lock.held, memory_order_acquire); }
static void unlock(void) { _corral_unlock(&dyn.lock); }

#define RELAXED_ADD(x, v) __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (v), __ATOMIC_RELAXED)

/* ---------------------------------------------------------------------------
   Wrapper list: CORRAL_WRAPPERS, read once at init and relocated again
   after each dlopen
--------------------------------------------------------------------------- */

/* The file's text in fresh private memory, NUL-terminated, or NULL with a
 * reason in err. Plain syscalls: this runs inside the first malloc. */
static char *read_file(const char *path, size_t *len, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, errlen, fd < 0 ? "cannot open it" : "not a regular file");
    if (fd >= 0) close(fd);
    return NULL;
  }
  if ((size_t)st.st_size > DYNW_MAX_BYTES) {
    snprintf(err, errlen, "larger than %u bytes", DYNW_MAX_BYTES);
    close(fd);
    return NULL;
  }
  char *text = _corral_os_map((size_t)st.st_size + 1);
  size_t got = 0;
  while (text && got < (size_t)st.st_size) {
    ssize_t n = read(fd, text + got, (size_t)st.st_size - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  if (!text) snprintf(err, errlen, "out of memory");
  *len = got;
  return text;
}

/* Match the list's modules against the loaded ones (by build-id, else by file
 * name) and publish a relocated view if anything new matched. */
static void relocate_wrappers(const corral_module_table_t *t) {
  corral_dynw_list_t *list = &dyn.wrappers;
  int changed = 0;
  for (unsigned i = 0; t && i < list->module_count; i++) {
    corral_dynw_module_t *m = &list->modules[i];
    if (!m->path || m->loaded) continue;
    for (size_t k = 0; k < t->count; k++) {
      const corral_module_t *lm = &t->modules[k];
      int same = m->buildid ? strcmp(m->buildid, lm->buildid) == 0
                            : strcmp(_corral_basename(m->path), _corral_basename(lm->path)) == 0;
      if (!same) continue;
      m->bias = lm->bias;
      m->loaded = 1;
      changed = 1;
      break;
    }
  }
  if (!changed) return;
  corral_dynw_view_t *view = _corral_os_map(_corral_dynw_view_size(list));
  if (view) _corral_dynw_publish(list, view);     /* an older view stays mapped for late readers */
}

static void load_wrappers(const char *path, const corral_module_table_t *t) {
  char err[160];
  size_t len = 0;
  char *text = read_file(path, &len, err, sizeof err);
  if (text) {
    size_t n = _corral_dynw_count(text, len);
    dyn.wrappers.ranges = _corral_os_map((n ? n : 1) * sizeof(corral_dynw_range_t));
    dyn.wrappers.capacity = n;
    if (!dyn.wrappers.ranges) {
      snprintf(err, sizeof err, "out of memory");
    } else if (_corral_dynw_parse(text, len, &dyn.wrappers, err, sizeof err) == 0) {
      relocate_wrappers(t);
      dyn.wrappers_loaded = 1;
      return;
    }
  }
  _corral_warn("wrapper list %s: %s; dynamic contexts are immediate call sites only", path, err);
}

void _corral_dyn_after_dlopen(void) {
  if (!dyn.tables_on || (!dyn.wrappers_loaded && !(_corral_modes.dynamic && _corral_options.stubs))) return;
  /* Identification rescans only for a plan; dynamic mode needs the new
   * modules too, for its wrappers, the walk through them and the none-way
   * stubs of sites it gives back. */
  const corral_module_table_t *t = _corral_modules_scan();
  if (!t) t = _corral_modules_current();
  lock();
  if (dyn.wrappers_loaded) relocate_wrappers(t);
  if (_corral_modes.dynamic && _corral_options.stubs) _corral_none_stubs_prepare(t);
  unlock();
}

/* ---------------------------------------------------------------------------
   Contexts: site lookup, wrapper walk
--------------------------------------------------------------------------- */

static uint32_t site_kind(uintptr_t addr) {
  return dyn.wrappers_loaded && _corral_dynw_find(&dyn.wrappers, addr) ? DYNC_SITE_WRAPPER : DYNC_SITE_PLAIN;
}

/* Kind of a return address, learning it once (slow path, under the lock). */
static uint32_t kind_of(uintptr_t addr) {
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, addr);
  if (s) return s->kind;
  uint32_t kind = site_kind(addr);
  lock();
  _corral_dync_add_site(&_corral_dyn_settled.table, addr, kind);
  unlock();
  return kind;
}

static uint32_t intern(const corral_dync_chain_t *chain) {
  uint32_t id = _corral_dync_find_chain(&_corral_dyn_settled.table, chain);
  if (id != DYNC_NONE) return id;
  int created;
  lock();
  id = _corral_dync_intern(&_corral_dyn_settled.table, chain, &created);
  if (created) {
    dyn_ctx_t *c = &dyn.ctx[id];
    c->group = -1;
    /* named after the outermost wrapper: layer3 says more than the xmalloc inside it */
    const corral_dynw_range_t *w =
        chain->depth > 1 ? _corral_dynw_find(&dyn.wrappers, chain->frames[chain->depth - 2]) : NULL;
    c->via = w ? w->name : NULL;
  }
  unlock();
  return id;
}

/* Frame 0 is inside a wrapper: step outwards, with the identification
 * code's walker (frame pointers where a module keeps them, cached CFI rules
 * where it does not, every read checked against the stack bounds), up to and
 * including the first frame that is not inside a wrapper. Each wrapper
 * site's frame size is remembered for the fast walk below. */
static uint32_t context_by_full_walk(uintptr_t ret0, void *fp0, corral_dync_chain_t *chain) {
  chain->wrapped = 1;
  corral_unwind_stack_t stack;
  corral_unwind_frame_t f;
  if (_corral_unwind_stack((uintptr_t)fp0, &stack) >= 0 && _corral_unwind_start((void *)ret0, fp0, &stack, &f) == 0) {
    const corral_module_table_t *t = _corral_modules_current();
    while (chain->depth < DYNC_MAX_CHAIN) {
      uintptr_t callee_cfa = f.sp;
      if (_corral_unwind_step(t, &stack, &f) == UNWIND_STOP) break;
      corral_dync_site_t *s = (corral_dync_site_t *)_corral_dync_site(&_corral_dyn_settled.table, chain->frames[chain->depth - 1]);
      if (s && f.sp > callee_cfa && f.sp - callee_cfa < (1u << 20))
        __atomic_store_n(&s->frame, (uint32_t)(f.sp - callee_cfa), __ATOMIC_RELAXED);
      chain->frames[chain->depth++] = f.pc;
      if (kind_of(f.pc) != DYNC_SITE_WRAPPER) {
        chain->wrapped = 0;
        break;
      }
    }
  }
  RELAXED_ADD(dyn.walks, 1);
  RELAXED_ADD(dyn.frames_walked, chain->depth - 1);
  return intern(chain);
}

/* The common case of a wrapper site: every wrapper frame's size is known, so
 * each return address is one load at a known distance above the entry
 * point's frame (checked against the stack bounds). A wrapper whose frame
 * size changes between calls (alloca) can mislead it into a wrong but
 * harmless context; anything unknown falls back to the full walk. */
static uint32_t context_through_wrappers(const corral_dync_site_t *s, uintptr_t ret0, void *fp0) {
  corral_dync_chain_t chain;
  chain.frames[0] = ret0;
  chain.depth = 1;
  chain.wrapped = 0;
  corral_unwind_stack_t stack;
  if (_corral_unwind_stack((uintptr_t)fp0, &stack) >= 0) {
    uintptr_t cfa = (uintptr_t)fp0 + 16;     /* the entry point's CFA: it keeps a frame pointer */
    uint64_t below = _corral_dync_below(ret0);
    while (s && chain.depth < DYNC_MAX_CHAIN) {
      uint32_t frame = __atomic_load_n(&s->frame, __ATOMIC_RELAXED);
      if (!frame) break;
      cfa += frame;
      if (cfa - 8 < stack.lo || cfa > stack.hi) break;
      uintptr_t ret = *(const uintptr_t *)(cfa - 8);
      chain.frames[chain.depth++] = ret;
      s = _corral_dync_site(&_corral_dyn_settled.table, ret);
      if (s && s->kind == DYNC_SITE_PLAIN) {
        uint32_t id;
        if (_corral_dync_tail(s, below, &id) >= 0) return id;
        id = _corral_dync_find_chain(&_corral_dyn_settled.table, &chain);
        if (id == DYNC_NONE) break;
        _corral_dync_set_tail((corral_dync_site_t *)s, below, id);
        return id;
      }
      below = _corral_dync_below_then(below, ret);
    }
  }
  chain.depth = 1;
  return context_by_full_walk(ret0, fp0, &chain);
}

/* Frame 0 seen for the first time. */
static uint32_t context_of_new_site(uintptr_t ret0, void *fp0) {
  if (kind_of(ret0) == DYNC_SITE_WRAPPER)
    return context_through_wrappers(_corral_dync_site(&_corral_dyn_settled.table, ret0), ret0, fp0);
  corral_dync_chain_t chain;
  memset(&chain, 0, sizeof chain);
  chain.frames[0] = ret0;
  chain.depth = 1;
  uint32_t id = intern(&chain);
  if (id != DYNC_NONE) {
    corral_dync_site_t *s = (corral_dync_site_t *)_corral_dync_site(&_corral_dyn_settled.table, ret0);
    if (s) __atomic_store_n(&s->ctx, id, __ATOMIC_RELEASE);   /* next time: one lookup */
  }
  return id;
}

/* ---------------------------------------------------------------------------
   Decisions: pools after min_objects small allocations
--------------------------------------------------------------------------- */

static int create_pool(uint32_t id) {
  dyn_ctx_t *c = &dyn.ctx[id];
  lock();
  uint32_t root = _corral_dynm_find(&dyn.merge, id);
  int g = dyn.ctx[root].group;
  if (g < 0) {
    if (dyn.pools < DYN_MAX_POOLS) {
      g = (int)dyn.pools;
      dyn.group_owner[g] = (int)root;
      _corral_dynm_note_size(&dyn.merge, root, c->size);
      c->eager_left = DYN_EAGER_SAMPLES;
      c->eager_tick = DYN_EAGER_EVERY;
      __atomic_store_n(&dyn.ctx[root].group, g, __ATOMIC_RELEASE);
      __atomic_store_n(&dyn.pools, dyn.pools + 1, __ATOMIC_RELEASE);
    } else {
      dyn.pools_refused++;
    }
  }
  unlock();
  return g;
}

/* The bit of sizes_seen that stands for `size`. Allocators serve sizes in
 * multiples of 8, so one bit per 8 bytes tells their footprints apart. */
static inline uint64_t size_bit(size_t size) {
  size_t k = size ? (size - 1) / 8 : 0;
  return 1ull << (k < 63 ? k : 63);
}

static void size_changed(dyn_ctx_t *c, uint32_t id, uint32_t size) {
  uint32_t now = c->size == 0 ? size : DYNM_SIZE_MIXED;
  __atomic_store_n(&c->size, now, __ATOMIC_RELAXED);
  if (now == DYNM_SIZE_MIXED && dyn.ctx[_corral_dynm_find(&dyn.merge, id)].group >= 0) {
    lock();
    _corral_dynm_note_size(&dyn.merge, id, DYNM_SIZE_MIXED);
    unlock();
  }
}

/* Sampling intervals are random around their mean: a fixed stride would
 * alias with a program's allocation pattern (a loop that allocates a node
 * and its payload alternately would only ever show one kind of node). */
static inline uint32_t next_interval(uint32_t mean) {
  uint64_t x = sample_rng;
  if (CORRAL_UNLIKELY(!x)) x = _corral_rdtsc() | 1;
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  sample_rng = x;
  return 1 + (uint32_t)((x >> 33) % (2 * mean - 1));
}

static void maybe_sample(dyn_ctx_t *c, uint32_t id, size_t size) {
  /* Racy on purpose (no atomic read-modify-write on the allocation path):
   * each field is read once, so two threads can at worst take one sample
   * too many or too few, never wrap a count around. */
  uint32_t left = __atomic_load_n(&c->eager_left, __ATOMIC_RELAXED);
  if (CORRAL_UNLIKELY(left != 0)) {
    uint32_t tick = __atomic_load_n(&c->eager_tick, __ATOMIC_RELAXED);
    if (tick > 1) {
      __atomic_store_n(&c->eager_tick, tick - 1, __ATOMIC_RELAXED);
      return;
    }
    __atomic_store_n(&c->eager_tick, next_interval(DYN_EAGER_EVERY), __ATOMIC_RELAXED);
    __atomic_store_n(&c->eager_left, left - 1, __ATOMIC_RELAXED);
  } else if (--_corral_dyn_countdown) {
    return;
  } else {
    _corral_dyn_countdown = next_interval(DYN_STEADY_EVERY);
  }
  sample_ctx = id;
  sample_size = (uint32_t)size;
  _corral_dyn_sample_pending = 1;
}

/* ---------------------------------------------------------------------------
   The fast way: a site whose context is its own (frame 0 not in a wrapper)
   and whose decision is settled carries that decision in its `fast` word,
   and malloc takes it in a few loads (_corral_dyn_malloc):
     epoch (24 bits) | size (24 bits, 0 = any) | pool + 1 (16 bits, 0 = the
     allocator underneath).
   Settled: pooled with no eager samples left, or never to be pooled. A
   context still counting, or with eager samples to take, keeps the full
   way. The word holds while its epoch is current and the request has its
   size (another size may make the context mixed, which only the full way
   notes); a sample due on this thread also takes the full way.
--------------------------------------------------------------------------- */


static void bump_epoch(void) {
  uint32_t e = (__atomic_load_n(&_corral_dyn_settled.epoch, __ATOMIC_RELAXED) + 1) & CORRAL_DYN_EPOCH_MASK;
  __atomic_store_n(&_corral_dyn_settled.epoch, e ? e : 1, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------------------
   Slot calls: a settled pooled site whose call is a direct `call rel32` to
   malloc, calloc or operator new (or its nothrow form) is pointed at a
   prepared slot stub (stubs.h), which passes the slot's number to the
   entry's slot way. The way reads the decision from the slot's word:
     size (32 bits, 0 = any) << 32 | pool + 1 (0 = the allocator underneath)
   and skips the site lookup of the fast way. Words change only under the
   lock: when a context's pool changes (a merge, a pool given back) every
   slotted context's word is written again; a context gone mixed gets size 0.
--------------------------------------------------------------------------- */

static uint64_t slot_word(uint32_t id) {
  int g = dyn.ctx[_corral_dynm_find(&dyn.merge, id)].group;
  uint32_t size = __atomic_load_n(&dyn.ctx[id].size, __ATOMIC_RELAXED);
  if (size == DYNM_SIZE_MIXED) size = 0;
  return g < 0 ? 0 : (uint64_t)size << 32 | ((uint64_t)g * CORRAL_SIZE_CLASSES + 1);
}

/* Under the lock: every slotted context's word, after a pool changed. */
static void refresh_slots(void) {
  for (unsigned i = 0; i < dyn.slotted_count; i++) {
    uint32_t id = dyn.slotted[i];
    __atomic_store_n(&_corral_dyn_slots[dyn.ctx[id].slot - 1], slot_word(id), __ATOMIC_RELEASE);
  }
}

/* Under the lock, when a context's pool changed other than by its own full
 * way (a merge, a pool given back): every site's fast word goes stale and
 * every slot's word is written again. */
static void pools_changed(void) {
  bump_epoch();
  refresh_slots();
}

/* A settled pooled context whose frame 0 is its own site s: its call to
 * the slot way, once; later, its word when its size went mixed. */
static void settle_slot(const corral_dync_site_t *s, uint32_t id, dyn_ctx_t *c) {
  uint32_t slot = __atomic_load_n(&c->slot, __ATOMIC_RELAXED);
  if (slot == DYN_SLOT_REFUSED || !_corral_options.stubs) return;
  if (slot && __atomic_load_n(&_corral_dyn_slots[slot - 1], __ATOMIC_RELAXED) == slot_word(id)) return;
  lock();
  if (c->slot == 0) {
    unsigned k;
    corral_stub_refusal_t r = dyn.slotted_count < CORRAL_DYN_SLOTS && _corral_dyn_settled.table.chains[id].depth == 1
                                  ? _corral_point_at_slot(s->addr, slot_word(id), &k)
                                  : CORRAL_STUB_OUT_OF_REACH;
    if (r == CORRAL_STUB_OK) {
      __atomic_store_n(&c->slot, k + 1, __ATOMIC_RELAXED);
      dyn.slotted[dyn.slotted_count++] = id;
      dyn.calls_to_pool++;
    } else {
      __atomic_store_n(&c->slot, DYN_SLOT_REFUSED, __ATOMIC_RELAXED);
      _corral_note(2, "dynamic: pooled site %#lx keeps its lookup (%s)", (unsigned long)s->addr,
                   _corral_stub_refusal_text(r));
    }
  } else if (c->slot != DYN_SLOT_REFUSED) {
    __atomic_store_n(&_corral_dyn_slots[c->slot - 1], slot_word(id), __ATOMIC_RELEASE);
  }
  unlock();
}

/* A context's settled decision as a fast word: see "The fast way". */
static uint64_t fast_word(uint32_t epoch, int g, const dyn_ctx_t *c) {
  uint32_t size = __atomic_load_n(&c->size, __ATOMIC_RELAXED);
  if (size == DYNM_SIZE_MIXED) size = 0;
  if (size > CORRAL_DYN_SIZE_MAX) return 0;
  uint64_t pool = g < 0 ? 0 : (uint64_t)g * CORRAL_SIZE_CLASSES + 1;
  return (uint64_t)epoch << 40 | (uint64_t)size << 16 | pool;
}

/* A context of one wrapper frame (frame 0 in a wrapper, frame 1 not): its
 * decision goes to frame 1's site, next to the tail that names it, while
 * that tail still does. Another thread may name another context there in
 * between, and that context may then take this one's decision until the
 * epoch changes: a pool (or none) it was not meant for, never wrong for
 * the program. */
static void publish_tail(const corral_dync_site_t *s0, uint32_t id, uint32_t epoch, int g, const dyn_ctx_t *c) {
  const corral_dync_chain_t *chain = &_corral_dyn_settled.table.chains[id];
  if (chain->depth != 2 || chain->wrapped || chain->frames[0] != s0->addr) return;
  corral_dync_site_t *s1 = (corral_dync_site_t *)_corral_dync_site(&_corral_dyn_settled.table, chain->frames[1]);
  if (!s1 || s1->kind != DYNC_SITE_PLAIN) return;
  uint32_t named;
  int k = _corral_dync_tail(s1, _corral_dync_below(chain->frames[0]), &named);
  if (k < 0 || named != id) return;
  uint64_t word = fast_word(epoch, g, c);
  if (word && __atomic_load_n(&s1->tail_fast[k], __ATOMIC_RELAXED) != word)
    __atomic_store_n(&s1->tail_fast[k], word, __ATOMIC_RELEASE);
}

/* The decision of the full way, for the next allocation at the same site. */
static void publish_fast(const corral_dync_site_t *s, uint32_t id, uint32_t epoch, int g, dyn_ctx_t *c) {
  if (!s) return;
  if (s->kind == DYNC_SITE_WRAPPER) {
    publish_tail(s, id, epoch, g, c);
    return;
  }
  if (__atomic_load_n(&s->ctx, __ATOMIC_RELAXED) != id) return;     /* not yet bound */
  uint64_t word = fast_word(epoch, g, c);
  if (!word) return;
  __atomic_store_n(&((corral_dync_site_t *)s)->fast, word, __ATOMIC_RELEASE);
  if (g >= 0) settle_slot(s, id, c);
}

/* The context of an allocation whose frame 0 has site entry s (NULL: not
 * seen yet), creating it; DYNC_NONE when the tables are full. */
static inline __attribute__((always_inline)) uint32_t context_at(const corral_dync_site_t *s, uintptr_t r0,
                                                                 void *fp0) {
  uint32_t id = s ? __atomic_load_n(&s->ctx, __ATOMIC_ACQUIRE) : DYNC_NONE;
  if (CORRAL_UNLIKELY(id == DYNC_NONE))
    id = s && s->kind == DYNC_SITE_WRAPPER ? context_through_wrappers(s, r0, fp0) : context_of_new_site(r0, fp0);
  return id;
}

uint32_t _corral_dyn_context(void *ret0, void *fp0) {
  return context_at(_corral_dync_site(&_corral_dyn_settled.table, (uintptr_t)ret0), (uintptr_t)ret0, fp0);
}

int _corral_dyn_identify(void *ret0, void *fp0, size_t size) {
  if (size > _corral_dyn_settled.max_size) return -1;
  uint32_t epoch = __atomic_load_n(&_corral_dyn_settled.epoch, __ATOMIC_ACQUIRE);   /* before anything it decides from */
  uintptr_t r0 = (uintptr_t)ret0;
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, r0);
  uint32_t id = context_at(s, r0, fp0);
  if (CORRAL_UNLIKELY(id == DYNC_NONE)) return -1;   /* tables full: base allocator */
  dyn_ctx_t *c = &dyn.ctx[id];
  uint32_t known = __atomic_load_n(&c->size, __ATOMIC_RELAXED);
  if (CORRAL_UNLIKELY(known != size && known != DYNM_SIZE_MIXED)) size_changed(c, id, (uint32_t)size);
  uint64_t bit = size_bit(size);
  if (CORRAL_UNLIKELY(!(__atomic_load_n(&c->sizes_seen, __ATOMIC_RELAXED) & bit)))
    __atomic_fetch_or(&c->sizes_seen, bit, __ATOMIC_RELAXED);
  int g = __atomic_load_n(&dyn.ctx[_corral_dynm_find(&dyn.merge, id)].group, __ATOMIC_ACQUIRE);
  if (CORRAL_UNLIKELY(g < 0)) {
    uint32_t n = __atomic_load_n(&c->allocs, __ATOMIC_RELAXED);
    if (n == UINT32_MAX) {               /* given back, or qualified when no group id was left */
      publish_fast(s, id, epoch, -1, c);
      return -1;
    }
    __atomic_store_n(&c->allocs, ++n, __ATOMIC_RELAXED);
    if (n < dyn.min_objects) return -1;
    g = create_pool(id);
    if (g < 0) {
      __atomic_store_n(&c->allocs, UINT32_MAX, __ATOMIC_RELAXED);
      return -1;
    }
  }
  maybe_sample(c, id, size);
  if (__atomic_load_n(&c->eager_left, __ATOMIC_RELAXED) == 0) publish_fast(s, id, epoch, g, c);
  return g;
}

/* The decision for a call inside a wrapper, s the site of its return
 * address ret and cfa the entry point's CFA (the program's stack pointer
 * before its call): frame 1's return address is one load at the wrapper's
 * remembered frame size, as on the full way's short walk, and frame 1's
 * site holds the decision of the context a tail of it names, if that
 * chain is this one. 0 when not known: the full way decides. */
__attribute__((noinline)) uint64_t _corral_dyn_wrapper_word(const corral_dync_site_t *s, uintptr_t ret, uintptr_t cfa) {
  uint32_t frame = __atomic_load_n(&s->frame, __ATOMIC_RELAXED);
  const corral_thread_stack_t *stack = &_corral_thread_stack;
  /* hi is 0 until this thread's bounds are known; a signal stack fails too */
  if (!frame || cfa < stack->lo || cfa + frame > stack->hi) return 0;
  uintptr_t ret1 = *(const uintptr_t *)(cfa + frame - 8);
  const corral_dync_site_t *s1 = _corral_dync_site(&_corral_dyn_settled.table, ret1);
  if (!s1 || s1->kind != DYNC_SITE_PLAIN) return 0;
  uint32_t named;
  int k = _corral_dync_tail(s1, _corral_dync_below(ret), &named);
  return k < 0 ? 0 : __atomic_load_n(&s1->tail_fast[k], __ATOMIC_ACQUIRE);
}

void _corral_dyn_allocated(void *p) {
  if (!_corral_modes.track) _corral_chunk_header((uintptr_t)p)->counted_allocs++;
  if (_corral_dyn_sample_pending) _corral_dyn_sample(p);
}

/* ---------------------------------------------------------------------------
   Sampling: read a few recent objects of the context, note SSG edges
--------------------------------------------------------------------------- */

static void note_merge(const corral_dynm_merge_t *m) {
  pools_changed();                       /* the merged context's sites now lead to another pool */
  if (dyn.merge_count >= DYN_MAX_MERGES) return;
  dyn_merge_rec_t *r = &dyn.merges[dyn.merge_count++];
  r->into = dyn.ctx[m->into].group;
  r->from = dyn.ctx[m->from].group;
  r->type = m->type;
  r->evidence = m->evidence;
}

/* The pointers held by one object of context `src`, `size` bytes from `obj`. */
static void scan_object(uint32_t src, const void *obj, uint32_t size) {
  if (_corral_group_of_address(obj) < 0) return;   /* its chunk was emptied and given back */
  const uintptr_t *words = obj;
  uint32_t n = size / sizeof(uintptr_t);
  for (uint32_t i = 0; i < n; i++) {
    /* Racy read of memory the program owns: it may be written right now, so
     * read each word once, atomically, and treat it only as a hint. */
    uintptr_t w = __atomic_load_n(&words[i], __ATOMIC_RELAXED);
    int g = _corral_group_of_address((const void *)w);
    dyn.words_read++;
    if (g < 0 || (unsigned)g >= dyn.pools) continue;
    dyn.links_seen++;
    corral_dynm_merge_t m;
    if (_corral_dynm_observe(&dyn.merge, src, i * sizeof(uintptr_t), (uint32_t)dyn.group_owner[g], &m))
      note_merge(&m);
  }
}

enum { DYN_GIVEN_BACK_REMOTE, DYN_GIVEN_BACK_SMALL, DYN_GIVEN_BACK_AS_BASE };
static const char *const given_back_names[] = { "remote", "small", "as_base" };

/* A context given back whose frame 0 is its own call site (not inside a
 * wrapper, where the call serves other contexts too): when that call is a
 * direct call to malloc, calloc or operator new, point it at the entry's
 * none way, so its allocations skip the lookup and go straight to the
 * allocator underneath. Under the lock; the stubs were prepared at
 * start-up or after dlopen. */
static void point_at_none(uint32_t id) {
  const corral_dync_chain_t *chain = &_corral_dyn_settled.table.chains[id];
  if (chain->depth != 1) return;
  const corral_dync_site_t *s = _corral_dync_site(&_corral_dyn_settled.table, chain->frames[0]);
  if (!s || s->kind == DYNC_SITE_WRAPPER || __atomic_load_n(&s->ctx, __ATOMIC_RELAXED) != id) return;
  corral_stub_refusal_t r = _corral_point_at_none(chain->frames[0]);
  if (r == CORRAL_STUB_OK) dyn.calls_to_none++;
  else _corral_note(2, "dynamic: site %#lx given back keeps its lookup (%s)", (unsigned long)chain->frames[0],
                    _corral_stub_refusal_text(r));
}

/* Every context of the pool of context `id` goes to the allocator
 * underneath from now on; objects already pooled stay. */
static void give_back(uint32_t id, int why) {
  uint32_t root = _corral_dynm_find(&dyn.merge, id);
  int g = dyn.ctx[root].group;
  if (g < 0) return;
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++)          /* every context of the pool: never again */
    if (_corral_dynm_find(&dyn.merge, i) == root) __atomic_store_n(&dyn.ctx[i].allocs, UINT32_MAX, __ATOMIC_RELAXED);
  __atomic_store_n(&dyn.ctx[root].group, -1, __ATOMIC_RELEASE);
  pools_changed();
  if (_corral_options.stubs)
    for (uint32_t i = 0; i < total; i++)
      if (_corral_dynm_find(&dyn.merge, i) == root) point_at_none(i);
  if (dyn.unpooled_count < DYN_MAX_MERGES) {
    dyn.unpooled_why[dyn.unpooled_count] = (uint8_t)why;
    dyn.unpooled[dyn.unpooled_count++] = g;
  }
}

/* Whether a context asked for any size whose footprint in the allocator
 * underneath is `footprint` (bit 63 stands for sizes it cannot tell). */
static int asked_for_footprint(const dyn_ctx_t *c, size_t footprint) {
  uint64_t seen = __atomic_load_n(&c->sizes_seen, __ATOMIC_RELAXED);
  if (seen >> 63) return 1;
  for (; seen; seen &= seen - 1)
    if (_corral_next_footprint(8 * ((size_t)__builtin_ctzll(seen) + 1)) == footprint) return 1;
  return 0;
}

/* Whether the pool of context `id` lays its objects out as the allocator
 * underneath already does, so that it can only cost: one context of one
 * size, whose block here is exactly the footprint it has there (a
 * size-class allocator serving a size of its own class; never glibc, whose
 * header the pool drops), and no other pool (live or given back) whose
 * context asked the full way for a size of that footprint (sizes_seen):
 * the base would interleave those objects with this pool's, which the pool
 * keeps apart. Pointers between this pool and others do not matter: the
 * base already keeps objects of other footprints in other classes, and a
 * merge needs equal sizes, which no other pool has. */
static int laid_out_as_base(uint32_t id) {
  uint32_t root = _corral_dynm_find(&dyn.merge, id);
  int g = dyn.ctx[root].group;
  uint32_t size = dyn.ctx[root].size;
  if (g < 0 || size == 0 || size == DYNM_SIZE_MIXED) return 0;
  size_t footprint = _corral_next_footprint(size);
  if (footprint == 0 || footprint != corral_class_size(corral_size_class(size))) return 0;
  uint32_t total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (uint32_t i = 0; i < total; i++)
    if (i != root && _corral_dynm_find(&dyn.merge, i) == root) return 0;
  for (unsigned h = 0; h < dyn.pools; h++)
    if ((int)h != g && asked_for_footprint(&dyn.ctx[dyn.group_owner[h]], footprint)) return 0;
  return 1;
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
 * Each judged over all samples, once there are DYN_JUDGE_AFTER; a pool that
 * churns is given back already at its last eager sample: every eager sample
 * found it small and its chunk holds under a quarter of the objects it
 * handed out (a structure being built holds nearly all of them). A burst
 * too brief for steady samples (1 in 512 pooled allocations) would never
 * be judged otherwise, and each such pool keeps its own hot lines apart
 * from the allocator underneath's. At that last eager sample, too, a pool
 * laid out as the allocator underneath would lay it out goes (as_base). */
static void judge_pool(uint32_t id, void *p) {
  corral_chunk_t *chunk = _corral_chunk_header((uintptr_t)p);
  long undrained = atomic_load_explicit(&chunk->balance, memory_order_relaxed);
  uint64_t remote = chunk->drained + (uint64_t)(undrained > 0 ? undrained : 0);
  size_t object = chunk->block_size ? chunk->block_size : _corral_granules(sample_size) * CORRAL_GRANULE;
  dyn_ctx_t *c = &dyn.ctx[id];
  c->checks++;
  if (remote * 2 > chunk->counted_allocs) c->remote_heavy++;
  if (chunk->live * object < DYN_SMALL_BYTES) c->small++;
  if (c->checks == DYN_EAGER_SAMPLES && c->small == c->checks && chunk->live * 4 < chunk->counted_allocs) {
    give_back(id, DYN_GIVEN_BACK_SMALL);
    return;
  }
  if (c->checks == DYN_EAGER_SAMPLES && laid_out_as_base(id)) {
    give_back(id, DYN_GIVEN_BACK_AS_BASE);
    return;
  }
  if (c->checks < DYN_JUDGE_AFTER) return;
  if (c->remote_heavy * 4 > c->checks * 3) give_back(id, DYN_GIVEN_BACK_REMOTE);
  else if (c->small * 4 > c->checks * 3) give_back(id, DYN_GIVEN_BACK_SMALL);
}

void _corral_dyn_sample(void *p) {
  _corral_dyn_sample_pending = 0;
  if (!p) return;
  if (!trylock()) {                       /* another thread samples: never wait on the allocation path */
    RELAXED_ADD(dyn.samples_skipped, 1);
    return;
  }
  uint64_t t0 = _corral_rdtsc();
  dyn_ctx_t *c = &dyn.ctx[sample_ctx];
  for (int k = 0; k < DYN_RING; k++)
    if (c->ring[k].p) scan_object(sample_ctx, c->ring[k].p, c->ring[k].size);
  c->ring[c->ring_next++ % DYN_RING].p = p;
  c->ring[(c->ring_next - 1) % DYN_RING].size = sample_size;
  judge_pool(sample_ctx, p);
  dyn.samples++;
  dyn.sample_cycles += _corral_rdtsc() - t0;
  unlock();
}

/* ---------------------------------------------------------------------------
   Init
--------------------------------------------------------------------------- */

int _corral_dyn_contexts_init(const char *who) {
  if (dyn.tables_on) return 0;
  void *tables = _corral_os_map(_corral_dync_bytes(DYN_MAX_CONTEXTS));
  void *merge = _corral_os_map(_corral_dynm_bytes(DYN_MAX_CONTEXTS, DYN_MERGE_SLOTS));
  dyn.ctx = _corral_os_map(DYN_MAX_CONTEXTS * sizeof(dyn_ctx_t));
  if (!tables || !merge || !dyn.ctx) {
    _corral_warn("%s: cannot map its tables; running ungrouped", who);
    return -1;
  }
  _corral_dync_init(&_corral_dyn_settled.table, tables, DYN_MAX_CONTEXTS);
  _corral_dynm_init(&dyn.merge, merge, DYN_MAX_CONTEXTS, DYN_MERGE_SLOTS);
  _corral_unwind_init();
  const corral_module_table_t *t = _corral_modules_current();
  if (!t) t = _corral_modules_scan();
  if (_corral_options.wrappers && *_corral_options.wrappers) load_wrappers(_corral_options.wrappers, t);
  dyn.tables_on = 1;
  return 0;
}

void _corral_dyn_init(void) {
  if (!_corral_options.dynamic) return;
  dyn.min_objects = _corral_options.dyn_min_objects;
  _corral_dyn_settled.max_size = _corral_options.dyn_max_size;
  _corral_dyn_settled.epoch = 1;
  if (_corral_dyn_contexts_init("dynamic mode") != 0) return;
  if (_corral_options.stubs) _corral_none_stubs_prepare(_corral_modules_current());
  __atomic_store_n(&_corral_modes.dynamic, 1, __ATOMIC_RELEASE);
}

void _corral_dyn_fork_prepare(void) { if (dyn.tables_on) lock(); }
void _corral_dyn_fork_parent(void) { if (dyn.tables_on) unlock(); }
void _corral_dyn_fork_child(void) { if (dyn.tables_on) unlock(); }

/* ---------------------------------------------------------------------------
   Statistics
--------------------------------------------------------------------------- */

unsigned _corral_dyn_group_count(void) { return __atomic_load_n(&dyn.pools, __ATOMIC_ACQUIRE); }

static char group_names[DYN_MAX_POOLS][96];

/* "dyn3 <- prog+0x11c9 via xmalloc": the deciding site (the context's
 * outermost frame) as module+offset, and the wrapper seen at frame 0. */
void _corral_dyn_context_name(uint32_t id, char *buf, size_t len) {
  if (id >= __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE)) {
    snprintf(buf, len, "?");
    return;
  }
  const corral_dync_chain_t *chain = &_corral_dyn_settled.table.chains[id];
  uintptr_t site = chain->frames[chain->depth - 1];
  const char *via = dyn.ctx[id].via;
  size_t n = _corral_address_name(site, buf, len);
  if (via && n < len) snprintf(buf + n, len - n, " via %s", via);
}

const char *_corral_dyn_group_name(unsigned g) {
  if (g >= _corral_dyn_group_count()) return "?";
  char *name = group_names[g];
  if (name[0]) return name;
  int n = snprintf(name, sizeof group_names[0], "dyn%u <- ", g);
  _corral_dyn_context_name((uint32_t)dyn.group_owner[g], name + n, sizeof group_names[0] - (size_t)n);
  return name;
}

/* Wrapper ranges relocated into loaded modules (none may be loaded yet). */
static size_t wrappers_in_use(void) {
  const corral_dynw_view_t *view = __atomic_load_n(&dyn.wrappers.active, __ATOMIC_ACQUIRE);
  return view ? view->count : 0;
}

static unsigned contexts_pooled(void) {
  unsigned n = 0, total = __atomic_load_n(&_corral_dyn_settled.table.context_count, __ATOMIC_ACQUIRE);
  for (unsigned i = 0; i < total; i++)
    if (dyn.ctx[_corral_dynm_find(&dyn.merge, i)].group >= 0) n++;
  return n;
}

void _corral_dyn_stats_json(int fd) {
  if (!_corral_modes.dynamic) {
    _corral_fdprintf(fd, "\"dynamic\":null");
    return;
  }
  _corral_fdprintf(fd,
                  "\"dynamic\":{\"min_objects\":%zu,\"max_size\":%zu,\"wrappers_loaded\":%zu,"
                  "\"contexts_seen\":%u,\"contexts_pooled\":%u,\"pools\":%u,\"pools_refused\":%llu,"
                  "\"table_full\":%llu,\"walks\":%llu,\"frames_walked\":%llu,"
                  "\"sampling\":{\"samples\":%llu,\"skipped\":%llu,\"words_read\":%llu,\"links_seen\":%llu,"
                  "\"cycles\":%llu,\"evidence_dropped\":%llu},\"merges\":[",
                  dyn.min_objects, _corral_dyn_settled.max_size, wrappers_in_use(),
                  _corral_dyn_settled.table.context_count, contexts_pooled(), dyn.pools, (unsigned long long)dyn.pools_refused,
                  (unsigned long long)_corral_dyn_settled.table.full, (unsigned long long)dyn.walks,
                  (unsigned long long)dyn.frames_walked, (unsigned long long)dyn.samples,
                  (unsigned long long)dyn.samples_skipped, (unsigned long long)dyn.words_read,
                  (unsigned long long)dyn.links_seen, (unsigned long long)dyn.sample_cycles,
                  (unsigned long long)dyn.merge.dropped);
  for (unsigned i = 0; i < dyn.merge_count; i++) {
    const dyn_merge_rec_t *m = &dyn.merges[i];
    _corral_fdprintf(fd, "%s{\"into\":%d,\"from\":%d,\"type\":\"%s\",\"evidence\":%u}", i ? "," : "", m->into,
                    m->from, m->type == 1 ? "I" : "II", m->evidence);
  }
  _corral_fdprintf(fd, "],\"unpooled\":[");
  for (unsigned i = 0; i < dyn.unpooled_count; i++) _corral_fdprintf(fd, "%s%d", i ? "," : "", dyn.unpooled[i]);
  _corral_fdprintf(fd, "],\"unpooled_why\":[");
  for (unsigned i = 0; i < dyn.unpooled_count; i++)
    _corral_fdprintf(fd, "%s\"%s\"", i ? "," : "", given_back_names[dyn.unpooled_why[i]]);
  _corral_fdprintf(fd, "],\"calls_to_none\":%llu,\"calls_to_pool\":%llu}", (unsigned long long)dyn.calls_to_none,
                   (unsigned long long)dyn.calls_to_pool);
}

void _corral_dyn_stats_text(int fd) {
  if (!_corral_modes.dynamic) return;
  _corral_fdprintf(fd, "corral: dynamic: %u contexts, %u pooled in %u pools, %u merges, %zu wrappers\n",
                   _corral_dyn_settled.table.context_count, contexts_pooled(), dyn.pools, dyn.merge_count,
                   wrappers_in_use());
  _corral_fdprintf(fd, "corral: dynamic: %llu samples (%llu skipped), %llu words read, %llu cycles\n",
                   (unsigned long long)dyn.samples, (unsigned long long)dyn.samples_skipped,
                   (unsigned long long)dyn.words_read, (unsigned long long)dyn.sample_cycles);
  for (unsigned i = 0; i < dyn.merge_count; i++)
    _corral_fdprintf(fd, "corral: dynamic: merged dyn%d into dyn%d (type %s, evidence %u)\n", dyn.merges[i].from,
                     dyn.merges[i].into, dyn.merges[i].type == 1 ? "I" : "II", dyn.merges[i].evidence);
}
