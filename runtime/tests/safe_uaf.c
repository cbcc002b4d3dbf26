/* A dangling pointer and what its write hits, and the errors safe mode
 * reports (test_safe.py). argv[1] picks the case:
 *   direct, wrapper, thread, realloc: an object of site A is freed, 4096
 *     objects of the same size come from site B, then the program writes
 *     through the dangling pointer (past the allocator's first two words)
 *     and prints "corrupted" if any of B's objects changed, else "intact";
 *   big: as direct, with 64 objects of 20000 bytes (a small block in safe
 *     mode's largest size classes);
 *   double, invalid, forge: a double free, a free of an interior pointer,
 *     a freed block's link overwritten; then "survived" if still running
 *     (forge: and 1 if the forged block was handed out again);
 *   forge-deep: the link overwritten of a freed block that a sound one
 *     precedes on the free list; "survived" if still running;
 *   large-read: two large blocks of one site and class freed, then the
 *     first read (safe mode: SIGSEGV, its pages moved away when the
 *     second took its place waiting for the site);
 *   large-site: four large blocks of one site, each freed before the next,
 *     all at one address; then one of another site, not there ("0 failed");
 *   large-fresh: 300 large blocks of two sites in turn, each freed before
 *     the next: no address of one site's comes to the other while the space
 *     has room ("0 failed");
 *   large-cycle: large blocks freed and allocated many times, contents
 *     checked, in a space small enough to wrap ("0 failed");
 *   large-reuse: a large block filled and freed, then one of its size from
 *     malloc and one from calloc: each at a new address, calloc's all
 *     zero ("0 failed");
 *   large-reread: a large block freed, another of its size made at another
 *     site (the freed one's pages moved for it), then the freed one read
 *     (safe mode: SIGSEGV);
 *   large-bound N: 96 blocks of 80 KB made, touched and freed; "0 failed"
 *     if resident memory grew by at most N KB;
 *   large-threads: four threads make, fill, check and free large blocks
 *     of many classes at once (calloc's checked zero), a fork among them
 *     whose child does the same ("0 failed"). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096

static size_t size = 64;      /* of every object of the dangling cases */
static int count = N;         /* objects from site B */
static char *others[N];

/* xmalloc-style: only hands the pointer back. */
static __attribute__((noinline)) void *xmalloc(size_t n)
{
  void *p = malloc(n);
  if (!p) abort();
  return p;
}

static __attribute__((noinline)) char *make_a(void) { return malloc(size); }
static __attribute__((noinline)) char *make_b(void) { return malloc(size); }
static __attribute__((noinline)) char *wrapped_a(void) { return xmalloc(size); }
static __attribute__((noinline)) char *wrapped_b(void) { return xmalloc(size); }

static void fill_others(char *(*make)(void))
{
  for (int i = 0; i < count; i++) {
    others[i] = make();
    memset(others[i], 'B', size);
  }
}

static int corrupted(void)
{
  for (int i = 0; i < count; i++)
    for (size_t j = 0; j < size; j++)
      if (others[i][j] != 'B') return 1;
  return 0;
}

/* The fields of the freed object, past the two words allocators keep there. */
static __attribute__((noinline)) void dangling_write(char *p) { memset(p + 16, 'A', size - 16); }

static void *worker(void *arg)
{
  (void)arg;
  char *a = make_a();
  free(a);
  fill_others(make_b);
  return a;
}

static int large_cycle(void)
{
  enum { KEEP = 8, ROUNDS = 2000 };
  char *live[KEEP] = {0};
  size_t size[KEEP] = {0};
  int failed = 0;
  for (int r = 0; r < ROUNDS; r++) {
    int k = r % KEEP;
    if (live[k]) {
      for (size_t j = 0; j < size[k]; j += 512)
        if (live[k][j] != (char)k) failed++;
      free(live[k]);
    }
    size[k] = 66000 + (size_t)(r * 7919 % 20000);
    live[k] = r % 5 ? malloc(size[k]) : aligned_alloc(16384, size[k]);
    if (!live[k]) return printf("round %d: no memory\n1 failed\n", r), 1;
    if (r % 5 == 0 && (uintptr_t)live[k] % 16384) failed++;
    memset(live[k], k, size[k]);
  }
  for (int k = 0; k < KEEP; k++) free(live[k]);
  printf("%d failed\n", failed);
  return failed != 0;
}

static long resident_kb(void)
{
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (!f || fscanf(f, "%ld %ld", &pages, &rss) != 2) rss = -1;
  if (f) fclose(f);
  return rss * 4;
}

/* Not a dead store before free, which the compiler may drop. */
static __attribute__((noinline)) void fill(char *p, int c, size_t n)
{
  memset(p, c, n);
  __asm__ volatile("" : : "r"(p) : "memory");
}

static int large_reuse(void)
{
  enum { SIZE = 90000 };
  int failed = 0;
  char *a = malloc(SIZE);
  fill(a, 0x5a, SIZE);
  free(a);
  char *b = malloc(SIZE);
  failed += b == a;
  fill(b, 0x5b, SIZE);
  free(b);
  char *c = calloc(1, SIZE);
  failed += c == a || c == b;
  /* volatile: the compiler may assume calloc's memory reads zero */
  for (volatile char *v = c; v < c + SIZE; v++) failed += *v != 0;
  free(c);
  return printf("%d failed\n", failed), failed != 0;
}

static int large_site(void)
{
  enum { SIZE = 100000, BLOCKS = 4 };
  uintptr_t seen[BLOCKS];
  int failed = 0;
  for (int i = 0; i < BLOCKS; i++) {
    char *p = malloc(SIZE);
    seen[i] = (uintptr_t)p;
    fill(p, i, SIZE);
    free(p);
    failed += seen[i] != seen[0];
  }
  char *other = calloc(1, SIZE);
  failed += (uintptr_t)other == seen[0];
  for (volatile char *v = other; v < other + SIZE; v += 512) failed += *v != 0;
  free(other);
  return printf("%d failed\n", failed), failed != 0;
}

static void *large_worker(void *arg)
{
  enum { ROUNDS = 400, KEEP = 3 };
  char tag = (char)(uintptr_t)arg;
  char *live[KEEP] = {0};
  size_t size[KEEP] = {0};
  uintptr_t failed = 0;
  for (int r = 0; r < ROUNDS; r++) {
    int k = r % KEEP;
    if (live[k]) {
      for (size_t j = 0; j < size[k]; j += 1024) failed += live[k][j] != tag;
      free(live[k]);
    }
    size[k] = 66000 + (size_t)((r * 7919 + tag * 104729) % 300000);
    if (r % 4 == 0) {
      live[k] = calloc(1, size[k]);
      for (volatile char *v = live[k]; v < live[k] + size[k]; v += 512) failed += *v != 0;
    } else {
      live[k] = malloc(size[k]);
    }
    fill(live[k], tag, size[k]);
  }
  for (int k = 0; k < KEEP; k++) free(live[k]);
  return (void *)failed;
}

static int large_threads(void)
{
  enum { THREADS = 4 };
  pthread_t t[THREADS];
  uintptr_t failed = 0;
  for (uintptr_t i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, large_worker, (void *)(i + 1));
  pid_t child = fork();
  if (child == 0) _exit(large_worker((void *)9) != NULL);
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(t[i], &r);
    failed += (uintptr_t)r;
  }
  int status = 0;
  failed += child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  return printf("%lu failed\n", (unsigned long)failed), failed != 0;
}

static int large_bound(long limit_kb)
{
  enum { BLOCKS = 96, SIZE = 80000 };
  static char *b[BLOCKS];
  long before = resident_kb();
  for (int i = 0; i < BLOCKS; i++) fill(b[i] = malloc(SIZE), i, SIZE);
  for (int i = 0; i < BLOCKS; i++) free(b[i]);
  long grown = resident_kb() - before;
  int failed = grown > limit_kb;
  if (failed) printf("resident memory grew by %ld KB\n", grown);
  return printf("%d failed\n", failed), failed;
}

int main(int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "direct";
  char *a = NULL;
  if (!strcmp(c, "big")) {
    size = 20000;
    count = 64;
    c = "direct";
  }
  if (!strcmp(c, "direct")) {
    a = make_a();
    free(a);
    fill_others(make_b);
  } else if (!strcmp(c, "wrapper")) {
    a = wrapped_a();
    free(a);
    fill_others(wrapped_b);
  } else if (!strcmp(c, "thread")) {
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, (void **)&a);
  } else if (!strcmp(c, "realloc")) {
    a = make_a();
    char *fence = make_a(), *grown = realloc(a, 4000);
    if (grown == a) return puts("realloc did not move"), 1;
    fill_others(make_b);
    free(fence);
  } else if (!strcmp(c, "double")) {
    a = make_a();
    free(a);
    free(a);
    return puts("survived"), 0;
  } else if (!strcmp(c, "invalid")) {
    a = make_a();
    free(a + 16);
    return puts("survived"), 0;
  } else if (!strcmp(c, "forge")) {
    /* One call site; its first block is freed and its link overwritten
     * before the site's free list comes round to it. */
    int again = 0;
    for (int i = 0; i < 200; i++) {
      others[i] = make_a();
      if (i == 0) {
        a = others[0];
        free(a);
        memset(a, 0x41, 16);
      } else if (others[i] == a) {
        again = 1;
      }
    }
    return printf("survived %d\n", again), 0;
  } else if (!strcmp(c, "forge-deep")) {
    /* One call site; two of its blocks freed, the one freed first with its
     * link overwritten: the other comes back at the head of the list, its
     * link sound, and the forged one behind it. */
    for (int i = 0; i < 200; i++) {
      others[i] = make_a();
      if (i == 1) {
        free(others[1]);
        free(others[0]);
        memset(others[1], 0x41, 16);
      }
    }
    return puts("survived"), 0;
  } else if (!strcmp(c, "large-read")) {
    volatile char *p[2];
    for (volatile int i = 0; i < 2; i++) (p[i] = malloc(100000))[0] = 1;    /* one call site */
    for (int i = 0; i < 2; i++) free((void *)p[i]);
    printf("read %d\n", p[0][0]);
    return 0;
  } else if (!strcmp(c, "large-site")) {
    return large_site();
  } else if (!strcmp(c, "large-fresh")) {
    enum { BLOCKS = 300 };
    static char *seen[BLOCKS];
    int failed = 0;
    for (int i = 0; i < BLOCKS; i++) {
      size_t n = 100000 + (size_t)i * 1000;
      seen[i] = i % 2 ? malloc(n) : calloc(1, n);     /* two call sites */
      for (int j = i % 2 ? 0 : 1; j < i; j += 2) failed += seen[j] == seen[i];
      free(seen[i]);
    }
    return printf("%d failed\n", failed), failed != 0;
  } else if (!strcmp(c, "large-cycle")) {
    return large_cycle();
  } else if (!strcmp(c, "large-reuse")) {
    return large_reuse();
  } else if (!strcmp(c, "large-reread")) {
    volatile char *p = malloc(100000);
    p[0] = 1;
    free((void *)p);
    char *q = malloc(100000);
    q[0] = 2;
    printf("read %d\n", p[0]);
    return 0;
  } else if (!strcmp(c, "large-threads")) {
    return large_threads();
  } else if (!strcmp(c, "large-bound") && argc > 2) {
    return large_bound(atol(argv[2]));
  } else {
    return printf("unknown case %s\n", c), 2;
  }
  dangling_write(a);
  puts(corrupted() ? "corrupted" : "intact");
  return 0;
}
