/* Chunks: carving them out of reserved ranges, the pool of empty ones, the
 * retired lists groups reuse freed space from, and their hand-overs.
 *
 * A chunk's `balance` lets a thread that frees into a chunk nobody owns see,
 * without a lock, that it freed the last object. While a chunk is owned,
 * remote frees are only pushed (one atomic each; dynamic mode counts them
 * too). Retirement drains the remote stack, sets CORRAL_REMOTE_COUNTED in it
 * and adds CORRAL_RETIRED - live; from then on each remote free adds 1 after
 * its push, so balance reaches CORRAL_RETIRED exactly when the last object
 * is back, and the thread whose add gets it there releases the chunk. Adds
 * still in flight only ever hold balance below that. An adopter subtracts
 * the counted frees it drains. */
#include "heap.h"
#include "lock.h"

#include <string.h>
#include <time.h>

corral_layout_t _corral_layout;
atomic_uint _corral_range_count;
uintptr_t _corral_range_lo[CORRAL_MAX_RANGES], _corral_range_carved[CORRAL_MAX_RANGES];
uintptr_t _corral_range_min = UINTPTR_MAX, _corral_range_max;

/* Under _corral_heap_lock. */
static size_t range_carved;                      /* chunks carved from the last range */
/* Chunks of the last range made usable, ahead of range_carved: each
 * commit takes twice the chunks of the one before, up to COMMIT_MOST, so
 * that a program that carves hundreds of chunks (safe mode: a pool per
 * site and size class) makes a dozen mprotects, not one each. */
static size_t range_committed, commit_next = 1;
#define COMMIT_MOST 64
/* Empty chunks kept resident, newest first, linked both ways by next and
 * prev (spare_oldest is the last): taken newest first, purged oldest
 * first (purge_spares). */
static corral_chunk_t *spare_chunks, *spare_oldest;
static size_t spare_bytes;                     /* the bytes the spares' uses touched */
/* Read without the lock by every refill (heap.h, _corral_spares_tick):
 * whether spares past the budget wait for their purge, and from when on
 * the oldest of them is due, in now_ms() time. */
uint8_t _corral_spares_waiting;
static uint64_t spares_due_ms;
static void note_spares_waiting(void);
static corral_chunk_t *purged_chunks;            /* empty, given back to the OS */
static corral_chunk_t *retired[CORRAL_POOLS];
/* Safe mode: empty chunks kept for the pool that held them, which alone may
 * use their addresses again (docs/safe.md). The last ones released keep
 * their pages (kept_resident), up to safe_resident chunks' worth of the
 * pages their uses touched, so that a pool that empties a chunk and fills
 * it again does not fault its pages in each time; the others are purged.
 * Counted by touched pages, as spares are: a thread that exits leaves a
 * chunk per site and size class, a page or two used in each, and each
 * purge is a TLB shootdown (dot's start: 75 purges, 1.6 ms). The ring
 * lists the resident ones oldest first: the oldest is purged to make
 * room. An entry whose chunk was taken since (its flag cleared) is
 * spent. */
static corral_chunk_t *kept[CORRAL_POOLS];
#define RESIDENT_RING 512
static corral_chunk_t *resident_ring[RESIDENT_RING];
static unsigned resident_first, resident_count;
static size_t resident_bytes;                    /* pages touched by the resident ones */
static uint8_t pool_used[CORRAL_POOLS];
static unsigned pools_used, chunks_kept;
static uint64_t group_chunks[CORRAL_MAX_GROUPS], group_peak_chunks[CORRAL_MAX_GROUPS];
/* Bytes of those chunks a group can touch: from each header to the chunk's
 * end (the colour offset before a header is never used). */
static uint64_t group_bytes[CORRAL_MAX_GROUPS], group_peak_bytes[CORRAL_MAX_GROUPS];
static uint64_t group_peak_live[CORRAL_MAX_GROUPS];
static uint64_t chunk_key_seed;

/* What a spare counts against the budget: the pages its uses touched,
 * from its header on (the colour gap before the header is never used). */
static size_t spare_weight(const corral_chunk_t *c)
{
  return (size_t)(c->touched_end - (char *)c);
}
unsigned _corral_fresh_spent;

void _corral_layout_init(void)
{
  corral_layout_t *l = &_corral_layout;
  l->chunk_size = _corral_options.chunk_size;
  l->chunk_mask = ~(l->chunk_size - 1);
  l->colour_shift = (unsigned)__builtin_ctzl(l->chunk_size) - 6;
  size_t colours = 64;                   /* a page and a line apart: _corral_chunk_header */
  while (colours > 1 && (colours - 1) * (4096 + 64) > l->chunk_size / 4) colours /= 2;
  l->colour_mask = (colours - 1) << 6;
  l->classes = _corral_options.max_size / CORRAL_GRANULE;
  l->bitmap_words = l->chunk_size / CORRAL_GRANULE / 64;
  size_t h = sizeof(corral_chunk_t) + l->classes * sizeof(void *) + 2 * l->bitmap_words * 8;
  l->header = (h + 63) & ~(size_t)63;
  chunk_key_seed = _corral_rdtsc() * 0x9e3779b97f4a7c15ull;
}

/* A new range, aligned to the chunk size: one chunk more is reserved, and
 * what alignment leaves over at either end stays reserved, unused. Given
 * back, it left holes under a chunk beside the next large reservation
 * (safe mode's large blocks), where the loader put small libraries that a
 * later dlopen brought in, with nothing free within a call's reach for
 * their stubs (docs/identification.md, "Stubs"). */
static int add_range(void)
{
  unsigned n = atomic_load(&_corral_range_count);
  if (n == CORRAL_MAX_RANGES) return -1;
  size_t cs = _corral_layout.chunk_size, size = _corral_options.reserve & _corral_layout.chunk_mask;
  char *raw = _corral_os_reserve(size + cs);
  if (!raw) return -1;
  if ((uintptr_t)raw + size + cs > CORRAL_REMOTE_ONE) {    /* a remote stack's length lives above (heap.h) */
    _corral_os_unmap(raw, size + cs);
    return -1;
  }
  uintptr_t lo = ((uintptr_t)raw + cs - 1) & _corral_layout.chunk_mask;
  _corral_range_lo[n] = lo;
  _corral_range_carved[n] = 0;       /* grows as chunks are carved */
  range_carved = range_committed = 0;
  /* Lower the filter before the range is published: a pointer of the new
   * range must never be mistaken for the next allocator's. */
  if (lo < _corral_range_min) __atomic_store_n(&_corral_range_min, lo, __ATOMIC_RELEASE);
  if (lo + size > _corral_range_max) __atomic_store_n(&_corral_range_max, lo + size, __ATOMIC_RELEASE);
  if (lo < _corral_mine_lo) __atomic_store_n(&_corral_mine_lo, lo, __ATOMIC_RELEASE);
  if (lo + size > _corral_mine_hi) __atomic_store_n(&_corral_mine_hi, lo + size, __ATOMIC_RELEASE);
  atomic_store_explicit(&_corral_range_count, n + 1, memory_order_release);
  _corral_note(1, "reserved %zu MiB of address space for groups", size >> 20);
  return 0;
}

/* An empty chunk with zeroed bitmaps and free lists; NULL when out of memory. */
static corral_chunk_t *take_empty_chunk(void)
{
  size_t cs = _corral_layout.chunk_size;
  corral_chunk_t *c;
  if ((c = spare_chunks)) {
    spare_chunks = c->next;
    if (spare_chunks) spare_chunks->prev = NULL;
    else spare_oldest = NULL;
    spare_bytes -= spare_weight(c);
    note_spares_waiting();
    memset(c->free_lists, 0, _corral_layout.header - sizeof *c);
    return c;
  }
  if ((c = purged_chunks)) {          /* purged: the header page reads zero but the link */
    purged_chunks = c->next;
    return c;
  }
  unsigned n = atomic_load(&_corral_range_count);
  size_t per_range = _corral_options.reserve / cs;
  if (n == 0 || range_carved == per_range) {
    if (add_range() < 0) return NULL;
    n = atomic_load(&_corral_range_count);
  }
  uintptr_t base = _corral_range_lo[n - 1] + range_carved * cs;
  if (range_carved == range_committed) {
    size_t ahead = commit_next < per_range - range_carved ? commit_next : per_range - range_carved;
    /* Where every writable byte counts against a commit limit
     * (overcommit_memory=2), a large step may fail where one chunk fits. */
    if (_corral_os_commit((void *)base, ahead * cs) != 0) {
      ahead = 1;
      if (_corral_os_commit((void *)base, cs) != 0) return NULL;
    }
    range_committed += ahead;
    if (commit_next < COMMIT_MOST) commit_next *= 2;
  }
  range_carved++;
  /* Publish the carved end only now, so a stray pointer is never read from
   * PROT_NONE memory (_corral_chunk_of checks against it). */
  __atomic_store_n(&_corral_range_carved[n - 1], base + cs - _corral_range_lo[n - 1], __ATOMIC_RELEASE);
  return _corral_chunk_header(base);
}

static void update_peaks(unsigned g);

static uint64_t usable_bytes(const corral_chunk_t *c)
{
  return _corral_chunk_base(c) + _corral_layout.chunk_size - (uintptr_t)c;
}

/* A block chunk's blocks start at the alignment of its block size (the
 * largest power of two dividing it, at most 4096): every block then has it. */
static void reset_chunk(corral_chunk_t *c, unsigned pool, corral_heap_t *h)
{
  unsigned g = pool / CORRAL_SIZE_CLASSES;
  c->group = g;
  c->pool = (uint16_t)pool;
  c->in_retired = 0;
  c->abandoned = 0;
  c->live = 0;
  c->counted_allocs = c->drained = c->drained_owned = 0;
  c->torn = 0;
  c->held = 0;
  c->free = c->local_free = NULL;
  c->limit = 0;
  if (_corral_group_mixed[g]) {
    c->block_size = 0;
    c->div_magic = 0;
    c->blocks = NULL;
    c->bump = (char *)c + _corral_layout.header;
  } else {
    size_t bs = corral_class_size(pool % CORRAL_SIZE_CLASSES);
    size_t align = bs & -bs;
    if (align > 4096) align = 4096;
    c->block_size = (uint32_t)bs;
    c->div_magic = UINT64_MAX / bs + 1;
    c->blocks = (char *)(((uintptr_t)c + sizeof *c + align - 1) & ~(uintptr_t)(align - 1));
    c->bump = c->blocks;
  }
  c->end = (char *)_corral_chunk_base(c) + _corral_layout.chunk_size;
  c->batch_end = NULL;
  atomic_store_explicit(&c->remote, 0, memory_order_relaxed);
  atomic_store_explicit(&c->balance, 0, memory_order_relaxed);
  c->key = (chunk_key_seed ^ (uintptr_t)c) * 0x9e3779b97f4a7c15ull + _corral_rdtsc();
  c->next = c->prev = NULL;
  atomic_store_explicit(&c->owner, h, memory_order_relaxed);
  __atomic_store_n(&c->magic, CORRAL_CHUNK_MAGIC, __ATOMIC_RELEASE);
}

static void retired_remove(corral_chunk_t *c)
{
  if (c->prev) c->prev->next = c->next;
  else retired[c->pool] = c->next;
  if (c->next) c->next->prev = c->prev;
  c->next = c->prev = NULL;
  c->in_retired = 0;
  c->abandoned = 0;
}

void _corral_chunk_drain(corral_chunk_t *c, uintptr_t counted)
{
  uintptr_t head = atomic_exchange_explicit(&c->remote, counted, memory_order_acquire);
  void *list = _corral_remote_list(head);
  long n = c->block_size ? _corral_block_drain(c, list, _corral_remote_length(head)) : _corral_mixed_drain(c, list);
  CORRAL_ASSERT(c->live >= (size_t)n);
  c->live -= (size_t)n;
  c->drained += (uint64_t)n;
  c->drained_owned += (uint64_t)n;
  if (n && _corral_remote_counted(head)) atomic_fetch_sub_explicit(&c->balance, n, memory_order_relaxed);
  _corral_debug_check_chunk(c);
}

/* The end of the pages an empty chunk's uses touched: fresh space is
 * linked or bumped below its bump pointer, and touched_end keeps the
 * furthest of earlier uses while its pages stayed (a purge zeroes it). */
static char *touched_end_of(corral_chunk_t *c)
{
  return c->bump > c->touched_end ? c->bump : c->touched_end;
}

/* Under the lock, safe mode: whether the empty chunk c may keep its pages,
 * room in the budget made for it by purging the oldest resident chunks. A
 * purged chunk's header page reads zero but the link it is kept by, which
 * is written back. */
static int keep_resident(corral_chunk_t *c)
{
  size_t budget = (size_t)_corral_options.safe_resident * _corral_layout.chunk_size;
  char *end = touched_end_of(c);
  size_t touched = (size_t)(end - (char *)c);      /* the colour gap before c is never used */
  while (resident_count > 0 && (resident_count == RESIDENT_RING || resident_bytes + touched > budget)) {
    corral_chunk_t *old = resident_ring[resident_first];
    resident_first = (resident_first + 1) % RESIDENT_RING;
    resident_count--;
    if (old->kept_resident) {            /* still kept: otherwise taken since, and its entry spent */
      corral_chunk_t *next = old->next;
      resident_bytes -= (size_t)(old->touched_end - (char *)old);
      old->kept_resident = 0;
      _corral_os_purge((void *)_corral_chunk_base(old), _corral_layout.chunk_size);
      old->next = next;
    }
  }
  if (resident_bytes + touched > budget) return 0;
  c->touched_end = end;
  resident_bytes += touched;
  resident_ring[(resident_first + resident_count++) % RESIDENT_RING] = c;
  return 1;
}

/* Milliseconds of a clock that only moves forward, at the kernel's tick
 * (a read of the vDSO's page, no system call). */
static uint64_t now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

static size_t spare_budget(void)
{
  return (size_t)_corral_options.max_spare * _corral_layout.chunk_size;
}

/* Under the lock: publish whether spares past the budget wait, and when
 * the oldest of them is due. */
static void note_spares_waiting(void)
{
  int waiting = spare_bytes > spare_budget();
  if (waiting) __atomic_store_n(&spares_due_ms, spare_oldest->spare_since + _corral_options.purge_delay, __ATOMIC_RELAXED);
  __atomic_store_n(&_corral_spares_waiting, (uint8_t)waiting, __ATOMIC_RELAXED);
}

/* Under the lock: the oldest spares past the budget that have waited
 * purge_delay go back to the OS. */
static void purge_spares(uint64_t now)
{
  size_t budget = spare_budget();
  corral_chunk_t *c;
  while (spare_bytes > budget && (c = spare_oldest) && now - c->spare_since >= _corral_options.purge_delay) {
    spare_oldest = c->prev;
    if (spare_oldest) spare_oldest->next = NULL;
    else spare_chunks = NULL;
    spare_bytes -= spare_weight(c);
    _corral_os_purge((void *)_corral_chunk_base(c), _corral_layout.chunk_size);
    c->next = purged_chunks;          /* the purge zeroed the header page */
    purged_chunks = c;
  }
  note_spares_waiting();
}

/* Under the lock: the empty chunk c kept resident as a spare. Spares hold
 * max_spare chunks' worth of touched pages for good, however many chunks
 * that takes: a thread that exits after a short life leaves a dozen
 * chunks with a page or two used each, and purging each costs a TLB
 * shootdown (dot's fontconfig threads: ten purges, 0.3 ms of a 12 ms
 * start). A chunk touched throughout counts whole. Past that budget a
 * spare stays for purge_delay milliseconds (0 by default) before it is
 * purged, oldest first: a program whose empty chunks come and go faster
 * than that (a producer and a consumer thread, mimalloc-bench's
 * xmalloc-test all pooled: 600 purges a second, each chunk's 256 pages
 * faulted and cleared again at its next use) takes them back resident.
 * Not by default: where threads come and go (larson at 4 threads on 2
 * cores) more chunks are in use at once beside the waiting ones, and a
 * cap on the waiting spares at an eighth of the chunks in use did not
 * bound that (peak resident 65 MB at once, 111 MB at 100 ms, 130 MB
 * with the cap). */
static void keep_spare(corral_chunk_t *c, uint64_t now)
{
  c->touched_end = touched_end_of(c);
  c->spare_since = now;
  spare_bytes += spare_weight(c);
  c->prev = NULL;
  c->next = spare_chunks;
  if (spare_chunks) spare_chunks->prev = c;
  else spare_oldest = c;
  spare_chunks = c;
  purge_spares(now);
}

void _corral_spares_purge_due(void)
{
  uint64_t now = now_ms();
  if (now < __atomic_load_n(&spares_due_ms, __ATOMIC_RELAXED)) return;
  if (!_corral_trylock(&_corral_heap_lock)) return;     /* the next refill tries again */
  purge_spares(now);
  _corral_unlock(&_corral_heap_lock);
}

/* Under the lock: give an empty chunk back to the pool. */
static void release_locked(corral_chunk_t *c)
{
  unsigned g = c->group;
  if (c->in_retired) retired_remove(c);
  group_chunks[g]--;
  group_bytes[g] -= usable_bytes(c);
  __atomic_store_n(&c->limit, 0, __ATOMIC_RELAXED);   /* free's first way tests only this */
  __atomic_store_n(&c->magic, 0, __ATOMIC_RELEASE);
  if (g == _corral_fresh_group) {
    /* Every block it handed out was freed, and none may be handed out
     * again: its pages go, and its addresses stay unused (a free into it
     * finds no magic: an invalid free). */
    _corral_os_purge((void *)_corral_chunk_base(c), _corral_layout.chunk_size);
    __atomic_store_n(&_corral_fresh_spent, _corral_fresh_spent + 1, __ATOMIC_RELAXED);
  } else if (_corral_modes.safe) {
    /* Its addresses stay with its pool, and its pages too while it is one
     * of the last released; a free of a pointer into it now finds no
     * magic either way: an invalid free. */
    unsigned pool = c->pool;
    if (keep_resident(c)) c->kept_resident = 1;
    else _corral_os_purge((void *)_corral_chunk_base(c), _corral_layout.chunk_size);
    c->next = kept[pool];
    kept[pool] = c;
    chunks_kept++;
  } else {
    keep_spare(c, _corral_options.purge_delay ? now_ms() : 0);     /* no delay, no clock */
  }
}

void _corral_chunk_release(corral_chunk_t *c)
{
  _corral_lock(&_corral_heap_lock);
  release_locked(c);
  _corral_unlock(&_corral_heap_lock);
}

/* Worth adopting: abandoned by its thread's exit (it was that thread's
 * current chunk, so it has room, and the thread that now frees its
 * objects then frees them locally), or at least an eighth of its objects
 * came back. */
static int adoptable(corral_chunk_t *c, long balance)
{
  if (c->abandoned) return 1;
  long pending = balance - CORRAL_RETIRED + (long)c->live;
  return pending > 0 && (size_t)pending * 8 >= c->live;
}

/* A chunk for heap h's pool (group and size class): a retired one with freed
 * space (if may_adopt; *adopted says so), else an empty one. NULL when out of
 * memory. */
corral_chunk_t *_corral_chunk_acquire(corral_heap_t *h, unsigned pool, int may_adopt, int *adopted)
{
  unsigned g = pool / CORRAL_SIZE_CLASSES;
  _corral_lock(&_corral_heap_lock);
  *adopted = 0;
  for (corral_chunk_t *c = may_adopt ? retired[pool] : NULL; c; c = c->next) {
    long b = atomic_load(&c->balance);
    /* b == CORRAL_RETIRED: the last object came back; its freer releases c. */
    while (b != CORRAL_RETIRED && adoptable(c, b)) {
      if (atomic_compare_exchange_weak(&c->balance, &b, b - CORRAL_RETIRED + (long)c->live)) {
        retired_remove(c);
        atomic_store_explicit(&c->owner, h, memory_order_release);
        *adopted = 1;
        _corral_unlock(&_corral_heap_lock);
        return c;
      }
    }
  }
  corral_chunk_t *c = kept[pool];
  if (c) {
    kept[pool] = c->next;
    chunks_kept--;
    if (c->kept_resident) {
      c->kept_resident = 0;
      resident_bytes -= (size_t)(c->touched_end - (char *)c);
      /* A mixed chunk's lists and bitmaps hold the old objects, as a spare's do */
      if (_corral_group_mixed[g]) memset(c->free_lists, 0, _corral_layout.header - sizeof *c);
    }
  } else {
    c = take_empty_chunk();
  }
  if (c) {
    if (!pool_used[pool]) {
      pool_used[pool] = 1;
      pools_used++;
    }
    reset_chunk(c, pool, h);
    group_chunks[g]++;
    group_bytes[g] += usable_bytes(c);
    if (group_bytes[g] > group_peak_bytes[g]) group_peak_bytes[g] = group_bytes[g];
    if (group_chunks[g] > group_peak_chunks[g]) {
      group_peak_chunks[g] = group_chunks[g];
      update_peaks(g);
    }
  }
  _corral_unlock(&_corral_heap_lock);
  return c;
}

/* ---- held chunks --------------------------------------------------------------
 *
 * A block chunk its thread filled stays that thread's, unless its objects
 * die in other threads (freed_elsewhere, below): its owner's frees into it
 * are local frees (a list push, no atomic), other threads' are pushed
 * uncounted, and the owner makes it current again once an eighth of it
 * is free, before it takes a chunk from the lock. Retired at once,
 * every free of its objects, the owner's too, was an atomic push and a
 * count, and the list was walked again when the chunk was adopted: a pool
 * whose live objects fill more than one chunk paid that on most of its
 * frees. A thread keeps CORRAL_HELD of them per pool (CORRAL_HELD_ALONE
 * while it is the only one); the oldest past that, and all of them at its
 * exit, are retired, so that other threads may
 * adopt them. The owner's free of a held chunk's last object releases it
 * (_corral_chunk_emptied); one emptied by other threads' frees waits for
 * its owner's next look at the pool's held chunks, or its exit. */

/* Blocks block chunk c holds, handed out or not. */
static size_t block_capacity(const corral_chunk_t *c)
{
  return (size_t)(c->end - c->blocks) / c->block_size;
}

/* Owner: the blocks of held chunk c (`capacity` in all) that are not
 * live, once the frees of other threads are taken back. */
static size_t held_room(corral_chunk_t *c, size_t capacity)
{
  if (atomic_load_explicit(&c->remote, memory_order_relaxed) & ~CORRAL_REMOTE_COUNTED) _corral_chunk_drain(c, 0);
  CORRAL_ASSERT(c->live <= capacity);
  return capacity - c->live;
}

/* Owner: the held chunks from c on, already off their list, retired. */
static void retire_list(corral_chunk_t *c, uint32_t torn)
{
  while (c) {
    corral_chunk_t *next = c->next;
    c->next = NULL;
    c->held = 0;
    c->torn |= torn;
    _corral_chunk_retire(c, 0);
    c = next;
  }
}

/* Owner: c, just moved aside, onto h's held chunks of its pool; the
 * oldest retired past the bound: CORRAL_HELD, or CORRAL_HELD_ALONE while
 * h is the only live heap (a single-threaded program's frees into a
 * retired chunk are all remote pushes: Lua's trees in safe mode, 450
 * thousand of them at trees.lua 15). Once another thread lives, the next
 * hold retires all past CORRAL_HELD. */
static void hold(corral_heap_t *h, unsigned pool, corral_chunk_t *c)
{
  CORRAL_ASSERT(c->block_size && atomic_load(&c->owner) == h && !c->in_retired && !c->held);
  c->held = 1;
  c->next = h->held[pool];
  h->held[pool] = c;
  unsigned bound = __atomic_load_n(&_corral_heaps_live, __ATOMIC_RELAXED) <= 1 ? CORRAL_HELD_ALONE : CORRAL_HELD;
  corral_chunk_t **link = &h->held[pool];
  for (unsigned n = 0; *link; n++, link = &(*link)->next)
    if (n == bound) {
      corral_chunk_t *old = *link;
      *link = NULL;                        /* the oldest are last */
      retire_list(old, 0);
      break;
    }
}

/* Owner: a held chunk of the pool with an eighth of its blocks free, taken
 * off the list; NULL when none has. */
static corral_chunk_t *take_held(corral_heap_t *h, unsigned pool)
{
  for (corral_chunk_t **link = &h->held[pool]; *link; link = &(*link)->next) {
    corral_chunk_t *c = *link;
    CORRAL_ASSERT(atomic_load(&c->owner) == h && c->pool == pool);
    size_t capacity = block_capacity(c);
    if (held_room(c, capacity) * 8 >= capacity) {
      *link = c->next;
      c->next = NULL;
      c->held = 0;
      _corral_debug_check_chunk(c);
      return c;
    }
  }
  return NULL;
}

void _corral_chunk_emptied(corral_chunk_t *c)
{
  corral_heap_t *h = atomic_load_explicit(&c->owner, memory_order_relaxed);
  CORRAL_ASSERT(h == _corral_tls_heap && c->block_size && c->held && h->cur[c->pool] != c);
  /* Every object is back: none is on the remote stack or on its way
   * there, since each counts as live until it is drained. */
  for (corral_chunk_t **link = &h->held[c->pool]; *link; link = &(*link)->next)
    if (*link == c) {
      *link = c->next;
      c->next = NULL;
      c->held = 0;
      _corral_chunk_release(c);
      return;
    }
  CORRAL_ASSERT(!"an owned chunk that is neither current nor held");
}

void _corral_chunk_retire_held(corral_heap_t *h, unsigned pool, uint32_t torn)
{
  corral_chunk_t *c = h->held[pool];
  h->held[pool] = NULL;
  retire_list(c, torn);
}

/* Owner: since it took c, more of c's blocks came back through its remote
 * stack than half of c holds: its objects die in other threads (a
 * producer's chunk). Frees made while c had another owner, or none, do
 * not count: a thread that carries on with an exited one's objects frees
 * them through the remote stack until it adopts their chunk.
 * Held, such a chunk is taken back while its consumers still free into it,
 * and each block's link is walked twice, by the drain and by the pop,
 * each a miss on a line the other thread just wrote (xmalloc-test with
 * four random pools at two threads: 0.68 of mimalloc alone -> 0.35).
 * Retired, it is released whole when its last object comes back, without
 * a walk, and taken again as fresh space. */
static int freed_elsewhere(const corral_chunk_t *c)
{
  return c->drained_owned * 2 > block_capacity(c);
}

corral_chunk_t *_corral_chunk_replace(corral_heap_t *h, unsigned pool, int may_adopt)
{
  corral_chunk_t *c = h->cur[pool];
  if (c) {
    h->cur[pool] = NULL;
    if (c->block_size && !freed_elsewhere(c) && c->group != _corral_fresh_group) hold(h, pool, c);
    else _corral_chunk_retire(c, 0);
  }
  if (may_adopt && (c = take_held(h, pool))) {
    h->cur[pool] = c;
    return c;
  }
  int adopted;
  if (!(c = _corral_chunk_acquire(h, pool, may_adopt, &adopted))) return NULL;
  h->cur[pool] = c;
  h->used[pool / 64] |= 1ull << (pool % 64);
  if (adopted) {
    _corral_chunk_drain(c, 0);
    c->drained_owned = 0;
  }
  CORRAL_ASSERT(c->pool == pool && atomic_load(&c->owner) == h);
  _corral_debug_check_chunk(c);
  return c;
}

/* The owner stops allocating in c: it is full, or the thread exits
 * (abandoned). */
void _corral_chunk_retire(corral_chunk_t *c, int abandoned)
{
  /* From here on remote frees are counted; the uncounted ones before are
   * taken back now, so `live` is exact when it goes into the balance. */
  _corral_chunk_drain(c, CORRAL_REMOTE_COUNTED);
  _corral_lock(&_corral_heap_lock);
  c->in_retired = 1;
  c->abandoned = (uint8_t)abandoned;
  c->prev = NULL;
  c->next = retired[c->pool];
  if (c->next) c->next->prev = c;
  retired[c->pool] = c;
  atomic_store_explicit(&c->owner, CORRAL_UNOWNED, memory_order_release);
  long add = CORRAL_RETIRED - (long)c->live;
  if (atomic_fetch_add(&c->balance, add) + add == CORRAL_RETIRED)
    release_locked(c);                   /* every object already came back */
  _corral_unlock(&_corral_heap_lock);
}

int _corral_fresh_stranded(unsigned pool)
{
  uint64_t handed = 0, back = 0;
  _corral_lock(&_corral_heap_lock);
  for (corral_chunk_t *c = retired[pool]; c; c = c->next) {
    uint64_t n = c->limit / c->block_size;
    long live = CORRAL_RETIRED - atomic_load_explicit(&c->balance, memory_order_relaxed);
    handed += n * c->block_size;
    if (live >= 0 && (uint64_t)live <= n) back += (n - (uint64_t)live) * c->block_size;
  }
  _corral_unlock(&_corral_heap_lock);
  return back >= CORRAL_FRESH_JUDGE_BYTES && back * 4 > handed;
}

/* ---- statistics ------------------------------------------------------------ */

static uint64_t live_bytes_locked(unsigned g)
{
  uint64_t live = 0;
  for (corral_heap_t *h = _corral_heaps; h; h = h->next_heap)
    live += h->counts[g].bytes - h->counts[g].freed_bytes;
  return live;
}

/* Live bytes are sampled whenever a group's chunk count reaches a new peak,
 * every CORRAL_SAMPLE_EVERY allocations of a thread in a group, and at exit. */
static void update_peaks(unsigned g)
{
  uint64_t live = live_bytes_locked(g);
  if ((int64_t)live > 0 && live > group_peak_live[g]) group_peak_live[g] = live;
}

void _corral_sample_live(unsigned g)
{
  _corral_lock(&_corral_heap_lock);
  update_peaks(g);
  _corral_unlock(&_corral_heap_lock);
}

void _corral_heap_totals(corral_group_totals_t *groups, unsigned ngroups,
                         uint64_t *ungrouped_objects, uint64_t *ungrouped_bytes)
{
  _corral_lock(&_corral_heap_lock);
  *ungrouped_objects = *ungrouped_bytes = 0;
  for (unsigned g = 0; g < ngroups; g++) {
    corral_group_totals_t *t = &groups[g];
    memset(t, 0, sizeof *t);
    update_peaks(g);
    t->chunks = group_chunks[g];
    t->peak_chunks = group_peak_chunks[g];
    t->peak_live = group_peak_live[g];
    t->peak_resident = group_peak_bytes[g];
  }
  for (corral_heap_t *h = _corral_heaps; h; h = h->next_heap) {
    *ungrouped_objects += h->ungrouped_objects;
    *ungrouped_bytes += h->ungrouped_bytes;
    for (unsigned g = 0; g < ngroups; g++) {
      groups[g].counts.objects += h->counts[g].objects;
      groups[g].counts.bytes += h->counts[g].bytes;
      groups[g].counts.frees += h->counts[g].frees;
      groups[g].counts.freed_bytes += h->counts[g].freed_bytes;
    }
  }
  _corral_unlock(&_corral_heap_lock);
}

void _corral_pool_totals(unsigned *pools, unsigned *kept_chunks)
{
  _corral_lock(&_corral_heap_lock);
  *pools = pools_used;
  *kept_chunks = chunks_kept;
  _corral_unlock(&_corral_heap_lock);
}

/* ---- lookups ----------------------------------------------------------------- */

int _corral_group_of_address(const void *p)
{
  corral_where_t where;
  corral_chunk_t *c = _corral_chunk_of(p, &where);
  if (where == CORRAL_NOT_A_START) {
    /* an interior pointer: still in the group's chunk, unless in its header */
    c = _corral_chunk_header((uintptr_t)p);
    uintptr_t first = c->block_size ? (uintptr_t)c->blocks : (uintptr_t)c + _corral_layout.header;
    if ((uintptr_t)p < first) return -1;
  }
  return c ? (int)c->group : -1;
}
