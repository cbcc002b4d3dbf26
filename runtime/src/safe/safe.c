/* Safe mode: a pool per allocation site (wrappers unwound, as dynamic mode
 * tells sites apart) and size class, checked frees and encoded free lists
 * over the group heap; large blocks in safe_large.c. docs/safe.md. */
#include "safe.h"
#include "safe_ways.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dynamic.h"
#include "next.h"
#include "lock.h"
#include "modules.h"
#include "stats_table.h"

#define SAFE_MAX_REPORTS 64                 /* lines on stderr; the statistics count all */

__thread void *_corral_safe_free_site __attribute__((tls_model("initial-exec")));
uint16_t *_corral_safe_group_of;

static struct {
  corral_lock_t lock;
  uint32_t owner[CORRAL_MAX_GROUPS];        /* the context each group was made for */
  unsigned groups;                          /* given out: 1 .. groups - 1; 0 is CORRAL_SAFE_SHARED */
  uint64_t shared_sites, fallbacks;
  uint64_t errors[CORRAL_SAFE_ERROR_KINDS];
  unsigned reports;
} safe;

static const char *const error_names[CORRAL_SAFE_ERROR_KINDS] = {
  "double free", "invalid free", "overwritten free-list link", "bad realloc",
};
/* How a report starts, before the pointer. */
static const char *const error_leads[CORRAL_SAFE_ERROR_KINDS] = {
  "double free of", "invalid free of", "free-list link overwritten after its block was freed, at",
  "realloc of a freed or invalid pointer",
};

/* ---- init ------------------------------------------------------------------ */

/* The "safe" section of the statistics (base/stats_table.h). */
static const corral_stat_t *stats_gather(unsigned *n);
static void stats_text(int fd);
static const char *stats_mode(void) { return _corral_modes.safe ? "safe" : NULL; }
static corral_stats_section_t section = {.name = "safe", .gather = stats_gather, .text = stats_text,
                                         .mode = stats_mode, .group_count = _corral_safe_group_count,
                                         .group_name = _corral_safe_group_name};

/* What safe mode does with what the heap's slow ways find (heap/modes.h). */
static void double_free(corral_chunk_t *c, void *p);
static void free_local(corral_chunk_t *c, void *p);
static void bad_link(corral_chunk_t *c, const void *at);

static uint64_t random_key(void)
{
  uint64_t k = 0;
  if (getrandom(&k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k)
    k = _corral_rdtsc() * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&k;
  return k;
}

void _corral_safe_init(void)
{
  _corral_stats_register(&section);
  if (!_corral_options.safe) return;
  _corral_safe_group_of = _corral_os_map(CORRAL_SAFE_CONTEXTS * sizeof *_corral_safe_group_of);
  if (!_corral_safe_group_of || _corral_dyn_contexts_init("safe mode") != 0) {
    _corral_warn("safe mode: cannot map its site tables; running without it");
    return;
  }
  /* Slot stubs, ready before the first site: pointing a call at one is
   * then a store or two, which may happen inside malloc. Statistics send
   * every request the full way, which counts it. Made before the large
   * blocks' space is reserved: the kernel puts that just below the
   * libraries, where the stubs' room is, and in 1 start of 20 the room
   * was then searched for 1 MiB at a time (10 failed probes). */
  if (_corral_options.stubs && !_corral_options.stats) _corral_dyn_prepare_safe_slots();
  if (_corral_safe_large_init() != 0) {
    _corral_warn("safe mode: cannot reserve %zu MiB of address space for large blocks; running without it",
                 _corral_options.safe_large_space >> 20);
    return;
  }
  _corral_modes.link_keys[0] = random_key();
  _corral_modes.link_keys[1] = random_key() | 1;  /* odd: a multiplier that loses no address bit */
  /* Group 1 is the fresh space's (docs/safe.md, "Fresh space"). */
  if (_corral_options.safe_fresh) _corral_fresh_open(CORRAL_SAFE_FRESH);
  safe.groups = _corral_options.safe_fresh ? 2 : 1;
  _corral_modes.safe_double_free = double_free;
  _corral_modes.safe_free_local = free_local;
  _corral_modes.safe_bad_link = bad_link;
  _corral_modes.safe = 1;
}

/* ---- sites -------------------------------------------------------------------- */

__attribute__((noinline)) unsigned _corral_safe_new_site(uint32_t id)
{
  if (id >= CORRAL_SAFE_CONTEXTS) {         /* the context tables are full */
    __atomic_fetch_add(&safe.shared_sites, 1, __ATOMIC_RELAXED);
    return CORRAL_SAFE_SHARED;
  }
  _corral_lock(&safe.lock);
  unsigned g = _corral_safe_group_of[id];
  int made = g == 0;                        /* else another thread made it, and points its call */
  CORRAL_ASSERT(safe.groups >= 1 && safe.groups <= _corral_ngroups + 1);
  if (made) {
    if (safe.groups < _corral_ngroups) {
      g = safe.groups;
      safe.owner[g] = id;
      __atomic_store_n(&safe.groups, g + 1, __ATOMIC_RELEASE);
    } else {
      g = CORRAL_SAFE_SHARED;
      safe.shared_sites++;
    }
    /* A shared site is remembered as such: its group stays 0 but it is
     * counted once; later lookups take the shared group directly. */
    __atomic_store_n(&_corral_safe_group_of[id], (uint16_t)(g ? g : UINT16_MAX), __ATOMIC_RELEASE);
  }
  _corral_unlock(&safe.lock);
  /* A site of its own whose call is direct: pointed at a slot stub whose
   * word is its group's first pool, which never changes
   * (entry/call_ways.c). */
  if (made) _corral_dyn_point_at_safe_slot(id, g);
  return g == UINT16_MAX ? CORRAL_SAFE_SHARED : g;
}

int _corral_safe_made_for(unsigned g, uint32_t id)
{
  return g < __atomic_load_n(&safe.groups, __ATOMIC_ACQUIRE) && safe.owner[g] == id;
}

unsigned _corral_safe_group_count(void) { return __atomic_load_n(&safe.groups, __ATOMIC_ACQUIRE); }

/* Sites with a group of their own: not the shared group, nor fresh space's. */
static unsigned site_count(void)
{
  return _corral_safe_group_count() - 1 - (_corral_fresh_group != CORRAL_MAX_GROUPS);
}

static char group_names[CORRAL_MAX_GROUPS][96];

/* "site3 <- prog+0x11c9 via xmalloc"; group 0 holds the sites past the last group. */
const char *_corral_safe_group_name(unsigned g)
{
  if (g >= _corral_safe_group_count()) return "?";
  if (g == CORRAL_SAFE_SHARED) return "(sites past the last group)";
  if (g == _corral_fresh_group) return "(fresh space, any site)";
  char *name = group_names[g];
  if (name[0]) return name;
  int n = snprintf(name, sizeof group_names[0], "site%u <- ", g);
  _corral_dyn_context_name(safe.owner[g], name + n, sizeof group_names[0] - (size_t)n);
  return name;
}

/* ---- errors ------------------------------------------------------------------- */

void _corral_safe_report(corral_safe_error_t kind, const void *p, const char *what, void *site)
{
  __atomic_fetch_add(&safe.errors[kind], 1, __ATOMIC_RELAXED);
  if (__atomic_fetch_add(&safe.reports, 1, __ATOMIC_RELAXED) < SAFE_MAX_REPORTS) {
    char at[128] = "";
    if (site) {
      memcpy(at, " at ", 4);
      _corral_address_name((uintptr_t)site, at + 4, sizeof at - 4);
    }
    _corral_fdprintf(2, "corral: safe: %s %p (%s)%s; %s\n", error_leads[kind], p, what, at,
                     _corral_options.safe_abort ? "aborting (CORRAL_SAFE_ABORT=0 goes on)"
                                                : "ignored, the program goes on");
  }
  if (_corral_options.safe_abort) abort();
}

/* What block p of chunk c is: "a 48-byte block of site3 <- prog+0x11c9". */
static const char *describe(corral_chunk_t *c, char *buf, size_t len)
{
  snprintf(buf, len, "a %u-byte block of %s", c->block_size, _corral_safe_group_name(c->group));
  return buf;
}

static void double_free(corral_chunk_t *c, void *p)
{
  char what[160];
  _corral_safe_report(CORRAL_SAFE_DOUBLE_FREE, p, describe(c, what, sizeof what), _corral_safe_free_site);
}

static void bad_link(corral_chunk_t *c, const void *at)
{
  char what[160];
  _corral_safe_report(CORRAL_SAFE_BAD_LINK, at, describe(c, what, sizeof what), NULL);
}

void _corral_safe_free_other(void *p, corral_where_t where, void *ret)
{
  if (where == CORRAL_NOT_GROUP && _corral_safe_large_owns(p)) return _corral_safe_large_free(p, ret);
  if (where != CORRAL_NOT_GROUP) {
    char block[160], what[200];
    if (where == CORRAL_NOT_A_START)
      snprintf(what, sizeof what, "not an object's start, inside %s",
               describe(_corral_chunk_header((uintptr_t)p), block, sizeof block));
    else
      snprintf(what, sizeof what, "in a chunk whose objects were all freed");
    return _corral_safe_report(CORRAL_SAFE_INVALID_FREE, p, what, ret);
  }
  /* Allocated by the allocator underneath before safe mode was on. */
  if (!_corral_is_boot(p) && _corral_next.free) _corral_next.free(p);
}

/* ---- small blocks ------------------------------------------------------------- */

static void free_local(corral_chunk_t *c, void *p)
{
  /* The heap's slow free hands over the owner's live block of a site's
   * pool: a block start of a block chunk (safe mode makes no mixed ones). */
  CORRAL_ASSERT(c->group < __atomic_load_n(&safe.groups, __ATOMIC_ACQUIRE));
  _corral_block_free_encoded(c, p);
}

/* Safe mode's memory ran out (group ranges or the large space): the
 * allocator underneath serves, without the guarantee, and says so once. */
static void *fallback(size_t size, size_t align, int zero)
{
  if (__atomic_fetch_add(&safe.fallbacks, 1, __ATOMIC_RELAXED) == 0)
    _corral_warn("safe mode: out of %s; later requests may come from the allocator underneath, without "
                 "its guarantee", size > _corral_options.safe_max_size ? "large-block address space" : "group memory");
  return _corral_next_alloc(size, align, zero);
}

/* A small block for group g's site: from fresh space while its class
 * takes it (malloc's alignment only), else from g's pool. */
static void *small_alloc(unsigned g, size_t size, size_t align)
{
  void *p = align == 0 ? _corral_group_alloc_fresh(g, size) : NULL;
  return p ? p : _corral_group_alloc_slow(g, size, align);
}

void *_corral_safe_alloc(size_t size, size_t align, void *ret0, void *fp0, int zero)
{
  if (size > PTRDIFF_MAX) {
    errno = ENOMEM;
    return NULL;
  }
  if (size <= _corral_options.safe_max_size && align <= CORRAL_MAX_GROUP_ALIGN) {
    void *p = small_alloc(_corral_safe_site_group(ret0, fp0), size, align);
    if (CORRAL_LIKELY(p != NULL)) {
      if (zero) memset(p, 0, size);
      return p;
    }
  } else if (size <= _corral_options.safe_large_space / 2) {
    void *p = _corral_safe_large_alloc(size, align, zero, _corral_safe_site_group(ret0, fp0));
    if (p) return p;
  } else {
    /* Half the space or more: no room to keep such ranges out of reuse. */
    return _corral_next_alloc(size, align, zero);
  }
  return fallback(size, align, zero);
}

/* Copy p's first `old` bytes into q and free p; NULL (p kept) without q. */
static void *move(void *q, void *p, size_t old, size_t size, void (*release)(void *))
{
  if (!q) return NULL;
  memcpy(q, p, old < size ? old : size);
  release(p);
  return q;
}

static void free_large(void *p) { _corral_safe_large_free(p, NULL); }

/* Object p of chunk c, which safe realloc has just found and tested (a
 * block's start, not freed): the owner's free stores the link encoded at
 * once, where free's first way would find the chunk and test p again
 * (lua's tables growing: 652 thousand calls of `trees.lua 13`); any other
 * free by free's first way when it can take it, else the group heap's. */
static void free_grouped(corral_chunk_t *c, void *p)
{
  if (c->block_size != 0 && atomic_load_explicit(&c->owner, memory_order_relaxed) == _corral_tls_safe) {
    _corral_block_free_encoded(c, p);
    return;
  }
  if (_corral_free_owned(p)) return;
  _corral_group_free(c, p);
}

void *_corral_safe_realloc(void *p, size_t size, void *ret0, void *fp0)
{
  corral_where_t where;
  corral_chunk_t *c = _corral_chunk_of(p, &where);
  if (c) {
    if (((uint64_t *)p)[1] == c->key) {     /* already freed */
      char what[160];
      _corral_safe_report(CORRAL_SAFE_BAD_REALLOC, p, describe(c, what, sizeof what), ret0);
      errno = ENOMEM;
      return NULL;
    }
    /* In place within its size class; else a new block of the same site
     * (the realloc's site when the block came from fresh space, which
     * knows no site), or of fresh space while the larger class takes it. */
    if (size <= c->block_size) return p;
    unsigned g = c->group != _corral_fresh_group ? c->group : _corral_safe_site_group(ret0, fp0);
    /* By the short way's pop where nothing is counted (Lua grows its
     * tables' arrays so). */
    void *q = NULL;
    if (__atomic_load_n(&_corral_gates.on_realloc, __ATOMIC_RELAXED) == CORRAL_GATE_SAFE)
      q = _corral_safe_pop_from(size, g);
    if (!q && size <= _corral_options.safe_max_size) q = small_alloc(g, size, 0);
    if (!q) q = _corral_safe_alloc(size, 0, ret0, fp0, 0);
    _corral_safe_free_site = ret0;
    if (!q) return NULL;
    memcpy(q, p, c->block_size < size ? c->block_size : size);
    free_grouped(c, p);
    return q;
  }
  if (where == CORRAL_NOT_GROUP && _corral_safe_large_owns(p)) {
    size_t old = _corral_safe_large_usable(p);
    if (!old) {
      _corral_safe_report(CORRAL_SAFE_BAD_REALLOC, p, "no live large block's start", ret0);
      errno = ENOMEM;
      return NULL;
    }
    if (size <= old && size > _corral_options.safe_max_size) return p;
    return move(_corral_safe_alloc(size, 0, ret0, fp0, 0), p, old, size, free_large);
  }
  if (where != CORRAL_NOT_GROUP) {
    _corral_safe_report(CORRAL_SAFE_BAD_REALLOC, p,
                        where == CORRAL_NOT_A_START ? "not an object's start" : "in a chunk whose objects were all freed",
                        ret0);
    errno = ENOMEM;
    return NULL;
  }
  /* The allocator underneath's, from before safe mode was on. */
  size_t old = _corral_next.malloc_usable_size ? _corral_next.malloc_usable_size(p) : 0;
  if (!old) {
    void *q = _corral_next.realloc(p, size);
    if (!q) errno = ENOMEM;
    return q;
  }
  return move(_corral_safe_alloc(size, 0, ret0, fp0, 0), p, old, size, _corral_next.free);
}

/* ---- statistics ----------------------------------------------------------------- */

/* What the "safe" section writes that is not a counter of its own:
 * gathered at exit. */
static struct {
  unsigned sites, pools, kept_chunks, fresh_closed, fresh_spent;
  corral_safe_large_stats_t large;
} got;

static const corral_stat_t *stats_gather(unsigned *n)
{
  static const corral_stat_t fields[] = {
    CORRAL_STAT("sites", U32, &got.sites),
    CORRAL_STAT("shared_sites", U64, &safe.shared_sites),
    CORRAL_STAT("pools", U32, &got.pools),
    CORRAL_STAT("kept_chunks", U32, &got.kept_chunks),
    CORRAL_STAT("fallbacks", U64, &safe.fallbacks),
    CORRAL_STAT_OBJECT_OF("fresh", 2),
    CORRAL_STAT("closed", U32, &got.fresh_closed),
    CORRAL_STAT("spent_chunks", U32, &got.fresh_spent),
#define LARGE(name) CORRAL_STAT(#name, U64, &got.large.name),
    CORRAL_STAT_OBJECT_OF("large", sizeof got.large / sizeof(uint64_t)),
    CORRAL_SAFE_LARGE_STATS(LARGE)
#undef LARGE
    CORRAL_STAT_OBJECT_OF("errors", CORRAL_SAFE_ERROR_KINDS),
    CORRAL_STAT("double_free", U64, &safe.errors[CORRAL_SAFE_DOUBLE_FREE]),
    CORRAL_STAT("invalid_free", U64, &safe.errors[CORRAL_SAFE_INVALID_FREE]),
    CORRAL_STAT("bad_link", U64, &safe.errors[CORRAL_SAFE_BAD_LINK]),
    CORRAL_STAT("bad_realloc", U64, &safe.errors[CORRAL_SAFE_BAD_REALLOC]),
  };
  _Static_assert(CORRAL_SAFE_ERROR_KINDS == 4, "one field per error kind");
  if (!_corral_modes.safe) return NULL;
  got.sites = site_count();
  _corral_pool_totals(&got.pools, &got.kept_chunks);
  got.fresh_closed = __atomic_load_n(&_corral_fresh_closed, __ATOMIC_RELAXED);
  got.fresh_spent = __atomic_load_n(&_corral_fresh_spent, __ATOMIC_RELAXED);
  _corral_safe_large_stats(&got.large);
  *n = sizeof fields / sizeof *fields;
  return fields;
}

static void stats_text(int fd)
{
  if (!_corral_modes.safe) return;
  unsigned pools, kept;
  corral_safe_large_stats_t l;
  _corral_pool_totals(&pools, &kept);
  _corral_safe_large_stats(&l);
  _corral_fdprintf(fd, "corral: safe: %u sites (%llu sharing a group), %u pools, %u empty chunks kept\n",
                   site_count(), (unsigned long long)safe.shared_sites, pools, kept);
  _corral_fdprintf(fd, "corral: safe: %llu large blocks (%llu live, %llu KiB; peak %llu KiB), %llu GiB reserved, "
                   "%llu recycled\n", (unsigned long long)l.blocks, (unsigned long long)l.live_blocks,
                   (unsigned long long)(l.live_bytes >> 10), (unsigned long long)(l.peak_live_bytes >> 10),
                   (unsigned long long)(l.reserved >> 30), (unsigned long long)l.recycled);
  uint64_t total = 0;
  for (int k = 0; k < CORRAL_SAFE_ERROR_KINDS; k++) total += safe.errors[k];
  _corral_fdprintf(fd, "corral: safe: %llu errors detected", (unsigned long long)total);
  for (int k = 0; k < CORRAL_SAFE_ERROR_KINDS; k++)
    if (safe.errors[k]) _corral_fdprintf(fd, ", %llu %s", (unsigned long long)safe.errors[k], error_names[k]);
  _corral_fdprintf(fd, "\n");
}

/* ---- fork ------------------------------------------------------------------------ */

void _corral_safe_fork_prepare(void)
{
  if (!_corral_modes.safe) return;
  _corral_lock(&safe.lock);
  _corral_safe_large_fork_prepare();
}

void _corral_safe_fork_parent(void)
{
  if (!_corral_modes.safe) return;
  _corral_safe_large_fork_parent();
  _corral_unlock(&safe.lock);
}

void _corral_safe_fork_child(void)
{
  if (!_corral_modes.safe) return;
  _corral_safe_large_fork_child();
  _corral_unlock(&safe.lock);
}
