/* Dynamic mode's tables growing while threads use them: 4 threads each
 * build a list at every one of 4,096 call sites (half of them through a
 * wrapper), in orders of their own, so that sites, wrapper frames, tails
 * and settled words are learnt and published by several threads while
 * the site table grows from 1,024 slots to 4,096 and to 16,384. Built
 * with -O0 so that no call site is merged with another. stdout: one
 * checksum per thread (identical with and without corral); stderr:
 * "sites pooled=N" (lists whose last object corral pooled). */
#include "../include/corral.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define SITES 4096
#define NODES 120

struct node { struct node *next; long value; };

__attribute__((noipa)) void *xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) abort();
  return p;
}

/* 4,096 distinct calls: case k calls malloc for even k, the wrapper for odd. */
#define SITE(k) case (k): return (k) % 2 ? xmalloc(n) : malloc(n);
#define S4(k) SITE(k) SITE((k) + 1) SITE((k) + 2) SITE((k) + 3)
#define S16(k) S4(k) S4((k) + 4) S4((k) + 8) S4((k) + 12)
#define S64(k) S16(k) S16((k) + 16) S16((k) + 32) S16((k) + 48)
#define S256(k) S64(k) S64((k) + 64) S64((k) + 128) S64((k) + 192)
#define S1024(k) S256(k) S256((k) + 256) S256((k) + 512) S256((k) + 768)

static void *alloc_at(int k, size_t n) {
  switch (k) {
    S1024(0) S1024(1024) S1024(2048) S1024(3072)
  }
  abort();
}

static long pooled[THREADS];

static void *work(void *arg) {
  long id = (long)arg, sum = 0;
  for (int i = 0; i < SITES; i++) {
    int k = (int)((i * 2654435761u + (unsigned)id * 1031) % SITES);
    struct node *head = NULL;
    for (long j = 0; j < NODES; j++) {
      struct node *p = alloc_at(k, sizeof *p);
      p->next = head;
      p->value = j * k + id;
      head = p;
    }
    if (corral_group_of_if_loaded(head) >= 0) pooled[id]++;
    while (head) {
      struct node *next = head->next;
      sum += head->value;
      free(head);
      head = next;
    }
  }
  return (void *)sum;
}

int main(void) {
  pthread_t th[THREADS];
  for (long t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, work, (void *)t);
  long total = 0;
  for (int t = 0; t < THREADS; t++) {
    void *sum;
    pthread_join(th[t], &sum);
    printf("thread %d: %ld\n", t, (long)sum);
    total += pooled[t];
  }
  fprintf(stderr, "sites pooled=%ld\n", total);
  return 0;
}
