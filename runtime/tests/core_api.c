/* Every C allocation entry point and path. EXPECT_GROUPED=1 in the
 * environment says small objects must land in a group (CORRAL_RANDOM_POOLS=1);
 * MAX_SIZE is corral's max grouped size (default 4096). */
#define _GNU_SOURCE 1
#include "core_check.h"

#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int grouped_expected, safe_expected, fresh_expected;
/* Sizes the compiler cannot fold (it may assume a huge malloc fails). */
static volatile size_t huge = SIZE_MAX, half = SIZE_MAX / 2, two33 = (size_t)1 << 33;
/* times 4 wraps to 4: only the multiplication check can refuse it */
static volatile size_t wraps_to_4 = ((size_t)1 << 62) + 1;
static size_t max_size = 4096;

static void fill(unsigned char *p, size_t n, unsigned seed) { for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7); }
static int same(const unsigned char *p, size_t n, unsigned seed)
{
  for (size_t i = 0; i < n; i++) if (p[i] != (unsigned char)(seed + i * 7)) return 0;
  return 1;
}

/* Where an object of this size and alignment should be. */
static int want_grouped(size_t size, size_t align) { return grouped_expected && size <= max_size && align <= 4096; }

static void check_place(void *p, size_t size, size_t align, const char *what)
{
  CHECK(p != NULL, "%s(%zu, align %zu) returned NULL", what, size, align);
  if (!p) return;
  CHECK(((uintptr_t)p & (align - 1)) == 0, "%s(%zu) = %p not aligned to %zu", what, size, p, align);
  CHECK(malloc_usable_size(p) >= size, "%s(%zu): usable %zu", what, size, malloc_usable_size(p));
  CHECK((group_of(p) >= 0) == want_grouped(size, align), "%s(%zu, align %zu): group %d", what, size, align, group_of(p));
  memset(p, 0xab, size);
}

static void test_malloc_sizes(void)
{
  for (size_t size = 0; size <= 2 * max_size + 64; size += size < 64 ? 1 : 61) {
    void *p = malloc(size);
    /* C's rule, which corral packs by: 16 only where a 16-aligned type fits */
    check_place(p, size, size >= 16 && size % 16 == 0 ? 16 : 8, "malloc");
    free(p);
  }
  CHECK(malloc_usable_size(NULL) == 0, "usable_size(NULL)");
  free(NULL);
  errno = 0;
  CHECK(malloc(huge) == NULL && errno == ENOMEM, "malloc(SIZE_MAX) errno %d", errno);
  errno = 0;
  CHECK(malloc(huge - 4096) == NULL, "malloc(SIZE_MAX-4096)");
  /* on both sides of PTRDIFF_MAX, where mimalloc stops setting errno itself */
  for (size_t s = (size_t)PTRDIFF_MAX - 1; s != (size_t)PTRDIFF_MAX + 3; s++) {
    errno = 0;
    CHECK(malloc(s) == NULL && errno == ENOMEM, "malloc(%#zx) errno %d", s, errno);
    errno = 0;
    CHECK(calloc(1, s) == NULL && errno == ENOMEM, "calloc(1, %#zx) errno %d", s, errno);
  }
  errno = 0;
  CHECK(malloc((size_t)1 << 50) == NULL && errno == ENOMEM, "malloc(1 PiB) errno %d", errno);
}

static void test_calloc(void)
{
  for (size_t size = 1; size <= 1000; size += 37) {
    unsigned char *p = malloc(size);
    memset(p, 0x5a, size);
    free(p);
    unsigned char *q = calloc(1, size);
    CHECK(q != NULL, "calloc %zu", size);
    size_t nonzero = 0;
    for (size_t i = 0; i < size; i++) nonzero += q[i] != 0;
    CHECK(nonzero == 0, "calloc(%zu) has %zu non-zero bytes", size, nonzero);
    free(q);
  }
  errno = 0;
  CHECK(calloc(half, 3) == NULL && errno == ENOMEM, "calloc overflow errno %d", errno);
  errno = 0;
  CHECK(calloc(two33, two33) == NULL && errno == ENOMEM, "calloc overflow 2");
}

static void test_aligned(void)
{
  size_t sizes[] = { 1, 24, 100, 1000, 4000, 10000 };
  for (size_t a = 16; a <= 8192; a *= 2)
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
      size_t s = sizes[i];
      void *p = memalign(a, s);
      check_place(p, s, a, "memalign");
      free(p);
      p = NULL;
      CHECK(posix_memalign(&p, a, s) == 0, "posix_memalign(%zu, %zu)", a, s);
      check_place(p, s, a, "posix_memalign");
      free(p);
      p = aligned_alloc(a, s);
      check_place(p, s, a, "aligned_alloc");
      free(p);
    }
  void *p = (void *)1;
  CHECK(posix_memalign(&p, 24, 10) == EINVAL && p == (void *)1, "posix_memalign bad alignment");
  CHECK(posix_memalign(&p, 4, 10) == EINVAL, "posix_memalign alignment below sizeof(void*)");
  /* posix_memalign reports through its result and leaves errno alone,
   * whether it succeeds, fails for the alignment or fails for the size */
  errno = 1234;
  CHECK(posix_memalign(&p, 64, 40) == 0 && errno == 1234, "posix_memalign success kept errno: %d", errno);
  free(p);
  CHECK(posix_memalign(&p, 24, 10) == EINVAL && errno == 1234, "EINVAL kept errno: %d", errno);
  p = (void *)1;
  CHECK(posix_memalign(&p, 64, huge - 4096) == ENOMEM && p == (void *)1, "posix_memalign huge");
  /* glibc itself sets errno here; corral keeps it whatever is underneath */
  CHECK(!dlsym(RTLD_DEFAULT, "corral_group_of") || errno == 1234, "ENOMEM kept errno: %d", errno);
  p = memalign(48, 100);                 /* glibc rounds up to 64 */
  CHECK(p && ((uintptr_t)p & 63) == 0, "memalign(48) = %p", p);
  free(p);
  for (size_t s = 1; s < 9000; s += 1999) {
    long page = sysconf(_SC_PAGESIZE);
    p = valloc(s);
    check_place(p, s, (size_t)page, "valloc");
    free(p);
    p = pvalloc(s);
    size_t rounded = (s + (size_t)page - 1) / (size_t)page * (size_t)page;
    check_place(p, rounded, (size_t)page, "pvalloc");
    free(p);
  }
}

static void test_realloc(void)
{
  /* grow a small object step by step past max_size and shrink it back */
  unsigned char *p = realloc(NULL, 10);
  CHECK(p != NULL && (group_of(p) >= 0) == want_grouped(10, 16), "realloc(NULL, 10)");
  fill(p, 10, 1);
  size_t have = 10;
  for (size_t size = 20; size <= 3 * max_size; size = size * 3 / 2) {
    p = realloc(p, size);
    CHECK(p != NULL && same(p, have, 1), "grow to %zu keeps contents", size);
    CHECK((group_of(p) >= 0) == (want_grouped(size, 16) || (grouped_expected && size <= malloc_usable_size(p) && size <= max_size)),
          "grow to %zu: group %d", size, group_of(p));
    fill(p, size, 1);
    have = size;
  }
  for (size_t size = have / 2; size >= 8; size /= 3) {
    p = realloc(p, size);
    CHECK(p != NULL && same(p, size, 1), "shrink to %zu keeps contents", size);
  }
  free(p);
  /* a large ungrouped object shrunk from a grouped site moves into a group */
  p = malloc(3 * max_size);
  fill(p, 3 * max_size, 9);
  p = realloc(p, 100);
  CHECK(p && same(p, 100, 9), "large -> small keeps contents");
  CHECK((group_of(p) >= 0) == want_grouped(100, 16), "large -> small placed, group %d", group_of(p));
  free(p);
  p = malloc(50);
  CHECK(realloc(p, 0) == NULL, "realloc(p, 0) frees");
  errno = 0;
  p = malloc(16);
  fill(p, 16, 5);
  CHECK(reallocarray(p, half, 3) == NULL && errno == ENOMEM, "reallocarray overflow");
  errno = 0;
  CHECK(reallocarray(p, wraps_to_4, 4) == NULL && errno == ENOMEM, "reallocarray overflow to a small product");
  CHECK(same(p, 16, 5), "p unchanged by the refused reallocarray");
  unsigned char *q = reallocarray(p, 10, 10);
  CHECK(q != NULL && malloc_usable_size(q) >= 100, "reallocarray 10x10");
  free(q);
  p = malloc(16);
  errno = 0;
  CHECK(realloc(p, huge - 8) == NULL && errno == ENOMEM, "realloc huge fails");
  /* errno on both sides of PTRDIFF_MAX and at 1 PiB, of NULL and of a
   * block: realloc forwards by a tail jump where the allocator underneath
   * sets errno itself (next.c), and must not lose it where it does not */
  size_t sizes[] = { (size_t)PTRDIFF_MAX - 1, (size_t)PTRDIFF_MAX, (size_t)PTRDIFF_MAX + 1, (size_t)1 << 50 };
  for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    errno = 0;
    CHECK(realloc(NULL, sizes[i]) == NULL && errno == ENOMEM, "realloc(NULL, %#zx) errno %d", sizes[i], errno);
    errno = 0;
    CHECK(realloc(p, sizes[i]) == NULL && errno == ENOMEM, "realloc(p, %#zx) errno %d", sizes[i], errno);
  }
  free(p);                               /* still valid after the failed reallocs */
}

/* Grouped blocks are packed as C allows (docs/runtime.md, "Packing"): a
 * size's usable size is its class's block, and 24-byte blocks sit 24 bytes
 * apart, so some start at 8 mod 16. Random pools only: a plan's group may
 * mix sizes in granules. */
static void test_packing(void)
{
  if (!grouped_expected || !getenv("CORRAL_RANDOM_POOLS")) return;
  size_t sizes[][2] = { {1, 16}, {17, 24}, {20, 24}, {33, 40}, {121, 128}, {129, 192}, {200, 256}, {3000, 3072} };
  for (unsigned i = 0; i < sizeof sizes / sizeof *sizes && sizes[i][0] <= max_size; i++) {
    void *p = malloc(sizes[i][0]);
    CHECK(malloc_usable_size(p) == sizes[i][1], "usable size of malloc(%zu): %zu, not %zu", sizes[i][0],
          malloc_usable_size(p), sizes[i][1]);
    free(p);
  }
  void *q[16];
  int odd = 0;
  for (int i = 0; i < 16; i++) {
    q[i] = malloc(24);
    CHECK(((uintptr_t)q[i] & 7) == 0, "malloc(24) = %p", q[i]);
    odd += ((uintptr_t)q[i] & 15) == 8;
  }
  CHECK(odd > 0, "no 24-byte block at 8 mod 16: not packed");
  for (int i = 0; i < 16; i++) free(q[i]);
}

/* Freed space comes back within the group: once the blocks the chunk has
 * already linked (at most 4 KiB of them) are handed out, the block freed
 * last is the next one. */
/* Under safe mode (EXPECT_SAFE) a block freed at one site is only reused by
 * that site: the same allocations from another site never get it. With
 * its fresh space (EXPECT_FRESH) a block freed while its class frees
 * little is never reused at all. */
static void test_reuse(void)
{
  if (!grouped_expected) return;
  enum { N = 4096 / 40 + 2 };
  void *got[N + 1];
  int found = -1;
  for (int i = 0; i <= N; i++) {          /* one call site: the first block freed at once */
    got[i] = malloc(40);
    if (i == 0) free(got[0]);
    else if (got[i] == got[0] && found < 0) found = i;
  }
  if (fresh_expected)
    CHECK(found < 0, "freed %p reused from fresh space", got[0]);
  else
    CHECK(found >= 0, "freed %p not reused by its site within %d allocations", got[0], N);
  for (int i = 1; i <= N; i++) free(got[i]);
  void *a = malloc(40);
  free(a);
  found = -1;
  for (int i = 0; i < N; i++) {           /* another call site */
    got[i] = malloc(40);
    if (got[i] == a && found < 0) found = i;
  }
  if (safe_expected)
    CHECK(found < 0, "freed %p reused by another site", a);
  else
    CHECK(found >= 0, "freed %p not reused within %d allocations", a, N);
  for (int i = 0; i < N; i++) free(got[i]);
}

int main(void)
{
  grouped_expected = getenv("EXPECT_GROUPED") && atoi(getenv("EXPECT_GROUPED"));
  safe_expected = getenv("EXPECT_SAFE") && atoi(getenv("EXPECT_SAFE"));
  fresh_expected = getenv("EXPECT_FRESH") && atoi(getenv("EXPECT_FRESH"));
  if (getenv("MAX_SIZE")) max_size = (size_t)atol(getenv("MAX_SIZE"));
  test_malloc_sizes();
  test_calloc();
  test_aligned();
  test_realloc();
  test_reuse();
  test_packing();
  return core_summary();
}
