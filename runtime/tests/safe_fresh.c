/* Safe mode's fresh space (docs/safe.md, "Fresh space"). Prints one line
 * per check, "name: ok" or "name: FAILED ...", then "N failed".
 * Usage: safe_fresh CASE
 *   order    two sites make 24-byte objects in turn, nothing freed: each
 *            object lies next to the one made before it, of either site;
 *            a block of 1 KiB comes from fresh space, a larger one not
 *   unused   blocks freed while their class frees little are never handed
 *            out again, to any site (a site's own pool would reuse them)
 *   closes   a site that frees what it makes closes its class: its frees
 *            are reused then, by it alone
 *   inherited  as closes, then a new thread: the class closed, another open
 *   evict    a cache of 200,000 objects evicting at random, 3 million
 *            times: the peak resident set (the test compares)
 *   spent    fresh blocks of more than a chunk, all freed: the first
 *            chunk is given up, its addresses never handed out again (to
 *            a new thread, whose fresh space is open), and a free into it
 *            is invalid (reported; CORRAL_SAFE_ABORT=0)
 *   double   a fresh block freed twice (reported)
 *   double-retired  as double, the block in a full (retired) fresh chunk,
 *            whose frees are only counted
 *   interior a free inside a fresh block (reported)
 *   threads  four threads make objects and free each other's, and a
 *            forked child does the same: no block of fresh space (group
 *            FRESH) is handed out twice in either process */
#include "../include/corral.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOIPA __attribute__((noipa))
#define CHUNK (1 << 20)
#define FRESH 1                 /* the fresh space's group (safe_ways.h) */

static int failed;

static void check(const char *name, int ok, const char *detail)
{
  printf("%s: %s%s\n", name, ok ? "ok" : "FAILED ", ok ? "" : detail);
  failed += !ok;
}

/* Each hands malloc's pointer back (memset returns it): the wrapper
 * analysis takes them for wrappers, so each call of one is a site. */
NOIPA void *make_a(size_t n) { void *p = malloc(n); if (!p) abort(); return memset(p, 0xa1, n); }
NOIPA void *make_b(size_t n) { void *p = malloc(n); if (!p) abort(); return memset(p, 0xb2, n); }

static int cmp_ptr(const void *x, const void *y)
{
  uintptr_t a = *(const uintptr_t *)x, b = *(const uintptr_t *)y;
  return a < b ? -1 : a > b;
}

/* Whether any address appears twice among n. */
static int repeats(void **p, size_t n)
{
  qsort(p, n, sizeof *p, cmp_ptr);
  for (size_t i = 1; i < n; i++)
    if (p[i] == p[i - 1]) return 1;
  return 0;
}

static void order(void)
{
  enum { N = 2000 };
  char *prev = make_a(24);
  int next_to = 0;
  for (int i = 1; i < N; i++) {
    char *p = i % 2 ? make_b(24) : make_a(24);
    next_to += p == prev + 24;
    prev = p;
  }
  char detail[64];
  snprintf(detail, sizeof detail, "%d of %d next to the one before", next_to, N - 1);
  /* a batch or a chunk ends now and then; the rest lie in order */
  check("order", next_to >= N - 1 - N / 100, detail);
  check("order: up to 1 KiB", corral_group_of_if_loaded(make_a(1024)) == FRESH, "not from fresh space");
  check("order: past it", corral_group_of_if_loaded(make_a(1025)) != FRESH, "from fresh space");
}

static void unused(void)
{
  enum { N = 1000 };
  static void *p[2 * N];
  uintptr_t first = 0;
  size_t n = 0;
  for (int i = 0; i < N; i++) {
    void *a = make_a(40);                  /* one site: its first block freed at once */
    if (i == 0) {
      first = (uintptr_t)a;
      free(a);
    } else {
      p[n++] = a;
    }
    void *b = make_b(40);                  /* another: a tenth of its blocks freed at once */
    p[n++] = b;
    if (i % 10 == 0) free(b);
  }
  int hit = 0;
  for (size_t i = 0; i < n; i++) hit += (uintptr_t)p[i] == first;   /* compared as numbers: p[i] may be freed */
  check("unused: the block freed first", hit == 0, "handed out again");
  check("unused: the others freed", !repeats(p, n), "an address twice");
}

static void closes(void)
{
  enum { ROUNDS = 20000 };
  /* a's objects die young: its class closes, and its pool reuses them */
  static void *p[ROUNDS];
  for (int i = 0; i < ROUNDS; i++) {
    p[i] = make_a(72);
    free(p[i]);
  }
  qsort(p, ROUNDS, sizeof *p, cmp_ptr);
  int distinct = 1;
  for (int i = 1; i < ROUNDS; i++) distinct += p[i] != p[i - 1];
  char detail[64];
  snprintf(detail, sizeof detail, "%d addresses for %d objects", distinct, ROUNDS);
  check("closes: its own frees reused", distinct < ROUNDS / 4, detail);
  void *mine_p = make_a(72);
  uintptr_t mine = (uintptr_t)mine_p;      /* compared as a number once freed */
  free(mine_p);
  int others = 0;
  for (int i = 0; i < 200; i++) others += (uintptr_t)make_b(72) == mine;
  check("closes: never by another site", others == 0, "site b got a's block");
}

/* A cache that evicts at random: the blocks freed lie in the chunks
 * filled before, not in the one being filled. Prints the peak resident
 * set, which the test compares with CORRAL_SAFE_FRESH=0's. */
static void evict(void)
{
  enum { SLOTS = 200000, INSERTS = 3000000 };
  static void *slot[SLOTS];
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < SLOTS; i++) slot[i] = make_a(48);
  for (int i = 0; i < INSERTS; i++) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    int k = (int)(x % SLOTS);
    free(slot[k]);
    slot[k] = make_a(48);
  }
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  printf("evict peak %ld KB\n", u.ru_maxrss);
}

/* A thread started once its class closed elsewhere takes it closed. */
static void *make_two(void *arg)
{
  void **got = arg;
  got[0] = make_b(72);
  got[1] = make_b(24);
  return NULL;
}

static void inherited(void)
{
  closes();
  void *got[2];
  pthread_t t;
  pthread_create(&t, NULL, make_two, got);
  pthread_join(t, NULL);
  check("inherited: the closed class", corral_group_of_if_loaded(got[0]) != FRESH, "fresh in a new thread");
  check("inherited: another class", corral_group_of_if_loaded(got[1]) == FRESH, "not fresh in a new thread");
}

enum { SPENT_N = CHUNK / 64 * 3 / 2 };   /* a chunk and a half of 64-byte blocks */
static void *spent_later[SPENT_N];

/* Another thread's blocks of the class: its fresh space is open. */
static void *make_later(void *arg)
{
  (void)arg;
  for (int i = 0; i < SPENT_N; i++) spent_later[i] = make_b(64);
  return NULL;
}

static void spent(void)
{
  static void *p[SPENT_N];
  for (int i = 0; i < SPENT_N; i++) p[i] = make_a(64);
  uintptr_t lo = (uintptr_t)p[0], hi = (uintptr_t)p[SPENT_N / 2];
  for (int i = 0; i < SPENT_N; i++) free(p[i]);
  pthread_t t;
  pthread_create(&t, NULL, make_later, NULL);
  pthread_join(t, NULL);
  int inside = 0;
  for (int i = 0; i < SPENT_N; i++) inside += (uintptr_t)spent_later[i] >= lo && (uintptr_t)spent_later[i] <= hi;
  check("spent: its addresses never handed out again", inside == 0, "a block of the spent chunk");
  free(p[SPENT_N / 4]);                    /* into the spent chunk: invalid */
  printf("refreed\n");
}

static void twice(void)
{
  void *p = make_a(32);
  free(p);
  free(p);
  printf("survived\n");
}

static void twice_retired(void)
{
  static void *p[SPENT_N];
  for (int i = 0; i < SPENT_N; i++) p[i] = make_a(64);
  free(p[0]);
  free(p[0]);
  printf("survived\n");
}

static void interior(void)
{
  char *p = make_a(48);
  free(p + 16);
  printf("survived\n");
}

/* ---- threads ----------------------------------------------------------- */

enum { THREADS = 4, PER_THREAD = 60000, SLOTS = 64 };
static void *handed[THREADS + 1][PER_THREAD];
static void *_Atomic mailbox[THREADS][SLOTS];

static void *worker(void *arg)
{
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < PER_THREAD; i++) {
    void *p = i % 2 ? make_a(24 + 8 * (i % 3)) : make_b(24 + 8 * (i % 3));
    handed[t][i] = p;
    /* a neighbour frees it (or we do, when its box is full) */
    void *_Atomic *box = &mailbox[(t + 1) % THREADS][i % SLOTS];
    void *old = atomic_exchange(box, p);
    if (i % 4 == 0) {
      void *mine = atomic_exchange(&mailbox[t][i % SLOTS], NULL);
      free(mine);
    } else if (old && i % 4 == 1) {
      /* keep it live a while longer: it goes back in the box */
      old = atomic_exchange(box, old);
      free(old);
    } else {
      free(old);
    }
  }
  return NULL;
}

static int run_threads(void)
{
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < THREADS; t++)
    for (int s = 0; s < SLOTS; s++) free(atomic_exchange(&mailbox[t][s], NULL));
  /* an address may come back from a site's pool once its class closed;
   * never from fresh space */
  static void *all[THREADS * PER_THREAD];
  size_t n = 0;
  for (int t = 0; t < THREADS; t++)
    for (int i = 0; i < PER_THREAD; i++)
      if (corral_group_of_if_loaded(handed[t][i]) == FRESH) all[n++] = handed[t][i];
  return n >= 1000 && !repeats(all, n);
}

static void threads(void)
{
  pid_t child = fork();
  if (child == 0) _exit(run_threads() ? 0 : 1);
  int ok = run_threads(), status = 0;
  waitpid(child, &status, 0);
  check("threads: parent", ok, "an address twice");
  check("threads: child", WIFEXITED(status) && WEXITSTATUS(status) == 0, "an address twice, or it died");
}

int main(int argc, char **argv)
{
  const char *c = argc > 1 ? argv[1] : "";
  if (!strcmp(c, "order")) order();
  else if (!strcmp(c, "unused")) unused();
  else if (!strcmp(c, "closes")) closes();
  else if (!strcmp(c, "inherited")) inherited();
  else if (!strcmp(c, "evict")) evict();
  else if (!strcmp(c, "spent")) spent();
  else if (!strcmp(c, "double")) twice();
  else if (!strcmp(c, "double-retired")) twice_retired();
  else if (!strcmp(c, "interior")) interior();
  else if (!strcmp(c, "threads")) threads();
  else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  printf("%d failed\n", failed);
  return 0;
}
