/* Plan mode's replays in threads (test_identify_replays.py): threads made
 * one after another, and four at once, each allocate through one wrapper,
 * `make`, from two sites, `site_a` and `site_b`, whose ranges are clauses,
 * so each allocation is walked or replayed, never decided by frame 0. Each
 * thread checks where its objects landed: site A's in group 0, site B's in
 * group 1. A thread that exits hands its replay block back; the next
 * thread takes it with those walks forgotten.
 * Prints "checked N wrong M" (ident_helpers.run_with_stats). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "../include/corral.h"

#define ROUNDS 400

static long checked, wrong;
static pthread_mutex_t counts = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void *make(size_t n)
{
  void *p = malloc(n);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

/* Not tail calls: each site's frame must be on the stack. */
__attribute__((noinline)) static void *site_a(void)
{
  void *p = make(48);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

__attribute__((noinline)) static void *site_b(void)    /* not the same code: not folded into site_a */
{
  void *p = make(56);
  __asm__ volatile("" : : "r"(p) : "memory");
  return p;
}

__attribute__((noinline)) static void *worker(void *arg)
{
  long mine = 0, bad = 0;
  void *keep[2 * ROUNDS];
  for (int i = 0; i < ROUNDS; i++) {
    keep[2 * i] = site_a();
    keep[2 * i + 1] = site_b();
    bad += corral_group_of_if_loaded(keep[2 * i]) != 0;
    bad += corral_group_of_if_loaded(keep[2 * i + 1]) != 1;
    mine += 2;
  }
  for (int i = 0; i < 2 * ROUNDS; i++) free(keep[i]);
  pthread_mutex_lock(&counts);
  checked += mine;
  wrong += bad;
  pthread_mutex_unlock(&counts);
  return arg;
}

int main(void)
{
  for (int i = 0; i < 16; i++) {               /* one after another: blocks handed on */
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    pthread_join(t, NULL);
  }
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, NULL);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  worker(NULL);
  printf("checked %ld wrong %ld\n", checked, wrong);
  return 0;
}
