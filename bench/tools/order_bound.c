/* order_bound.so: what placing small objects in allocation order, at no
 * cost, would give a program; a yardstick for layouts, not an allocator.
 *
 * Preloaded before a base allocator (bench/tools/plans_vs_dynamic.py
 * --bounds does it), it serves every malloc, calloc and realloc of at most
 * ORDER_BOUND_MAX bytes (default 4096) by bumping a pointer, and never
 * reuses what is freed. Sizes are rounded up to 8 bytes (16 when already
 * a multiple of 16), as size-class allocators round them.
 *
 *   ORDER_BOUND=one    one stream: every small object right after the one
 *                      allocated before it (the layout of one pool holding
 *                      everything);
 *   ORDER_BOUND=site   a stream per call site of malloc (its return
 *                      address; up to 63, later sites share the last): the
 *                      layout of one pool per site, as safe mode pools.
 *
 * Streams take 1 MiB chunks in turn from one reserved range, as corral's
 * pools do (each thread its own chunk of each stream): streams reserved far apart (4 GiB each) cost more page walks
 * than chunks that interleave, and measured treeadd's 16 sites at 0.63 s
 * where safe mode's pools of the same sites ran 0.40 s.
 *
 * A program that frees and allocates again a lot grows without bound here
 * (once the range's 64 GiB, 1 GiB or more under Valgrind, are carved it
 * forwards), so the tool is
 * for programs whose small objects mostly live, like the Olden and Ptrdist
 * pointer-chasers. Aligned requests, large ones and everything before the
 * regions are mapped go to the allocator underneath; malloc_usable_size
 * is not served for the streams' objects. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STREAMS 64
#define RANGE_BYTES ((size_t)64 << 30)
#define CHUNK_BYTES ((size_t)1 << 20)
#define SITE_SLOTS 1024

static char *region;                       /* range_bytes, carved into chunks from the start */
static char *carved;                       /* the next chunk */
static size_t range_bytes;
/* Each thread's current chunk of each stream: no lock on the way. */
static __thread __attribute__((tls_model("initial-exec"))) char *bump[STREAMS], *chunk_end[STREAMS];
static int by_site;
static size_t max_small = 4096;
static uintptr_t site_key[SITE_SLOTS];     /* return address, 0 when free */
static unsigned site_stream[SITE_SLOTS];
static unsigned streams_used = 1;
static void *(*next_malloc)(size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static int state;                          /* 0 not started, 1 mapping, 2 streams ready, 3 no streams */

static void start(void)
{
  if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) >= 2) return;
  int expected = 0;
  if (!__atomic_compare_exchange_n(&state, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    while (__atomic_load_n(&state, __ATOMIC_ACQUIRE) < 2) {
    }
    return;
  }
  const char *mode = getenv("ORDER_BOUND"), *max = getenv("ORDER_BOUND_MAX");
  by_site = mode && strcmp(mode, "site") == 0;
  if (max && atol(max) > 0) max_small = (size_t)atol(max);
  /* Valgrind's address space takes no 64 GiB: a smaller range then. */
  for (size_t bytes = RANGE_BYTES; !region && bytes >= ((size_t)1 << 30); bytes /= 4) {
    void *r = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (r != MAP_FAILED) {
      carved = region = r;
      range_bytes = bytes;
    }
  }
  /* The streams serve before the next allocator is looked up: dlsym may
   * allocate (small), and that must not wait for itself. */
  __atomic_store_n(&state, region ? 2 : 3, __ATOMIC_RELEASE);
  next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
  next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
  next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
}

static int ours(const void *p)
{
  return region && (const char *)p >= region && (const char *)p < region + range_bytes;
}

static unsigned stream_of(uintptr_t site)
{
  if (!by_site) return 0;
  unsigned h = (unsigned)((site * 0x9e3779b97f4a7c15ull) >> 54) % SITE_SLOTS;
  for (unsigned probe = 0; probe < SITE_SLOTS; probe++, h = (h + 1) % SITE_SLOTS) {
    uintptr_t k = __atomic_load_n(&site_key[h], __ATOMIC_ACQUIRE);
    if (k == site) return __atomic_load_n(&site_stream[h], __ATOMIC_ACQUIRE);
    if (k == 0) {
      unsigned s = __atomic_fetch_add(&streams_used, 1, __ATOMIC_RELAXED);
      if (s >= STREAMS) s = STREAMS - 1;
      __atomic_store_n(&site_stream[h], s, __ATOMIC_RELEASE);
      uintptr_t none = 0;
      if (__atomic_compare_exchange_n(&site_key[h], &none, site, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return s;
      if (none == site) return __atomic_load_n(&site_stream[h], __ATOMIC_ACQUIRE);
    }
  }
  return STREAMS - 1;
}

/* NULL when the request is not the streams' to serve. */
static void *take(size_t size, uintptr_t site)
{
  if (size > max_small || __atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2) return NULL;
  size_t n = size <= 16 ? 16 : (size % 16 == 0 ? size : (size + 7) & ~(size_t)7);
  unsigned s = stream_of(site);
  char *p = bump[s];
  if (!p || p + n > chunk_end[s]) {
    p = __atomic_fetch_add(&carved, CHUNK_BYTES, __ATOMIC_RELAXED);
    if (p + CHUNK_BYTES > region + range_bytes) return NULL;
    chunk_end[s] = p + CHUNK_BYTES;
  }
  bump[s] = p + n;
  return p;
}

void *malloc(size_t size)
{
  start();
  void *p = take(size, (uintptr_t)__builtin_return_address(0));
  return p ? p : next_malloc(size);
}

void *calloc(size_t count, size_t size)
{
  start();
  size_t bytes;
  if (__builtin_mul_overflow(count, size, &bytes)) return NULL;
  void *p = take(bytes, (uintptr_t)__builtin_return_address(0));
  if (p) return p;                         /* never used before: zero */
  p = next_malloc(bytes);
  if (p) memset(p, 0, bytes);
  return p;
}

void *realloc(void *old, size_t size)
{
  start();
  if (!ours(old)) {
    if (old || size > max_small) return next_realloc(old, size);
  }
  void *p = take(size, (uintptr_t)__builtin_return_address(0));
  if (!p) p = next_malloc(size);
  if (p && old) {
    /* The old size is not kept: copy what the new object holds, up to the
     * end of the old object's chunk (mapped, never past it). */
    size_t room = CHUNK_BYTES - (size_t)((char *)old - region) % CHUNK_BYTES;
    memcpy(p, old, size < room ? size : room);
  }
  return p;
}

void free(void *p)
{
  if (!p || ours(p)) return;
  start();
  next_free(p);
}
