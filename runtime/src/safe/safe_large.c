/* Safe mode's large blocks (above safe_max_size, or aligned past a page): each
 * gets address space no other site's block had before, carved page by page
 * from one reserved space. Only once the whole space has been handed out
 * are freed ranges carved again: the cursor starts again at the space's
 * start and takes the first run of freed pages that fits, moving on from
 * there, so the ranges freed longest ago (the lowest, handed out first) are
 * reused first.
 *
 * A freed block waits where it is, pages and all, for the next block of its
 * site and page class, which gets it back as it is: the guarantee small
 * blocks have (memory freed at a site is reused by that site and class
 * only), at no system call, where a string built by concatenation makes
 * and frees a block of one site per step. Only one block of a site and
 * class waits so; the one before it, and one another site's block of its
 * class takes, has its pages moved (mremap) to a fresh range no pointer
 * ever reached, and its own range is mapped again as fresh PROT_NONE
 * memory, which makes a dangling pointer's access fault from then on. Only
 * the last safe_resident freed blocks, and as many bytes as that many
 * chunks, keep their pages; older ones give them back and become
 * inaccessible. docs/safe.md, "Large blocks". */
#define _GNU_SOURCE                  /* mremap */
#include "safe.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "lock.h"

#define PAGE 4096
#define LIVE (1u << 31)       /* a start entry's flag: handed out, not freed */
#define KEPT (1u << 30)       /* a start entry's flag: freed, its pages kept for a later block */
#define ANY_SITE 0xffffu      /* a kept block's group once its pages were moved: any site's */
#define KEEP_MAX 64           /* kept blocks at most (safe_resident's own bound) */
#define COMMIT_AHEAD 256      /* pages made read-write at a time, before the first wrap */

static struct {
  corral_lock_t lock;
  uintptr_t lo;
  size_t pages;               /* in the space */
  /* Per page: 0, or the first page of a block (live or freed), or of the
   * gap an alignment skipped (freed): its pages | LIVE while live. Every
   * page below `top` belongs to exactly one such run. */
  uint32_t *start;
  uint16_t *owner;            /* per page: the group of the block that starts there */
  size_t cursor, top;
  size_t committed;           /* pages [0, committed) were made read-write (before the first wrap) */
  int wrapped;
  /* Freed blocks whose pages are kept, oldest first: their first page, pages
   * and group (the site they wait for where they are; ANY_SITE once moved
   * to a fresh range). keep_off: mremap cannot move them (an old kernel,
   * Valgrind). */
  struct { uint32_t at, pages; uint16_t group; } kept[KEEP_MAX];
  unsigned kept_count;
  size_t kept_pages;
  int keep_off;
  corral_safe_large_stats_t stats;
} large;

/* The space and its table, halving the size down to SMALLEST_SPACE when
 * the address space will not give that much (Valgrind's gives a few GiB). */
#define SMALLEST_SPACE ((size_t)256 << 20)

static int reserve(size_t pages)
{
  char *lo = _corral_os_reserve(pages * PAGE);
  /* The tables are address space too: only their entries in use get pages. */
  uint32_t *start = lo ? _corral_os_reserve(pages * sizeof(uint32_t)) : NULL;
  uint16_t *owner = start ? _corral_os_reserve(pages * sizeof(uint16_t)) : NULL;
  if (!owner || _corral_os_commit(start, pages * sizeof(uint32_t)) != 0 ||
      _corral_os_commit(owner, pages * sizeof(uint16_t)) != 0) {
    _corral_os_unmap(lo, pages * PAGE);
    _corral_os_unmap(start, pages * sizeof(uint32_t));
    _corral_os_unmap(owner, pages * sizeof(uint16_t));
    return -1;
  }
  large.lo = (uintptr_t)lo;
  large.start = start;
  large.owner = owner;
  large.pages = pages;
  return 0;
}

int _corral_safe_large_init(void)
{
  size_t wanted = (_corral_options.safe_large_space & ~(size_t)(PAGE - 1)) / PAGE, pages = wanted;
  if (pages > LIVE - 1) pages = LIVE - 1;
  while (reserve(pages) != 0) {
    if (pages * PAGE <= SMALLEST_SPACE) return -1;
    pages /= 2;
  }
  if (pages < wanted)
    _corral_note(1, "safe mode: %zu MiB of address space for large blocks (%zu MiB asked for)",
                 pages * PAGE >> 20, wanted * PAGE >> 20);
  large.stats.reserved = large.pages * PAGE;
  /* Inside the span, so that free looks at these pointers (init.c). */
  if (large.lo < _corral_range_min) _corral_range_min = large.lo;
  if (large.lo + large.pages * PAGE > _corral_range_max) _corral_range_max = large.lo + large.pages * PAGE;
  return 0;
}

int _corral_safe_large_owns(const void *p)
{
  return (uintptr_t)p - large.lo < large.pages * PAGE;
}

static size_t run_pages(uint32_t e) { return e & ~(LIVE | KEPT); }

/* Pages a block of n takes: n rounded up to one of four steps per doubling
 * past 8, so that blocks of nearby sizes share a class and one's kept pages
 * fit the next (a string grown by concatenation); at most 25% more. */
static size_t class_pages(size_t n)
{
  if (n <= 8) return n;
  size_t step = (size_t)1 << (63 - __builtin_clzl(n) - 2);
  return (n + step - 1) & ~(step - 1);
}

/* Take [s, s + n) from the run of freed pages that starts at `run` (it may
 * go on into the never-used pages from top on), re-tiling what is left on
 * both sides: the freed runs it covers lose their entries, the one it ends
 * inside keeps its tail. */
static void take(size_t run, size_t s, size_t n)
{
  for (size_t k = run, next; k < s + n && k < large.top; k = next) {
    next = k + run_pages(large.start[k]);
    large.start[k] = 0;
    if (next > s + n) large.start[s + n] = (uint32_t)(next - (s + n));
  }
  if (s > run) large.start[run] = (uint32_t)(s - run);
  large.start[s] = (uint32_t)n | LIVE;
  if (s + n > large.top) large.top = s + n;
  large.cursor = s + n;
}

/* The first run of freed pages from `from` on, before `limit`, that holds n
 * pages aligned to a pages; its start, or SIZE_MAX. */
static size_t find(size_t from, size_t limit, size_t n, size_t a)
{
  size_t run = from;
  for (size_t k = from; k < limit;) {
    if (k >= large.top) {                       /* never used: free to the end */
      size_t s = (run + a - 1) / a * a;
      if (s + n > large.pages) return SIZE_MAX;
      take(run, s, n);
      return s;
    }
    uint32_t e = large.start[k];
    if (e == 0) return SIZE_MAX;                /* not a run's start: the table is inconsistent */
    size_t next = k + run_pages(e);
    if (e & (LIVE | KEPT)) {
      run = next;
    } else {
      size_t s = (run + a - 1) / a * a;
      if (s + n <= next) {
        take(run, s, n);
        return s;
      }
    }
    k = next;
  }
  return SIZE_MAX;
}

/* Under the lock: n pages aligned to a pages, marked live; SIZE_MAX when
 * the space has no such run left. */
static size_t carve(size_t n, size_t a)
{
  if (!large.wrapped) {
    size_t at = (large.cursor + a - 1) / a * a;
    if (at + n <= large.pages) {
      if (at > large.cursor) large.start[large.cursor] = (uint32_t)(at - large.cursor);   /* the gap: freed */
      large.start[at] = (uint32_t)n | LIVE;
      large.cursor = large.top = at + n;
      return at;
    }
    large.wrapped = 1;
    large.cursor = 0;
  }
  /* Reuse: from the cursor to the end, then from the start. */
  size_t from = large.cursor;
  size_t s = find(from, large.pages, n, a);
  if (s == SIZE_MAX && from > 0) s = find(0, from, n, a);
  if (s != SIZE_MAX) large.stats.recycled++;
  return s;
}

/* Under the lock: make the carved [s, s + n) read-write (0, else -1). Fresh
 * pages are made so COMMIT_AHEAD at a time, so that most blocks cost no
 * system call; a recycled range is PROT_NONE again. */
static int commit(size_t s, size_t n)
{
  size_t from = s, to = s + n;
  if (!large.wrapped) {
    from = large.committed;
    if (to < from + COMMIT_AHEAD) to = from + COMMIT_AHEAD;
    if (to > large.pages) to = large.pages;
  }
  if (from >= s + n) return 0;
  if (_corral_os_commit((void *)(large.lo + from * PAGE), (to - from) * PAGE) != 0) return -1;
  if (!large.wrapped) large.committed = to;
  return 0;
}

/* Under the lock: the pages of [p, p + bytes) back to the OS and the range
 * inaccessible. A fresh PROT_NONE mapping over it does both in one call. */
static void release(void *p, size_t bytes)
{
  void *q = mmap(p, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  if (q == MAP_FAILED) {
    /* Out of mappings: the pages still go back, the range stays readable
     * (as zeros) but is never handed to another block until reused. */
    _corral_os_purge(p, bytes);
    large.stats.unprotected++;
  }
}

/* Under the lock: forget kept block i, its range now a freed run. */
static void unkeep(unsigned i)
{
  large.start[large.kept[i].at] &= ~KEPT;
  large.kept_pages -= large.kept[i].pages;
  large.kept_count--;
  memmove(&large.kept[i], &large.kept[i + 1], (large.kept_count - i) * sizeof large.kept[0]);
}

/* Under the lock: kept block i's pages back to the OS. */
static void drop_kept(unsigned i)
{
  release((void *)(large.lo + (uintptr_t)large.kept[i].at * PAGE), (size_t)large.kept[i].pages * PAGE);
  unkeep(i);
}

static unsigned keep_budget(void)
{
  return _corral_options.safe_resident < KEEP_MAX ? (unsigned)_corral_options.safe_resident : KEEP_MAX;
}

/* As many bytes as the resident chunks may keep. */
static size_t keep_pages_max(void) { return keep_budget() * (_corral_layout.chunk_size / PAGE); }

/* Under the lock: the pages of kept block i moved to a fresh range (carved,
 * aligned to a pages, marked live), its own range made inaccessible; the
 * fresh range's first page, or SIZE_MAX with nothing done. */
static size_t move_pages(unsigned i, size_t a)
{
  if (large.keep_off) return SIZE_MAX;
  size_t at = large.kept[i].at, n = large.kept[i].pages;
  int saved = errno;                              /* malloc and free leave errno as it was */
  size_t h = carve(n, a);                         /* never `at`: it is kept */
  if (h == SIZE_MAX) return SIZE_MAX;
  size_t bytes = n * PAGE;
  void *from = (void *)(large.lo + at * PAGE), *to = (void *)(large.lo + h * PAGE);
  /* The range needs no commit: it is mapped over. Before the first wrap,
   * a later commit starts past it, so that it never opens it once freed. */
  if (!large.wrapped && large.committed < h + n) large.committed = h + n;
  /* DONTUNMAP leaves the old range mapped, empty, so that no other mapping
   * can take it before it is mapped again as fresh PROT_NONE memory (which,
   * unlike mprotect, lets it merge with its freed neighbours: a moved
   * range stays a mapping of its own, and the count of mappings is
   * bounded). */
  if (mremap(from, bytes, bytes, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, to) == MAP_FAILED) {
    if (errno == EINVAL) large.keep_off = 1;      /* a kernel before 5.7, or Valgrind */
    large.start[h] &= ~LIVE;                      /* never handed out: a freed run */
    errno = saved;
    return SIZE_MAX;
  }
  release(from, bytes);
  errno = saved;
  return h;
}

/* Under the lock: a kept block of n pages aligned to a pages for a block of
 * group g, marked live; SIZE_MAX if none. The newest that waits where it is
 * for g, or whose pages were moved for any site; else the newest waiting
 * for another site, its pages moved to a fresh range now. */
static size_t take_kept(size_t n, size_t a, unsigned g)
{
  unsigned other = KEEP_MAX;
  for (unsigned i = large.kept_count; i-- > 0;) {
    if (large.kept[i].pages != n || large.kept[i].at % a) continue;
    if (large.kept[i].group == g || large.kept[i].group == ANY_SITE) {
      size_t s = large.kept[i].at;
      if (large.kept[i].group == g) large.stats.in_place++;
      unkeep(i);
      large.start[s] |= LIVE;
      large.stats.reused++;
      return s;
    }
    if (other == KEEP_MAX) other = i;
  }
  if (other == KEEP_MAX) return SIZE_MAX;
  size_t h = move_pages(other, a);
  if (h == SIZE_MAX) return SIZE_MAX;             /* it waits on for its own site */
  unkeep(other);
  large.stats.reused++;
  return h;
}

void *_corral_safe_large_alloc(size_t size, size_t align, int zero, unsigned group)
{
  if (!large.start || size > large.pages * PAGE) return NULL;
  size_t n = class_pages((size + PAGE - 1) / PAGE), a = align > PAGE ? align / PAGE : 1;
  if (n == 0) n = 1;
  _corral_lock(&large.lock);
  size_t s = take_kept(n, a, group);
  int reused = s != SIZE_MAX;
  if (!reused) {
    s = carve(n, a);
    if (s == SIZE_MAX && large.kept_count) {
      /* Kept pages hold address space too: give it all back and look again. */
      while (large.kept_count) drop_kept(0);
      s = carve(n, a);
    }
    if (s == SIZE_MAX) {
      large.stats.full++;
      _corral_unlock(&large.lock);
      return NULL;
    }
    if (commit(s, n) != 0) {
      /* out of mappings or memory: the range stays freed */
      large.start[s] &= ~LIVE;
      large.stats.full++;
      _corral_unlock(&large.lock);
      return NULL;
    }
  }
  large.owner[s] = (uint16_t)group;
  void *p = (void *)(large.lo + s * PAGE);
  large.stats.blocks++;
  large.stats.live_blocks++;
  large.stats.live_bytes += n * PAGE;
  if (large.stats.live_bytes > large.stats.peak_live_bytes) large.stats.peak_live_bytes = large.stats.live_bytes;
  _corral_unlock(&large.lock);
  if (reused && zero) memset(p, 0, size);
  return p;
}

/* The start entry of p if p is a live block's start, else NULL (and *e the
 * entry found there, 0 if none). Under the lock. */
static uint32_t *live_entry(const void *p, uint32_t *e)
{
  uintptr_t off = (uintptr_t)p - large.lo;
  *e = 0;
  if (off % PAGE || off / PAGE >= large.pages) return NULL;
  uint32_t *at = &large.start[off / PAGE];
  *e = off / PAGE < large.top ? *at : 0;
  return *e & LIVE ? at : NULL;
}

/* Under the lock: the freed block of n pages at page s keeps them, waiting
 * where it is for its site's next block of its class (1); or 0, nothing
 * done. A block that waited so before it has its pages moved to a fresh
 * range for any site, or given back. */
static int keep(size_t s, size_t n)
{
  if (keep_budget() == 0 || n > keep_pages_max()) return 0;
  unsigned g = large.owner[s];
  for (unsigned i = 0; i < large.kept_count; i++) {
    if (large.kept[i].group != g || large.kept[i].pages != n) continue;
    size_t h = move_pages(i, 1);
    if (h == SIZE_MAX) {
      drop_kept(i);
    } else {
      large.start[large.kept[i].at] &= ~KEPT;     /* released by the move: a freed run */
      large.start[h] = (uint32_t)n | KEPT;
      large.kept[i].at = (uint32_t)h;
      large.kept[i].group = ANY_SITE;
    }
    break;
  }
  large.start[s] = (uint32_t)n | KEPT;
  while (large.kept_count && (large.kept_count >= keep_budget() || large.kept_pages + n > keep_pages_max()))
    drop_kept(0);
  large.kept[large.kept_count].at = (uint32_t)s;
  large.kept[large.kept_count].pages = (uint32_t)n;
  large.kept[large.kept_count].group = (uint16_t)g;
  large.kept_count++;
  large.kept_pages += n;
  large.stats.kept++;
  return 1;
}

void _corral_safe_large_free(void *p, void *site)
{
  uint32_t e;
  _corral_lock(&large.lock);
  uint32_t *at = live_entry(p, &e);
  if (!at) {
    _corral_unlock(&large.lock);
    _corral_safe_report(e ? CORRAL_SAFE_DOUBLE_FREE : CORRAL_SAFE_INVALID_FREE, p,
                        e ? "a freed large block" : "no large block's start", site);
    return;
  }
  size_t n = run_pages(e);
  /* Under the lock: once the entry says freed, a wrapped cursor may hand
   * the range out again, and this must not unmap it after that. */
  if (!keep((size_t)(at - large.start), n)) {
    release(p, n * PAGE);
    *at = e & ~LIVE;
  }
  large.stats.live_blocks--;
  large.stats.live_bytes -= n * PAGE;
  _corral_unlock(&large.lock);
}

size_t _corral_safe_large_usable(const void *p)
{
  uint32_t e;
  if (!_corral_safe_large_owns(p)) return 0;
  _corral_lock(&large.lock);
  uint32_t *at = live_entry(p, &e);
  _corral_unlock(&large.lock);
  return at ? run_pages(e) * PAGE : 0;
}

void _corral_safe_large_stats(corral_safe_large_stats_t *s)
{
  _corral_lock(&large.lock);
  *s = large.stats;
  _corral_unlock(&large.lock);
}

void _corral_safe_large_fork_prepare(void) { _corral_lock(&large.lock); }
void _corral_safe_large_fork_parent(void) { _corral_unlock(&large.lock); }
void _corral_safe_large_fork_child(void) { _corral_unlock(&large.lock); }
