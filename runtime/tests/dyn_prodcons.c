/* A producer thread allocates nodes at one call site and hands them over in
 * batches; a consumer thread frees them. Under dynamic mode the site's pool
 * is given back to the allocator underneath once samples show its objects
 * are freed by another thread. stderr: "tail pooled=K" for the last 100
 * nodes; stdout: a checksum.
 * With argument `mixed`, the producer's nodes take 56 and 48 bytes in turn
 * (enough that a batch's live objects fill pages: the pool goes as remote,
 * not as small; 56 bytes, which the pool packs tighter than a size-class
 * base's 64, so that it is not laid out as the base would: not as_base),
 * and afterwards the main thread builds a list of 48-byte nodes at a site
 * of its own ("lone pooled=K" for its last 100 nodes): the allocator
 * underneath would interleave those with the given-back pool's 48-byte
 * objects, so over jemalloc and mimalloc the lone pool stays
 * (docs/dynamic.md, as_base). */
#include "../include/corral.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NOIPA __attribute__((noipa))
#define BATCH 1000
#define BATCHES 200

struct node { struct node *next; long value; };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
static struct node *queue[BATCHES];
static int queued, freed_batches, done_producing;
static long consumed;
static int mixed;

NOIPA struct node *make_node(struct node *next, long v) {
  struct node *n = malloc(!mixed ? sizeof *n : (v & 1) ? 48 : 56);
  n->next = next;
  n->value = v;
  return n;
}

static void *consume(void *arg) {
  (void)arg;
  for (int taken = 0;; taken++) {
    pthread_mutex_lock(&lock);
    while (taken == queued && !done_producing) pthread_cond_wait(&ready, &lock);
    if (taken == queued) { pthread_mutex_unlock(&lock); return NULL; }
    struct node *batch = queue[taken];
    pthread_mutex_unlock(&lock);
    while (batch) { struct node *next = batch->next; consumed += batch->value; free(batch); batch = next; }
    pthread_mutex_lock(&lock);
    freed_batches++;
    pthread_cond_broadcast(&ready);
    pthread_mutex_unlock(&lock);
  }
}

struct lone { struct lone *next; long v[5]; };

NOIPA struct lone *make_lone(struct lone *next, long v) {
  struct lone *n = malloc(sizeof *n);
  n->next = next;
  n->v[0] = v;
  return n;
}

static void lone_list(void) {
  struct lone *l = NULL;
  for (long i = 0; i < 200000; i++) l = make_lone(l, i);
  int pooled = 0;
  long sum = 0, i = 0;
  for (struct lone *n = l; n; n = n->next, i++) {
    sum += n->v[0];
    if (i < 100) pooled += corral_group_of_if_loaded(n) >= 0;
  }
  fprintf(stderr, "lone pooled=%d\n", pooled);
  printf("lone %ld\n", sum);
}

int main(int argc, char **argv) {
  mixed = argc > 1 && argv[1][0] == 'm';
  pthread_t consumer;
  pthread_create(&consumer, NULL, consume, NULL);
  for (int b = 0; b < BATCHES; b++) {
    struct node *batch = NULL;
    for (long i = 0; i < BATCH; i++) batch = make_node(batch, i);
    pthread_mutex_lock(&lock);
    queue[queued++] = batch;
    pthread_cond_broadcast(&ready);
    while (freed_batches < queued) pthread_cond_wait(&ready, &lock);   /* hand over, wait until freed */
    pthread_mutex_unlock(&lock);
  }
  pthread_mutex_lock(&lock);
  done_producing = 1;
  pthread_cond_broadcast(&ready);
  pthread_mutex_unlock(&lock);
  pthread_join(consumer, NULL);
  struct node *tail = NULL;
  int pooled = 0;
  for (long i = 0; i < 100; i++) {
    tail = make_node(tail, i);
    pooled += corral_group_of_if_loaded(tail) >= 0;
  }
  fprintf(stderr, "tail pooled=%d\n", pooled);
  printf("consumed %ld\n", consumed);
  if (mixed) lone_list();
  return 0;
}
