/* Grouped frame-0 sites whose calls corral points at their pools (pool
 * calls, test_identify_pool_calls.py). Each site_* function allocates from
 * one call; the plan lists every one as `direct`, in the group main
 * expects.
 *
 *   ident_pool_call basic|threads|fork ROUNDS every|pooled|direct
 *   ident_pool_call stale ROUNDS every|pooled LIBRARY   (dlopen of LIBRARY makes the plan unusable)
 *   ident_pool_call rebuilt ROUNDS every|pooled LIBRARY (dlopen of LIBRARY, rebuilt since the plan:
 *                                                       the program's sites keep their groups)
 *
 * `every`: the plan lists every site; `pooled`: only site_malloc and
 * site_calloc, the sites that get pool calls; `direct`: those, without the
 * clause. */
#define _GNU_SOURCE
#define IDENT_CHECK_DEFINE
#include "ident_check.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

NOINLINE void *site_malloc(size_t n) { return malloc(n); }                 /* group 0 */
NOINLINE void *site_calloc(size_t n, size_t k) { return calloc(n, k); }    /* group 1 */
NOINLINE void *site_realloc(void *p, size_t n) { return realloc(p, n); }   /* group 2: no pool call */
/* A wrapper that jumps to malloc: the allocation's frame 0 is the call of
 * wrap in site_wrapped (group 3), which enters no corral entry point. */
__attribute__((noinline, optimize("optimize-sibling-calls"))) void *wrap(size_t n) { return malloc(n); }
NOINLINE void *site_wrapped(size_t n) { return wrap(n); }
NOINLINE void *site_other(size_t n) { return malloc(n); }                  /* not in the plan */
/* Under the clause {clause_outer's call of dispatch} (group 4): site_inner
 * has no direct entry, so the clause decides; site_none is listed
 * `direct -`, which decides first. */
NOINLINE void *site_inner(size_t n) { return malloc(n); }
NOINLINE void *site_none(size_t n) { return malloc(n); }
NOINLINE void *dispatch(int inner) { return inner ? site_inner(32) : site_none(32); }
NOINLINE void *clause_outer(int inner) { void *p = dispatch(inner); __asm__ volatile("" : : "r"(p) : "memory"); return p; }

static int all_zero(const unsigned char *p, size_t n)
{
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

static unsigned failures;
static int realloc_group = 2, wrapped_group = 3;     /* -1 under a `pooled` plan */
static int clause_group = 4;                          /* -1 under a `direct` plan: pooled, no clause */

static void expect(int ok, const char *what)
{
  if (!ok && failures++ < 10) fprintf(stderr, "pool_call: %s\n", what);
}

/* One round of every site; the blocks of the last round are freed by the caller. */
static void round_of_sites(void *keep[6])
{
  void *in = clause_outer(1), *none = clause_outer(0), *bare = site_inner(32);
  ident_expect(in, clause_group);
  ident_expect(none, -1);
  ident_expect(bare, -1);
  free(in);
  free(none);
  free(bare);
  void *m = site_malloc(24);
  ident_expect(m, 0);
  memset(m, 0xa5, 24);
  free(m);                                    /* the next calloc of group 0's class must not see it */
  unsigned char *c = site_calloc(3, 8);
  ident_expect(c, 1);
  expect(c && all_zero(c, 24), "calloc block not zeroed");
  memset(c, 0xa5, 24);
  free(c);
  c = site_calloc(3, 8);                      /* most likely the block just freed */
  expect(c && all_zero(c, 24), "reused calloc block not zeroed");
  keep[0] = c;
  keep[1] = site_realloc(NULL, 40);
  ident_expect(keep[1], realloc_group);
  keep[2] = site_wrapped(56);
  ident_expect(keep[2], wrapped_group);
  keep[3] = site_other(24);
  ident_expect(keep[3], -1);
  keep[4] = site_malloc(8192);                /* above max_size: the next allocator's */
  ident_expect(keep[4], -1);
  keep[5] = site_malloc(0);
  ident_expect(keep[5], 0);
}

static void basic(int rounds)
{
  for (int i = 0; i < rounds; i++) {
    void *keep[6];
    round_of_sites(keep);
    for (int k = 0; k < 6; k++) free(keep[k]);
  }
  errno = 0;
  expect(site_calloc(SIZE_MAX / 2, 4) == NULL && errno == ENOMEM, "overflowing calloc did not fail with ENOMEM");
  unsigned char *big = site_calloc(1, 1 << 20);
  ident_expect(big, -1);
  expect(big && all_zero(big, 1 << 20), "large calloc not zeroed");
  free(big);
}

/* Threads allocate at the sites and hand every block to the next thread to free. */
#define THREADS 4
static void *handoff[THREADS][6];
static pthread_barrier_t barrier;

static void *thread_main(void *arg)
{
  int id = (int)(intptr_t)arg, rounds = 200;
  for (int i = 0; i < rounds; i++) {
    round_of_sites(handoff[id]);
    pthread_barrier_wait(&barrier);
    void **theirs = handoff[(id + 1) % THREADS];
    for (int k = 0; k < 6; k++) free(theirs[k]);
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

static void threads(void)
{
  pthread_t t[THREADS];
  pthread_barrier_init(&barrier, NULL, THREADS);
  for (int i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
}

/* The child allocates at the sites on the pages the parent patched. */
static int forked(int rounds)
{
  void *keep[6];
  round_of_sites(keep);
  pid_t pid = fork();
  if (pid == 0) {
    basic(rounds);
    for (int k = 0; k < 6; k++) free(keep[k]);
    fflush(stderr);
    _exit(ident_report() || failures ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
  for (int k = 0; k < 6; k++) free(keep[k]);
  return 0;
}

/* After a dlopen that makes the plan unusable, the sites' pool calls must stop grouping. */
static void stale(int rounds, const char *library)
{
  basic(rounds);
  void *h = dlopen(library, RTLD_NOW);
  expect(h != NULL, "dlopen failed");
  for (int i = 0; i < rounds; i++) {
    void *p = site_malloc(24), *c = site_calloc(2, 8);
    ident_expect(p, -1);
    ident_expect(c, -1);
    free(p);
    free(c);
  }
}

/* A library the plan names, rebuilt since: loading it takes nothing from the program's sites. */
static void rebuilt(int rounds, const char *library)
{
  basic(rounds);
  void *h = dlopen(library, RTLD_NOW);
  expect(h != NULL, "dlopen failed");
  basic(rounds);
}

int main(int argc, char **argv)
{
  if (argc < 4) return 2;
  int rounds = atoi(argv[2]);
  if (strcmp(argv[3], "pooled") == 0 || strcmp(argv[3], "direct") == 0) realloc_group = wrapped_group = -1;
  if (strcmp(argv[3], "direct") == 0) clause_group = -1;
  if (strcmp(argv[1], "basic") == 0) basic(rounds);
  else if (strcmp(argv[1], "threads") == 0) threads();
  else if (strcmp(argv[1], "fork") == 0) forked(rounds);
  else if (strcmp(argv[1], "stale") == 0 && argc > 4) stale(rounds, argv[4]);
  else if (strcmp(argv[1], "rebuilt") == 0 && argc > 4) rebuilt(rounds, argv[4]);
  else return 2;
  int wrong = ident_report();
  return wrong || failures;
}
