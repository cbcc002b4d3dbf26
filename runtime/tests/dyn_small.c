/* Dynamic mode's judgement of small live sets (docs/dynamic.md, "When a
 * context gets a pool"): one context makes scratch buffers that die before
 * the next is made (a live set of one object), from a call of main's own
 * (so that, given back, that call can be pointed at the none way); another
 * builds a list that starts small and keeps growing; a third zeroes scratch
 * blocks with calloc, which must come zeroed even when reused; a fourth
 * makes a brief burst of scratch buffers before all of them. The scratch
 * pools are given back, the brief one by its eager samples alone; the list's pool stays, though its first samples
 * saw it under a page. With `threads`, two threads run the scratch loop at
 * once, so that the call is pointed at the none way while the other thread
 * may be executing it; `hidden` does the same with glibc told that the
 * process has one thread (as a thread made by a raw clone leaves it);
 * `alone` runs the loop once, in the only thread. Prints where the last
 * objects landed. */
#include "../include/corral.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/single_threaded.h>

#define NOIPA __attribute__((noipa))
#define ROUNDS 200000

struct node { struct node *next; long value; };

NOIPA struct node *make_node(struct node *next, long v) {
  struct node *n = malloc(sizeof *n);
  n->next = next;
  n->value = v;
  return n;
}

/* nops before the threads' call: the test picks a count that keeps the
 * call's displacement within one aligned word, which other threads' fetches
 * then see whole */
#ifndef PAD
#define PAD 0
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

struct worker { unsigned long hash; int pooled; };

static int started;

static void *scratch_loop(void *arg) {
  struct worker *w = arg;
  while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE)) {}
  for (long i = 0; i < ROUNDS; i++) {
    __asm__ volatile(".rept " STR(PAD) "\n nop\n .endr");
    char *s = malloc(40);                /* a thread function's own call, not a wrapper's */
    snprintf(s, 40, "item %ld", i);
    for (char *c = s; *c; c++) w->hash = w->hash * 31 + (unsigned char)*c;
    if (i >= ROUNDS - 100) w->pooled += corral_group_of_if_loaded(s) >= 0;
    free(s);
  }
  return NULL;
}

static int threads(int n, int hidden) {
  struct worker w[2] = {{0, 0}, {0, 0}};
  pthread_t t[2];
  for (int i = 0; i < n; i++) pthread_create(&t[i], NULL, scratch_loop, &w[i]);
  if (hidden) __libc_single_threaded = 1;
  __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
  if (n == 0) scratch_loop(&w[0]);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  fprintf(stderr, "last scratch_pooled=%d\n", w[0].pooled + w[1].pooled);
  printf("hash %lu %lu\n", w[0].hash, w[1].hash);
  return 0;
}

/* calloc's scratch: every block must come zeroed, a reused one too. */
NOIPA int zeroed_scratch(long i, int *dirty) {
  unsigned char *z = calloc(1, 48);
  for (int k = 0; k < 48; k++) *dirty |= z[k];
  memset(z, (int)(i | 1), 48);
  int pooled = corral_group_of_if_loaded(z) >= 0;
  free(z);
  return pooled;
}

/* A short burst of scratch buffers, 400 in all: too few for steady
 * samples, so only the pool's eager samples can see that it churns. */
NOIPA int brief_scratch(void) {
  int pooled = 0;
  for (int i = 0; i < 400; i++) {
    char *s = malloc(56);
    snprintf(s, 56, "brief %d", i);
    if (i >= 350) pooled += corral_group_of_if_loaded(s) >= 0;
    free(s);
  }
  return pooled;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "threads") == 0) return threads(2, 0);
  if (argc > 1 && strcmp(argv[1], "hidden") == 0) return threads(2, 1);
  if (argc > 1 && strcmp(argv[1], "alone") == 0) return threads(0, 0);
  int brief_pooled = brief_scratch();
  struct node *list = NULL;
  unsigned long hash = 0;
  int scratch_pooled = 0, list_pooled = 0, zeroed_pooled = 0, dirty = 0;
  for (long i = 0; i < ROUNDS; i++) {
    char *s = malloc(40);                /* in main, not in a wrapper: its own call site */
    snprintf(s, 40, "item %ld", i);
    for (char *c = s; *c; c++) hash = hash * 31 + (unsigned char)*c;
    if (i >= ROUNDS - 100) scratch_pooled += corral_group_of_if_loaded(s) >= 0;
    free(s);
    list = make_node(list, i);
    if (i >= ROUNDS - 100) list_pooled += corral_group_of_if_loaded(list) >= 0;
    int z = zeroed_scratch(i, &dirty);
    if (i >= ROUNDS - 100) zeroed_pooled += z;
  }
  long sum = 0;
  while (list) { struct node *next = list->next; sum += list->value; free(list); list = next; }
  fprintf(stderr, "last scratch_pooled=%d list_pooled=%d zeroed_pooled=%d dirty=%d brief_pooled=%d\n",
          scratch_pooled, list_pooled, zeroed_pooled, dirty, brief_pooled);
  printf("hash %lu sum %ld\n", hash, sum);
  return 0;
}
